/* stack_text.c - a site's stack in the text views: leaf first, one frame
 * a line as `function  file:line`, the locations in one column per stack
 * so a terminal or editor can jump there; runtime frames below main
 * dropped, long names broken to --width.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/frames.h"
#include "analysis/safe.h"
#include "report/stack_text.h"
#include "report/text_layout.h"

#define MAX_TEXT_FRAMES 16 /* frames shown per stack; the JSON has them all */
#define REPEAT_FRAMES 3	   /* frames shown when a stack was printed above */
#define MAX_FUNC_COL 48	   /* function column width, longer names overflow */

/* Frames of the C runtime below main or a thread's start routine: noise in
 * every stack, dropped from the end of text stacks (the JSON keeps them). */
static bool is_runtime_frame(const ht_frame_t *f)
{
	static const char *const names[] = { "_start", "__libc_start_main", "__libc_start_main_impl",
					     "__libc_start_call_main", "start_thread", "clone",
					     "clone3", "__clone", "__clone3" };
	if (!f->function)
		return false;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(f->function, names[i]))
			return true;
	return false;
}

/* Where a long name or line may break: after ", " or "(", never inside an
 * identifier. */
static bool break_before(const char *s, size_t i)
{
	return i > 1 && ((s[i - 1] == ' ' && s[i - 2] == ',') || (s[i - 1] == '(' && s[i] != ')'));
}

/* Print s (safe text) from column *col, breaking it where it may break when
 * it would pass ht_text_style.width; continuation lines start at column
 * indent. A piece without a break point longer than the width overflows:
 * names are never cut. */
static void put_wrapped(FILE *out, const char *s, size_t *col, size_t indent)
{
	size_t w = ht_text_style.width, n = strlen(s), i = 0;
	while (i < n) {
		size_t room = w > *col ? w - *col : 0, brk = 0, j;
		if (!w || n - i <= room) {
			fputs(s + i, out);
			*col += n - i;
			return;
		}
		/* the last break point that fits */
		for (j = i + 1; j < n && j - i <= room; j++)
			if (break_before(s, j))
				brk = j;
		if (!brk && *col > indent) {
			/* nothing fits on this line: try a fresh one */
			fprintf(out, "\n%*s", (int)indent, "");
			*col = indent;
			continue;
		}
		if (!brk) /* not even there: up to the first break, overflowing */
			for (brk = i + 1; brk < n && !break_before(s, brk); brk++)
				;
		/* the space of ", " ends no line */
		size_t k = brk - (s[brk - 1] == ' ');
		fwrite(s + i, 1, k - i, out);
		*col += k - i;
		i = brk;
		if (i < n) {
			fprintf(out, "\n%*s", (int)indent, "");
			*col = indent;
		}
	}
}

/* The function column of a frame, escaped: its name whole, or for a frame
 * without one the label every output gives it (module+offset). malloc'd. */
static char *frame_function(const ht_frame_t *f)
{
	char lab[HT_FRAME_LABEL_LEN];
	const char *name = f->function ? f->function : ht_frame_label(f, lab, sizeof lab);
	size_t need = ht_text_len(name) + 8;
	char *buf = malloc(need);
	if (buf) {
		const char *t = ht_text_safe(buf, need, name);
		if (t != buf)
			memcpy(buf, t, strlen(t) + 1);
	}
	return buf;
}

/* Location column of a frame: file:line, else module+offset (for
 * addr2line) when the function is known; empty when the label says it. */
static void frame_location(const ht_frame_t *f, char *buf, size_t len)
{
	char tmp[4096], lab[HT_FRAME_LABEL_LEN];
	if (f->file && f->line > 0) {
		snprintf(buf, len, "%s:%d", ht_text_safe(tmp, sizeof(tmp), f->file), f->line);
	} else if (f->file) {
		snprintf(buf, len, "%s", ht_text_safe(tmp, sizeof(tmp), f->file));
	} else if (f->function && (f->module || f->has_offset)) {
		snprintf(buf, len, "in %s", ht_text_safe(tmp, sizeof tmp, ht_frame_label(f, lab, sizeof lab)));
	} else if (f->function) {
		snprintf(buf, len, "in an unknown module");
	} else {
		buf[0] = 0;
	}
}

/* The hint about frames without symbols, once per command. */
static bool symbols_hint_given;

/* How many frames from f[i] on lack a function and lie in f[i]'s module. */
static size_t unknown_run(const ht_frame_t *f, size_t i, size_t n)
{
	size_t k = i;
	while (k < n && !f[k].function &&
	       (f[k].module == f[i].module ||
		(f[k].module && f[i].module && !strcmp(f[k].module, f[i].module))))
		k++;
	return k - i;
}

/* Print a site's stack leaf first: all of it (up to MAX_TEXT_FRAMES) the
 * first time, its top frames when an earlier list already showed it. The
 * frames folded at the leaf (frames.h) are one marker line; a run of
 * frames of one module without symbols is one line. */
/* A site without frames to print: the summary's overflow row, or a stack
 * the trace does not define (stack_id 0: none recorded). Returns whether
 * it was one. */
static bool stackless(FILE *out, bool overflow, bool known, uint64_t stack_id)
{
	if (overflow) {
		fputs("     (all other sites: the summary's site table was full; option summary_sites)\n", out);
		return true;
	}
	if (!known) {
		fprintf(out, "     (stack unknown%s)\n",
			stack_id ? ": its definition is missing from the trace" : "");
		return true;
	}
	return false;
}

