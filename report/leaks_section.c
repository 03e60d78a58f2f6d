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

#include "analysis/frames.h"
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

/* The text's headline of a class: its bytes, blocks and stacks. */
static void class_headline(FILE *out, const ht_model_t *m, const ht_leaks_t *l, unsigned kind,
			   size_t stacks)
{
	char a[HT_FMT_LEN], b[HT_FMT_LEN], c[HT_FMT_LEN];
	const char *ap = approx(m);
	fprintf(out, "\n%s: %s%s (%s B) in %s%s block%s, %zu stack%s\n", class_title[kind], ap,
		ht_fmt_size(a, l->bytes[kind]), ht_fmt_count(b, l->bytes[kind]), ap,
		ht_fmt_count(c, l->blocks[kind]), l->blocks[kind] == 1 ? "" : "s", stacks,
		stacks == 1 ? "" : "s");
}

/* One group in the text: #N, its figures and its stack. */
static int text_group(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym,
		      const ht_leak_group_t *g, size_t i, uint32_t *labels, uint32_t *next)
{
	char a[HT_FMT_LEN], b[HT_FMT_LEN], c[HT_FMT_LEN], d[HT_FMT_LEN], num[48];
	char cb[2 * HT_FMT_LEN], cn[2 * HT_FMT_LEN];
	const char *ap = approx(m);
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
	return ht_report_stack_text(out, m, sym, s, repeat);
}

/* One group in the JSON: its figures, an example block, its stack. */
static int json_group(ht_emitter_t *e, const ht_model_t *m, ht_symbolizer_t *sym,
		      const ht_leak_group_t *g, ht_frame_t **frames, size_t *cap)
{
	char num[48];
	const ht_site_t *s = &m->sites[g->site];
	long nf = ht_model_frames(m, sym, s, frames, cap);
	if (nf < 0)
		return (int)nf;
	ht_emit_nl(e, 2);
	ht_emit_obj_begin(e, NULL);
	ht_emit_u64(e, "blocks", g->blocks);
	ht_emit_u64(e, "bytes", g->bytes);
	if (m->sample_rate) {
		ht_emit_dbl(e, "blocks_ci95", 0, ht_ci95(g->var_blocks));
		ht_emit_dbl(e, "bytes_ci95", 0, ht_ci95(g->var_bytes));
	}
	ht_emit_str(e, "kind", ht_leak_kind_name(g->kind));
	if (g->ex_seq) { /* summary mode knows no single block */
		ht_emit_str(e, "block", ht_alloc_number(num, g->ex_thread, g->ex_seq));
		ht_emit_hex(e, "block_address", g->ex_addr);
	} else {
		ht_emit_null(e, "block");
		ht_emit_null(e, "block_address");
	}
	ht_emit_u64(e, "stack_id", s->overflow ? (uint64_t)0 : s->stack_id);
	ht_emit_nl(e, 3);
	ht_emit_frames(e, "stack", *frames, nf);
	ht_emit_obj_end(e);
	return 0;
}

