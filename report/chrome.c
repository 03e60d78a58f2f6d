/* chrome.c - heaptrail convert --format chrome: Chrome Trace Event Format,
 * JSON object form, for Perfetto, Chrome DevTools and speedscope.
 *
 * What a viewer shows (one process, the traced pid):
 *   - counter tracks ("C"): "heap" {bytes}, "live blocks" {count} and "RSS"
 *     {bytes}, sampled from ht_model_timeline (bounded size; each bucket
 *     contributes the moment of its highest heap and its end state, so the
 *     counter's maximum is exactly the report's peak_heap_bytes);
 *   - one track per thread (tid = the kernel's thread id) named by a
 *     "thread_name" metadata event, holding one "X" slice from the thread's
 *     first to its last heap event and "i" instants (scope t) that sum its
 *     allocation activity per time slice;
 *   - the global peak as an instant of scope "g" on the thread that reached
 *     it, with the sites that held the most at that moment in its args.
 *
 * The figures over time come from the command's one pass (the counters'
 * timeline folded by the model, the threads' activity and function spans by
 * analysis/activity.h); this file only writes them.
 *
 * Invariants the viewers rely on (checked by the test suite): ts and dur are
 * microseconds (decimals carry the nanoseconds) and never negative; events of
 * one thread are written in time order; slices nest: each thread's activity
 * lives inside its thread slice.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/functions_section.h" /* report/functions_section.h: the function spans */
#include "report/report.h"
#include "report/timeline.h"
#include "trace_format.h"
#include "analysis/util.h"

#define PEAK_SITES 5	     /* sites listed in the peak marker's args */

typedef struct cw {
	FILE *out;
	const ht_model_t *m;
	ht_symbolizer_t *sym;
	uint64_t pid;
	size_t nevents; /* written so far: the first one gets no comma */
	const ht_activity_t *act;
	const ht_fn_spans_t *spans;
} cw_t;

/* ---- JSON output ---------------------------------------------------------------- */

/* Strings never come out as null here: the viewers want text. */
static void json_str(FILE *out, const char *s)
{
	ht_json_str(out, s ? s : "");
}

/* Microseconds with the nanoseconds as decimals: exact, never a float. */
static void put_us(FILE *out, uint64_t ns)
{
	fprintf(out, "%" PRIu64 ".%03u", ns / 1000, (unsigned)(ns % 1000));
}

/* Open one event: {"ph":..,"name":..,"pid":..,"tid":..[,"ts":..]. The caller
 * adds its fields and closes it with ev_end(). */
static void ev_begin(cw_t *w, char ph, const char *name, const char *cat, uint64_t tid,
		     const uint64_t *ts_ns)
{
	FILE *out = w->out;
	fprintf(out, "%s\n{\"ph\":\"%c\",\"name\":", w->nevents++ ? "," : "", ph);
	json_str(out, name);
	if (cat) {
		fputs(",\"cat\":", out);
		json_str(out, cat);
	}
	fprintf(out, ",\"pid\":%" PRIu64 ",\"tid\":%" PRIu64, w->pid, tid);
	if (ts_ns) {
		fputs(",\"ts\":", out);
		put_us(out, *ts_ns);
	}
}

static void ev_end(cw_t *w)
{
	fputc('}', w->out);
}

/* ---- process and threads --------------------------------------------------------- */

static uint64_t thread_tid(const ht_trace_t *t, uint32_t i)
{
	return t->threads[i].tid;
}

/* An activity slice of a thread as one instant at its first event. */
static void write_slice(cw_t *w, const ht_activity_slice_t *a)
{
	char name[96], s1[HT_FMT_LEN];
	int l = 0;
	if (a->allocations)
		l = snprintf(name, sizeof(name), "%" PRIu64 " alloc%s (%s)%s", a->allocations,
			     a->allocations == 1 ? "" : "s", ht_fmt_size(s1, a->bytes_allocated),
			     a->frees ? ", " : "");
	if (l < 0 || (size_t)l >= sizeof(name))
		l = 0; /* cannot happen with these figures; never write past name */
	if (a->frees)
		snprintf(name + l, sizeof(name) - (size_t)l, "%" PRIu64 " free%s", a->frees,
			 a->frees == 1 ? "" : "s");
	ev_begin(w, 'i', name, "heap.activity", thread_tid(w->m->trace, a->thread), &a->first);
	fprintf(w->out,
		",\"s\":\"t\",\"args\":{\"allocations\":%" PRIu64 ",\"bytes_allocated\":%" PRIu64
		",\"frees\":%" PRIu64 ",\"bytes_freed\":%" PRIu64 ",\"until_us\":",
		a->allocations, a->bytes_allocated, a->frees, a->bytes_freed);
	put_us(w->out, a->last);
	fputc('}', w->out);
	ev_end(w);
}

