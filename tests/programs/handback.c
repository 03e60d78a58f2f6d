/* handback.c - a block goes from thread A to thread B and back, and A's
 * events reach the agent's writer before B's: A exits first (its block of
 * events ships at its exit) while B waits; B's block ships when B exits.
 *
 *   A  p = malloc(48)           the block X
 *      hands p to B, waits
 *   B  free(p); q = malloc(48)  B's tcache gives X back
 *      hands q to A, waits for A's exit
 *   A  free(q); exits
 *   ------------------------------------------------------------------------
 *   program's own: 2 allocations of 48 bytes, 2 frees, nothing in use at exit
 *
 * The writer reads A's events first: "alloc X, free X" looks like one
 * block's life, but the free ended B's block, whose allocation (and the
 * free of A's) come later. Exit status 0. No stdio.
 */
#include <pthread.h>
#include <stdlib.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static void *slot;
static int step; /* 1: A handed p to B; 2: B handed q to A; 3: A has exited */

static void wait_for(int s)
{
	pthread_mutex_lock(&lock);
	while (step < s)
		pthread_cond_wait(&changed, &lock);
	pthread_mutex_unlock(&lock);
}

static void advance(int s)
{
	pthread_mutex_lock(&lock);
	step = s;
	pthread_cond_broadcast(&changed);
	pthread_mutex_unlock(&lock);
}

static void *thread_a(void *arg)
{
	(void)arg;
	slot = malloc(48);
	advance(1);
	wait_for(2);
	free(slot);
	return NULL;
}

static void *thread_b(void *arg)
{
	(void)arg;
	wait_for(1);
	free(slot);
	slot = malloc(48);
	advance(2);
	wait_for(3);
	return NULL;
}

int main(void)
{
	pthread_t a, b;
	if (pthread_create(&a, NULL, thread_a, NULL) || pthread_create(&b, NULL, thread_b, NULL))
		return 1;
	pthread_join(a, NULL);
	advance(3);
	pthread_join(b, NULL);
	return 0;
}
