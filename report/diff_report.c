/* diff_report.c - `heaptrail diff`: two traces side by side (analysis/diff.h matches
 * their sites), as text and as JSON ("heaptrail_diff": 1, docs/JSON.md).
 *
 * Each side's figures are the ones its own report shows (the same model,
 * the same estimates when sampled); a figure a trace does not know
 * (temporary allocations of a sampled or summary trace, a peak RSS never
 * sampled) is unknown, never 0, and so is its change. Stacks are shown as
 * the text report prints them, from NEW, or from BASE for a site gone.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "trace_format.h"
#include "analysis/diff.h"
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

/* ---- text ---------------------------------------------------------------------- */

static void print_side(FILE *out, const ht_diff_t *d, int side)
{
	const ht_diff_side_t *sd = &d->side[side];
	const ht_trace_t *t = sd->m->trace;
	fprintf(out, "  %-10s  ", side_name[side]);
	ht_text_put(out, sd->path);
	fprintf(out, "\n  %-10s  ", "");
	ht_report_command_text(out, t);
	fprintf(out, " (pid %" PRIu64 ", ", t->pid);
	ht_report_ending_text(out, t);
	fputs(")\n", out);
}

static void print_totals(FILE *out, const ht_diff_t *d)
{
	char a[2 * HT_FMT_LEN], b[2 * HT_FMT_LEN], c[2 * HT_FMT_LEN], p[2 * HT_FMT_LEN],
		x[2 * HT_FMT_LEN];
	ht_report_rule(out, "TOTALS");
	fprintf(out, "  %-18s %14s %14s %14s\n", "", "base", "new", "change");
	for (size_t i = 0; i < NTOTALS; i++) {
		uint64_t va, vb;
		bool ka = total(&d->side[0], i, &va), kb = total(&d->side[1], i, &vb);
		fig_kind_t kind = totals_def[i].kind;
		fprintf(out, "  %-18s %14s %14s", totals_def[i].text,
			ka ? value_text(a, va, kind) : i == 4 ? "unknown" : "?",
			kb ? value_text(b, vb, kind) : i == 4 ? "unknown" : "?");
		if (ka && kb) {
			fprintf(out, " %14s %8s", change_text(c, va, vb, kind), percent_text(p, va, vb));
			/* sizes are rounded above: the exact change too */
			if (kind == FIG_SIZE && va != vb)
				fprintf(out, "   (%s B)", change_text(x, va, vb, FIG_COUNT));
		} else {
			fprintf(out, " %14s", "?");
		}
		fputc('\n', out);
	}
}

typedef struct textctx {
	FILE *out;
	const ht_diff_t *d;
	uint32_t *label; /* per row: its [site N] once printed, else 0 */
	uint32_t next_label;
	int err;
} textctx_t;

static void head(FILE *out, const ht_diff_site_t *s, ht_site_order_t order)
{
	const ht_diff_figs_t *fa = &s->fig[HT_DIFF_BASE], *fb = &s->fig[HT_DIFF_NEW];
	char c[2 * HT_FMT_LEN], a[HT_FMT_LEN], b[HT_FMT_LEN], p[2 * HT_FMT_LEN], e[HT_FMT_LEN],
		f[HT_FMT_LEN];
	uint64_t va = ht_diff_fig(fa, order), vb = ht_diff_fig(fb, order);
	percent_text(p, va, vb);
	switch (order) {
	case HT_BY_COUNT:
		fprintf(out, "%12s  %s -> %s allocations", change_text(c, va, vb, FIG_COUNT),
			ht_fmt_count(a, va), ht_fmt_count(b, vb));
		break;
	case HT_BY_PEAK:
		fprintf(out, "%12s  %s B -> %s B live at the peak", change_text(c, va, vb, FIG_SIZE),
			ht_fmt_count(a, va), ht_fmt_count(b, vb));
		break;
	case HT_BY_LEAKED:
		fprintf(out, "%12s  %s B in %s %s -> %s B in %s %s in use at exit",
			change_text(c, va, vb, FIG_SIZE), ht_fmt_count(a, va),
			ht_fmt_count(e, fa->leaked_blocks), ht_blocks_word(fa->leaked_blocks),
			ht_fmt_count(b, vb), ht_fmt_count(f, fb->leaked_blocks),
			ht_blocks_word(fb->leaked_blocks));
		break;
	default:
		fprintf(out, "%12s  %s B -> %s B in %s -> %s allocations",
			change_text(c, va, vb, FIG_SIZE), ht_fmt_count(a, va), ht_fmt_count(b, vb),
			ht_fmt_count(e, fa->allocations), ht_fmt_count(f, fb->allocations));
		break;
	}
	if (p[0])
		fprintf(out, " (%s)", p);
}

