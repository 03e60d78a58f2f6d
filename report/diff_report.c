/* diff_report.c - `heaptrail diff`: two traces side by side (analysis/diff.h matches
 * their sites), as text and as JSON ("heaptrail_diff": 1, docs/JSON.md).
 *
 * Each side's figures are the ones its own report shows (the same model,
 * the same estimates when sampled); a figure a trace does not know
 * (temporary allocations of a sampled or summary trace, a peak RSS never
 * sampled) is unknown, never 0, and so is its change. Stacks are shown as
 * the text report prints them, from NEW, or from BASE for a site gone.
 * Written once against the emitter (report/emitter.h): the header and the
 * totals are one walk for both back ends; the text's four tables of the
 * largest changes and the JSON's one list of every site are each their own.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "trace_format.h"
#include "analysis/diff.h"
#include "report/emitter.h"
#include "report/report.h"
#include "analysis/util.h"

#define DEFAULT_TOP 10

static const char *const side_name[2] = { "base", "new" };

/* ---- totals ------------------------------------------------------------------ */

typedef enum { FIG_COUNT, FIG_SIZE, FIG_TIME } fig_kind_t;

static const struct {
	const char *json, *text;
	fig_kind_t kind;
} totals_def[] = {
	{ "allocations", "allocations", FIG_COUNT },
	{ "frees", "frees", FIG_COUNT },
	{ "bytes_allocated", "bytes allocated", FIG_SIZE },
	{ "peak_heap_bytes", "peak heap", FIG_SIZE },
	{ "peak_rss_bytes", "peak RSS", FIG_SIZE },
	{ "leaked_bytes", "in use at exit", FIG_SIZE },
	{ "leaked_blocks", "blocks at exit", FIG_COUNT },
	{ "temporary_allocations", "temporary allocs", FIG_COUNT },
	{ "duration_seconds", "run time", FIG_TIME },
	{ "lost_bytes", "lost", FIG_SIZE }, /* definitely + indirectly lost */
};
#define NTOTALS (sizeof(totals_def) / sizeof(totals_def[0]))

/* Total i of a side (run time in ns); false when the trace does not know it. */
static bool total(const ht_diff_side_t *sd, size_t i, uint64_t *v)
{
	const ht_totals_t *tt = &sd->m->totals;
	switch (i) {
	case 0: *v = tt->allocations; return true;
	case 1: *v = tt->frees; return true;
	case 2: *v = tt->bytes_allocated; return true;
	case 3: *v = tt->peak_heap_bytes; return true;
	case 4: *v = tt->peak_rss_bytes; return tt->peak_rss_bytes != 0; /* 0: never sampled */
	case 5: *v = tt->leaked_bytes; return true;
	case 6: *v = tt->leaked_blocks; return true;
	case 7: *v = tt->temporary; return sd->temporary_known;
	case 8: *v = tt->duration_ns; return true;
	default: /* lost: what the exit leak check classed definite or indirect */
		*v = 0;
		for (size_t k = 0; k < sd->m->nlive_end; k++) {
			const ht_live_block_t *b = &sd->m->live_end[k];
			if (b->kind == HT_LEAK_DEFINITE || b->kind == HT_LEAK_INDIRECT)
				*v += b->size;
		}
		return sd->m->leaks_classified && !sd->m->sample_rate;
	}
}

/* ---- signed changes, in the report's number formats ----------------------------- */

static char *change_text(char *buf, uint64_t a, uint64_t b, fig_kind_t kind)
{
	char tmp[HT_FMT_LEN];
	uint64_t d = a > b ? a - b : b - a;
	const char *v = kind == FIG_SIZE ? ht_fmt_size(tmp, d)
			: kind == FIG_TIME ? ht_fmt_duration(tmp, d)
					   : ht_fmt_count(tmp, d);
	snprintf(buf, 2 * HT_FMT_LEN, "%s%s", d == 0 ? "" : b > a ? "+" : "-", v);
	return buf;
}

static char *value_text(char *buf, uint64_t v, fig_kind_t kind)
{
	return kind == FIG_SIZE ? ht_fmt_size(buf, v)
	       : kind == FIG_TIME ? ht_fmt_duration(buf, v)
				  : ht_fmt_count(buf, v);
}

