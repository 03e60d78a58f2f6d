/* leaks_section.c - the leak section of the text and JSON reports
 *: leaks grouped by class, then by stack, largest first; what the
 * suppressions took; the on-demand leak checks; growth suspects. The
 * figures come from analysis/leaks.c and analysis/model.c.
 *
 * The text prints memcheck's words for the classes ("definitely lost",
 * ...) so that people who know memcheck read it at once; still-reachable
 * blocks are one line unless asked for, as memcheck and LSan do.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/leaks.h"
#include "report/report.h"
#include "trace_format.h"
#include "analysis/util.h"

#define DEFAULT_TOP 10

static const char *const class_title[HT_LEAK_KINDS] = {
	"leaked (not classified: no leak check saw these blocks)",
	"definitely lost", "indirectly lost", "possibly lost", "still reachable",
};

/* ---- text ----------------------------------------------------------------------- */

/* A sampled trace's figures are estimates: "~" before them, as the summary
 * has it, and " (+-H)" after a group's, H the half width of its 95% interval. */
static const char *approx(const ht_model_t *m)
{
	return m->sample_rate ? "~" : "";
}

static char *ci(char *buf, const ht_model_t *m, double var, bool bytes)
{
	char tmp[HT_FMT_LEN];
	buf[0] = 0;
	if (m->sample_rate) {
		uint64_t h = (uint64_t)(ht_ci95(var) + 0.5);
		snprintf(buf, 2 * HT_FMT_LEN, " (+-%s)", bytes ? ht_fmt_size(tmp, h) : ht_fmt_count(tmp, h));
	}
	return buf;
}

/* One class's groups, g[from, to), at most top of them. */
static int print_class(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym, const ht_leaks_t *l,
		       size_t from, size_t to, size_t top, uint32_t *labels, uint32_t *next)
{
	unsigned kind = l->g[from].kind;
	char a[HT_FMT_LEN], b[HT_FMT_LEN], c[HT_FMT_LEN], d[HT_FMT_LEN], num[48];
	char cb[2 * HT_FMT_LEN], cn[2 * HT_FMT_LEN];
	const char *ap = approx(m);
	fprintf(out, "\n%s: %s%s (%s B) in %s%s block%s, %zu stack%s\n", class_title[kind], ap,
		ht_fmt_size(a, l->bytes[kind]), ht_fmt_count(b, l->bytes[kind]), ap,
		ht_fmt_count(c, l->blocks[kind]), l->blocks[kind] == 1 ? "" : "s", to - from,
		to - from == 1 ? "" : "s");
	size_t shown = to - from < top ? to - from : top;
	int e = 0;
	for (size_t i = 0; i < shown && !e; i++) {
		const ht_leak_group_t *g = &l->g[from + i];
		const ht_site_t *s = &m->sites[g->site];
		bool repeat = labels[g->site] != 0;
		if (!repeat)
			labels[g->site] = ++*next;
		/* summary mode knows no single block (ex_seq 0) */
		char eg[64] = "";
		if (g->ex_seq)
			snprintf(eg, sizeof eg, ", e.g. block %s", ht_alloc_number(num, g->ex_thread, g->ex_seq));
		char size[2 * HT_FMT_LEN];
		snprintf(size, sizeof(size), "%s%s", ap, ht_fmt_size(a, g->bytes));
		fprintf(out, "%s#%-3zu%10s  %s B%s in %s%s block%s%s (of %s%s allocated here)%s"
			"  [site %u]\n",
			i ? "\n" : "", i + 1, size,
			ht_fmt_count(b, g->bytes), ci(cb, m, g->var_bytes, true), ap,
			ht_fmt_count(c, g->blocks), g->blocks == 1 ? "" : "s",
			ci(cn, m, g->var_blocks, false), ap, ht_fmt_count(d, s->allocations), eg,
			labels[g->site]);
		e = ht_report_stack_text(out, m, sym, s, repeat);
	}
	if (!e && to - from > shown) {
		uint64_t bytes = 0, blocks = 0;
		for (size_t i = from + shown; i < to; i++) {
			bytes += l->g[i].bytes;
			blocks += l->g[i].blocks;
		}
		fprintf(out, "\n... and %zu more stacks: %s%s in %s%s %s (--top 0 shows all)\n",
			to - from - shown, ap, ht_fmt_size(a, bytes), ap, ht_fmt_count(b, blocks),
			ht_blocks_word(blocks));
	}
	return e;
}

