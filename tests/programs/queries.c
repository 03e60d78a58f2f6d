/* queries.c - heaptrail_stats() (heaptrail.h) against figures known by
 * construction, for tests/e2e/test_summary.py. Prints one line per query,
 * "step allocations frees bytes_allocated live_bytes live_blocks peak rc",
 * all measured before any printing (stdio allocates its buffer).
 *
 *   start  before anything
 *   two    after malloc(1000), malloc(3000): +2 allocations, +4000 bytes,
 *          live +4000 in +2 blocks
 *   freed  after free(3000-byte block): +1 free, live back to start+1000;
 *          the peak stays at least start+4000
 *   grown  after realloc(1000-byte block, 2000): +1 allocation, +1 free,
 *          live start+2000 in start+1 blocks
 *   end    after free of the last block: live as at start
 *   pooled after 3 blocks of 16 B allocated into a pool (heaptrail.h) and
 *          the pool reset: +3 allocations, +48 bytes, +3 frees (the reset
 *          frees them), live as at start
 */
#include <stdio.h>
#include <stdlib.h>

#include "heaptrail.h"

#define STEPS 6

int main(void)
{
	struct heaptrail_stats s[STEPS];
	int rc[STEPS];
	for (int i = 0; i < STEPS; i++)
		s[i].size = sizeof s[i];
	rc[0] = heaptrail_stats(&s[0]);
	char *a = malloc(1000);
	char *b = malloc(3000);
	rc[1] = heaptrail_stats(&s[1]);
	free(b);
	rc[2] = heaptrail_stats(&s[2]);
	a = realloc(a, 2000);
	rc[3] = heaptrail_stats(&s[3]);
	free(a);
	rc[4] = heaptrail_stats(&s[4]);
	static char arena[64];
	static int pool;
	heaptrail_pool_create(&pool, "queries");
	for (int i = 0; i < 3; i++)
		heaptrail_pool_alloc(&pool, arena + 16 * i, 16);
	heaptrail_pool_reset(&pool);
	rc[5] = heaptrail_stats(&s[5]);
	heaptrail_pool_destroy(&pool);
	static const char *names[STEPS] = {"start", "two", "freed", "grown", "end", "pooled"};
	for (int i = 0; i < STEPS; i++)
		printf("%s %llu %llu %llu %llu %llu %llu %d\n", names[i],
		       (unsigned long long)s[i].allocations, (unsigned long long)s[i].frees,
		       (unsigned long long)s[i].bytes_allocated, (unsigned long long)s[i].live_bytes,
		       (unsigned long long)s[i].live_blocks, (unsigned long long)s[i].peak_live_bytes,
		       rc[i]);
	return 0;
}