static void print_frames(FILE *out, const ht_frame_t *fr, long n, bool repeat);

void ht_stack_text_print(ht_stack_text_t *c, const ht_site_t *s, bool repeat)
{
	if (stackless(c->out, s->overflow, s->stack != NULL, s->stack_id))
		return;
	long n = ht_model_frames(c->m, c->sym, s, &c->frames, &c->cap);
	if (n < 0) {
		c->err = (int)n;
		return;
	}
	print_frames(c->out, c->frames, n, repeat);
}

void ht_stack_text_kept(FILE *out, const ht_kept_stack_t *k, bool repeat)
{
	if (!stackless(out, k->overflow, k->known, k->stack_id))
		print_frames(out, k->frames, k->n, repeat);
}

static void print_frames(FILE *out, const ht_frame_t *fr, long n, bool repeat)
{
	/* everything from the C runtime's entry into main (or a thread's start
	 * routine) down is the same in every stack */
	for (long i = 1; i < n; i++) {
		const char *f = fr[i].function;
		if (f && (!strncmp(f, "__libc_start_", 13) || !strcmp(f, "start_thread"))) {
			n = i;
			break;
		}
	}
	while (n > 1 && is_runtime_frame(&fr[n - 1]))
		n--;
	if (n == 0) {
		fputs("     (empty stack)\n", out);
		return;
	}
	if (fr[0].folded && fr[0].folded_via) {
		char *via = frame_function(&(ht_frame_t){ .function = fr[0].folded_via });
		size_t col = 5;
		fprintf(out, "     %s[", HT_DIM);
		col++;
		put_wrapped(out, via ? via : "?", &col, 7);
		fprintf(out, ": %u allocator frame%s folded]%s\n", fr[0].folded,
			fr[0].folded == 1 ? "" : "s", HT_RESET);
		free(via);
	}
	size_t max = repeat ? REPEAT_FRAMES : MAX_TEXT_FRAMES;
	/* the lines to print: a frame, or a run of unknown frames */
	size_t lines = 0, end = 0, col = 0;
	for (size_t i = 0; i < (size_t)n && lines < max; lines++) {
		size_t run = fr[i].function ? 1 : unknown_run(fr, i, (size_t)n);
		if (run == 1) {
			char *fn = frame_function(&fr[i]);
			size_t l = fn ? strlen(fn) : 0;
			if (l > col && l <= MAX_FUNC_COL)
				col = l;
			free(fn);
		}
		i += run;
		end = i;
	}
	size_t w = ht_text_style.width;
	if (w && col > w / 2)
		col = w / 2;
	bool unknown = false;
	char loc[4200];
	for (size_t i = 0; i < end;) {
		const ht_frame_t *f = &fr[i];
		size_t run = f->function ? 1 : unknown_run(fr, i, end);
		if (run > 1) {
			char *a = frame_function(f), *b = frame_function(&fr[i + run - 1]);
			fprintf(out, "     %s%s .. %s  (%zu frames without symbols)%s\n", HT_DIM,
				a ? a : "?", b ? b : "?", run, HT_RESET);
			free(a);
			free(b);
			unknown = true;
			i += run;
			continue;
		}
		if (!f->function)
			unknown = true;
		char *fn = frame_function(f);
		frame_location(f, loc, sizeof loc);
		size_t l = fn ? strlen(fn) : 0, pos = 5;
		fputs("     ", out);
		fputs(f->function ? HT_FN : HT_DIM, out);
		put_wrapped(out, fn ? fn : "?", &pos, 7);
		fputs(HT_RESET, out);
		const char *inl = f->inlined ? "  (inlined)" : "";
		size_t tail = strlen(loc) + strlen(inl);
		if (tail) {
			size_t pad = l < col && pos == 5 + l ? col - l : 0;
			if (w && pos + pad + 2 + tail > w && pos > 9) {
				/* the location on a line of its own, under the name */
				fprintf(out, "\n%*s", 9, "");
				pos = 9;
			} else {
				fprintf(out, "%*s  ", (int)pad, "");
				pos += pad + 2;
			}
			fprintf(out, "%s%s%s%s", HT_DIM, loc, inl, HT_RESET);
		}
		fputc('\n', out);
		free(fn);
		i++;
	}
	if ((size_t)n > end && repeat)
		fprintf(out, "     ... (the whole stack is listed above)\n");
	else if ((size_t)n > end)
		fprintf(out, "     ... %zu more frames (--format json lists them all)\n", (size_t)n - end);
	if (unknown && !symbols_hint_given) {
		symbols_hint_given = true;
		const char *mod = NULL;
		for (size_t i = 0; i < end && !mod; i++)
			if (!fr[i].function)
				mod = fr[i].module;
		char tmp[4096], hint[4400];
		snprintf(hint, sizeof hint,
			 "hint: frames without symbols show module+offset (addr2line -e MODULE OFFSET); "
			 "for symbols, install the debug package of %s (Debian, Ubuntu: its -dbgsym "
			 "package; Fedora: debuginfo-install), or give --debug-dir DIR of separate "
			 "debug files",
			 mod ? ht_text_safe(tmp, sizeof tmp, mod) : "the module");
		fprintf(out, "     %s%s%s\n", HT_YELLOW, hint, HT_RESET);
	}
}

int ht_report_stack_text(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym, const ht_site_t *s,
			 bool brief)
{
	ht_stack_text_t c = { out, m, sym, NULL, 0, 0 };
	ht_stack_text_print(&c, s, brief);
	free(c.frames);
	return c.err;
}
