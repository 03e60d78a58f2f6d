/* pool_many.c - pool resets and a destroy among many live blocks
 * (tests/e2e/test_pools_snapshots.py, pools.many_live). A server's shape:
 * a long-lived heap of CACHE blocks, and a request arena reset after each
 * request. The agent's live-block table must free exactly each pool's
 * blocks, at a cost of that pool's blocks, not of the whole table's.
 *
 *   cache      1 + 200,000 blocks malloc'd (the array and 32 B each), freed
 *              after the queries
 *   "request"  20,000 rounds of 8 x 64 B at the same 8 addresses, reset
 *              after each; in every 4th round one block is freed on its own
 *              (heaptrail_free) first: 160,000 allocations, 5,000 frees,
 *              155,000 freed by resets
 *   "keep"     one 16 B block per round at a new address (20,000), never
 *              reset; destroyed after the first query
 * heaptrail_stats after the rounds: live = the cache and "keep" (200,001 +
 * 20,000 blocks); after the destroy: the cache alone. Exit status 0 when
 * both are right, else 10 + the query that is not (no stdio: the counts
 * are checked here, before anything else allocates).
 */
#include <stdint.h>
#include <stdlib.h>

#include "heaptrail.h"

#define CACHE 200000
#define ROUNDS 20000

static char arena[8 * 64];
static char keep_mem[ROUNDS * 16];
static int request_pool, keep_pool;

int main(void)
{
	void **cache = malloc(CACHE * sizeof *cache);
	for (int i = 0; i < CACHE; i++)
		cache[i] = malloc(32);
	struct heaptrail_stats s0 = {sizeof s0, 0, 0, 0, 0, 0, 0};
	if (heaptrail_stats(&s0))
		return 9; /* no live table */
	heaptrail_pool_create(&request_pool, "request");
	heaptrail_pool_create(&keep_pool, "keep");
	for (int r = 0; r < ROUNDS; r++) {
		for (int j = 0; j < 8; j++)
			heaptrail_pool_alloc(&request_pool, arena + 64 * j, 64);
		heaptrail_pool_alloc(&keep_pool, keep_mem + 16 * r, 16);
		if (r % 4 == 0)
			heaptrail_free(arena + 64 * (r % 8));
		heaptrail_pool_reset(&request_pool);
	}
	struct heaptrail_stats s1 = {sizeof s1, 0, 0, 0, 0, 0, 0};
	heaptrail_stats(&s1);
	heaptrail_pool_destroy(&keep_pool);
	struct heaptrail_stats s2 = {sizeof s2, 0, 0, 0, 0, 0, 0};
	heaptrail_stats(&s2);
	int rc = 0;
	if (s1.live_blocks != s0.live_blocks + ROUNDS ||
	    s1.live_bytes != s0.live_bytes + ROUNDS * 16 ||
	    s1.frees - s0.frees != ROUNDS / 4 + ROUNDS * 8 - ROUNDS / 4)
		rc = 11;
	else if (s2.live_blocks != s0.live_blocks || s2.live_bytes != s0.live_bytes ||
		 s2.frees - s1.frees != ROUNDS)
		rc = 12;
	for (int i = 0; i < CACHE; i++)
		free(cache[i]);
	free(cache);
	return rc;
}
