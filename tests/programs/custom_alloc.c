/* custom_alloc.c - a program's own allocator reported through heaptrail.h.
 *
 * Blocks are carved out of a static buffer (no malloc at all), and reported
 * with heaptrail_alloc / heaptrail_free / heaptrail_realloc:
 *   carve    50 x 40 bytes            (29 still live at exit: 1160 bytes)
 *   release  frees 20 of them
 *   grow     one of the 30 others becomes a 200-byte block: 1 free + 1 alloc
 * Totals: 51 allocations, 21 frees, 2200 bytes; leaked 30 blocks, 1360 bytes.
 * memcheck sees none of it (no malloc): counts by construction only.
 * Without the agent every heaptrail_* call returns -1 and does nothing.
 */
#include "heaptrail.h"

static unsigned char pool[64 * 1024];
static size_t used;
static void *blocks[50];

static void *carve_bytes(size_t n)
{
	void *p = pool + used;
	used += (n + 15) & ~(size_t)15;
	return p;
}

__attribute__((noinline)) static void carve(void)
{
	for (int i = 0; i < 50; i++) {
		blocks[i] = carve_bytes(40);
		heaptrail_alloc(blocks[i], 40);
	}
}

__attribute__((noinline)) static void release(void)
{
	for (int i = 0; i < 20; i++)
		heaptrail_free(blocks[i]);
}

__attribute__((noinline)) static void grow(void)
{
	void *bigger = carve_bytes(200);
	heaptrail_realloc(blocks[20], bigger, 200);
	blocks[20] = bigger;
}

int main(void)
{
	carve();
	release();
	grow();
	return 0;
}