/* Threads in order of their first heap event (ties: lower tid). */
static int by_first(const void *x, const void *y, void *arg)
{
	const cw_t *w = arg;
	const ht_thread_activity_t *th = w->act->th;
	const ht_trace_t *t = w->m->trace;
	uint32_t i = *(const uint32_t *)x, j = *(const uint32_t *)y;
	if (th[i].first != th[j].first)
		return th[i].first < th[j].first ? -1 : 1;
	return t->threads[i].tid < t->threads[j].tid ? -1 : t->threads[i].tid > t->threads[j].tid;
}

static int emit_threads(cw_t *w)
{
	const ht_trace_t *t = w->m->trace;
	const ht_thread_activity_t *th = w->act->th;
	uint32_t *order = malloc((t->nthreads ? t->nthreads : 1) * sizeof(*order));
	if (!order)
		return -ENOMEM;
	uint32_t n = 0;
	for (uint32_t i = 0; i < t->nthreads; i++)
		if (th[i].allocations || th[i].frees || t->threads[i].nfn_events)
			order[n++] = i; /* nothing recorded: no track */
	qsort_r(order, n, sizeof(*order), by_first, w);
	unsigned others = 0;
	for (uint32_t k = 0; k < n; k++) {
		uint32_t i = order[k];
		const ht_thread_activity_t *a = &th[i];
		uint64_t tid = thread_tid(t, i);
		char name[128];
		/* the viewers show the tid beside the name: no need to repeat it */
		if (t->threads[i].name && t->threads[i].name[0])
			snprintf(name, sizeof(name), "%s", t->threads[i].name);
		else if (tid == w->pid)
			snprintf(name, sizeof(name), "main");
		else
			snprintf(name, sizeof(name), "thread #%u", ++others);
		ev_begin(w, 'M', "thread_name", NULL, tid, NULL);
		fputs(",\"args\":{\"name\":", w->out);
		json_str(w->out, name);
		fputs("}", w->out);
		ev_end(w);
		/* the main thread first, the others in order of their first event */
		ev_begin(w, 'M', "thread_sort_index", NULL, tid, NULL);
		fprintf(w->out, ",\"args\":{\"sort_index\":%u}", tid == w->pid ? 0 : k + 1);
		ev_end(w);
		if (t->threads[i].nfn_events) {
			/* its function spans over the whole run instead of its heap
			 * activity slice, so a thread that calls but never
			 * allocates has a track too; a failed write shows in
			 * ferror(out) */
			(void)ht_functions_chrome_spans(w->out, t, w->sym, w->spans, i, w->pid, tid,
							&w->nevents);
			continue;
		}
		/* the thread's heap life as one slice: viewers that only draw
		 * slices (speedscope, DevTools' flame chart) show every thread */
		char slice[160];
		snprintf(slice, sizeof(slice), "%s: heap activity", name);
		ev_begin(w, 'X', slice, "heap.thread", tid, &a->first);
		fputs(",\"dur\":", w->out);
		put_us(w->out, a->last - a->first);
		fprintf(w->out,
			",\"args\":{\"allocations\":%" PRIu64 ",\"bytes_allocated\":%" PRIu64
			",\"frees\":%" PRIu64 ",\"bytes_freed\":%" PRIu64 "}",
			a->allocations, a->bytes_allocated, a->frees, a->bytes_freed);
		ev_end(w);
	}
	free(order);
	return 0;
}

/* ---- counters and the peak ----------------------------------------------------------- */

static void counter(cw_t *w, const char *name, const char *key, uint64_t ts, uint64_t v)
{
	ev_begin(w, 'C', name, "heap", w->pid, &ts);
	fprintf(w->out, ",\"args\":{\"%s\":%" PRIu64 "}", key, v);
	ev_end(w);
}

static int emit_counters(cw_t *w, const ht_timeline_t *tl)
{
	ht_tl_point_t *p;
	size_t n;
	int e = ht_timeline_points(tl, &p, &n);
	if (e)
		return e;
	/* one track at a time: each stays in time order on its own */
	for (size_t i = 0; i < n; i++)
		if (!i || p[i].heap_bytes != p[i - 1].heap_bytes || i + 1 == n)
			counter(w, "heap", "bytes", p[i].time_ns, p[i].heap_bytes);
	for (size_t i = 0; i < n; i++)
		if (!i || p[i].heap_blocks != p[i - 1].heap_blocks || i + 1 == n)
			counter(w, "live blocks", "count", p[i].time_ns, p[i].heap_blocks);
	/* RSS only from its first sample on: before it, it is unknown, not 0 */
	uint64_t last = 0;
	for (size_t i = 0; i < n; i++) {
		if (p[i].rss_bytes && (p[i].rss_bytes != last || i + 1 == n))
			counter(w, "RSS", "bytes", p[i].time_ns, p[i].rss_bytes);
		if (p[i].rss_bytes)
			last = p[i].rss_bytes;
	}
	free(p);
	return 0;
}

