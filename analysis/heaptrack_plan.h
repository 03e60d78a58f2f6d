/* heaptrack_plan.h - what heaptrack's format (report/heaptrack.c) must know
 * about an allocation before it writes the allocation's line: whether the
 * block is a temporary to write as a `+ k` `- k` pair, and where the heap
 * first reached its peak (report/heaptrack.c's invariants 2 and 3).
 *
 * Both depend on later events (the block's free, the rest of the run), so
 * the format takes two passes over the trace, as heaptrack_print does: this
 * consumer rides on the model's pass, the writer is a consumer of the
 * second. Events are numbered as ht_merge_new gives them (heap events and
 * RSS samples, a REALLOC as its FREE half then itself), from 0.
 */
#ifndef HEAPTRAIL_HEAPTRACK_PLAN_H
#define HEAPTRAIL_HEAPTRACK_PLAN_H

#include <stdint.h>

#include "analysis/pass.h"
#include "analysis/reader.h"

typedef struct ht_hk_plan {
	/* bit k: event k allocates a temporary block (freed before its
	 * thread allocated again) whose life does not span peak_ord */
	uint8_t *pull;
	uint64_t nevents;   /* events numbered (at most 2 * t->nevents + 1) */
	uint64_t peak_ord;  /* the first event at which the heap reached the
			     * model's peak (UINT64_MAX: none) */
	uint64_t rescue_ord; /* the first temporary freed across peak_ord, to
			      * be written at the peak; UINT64_MAX: none */
} ht_hk_plan_t;

/* Register the plan on p, the pass that builds the model: *peak is the
 * model's totals.peak_heap_bytes, which the model raises as the pass goes
 * (the final value decides peak_ord). *out is complete once the pass has
 * run; free it with ht_hk_plan_free whatever happened. Returns 0 or
 * -ENOMEM. */
int ht_hk_plan_attach(ht_pass_t *p, const ht_trace_t *t, const uint64_t *peak, ht_hk_plan_t **out);
void ht_hk_plan_free(ht_hk_plan_t *pl);

#endif /* HEAPTRAIL_HEAPTRACK_PLAN_H */