int ht_report_leaks_text(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym, const ht_leaks_t *l,
			 size_t top, bool show_reachable)
{
	uint32_t *labels = calloc(m->nsites ? m->nsites : 1, sizeof(*labels));
	if (!labels)
		return -ENOMEM;
	uint32_t next = 0;
	int e = ht_report_leaks_text_labeled(out, m, sym, l, top, show_reachable, labels, &next);
	free(labels);
	return e;
}

int ht_report_leaks_text_labeled(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym,
				 const ht_leaks_t *l, size_t top, bool show_reachable,
				 uint32_t *labels, uint32_t *next)
{
	const ht_trace_t *t = m->trace;
	char a[HT_FMT_LEN], b[HT_FMT_LEN], c[HT_FMT_LEN];
	if (!top)
		top = DEFAULT_TOP;
	uint64_t lost = 0;
	for (unsigned k = 0; k < HT_LEAK_KINDS; k++)
		if (k != HT_LEAK_REACHABLE)
			lost += l->blocks[k];
	ht_report_rule(out, l->classified ? "LEAKS BY CLASS, LARGEST FIRST" : "LEAKS, LARGEST FIRST");
	if (!l->nshown)
		fprintf(out, "  %s\n", t->ending == HT_ENDING_EXEC ? "nothing was live at exec"
					: l->supp_blocks ? "no leaks but the suppressed ones"
							 : "no leaks");
	else if (!lost)
		fputs("  no leaks: every block live at the end is still reachable\n", out);
	int e = 0;
	for (size_t i = 0; i < l->nshown && !e;) {
		size_t j = i;
		while (j < l->nshown && l->g[j].kind == l->g[i].kind)
			j++;
		if (l->g[i].kind == HT_LEAK_REACHABLE && !show_reachable)
			fprintf(out, "\nstill reachable: %s%s (%s B) in %s%s block%s, %zu stack%s"
				" (--show-reachable lists them)\n", approx(m),
				ht_fmt_size(a, l->bytes[HT_LEAK_REACHABLE]),
				ht_fmt_count(b, l->bytes[HT_LEAK_REACHABLE]), approx(m),
				ht_fmt_count(c, l->blocks[HT_LEAK_REACHABLE]),
				l->blocks[HT_LEAK_REACHABLE] == 1 ? "" : "s", j - i, j - i == 1 ? "" : "s");
		else
			e = print_class(out, m, sym, l, i, j, top, labels, next);
		i = j;
	}
	if (!e && l->supp_blocks) {
		size_t np = 0;
		for (size_t i = 0; l->supps && i < l->supps->n; i++)
			np += l->supps->s[i].blocks > 0;
		fprintf(out, "\nsuppressed: %s%s (%s B) in %s%s %s, by %zu pattern%s:\n",
			approx(m), ht_fmt_size(a, l->supp_bytes), ht_fmt_count(b, l->supp_bytes),
			approx(m), ht_fmt_count(c, l->supp_blocks), ht_blocks_word(l->supp_blocks), np,
			np == 1 ? "" : "s");
		for (size_t i = 0; l->supps && i < l->supps->n; i++) {
			const ht_supp_t *s = &l->supps->s[i];
			if (!s->blocks)
				continue;
			fprintf(out, "  %10s B in %6s %-6s  leak:", ht_fmt_count(a, s->bytes),
				ht_fmt_count(b, s->blocks), ht_blocks_word(s->blocks));
			ht_text_put(out, s->pattern);
			fputs("  (", out);
			ht_text_put(out, s->origin);
			fputs(")\n", out);
		}
	}
	return e;
}

