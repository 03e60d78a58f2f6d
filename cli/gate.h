/* gate.h - conditions that fail a CI job: `heaptrail check TRACE --fail-if
 * EXPR` (limits on one trace) and `heaptrail diff BASE NEW --fail-if EXPR`
 * (limits on the change).
 *
 * EXPR is [site:FUNC ]METRIC OP VALUE. METRIC is a field name of the JSON
 * report (docs/JSON.md): a total (peak_heap_bytes, definite_bytes, ...), or
 * with site:FUNC a site figure (bytes_allocated, peak_bytes, ...) summed
 * over the sites whose stack passes through function FUNC. OP is >, >=,
 * <, <=, == or !=. VALUE is a number with an optional binary suffix (K,
 * KiB, M, MiB, G, GiB; opts.h); with a sign (+10%, +1MiB, -5%) it is a
 * change from BASE to NEW, in percent of BASE or in units, and only diff
 * takes it; without one it is NEW's figure (the trace's, for check).
 *
 * The figures are those of `heaptrail report` (the model) and its leak
 * classes (ht_leaks_build); a figure the trace does not know (temporary
 * allocations of a sampled trace, leak classes of a trace without the exit
 * check, a function no site passes through) makes its condition hold, with
 * the reason: what could not be checked does not pass.
 */
#ifndef HEAPTRAIL_GATE_H
#define HEAPTRAIL_GATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "analysis/leaks.h"
#include "analysis/model.h"
#include "analysis/symbolize.h"

typedef enum { HT_GATE_COUNT, HT_GATE_SIZE, HT_GATE_TIME } ht_gate_kind_t;

typedef struct ht_gate_metric {
	const char *name; /* the JSON report's field */
	ht_gate_kind_t kind;
	bool total, site; /* whether it is a total, a site figure */
} ht_gate_metric_t;

extern const ht_gate_metric_t ht_gate_metrics[]; /* ends with a NULL name */
#define HT_GATE_NMETRICS 23

typedef enum { HT_GATE_GT, HT_GATE_GE, HT_GATE_LT, HT_GATE_LE, HT_GATE_EQ, HT_GATE_NE } ht_gate_op_t;

typedef enum {
	HT_GATE_VALUE,	 /* NEW's figure (the trace's) */
	HT_GATE_CHANGE,	 /* NEW - BASE */
	HT_GATE_PERCENT, /* (NEW - BASE) / BASE * 100 */
} ht_gate_mode_t;

typedef struct ht_gate {
	const char *expr; /* as given (not owned) */
	char *site;	  /* FUNC of site:FUNC, or NULL (owned) */
	int metric;	  /* index into ht_gate_metrics */
	ht_gate_op_t op;
	ht_gate_mode_t mode;
	double value; /* signed for a change */
} ht_gate_t;

/* Parse expr into g. Returns 0, or -EINVAL with why in err. */
int ht_gate_parse(const char *expr, ht_gate_t *g, char *err, size_t errlen);
void ht_gate_free(ht_gate_t *g);

/* One trace's figures for the metrics: value and whether it is known. */
typedef struct ht_gate_figs {
	double v[HT_GATE_NMETRICS];
	bool known[HT_GATE_NMETRICS];
	size_t sites; /* site:FUNC: the sites summed */
} ht_gate_figs_t;

/* A trace's figures for gate g: its totals, or the sites through g->site.
 * lk: its leak classes (ht_leaks_build); temporary_known: not sampled, not
 * a summary. Returns 0 or -ENOMEM. */
int ht_gate_figs(const ht_gate_t *g, const ht_model_t *m, ht_symbolizer_t *sym,
		 const ht_leaks_t *lk, bool temporary_known, ht_gate_figs_t *f);

typedef enum { HT_GATE_PASS, HT_GATE_FAIL, HT_GATE_UNKNOWN } ht_gate_outcome_t;

typedef struct ht_gate_result {
	ht_gate_outcome_t outcome;
	char detail[256]; /* the figures, or why the figure is unknown */
} ht_gate_result_t;

/* Evaluate g on base (NULL for check) and new. */
void ht_gate_eval(const ht_gate_t *g, const ht_gate_figs_t *base, const ht_gate_figs_t *new_,
		  ht_gate_result_t *r);

/* The results as text lines ("FAIL  EXPR: detail") and a closing line, and
 * as JUnit XML: one testsuite named suite, one testcase per gate. */
void ht_gate_print(FILE *out, const ht_gate_t *g, const ht_gate_result_t *r, size_t n);
int ht_gate_junit(FILE *out, const char *suite, const ht_gate_t *g, const ht_gate_result_t *r,
		  size_t n);

/* Whether any condition holds (or could not be checked). */
bool ht_gate_any_failed(const ht_gate_result_t *r, size_t n);

/* The exit status of `check` and `diff --fail-if` when a condition holds:
 * above 0 (nothing holds), 1 (a trace unreadable), 2 (usage error). */
#define HT_EXIT_GATE 3

/* One trace of a gate run: its model, symbolizer (may be NULL), leak
 * classes (may be NULL: the classes are then unknown). */
typedef struct ht_gate_side {
	const ht_model_t *m;
	ht_symbolizer_t *sym;
	const ht_leaks_t *lk;
	bool temporary_known; /* not sampled, not a summary */
} ht_gate_side_t;

/* Evaluate the n gates on base (NULL for check) and new_, print the
 * results on out and, when junit is not NULL, write them there as JUnit
 * XML (suite: the testsuite's name). Returns 0 when no condition holds,
 * HT_EXIT_GATE when one does, 1 after printing why the figures or the XML
 * could not be made. */
int ht_gates_run(const ht_gate_t *g, size_t n, const ht_gate_side_t *base,
		 const ht_gate_side_t *new_, FILE *out, const char *suite, const char *junit);

#endif /* HEAPTRAIL_GATE_H */
