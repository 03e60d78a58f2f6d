/* export.h - writers of the formats other tools read (heaptrail convert).
 *
 * Each format is one file in report/ with one entry in the table in
 * report/exporters.c. A writer reads the model (and through m->trace the
 * merged events) and writes to out; it returns 0 or a negative error code
 * (-EIO when the stream failed). sym may be NULL (frames then carry only
 * module and address).
 */
#ifndef HEAPTRAIL_EXPORT_H
#define HEAPTRAIL_EXPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "analysis/model.h"
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

typedef int (*ht_export_fn)(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym,
			    const ht_export_opts_t *o);

typedef struct ht_exporter {
	const char *name;  /* --format value */
	ht_export_fn write;
	const char *what;  /* one line for --help */
	bool needs_events; /* shows events over time: refused for a summary trace */
	bool has_cost;	   /* weighs stacks by one cost: takes --cost */
} ht_exporter_t;

/* The table, ended by an entry with name == NULL. */
extern const ht_exporter_t ht_exporters[];

/* The writers (one per report/<name>.c), as listed in the table. */
int ht_export_pprof(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym, const ht_export_opts_t *o);
int ht_export_folded(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym, const ht_export_opts_t *o);
int ht_export_events(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym, const ht_export_opts_t *o);

/* Cost of a site under c. */
uint64_t ht_site_cost(const ht_site_t *s, ht_cost_t c);
/* Parses a --cost value; false if unknown. */
bool ht_cost_parse(const char *name, ht_cost_t *out);
const char *ht_cost_name(ht_cost_t c);

#endif /* HEAPTRAIL_EXPORT_H */
