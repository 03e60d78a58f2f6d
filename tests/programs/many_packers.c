/* many_packers.c - more allocating threads than the agent has packers, with
 * blocks handed between them, so that threads share a packer and blocks
 * end on another thread than their own.
 *
 *   40 workers, worker i: 16,000 x malloc(16 + 8 i); every 8th block is
 *   posted to worker i+1's mailbox (a mutex, room for all of them) and
 *   freed there; the others replace a slot of a 64-slot ring
 *   ------------------------------------------------------------------------
 *   each worker: 16,000 allocations and 16,000 frees on its own thread
 *   (14,000 of its own blocks, 2,000 of its predecessor's); nothing of
 *   theirs leaked. Exit status 0.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define WORKERS 40
#define BLOCKS 16000
#define RING 64
#define BOX (BLOCKS / 8 + 1)

struct box {
	pthread_mutex_t lock;
	unsigned n;
	void *slot[BOX];
};

static struct box boxes[WORKERS];
static pthread_barrier_t done;

static void drain(struct box *b)
{
	for (;;) {
		pthread_mutex_lock(&b->lock);
		void *p = b->n ? b->slot[--b->n] : NULL;
		pthread_mutex_unlock(&b->lock);
		if (!p)
			return;
		free(p);
	}
}

static void *worker(void *arg)
{
	unsigned me = (unsigned)(uintptr_t)arg;
	struct box *next = &boxes[(me + 1) % WORKERS];
	size_t size = 16 + 8 * (size_t)me;
	void *ring[RING] = {0};
	uint64_t rng = me + 1;
	for (unsigned i = 0; i < BLOCKS; i++) {
		char *p = malloc(size);
		if (!p)
			abort();
		memset(p, (int)i, 8);
		if (i % 8 == 7) {
			pthread_mutex_lock(&next->lock);
			next->slot[next->n++] = p;
			pthread_mutex_unlock(&next->lock);
		} else {
			rng = rng * 6364136223846793005ull + 1442695040888963407ull;
			unsigned k = (unsigned)(rng >> 40) % RING;
			free(ring[k]);
			ring[k] = p;
		}
		if (i % 64 == 0)
			drain(&boxes[me]);
	}
	for (unsigned k = 0; k < RING; k++)
		free(ring[k]);
	pthread_barrier_wait(&done); /* every post made */
	drain(&boxes[me]);
	return NULL;
}

int main(void)
{
	pthread_t th[WORKERS];
	pthread_barrier_init(&done, NULL, WORKERS);
	for (unsigned i = 0; i < WORKERS; i++)
		pthread_mutex_init(&boxes[i].lock, NULL);
	for (unsigned i = 0; i < WORKERS; i++)
		if (pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)i) != 0)
			return 1;
	for (unsigned i = 0; i < WORKERS; i++)
		pthread_join(th[i], NULL);
	return 0;
}
