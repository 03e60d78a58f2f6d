/* pass.h - one reading of a trace feeding every analysis that needs it.
 *
 * Each analysis (the heap model, tags and phases, resources, the function
 * profile) registers a consumer: the event types it needs beyond the heap
 * events (HT_MERGE_* flags), whether it wants the heap events and the
 * table of live blocks, and its callbacks. ht_pass_run then merges the
 * trace once, with the union of the flags, and hands each event to the
 * consumers that asked for its type, in registration order.
 *
 * The pass keeps the one table of live blocks (the model's rules: a free of
 * an unknown block is ignored, an allocation over a live block drops that
 * block, a REALLOC is a free then an allocation), the allocation numbers per
 * thread, the sites (one per distinct stack id, in order of first
 * allocation) and the sampling weight of every block (ht_pass_weigh), so
 * that every consumer sees the same heap.
 */
#ifndef HEAPTRAIL_PASS_H
#define HEAPTRAIL_PASS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/reader.h"

/* A live block, as the pass hands it out: a copy, unpacked from the table
 * (pass.c keeps each block in 24 bytes). */
typedef struct ht_live {
	uint64_t addr, size;
	uint64_t time;	 /* allocated at */
	uint64_t seq;	 /* its thread's allocation number (trace_format.h) */
	double w;	 /* blocks it stands for: 1, or 1/p when sampled (ht_pass_weigh) */
	uint32_t site;	 /* ht_pass_site_stack */
	uint32_t thread; /* index into ht_trace_t.threads */
	uint32_t id;	 /* its number in the table while it is live (ht_pass_live_get) */
	uint32_t tag;	 /* one consumer's own word (ht_pass_tag), else 0 */
	uint8_t fn;	 /* the allocating function, HT_FN_* */
} ht_live_t;

/* What a heap event did to the live blocks (consumers with `live` set). */
typedef struct ht_heap_step {
	/* FREE: the block freed, or NULL when it was never seen allocated;
	 * ALLOC/REALLOC: a block live at the same address, dropped (its free
	 * went unrecorded), or NULL. A copy: the table no longer holds it. */
	const ht_live_t *gone;
	/* ALLOC/REALLOC: the new block (a copy; it is in the table until a
	 * later event frees it) */
	const ht_live_t *block;
	bool new_site;	/* ALLOC/REALLOC: the first block of its site */
	double var;	/* ALLOC/REALLOC: its weight's variance factor (ht_pass_weigh) */
} ht_heap_step_t;

typedef struct ht_pass ht_pass_t;

typedef struct ht_pass_consumer {
	unsigned flags; /* HT_MERGE_*: the event types it needs beyond the heap's */
	bool heap;	/* it gets ALLOC, FREE, REALLOC and RSS events */
	bool live;	/* ... with their ht_heap_step_t (implies heap) */
	/* every event it asked for; st is NULL unless `live`. Non-zero ends
	 * the pass, and ht_pass_run returns it. */
	int (*on_event)(void *ctx, const ht_event_t *ev, const ht_heap_step_t *st);
	/* after the last event (the table then holds the blocks live at the
	 * end): may be NULL */
	int (*on_end)(void *ctx);
	/* by ht_pass_free, whether the pass ran or not: may be NULL */
	void (*fini)(void *ctx);
	void *ctx;
	/* it keeps a word per live block (ht_pass_tag): one consumer per pass */
	bool tags;
} ht_pass_consumer_t;

/* A pass over t (which must outlive it). Returns 0 or -ENOMEM. */
int ht_pass_new(const ht_trace_t *t, ht_pass_t **out);
/* Register c (copied). Returns 0 or -ENOMEM (c->fini is then called). */
int ht_pass_add(ht_pass_t *p, const ht_pass_consumer_t *c);
/* One merge of the trace through every consumer, then their on_end. Once
 * only. Returns 0, -ENOMEM or a consumer's error. */
int ht_pass_run(ht_pass_t *p);
void ht_pass_free(ht_pass_t *p);

/* The same pass over a trace that grows (ht_reader_follow), instead of
 * ht_pass_run: ht_pass_follow once, then each ht_pass_advance (after an
 * ht_reader_follow_poll) hands the consumers the events up to limit
 * (ht_merge_follow); ht_pass_finish calls their on_end. The table and
 * sites are those of the events handed so far. */
int ht_pass_follow(ht_pass_t *p);
int ht_pass_advance(ht_pass_t *p, uint64_t limit);
int ht_pass_finish(ht_pass_t *p);

/* Merges ht_pass_run has made in this process (for measurements). */
extern unsigned long ht_pass_merges;

/* ---- the shared heap (valid during the callbacks) ------------------------------ */

/* Whether a block is live at addr; *out (may be NULL) gets it. */
bool ht_pass_find(const ht_pass_t *p, uint64_t addr, ht_live_t *out);
/* The live blocks have ids below ht_pass_live_ids; ht_pass_live_get gives
 * the one of that id, or false when none has it now. */
size_t ht_pass_live_ids(const ht_pass_t *p);
bool ht_pass_live_get(const ht_pass_t *p, size_t id, ht_live_t *out);
/* The word of the live block of that id, for the consumer that asked for
 * them (`tags`); 0 when the block came. NULL when nobody asked. */
uint32_t *ht_pass_tag(ht_pass_t *p, uint32_t id);
size_t ht_pass_nlive(const ht_pass_t *p);
/* Allocations thread has made so far: a block freed while its seq is
 * still this was freed before its thread allocated again (temporary). */
uint64_t ht_pass_thread_seq(const ht_pass_t *p, uint32_t thread);
/* The same for every thread: an array indexed by thread, valid from the
 * first event on. */
const uint64_t *ht_pass_thread_seqs(const ht_pass_t *p);
/* The stack id of a site. */
uint64_t ht_pass_site_stack(const ht_pass_t *p, uint32_t site);

/* ---- sampling weights (docs/INTERNALS.md) ---------------------------------------- */

/* A recorded block of size bytes in a trace sampled at mean rate R was
 * sampled with probability p = 1 - exp(-size/R): it stands for *w = 1/p
 * blocks, and adds *var = (1-p)/p^2 per unit of x^2 to a sum's variance.
 * Rate 0 (exact trace) or size 0: 1 and 0. */
void ht_pass_weigh(double rate, uint64_t size, double *w, double *var);

/* llround for x >= 0 (0 for less), without a libm call. */
static inline uint64_t ht_round_u64(double x)
{
	if (!(x > 0))
		return 0;
	/* below 2^53 x - floor(x) is exact; above it every double is whole */
	if (x >= 9007199254740992.0)
		return x >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t)x;
	uint64_t i = (uint64_t)x;
	return i + (x - (double)i >= 0.5);
}

/* The bytes a block stands for: its size, or size/p rounded when sampled. */
static inline uint64_t ht_live_wsize(const ht_live_t *b, double rate)
{
	return rate ? ht_round_u64((double)b->size * b->w) : b->size;
}

#endif /* HEAPTRAIL_PASS_H */
