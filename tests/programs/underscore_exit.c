/* underscore_exit.c - allocations and leaks, then _exit(4): no atexit
 * handlers, no destructors, no stdio flush. The trace must still hold
 * every event before the _exit.
 *
 *   function      calls                                  allocs frees bytes
 *   churn         50 x malloc(100), all freed              50    50   5000
 *   leak_before   3 x calloc(1, 300), never freed           3     0    900
 *   total                                                  53    50   5900
 *   leaked: 3 blocks, 900 bytes (leaf leak_before). Exit status 4.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *volatile keep[3];

static void churn(void)
{
	for (int i = 0; i < 50; i++) {
		void *p = malloc(100);
		memset(p, i, 100);
		free(p);
	}
}

static void leak_before(void)
{
	for (int i = 0; i < 3; i++)
		keep[i] = calloc(1, 300);
	for (int i = 0; i < 3; i++)
		keep[i] = NULL;
}

int main(void)
{
	churn();
	leak_before();
	_exit(4);
}
