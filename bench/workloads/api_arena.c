/* api_arena - what heaptrail.h costs a program when the agent is not
 * loaded: a bump allocator making 50M small allocations, built twice, with
 * its heaptrail_alloc / heaptrail_free annotations (api_arena) and without
 * them (api_arena_bare, -DHEAPTRAIL_BARE). Compare the two plain runs:
 * the annotated one pays a load and a test of a weak symbol per call.
 *
 * Usage: api_arena [N]   (default 50000000). Prints nothing.
 */
#include <stdint.h>
#include <stdlib.h>

#ifdef HEAPTRAIL_BARE
#define heaptrail_alloc(p, n) ((void)(p), (void)(n), 0)
#define heaptrail_free(p) ((void)(p), 0)
#else
#include "heaptrail.h"
#endif

#define ARENA (1u << 20)

static unsigned char arena[ARENA];
static size_t used;
volatile uint64_t sink;

__attribute__((noinline)) static void *bump(size_t n)
{
	if (used + n > ARENA) {
		/* reset: every block of the arena is freed at once */
		used = 0;
	}
	void *p = arena + used;
	used += (n + 15) & ~(size_t)15;
	heaptrail_alloc(p, n);
	return p;
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 0) : 50000000ul;
	for (unsigned long i = 0; i < n; i++) {
		unsigned char *p = bump(16 + (i & 63));
		p[0] = (unsigned char)i;
		sink += p[0];
		heaptrail_free(p);
	}
	return 0;
}
