/* prodcons.c - producers allocate, consumers free: every block changes
 * threads, and glibc hands its address to whichever producer allocates
 * next. Usage: prodcons N P (default 50000 3).
 *
 *   P producers  N x produce_block(16 + i % 200), block i holding i,
 *                pushed on a queue of 1024 (mutex and condition variables)
 *   2 consumers  pop and free each block, but for block i:
 *                  i % 1000 == 999  dropped (definitely lost)
 *                  i % 777 == 776   kept on a global list linked through
 *                                   its first word (still reachable)
 *   ------------------------------------------------------------------------
 *   program's own, default arguments: 150,000 allocations, 149,658 frees,
 *   17,325,000 bytes; leaked 342 blocks, 54,810 bytes: 150 definitely lost
 *   (32,250 bytes) and 192 still reachable (22,560 bytes); plus the DTV
 *   callocs of pthread_create (glibc's, left in its stack cache).
 *
 * The writer gets each thread's events when its buffer fills (a producer's
 * long before a consumer's), so frees arrive long before or after their
 * allocations, at addresses other threads have reused meanwhile. Which
 * block is dropped or kept depends on its number, not on the interleaving:
 * the counts and bytes are the same in every run. Exit status 0. No stdio.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define QUEUE 1024
#define CONSUMERS 2
#define MAX_PRODUCERS 16

static void *queue[QUEUE];
static int head, tail, queued, producers_done, producers, blocks_each;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER;
void *volatile kept_list;

__attribute__((noinline)) void *produce_block(int i)
{
	size_t size = 16 + (size_t)(i % 200);
	int *p = malloc(size);
	if (!p)
		abort();
	memset(p, 0, size);
	*p = i;
	return p;
}

static void *producer(void *arg)
{
	(void)arg;
	for (int i = 0; i < blocks_each; i++) {
		void *p = produce_block(i);
		pthread_mutex_lock(&lock);
		while (queued == QUEUE)
			pthread_cond_wait(&not_full, &lock);
		queue[tail] = p;
		tail = (tail + 1) % QUEUE;
		queued++;
		pthread_cond_signal(&not_empty);
		pthread_mutex_unlock(&lock);
	}
	pthread_mutex_lock(&lock);
	producers_done++;
	pthread_cond_broadcast(&not_empty);
	pthread_mutex_unlock(&lock);
	return NULL;
}

static void *consumer(void *arg)
{
	(void)arg;
	for (;;) {
		pthread_mutex_lock(&lock);
		while (!queued && producers_done < producers)
			pthread_cond_wait(&not_empty, &lock);
		if (!queued) {
			pthread_mutex_unlock(&lock);
			return NULL;
		}
		void *p = queue[head];
		queue[head] = NULL;
		head = (head + 1) % QUEUE;
		queued--;
		pthread_cond_signal(&not_full);
		pthread_mutex_unlock(&lock);
		int i = *(int *)p;
		if (i % 777 == 776) {
			*(void **)p = kept_list;
			kept_list = p;
		} else if (i % 1000 != 999) {
			free(p);
		}
		p = NULL; /* no copy of a dropped block's address left behind */
	}
}

int main(int argc, char **argv)
{
	blocks_each = argc > 1 ? atoi(argv[1]) : 50000;
	producers = argc > 2 ? atoi(argv[2]) : 3;
	if (producers < 1 || producers > MAX_PRODUCERS)
		return 2;
	pthread_t t[MAX_PRODUCERS + CONSUMERS];
	for (int i = 0; i < producers; i++)
		if (pthread_create(&t[i], NULL, producer, NULL))
			return 1;
	for (int i = 0; i < CONSUMERS; i++)
		if (pthread_create(&t[producers + i], NULL, consumer, NULL))
			return 1;
	for (int i = 0; i < producers + CONSUMERS; i++)
		pthread_join(t[i], NULL);
	return 0;
}
