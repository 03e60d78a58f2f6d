/* activity.h - what the Chrome trace export (report/chrome.c) shows per
 * thread, collected by consumers of the model's pass (analysis/pass.h):
 * each thread's heap activity, summed per slice of time, and the thread
 * that reached the peak; and the function calls of every thread as
 * begin/end spans.
 *
 * Both are bounded whatever the trace's length: at most nbuckets activity
 * slices per thread, at most max_spans spans per thread (the rest are
 * counted as dropped), so they are kept for the writer rather than written
 * as they come, which the writer could not do: threads are written in
 * order of their first heap event, each with its spans, known at the end.
 */
#ifndef HEAPTRAIL_ACTIVITY_H
#define HEAPTRAIL_ACTIVITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/pass.h"
#include "analysis/reader.h"

/* A thread's heap events over the run; in a sampled trace weighted
 * estimates, rounded so that the slices add up to the thread's figures. */
typedef struct ht_thread_activity {
	uint64_t first, last; /* times of its first and last heap events */
	uint64_t allocations, frees, bytes_allocated, bytes_freed;
} ht_thread_activity_t;

/* One thread's events within one of nbuckets equal slices of the run. */
typedef struct ht_activity_slice {
	uint32_t thread;
	uint64_t first, last; /* its first and last event there */
	uint64_t allocations, frees, bytes_allocated, bytes_freed;
} ht_activity_slice_t;

typedef struct ht_activity {
	ht_thread_activity_t *th; /* per thread of the trace */
	/* in the order they ended: when their thread's next event fell in a
	 * later slice, then those open at the end by thread */
	ht_activity_slice_t *slices;
	size_t nslices;
	bool have_peak;
	uint32_t peak_thread; /* of the allocation that first reached the peak */
} ht_activity_t;

/* Register the activity of t's threads in nbuckets slices on p; *out is
 * complete once the pass has run, and freed by ht_activity_free whatever
 * happened. Returns 0 or -ENOMEM. */
int ht_activity_attach(ht_pass_t *p, const ht_trace_t *t, size_t nbuckets, ht_activity_t **out);
void ht_activity_free(ht_activity_t *a);

/* ---- function spans ------------------------------------------------------------ */

/* One begin ('B') or end ('E') of a call, at ns. */
typedef struct ht_span_event {
	uint64_t ns;
	uint32_t fn; /* index into the thread's fn_addr */
	char ph;
} ht_span_event_t;

typedef struct ht_thread_spans {
	ht_span_event_t *ev; /* in time order; every B has its E */
	size_t n, cap;
	/* the functions of its spans, in order of first use: entry address,
	 * and when that first call began (picks the module when address
	 * ranges were reused after a dlclose) */
	uint64_t *fn_addr, *fn_when;
	size_t nfn, cap_fn;
	uint64_t dropped; /* calls left out: past max_spans or HT_FN_MAX_DEPTH */
} ht_thread_spans_t;

typedef struct ht_fn_spans {
	ht_thread_spans_t *th; /* per thread of the trace */
	size_t nthreads;
} ht_fn_spans_t;

/* Register on p the calls of every thread with function events (ENTER,
 * EXIT) as spans, at most max_spans per thread (0: HT_FN_CHROME_MAX_SPANS)
 * and none deeper than HT_FN_MAX_DEPTH; calls still open at the end are
 * ended at their thread's last event. *out as ht_activity_attach's.
 * Returns 0 or -ENOMEM. */
#define HT_FN_CHROME_MAX_SPANS 200000u
int ht_fn_spans_attach(ht_pass_t *p, const ht_trace_t *t, size_t max_spans, ht_fn_spans_t **out);
void ht_fn_spans_free(ht_fn_spans_t *s);

#endif /* HEAPTRAIL_ACTIVITY_H */
