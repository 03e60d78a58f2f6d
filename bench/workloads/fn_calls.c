/* fn_calls - a call-dense program for the function profiler's overhead,
 * built with -finstrument-functions (bench target: fn_*.c).
 *
 * Usage: fn_calls [N] [WORK]   (defaults 300000, 200)
 *
 * Each of N iterations makes a recursion 20 deep (fib-like fan-out kept
 * small) and calls a few small functions; WORK is the number of arithmetic
 * steps each small function does, so the overhead per call can be read
 * against functions that do real work (WORK=200) or almost none (WORK=1).
 * One malloc/free per iteration. Prints nothing.
 */
#include <stdint.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline, noclone))

volatile uint64_t sink;
static unsigned work = 200;

NOINLINE static uint64_t small(uint64_t x)
{
	for (unsigned i = 0; i < work; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

NOINLINE static uint64_t descend(unsigned depth, uint64_t x)
{
	if (depth == 0)
		return small(x);
	return descend(depth - 1, small(x) ^ depth);
}

NOINLINE static void iteration(uint64_t i)
{
	char *p = malloc(32 + (i & 31));
	p[0] = (char)i;
	sink += descend(20, i) + (uint64_t)p[0];
	free(p);
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 0) : 300000ul;
	if (argc > 2)
		work = (unsigned)strtoul(argv[2], NULL, 0);
	for (unsigned long i = 0; i < n; i++)
		iteration(i);
	return 0;
}