/* " (+12.5%)"; "" when BASE is 0 (no ratio) */
static char *percent_text(char *buf, uint64_t a, uint64_t b)
{
	buf[0] = 0;
	if (a)
		snprintf(buf, 2 * HT_FMT_LEN, "%+.1f%%", 100.0 * ((double)b - (double)a) / (double)a);
	return buf;
}


/* A figure as a JSON member: null when unknown, seconds for a time. */
static void fig_value(ht_emitter_t *e, const char *key, bool known, uint64_t v, fig_kind_t kind)
{
	if (!known)
		ht_emit_null(e, key);
	else if (kind == FIG_TIME)
		ht_emit_dbl(e, key, 9, (double)v / 1e9);
	else
		ht_emit_u64(e, key, v);
}

/* ---- the two traces ------------------------------------------------------------ */

/* A side's path, program and how it was recorded: two text lines; the
 * "base"/"new" object in JSON, its totals with it. */
static void side_head(ht_emitter_t *e, const ht_diff_t *d, int side)
{
	const ht_diff_side_t *sd = &d->side[side];
	const ht_model_t *m = sd->m;
	const ht_trace_t *t = m->trace;
	ht_emit_printf(e, "  %-10s  ", side_name[side]);
	ht_emit_put(e, sd->path);
	ht_emit_printf(e, "\n  %-10s  ", "");
	if (!ht_emit_json(e)) {
		ht_report_command_text(e->out, t);
		ht_emit_printf(e, " (pid %" PRIu64 ", ", t->pid);
		ht_report_ending_text(e->out, t);
		ht_emit_printf(e, ")\n");
		return;
	}
	ht_emit_nl(e, 1);
	ht_emit_obj_begin(e, side_name[side]);
	ht_emit_str(e, "path", sd->path);
	ht_emit_program(e, "program", t);
	if (m->sample_rate) {
		ht_emit_nl(e, 3);
		ht_emit_obj_begin(e, "sampled");
		ht_emit_u64(e, "rate", t->sample_rate);
		ht_emit_bool(e, "exact_totals", t->have_end_counts);
		ht_emit_obj_end(e);
	}
	ht_emit_nl(e, 3);
	ht_emit_bool(e, "summary_mode", t->have_summary);
	ht_emit_bool(e, "truncated", t->error);
	ht_emit_arr_begin(e, "warnings");
	char w[8][HT_WARN_LEN];
	size_t nw = ht_report_warnings(m, w, 8);
	for (size_t i = 0; i < nw; i++)
		ht_emit_str(e, NULL, w[i]);
	ht_emit_arr_end(e);
	ht_emit_nl(e, 3);
	ht_emit_obj_begin(e, "totals");
	for (size_t i = 0; i < NTOTALS; i++) {
		uint64_t v;
		bool k = total(sd, i, &v);
		fig_value(e, totals_def[i].json, k, v, totals_def[i].kind);
	}
	ht_emit_obj_end(e);
	ht_emit_obj_end(e);
}

/* The text's head: both paths, how the sites matched, what each trace
 * cannot tell; its warnings. JSON: the "base" and "new" objects. */
