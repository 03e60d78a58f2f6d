/* fn_manual.c - function profiler program for manual mode: run with
 * `heaptrail run --functions --start-off`; only the region between
 * heaptrail_set_recording(1) and heaptrail_set_recording(0) is recorded.
 *
 *   function   calls   recording   allocations
 *   before         5   off         5 x malloc(1000), freed
 *   region         7   on          7 x malloc(10) = 70 B, freed
 *   after          3   off         3 x malloc(5000), freed
 *
 * Expected in the trace: region with 7 calls and 70 own bytes in 7
 * allocations; before, after and main absent (main was entered while off).
 * The heaptrail.h wrappers are static inline, so they are instrumented too
 * and may show up around the switch. Without the agent the program runs the
 * same (heaptrail_set_recording returns -1). No stdio. Exit status 0.
 */
#include <stdlib.h>
#include <unistd.h>

#include "heaptrail.h"

#define NOINLINE __attribute__((noinline))

NOINLINE static void before(void)
{
	free(malloc(1000));
}

NOINLINE static void region(void)
{
	free(malloc(10));
}

NOINLINE static void after(void)
{
	free(malloc(5000));
}

int main(void)
{
	for (int i = 0; i < 5; i++)
		before();
	heaptrail_set_recording(1);
	for (int i = 0; i < 7; i++)
		region();
	heaptrail_set_recording(0);
	for (int i = 0; i < 3; i++)
		after();
	static const char done[] = "fn_manual done\n";
	if (write(2, done, sizeof(done) - 1) < 0)
		return 1;
	return 0;
}
