/* document.c - `heaptrail report`: the whole report, written once against
 * the emitter (report/emitter.h) for both the text and the JSON back end:
 * the header, the summary, the lists of top sites, the JSON totals, and
 * the sections (the *_section.c files, pools.c, timeline.c) in order.
 *
 * The text is laid out for a ~100-column terminal. Sizes are shown
 * human-readable with the exact byte count beside them; stacks are printed
 * by report/stack_text.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/leaks.h"
#include "report/emitter.h"
#include "report/badfree_section.h"
#include "report/mapped_section.h"
#include "report/functions_section.h"
#include "report/marks_section.h"
#include "report/report.h"
#include "report/stack_text.h"
#include "report/timeline.h"
#include "trace_format.h"
#include "analysis/util.h"

#define DEFAULT_TOP 10

/* ---- warnings (shared with html.c and diff_report.c) ------------------------- */

size_t ht_report_warnings(const ht_model_t *m, char buf[][HT_WARN_LEN], size_t max)
{
	const ht_trace_t *t = m->trace;
	size_t n = 0;
#define WARN(...)                                                   \
	do {                                                        \
		if (n < max && snprintf(buf[n], HT_WARN_LEN, __VA_ARGS__) >= 0) \
			n++;                                        \
	} while (0)
	size_t fp_bad, fp_total;
	const char *fp_where = ht_model_fp_broken(m, &fp_bad, &fp_total);
	if (fp_where)
		WARN("--unwind fp, but %zu of %zu stacks end before the thread's start (the first in "
		     "%s): code without frame pointers cut them short or led them astray; record "
		     "again with the default --unwind libunwind (or build with "
		     "-fno-omit-frame-pointer)",
		     fp_bad, fp_total, HT_TEXT(fp_where));
	if (t->checksum_bad)
		WARN("the zstd frame at file offset %" PRIu64 " fails its checksum: a byte changed "
		     "after the trace was written; figures from decompressed offset %" PRIu64
		     " on may be wrong",
		     t->checksum_file_offset, t->checksum_body_offset);
	if (t->error)
		WARN("%s; the report covers the records complete before it (a record cut short, "
		     "about the last second of events, is lost)",
		     t->message);
	if (t->ending == HT_ENDING_CUT_SHORT)
		WARN("the run was cut short: the trace has no END record (the program was killed, "
		     "by SIGKILL or the OOM killer, left by a raw exit_group system call (Go "
		     "programs), or the trace was cut short); its last event is at %.3f s, and "
		     "events of about the last half second before the end may be missing; the "
		     "report covers what was recorded",
		     (double)t->last_time / 1e9);
	if (t->agent_flags & HT_AGENT_MALLOC_ELSEWHERE)
		WARN("the program's malloc is not the agent's: an object found before "
		     "libheaptrail.so in the lookup order defines malloc (a library preloaded "
		     "ahead of the agent, such as LD_PRELOAD=libjemalloc.so.2:libheaptrail.so, or "
		     "an executable with its own allocator), and the program's allocations went "
		     "there unrecorded; list libheaptrail.so first in LD_PRELOAD");
	if (t->agent_flags & HT_AGENT_OUT_OF_MEMORY)
		WARN("the agent ran out of memory: some events were lost");
	if (t->agent_flags & HT_AGENT_LIVE_TABLE_FULL)
		WARN(t->have_summary
			     ? "the agent ran out of memory for its table of live blocks: the sites' "
			       "figures are partial"
			     : "the agent ran out of memory for its table of live blocks: leak classes "
			       "are partial (the recorded events are complete)");
	if (t->have_summary && (t->agent_flags & HT_AGENT_SUMMARY_PEAK_ORDER))
		WARN("summary mode with several threads: the peak heap (and each site's bytes at "
		     "it) follows the order the agent received the threads' events, not time "
		     "order, and may be higher than the real peak; a full trace gives the exact "
		     "one");
	if (t->agent_flags & HT_AGENT_HANDLER_EVENTS_LOST)
		WARN("a signal handler allocated or freed while the agent was busy more times "
		     "than it could keep aside: some of those events were lost");
	if (t->agent_flags & HT_AGENT_STACK_TABLE_FULL)
		WARN("the agent's stack table filled up: some allocations have no stack");
	if (t->agent_flags & HT_AGENT_NAME_TABLE_FULL)
		WARN("the agent's name table filled up (32,766 distinct tags, phases, pools, handle "
		     "kinds and snapshots): tags, phases and handles of later names were not "
		     "recorded, and later pools and snapshots are named \"(names full)\"");
	if (t->agent_flags & HT_AGENT_SUMMARY_MAPS_FULL)
		WARN("summary mode kept the program's first 65,536 map events (mmap, munmap, "
		     "mremap, madvise, brk) only: the MAPPED MEMORY figures are partial; a full "
		     "trace has them all");
	if (t->agent_flags & HT_AGENT_FREES_FORGOTTEN)
		WARN("the agent forgot its oldest frees to bound its memory, and some blocks were "
		     "allocated before one of them but reached it later (from a thread that had not "
		     "shipped its events): such a block may be counted live at the end, in a "
		     "summary's figures and the leak classes, though freed");
	if (t->agent_flags & HT_AGENT_SIZE_REFUSED)
		WARN("the program reported blocks larger than PTRDIFF_MAX with heaptrail_alloc, "
		     "heaptrail_realloc or heaptrail_pool_alloc (a size of -1?): no block can be "
		     "that large, and they were not recorded (a later heaptrail_free of one counts "
		     "as an ignored free)");
	if (t->skipped_records)
		WARN("%" PRIu64 " records of a newer trace format (%u.%u) were skipped",
		     t->skipped_records, t->major, t->minor);
#undef WARN
	return n;
}

