/* blocks.h - every block of a trace summed by what the HTML report's
 * filters ask of a block, so that they combine per block: its site, its
 * allocating thread, the timeline bucket it was born in and the one it died
 * in, its lifetime class, whether it was a temporary allocation, and whether
 * it was live at the highest heap of its birth's and its death's buckets.
 *
 * One consumer of a pass (analysis/pass.h) with the live-block table. Its
 * buckets are the model's timeline's (ht_model_build_timed): n of equal
 * width over [0, max(last event time, 1)]. A row holds the blocks that
 * share all those keys, weighted (1/p each in a sampled trace) with the
 * variances of the weighted sums. From the rows:
 *   allocated in buckets [x, y]    x <= born <= y
 *   live at the end of bucket t    born <= t < died
 *   live at the high of bucket t   born < t < died, or born == t and
 *                                  HT_BLK_HIGH_BORN, or died == t > born
 *                                  and HT_BLK_HIGH_DIED
 * The high of a bucket is the first event in it after which the heap is
 * the highest it is after any event of the bucket (the model timeline's
 * max_bytes at max_time_ns); the global peak is the high of the model
 * timeline's peak bucket. A block allocated over a live one drops that one
 * (its free went unrecorded): it dies then, neither freed nor temporary.
 */
#ifndef HEAPTRAIL_BLOCKS_H
#define HEAPTRAIL_BLOCKS_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/reader.h"

#define HT_BLK_TEMPORARY 1 /* freed before its thread allocated again */
#define HT_BLK_HIGH_BORN 2 /* live at the high of its birth's bucket */
#define HT_BLK_HIGH_DIED 4 /* (died > born) live at the high of its death's bucket */

#define HT_BLK_LIFE_CLASSES 65 /* lifetime 0 ns, then [2^(k-1), 2^k) ns */
#define HT_BLK_SIZE_CLASSES 65 /* size 0, then [2^(k-1), 2^k) bytes */

typedef struct ht_block_row {
	uint32_t site;	 /* the pass's site (ht_blocks_t.site_stack) */
	uint32_t thread; /* index into ht_trace_t.threads */
	uint16_t born, died; /* buckets; died == nbuckets: live at the end */
	uint8_t life;	 /* lifetime class; a block live at the end lives to it */
	uint8_t flags;	 /* HT_BLK_* */
	double blocks, bytes;	      /* what its blocks stand for */
	double var_blocks, var_bytes; /* sampled: the sums' variances; else 0 */
} ht_block_row_t;

typedef struct ht_blocks {
	size_t nbuckets;
	uint64_t span_ns; /* max(last event time, 1) */
	ht_block_row_t *rows; /* in no order */
	size_t nrows;
	uint64_t *site_stack; /* the pass's site -> its stack id */
	size_t nsites;
	/* allocations by size class: blocks and bytes they stand for */
	double size_blocks[HT_BLK_SIZE_CLASSES], size_bytes[HT_BLK_SIZE_CLASSES];
} ht_blocks_t;

/* The rows of t's blocks over nbuckets (1..65535) buckets, as one consumer
 * of pass p: *out is filled once ht_pass_run(p) has returned 0; the caller
 * frees it in any case (ht_blocks_free). Returns 0, -EINVAL or -ENOMEM. */
struct ht_pass;
int ht_blocks_attach(struct ht_pass *p, const ht_trace_t *t, size_t nbuckets, ht_blocks_t **out);
void ht_blocks_free(ht_blocks_t *b);

#endif /* HEAPTRAIL_BLOCKS_H */
