/* pool_reuse.c - a pool object used again after its destroy, without a
 * new heaptrail_pool_create (tests/e2e/test_pools_snapshots.py,
 * pools.reused_after_destroy).
 *
 *   "first"  created, 2 x 32 B, destroyed
 *   then     1 x 16 B allocated from the same pool object, never freed:
 *            a new pool (unnamed), live 1 block, 16 B, not destroyed
 */
#include "heaptrail.h"

static char mem[128];
static int pool;

int main(void)
{
	heaptrail_pool_create(&pool, "first");
	heaptrail_pool_alloc(&pool, mem, 32);
	heaptrail_pool_alloc(&pool, mem + 32, 32);
	heaptrail_pool_destroy(&pool);
	heaptrail_pool_alloc(&pool, mem, 16);
	return 0;
}
