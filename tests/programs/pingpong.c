/* pingpong.c - two threads take turns: each frees the block it is handed
 * and allocates a new one of the same size to hand back, so glibc gives
 * the address straight back and it changes threads at every turn.
 *
 *   side  2 x 5000 turns: free(slot), slot = malloc(48 + i % 3 * 8)
 *   main  malloc(48) before the threads, free(slot) after them
 *   ------------------------------------------------------------------------
 *   program's own: 10,001 allocations, 10,001 frees, 560,032 bytes
 *   (48 + 5000 turns of each thread: 2 x (1667 x 48 + 1667 x 56 +
 *   1666 x 64)); plus the two threads' DTV callocs.
 *
 * The blocks of two threads reach the agent's writer out of time order:
 * summary mode must still count every allocation. Exit status 0. No stdio.
 */
#include <pthread.h>
#include <stdlib.h>

#define TURNS 5000

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static void *slot;
static int turn;

static void *side(void *arg)
{
	int me = (int)(long)arg;
	for (int i = 0; i < TURNS; i++) {
		pthread_mutex_lock(&lock);
		while (turn != me)
			pthread_cond_wait(&changed, &lock);
		free(slot);
		slot = malloc(48 + (size_t)(i % 3) * 8);
		turn = !me;
		pthread_cond_signal(&changed);
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

int main(void)
{
	pthread_t a, b;
	slot = malloc(48);
	if (pthread_create(&a, NULL, side, (void *)0) || pthread_create(&b, NULL, side, (void *)1))
		return 1;
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	free(slot);
	return 0;
}