static void diff_head(ht_emitter_t *e, const ht_diff_t *d)
{
	ht_emit_printf(e, "heaptrail diff: ");
	ht_emit_put(e, d->side[0].path);
	ht_emit_printf(e, " -> ");
	ht_emit_put(e, d->side[1].path);
	ht_emit_printf(e, "\n");
	side_head(e, d, HT_DIFF_BASE);
	side_head(e, d, HT_DIFF_NEW);
	if (ht_emit_json(e))
		return;
	size_t count[4] = { 0 }; /* changed, new, gone, same */
	static const char *const statuses[4] = { "changed", "new", "gone", "same" };
	for (size_t i = 0; i < d->nsites; i++) {
		const char *st = ht_diff_status(d, &d->sites[i]);
		for (size_t k = 0; k < 4; k++)
			count[k] += !strcmp(st, statuses[k]);
	}
	ht_emit_printf(e, "  %-10s  matched by %s: %zu changed, %zu new, %zu gone, %zu the same\n",
		       "sites",
		       d->match == HT_DIFF_BY_LINE ? "function and file:line" : "function names",
		       count[0], count[1], count[2], count[3]);
	for (int s = 0; s < 2; s++) {
		const ht_trace_t *t = d->side[s].m->trace;
		char r[HT_FMT_LEN];
		if (d->side[s].m->sample_rate)
			ht_emit_printf(e, "  %-10s  %s is sampled (one sample per %s allocated on average): "
					  "its figures are estimates, as its report's\n",
				       "sampling", side_name[s], ht_fmt_size(r, t->sample_rate));
		if (t->have_summary)
			ht_emit_printf(e, "  %-10s  %s is a summary trace: temporary allocations unknown\n",
				       "summary", side_name[s]);
	}
	char w[8][HT_WARN_LEN];
	for (int s = 0; s < 2; s++) {
		size_t nw = ht_report_warnings(d->side[s].m, w, 8);
		for (size_t i = 0; i < nw; i++) {
			ht_emit_printf(e, "%sWARNING: %s: ", i ? "" : "\n", side_name[s]);
			ht_emit_put(e, w[i]);
			ht_emit_printf(e, "\n");
		}
	}
}

/* ---- totals side by side ------------------------------------------------------ */

/* The TOTALS table; JSON: "totals", each figure {"base", "new", "change",
 * "change_percent"}. */
static void diff_totals(ht_emitter_t *e, const ht_diff_t *d)
{
	char a[2 * HT_FMT_LEN], b[2 * HT_FMT_LEN], c[2 * HT_FMT_LEN], p[2 * HT_FMT_LEN],
		x[2 * HT_FMT_LEN];
	ht_emit_rule(e, "TOTALS");
	ht_emit_printf(e, "  %-18s %14s %14s %14s\n", "", "base", "new", "change");
	ht_emit_nl(e, 1);
	ht_emit_obj_begin(e, "totals");
	for (size_t i = 0; i < NTOTALS; i++) {
		uint64_t va, vb;
		bool ka = total(&d->side[0], i, &va), kb = total(&d->side[1], i, &vb);
		fig_kind_t kind = totals_def[i].kind;
		if (i)
			ht_emit_nl(e, 12);
		ht_emit_obj_begin(e, totals_def[i].json);
		fig_value(e, "base", ka, va, kind);
		fig_value(e, "new", kb, vb, kind);
		if (!ka || !kb)
			ht_emit_null(e, "change");
		else if (kind == FIG_TIME)
			ht_emit_dbl(e, "change", 9, ((double)vb - (double)va) / 1e9);
		else
			ht_emit_change(e, "change", va, vb);
		if (ka && kb && va)
			ht_emit_dbl(e, "change_percent", 1,
				    100.0 * ((double)vb - (double)va) / (double)va);
		else
			ht_emit_null(e, "change_percent");
		ht_emit_obj_end(e);

		ht_emit_printf(e, "  %-18s %14s %14s", totals_def[i].text,
			       ka ? value_text(a, va, kind) : i == 4 ? "unknown" : "?",
			       kb ? value_text(b, vb, kind) : i == 4 ? "unknown" : "?");
		if (ka && kb) {
			ht_emit_printf(e, " %14s %8s", change_text(c, va, vb, kind),
				       percent_text(p, va, vb));
			/* sizes are rounded above: the exact change too */
			if (kind == FIG_SIZE && va != vb)
				ht_emit_printf(e, "   (%s B)", change_text(x, va, vb, FIG_COUNT));
		} else {
			ht_emit_printf(e, " %14s", "?");
		}
		ht_emit_printf(e, "\n");
	}
	ht_emit_obj_end(e);
}

/* ---- text: the largest changes ------------------------------------------------- */

typedef struct textctx {
	ht_emitter_t *e;
	const ht_diff_t *d;
	uint32_t *label; /* per row: its [site N] once printed, else 0 */
	uint32_t next_label;
	int err;
} textctx_t;