/* The peak marker, with the sites that held the most at that moment. */
static int emit_peak(cw_t *w, uint64_t tid)
{
	const ht_model_t *m = w->m;
	const ht_totals_t *tt = &m->totals;
	char name[96], s1[HT_FMT_LEN];
	snprintf(name, sizeof(name), "peak heap %s", ht_fmt_size(s1, tt->peak_heap_bytes));
	ev_begin(w, 'i', name, "heap.peak", tid, &tt->peak_time_ns);
	fprintf(w->out, ",\"s\":\"g\",\"args\":{\"heap_bytes\":%" PRIu64 ",\"top_sites\":[",
		tt->peak_heap_bytes);
	size_t *idx = malloc((m->nsites ? m->nsites : 1) * sizeof(*idx));
	ht_frame_t *frames = NULL;
	size_t cap = 0;
	int e = 0;
	if (!idx)
		e = -ENOMEM;
	size_t n = idx ? ht_model_sort(m, HT_BY_PEAK, idx) : 0;
	for (size_t i = 0; i < n && i < PEAK_SITES && !e; i++) {
		const ht_site_t *s = &m->sites[idx[i]];
		long nf = ht_model_frames(m, w->sym, s, &frames, &cap);
		if (nf < 0) {
			e = (int)nf;
			break;
		}
		fprintf(w->out, "%s{\"bytes\":%" PRIu64 ",\"function\":", i ? "," : "", s->peak_bytes);
		json_str(w->out, nf > 0 && frames[0].function ? frames[0].function : "(unknown)");
		if (nf > 0 && frames[0].file) {
			fputs(",\"file\":", w->out);
			json_str(w->out, frames[0].file);
			if (frames[0].line > 0)
				fprintf(w->out, ",\"line\":%d", frames[0].line);
		}
		fputc('}', w->out);
	}
	fputs("]}", w->out);
	ev_end(w);
	free(idx);
	free(frames);
	return e;
}

/* ---- the file -------------------------------------------------------------------------- */

int ht_export_chrome(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym,
		     const ht_export_opts_t *o, const ht_export_data_t *d)
{
	const ht_trace_t *t = m->trace;
	const ht_totals_t *tt = &m->totals;
	cw_t w = { out, m, sym, t->pid, 0, d->activity, d->spans };
	(void)o;

	/* totals in otherData: what the viewers show as trace metadata */
	fputs("{\"displayTimeUnit\":\"ms\",\"otherData\":{\"tool\":\"heaptrail\",\"version\":\"" HT_VERSION
	      "\",\"command\":",
	      out);
	json_str(out, t->argc ? t->argv[0] : t->exe_path);
	fprintf(out,
		",\"allocations\":%" PRIu64 ",\"frees\":%" PRIu64 ",\"bytes_allocated\":%" PRIu64
		",\"peak_heap_bytes\":%" PRIu64 ",\"peak_rss_bytes\":%" PRIu64
		",\"leaked_bytes\":%" PRIu64 "},\n\"traceEvents\":[",
		tt->allocations, tt->frees, tt->bytes_allocated, tt->peak_heap_bytes,
		tt->peak_rss_bytes, tt->leaked_bytes);

	const char *prog = ht_base_name(t->argc ? t->argv[0] : t->exe_path);
	ev_begin(&w, 'M', "process_name", NULL, w.pid, NULL);
	fputs(",\"args\":{\"name\":", out);
	json_str(out, prog && prog[0] ? prog : "(unknown program)");
	fputs("}", out);
	ev_end(&w);

	/* each thread's activity, slice by slice, as the pass ended them */
	for (size_t i = 0; i < w.act->nslices; i++)
		write_slice(&w, &w.act->slices[i]);
	int e = emit_threads(&w);
	if (!e)
		e = emit_counters(&w, d->timeline);
	const ht_activity_t *a = w.act;
	if (!e && tt->peak_heap_bytes)
		e = emit_peak(&w, a->have_peak ? thread_tid(t, a->peak_thread) : w.pid);
	fputs("\n]}\n", out);
	if (e)
		return e;
	return ferror(out) ? -EIO : 0;
}