/* ---- estimates of a sampled trace ---------------------------------------------------
 * A sampled trace's figures are estimates: shown as "~12.3 MiB", followed
 * by the half width of their 95% interval, "(+-0.4 MiB)". An exact trace
 * prints neither. */

/* "~" + ht_fmt_size/ht_fmt_count of v when m is sampled (buf: 2 * HT_FMT_LEN). */
static char *est_size(char *buf, const ht_model_t *m, uint64_t v)
{
	char tmp[HT_FMT_LEN];
	snprintf(buf, 2 * HT_FMT_LEN, "%s%s", m->sample_rate ? "~" : "", ht_fmt_size(tmp, v));
	return buf;
}

static char *est_count(char *buf, const ht_model_t *m, uint64_t v)
{
	char tmp[HT_FMT_LEN];
	snprintf(buf, 2 * HT_FMT_LEN, "%s%s", m->sample_rate ? "~" : "", ht_fmt_count(tmp, v));
	return buf;
}

/* x rounded to a whole number for printing, 0 below 0 and UINT64_MAX above:
 * a damaged or hand-made trace can hold any counts and times (10^18
 * allocations within a millisecond), and converting a double beyond
 * uint64_t's range is undefined behaviour (x86 gives 0: "0 per second"). */
static uint64_t round_sat(double x)
{
	if (!(x > 0))
		return 0;
	return x + 0.5 >= 0x1p64 ? UINT64_MAX : (uint64_t)(x + 0.5);
}

/* " (+-X)" for an estimate v of variance var, X a size when bytes; "" when
 * m is exact (buf: 2 * HT_FMT_LEN). An estimate of 0 has no sample to
 * bound it: the samples' variance is 0, not the uncertainty. A run of B
 * bytes goes unsampled with probability exp(-B/R), under 5% past
 * B = R ln 20, which bounds the bytes. */
static char *est_ci(char *buf, const ht_model_t *m, uint64_t v, double var, bool bytes)
{
	char tmp[HT_FMT_LEN];
	buf[0] = 0;
	if (m->sample_rate && v == 0 && !(var > 0)) {
		if (bytes)
			snprintf(buf, 2 * HT_FMT_LEN, " (no sample: under %s at 95%%)",
				 ht_fmt_size(tmp, round_sat(m->sample_rate * log(20.0))));
		else
			snprintf(buf, 2 * HT_FMT_LEN, " (no sample)");
	} else if (m->sample_rate) {
		uint64_t h = round_sat(ht_ci95(var));
		snprintf(buf, 2 * HT_FMT_LEN, " (+-%s)", bytes ? ht_fmt_size(tmp, h) : ht_fmt_count(tmp, h));
	}
	return buf;
}

/* ---- sections ---------------------------------------------------------------------- */

