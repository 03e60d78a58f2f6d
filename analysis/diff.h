/* diff.h - two traces compared: their totals, and their sites matched by
 * symbolized stack (`heaptrail diff BASE NEW`).
 *
 * Each trace is replayed by the model exactly as `heaptrail report` does,
 * so each side's figures are its report's (a sampled trace's estimates, a
 * summary trace's totals). A site's key is its stack, leaf first, as the
 * names of its frames: function (demangled) and the basename of its
 * module, so that a rebuild that moves lines still matches; with
 * HT_DIFF_BY_LINE also the basename of its source file and the line. A
 * frame without a function is named by module and offset. The sites of one
 * trace that share a key (stacks that differ only by inlining depth or by
 * addresses within one line) are summed into one row.
 */
#ifndef HEAPTRAIL_DIFF_H
#define HEAPTRAIL_DIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/model.h"
#include "analysis/symbolize.h"

typedef enum ht_diff_match {
	HT_DIFF_BY_FUNCTION, /* function names and modules */
	HT_DIFF_BY_LINE,     /* also file:line */
} ht_diff_match_t;

/* Sides of a diff. */
enum { HT_DIFF_BASE, HT_DIFF_NEW };

/* One trace: the caller loads it, builds its model and symbolizer. */
typedef struct ht_diff_side {
	const char *path;
	const ht_model_t *m;
	ht_symbolizer_t *sym; /* may be NULL: frames then by module and offset */
	bool temporary_known; /* not sampled, not a summary */
} ht_diff_side_t;

/* One key's figures in one trace: the sums over its sites. */
typedef struct ht_diff_figs {
	uint64_t allocations, bytes_allocated, frees, peak_bytes;
	uint64_t leaked_blocks, leaked_bytes, temporary;
} ht_diff_figs_t;

/* A key (a row of the diff) and its figures on both sides. */
typedef struct ht_diff_site {
	char *key;
	ht_diff_figs_t fig[2];
	uint32_t nsites[2]; /* sites of each trace summed here; 0: absent */
	uint32_t rep[2];    /* the largest of them (bytes allocated), UINT32_MAX: none */
	size_t next;	    /* hash chain (diff.c) */
} ht_diff_site_t;

typedef struct ht_diff {
	ht_diff_side_t side[2];
	ht_diff_match_t match;
	ht_diff_site_t *sites;
	size_t nsites;
} ht_diff_t;

/* Match the sites of d->side[0] and d->side[1] (set by the caller) by
 * d->match. Returns 0 or -ENOMEM. */
int ht_diff_build(ht_diff_t *d);
void ht_diff_free(ht_diff_t *d);

/* "new" (only in NEW), "gone" (only in BASE), "same" (every figure equal)
 * or "changed". */
const char *ht_diff_status(const ht_diff_t *d, const ht_diff_site_t *s);

/* Fill idx (room for d->nsites) with the rows whose figure `order` changed
 * (HT_BY_BYTES, HT_BY_COUNT, HT_BY_PEAK, HT_BY_LEAKED), largest change
 * first; all: every row, by the change in bytes allocated. Ties: the larger
 * change in allocations, then the key. Returns how many. */
size_t ht_diff_sort(const ht_diff_t *d, ht_site_order_t order, bool all, size_t *idx);

/* A figure of fig by order (HT_BY_TEMPORARY: temporary). */
uint64_t ht_diff_fig(const ht_diff_figs_t *f, ht_site_order_t order);

/* The side whose stack a row shows: NEW's when the row is there, else
 * BASE's. */
static inline int ht_diff_shown_side(const ht_diff_site_t *s)
{
	return s->nsites[HT_DIFF_NEW] ? HT_DIFF_NEW : HT_DIFF_BASE;
}

#endif /* HEAPTRAIL_DIFF_H */
