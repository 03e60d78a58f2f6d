/* stack_cache.c - the agent's stack cache must never confuse two call
 * chains, however alike (agent/unwind.h: it reuses a stack when the same
 * return addresses sit in the same stack slots).
 *
 *   via_a -> leaf: 3000 x malloc(8), freed       (same frame size as via_b:
 *   via_b -> leaf: 2000 x malloc(8), freed        leaf's malloc call sits at
 *                                                 the same stack address)
 *   via_vla(n) -> leaf_vla: 1500 x malloc(16) with n cycling over 3 sizes of
 *                 a variable-length array, freed (a frame of changing size)
 *   via_a -> leaf, via_b -> leaf: first alternating, then two a's per b.
 *   rec_a/rec_b -> shape_leaf: 16 shapes of an 11-level mutual recursion,
 *                 200 x malloc(1000 + shape) each, freed: the function at
 *                 depth d is rec_a when bit d % 4 of the shape is set (the
 *                 agent learns frame sizes from some chains and derives the
 *                 others' slots from them)
 * Totals: 9700 allocations, 9700 frees, 3000*8 + 2000*8 + 1500*16 +
 * 200*(16*1000 + 120) = 3288000 bytes; nothing leaked. Each leaf's
 * callers are known by construction.
 */
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

static void *volatile sink;

NOINLINE static void leaf(void)
{
	sink = malloc(8);
	free(sink);
}

NOINLINE static void via_a(int x)
{
	volatile int pad[4] = {x, x, x, x};
	leaf();
	(void)pad[0];
}

NOINLINE static void via_b(int x)
{
	volatile int pad[4] = {x, x, x, x};
	leaf();
	(void)pad[1];
}

NOINLINE static void leaf_vla(void)
{
	sink = malloc(16);
	free(sink);
}

NOINLINE static void via_vla(int n)
{
	volatile char buf[n];
	buf[0] = (char)n;
	leaf_vla();
	(void)buf[0];
}

NOINLINE static void shape_leaf(unsigned shape)
{
	sink = malloc(1000 + shape);
	free(sink);
}

static void rec_a(int depth, unsigned shape);
static void rec_b(int depth, unsigned shape);

/* Calls the function of depth d for shape; the volatile read after the
 * call keeps it from being a tail call (a frame of its own). */
#define DESCEND(d, shape)                                                      \
	do {                                                                   \
		if (((shape) >> ((d) % 4)) & 1)                                \
			rec_a(d, shape);                                       \
		else                                                           \
			rec_b(d, shape);                                       \
	} while (0)

NOINLINE static void rec_a(int depth, unsigned shape)
{
	volatile int pad = depth;
	if (depth == 0)
		shape_leaf(shape);
	else
		DESCEND(depth - 1, shape);
	(void)pad;
}

NOINLINE static void rec_b(int depth, unsigned shape)
{
	volatile int pad[2] = {depth, depth};
	if (depth == 0)
		shape_leaf(shape);
	else
		DESCEND(depth - 1, shape);
	(void)pad[1];
}

int main(void)
{
	/* 1000 alternations: a, b, a, b ... */
	for (int i = 0; i < 2000; i++) {
		if (i % 2)
			via_b(i);
		else
			via_a(i);
	}
	/* two via_a per via_b: 2000 more via_a, 1000 more via_b */
	for (int i = 0; i < 3000; i++) {
		if (i % 3 == 2)
			via_b(i);
		else
			via_a(i);
	}
	for (int i = 0; i < 1500; i++)
		via_vla(16 + 64 * (i % 3));
	for (unsigned i = 0; i < 3200; i++)
		DESCEND(10, i % 16);
	return 0;
}
