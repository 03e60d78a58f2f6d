/* badfree.h - frees of blocks that were not live: double frees, frees of
 * addresses the allocator never returned, mismatched deallocations (memcheck's
 * "Invalid free()" and "Mismatched free() / delete / delete []").
 *
 * Found in the pass (pass.h): a FREE whose address holds no live block, a
 * FREE whose function does not match its block's allocation (delete of a
 * new[] block, free of a new block), and the agent's BAD_FREE events (the
 * allocator aborted inside a free: they carry the free's stack). When some
 * free found no block, a second pass over the trace recovers the history of
 * those addresses: the block that was there, its allocation and its first
 * free.
 */
#ifndef HEAPTRAIL_BADFREE_H
#define HEAPTRAIL_BADFREE_H

#include <stdbool.h>
#include <stdint.h>

#include "analysis/pass.h"

enum ht_bad_kind {
	HT_BAD_DOUBLE = 1,   /* its block was freed already */
	HT_BAD_INVALID = 2,  /* not the start of a block the trace saw */
	HT_BAD_MISMATCH = 3, /* free/delete/delete[] of another function's block */
	HT_BAD_ABORTED = 4,  /* the allocator aborted in a free of a live block (heap damaged) */
};

/* How a block was freed: HT_FREE_* (trace_format.h), or this for realloc. */
#define HT_BAD_FREE_REALLOC 3

/* Details are kept for this many; the rest are counted. */
#define HT_BAD_KEEP 1000

typedef struct ht_bad_free {
	unsigned kind;	  /* HT_BAD_* */
	unsigned free_fn; /* HT_FREE_* or HT_BAD_FREE_REALLOC */
	uint64_t addr, time;
	uint32_t thread;   /* index into ht_trace_t.threads */
	uint64_t stack_id; /* the bad free's stack; 0: not recorded */
	bool aborted;	   /* the allocator aborted the program in it */
	/* the block concerned: the live one (mismatch, aborted), the last one
	 * at addr (double), the one addr points into (invalid), if known */
	bool have_block;
	uint64_t block_addr, size, alloc_time, alloc_stack, seq;
	unsigned alloc_fn; /* HT_FN_* */
	uint32_t alloc_thread;
	bool have_first_free; /* double: the free that freed it first */
	uint64_t first_free_time;
	uint32_t first_free_thread;
	unsigned first_free_fn;
	uint64_t first_free_stack; /* free_stacks=1; else 0 */
} ht_bad_free_t;

typedef struct ht_badfrees {
	uint64_t count[5];    /* by HT_BAD_* */
	uint64_t total;	      /* every kind */
	uint64_t unseen;      /* frees of blocks allocated before the trace
			       * began (fork child, start=off): not errors */
	ht_bad_free_t *item;  /* in time order, at most HT_BAD_KEEP */
	size_t n;
} ht_badfrees_t;

/* Registers the finder with p; *out is filled when the pass ends (NULL
 * for sampled traces, whose unmatched frees are unsampled blocks). */
int ht_badfree_attach(ht_pass_t *p, const ht_trace_t *t, ht_badfrees_t **out);
void ht_badfrees_free(ht_badfrees_t *b);

/* Names for the report: "free", "delete", "delete[]", "realloc"; "malloc",
 * "new", ... for HT_FN_*; "double free", "invalid free", ... */
const char *ht_bad_free_fn_name(unsigned free_fn);
const char *ht_bad_alloc_fn_name(unsigned fn);
const char *ht_bad_kind_name(unsigned kind);

#endif /* HEAPTRAIL_BADFREE_H */