/* The leaf frame of a site, as `function  file:line`. */
static void site_leaf(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym, uint32_t site,
		      ht_frame_t **frames, size_t *cap)
{
	long n = ht_model_frames(m, sym, &m->sites[site], frames, cap);
	if (n <= 0) {
		fputs("(stack unknown)", out);
		return;
	}
	const ht_frame_t *f = &(*frames)[0];
	if (f->function)
		ht_text_put(out, f->function);
	else
		fprintf(out, "0x%" PRIx64, f->address);
	if (f->file && f->line > 0) {
		fputs("  ", out);
		ht_text_put(out, f->file);
		fprintf(out, ":%d", f->line);
	} else if (f->module) {
		fputs("  in ", out);
		ht_text_put(out, f->module);
	}
}

int ht_report_checks_text(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym)
{
	if (!m->nchecks)
		return 0;
	char a[HT_FMT_LEN], b[HT_FMT_LEN];
	ht_frame_t *frames = NULL;
	size_t cap = 0;
	ht_report_rule(out, "LEAK CHECKS DURING THE RUN");
	for (size_t i = 0; i < m->nchecks; i++) {
		const ht_check_stat_t *c = &m->checks[i];
		fprintf(out, "%scheck %" PRIu64 " at %s%s\n", i ? "\n" : "", c->check_id,
			ht_fmt_duration(a, c->time),
			c->classified ? "" : " (its classes are missing from the trace)");
		for (unsigned k = 1; k <= HT_LEAK_KINDS; k++) {
			unsigned kk = k % HT_LEAK_KINDS; /* 1..4, then unclassified */
			if (!c->blocks[kk])
				continue;
			fprintf(out, "  %-18s %12s B in %s %s\n",
				kk ? class_title[kk] : "unclassified", ht_fmt_count(a, c->bytes[kk]),
				ht_fmt_count(b, c->blocks[kk]), ht_blocks_word(c->blocks[kk]));
		}
		for (size_t k = 0; k < c->ntop; k++) {
			fprintf(out, "    %12s B  %-10s  ", ht_fmt_count(a, c->top[k].bytes),
				c->top[k].kind ? ht_leak_kind_name(c->top[k].kind) : "unclassified");
			site_leaf(out, m, sym, c->top[k].site, &frames, &cap);
			fputc('\n', out);
		}
	}
	free(frames);
	return ferror(out) ? -EIO : 0;
}

/* ---- JSON ------------------------------------------------------------------------ */

void ht_section_leak_totals(ht_emitter_t *e, const ht_leaks_t *l)
{
	char key[48];
	for (unsigned k = HT_LEAK_DEFINITE; k <= HT_LEAK_REACHABLE; k++) {
		snprintf(key, sizeof(key), "%s_bytes", ht_leak_kind_name(k));
		ht_emit_u64(e, key, l->bytes[k]);
		snprintf(key, sizeof(key), "%s_blocks", ht_leak_kind_name(k));
		ht_emit_u64(e, key, l->blocks[k]);
	}
	ht_emit_nl(e, 12);
	ht_emit_u64(e, "unclassified_bytes", l->bytes[0]);
	ht_emit_u64(e, "unclassified_blocks", l->blocks[0]);
	ht_emit_u64(e, "suppressed_bytes", l->supp_bytes);
	ht_emit_u64(e, "suppressed_blocks", l->supp_blocks);
}

void ht_report_leak_totals_json(FILE *out, const ht_leaks_t *l)
{
	ht_emitter_t e;
	ht_emit_init(&e, out, HT_EMIT_JSON);
	e.depth = 1; /* inside "totals", after a member */
	e.item[1] = true;
	ht_section_leak_totals(&e, l);
}

