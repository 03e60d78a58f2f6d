/* rlimit_as.c - a program that sets a low address-space limit and
 * allocates until malloc fails, then makes small allocations: the agent's
 * own table of live blocks cannot grow either.
 *
 *   main   malloc(1 MiB) until it fails (N blocks, kept to the end),
 *          malloc(100) + free 1000 times (K of them succeed), then a
 *          thread (64 KiB stack), if one can be made (T = 1), does
 *          malloc(64) + free 100 times
 * Prints "N K T" (write, no stdio). Expected: N + K + 101 T allocations
 * (glibc makes one for the thread), K + 100 T frees,
 * N blocks leaked; the leak check at exit lacks memory too: the report
 * says what that cost (leak classes), not that events were lost.
 */
#include <pthread.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include "put_u.h"

static void *worker(void *arg)
{
	(void)arg;
	for (int i = 0; i < 100; i++)
		free(malloc(64));
	return NULL;
}

int main(void)
{
	struct rlimit r = {96 << 20, 96 << 20};
	if (setrlimit(RLIMIT_AS, &r) != 0)
		return 1;
	static void *blocks[256];
	int n = 0;
	while (n < 256 && (blocks[n] = malloc(1 << 20)) != NULL)
		n++;
	int small = 0;
	for (int i = 0; i < 1000; i++) {
		void *p = malloc(100);
		small += p != NULL;
		free(p);
	}
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 1 << 16);
	pthread_t th;
	int made = pthread_create(&th, &attr, worker, NULL) == 0;
	if (made)
		pthread_join(th, NULL);
	unsigned long figures[] = { (unsigned long)n, (unsigned long)small, (unsigned long)made };
	return print_figures(figures, 3);
}