static void print_summary(FILE *out, const ht_model_t *m)
{
	const ht_totals_t *tt = &m->totals;
	const ht_est_t *e = &tt->est;
	char a[2 * HT_FMT_LEN], b[HT_FMT_LEN], cbuf[2 * HT_FMT_LEN], d[2 * HT_FMT_LEN];
	ht_report_rule(out, "SUMMARY");
	/* sampled: the totals the agent counted (END) are exact */
	bool exact = !m->sample_rate || m->trace->have_end_counts;
	fprintf(out, "  %-18s %14s", "allocations",
		exact ? ht_fmt_count(a, tt->allocations) : est_count(a, m, tt->allocations));
	if (tt->duration_ns)
		fprintf(out, "   %s per second", ht_fmt_count(b, round_sat(tt->allocs_per_second)));
	fputs(exact ? "" : est_ci(d, m, tt->allocations, e->var_allocations, false), out);
	fputc('\n', out);
	fprintf(out, "  %-18s %14s", "frees",
		exact ? ht_fmt_count(a, tt->frees) : est_count(a, m, tt->frees));
	/* frees that matched no block of the trace, which the count above
	 * leaves out: a fork child frees what its parent allocated, a program
	 * switched on late what it allocated while off. (A sampled trace's
	 * count is the agent's, of every call.) */
	if (tt->ignored_frees && !m->sample_rate)
		fprintf(out, "   and %s more, of blocks %s", ht_fmt_count(b, tt->ignored_frees),
			m->trace->proc_flags & HT_PROC_FORKED	 ? "allocated before the fork (by the parent)"
			: m->trace->proc_flags & HT_PROC_ATTACHED ? "allocated before the attach"
								  : "not seen allocated");
	fputc('\n', out);
	fprintf(out, "  %-18s %14s   %s B%s\n", "bytes allocated",
		exact ? ht_fmt_size(a, tt->bytes_allocated) : est_size(a, m, tt->bytes_allocated),
		ht_fmt_count(b, tt->bytes_allocated),
		exact ? "" : est_ci(d, m, tt->bytes_allocated, e->var_bytes_allocated, true));
	fprintf(out, "  %-18s %14s   %s B at %s%s\n", "peak heap", est_size(a, m, tt->peak_heap_bytes),
		ht_fmt_count(b, tt->peak_heap_bytes), ht_fmt_duration(cbuf, tt->peak_time_ns),
		est_ci(d, m, tt->peak_heap_bytes, e->var_peak_bytes, true));
	if (tt->peak_rss_bytes && tt->peak_rss_sample_bytes == tt->peak_rss_bytes)
		fprintf(out, "  %-18s %14s   %s B at %s\n", "peak RSS", ht_fmt_size(a, tt->peak_rss_bytes),
			ht_fmt_count(b, tt->peak_rss_bytes), ht_fmt_duration(cbuf, tt->peak_rss_time_ns));
	else if (tt->peak_rss_bytes && tt->peak_rss_sample_bytes)
		/* the kernel's high-water mark came between samples */
		fprintf(out, "  %-18s %14s   %s B (highest sample %s at %s)\n", "peak RSS",
			ht_fmt_size(a, tt->peak_rss_bytes), ht_fmt_count(b, tt->peak_rss_bytes),
			ht_fmt_size(d, tt->peak_rss_sample_bytes),
			ht_fmt_duration(cbuf, tt->peak_rss_time_ns));
	else if (tt->peak_rss_bytes)
		fprintf(out, "  %-18s %14s   %s B\n", "peak RSS", ht_fmt_size(a, tt->peak_rss_bytes),
			ht_fmt_count(b, tt->peak_rss_bytes));
	else
		fprintf(out, "  %-18s %14s\n", "peak RSS", "unknown");
	/* live at the end, as memcheck's "in use at exit": the leak section
	 * says what of it was lost */
	fprintf(out, "  %-18s %14s   %s B%s in %s %s%s\n",
		m->trace->ending == HT_ENDING_EXEC     ? "in use at exec"
		: m->trace->ending == HT_ENDING_DETACH ? "in use at detach"
						       : "in use at exit",
		est_size(a, m, tt->leaked_bytes), ht_fmt_count(b, tt->leaked_bytes),
		est_ci(d, m, tt->leaked_bytes, e->var_leaked_bytes, true), est_count(cbuf, m, tt->leaked_blocks),
		ht_blocks_word(tt->leaked_blocks),
		m->sample_rate ? est_ci(d + HT_FMT_LEN, m, tt->leaked_blocks, e->var_leaked_blocks, false) : "");
	if (m->sample_rate)
		fprintf(out, "  %-18s %14s   not known from samples", "temporary allocs", "?");
	else if (m->trace->have_summary)
		fprintf(out, "  %-18s %14s   not known in summary mode", "temporary allocs", "?");
	else
		fprintf(out, "  %-18s %14s", "temporary allocs", ht_fmt_count(a, tt->temporary));
	if (tt->allocations && !m->sample_rate && !m->trace->have_summary)
		fprintf(out, "   %.1f%% of allocations",
			100.0 * (double)tt->temporary / (double)tt->allocations);
	fputc('\n', out);
	fprintf(out, "  %-18s %14s\n", "run time", ht_fmt_duration(a, tt->duration_ns));
}

