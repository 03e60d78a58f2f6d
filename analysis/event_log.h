/* event_log.h - the allocation events of a trace one by one, for the
 * events export (report/events.c): a consumer of the pass (analysis/pass.h)
 * that hands each record to a callback as the pass makes it, so that
 * nothing grows with the number of events.
 *
 * It follows the pass's table of live blocks (the model's rules), so the
 * records add up to the model's totals: a FREE says the size of the block
 * it freed, a REALLOC (its free half folded into it) the size of the block
 * it replaced; a free of a block never seen allocated is still a record,
 * with its size unknown. A block at address 0 counts as never allocated.
 */
#ifndef HEAPTRAIL_EVENT_LOG_H
#define HEAPTRAIL_EVENT_LOG_H

#include <stdbool.h>
#include <stdint.h>

#include "analysis/pass.h"
#include "analysis/reader.h"

typedef struct ht_event_rec {
	const ht_event_t *ev; /* HT_EV_ALLOC, HT_EV_REALLOC or HT_EV_FREE */
	uint64_t id;	      /* its number among the records, from 0 */
	/* FREE: the freed block's size; REALLOC: the replaced block's */
	uint64_t size;
	bool known;	      /* that block was live (else size is 0) */
	bool stack_known;     /* ALLOC/REALLOC: the trace defines ev->stack_id */
	bool new_stack;	      /* ... and no record before used it */
} ht_event_rec_t;

/* Counts over the records, complete once the pass has run. */
typedef struct ht_event_log {
	uint64_t records, alloc, realloc, free;
	uint64_t unknown_frees;	  /* FREE records of blocks never seen */
	uint64_t unknown_prev;	  /* REALLOC records whose old block was never seen */
	uint64_t live_blocks;	  /* at the end */
} ht_event_log_t;

/* A record: return non-zero to end the pass (ht_pass_run returns it). */
typedef int (*ht_event_rec_fn)(void *ctx, const ht_event_rec_t *r);

/* Register the log on p: fn gets every record in time order; *out (owned
 * by the caller, which must outlive the run) gets the counts. Returns 0 or
 * -ENOMEM. */
int ht_event_log_attach(ht_pass_t *p, const ht_trace_t *t, ht_event_rec_fn fn, void *ctx,
			ht_event_log_t *out);

#endif /* HEAPTRAIL_EVENT_LOG_H */