static void head(ht_emitter_t *e, const ht_diff_site_t *s, ht_site_order_t order)
{
	const ht_diff_figs_t *fa = &s->fig[HT_DIFF_BASE], *fb = &s->fig[HT_DIFF_NEW];
	char c[2 * HT_FMT_LEN], a[HT_FMT_LEN], b[HT_FMT_LEN], p[2 * HT_FMT_LEN], x[HT_FMT_LEN],
		f[HT_FMT_LEN];
	uint64_t va = ht_diff_fig(fa, order), vb = ht_diff_fig(fb, order);
	percent_text(p, va, vb);
	switch (order) {
	case HT_BY_COUNT:
		ht_emit_printf(e, "%12s  %s -> %s allocations", change_text(c, va, vb, FIG_COUNT),
			       ht_fmt_count(a, va), ht_fmt_count(b, vb));
		break;
	case HT_BY_PEAK:
		ht_emit_printf(e, "%12s  %s B -> %s B live at the peak",
			       change_text(c, va, vb, FIG_SIZE), ht_fmt_count(a, va),
			       ht_fmt_count(b, vb));
		break;
	case HT_BY_LEAKED:
		ht_emit_printf(e, "%12s  %s B in %s %s -> %s B in %s %s in use at exit",
			       change_text(c, va, vb, FIG_SIZE), ht_fmt_count(a, va),
			       ht_fmt_count(x, fa->leaked_blocks), ht_blocks_word(fa->leaked_blocks),
			       ht_fmt_count(b, vb), ht_fmt_count(f, fb->leaked_blocks),
			       ht_blocks_word(fb->leaked_blocks));
		break;
	default:
		ht_emit_printf(e, "%12s  %s B -> %s B in %s -> %s allocations",
			       change_text(c, va, vb, FIG_SIZE), ht_fmt_count(a, va),
			       ht_fmt_count(b, vb), ht_fmt_count(x, fa->allocations),
			       ht_fmt_count(f, fb->allocations));
		break;
	}
	if (p[0])
		ht_emit_printf(e, " (%s)", p);
}

static void print_list(textctx_t *c, const char *title, ht_site_order_t order, size_t top,
		       size_t *idx)
{
	ht_emitter_t *e = c->e;
	const ht_diff_t *d = c->d;
	size_t n = ht_diff_sort(d, order, false, idx);
	size_t shown = n < top ? n : top;
	ht_report_list_rule(e->out, title, shown, n);
	if (!n)
		ht_emit_printf(e, "  no change\n");
	for (size_t i = 0; i < shown && !c->err; i++) {
		const ht_diff_site_t *s = &d->sites[idx[i]];
		bool repeat = c->label[idx[i]] != 0;
		if (!repeat)
			c->label[idx[i]] = ++c->next_label;
		ht_emit_printf(e, "%s#%-3zu", i ? "\n" : "", i + 1);
		head(e, s, order);
		const char *st = ht_diff_status(d, s);
		if (!strcmp(st, "new") || !strcmp(st, "gone"))
			ht_emit_printf(e, "  [%s]", st);
		int side = ht_diff_shown_side(s);
		ht_emit_printf(e, "  [site %u]", c->label[idx[i]]);
		if (s->nsites[side] > 1)
			ht_emit_printf(e, " (%u stacks of %s)", s->nsites[side], side_name[side]);
		ht_emit_printf(e, "\n");
		const ht_diff_side_t *sd = &d->side[side];
		c->err = ht_report_stack_text(e->out, sd->m, sd->sym, &sd->m->sites[s->rep[side]],
					      repeat);
	}
}

/* The four tables of the largest changes, top rows each. */
static int diff_tables(ht_emitter_t *e, const ht_diff_t *d, size_t top, size_t *idx)
{
	textctx_t c = { e, d, NULL, 0, 0 };
	c.label = calloc(d->nsites ? d->nsites : 1, sizeof(*c.label));
	if (!c.label)
		return -ENOMEM;
	if (!top)
		top = DEFAULT_TOP;
	print_list(&c, "LARGEST CHANGES IN BYTES ALLOCATED", HT_BY_BYTES, top, idx);
	print_list(&c, "LARGEST CHANGES IN NUMBER OF ALLOCATIONS", HT_BY_COUNT, top, idx);
	print_list(&c, "LARGEST CHANGES IN BYTES AT THE PEAK", HT_BY_PEAK, top, idx);
	print_list(&c, "LARGEST CHANGES IN BYTES IN USE AT EXIT", HT_BY_LEAKED, top, idx);
	ht_emit_printf(e, "\n");
	free(c.label);
	return c.err;
}

