/* deep - allocations made 50-100 frames down a recursion.
 *
 * Usage: deep [ITERATIONS [VARY_SIZES]]   (defaults 800000, 0)
 *
 * Each iteration recurses to a depth between 50 and 100 through two mutually
 * recursive functions (walk_a / walk_b, chosen per level by one of 8 bit
 * patterns, so there are ~400 distinct stack shapes - a realistic number for
 * a recursive-descent parser or tree walker). Every 16th level holds a block
 * across its recursive call; the leaf allocates and frees a few small blocks.
 * Built -O2 without frame pointers: a profiler must unwind 50-100+ frames
 * per event. Deterministic, prints nothing, frees everything.
 *
 * VARY_SIZES=1 makes each leaf block's size vary with the iteration (8-320
 * bytes) instead of being fixed per call site. Debian's heaptrack 1.4 cannot
 * take that variant: its heaptrack_interpret helper throws std::bad_alloc
 * after growing past 2 GiB (19 GiB without a limit) about 205k iterations in,
 * so the benchmark's default uses fixed sizes (see bench/README.md).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline, noclone))
#define BARRIER() __asm__ volatile("" ::: "memory")

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static inline uint32_t rnd(void)
{
	rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(rng_state >> 33);
}

volatile uint64_t sink;
static uint32_t size_mask; /* 0: fixed sizes; ~0: sizes vary with r */

NOINLINE static unsigned char *block_new(size_t n)
{
	unsigned char *p = malloc(n);
	if (!p)
		abort();
	memset(p, (int)(n & 0xff), n < 64 ? n : 64);
	BARRIER();
	return p;
}

NOINLINE static uint64_t leaf(uint32_t r)
{
	r &= size_mask;
	unsigned char *a = block_new(16 + (r & 63));
	unsigned char *b = block_new(32 + ((r >> 6) & 127));
	unsigned char *c = block_new(8 + ((r >> 13) & 15));
	uint64_t h = a[0] + b[1] + c[2];
	free(b);
	unsigned char *d = block_new(64 + ((r >> 17) & 255));
	h += d[3];
	free(a);
	free(d);
	free(c);
	BARRIER();
	return h;
}

static uint64_t walk_a(int depth, unsigned pattern, uint32_t r);
static uint64_t walk_b(int depth, unsigned pattern, uint32_t r);

static inline uint64_t descend(int depth, unsigned pattern, uint32_t r)
{
	if (depth == 0)
		return leaf(r);
	/* one of 8 patterns decides, per level, which function comes next */
	if ((pattern >> (depth % 8)) & 1)
		return walk_a(depth - 1, pattern, r);
	return walk_b(depth - 1, pattern, r);
}

NOINLINE static uint64_t walk_a(int depth, unsigned pattern, uint32_t r)
{
	unsigned char *held = NULL;
	if (depth % 16 == 0)
		held = block_new(48 + (depth & 31));
	uint64_t h = descend(depth, pattern, r);
	if (held) {
		h += held[0];
		free(held);
	}
	BARRIER();
	return h + (uint64_t)depth;
}

NOINLINE static uint64_t walk_b(int depth, unsigned pattern, uint32_t r)
{
	unsigned char *held = NULL;
	if (depth % 16 == 8)
		held = block_new(96 + (depth & 63));
	uint64_t h = descend(depth, pattern, r);
	if (held) {
		h += held[1];
		free(held);
	}
	BARRIER();
	return h * 3 + (uint64_t)depth;
}

static const unsigned patterns[8] = {0x00, 0xff, 0x55, 0xaa, 0x0f, 0xf0, 0x33, 0x96};

NOINLINE static void run(unsigned long iterations)
{
	for (unsigned long i = 0; i < iterations; i++) {
		uint32_t r = rnd();
		int depth = 50 + (int)(r % 51);
		sink += walk_a(depth, patterns[(r >> 8) & 7], r >> 3);
	}
	BARRIER();
}

int main(int argc, char **argv)
{
	unsigned long iterations = argc > 1 ? strtoul(argv[1], NULL, 0) : 800000ul;
	size_mask = argc > 2 && strtoul(argv[2], NULL, 0) ? ~0u : 0u;
	run(iterations);
	return 0;
}