int ht_section_leaks(ht_emitter_t *e, const ht_model_t *m, ht_symbolizer_t *sym,
		     const ht_leaks_t *l, size_t top, bool show_reachable, uint32_t *labels,
		     uint32_t *next)
{
	const ht_trace_t *t = m->trace;
	bool json = ht_emit_json(e);
	FILE *out = e->out;
	char a[HT_FMT_LEN], b[HT_FMT_LEN], c[HT_FMT_LEN];
	ht_frame_t *frames = NULL;
	size_t cap = 0;
	if (!top)
		top = DEFAULT_TOP;
	uint64_t lost = 0;
	for (unsigned k = 0; k < HT_LEAK_KINDS; k++)
		if (k != HT_LEAK_REACHABLE)
			lost += l->blocks[k];
	ht_emit_rule(e, l->classified ? "LEAKS BY CLASS, LARGEST FIRST" : "LEAKS, LARGEST FIRST");
	if (!l->nshown)
		ht_emit_printf(e, "  %s\n", t->ending == HT_ENDING_EXEC ? "nothing was live at exec"
					: l->supp_blocks ? "no leaks but the suppressed ones"
							 : "no leaks");
	else if (!lost)
		ht_emit_printf(e, "  no leaks: every block live at the end is still reachable\n");
	if (l->classified && l->nshown && t->ending != HT_ENDING_EXEC &&
	    l->bytes[HT_LEAK_DEFINITE] + l->bytes[HT_LEAK_INDIRECT]) {
		/* the two words: all that was live at the end, and what of it
		 * nothing pointed to any more */
		uint64_t lb = l->bytes[HT_LEAK_DEFINITE] + l->bytes[HT_LEAK_INDIRECT];
		uint64_t lk = l->blocks[HT_LEAK_DEFINITE] + l->blocks[HT_LEAK_INDIRECT];
		uint64_t ub = l->supp_bytes, uk = l->supp_blocks;
		for (unsigned k = 0; k < HT_LEAK_KINDS; k++)
			ub += l->bytes[k], uk += l->blocks[k];
		char d[HT_FMT_LEN];
		ht_emit_printf(e, "  lost (definitely and indirectly): %s%s in %s%s %s, of %s%s in %s%s %s "
				  "in use at exit\n",
			       approx(m), ht_fmt_size(a, lb), approx(m), ht_fmt_count(b, lk),
			       ht_blocks_word(lk), approx(m), ht_fmt_size(c, ub), approx(m),
			       ht_fmt_count(d, uk), ht_blocks_word(uk));
	}
	/* the JSON lists every group; the text the top ones of each class,
	 * the still-reachable ones as one line unless asked */
	ht_emit_arr_begin(e, "leaks");
	int err = 0;
	for (size_t i = 0; i < l->nshown && !err;) {
		size_t j = i;
		while (j < l->nshown && l->g[j].kind == l->g[i].kind)
			j++;
		bool listed = l->g[i].kind != HT_LEAK_REACHABLE || show_reachable;
		if (!json && !listed)
			fprintf(out, "\nstill reachable: %s%s (%s B) in %s%s block%s, %zu stack%s"
				" (--show-reachable lists them)\n", approx(m),
				ht_fmt_size(a, l->bytes[HT_LEAK_REACHABLE]),
				ht_fmt_count(b, l->bytes[HT_LEAK_REACHABLE]), approx(m),
				ht_fmt_count(c, l->blocks[HT_LEAK_REACHABLE]),
				l->blocks[HT_LEAK_REACHABLE] == 1 ? "" : "s", j - i, j - i == 1 ? "" : "s");
		else if (!json)
			class_headline(out, m, l, l->g[i].kind, j - i);
		size_t shown = j - i < top ? j - i : top;
		for (size_t k = i; k < j && !err; k++) {
			if (json)
				err = json_group(e, m, sym, &l->g[k], &frames, &cap);
			else if (listed && k - i < shown)
				err = text_group(out, m, sym, &l->g[k], k - i, labels, next);
		}
		if (!json && listed && !err && j - i > shown) {
			uint64_t bytes = 0, blocks = 0;
			for (size_t k = i + shown; k < j; k++) {
				bytes += l->g[k].bytes;
				blocks += l->g[k].blocks;
			}
			fprintf(out, "\n... and %zu more stacks: %s%s in %s%s %s (--top 0 shows all)\n",
				j - i - shown, approx(m), ht_fmt_size(a, bytes), approx(m),
				ht_fmt_count(b, blocks), ht_blocks_word(blocks));
		}
		i = j;
	}
	ht_emit_arr_end(e);
	free(frames);
	return err;
}

