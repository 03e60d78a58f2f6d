/* export.h - writers of the formats other tools read (heaptrail convert).
 *
 * Each format is one file in report/ with one entry in the table in
 * report/exporters.c. A writer reads the model and what the command's pass
 * collected for it beside the model (ht_export_data_t: the table says
 * what), never the events, and writes to out; it returns 0 or a negative
 * error code (-EIO when the stream failed). sym may be NULL (frames then
 * carry only module and address). Two formats write while a pass runs, as
 * the consumer callback the command registers: events (its lines, during
 * the model's pass) and heaptrack (its second pass): see their functions
 * below.
 */
#ifndef HEAPTRAIL_EXPORT_H
#define HEAPTRAIL_EXPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "analysis/activity.h"
#include "analysis/event_log.h"
#include "analysis/heaptrack_plan.h"
#include "analysis/model.h"
#include "analysis/pass.h"
#include "analysis/safe.h"
#include "analysis/symbolize.h"

/* What a stack is weighed by, for the formats with one cost (--cost). */
typedef enum ht_cost {
	HT_COST_BYTES,	     /* bytes allocated (default) */
	HT_COST_ALLOCATIONS, /* number of allocations */
	HT_COST_PEAK,	     /* bytes live at the global peak */
	HT_COST_LEAKED,	     /* bytes live at the end */
	HT_COST_TEMPORARY,   /* temporary allocations */
} ht_cost_t;

typedef struct ht_export_opts {
	const char *trace_path; /* the input trace, for titles */
	ht_cost_t cost;
	bool icicle; /* flamegraph: root at the top */
} ht_export_opts_t;

/* What the model's pass collects for a format (ht_exporter_t.collect). */
#define HT_COLLECT_ACTIVITY 0x1u /* per-thread activity and function spans (chrome) */
#define HT_COLLECT_EVENTS 0x2u	 /* the event log, written as it comes (events) */
#define HT_COLLECT_HEAPTRACK 0x4u /* heaptrack's plan, then a second pass writes */

/* The finished results a writer gets beside the model: NULL unless its
 * table entry asks for them. */
typedef struct ht_export_data {
	const ht_timeline_t *timeline;	   /* tl_buckets buckets */
	const ht_activity_t *activity;	   /* HT_COLLECT_ACTIVITY */
	const ht_fn_spans_t *spans;	   /* HT_COLLECT_ACTIVITY */
	const ht_event_log_t *events;	   /* HT_COLLECT_EVENTS: its counts */
	const ht_hk_plan_t *heaptrack;	   /* HT_COLLECT_HEAPTRACK */
} ht_export_data_t;

typedef int (*ht_export_fn)(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym,
			    const ht_export_opts_t *o, const ht_export_data_t *d);

typedef struct ht_exporter {
	const char *name;  /* --format value */
	ht_export_fn write;
	const char *what;  /* one line for --help */
	bool needs_events; /* shows events over time: refused for a summary trace */
	bool has_cost;	   /* weighs stacks by one cost: takes --cost */
	size_t tl_buckets; /* a timeline of that many buckets, folded by the model's pass */
	unsigned collect;  /* HT_COLLECT_* */
} ht_exporter_t;

/* The table, ended by an entry with name == NULL. */
extern const ht_exporter_t ht_exporters[];

/* The writers (one per report/<name>.c), as listed in the table. */
int ht_export_pprof(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym, const ht_export_opts_t *o,
		    const ht_export_data_t *d);
int ht_export_folded(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym, const ht_export_opts_t *o,
		     const ht_export_data_t *d);
int ht_export_flamegraph(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym,
			 const ht_export_opts_t *o, const ht_export_data_t *d);
/* events: the closing line, after the pass */
int ht_export_events(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym, const ht_export_opts_t *o,
		     const ht_export_data_t *d);

/* The events format's lines, written during the model's pass: the header
 * now (before the pass), then ht_events_record as the event log's callback
 * (analysis/event_log.h) with the writer as its ctx. m need not be built
 * yet: only its trace is read before the pass ends. */
typedef struct ht_events_writer ht_events_writer_t;
int ht_events_begin(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym, ht_events_writer_t **w);
int ht_events_record(void *ctx, const ht_event_rec_t *r);
void ht_events_writer_free(ht_events_writer_t *w);

/* heaptrack's file is written by a consumer of a second pass over the
 * trace (the model and the plan come from the first): its header now, its
 * lines as the pass runs, its end by ht_heaptrack_finish (its table entry
 * has no `write`). Returns 0 or -ENOMEM; *w is freed by
 * ht_heaptrack_writer_free whatever happened. */
typedef struct ht_heaptrack_writer ht_heaptrack_writer_t;
int ht_heaptrack_attach(ht_pass_t *p, FILE *out, const ht_model_t *m, ht_symbolizer_t *sym,
			const ht_hk_plan_t *plan, ht_heaptrack_writer_t **w);
/* The end of the file, after the second pass has run and before it is
 * freed (its table still holds the blocks live at the end). Returns 0,
 * -ENOMEM or -EIO. */
int ht_heaptrack_finish(ht_heaptrack_writer_t *w);
void ht_heaptrack_writer_free(ht_heaptrack_writer_t *w);

/* Cost of a site under c. */
uint64_t ht_site_cost(const ht_site_t *s, ht_cost_t c);
/* Parses a --cost value; false if unknown. */
bool ht_cost_parse(const char *name, ht_cost_t *out);
const char *ht_cost_name(ht_cost_t c);

#endif /* HEAPTRAIL_EXPORT_H */