/* ---- JSON: every site ------------------------------------------------------------- */

/* figure names of a site row, in ht_diff_figs_t's order */
static const char *const fig_names[] = { "allocations", "bytes_allocated", "frees", "peak_bytes",
					 "leaked_blocks", "leaked_bytes", "temporary_allocations" };

static void figs_array(const ht_diff_figs_t *f, uint64_t v[7])
{
	v[0] = f->allocations;
	v[1] = f->bytes_allocated;
	v[2] = f->frees;
	v[3] = f->peak_bytes;
	v[4] = f->leaked_blocks;
	v[5] = f->leaked_bytes;
	v[6] = f->temporary;
}

static void json_row(ht_emitter_t *e, const ht_diff_t *d, const ht_diff_site_t *s)
{
	uint64_t v[2][7];
	bool temp_known[2];
	for (int k = 0; k < 2; k++) {
		figs_array(&s->fig[k], v[k]);
		temp_known[k] = d->side[k].temporary_known;
	}
	for (int k = 0; k < 2; k++) {
		ht_emit_obj_begin(e, side_name[k]);
		for (size_t i = 0; i < 7; i++)
			ht_emit_u64_or_null(e, fig_names[i], i < 6 || temp_known[k], v[k][i]);
		ht_emit_u64(e, "sites", s->nsites[k]);
		ht_emit_obj_end(e);
	}
	ht_emit_nl(e, 3);
	ht_emit_obj_begin(e, "change");
	for (size_t i = 0; i < 7; i++) {
		if (i < 6 || (temp_known[0] && temp_known[1]))
			ht_emit_change(e, fig_names[i], v[0][i], v[1][i]);
		else
			ht_emit_null(e, fig_names[i]);
	}
	ht_emit_obj_end(e);
	ht_emit_str(e, "status", ht_diff_status(d, s));
}

/* "sites": every matched site, by bytes allocated, with its stack. */
static int diff_sites(ht_emitter_t *e, const ht_diff_t *d, size_t *idx)
{
	ht_frame_t *frames = NULL;
	size_t cap = 0;
	int err = 0;
	size_t n = ht_diff_sort(d, HT_BY_BYTES, true, idx);
	ht_emit_nl(e, 1);
	ht_emit_arr_begin(e, "sites");
	for (size_t i = 0; i < n && !err; i++) {
		const ht_diff_site_t *s = &d->sites[idx[i]];
		int side = ht_diff_shown_side(s);
		const ht_diff_side_t *sd = &d->side[side];
		long nf = ht_model_frames(sd->m, sd->sym, &sd->m->sites[s->rep[side]], &frames, &cap);
		if (nf < 0) {
			err = (int)nf;
			break;
		}
		ht_emit_nl(e, 2);
		ht_emit_obj_begin(e, NULL);
		json_row(e, d, s);
		ht_emit_nl(e, 3);
		ht_emit_frames(e, "stack", frames, nf);
		ht_emit_obj_end(e);
	}
	ht_emit_arr_end(e);
	free(frames);
	return err;
}

int ht_section_diff(ht_emitter_t *e, const ht_diff_t *d, size_t top)
{
	size_t *idx = malloc((d->nsites ? d->nsites : 1) * sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	int err = 0;
	ht_emit_obj_begin(e, NULL);
	ht_emit_u64(e, "heaptrail_diff", 1);
	ht_emit_str(e, "match", d->match == HT_DIFF_BY_LINE ? "line" : "function");
	diff_head(e, d);
	diff_totals(e, d);
	if (ht_emit_json(e))
		err = diff_sites(e, d, idx);
	else
		err = diff_tables(e, d, top, idx);
	ht_emit_obj_end(e);
	if (ht_emit_json(e))
		fputc('\n', e->out);
	free(idx);
	if (err)
		return err;
	return ferror(e->out) ? -EIO : 0;
}
