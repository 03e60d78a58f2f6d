/* names_full.c - more distinct names than the agent's name table holds
 * (tests/e2e/test_tags_phases.py, tags.names_full). No stdio, so that libc
 * allocates nothing of its own.
 *
 *   40,000 blocks of 16 B, each tagged "req_N" (a name per request), then
 *   freed: the table (32,766 names) fills up on the way
 *   "mypool"  a pool created after that, with one 4 B block (leaked)
 *   "snap"    a snapshot named after that: it must not read as the
 *             snapshot signal's
 *   "early"   a handle kind named before the table filled: acquired after
 *             it, never released, still listed
 * Totals: 40,000 allocations, 40,000 frees (and the pool's block, leaked).
 */
#include <stdlib.h>

#include "heaptrail.h"

#define N 40000

static char *name_of(char *buf, int i)
{
	char digits[16];
	int n = 0;
	do
		digits[n++] = (char)('0' + i % 10);
	while ((i /= 10));
	char *p = buf;
	*p++ = 'r', *p++ = 'e', *p++ = 'q', *p++ = '_';
	while (n)
		*p++ = digits[--n];
	*p = 0;
	return buf;
}

int main(void)
{
	static void *blocks[N];
	static char names[N][16];
	static int pool, pool_mem;
	heaptrail_handle_acquire("early", 1);
	for (int i = 0; i < N; i++) {
		blocks[i] = malloc(16);
		heaptrail_tag(blocks[i], name_of(names[i], i));
	}
	heaptrail_handle_acquire("early", 2);
	heaptrail_handle_release("early", 1);
	heaptrail_pool_create(&pool, "mypool");
	heaptrail_pool_alloc(&pool, &pool_mem, 4);
	heaptrail_snapshot("snap");
	for (int i = 0; i < N; i++)
		free(blocks[i]);
	return 0;
}