int ht_report_leaks_json(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym, const ht_leaks_t *l)
{
	ht_frame_t *frames = NULL;
	size_t cap = 0;
	char num[48];
	int err = 0;
	fputc('[', out);
	for (size_t i = 0; i < l->nshown && !err; i++) {
		const ht_leak_group_t *g = &l->g[i];
		const ht_site_t *s = &m->sites[g->site];
		long nf = ht_model_frames(m, sym, s, &frames, &cap);
		if (nf < 0) {
			err = (int)nf;
			break;
		}
		fprintf(out, "%s\n  {\"blocks\": %" PRIu64 ", \"bytes\": %" PRIu64, i ? "," : "",
			g->blocks, g->bytes);
		if (m->sample_rate)
			fprintf(out, ", \"blocks_ci95\": %.0f, \"bytes_ci95\": %.0f",
				ht_ci95(g->var_blocks), ht_ci95(g->var_bytes));
		fputs(", \"kind\": ", out);
		ht_json_str(out, ht_leak_kind_name(g->kind));
		if (g->ex_seq) /* summary mode knows no single block */
			fprintf(out, ", \"block\": \"%s\", \"block_address\": \"0x%" PRIx64 "\"",
				ht_alloc_number(num, g->ex_thread, g->ex_seq), g->ex_addr);
		else
			fputs(", \"block\": null, \"block_address\": null", out);
		fprintf(out, ", \"stack_id\": %" PRIu64 ",\n   \"stack\": ", s->overflow ? (uint64_t)0 : s->stack_id);
		ht_json_frames(out, frames, nf);
		fputc('}', out);
	}
	fputc(']', out);
	free(frames);
	return err;
}

int ht_report_suppressions_json(FILE *out, const ht_leaks_t *l)
{
	fputc('[', out);
	for (size_t i = 0; l->supps && i < l->supps->n; i++) {
		const ht_supp_t *s = &l->supps->s[i];
		fprintf(out, "%s\n  {\"pattern\": ", i ? "," : "");
		ht_json_str(out, s->pattern);
		fputs(", \"origin\": ", out);
		ht_json_str(out, s->origin);
		fprintf(out, ", \"blocks\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"stacks\": %" PRIu64 "}",
			s->blocks, s->bytes, s->groups);
	}
	fputc(']', out);
	return ferror(out) ? -EIO : 0;
}

int ht_report_checks_json(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym)
{
	ht_frame_t *frames = NULL;
	size_t cap = 0;
	int err = 0;
	fputc('[', out);
	for (size_t i = 0; i < m->nchecks && !err; i++) {
		const ht_check_stat_t *c = &m->checks[i];
		fprintf(out, "%s\n  {\"check\": %" PRIu64 ", \"time_seconds\": %.9f, \"classified\": %s",
			i ? "," : "", c->check_id, (double)c->time / 1e9,
			c->classified ? "true" : "false");
		for (unsigned k = 0; k < HT_LEAK_KINDS; k++) {
			const char *name = k ? ht_leak_kind_name(k) : "unclassified";
			fprintf(out, ", \"%s_bytes\": %" PRIu64 ", \"%s_blocks\": %" PRIu64, name,
				c->bytes[k], name, c->blocks[k]);
		}
		fputs(",\n   \"top\": [", out);
		for (size_t k = 0; k < c->ntop; k++) {
			long nf = ht_model_frames(m, sym, &m->sites[c->top[k].site], &frames, &cap);
			if (nf < 0) {
				err = (int)nf;
				break;
			}
			fprintf(out, "%s{\"kind\": ", k ? ", " : "");
			ht_json_str(out, ht_leak_kind_name(c->top[k].kind));
			fprintf(out, ", \"blocks\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"stack\": ",
				c->top[k].blocks, c->top[k].bytes);
			ht_json_frames(out, frames, nf);
			fputc('}', out);
		}
		fputs("]}", out);
	}
	fputc(']', out);
	free(frames);
	return err ? err : ferror(out) ? -EIO : 0;
}

