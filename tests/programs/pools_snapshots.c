/* pools_snapshots.c - heaptrail.h's pools and snapshots with figures known
 * by construction (tests/e2e/test_pools_snapshots.py checks them exactly).
 * No stdio, so that libc allocates nothing of its own. The pools carve a
 * static buffer with a bump pointer, like an arena allocator: a RESET
 * rewinds the pointer, so the next round reuses the same addresses.
 *
 *   make_a    malloc(100), never freed            (leaked: 1 block, 100 B)
 *   make_b    malloc(200), freed after the pools
 *   "keep"    pool, 5 x 32 B by keep_entry, never reset or destroyed
 *             (leaked: 5 blocks, 160 B)
 *   "parse"   pool, 3 rounds of 20 x 32 B by parse_node: reset after
 *             rounds 1 and 2, destroyed after round 3: 60 allocations,
 *             1,920 B, 2 resets, destroyed, 60 blocks freed by the pool ops
 *   snapshot "before", after round 1: 100 + 200 + 160 + 640 = 1,100 B live
 *             in 27 blocks; top sites parse_node (640 B), make_b (200 B),
 *             keep_entry (160 B)
 *   snapshot "after", at the end: 100 + 160 = 260 B in 6 blocks; top sites
 *             keep_entry (160 B), make_a (100 B)
 *   snapshot NULL (no name) right after: the same 260 B in 6 blocks
 *   with argument "signal": raise(SIGUSR2) last, for a run with the agent
 *             option snapshot_signal=12: a fourth snapshot, the signal's, of
 *             the same 260 B in 6 blocks (without the option it would kill us)
 * Totals: 67 allocations (1 + 1 + 5 + 60), 61 frees (60 + free(b)),
 * 2,380 B allocated, peak 1,100 B, leaked 6 blocks, 260 B.
 */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "heaptrail.h"

/* A bump allocator over a static buffer: the program's own memory, which
 * no malloc tool sees unless the program says so through heaptrail.h. */
typedef struct bump {
	unsigned char *base;
	size_t used, cap;
} bump_t;

static unsigned char keep_mem[1024], parse_mem[4096];
static bump_t keep_pool = { keep_mem, 0, sizeof(keep_mem) };
static bump_t parse_pool = { parse_mem, 0, sizeof(parse_mem) };

static void *bump_alloc(bump_t *b, size_t size)
{
	if (b->cap - b->used < size)
		abort();
	void *p = b->base + b->used;
	b->used += (size + 15) & ~(size_t)15;
	return p;
}

__attribute__((noinline)) static void *keep_entry(void)
{
	void *p = bump_alloc(&keep_pool, 32);
	heaptrail_pool_alloc(&keep_pool, p, 32); /* keep_entry */
	return p;
}

__attribute__((noinline)) static void *parse_node(void)
{
	void *p = bump_alloc(&parse_pool, 32);
	heaptrail_pool_alloc(&parse_pool, p, 32); /* parse_node */
	return p;
}

__attribute__((noinline)) static void parse_round(void)
{
	for (int i = 0; i < 20; i++)
		memset(parse_node(), i, 32);
}

__attribute__((noinline)) static void *make_a(void)
{
	return malloc(100); /* make_a */
}

__attribute__((noinline)) static void *make_b(void)
{
	return malloc(200); /* make_b */
}

static void *volatile sink;

int main(int argc, char **argv)
{
	sink = make_a();
	void *b = make_b();

	heaptrail_pool_create(&keep_pool, "keep");
	for (int i = 0; i < 5; i++)
		sink = keep_entry();

	heaptrail_pool_create(&parse_pool, "parse");
	parse_round();
	heaptrail_snapshot("before");
	for (int round = 0; round < 2; round++) {
		parse_pool.used = 0; /* every block of the pool dies here */
		heaptrail_pool_reset(&parse_pool);
		parse_round();
	}
	parse_pool.used = 0;
	heaptrail_pool_destroy(&parse_pool);

	free(b);
	heaptrail_snapshot("after");
	heaptrail_snapshot(NULL);
	if (argc > 1 && !strcmp(argv[1], "signal"))
		raise(SIGUSR2);
	return 0;
}
