/* fn_calls.c - function profiler program: call counts and heap per function
 * known by construction (built with -finstrument-functions, see Makefile).
 *
 *   function        calls   called from            own heap (made on top)
 *   main                1   -                      0
 *   leaf             1000   repeat (all of them)   0
 *   repeat              1   main                   0
 *   rec               300   main (1), rec (299)    0 (recursion 300 deep:
 *                                                  deeper than the 256-level
 *                                                  tree, so the tree folds)
 *   own_alloc           4   main                   4 x (malloc 100 + calloc 3x8
 *                                                  + realloc to 200) = 1296 B,
 *                                                  12 allocations
 *   via_callee          2   main                   0 (its callee allocates)
 *   alloc_helper        6   via_callee (3 each)    6 x malloc 64 = 384 B, 6
 *   busy                1   main                   0 (spins ~20 ms: self time)
 *
 * main's inclusive heap: 1296 + 384 = 1680 B in 18 allocations. Everything is
 * freed. No stdio (write(2) only), so libc allocates nothing behind it.
 * Exit status 0.
 */
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static volatile unsigned long sink;

NOINLINE static void leaf(int i)
{
	sink += (unsigned long)i;
}

NOINLINE static void repeat(int n)
{
	for (int i = 0; i < n; i++)
		leaf(i);
}

NOINLINE static int rec(int n)
{
	return n <= 1 ? 1 : 1 + rec(n - 1);
}

NOINLINE static void own_alloc(void)
{
	char *p = malloc(100);
	void *q = calloc(3, 8);
	p = realloc(p, 200);
	p[0] = 1;
	free(p);
	free(q);
}

NOINLINE static void *alloc_helper(void)
{
	return malloc(64);
}

NOINLINE static void via_callee(void)
{
	void *a = alloc_helper(), *b = alloc_helper(), *c = alloc_helper();
	free(a);
	free(b);
	free(c);
}

/* Burns ~20 ms of its own time (self == total: it calls nothing instrumented),
 * well above what main spends in its own code on a loaded machine. */
NOINLINE static void busy(void)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	do {
		for (int i = 0; i < 1000; i++)
			sink += (unsigned long)i;
		clock_gettime(CLOCK_MONOTONIC, &b);
	} while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < 20000000L);
}

int main(void)
{
	repeat(1000);
	if (rec(300) != 300)
		return 1;
	for (int i = 0; i < 4; i++)
		own_alloc();
	via_callee();
	via_callee();
	busy();
	static const char done[] = "fn_calls done\n";
	if (write(2, done, sizeof(done) - 1) < 0)
		return 1;
	return 0;
}
