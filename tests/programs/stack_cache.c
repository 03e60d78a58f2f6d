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
 * Totals: 6500 allocations, 6500 frees, 3000*8 + 2000*8 + 1500*16 = 64000
 * bytes; nothing leaked. Each leaf's caller is known by construction.
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
	return 0;
}