int ht_report_leaks_text(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym, const ht_leaks_t *l,
			 size_t top, bool show_reachable)
{
	uint32_t *labels = calloc(m->nsites ? m->nsites : 1, sizeof(*labels));
	if (!labels)
		return -ENOMEM;
	uint32_t next = 0;
	ht_emitter_t e;
	ht_emit_init(&e, out, HT_EMIT_TEXT);
	int err = ht_section_leaks(&e, m, sym, l, top, show_reachable, labels, &next);
	if (!err)
		err = ht_section_suppressions(&e, m, l);
	free(labels);
	return err;
}

int ht_section_suppressions(ht_emitter_t *e, const ht_model_t *m, const ht_leaks_t *l)
{
	char a[HT_FMT_LEN], b[HT_FMT_LEN], c[HT_FMT_LEN];
	bool json = ht_emit_json(e);
	if (json ? !(l->supps && l->supps->n) : !l->supp_blocks)
		return 0;
	size_t np = 0;
	for (size_t i = 0; l->supps && i < l->supps->n; i++)
		np += l->supps->s[i].blocks > 0;
	ht_emit_printf(e, "\nsuppressed: %s%s (%s B) in %s%s %s, by %zu pattern%s:\n", approx(m),
		       ht_fmt_size(a, l->supp_bytes), ht_fmt_count(b, l->supp_bytes), approx(m),
		       ht_fmt_count(c, l->supp_blocks), ht_blocks_word(l->supp_blocks), np,
		       np == 1 ? "" : "s");
	/* the text names the patterns that took blocks, the JSON every one */
	ht_emit_arr_begin(e, "suppressions");
	for (size_t i = 0; l->supps && i < l->supps->n; i++) {
		const ht_supp_t *s = &l->supps->s[i];
		if (!json && !s->blocks)
			continue;
		ht_emit_printf(e, "  %10s B in %6s %-6s  leak:", ht_fmt_count(a, s->bytes),
			       ht_fmt_count(b, s->blocks), ht_blocks_word(s->blocks));
		ht_emit_put(e, s->pattern);
		ht_emit_printf(e, "  (");
		ht_emit_put(e, s->origin);
		ht_emit_printf(e, ")\n");
		ht_emit_nl(e, 2);
		ht_emit_obj_begin(e, NULL);
		ht_emit_str(e, "pattern", s->pattern);
		ht_emit_str(e, "origin", s->origin);
		ht_emit_u64(e, "blocks", s->blocks);
		ht_emit_u64(e, "bytes", s->bytes);
		ht_emit_u64(e, "stacks", s->groups);
		ht_emit_obj_end(e);
	}
	ht_emit_arr_end(e);
	return ferror(e->out) ? -EIO : 0;
}

/* The leaf frame of a site, as `function  file:line`. */
static void site_leaf(FILE *out, const ht_frame_t *f, long n)
{
	if (n <= 0) {
		fputs("(stack unknown)", out);
		return;
	}
	char lab[HT_FRAME_LABEL_LEN];
	ht_text_put(out, f->function ? f->function : ht_frame_label(f, lab, sizeof lab));
	if (f->file && f->line > 0) {
		fputs("  ", out);
		ht_text_put(out, f->file);
		fprintf(out, ":%d", f->line);
	} else if (f->module) {
		fputs("  in ", out);
		ht_text_put(out, f->module);
	}
}

