/* emitter.h - one writer, two back ends: the text report and the JSON report.
 *
 * A report section is written once, against an emitter. Its calls fall in
 * three kinds, each a no-op in the other back end where it says so:
 *  - JSON structure and members (ht_emit_obj_begin, ht_emit_u64, ...):
 *    the JSON back end writes them, the text back end ignores them;
 *  - text (ht_emit_printf, ht_emit_put, ht_emit_rule): the text back end
 *    writes them, the JSON back end ignores them; the text keeps its own
 *    layout (prose, lists, tables), it is not a key-value dump;
 *  - table cells (ht_emit_cell_*): a column of a text row and a member of
 *    the JSON object, for figures both show alike.
 * JSON separators are the emitter's: ", " between items, or a line break
 * and an indent when the section asked for one (ht_emit_nl), so the
 * sections choose where lines break and the emitter keeps the commas.
 * Strings go through analysis/safe.h (ht_text_* for text, ht_json_str for
 * JSON). Output errors show in ferror(e->out).
 */
#ifndef HEAPTRAIL_EMITTER_H
#define HEAPTRAIL_EMITTER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Open objects and arrays at once: the function profile's call trees nest
 * two per call level (an object and its "children"), up to
 * analysis/functions.h's HT_FN_MAX_DEPTH (256) levels below the report's
 * own few. */
#define HT_EMIT_DEPTH 1024

typedef enum ht_emit_kind { HT_EMIT_TEXT, HT_EMIT_JSON } ht_emit_kind_t;

typedef struct ht_emitter {
	FILE *out;
	ht_emit_kind_t kind;
	int depth;		     /* open JSON objects and arrays */
	bool item[HT_EMIT_DEPTH];    /* an item was written at this depth */
	int brk;		     /* the next JSON item starts a line with brk spaces; -1: inline */
	int brk_end;		     /* the same for the next closing bracket */
	int col;		     /* text: cells written in the current row */
} ht_emitter_t;

void ht_emit_init(ht_emitter_t *e, FILE *out, ht_emit_kind_t kind);
static inline bool ht_emit_json(const ht_emitter_t *e)
{
	return e->kind == HT_EMIT_JSON;
}

/* ---- JSON (nothing in text) ---------------------------------------------------- */

/* The next item starts a new line indented by indent spaces. */
void ht_emit_nl(ht_emitter_t *e, int indent);
/* The next closing bracket does (a list of items one a line, closed on a
 * line of its own). */
void ht_emit_nl_end(ht_emitter_t *e, int indent);
/* key: the member's name inside an object, NULL inside an array or at the top. */
void ht_emit_obj_begin(ht_emitter_t *e, const char *key);
void ht_emit_obj_end(ht_emitter_t *e);
void ht_emit_arr_begin(ht_emitter_t *e, const char *key);
void ht_emit_arr_end(ht_emitter_t *e);
void ht_emit_u64(ht_emitter_t *e, const char *key, uint64_t v);
void ht_emit_i64(ht_emitter_t *e, const char *key, int64_t v);
/* prec digits after the point, as printf's %.*f */
void ht_emit_dbl(ht_emitter_t *e, const char *key, int prec, double v);
void ht_emit_bool(ht_emitter_t *e, const char *key, bool v);
void ht_emit_str(ht_emitter_t *e, const char *key, const char *s); /* NULL: null */
void ht_emit_null(ht_emitter_t *e, const char *key);
/* "0x..." as a string */
void ht_emit_hex(ht_emitter_t *e, const char *key, uint64_t v);
/* b - a, exact, of either sign */
void ht_emit_change(ht_emitter_t *e, const char *key, uint64_t a, uint64_t b);
/* v when known, else null */
void ht_emit_u64_or_null(ht_emitter_t *e, const char *key, bool known, uint64_t v);

/* ---- text (nothing in JSON) ----------------------------------------------------- */

void ht_emit_printf(ht_emitter_t *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ht_emit_put(ht_emitter_t *e, const char *s);	    /* a name: escaped */
void ht_emit_pad(ht_emitter_t *e, const char *s, int width); /* escaped, padded right */
/* A section title: "\nTITLE ---...---" to 100 columns. */
void ht_emit_rule(ht_emitter_t *e, const char *title);

/* ---- table cells (both) ----------------------------------------------------------- */

/* A text row starts with prefix and ends with a newline; its cells are
 * separated by one space. JSON: nothing (the section opens the object). */
void ht_emit_row_begin(ht_emitter_t *e, const char *prefix);
void ht_emit_row_end(ht_emitter_t *e);
/* A name, escaped and left-aligned in width columns. */
void ht_emit_cell_str(ht_emitter_t *e, const char *key, int width, const char *s);
/* A count, right-aligned with thousands separators in text, exact in JSON. */
void ht_emit_cell_count(ht_emitter_t *e, const char *key, int width, uint64_t v);
/* "yes"/"no" right-aligned in text, true/false in JSON. */
void ht_emit_cell_yesno(ht_emitter_t *e, const char *key, int width, bool v);
/* Text-only columns: already formatted and right-aligned; a name, escaped
 * and left-aligned. */
void ht_emit_col(ht_emitter_t *e, int width, const char *s);
void ht_emit_col_name(ht_emitter_t *e, int width, const char *s);

#endif /* HEAPTRAIL_EMITTER_H */