/* The lists of sites: each site's stack printed in full the first time,
 * its top frames after that, under its [site N] label. */
typedef struct textctx {
	ht_stack_text_t st;
	uint32_t *label; /* per site: its [site N] label once printed, else 0 */
	uint32_t next_label;
} textctx_t;

typedef void (*headline_fn)(FILE *out, const ht_site_t *s, const ht_model_t *m);

static void head_bytes(FILE *out, const ht_site_t *s, const ht_model_t *m)
{
	char a[2 * HT_FMT_LEN], b[HT_FMT_LEN], c[2 * HT_FMT_LEN], d[2 * HT_FMT_LEN];
	fprintf(out, "%10s  %s B%s in %s allocation%s%s", est_size(a, m, s->bytes_allocated),
		ht_fmt_count(b, s->bytes_allocated), est_ci(d, m, s->bytes_allocated, s->est.var_bytes_allocated, true),
		est_count(c, m, s->allocations), s->allocations == 1 ? "" : "s",
		est_ci(d + HT_FMT_LEN, m, s->allocations, s->est.var_allocations, false));
	if (s->peak_bytes)
		fprintf(out, ", %s at peak", est_size(a, m, s->peak_bytes));
	if (s->leaked_bytes)
		fprintf(out, ", %s in use at exit", est_size(a, m, s->leaked_bytes));
}

static void head_count(FILE *out, const ht_site_t *s, const ht_model_t *m)
{
	const ht_totals_t *tt = &m->totals;
	char a[2 * HT_FMT_LEN], b[2 * HT_FMT_LEN], d[2 * HT_FMT_LEN];
	fprintf(out, "%10s  allocation%s%s", est_count(a, m, s->allocations),
		s->allocations == 1 ? "" : "s", est_ci(d, m, s->allocations, s->est.var_allocations, false));
	if (tt->allocations)
		fprintf(out, " (%.1f%%)", 100.0 * (double)s->allocations / (double)tt->allocations);
	fprintf(out, ", %s total", est_size(b, m, s->bytes_allocated));
	if (s->temporary)
		fprintf(out, ", %s temporary", est_count(a, m, s->temporary));
}

static void head_peak(FILE *out, const ht_site_t *s, const ht_model_t *m)
{
	const ht_totals_t *tt = &m->totals;
	char a[2 * HT_FMT_LEN], b[HT_FMT_LEN], d[2 * HT_FMT_LEN];
	fprintf(out, "%10s  %s B%s live at the peak", est_size(a, m, s->peak_bytes),
		ht_fmt_count(b, s->peak_bytes), est_ci(d, m, s->peak_bytes, s->est.var_peak_bytes, true));
	if (tt->peak_heap_bytes)
		fprintf(out, " (%.1f%%)", 100.0 * (double)s->peak_bytes / (double)tt->peak_heap_bytes);
}

static void head_temp(FILE *out, const ht_site_t *s, const ht_model_t *m)
{
	char a[2 * HT_FMT_LEN], b[2 * HT_FMT_LEN];
	fprintf(out, "%10s  temporary of %s allocations (%.0f%%)", est_count(a, m, s->temporary),
		est_count(b, m, s->allocations),
		s->allocations ? 100.0 * (double)s->temporary / (double)s->allocations : 0.0);
}

