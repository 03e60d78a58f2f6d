/* crash_threads.c - three threads abort at the same moment: the trace must
 * still be complete (the first handler flushes, the others wait for it).
 *
 *   churn_worker (2 threads): 100000 x malloc(32)/free each
 *   main:                     100000 x malloc(64)/free
 * then all three call abort() after a barrier. Program's own totals:
 * 300000 allocations, 300000 frees, 12800000 bytes (plus glibc's DTV
 * blocks for the two threads). Killed by SIGABRT.
 */
#include <pthread.h>
#include <stdlib.h>

static void *volatile sinks[3];
static pthread_barrier_t barrier;

__attribute__((noinline)) static void churn(long k, size_t n)
{
	for (int i = 0; i < 100000; i++) {
		sinks[k] = malloc(n);
		free(sinks[k]);
	}
}

static void *churn_worker(void *arg)
{
	churn((long)arg, 32);
	pthread_barrier_wait(&barrier);
	abort();
}

int main(void)
{
	pthread_t t[2];
	pthread_barrier_init(&barrier, NULL, 3);
	for (long i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, churn_worker, (void *)(i + 1));
	churn(0, 64);
	pthread_barrier_wait(&barrier);
	abort();
}
