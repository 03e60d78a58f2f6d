/* emitter.c - the text and JSON back ends of report/emitter.h. */
#include <inttypes.h>
#include <stdarg.h>

#include "analysis/safe.h"
#include "analysis/util.h"
#include "report/emitter.h"
#include "report/text_layout.h"

void ht_emit_init(ht_emitter_t *e, FILE *out, ht_emit_kind_t kind)
{
	e->out = out;
	e->kind = kind;
	e->depth = 0;
	e->item[0] = false;
	e->brk = -1;
	e->brk_end = -1;
	e->col = 0;
}

/* ---- JSON ------------------------------------------------------------------------ */

void ht_emit_nl(ht_emitter_t *e, int indent)
{
	e->brk = indent;
}

void ht_emit_nl_end(ht_emitter_t *e, int indent)
{
	e->brk_end = indent;
}

/* The separator before an item and its key. */
static void json_item(ht_emitter_t *e, const char *key)
{
	bool *it = &e->item[e->depth];
	if (*it)
		fputc(',', e->out);
	if (e->brk >= 0)
		fprintf(e->out, "\n%*s", e->brk, "");
	else if (*it)
		fputc(' ', e->out);
	e->brk = -1;
	*it = true;
	if (key)
		fprintf(e->out, "\"%s\": ", key);
}

static void json_open(ht_emitter_t *e, const char *key, char c)
{
	if (!ht_emit_json(e))
		return;
	json_item(e, key);
	fputc(c, e->out);
	if (e->depth + 1 < HT_EMIT_DEPTH)
		e->depth++;
	e->item[e->depth] = false;
}

static void json_close(ht_emitter_t *e, char c)
{
	if (!ht_emit_json(e))
		return;
	if (e->brk_end >= 0)
		fprintf(e->out, "\n%*s", e->brk_end, "");
	fputc(c, e->out);
	if (e->depth > 0)
		e->depth--;
	e->brk = e->brk_end = -1;
}

void ht_emit_obj_begin(ht_emitter_t *e, const char *key)
{
	json_open(e, key, '{');
}

void ht_emit_obj_end(ht_emitter_t *e)
{
	json_close(e, '}');
}

void ht_emit_arr_begin(ht_emitter_t *e, const char *key)
{
	json_open(e, key, '[');
}

void ht_emit_arr_end(ht_emitter_t *e)
{
	json_close(e, ']');
}

void ht_emit_u64(ht_emitter_t *e, const char *key, uint64_t v)
{
	if (!ht_emit_json(e))
		return;
	json_item(e, key);
	fprintf(e->out, "%" PRIu64, v);
}

void ht_emit_i64(ht_emitter_t *e, const char *key, int64_t v)
{
	if (!ht_emit_json(e))
		return;
	json_item(e, key);
	fprintf(e->out, "%" PRId64, v);
}

void ht_emit_dbl(ht_emitter_t *e, const char *key, int prec, double v)
{
	if (!ht_emit_json(e))
		return;
	json_item(e, key);
	fprintf(e->out, "%.*f", prec, v);
}

void ht_emit_bool(ht_emitter_t *e, const char *key, bool v)
{
	if (!ht_emit_json(e))
		return;
	json_item(e, key);
	fputs(v ? "true" : "false", e->out);
}

void ht_emit_str(ht_emitter_t *e, const char *key, const char *s)
{
	if (!ht_emit_json(e))
		return;
	json_item(e, key);
	ht_json_str(e->out, s);
}

void ht_emit_null(ht_emitter_t *e, const char *key)
{
	if (!ht_emit_json(e))
		return;
	json_item(e, key);
	fputs("null", e->out);
}

void ht_emit_hex(ht_emitter_t *e, const char *key, uint64_t v)
{
	if (!ht_emit_json(e))
		return;
	json_item(e, key);
	fprintf(e->out, "\"0x%" PRIx64 "\"", v);
}

void ht_emit_change(ht_emitter_t *e, const char *key, uint64_t a, uint64_t b)
{
	if (!ht_emit_json(e))
		return;
	json_item(e, key);
	if (b >= a)
		fprintf(e->out, "%" PRIu64, b - a);
	else
		fprintf(e->out, "-%" PRIu64, a - b);
}

void ht_emit_u64_or_null(ht_emitter_t *e, const char *key, bool known, uint64_t v)
{
	if (known)
		ht_emit_u64(e, key, v);
	else
		ht_emit_null(e, key);
}

/* ---- text ------------------------------------------------------------------------ */

void ht_emit_printf(ht_emitter_t *e, const char *fmt, ...)
{
	if (ht_emit_json(e))
		return;
	va_list ap;
	va_start(ap, fmt);
	vfprintf(e->out, fmt, ap);
	va_end(ap);
}

void ht_emit_put(ht_emitter_t *e, const char *s)
{
	if (!ht_emit_json(e))
		ht_text_put(e->out, s);
}

void ht_emit_pad(ht_emitter_t *e, const char *s, int width)
{
	if (!ht_emit_json(e))
		ht_text_pad(e->out, s, width);
}

void ht_emit_rule(ht_emitter_t *e, const char *title)
{
	if (!ht_emit_json(e))
		ht_report_rule(e->out, title);
}

/* ---- table cells ------------------------------------------------------------------ */

void ht_emit_row_begin(ht_emitter_t *e, const char *prefix)
{
	if (ht_emit_json(e))
		return;
	fputs(prefix, e->out);
	e->col = 0;
}

void ht_emit_row_end(ht_emitter_t *e)
{
	if (!ht_emit_json(e))
		fputc('\n', e->out);
}

static void text_cell(ht_emitter_t *e)
{
	if (e->col++)
		fputc(' ', e->out);
}

void ht_emit_col(ht_emitter_t *e, int width, const char *s)
{
	if (ht_emit_json(e))
		return;
	text_cell(e);
	fprintf(e->out, "%*s", width, s);
}

void ht_emit_col_name(ht_emitter_t *e, int width, const char *s)
{
	if (ht_emit_json(e))
		return;
	text_cell(e);
	ht_text_pad(e->out, s, width);
}

void ht_emit_cell_str(ht_emitter_t *e, const char *key, int width, const char *s)
{
	if (ht_emit_json(e)) {
		ht_emit_str(e, key, s);
		return;
	}
	text_cell(e);
	ht_text_pad(e->out, s, width);
}

void ht_emit_cell_count(ht_emitter_t *e, const char *key, int width, uint64_t v)
{
	char b[HT_FMT_LEN];
	if (ht_emit_json(e))
		ht_emit_u64(e, key, v);
	else
		ht_emit_col(e, width, ht_fmt_count(b, v));
}

void ht_emit_cell_yesno(ht_emitter_t *e, const char *key, int width, bool v)
{
	if (ht_emit_json(e))
		ht_emit_bool(e, key, v);
	else
		ht_emit_col(e, width, v ? "yes" : "no");
}