static void print_list(textctx_t *c, const char *title, ht_site_order_t order, headline_fn head,
		       size_t top, size_t *idx, const char *none)
{
	FILE *out = c->st.out;
	const ht_model_t *m = c->st.m;
	size_t n = ht_model_sort(m, order, idx);
	size_t shown = n < top ? n : top;
	ht_report_list_rule(out, title, shown, n);
	if (order == HT_BY_TEMPORARY && n)
		fputs("  (a temporary allocation is a block freed before its thread allocated "
		      "again)\n",
		      out);
	if (!n) {
		fprintf(out, "  %s\n", none);
		return;
	}
	for (size_t i = 0; i < shown && !c->st.err; i++) {
		const ht_site_t *s = &m->sites[idx[i]];
		bool repeat = c->label[idx[i]] != 0;
		if (!repeat)
			c->label[idx[i]] = ++c->next_label;
		fprintf(out, "%s#%-3zu", i ? "\n" : "", i + 1);
		head(out, s, m);
		fprintf(out, "  [site %u]\n", c->label[idx[i]]);
		ht_stack_text_print(&c->st, s, repeat);
	}
	if (n > shown && order == HT_BY_LEAKED) {
		uint64_t bytes = 0, blocks = 0;
		for (size_t i = shown; i < n; i++) {
			bytes += m->sites[idx[i]].leaked_bytes;
			blocks += m->sites[idx[i]].leaked_blocks;
		}
		char a[HT_FMT_LEN], b[HT_FMT_LEN];
		fprintf(out, "\n... and %zu more leak sites: %s in %s %s (--top 0 shows all)\n",
			n - shown, ht_fmt_size(a, bytes), ht_fmt_count(b, blocks), ht_blocks_word(blocks));
	}
}

int ht_report_top_sites_text(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym, size_t top)
{
	textctx_t c = { { out, m, sym, NULL, 0, 0 }, NULL, 0 };
	size_t *idx = malloc((m->nsites ? m->nsites : 1) * sizeof(*idx));
	c.label = calloc(m->nsites ? m->nsites : 1, sizeof(*c.label));
	if (idx && c.label)
		print_list(&c, "TOP SITES BY BYTES ALLOCATED", HT_BY_BYTES, head_bytes,
			   top ? top : DEFAULT_TOP, idx, "no allocations");
	else
		c.st.err = -ENOMEM;
	free(idx);
	free(c.label);
	free(c.st.frames);
	if (c.st.err)
		return c.st.err;
	return ferror(out) ? -EIO : 0;
}

/* ---- the report -------------------------------------------------------------------- */

/* The text header: trace, program, process, how it ended, sampling, warnings. */
static void text_header(FILE *out, const ht_model_t *m, const ht_report_opts_t *o)
{
	const ht_trace_t *t = m->trace;
	fprintf(out, "heaptrail report%s", o && o->trace_path ? ": " : "");
	ht_text_put(out, o ? o->trace_path : NULL);
	fputc('\n', out);
	fputs("  program     ", out);
	ht_report_command_text(out, t);
	fprintf(out, "\n  process     pid %" PRIu64, t->pid);
	if (t->proc_flags & HT_PROC_FORKED)
		fprintf(out, ", fork child of pid %" PRIu64, t->ppid);
	if (t->proc_flags & HT_PROC_EXECED)
		fputs(", exec'd by a traced process", out);
	size_t nthreads = 0;
	for (size_t i = 0; i < t->nthreads; i++)
		nthreads += t->threads[i].nevents > 0;
	if (nthreads > 1)
		fprintf(out, ", %zu threads", nthreads);
	fputs(", ", out);
	ht_report_ending_text(out, t);
	fputc('\n', out);
	if (m->sample_rate) {
		char r[HT_FMT_LEN];
		fprintf(out, "  sampling    one sample per %s allocated on average (Poisson): ~ marks "
			     "estimates, (+-x) their 95%% interval\n",
			ht_fmt_size(r, t->sample_rate));
	}
	char w[8][HT_WARN_LEN];
	size_t nw = ht_report_warnings(m, w, 8);
	if (nw)
		fputc('\n', out);
	for (size_t i = 0; i < nw; i++) {
		fputs("WARNING: ", out);
		ht_text_put(out, w[i]);
		fputc('\n', out);
	}
}

/* JSON "totals": the run's figures, a sampled trace's with their *_ci95
 * companions (the half width of their 95% interval). */
