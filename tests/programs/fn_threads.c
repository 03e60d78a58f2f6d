/* fn_threads.c - function profiler program: two threads, each with its own
 * functions, counts and heap (built with -finstrument-functions).
 *
 *   thread   function     calls   own heap
 *   T1       worker_a         1   0
 *   T1       a_step         100   100 x malloc(10) = 1000 B, 100 allocations
 *   T2       worker_b         1   0
 *   T2       b_step         200   200 x malloc(20) = 4000 B, 200 allocations
 *   main     main             1   (whatever pthread_create allocates)
 *
 * The threads run one after the other (the second starts after the first is
 * joined), so their tids differ and each has one tree. Every block is freed.
 * No stdio. Exit status 0.
 */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

NOINLINE static void a_step(void)
{
	free(malloc(10));
}

NOINLINE static void *worker_a(void *arg)
{
	(void)arg;
	for (int i = 0; i < 100; i++)
		a_step();
	return NULL;
}

NOINLINE static void b_step(void)
{
	free(malloc(20));
}

NOINLINE static void *worker_b(void *arg)
{
	(void)arg;
	for (int i = 0; i < 200; i++)
		b_step();
	return NULL;
}

int main(void)
{
	pthread_t t;
	if (pthread_create(&t, NULL, worker_a, NULL) || pthread_join(t, NULL))
		return 1;
	if (pthread_create(&t, NULL, worker_b, NULL) || pthread_join(t, NULL))
		return 1;
	static const char done[] = "fn_threads done\n";
	if (write(2, done, sizeof(done) - 1) < 0)
		return 1;
	return 0;
}
