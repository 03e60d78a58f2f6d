/* busy_exit.c - exit() while two threads still malloc and free as fast as
 * they can: the totals of a sampled run (counted per call, read while
 * those threads run on) must stay in step. Each thread holds at most one
 * block; pthread_create's own allocations stay live. Expected: frees <=
 * allocations <= frees + 4 (2 thread blocks in flight, 2 thread stacks'
 * bookkeeping). */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

static void *volatile sink[2];

static void *spin(void *arg)
{
	long i = (long)arg;
	for (;;) {
		void *p = malloc(64);
		sink[i] = p;
		free(p);
	}
	return NULL;
}

int main(void)
{
	pthread_t t[2];
	for (long i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, spin, (void *)i);
	usleep(200000);
	exit(0);
}