static void json_totals(ht_emitter_t *e, const ht_model_t *m, const ht_leaks_t *lk)
{
	const ht_trace_t *t = m->trace;
	const ht_totals_t *tt = &m->totals;
	bool sampled = m->sample_rate != 0;
	bool no_events = t->have_summary; /* what only events tell is unknown */
	ht_emit_obj_begin(e, "totals");
	ht_emit_u64(e, "allocations", tt->allocations);
	ht_emit_u64(e, "frees", tt->frees);
	ht_emit_u64(e, "bytes_allocated", tt->bytes_allocated);
	ht_emit_nl(e, 12);
	ht_emit_u64(e, "peak_heap_bytes", tt->peak_heap_bytes);
	ht_emit_dbl(e, "peak_time_seconds", 9, (double)tt->peak_time_ns / 1e9);
	ht_emit_u64_or_null(e, "peak_rss_bytes", tt->peak_rss_bytes != 0, tt->peak_rss_bytes);
	ht_emit_nl(e, 12);
	ht_emit_u64_or_null(e, "peak_rss_sample_bytes", tt->peak_rss_sample_bytes != 0,
			    tt->peak_rss_sample_bytes);
	if (tt->peak_rss_sample_bytes)
		ht_emit_dbl(e, "peak_rss_time_seconds", 9, (double)tt->peak_rss_time_ns / 1e9);
	else
		ht_emit_null(e, "peak_rss_time_seconds");
	ht_emit_nl(e, 12);
	ht_emit_u64(e, "leaked_blocks", tt->leaked_blocks);
	ht_emit_u64(e, "leaked_bytes", tt->leaked_bytes);
	ht_emit_u64_or_null(e, "temporary_allocations", !sampled && !no_events, tt->temporary);
	ht_emit_nl(e, 12);
	ht_emit_dbl(e, "duration_seconds", 9, (double)tt->duration_ns / 1e9);
	ht_emit_dbl(e, "allocations_per_second", 1, tt->allocs_per_second);
	ht_emit_u64(e, "sites", m->nsites);
	ht_emit_nl(e, 12);
	ht_emit_u64_or_null(e, "reallocs", !no_events, tt->reallocs);
	ht_emit_u64_or_null(e, "ignored_frees", !no_events, tt->ignored_frees);
	ht_emit_u64_or_null(e, "reused_addresses", !no_events, tt->reused_addresses);
	ht_emit_nl(e, 12);
	ht_emit_bool(e, "leaks_classified", lk->classified);
	ht_section_leak_totals(e, lk);
	if (sampled) {
		const ht_est_t *s = &tt->est;
		ht_emit_nl(e, 12);
		ht_emit_dbl(e, "allocations_ci95", 0, ht_ci95(s->var_allocations));
		ht_emit_dbl(e, "bytes_allocated_ci95", 0, ht_ci95(s->var_bytes_allocated));
		ht_emit_dbl(e, "peak_heap_bytes_ci95", 0, ht_ci95(s->var_peak_bytes));
		ht_emit_nl(e, 12);
		ht_emit_dbl(e, "leaked_blocks_ci95", 0, ht_ci95(s->var_leaked_blocks));
		ht_emit_dbl(e, "leaked_bytes_ci95", 0, ht_ci95(s->var_leaked_bytes));
	}
	ht_emit_obj_end(e);
}

/* JSON "sites": every stack unless --top, by bytes allocated. */
static int json_sites(ht_emitter_t *e, const ht_model_t *m, ht_symbolizer_t *sym,
		      const ht_report_opts_t *o, size_t *idx)
{
	const ht_trace_t *t = m->trace;
	bool sampled = m->sample_rate != 0;
	ht_frame_t *frames = NULL;
	size_t cap = 0;
	int err = 0;
	size_t n = ht_model_sort(m, HT_BY_BYTES, idx);
	/* sites with only zero-byte allocations still count as stacks */
	for (size_t i = 0; i < m->nsites; i++)
		if (!m->sites[i].bytes_allocated && m->sites[i].allocations)
			idx[n++] = i;
	if (o && o->top && o->top < n)
		n = o->top;
	ht_emit_arr_begin(e, "sites");
	for (size_t i = 0; i < n; i++) {
		const ht_site_t *s = &m->sites[idx[i]];
		long nf = ht_model_frames(m, sym, s, &frames, &cap);
		if (nf < 0) {
			err = (int)nf;
			break;
		}
		ht_emit_nl(e, 2);
		ht_emit_obj_begin(e, NULL);
		ht_emit_u64(e, "allocations", s->allocations);
		ht_emit_u64(e, "bytes_allocated", s->bytes_allocated);
		ht_emit_u64(e, "peak_bytes", s->peak_bytes);
		ht_emit_u64(e, "leaked_blocks", s->leaked_blocks);
		ht_emit_u64(e, "leaked_bytes", s->leaked_bytes);
		ht_emit_u64_or_null(e, "temporary_allocations", !sampled && !t->have_summary,
				    s->temporary);
		ht_emit_u64(e, "frees", s->frees);
		ht_emit_u64(e, "largest", s->largest);
		ht_emit_u64(e, "stack_id", s->overflow ? (uint64_t)0 : s->stack_id);
		if (sampled) {
			ht_emit_nl(e, 3);
			ht_emit_dbl(e, "allocations_ci95", 0, ht_ci95(s->est.var_allocations));
			ht_emit_dbl(e, "bytes_allocated_ci95", 0, ht_ci95(s->est.var_bytes_allocated));
			ht_emit_dbl(e, "peak_bytes_ci95", 0, ht_ci95(s->est.var_peak_bytes));
			ht_emit_dbl(e, "leaked_blocks_ci95", 0, ht_ci95(s->est.var_leaked_blocks));
			ht_emit_dbl(e, "leaked_bytes_ci95", 0, ht_ci95(s->est.var_leaked_bytes));
		}
		ht_emit_nl(e, 3);
		ht_emit_frames(e, "stack", frames, nf);
		if (s->overflow)
			ht_emit_bool(e, "overflow", true);
		ht_emit_obj_end(e);
	}
	ht_emit_arr_end(e);
	free(frames);
	return err;
}

