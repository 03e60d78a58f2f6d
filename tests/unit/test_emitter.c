/* test_emitter.c - report/emitter.c: one section's calls give the JSON
 * (commas, line breaks, escaping) and the text (prose, cells) byte for
 * byte, each back end ignoring the other's calls; and a stack kept past
 * its model prints as the model's would. */
#include <stdlib.h>

#include "report/emitter.h"
#include "report/stack_text.h"
#include "test.h"

/* A section as run_section.c writes one: a list, one item a line, closed
 * on a line of its own, with text beside the members. */
static void section(ht_emitter_t *e)
{
	ht_emit_obj_begin(e, NULL);
	ht_emit_u64(e, "v", 1);
	ht_emit_str(e, "name", "a\"b\n\x1b");
	ht_emit_printf(e, "title ");
	ht_emit_put(e, "a\"b\n\x1b");
	ht_emit_printf(e, "\n");
	ht_emit_nl(e, 0);
	ht_emit_arr_begin(e, "rows");
	for (int i = 0; i < 2; i++) {
		ht_emit_nl(e, 2);
		ht_emit_obj_begin(e, NULL);
		ht_emit_row_begin(e, "  ");
		ht_emit_cell_str(e, "program", 4, i ? "ls" : "cat");
		ht_emit_cell_count(e, "bytes", 6, i ? 1234567 : 5);
		ht_emit_cell_yesno(e, "lost", 4, i);
		ht_emit_row_end(e);
		ht_emit_i64(e, "pid", -1);
		ht_emit_change(e, "change", 10, 3);
		ht_emit_obj_end(e);
	}
	ht_emit_nl_end(e, 0);
	ht_emit_arr_end(e);
	ht_emit_arr_begin(e, "empty");
	ht_emit_arr_end(e);
	ht_emit_obj_end(e);
}

/* A stream into memory, and what was written to it (the caller frees). */
static char *mem_buf;
static size_t mem_len;

static FILE *mem_open(void)
{
	mem_buf = NULL;
	mem_len = 0;
	return open_memstream(&mem_buf, &mem_len);
}

static char *mem_close(FILE *f)
{
	fclose(f);
	return mem_buf;
}

static char *written(ht_emit_kind_t kind, void (*fn)(ht_emitter_t *))
{
	FILE *f = mem_open();
	ht_emitter_t e;
	ht_emit_init(&e, f, kind);
	fn(&e);
	return mem_close(f);
}

/* The section written by back end kind is want; frees it. */
static void section_is(ht_emit_kind_t kind, const char *want)
{
	char *s = written(kind, section);
	CHECK(!strcmp(s, want));
	if (strcmp(s, want))
		fprintf(stderr, "    got:\n%s\n", s);
	free(s);
}

static void test_json(void)
{
	section_is(HT_EMIT_JSON,
		   "{\"v\": 1, \"name\": \"a\\\"b\\n\\u001b\",\n"
		   "\"rows\": [\n"
		   "  {\"program\": \"cat\", \"bytes\": 5, \"lost\": false, \"pid\": -1, \"change\": -7},\n"
		   "  {\"program\": \"ls\", \"bytes\": 1234567, \"lost\": true, \"pid\": -1, \"change\": -7}\n"
		   "], \"empty\": []}");
}

static void test_text(void)
{
	section_is(HT_EMIT_TEXT, "title a\"b\\n\\x1b\n"
				 "  cat       5   no\n"
				 "  ls   1,234,567  yes\n");
}

/* A line break asked for before a closing bracket is for that bracket
 * alone: the next is inline again. */
static void nested(ht_emitter_t *e)
{
	ht_emit_arr_begin(e, NULL);
	ht_emit_arr_begin(e, NULL);
	ht_emit_u64(e, NULL, 1);
	ht_emit_nl_end(e, 1);
	ht_emit_arr_end(e);
	ht_emit_arr_end(e);
}

static void test_nl_end(void)
{
	char *s = written(HT_EMIT_JSON, nested);
	CHECK(!strcmp(s, "[[1\n ]]"));
	free(s);
	s = written(HT_EMIT_TEXT, nested);
	CHECK(!strcmp(s, ""));
	free(s);
}

static char *kept_text(const ht_kept_stack_t *k)
{
	FILE *f = mem_open();
	ht_stack_text_kept(f, k, false);
	return mem_close(f);
}

static void test_kept_stack(void)
{
	ht_frame_t fr[2] = {
		{ .function = "leaf", .file = "/src/a.c", .line = 7, .module = "/bin/x" },
		{ .function = "main", .file = "/src/a.c", .line = 20, .module = "/bin/x" },
	};
	ht_kept_stack_t k = { fr, 2, false, true, 5 };
	char *s = kept_text(&k);
	CHECK(!strcmp(s, "     leaf  /src/a.c:7\n     main  /src/a.c:20\n"));
	free(s);
	k = (ht_kept_stack_t){ NULL, 0, false, false, 9 };
	s = kept_text(&k);
	CHECK_STR(s, "(stack unknown: its definition is missing from the trace)");
	free(s);
	k = (ht_kept_stack_t){ NULL, 0, true, false, 0 };
	s = kept_text(&k);
	CHECK_STR(s, "the summary's site table was full");
	free(s);
}

int main(void)
{
	test_json();
	test_text();
	test_nl_end();
	test_kept_stack();
	return TEST_DONE();
}