static void print_list(textctx_t *c, const char *title, ht_site_order_t order, size_t top,
		       size_t *idx)
{
	FILE *out = c->out;
	const ht_diff_t *d = c->d;
	size_t n = ht_diff_sort(d, order, false, idx);
	size_t shown = n < top ? n : top;
	ht_report_list_rule(out, title, shown, n);
	if (!n)
		fputs("  no change\n", out);
	for (size_t i = 0; i < shown && !c->err; i++) {
		const ht_diff_site_t *s = &d->sites[idx[i]];
		bool repeat = c->label[idx[i]] != 0;
		if (!repeat)
			c->label[idx[i]] = ++c->next_label;
		fprintf(out, "%s#%-3zu", i ? "\n" : "", i + 1);
		head(out, s, order);
		const char *st = ht_diff_status(d, s);
		if (!strcmp(st, "new") || !strcmp(st, "gone"))
			fprintf(out, "  [%s]", st);
		int side = ht_diff_shown_side(s);
		fprintf(out, "  [site %u]", c->label[idx[i]]);
		if (s->nsites[side] > 1)
			fprintf(out, " (%u stacks of %s)", s->nsites[side], side_name[side]);
		fputc('\n', out);
		const ht_diff_side_t *sd = &d->side[side];
		c->err = ht_report_stack_text(out, sd->m, sd->sym, &sd->m->sites[s->rep[side]], repeat);
	}
}

int ht_report_diff_text(FILE *out, const ht_diff_t *d, size_t top)
{
	textctx_t c = { out, d, NULL, 0, 0 };
	size_t *idx = malloc((d->nsites ? d->nsites : 1) * sizeof(*idx));
	c.label = calloc(d->nsites ? d->nsites : 1, sizeof(*c.label));
	if (!idx || !c.label) {
		free(idx);
		free(c.label);
		return -ENOMEM;
	}
	if (!top)
		top = DEFAULT_TOP;

	fputs("heaptrail diff: ", out);
	ht_text_put(out, d->side[0].path);
	fputs(" -> ", out);
	ht_text_put(out, d->side[1].path);
	fputc('\n', out);
	print_side(out, d, HT_DIFF_BASE);
	print_side(out, d, HT_DIFF_NEW);
	size_t count[4] = { 0 }; /* changed, new, gone, same */
	static const char *const statuses[4] = { "changed", "new", "gone", "same" };
	for (size_t i = 0; i < d->nsites; i++) {
		const char *st = ht_diff_status(d, &d->sites[i]);
		for (size_t k = 0; k < 4; k++)
			count[k] += !strcmp(st, statuses[k]);
	}
	fprintf(out, "  %-10s  matched by %s: %zu changed, %zu new, %zu gone, %zu the same\n",
		"sites", d->match == HT_DIFF_BY_LINE ? "function and file:line" : "function names",
		count[0], count[1], count[2], count[3]);
	for (int s = 0; s < 2; s++) {
		const ht_trace_t *t = d->side[s].m->trace;
		char r[HT_FMT_LEN];
		if (d->side[s].m->sample_rate)
			fprintf(out, "  %-10s  %s is sampled (one sample per %s allocated on average): "
				     "its figures are estimates, as its report's\n",
				"sampling", side_name[s], ht_fmt_size(r, t->sample_rate));
		if (t->have_summary)
			fprintf(out, "  %-10s  %s is a summary trace: temporary allocations unknown\n",
				"summary", side_name[s]);
	}
	char w[8][HT_WARN_LEN];
	for (int s = 0; s < 2; s++) {
		size_t nw = ht_report_warnings(d->side[s].m, w, 8);
		for (size_t i = 0; i < nw; i++) {
			fprintf(out, "%sWARNING: %s: ", i ? "" : "\n", side_name[s]);
			ht_text_put(out, w[i]);
			fputc('\n', out);
		}
	}

	print_totals(out, d);
	print_list(&c, "LARGEST CHANGES IN BYTES ALLOCATED", HT_BY_BYTES, top, idx);
	print_list(&c, "LARGEST CHANGES IN NUMBER OF ALLOCATIONS", HT_BY_COUNT, top, idx);
	print_list(&c, "LARGEST CHANGES IN BYTES AT THE PEAK", HT_BY_PEAK, top, idx);
	print_list(&c, "LARGEST CHANGES IN BYTES IN USE AT EXIT", HT_BY_LEAKED, top, idx);
	fputc('\n', out);

	free(idx);
	free(c.label);
	if (c.err)
		return c.err;
	return ferror(out) ? -EIO : 0;
}

/* ---- JSON ---------------------------------------------------------------------- */

/* b - a as a JSON number (either sign; no overflow) */
static void json_change(FILE *out, uint64_t a, uint64_t b)
{
	if (b >= a)
		fprintf(out, "%" PRIu64, b - a);
	else
		fprintf(out, "-%" PRIu64, a - b);
}

static void json_value(FILE *out, bool known, uint64_t v, fig_kind_t kind)
{
	if (!known)
		fputs("null", out);
	else if (kind == FIG_TIME)
		fprintf(out, "%.9f", (double)v / 1e9);
	else
		fprintf(out, "%" PRIu64, v);
}

