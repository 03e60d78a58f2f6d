/* timeline.h - memory over time: the report's section (text chart, JSON
 * series) and the two exports built on the same time series, Chrome Trace
 * Event JSON (report/chrome.c) and valgrind massif (report/massif.c).
 *
 * All of them sample ht_model_timeline (analysis/model.h), so their figures agree
 * with each other and with the report: the highest heap is exactly
 * totals.peak_heap_bytes at totals.peak_time_ns.
 */
#ifndef HEAPTRAIL_TIMELINE_H
#define HEAPTRAIL_TIMELINE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "report/emitter.h"
#include "report/export.h"
#include "analysis/model.h"

/* One moment of the series: the heap (and the latest RSS sample) right
 * after the last event at or before time_ns. */
typedef struct ht_tl_point {
	uint64_t time_ns;
	uint64_t heap_bytes, heap_blocks;
	uint64_t rss_bytes; /* 0: no RSS sample yet */
	bool peak;	    /* the global peak (exactly one point, if any allocation) */
} ht_tl_point_t;

/* The series as points in time order: time 0, then per bucket the moment of
 * its highest heap and its end, dropping points that repeat the previous
 * values (a step function: each value holds until the next point). At most
 * 2 * tl->n + 1 points. *out belongs to the caller (free()). Returns 0 or
 * -ENOMEM. */
int ht_timeline_points(const ht_timeline_t *tl, ht_tl_point_t **out, size_t *n);

/* The report's memory over time: in text the "MEMORY OVER TIME" section,
 * an ASCII chart of the heap (left axis) and the sampled RSS (right axis),
 * ~100 columns by 12 rows, with the peak marked; in JSON the "timeline"
 * member, [POINT, ...] with POINT = {"time_seconds", "heap_bytes",
 * "heap_blocks", "rss_bytes" (null before the first sample), "peak": true
 * on the peak}. Returns 0, -ENOMEM or -EIO. */
int ht_section_timeline(ht_emitter_t *e, const ht_model_t *m);

/* The buckets of the report's timeline in JSON or text: given to
 * ht_model_build_timed, the model's replay folds it, and the section needs
 * no replay of its own. */
size_t ht_report_timeline_buckets(bool json);


/* heaptrail convert --format chrome / massif: their timelines (d->timeline)
 * have these many buckets; chrome's threads' activity HT_ACTIVITY_BUCKETS
 * slices each. */
#define HT_CHROME_BUCKETS 500 /* heap/RSS counters: at most 1001 points each */
#define HT_ACTIVITY_BUCKETS 100 /* per-thread activity instants: at most 100 a thread */
#define HT_MASSIF_BUCKETS 24  /* two points each + time 0: at most 49 snapshots */
int ht_export_chrome(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym,
		     const ht_export_opts_t *o, const ht_export_data_t *d);
int ht_export_massif(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym,
		     const ht_export_opts_t *o, const ht_export_data_t *d);

#endif /* HEAPTRAIL_TIMELINE_H */