int ht_section_checks(ht_emitter_t *e, const ht_model_t *m, ht_symbolizer_t *sym)
{
	if (!m->nchecks)
		return 0;
	bool json = ht_emit_json(e);
	FILE *out = e->out;
	char a[HT_FMT_LEN], b[HT_FMT_LEN], key[48];
	ht_frame_t *frames = NULL;
	size_t cap = 0;
	int err = 0;
	ht_emit_rule(e, "LEAK CHECKS DURING THE RUN");
	ht_emit_arr_begin(e, "leak_checks");
	for (size_t i = 0; i < m->nchecks && !err; i++) {
		const ht_check_stat_t *c = &m->checks[i];
		ht_emit_printf(e, "%scheck %" PRIu64 " at %s%s\n", i ? "\n" : "", c->check_id,
			       ht_fmt_duration(a, c->time),
			       c->classified ? "" : " (its classes are missing from the trace)");
		ht_emit_nl(e, 2);
		ht_emit_obj_begin(e, NULL);
		ht_emit_u64(e, "check", c->check_id);
		ht_emit_dbl(e, "time_seconds", 9, (double)c->time / 1e9);
		ht_emit_bool(e, "classified", c->classified);
		/* the JSON has every class, unclassified first; the text the
		 * classes that hold blocks, unclassified last */
		for (unsigned k = 0; json && k < HT_LEAK_KINDS; k++) {
			const char *name = k ? ht_leak_kind_name(k) : "unclassified";
			snprintf(key, sizeof(key), "%s_bytes", name);
			ht_emit_u64(e, key, c->bytes[k]);
			snprintf(key, sizeof(key), "%s_blocks", name);
			ht_emit_u64(e, key, c->blocks[k]);
		}
		for (unsigned k = 1; !json && k <= HT_LEAK_KINDS; k++) {
			unsigned kk = k % HT_LEAK_KINDS; /* 1..4, then unclassified */
			if (!c->blocks[kk])
				continue;
			fprintf(out, "  %-18s %12s B in %s %s\n",
				kk ? class_title[kk] : "unclassified", ht_fmt_count(a, c->bytes[kk]),
				ht_fmt_count(b, c->blocks[kk]), ht_blocks_word(c->blocks[kk]));
		}
		ht_emit_nl(e, 3);
		ht_emit_arr_begin(e, "top");
		for (size_t k = 0; k < c->ntop; k++) {
			long nf = ht_model_frames(m, sym, &m->sites[c->top[k].site], &frames, &cap);
			if (!json) {
				fprintf(out, "    %12s B  %-10s  ", ht_fmt_count(a, c->top[k].bytes),
					c->top[k].kind ? ht_leak_kind_name(c->top[k].kind)
						       : "unclassified");
				site_leaf(out, frames, nf);
				fputc('\n', out);
				continue;
			}
			if (nf < 0) {
				err = (int)nf;
				break;
			}
			ht_emit_obj_begin(e, NULL);
			ht_emit_str(e, "kind", ht_leak_kind_name(c->top[k].kind));
			ht_emit_u64(e, "blocks", c->top[k].blocks);
			ht_emit_u64(e, "bytes", c->top[k].bytes);
			ht_emit_frames(e, "stack", frames, nf);
			ht_emit_obj_end(e);
		}
		ht_emit_arr_end(e);
		ht_emit_obj_end(e);
	}
	ht_emit_arr_end(e);
	free(frames);
	return err ? err : ferror(out) ? -EIO : 0;
}

int ht_report_checks_json(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym)
{
	ht_emitter_t e;
	ht_emit_init(&e, out, HT_EMIT_JSON);
	e.depth = 1; /* the value of the caller's "leak_checks", key included here */
	e.item[1] = false;
	return ht_section_checks(&e, m, sym);
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
	char title[160];
	size_t shown = n < top ? n : top;
	/* the title counts what the list shows: rising sites, suspects among them */
	if (shown < n)
		snprintf(title, sizeof(title), "RISING SITES (top %zu of %zu; %zu suspect%s)", shown, n,
			 ns, ns == 1 ? "" : "s");
	else
		snprintf(title, sizeof(title), "RISING SITES (%zu; %zu suspect%s)", n, ns,
			 ns == 1 ? "" : "s");
	ht_emit_rule(e, title);
	ht_emit_printf(e, "  live bytes of each site at %d points over %s; trend = least-squares "
			  "slope,\n  fit = R^2, highs = share of points setting a new high; suspects "
			  "fit >= 0.80 with highs >= 0.50\n",
		       HT_GROWTH_POINTS, ht_fmt_duration(a, m->growth_span_ns));
	if (!n)
		ht_emit_printf(e, "  no site's live bytes rise over the run\n");
	else if (!ns)
		ht_emit_printf(e, "  no suspect: these sites rise, but none steadily enough\n");
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
