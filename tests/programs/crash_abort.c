/* crash_abort.c - allocations, then abort() (SIGABRT). The trace must hold
 * every event up to it; heaptrail run exits 128 + 6 = 134.
 *
 *   function      calls                                  allocs frees bytes
 *   before_abort  7 x malloc(300) all freed, then           8     7   3000
 *                 realloc(NULL, 900) live at the abort
 *   total: 8 allocs, 7 frees, 3000 bytes; live at death: 1 block, 900 bytes
 *   (leaf before_abort). Killed by signal 6.
 */
#include <stdlib.h>
#include <string.h>

static void *volatile live;

static void before_abort(void)
{
	for (int i = 0; i < 7; i++) {
		void *p = malloc(300);
		memset(p, i, 300);
		free(p);
	}
	live = realloc(NULL, 900);
	memset(live, 0, 900);
}

int main(void)
{
	before_abort();
	abort();
}