static void json_side(FILE *out, const ht_diff_t *d, int side)
{
	const ht_diff_side_t *sd = &d->side[side];
	const ht_model_t *m = sd->m;
	const ht_trace_t *t = m->trace;
	fprintf(out, " \"%s\": {\"path\": ", side_name[side]);
	ht_json_str(out, sd->path);
	fputs(", \"program\": ", out);
	ht_report_program_json(out, t);
	if (m->sample_rate)
		fprintf(out, ",\n   \"sampled\": {\"rate\": %" PRIu64 ", \"exact_totals\": %s}",
			t->sample_rate, t->have_end_counts ? "true" : "false");
	fprintf(out, ",\n   \"summary_mode\": %s, \"truncated\": %s, \"warnings\": [",
		t->have_summary ? "true" : "false", t->error ? "true" : "false");
	char w[8][HT_WARN_LEN];
	size_t nw = ht_report_warnings(m, w, 8);
	for (size_t i = 0; i < nw; i++) {
		if (i)
			fputs(", ", out);
		ht_json_str(out, w[i]);
	}
	fputs("],\n   \"totals\": {", out);
	for (size_t i = 0; i < NTOTALS; i++) {
		uint64_t v;
		bool k = total(sd, i, &v);
		fprintf(out, "%s\"%s\": ", i ? ", " : "", totals_def[i].json);
		json_value(out, k, v, totals_def[i].kind);
	}
	fputs("}},\n", out);
}

static void json_totals(FILE *out, const ht_diff_t *d)
{
	fputs(" \"totals\": {", out);
	for (size_t i = 0; i < NTOTALS; i++) {
		uint64_t va, vb;
		bool ka = total(&d->side[0], i, &va), kb = total(&d->side[1], i, &vb);
		fig_kind_t kind = totals_def[i].kind;
		fprintf(out, "%s\"%s\": {\"base\": ", i ? ",\n            " : "", totals_def[i].json);
		json_value(out, ka, va, kind);
		fputs(", \"new\": ", out);
		json_value(out, kb, vb, kind);
		fputs(", \"change\": ", out);
		if (!ka || !kb)
			fputs("null", out);
		else if (kind == FIG_TIME)
			fprintf(out, "%.9f", ((double)vb - (double)va) / 1e9);
		else
			json_change(out, va, vb);
		fputs(", \"change_percent\": ", out);
		if (ka && kb && va)
			fprintf(out, "%.1f", 100.0 * ((double)vb - (double)va) / (double)va);
		else
			fputs("null", out);
		fputc('}', out);
	}
	fputs("},\n", out);
}

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

static void json_row(FILE *out, const ht_diff_t *d, const ht_diff_site_t *s)
{
	uint64_t v[2][7];
	bool temp_known[2];
	for (int k = 0; k < 2; k++) {
		figs_array(&s->fig[k], v[k]);
		temp_known[k] = d->side[k].temporary_known;
	}
	for (int k = 0; k < 2; k++) {
		fprintf(out, "%s\"%s\": {", k ? ", " : "", side_name[k]);
		for (size_t i = 0; i < 7; i++) {
			fprintf(out, "%s\"%s\": ", i ? ", " : "", fig_names[i]);
			json_value(out, i < 6 || temp_known[k], v[k][i], FIG_COUNT);
		}
		fprintf(out, ", \"sites\": %u}", s->nsites[k]);
	}
	fputs(",\n   \"change\": {", out);
	for (size_t i = 0; i < 7; i++) {
		fprintf(out, "%s\"%s\": ", i ? ", " : "", fig_names[i]);
		if (i < 6 || (temp_known[0] && temp_known[1]))
			json_change(out, v[0][i], v[1][i]);
		else
			fputs("null", out);
	}
	fprintf(out, "}, \"status\": \"%s\"", ht_diff_status(d, s));
}

int ht_report_diff_json(FILE *out, const ht_diff_t *d)
{
	size_t *idx = malloc((d->nsites ? d->nsites : 1) * sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	ht_frame_t *frames = NULL;
	size_t cap = 0;
	int err = 0;
	fprintf(out, "{\"heaptrail_diff\": 1, \"match\": \"%s\",\n",
		d->match == HT_DIFF_BY_LINE ? "line" : "function");
	json_side(out, d, HT_DIFF_BASE);
	json_side(out, d, HT_DIFF_NEW);
	json_totals(out, d);
	size_t n = ht_diff_sort(d, HT_BY_BYTES, true, idx);
	fputs(" \"sites\": [", out);
	for (size_t i = 0; i < n && !err; i++) {
		const ht_diff_site_t *s = &d->sites[idx[i]];
		int side = ht_diff_shown_side(s);
		const ht_diff_side_t *sd = &d->side[side];
		long nf = ht_model_frames(sd->m, sd->sym, &sd->m->sites[s->rep[side]], &frames, &cap);
		if (nf < 0) {
			err = (int)nf;
			break;
		}
		fputs(i ? ",\n  {" : "\n  {", out);
		json_row(out, d, s);
		fputs(",\n   \"stack\": ", out);
		ht_json_frames(out, frames, nf);
		fputc('}', out);
	}
	fputs("]}\n", out);
	free(frames);
	free(idx);
	if (err)
		return err;
	return ferror(out) ? -EIO : 0;
}
