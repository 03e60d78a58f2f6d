/* many_live - holds many small blocks at once, for the agent's memory per
 * live block (the table the exit leak scan needs).
 *
 * Usage: many_live [N]   (default 5000000)
 *
 * Allocates N blocks of 16-64 bytes from four call sites in a loop (so
 * that stacks are few and the table is all that grows), keeps every one
 * in an array, frees every fourth, allocates those again, then frees all
 * but the array's last 1000 blocks (a leak) and exits. Deterministic.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline, noclone))

static uint64_t seed = 1;

static size_t next_size(void)
{
	seed = seed * 6364136223846793005ull + 1442695040888963407ull;
	return 16 + (seed >> 33) % 49;
}

NOINLINE static void *site_a(void) { return malloc(next_size()); }
NOINLINE static void *site_b(void) { return malloc(next_size()); }
NOINLINE static void *site_c(void) { return calloc(1, next_size()); }
NOINLINE static void *site_d(void) { return malloc(next_size()); }

static void *make(long i)
{
	void *p;
	switch (i & 3) {
	case 0: p = site_a(); break;
	case 1: p = site_b(); break;
	case 2: p = site_c(); break;
	default: p = site_d(); break;
	}
	if (p)
		memset(p, (int)i, 16);
	return p;
}

void *volatile *volatile held;

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 5000000;
	void **h = malloc((size_t)n * sizeof *h);
	if (!h)
		return 1;
	held = h;
	for (long i = 0; i < n; i++)
		h[i] = make(i);
	for (long i = 0; i < n; i += 4) {
		free(h[i]);
		h[i] = make(i + 1);
	}
	for (long i = 0; i + 1000 < n; i++)
		free(h[i]);
	return 0;
}
