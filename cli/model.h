/* model.h - replay a loaded trace into per-site and total statistics.
 *
 * A site is one distinct allocation stack (one stack id). Counting follows
 * valgrind memcheck: a REALLOC event is one free plus one allocation. Frees
 * of addresses the model never saw allocated are ignored (the agent lets
 * some allocations through untracked, e.g. inside signal handlers).
 */
#ifndef HEAPTRAIL_MODEL_H
#define HEAPTRAIL_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "reader.h"
#include "symbolize.h"

typedef struct ht_site {
	uint64_t stack_id;
	const ht_stack_t *stack; /* NULL: id 0 or never defined (frames unknown) */
	uint64_t allocations;
	uint64_t bytes_allocated;
	uint64_t frees;		/* blocks of this site freed */
	uint64_t peak_bytes;	/* live bytes at the moment of the global peak */
	uint64_t leaked_blocks; /* live at the end of the trace */
	uint64_t leaked_bytes;
	uint64_t temporary;	/* freed before their thread allocated again */
	uint64_t largest;	/* largest single allocation */
	uint64_t first_time;	/* first allocation: picks modules for its frames */
	/* replay scratch */
	uint64_t live_bytes, live_blocks;
} ht_site_t;

typedef struct ht_totals {
	uint64_t allocations, frees, bytes_allocated;
	uint64_t peak_heap_bytes, peak_time_ns;
	uint64_t peak_rss_bytes; /* 0 when unknown */
	uint64_t leaked_blocks, leaked_bytes;
	uint64_t temporary;
	uint64_t duration_ns;
	double allocs_per_second;
	uint64_t ignored_frees;	 /* frees of blocks never seen allocated */
	uint64_t reused_addresses; /* allocations over a block never freed */
	uint64_t reallocs;
} ht_totals_t;

typedef struct ht_model {
	const ht_trace_t *trace;
	ht_site_t *sites;
	size_t nsites;
	ht_totals_t totals;
} ht_model_t;

/* Replay t (which must outlive the model). Returns 0 or -ENOMEM. */
int ht_model_build(const ht_trace_t *t, ht_model_t **out);
void ht_model_free(ht_model_t *m);

/* Orders for ht_model_sort. */
typedef enum ht_site_order {
	HT_BY_BYTES,	 /* bytes_allocated */
	HT_BY_COUNT,	 /* allocations */
	HT_BY_PEAK,	 /* peak_bytes */
	HT_BY_LEAKED,	 /* leaked_bytes */
	HT_BY_TEMPORARY, /* temporary */
} ht_site_order_t;

/* Fill idx (room for m->nsites) with the indices of sites whose key is
 * non-zero, largest first (ties: more bytes, then lower stack id). Returns
 * how many. */
size_t ht_model_sort(const ht_model_t *m, ht_site_order_t order, size_t *idx);

/* Expand a site's stack into source frames, leaf first, inlined frames
 * before their caller. sym may be NULL: frames then carry only module and
 * address. *frames (capacity *cap) grows as needed and belongs to the
 * caller. Returns the number of frames, or -ENOMEM. */
long ht_model_frames(const ht_model_t *m, ht_symbolizer_t *sym, const ht_site_t *site,
		     ht_frame_t **frames, size_t *cap);

/* Declare every module of the trace to the symbolizer. */
void ht_model_add_modules(const ht_model_t *m, ht_symbolizer_t *sym);

#endif /* HEAPTRAIL_MODEL_H */