int ht_report_write(ht_emitter_t *e, const ht_model_t *m, ht_symbolizer_t *sym,
		    const ht_report_opts_t *o, const ht_report_parts_t *p)
{
	const ht_trace_t *t = m->trace;
	const ht_leaks_t *lk = p->leaks;
	FILE *out = e->out;
	bool json = ht_emit_json(e);
	size_t top = o && o->top ? o->top : DEFAULT_TOP;
	textctx_t c = { { out, m, sym, NULL, 0, 0 }, NULL, 0 };
	size_t *idx = malloc((m->nsites ? m->nsites : 1) * sizeof(*idx));
	c.label = calloc(m->nsites ? m->nsites : 1, sizeof(*c.label));
	if (!idx || !c.label) {
		free(idx);
		free(c.label);
		return -ENOMEM;
	}

	if (!json)
		text_header(out, m, o);
	ht_emit_obj_begin(e, NULL);
	ht_emit_u64(e, "heaptrail_report", 1);
	ht_emit_nl(e, 1);
	ht_emit_program(e, "program", t);
	/* a sampled trace: figures are estimates; temporary allocations unknown */
	if (m->sample_rate) {
		ht_emit_nl(e, 1);
		ht_emit_obj_begin(e, "sampled");
		ht_emit_u64(e, "rate", t->sample_rate);
		ht_emit_bool(e, "exact_totals", t->have_end_counts);
		ht_emit_obj_end(e);
	}
	ht_emit_nl(e, 1);
	if (json) {
		json_totals(e, m, lk);
		/* trace health */
		char w[8][HT_WARN_LEN];
		size_t nw = ht_report_warnings(m, w, 8);
		ht_emit_nl(e, 1);
		ht_emit_bool(e, "truncated", t->error);
		ht_emit_str(e, "error", t->error ? t->message : NULL);
		if (t->error)
			ht_emit_u64(e, "error_offset", t->error_offset);
		ht_emit_arr_begin(e, "warnings");
		for (size_t i = 0; i < nw; i++)
			ht_emit_str(e, NULL, w[i]);
		ht_emit_arr_end(e);
		ht_emit_nl(e, 1);
		c.st.err = json_sites(e, m, sym, o, idx);
	} else {
		print_summary(out, m);
		/* errors first, as memcheck: double, invalid, mismatched frees */
		c.st.err = ht_section_badfrees(e, m, sym);
		if (t->have_summary)
			fputs("\nSUMMARY MODE: the agent kept per-site totals, no events: no chart over "
			      "time, no temporary allocations, no tables of heaptrail.h's tags, phases, "
			      "pools and snapshots (their blocks are in the sites), no descriptors or "
			      "handles.\n", out);
		else if (!c.st.err)
			c.st.err = ht_section_timeline(e, m); /* memory over time, peak marked */
		print_list(&c, "TOP SITES BY BYTES ALLOCATED", HT_BY_BYTES, head_bytes, top, idx,
			   "no allocations");
		print_list(&c, "TOP SITES BY CONTRIBUTION TO THE PEAK", HT_BY_PEAK, head_peak, top,
			   idx, "nothing was live at the peak");
		print_list(&c, "TOP SITES BY NUMBER OF ALLOCATIONS", HT_BY_COUNT, head_count, top,
			   idx, "no allocations");
	}
	/* leaks: every unsuppressed group of blocks live at the end, by class
	 * and stack, largest first (the suppressed ones are counted in
	 * "suppressions") */
	ht_emit_nl(e, 1);
	if (!c.st.err)
		c.st.err = ht_section_leaks(e, m, sym, lk, top, p->show_reachable, c.label,
					 &c.next_label);
	if (!c.st.err && !json) /* in the JSON a member of its own, below */
		c.st.err = ht_section_suppressions(e, m, lk);
	if (!json)
		print_list(&c, "TEMPORARY ALLOCATIONS", HT_BY_TEMPORARY, head_temp, top, idx,
			   m->sample_rate ? "not known in a sampled trace" : "no temporary allocations");
	/* memory over time: a bounded series, the exact peak marked */
	if (json) {
		ht_emit_nl(e, 1);
		if (!c.st.err)
			c.st.err = ht_section_timeline(e, m);
	}
	/* heaptrail.h's pools and snapshots: only when the trace has them (in
	 * the JSON new members come last, so existing readers see the same
	 * object) */
	int err = c.st.err;
	if (!err && m->npools) {
		ht_emit_nl(e, 1);
		err = ht_section_pools(e, m);
	}
	if (!err && m->nsnapshots) {
		ht_emit_nl(e, 1);
		err = ht_section_snapshots(e, m, sym);
	}
	if (!err && json && t->have_summary) {
		bool full = false;
		for (size_t i = 0; i < m->nsites; i++)
			full |= m->sites[i].overflow;
		ht_emit_nl(e, 1);
		ht_emit_obj_begin(e, "summary_mode");
		ht_emit_bool(e, "site_table_full", full);
		ht_emit_bool(e, "peak_in_arrival_order",
			     t->agent_flags & HT_AGENT_SUMMARY_PEAK_ORDER);
		ht_emit_obj_end(e);
	}
	/* suppressions and on-demand leak checks */
	if (!err && json) {
		ht_emit_nl(e, 1);
		err = ht_section_suppressions(e, m, lk);
	}
	if (!err) {
		ht_emit_nl(e, 1);
		err = ht_section_checks(e, m, sym);
	}
	/* descriptors and handles still open: in the JSON always, in the text
	 * when the trace has any */
	if (!err) {
		ht_emit_nl(e, 1);
		err = ht_section_resources(e, m, sym);
	}
	if (!err && !json) /* the program's own maps: when the trace has any */
		err = ht_section_mapped(e, m, sym, top);
	/* the views asked for beside the report, JSON only: the function
	 * profile, tags and phases */
	if (!err && json && p->functions) {
		ht_emit_nl(e, 1);
		err = ht_section_functions(e, p->functions, sym, NULL);
	}
	if (!err && json && p->marks && p->marks->tag_events) {
		ht_emit_nl(e, 1);
		err = ht_section_tags(e, p->marks);
	}
	if (!err && json && p->marks && p->marks->nphases) {
		ht_emit_nl(e, 1);
		err = ht_section_phases(e, p->marks);
	}
	/* double, invalid and mismatched frees (the text has them first), and
	 * the program's own memory maps: members newer than the rest, last */
	if (!err && json) {
		ht_emit_nl(e, 1);
		err = ht_section_badfrees(e, m, sym);
	}
	if (!err && json) {
		ht_emit_nl(e, 1);
		err = ht_section_mapped(e, m, sym, 0);
	}
	ht_emit_obj_end(e);
	fputc('\n', out);
	if (!err && !json && p->marks)
		err = ht_section_phases(e, p->marks);
	if (err && !c.st.err)
		c.st.err = err;

	free(idx);
	free(c.label);
	free(c.st.frames);
	if (c.st.err)
		return c.st.err;
	return ferror(out) ? -EIO : 0;
}

static int report_to(FILE *out, ht_emit_kind_t kind, const ht_model_t *m, ht_symbolizer_t *sym,
		     const ht_report_opts_t *o, const ht_leaks_t *lk)
{
	ht_emitter_t e;
	ht_report_parts_t p = { lk, false, NULL, NULL };
	ht_emit_init(&e, out, kind);
	return ht_report_write(&e, m, sym, o, &p);
}

int ht_report_text(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym, const ht_report_opts_t *o,
		   const ht_leaks_t *lk)
{
	return report_to(out, HT_EMIT_TEXT, m, sym, o, lk);
}

int ht_report_json(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym, const ht_report_opts_t *o,
		   const ht_leaks_t *lk)
{
	return report_to(out, HT_EMIT_JSON, m, sym, o, lk);
}
