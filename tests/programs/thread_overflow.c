/* thread_overflow.c - a thread that overflows its stack, after both
 * threads allocated.
 *
 *   main     malloc(32) 500 times, kept; starts the thread, joins it
 *   overflow malloc(16) 500 times, kept; then recurses without end: the
 *            process dies of SIGSEGV (status 139 in a shell)
 * Expected trace: complete (ended by SIGSEGV), with 500 allocations at
 * main and 500 at overflow.
 */
#include <pthread.h>
#include <stdlib.h>

static void *volatile keep;

__attribute__((noinline)) static int recurse(int n)
{
	volatile char buf[1024];
	buf[0] = (char)n;
	return recurse(n + 1) + buf[0];
}

static void *overflow(void *arg)
{
	(void)arg;
	for (int i = 0; i < 500; i++)
		keep = malloc(16);
	return (void *)(long)recurse(0);
}

int main(void)
{
	for (int i = 0; i < 500; i++)
		keep = malloc(32);
	pthread_t th;
	if (pthread_create(&th, NULL, overflow, NULL) != 0)
		return 1;
	pthread_join(th, NULL);
	return 0;
}
