/* functions_section.h - writers of the function profile:
 * `heaptrail report --functions` (text), the "functions" section of the JSON
 * report, and the function spans of the Chrome trace export.
 *
 * The model they read is analysis/functions.h (ht_fn_profile_t).
 */
#ifndef HEAPTRAIL_REPORT_FUNCTIONS_H
#define HEAPTRAIL_REPORT_FUNCTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis/activity.h"
#include "analysis/functions.h"
#include "analysis/reader.h"
#include "analysis/symbolize.h"
#include "report/emitter.h"

/* Unit of the text report's times (--time-unit). */
typedef enum ht_time_unit {
	HT_TIME_AUTO, /* one unit for the whole report, picked from the longest thread */
	HT_TIME_NS,
	HT_TIME_US,
	HT_TIME_MS,
	HT_TIME_S,
} ht_time_unit_t;

/* Parses "ns", "us", "ms" or "s"; false if unknown. */
bool ht_time_unit_parse(const char *s, ht_time_unit_t *out);

typedef struct ht_fn_report_opts {
	const char *trace_path; /* shown in the header; may be NULL */
	ht_time_unit_t unit;
	bool memory; /* --memory: heap columns and the two top-10 tables */
	size_t top;  /* rows of the top tables; 0 = 10 */
} ht_fn_report_opts_t;

/* The function profile, written once against the emitter: in text,
 * `heaptrail report --functions`: the flat profile, one indented call tree
 * per thread, `name calls total self` (plus `heap own` with memory), and
 * with memory the functions ranked by own bytes and by own allocations; a
 * profile without threads prints the "no function events" message. In
 * JSON, the report's "functions" member (the section writes its key), times
 * in integer nanoseconds, every thread's whole tree and every function (o
 * is the text's alone). sym may be NULL (names become addresses); o NULL:
 * the defaults. Returns 0, -ENOMEM, or -EIO when the output failed. */
int ht_section_functions(ht_emitter_t *e, const ht_fn_profile_t *p, ht_symbolizer_t *sym,
			 const ht_fn_report_opts_t *o);

/* The line a report prints when a trace has no function events. */
extern const char ht_fn_no_events_msg[];

/* ---- Chrome trace spans ----------------------------------------------------------
 * Write the function calls of one thread (index `thread` into t->threads),
 * as the pass collected them (analysis/activity.h), as Chrome Trace Event
 * "B"/"E" pairs, {"ph":"B","name":..,"cat":"function","pid":pid,"tid":tid,
 * "ts":us} ... {"ph":"E",..}, in time order, each event preceded by ","
 * unless *nevents is 0 (the caller's count of events written so far;
 * incremented per event). Times are microseconds with 3 decimals.
 * Returns 0, -ENOMEM or -EIO. */
int ht_functions_chrome_spans(FILE *out, const ht_trace_t *t, ht_symbolizer_t *sym,
			      const ht_fn_spans_t *spans, uint32_t thread, uint64_t pid, uint64_t tid,
			      size_t *nevents);

#endif /* HEAPTRAIL_REPORT_FUNCTIONS_H */
