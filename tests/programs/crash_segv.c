/* crash_segv.c - allocations, then death by SIGSEGV (a store through a null
 * pointer). The trace must hold every event up to the crash; heaptrail run
 * exits 128 + 11 = 139.
 *
 *   function      calls                                  allocs frees bytes
 *   before_crash  20 x malloc(64) all freed, then          21    20   3328
 *                 malloc(2048) live at the crash
 *   total: 21 allocs, 20 frees, 3328 bytes; live at death: 1 block, 2048
 *   bytes (leaf before_crash). Killed by signal 11.
 */
#include <stdlib.h>
#include <string.h>

static void *volatile live;

static void before_crash(void)
{
	for (int i = 0; i < 20; i++) {
		void *p = malloc(64);
		memset(p, i, 64);
		free(p);
	}
	live = malloc(2048);
	memset(live, 0, 2048);
}

static void crash(void)
{
	volatile int *volatile nowhere = NULL;
	*nowhere = 1;
}

int main(void)
{
	before_crash();
	crash();
	return 0;
}
