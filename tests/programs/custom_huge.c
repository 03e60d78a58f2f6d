/* custom_huge.c - heaptrail.h allocations of sizes no block can have
 * (tests/e2e/test_programs.py, custom.huge_sizes): the agent refuses them,
 * as malloc refuses sizes above PTRDIFF_MAX, and the totals stay the sum
 * of the sites (a size of SIZE_MAX used to wrap the total to a small
 * number while its site showed 16 EiB).
 *
 *   malloc(100), freed
 *   heaptrail_alloc(SIZE_MAX): refused; its heaptrail_free is then a free
 *             of a block never recorded (ignored_frees 1)
 *   heaptrail_alloc(64), then heaptrail_realloc to PTRDIFF_MAX + 1: the
 *             64 B block is freed, the new one refused
 *   heaptrail_pool_alloc(SIZE_MAX - 5): refused
 * Totals: 2 allocations, 164 B, 2 frees, nothing leaked.
 */
#include <stdint.h>
#include <stdlib.h>

#include "heaptrail.h"

static char buf[64], buf2[64], buf3[64];
static int pool;

int main(void)
{
	char *a = malloc(100);
	heaptrail_alloc(buf, SIZE_MAX);
	heaptrail_free(buf);
	heaptrail_alloc(buf2, 64);
	heaptrail_realloc(buf2, buf3, (size_t)PTRDIFF_MAX + 1);
	heaptrail_pool_create(&pool, "huge");
	heaptrail_pool_alloc(&pool, buf, SIZE_MAX - 5);
	free(a);
	return 0;
}
