/* pool_phase.c - a pool whose block is realloc'd before the pool is
 * reset, then a pool reset of many blocks and a phase whose blocks all
 * outlive it: figures a sampled run must estimate, not take raw.
 *
 *   grow       pool P: pool_alloc 32 B, heaptrail_realloc to 64 B (the
 *              block stays in P), then reset P: nothing leaks
 *   arena      pool Q: 300 x pool_alloc 128 B, then reset Q (300 frees)
 *   in_phase   phase "ph": 300 x malloc(128), all live when it ends
 *              (net live change = bytes allocated = 38,400), freed after
 *   ------------------------------------------------------------------------
 *   602 allocations (2 in P, 300 in Q, 300 mallocs), 602 frees (1 by the
 *   realloc, 1 + 300 by the resets, 300 free calls), nothing leaked.
 *
 * Exit status 0. No stdio.
 */
#include <stdlib.h>

#include "heaptrail.h"

static char p_mem[128], q_mem[300 * 128];
static int pool_p, pool_q;
static void *volatile keep[300];

int main(void)
{
	heaptrail_pool_create(&pool_p, "P");
	heaptrail_pool_alloc(&pool_p, p_mem, 32);
	heaptrail_realloc(p_mem, p_mem + 64, 64);
	heaptrail_pool_reset(&pool_p);

	heaptrail_pool_create(&pool_q, "Q");
	for (int i = 0; i < 300; i++)
		heaptrail_pool_alloc(&pool_q, q_mem + 128 * i, 128);
	heaptrail_pool_reset(&pool_q);

	heaptrail_phase_begin("ph");
	for (int i = 0; i < 300; i++)
		keep[i] = malloc(128);
	heaptrail_phase_end("ph");
	for (int i = 0; i < 300; i++)
		free(keep[i]);
	return 0;
}