int ht_section_growth(ht_emitter_t *e, const ht_model_t *m, ht_symbolizer_t *sym,
		      const ht_growth_t *g, size_t n, size_t top)
{
	bool json = ht_emit_json(e);
	FILE *out = e->out;
	if (!top)
		top = DEFAULT_TOP;
	char a[HT_FMT_LEN], b[HT_FMT_LEN], c[HT_FMT_LEN], d[HT_FMT_LEN], e2[HT_FMT_LEN];
	size_t ns = 0;
	for (size_t i = 0; i < n; i++)
		ns += g[i].suspect;
	char title[128];
	snprintf(title, sizeof(title), "GROWTH SUSPECTS (%zu of %zu rising sites)", ns, n);
	ht_emit_rule(e, title);
	ht_emit_printf(e, "  live bytes of each site at %d points over %s; trend = least-squares "
			  "slope,\n  fit = R^2, highs = share of points setting a new high; suspects "
			  "fit >= 0.80 with highs >= 0.50\n",
		       HT_GROWTH_POINTS, ht_fmt_duration(a, m->growth_span_ns));
	if (!n)
		ht_emit_printf(e, "  no site's live bytes rise over the run\n");
	ht_emit_obj_begin(e, "growth");
	ht_emit_u64(e, "points", HT_GROWTH_POINTS);
	ht_emit_dbl(e, "span_seconds", 9, (double)m->growth_span_ns / 1e9);
	ht_emit_arr_begin(e, "sites");
	ht_frame_t *frames = NULL;
	size_t cap = 0;
	int err = 0;
	/* the text shows the top ones, the JSON all */
	for (size_t i = 0; i < n && (json || i < top) && !err; i++) {
		const ht_growth_t *r = &g[i];
		const ht_site_t *s = &m->sites[r->site];
		if (!json) {
			fprintf(out, "\n#%-3zu%s %s/s, fit %.2f, highs %.2f; %s live in %s blocks at "
				     "the end, ages median %s, oldest %s\n",
				i + 1, r->suspect ? "SUSPECT" : "rising ",
				ht_fmt_size(a, (uint64_t)r->slope), r->r2, r->new_highs,
				ht_fmt_size(b, r->live_bytes), ht_fmt_count(c, r->live_blocks),
				ht_fmt_duration(d, r->age_median_ns),
				ht_fmt_duration(e2, r->age_oldest_ns));
			err = ht_report_stack_text(out, m, sym, s, false);
			continue;
		}
		long nf = ht_model_frames(m, sym, s, &frames, &cap);
		if (nf < 0) {
			err = (int)nf;
			break;
		}
		ht_emit_nl(e, 2);
		ht_emit_obj_begin(e, NULL);
		ht_emit_bool(e, "suspect", r->suspect);
		ht_emit_dbl(e, "slope_bytes_per_second", 1, r->slope);
		ht_emit_dbl(e, "r2", 4, r->r2);
		ht_emit_dbl(e, "new_highs", 4, r->new_highs);
		ht_emit_u64(e, "live_bytes", r->live_bytes);
		ht_emit_u64(e, "live_blocks", r->live_blocks);
		ht_emit_dbl(e, "age_median_seconds", 9, (double)r->age_median_ns / 1e9);
		ht_emit_dbl(e, "age_oldest_seconds", 9, (double)r->age_oldest_ns / 1e9);
		ht_emit_nl(e, 3);
		ht_emit_arr_begin(e, "series");
		for (size_t k = 0; k < HT_GROWTH_POINTS; k++)
			ht_emit_u64(e, NULL, m->growth[k * m->nsites + r->site]);
		ht_emit_arr_end(e);
		ht_emit_u64(e, "stack_id", s->stack_id);
		ht_emit_nl(e, 3);
		ht_emit_frames(e, "stack", frames, nf);
		ht_emit_obj_end(e);
	}
	ht_emit_arr_end(e);
	ht_emit_obj_end(e);
	free(frames);
	return err ? err : ferror(out) ? -EIO : 0;
}
