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
#define WORKERS 40
#define BLOCKS 16000
#define RING 64
#include "mailbox_ring.h"

static pthread_barrier_t done;

static void *worker(void *arg)
{
	unsigned me = (unsigned)(uintptr_t)arg;
	ring_round(me, 16 + 8 * (size_t)me, malloc);
	pthread_barrier_wait(&done); /* every post made */
	drain(&boxes[me]);
	return NULL;
}

int main(void)
{
	pthread_t th[WORKERS];
	pthread_barrier_init(&done, NULL, WORKERS);
	boxes_init();
	for (unsigned i = 0; i < WORKERS; i++)
		if (pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)i) != 0)
			return 1;
	for (unsigned i = 0; i < WORKERS; i++)
		pthread_join(th[i], NULL);
	return 0;
}
