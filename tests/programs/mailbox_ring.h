/* mailbox_ring.h - the threads of the packing stress programs: each worker
 * allocates BLOCKS blocks; every 8th is posted to the next worker's
 * mailbox (a mutex, room for all of them) and freed there, the others
 * replace a slot of a RING-slot ring. The includer defines WORKERS,
 * BLOCKS and RING first. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BOX (BLOCKS / 8 + 1)

struct box {
	pthread_mutex_t lock;
	unsigned n;
	void *slot[BOX];
};

static struct box boxes[WORKERS];

static void boxes_init(void)
{
	for (unsigned i = 0; i < WORKERS; i++)
		pthread_mutex_init(&boxes[i].lock, NULL);
}

/* Free whatever is posted to b now. */
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

/* Worker me's BLOCKS blocks of size bytes from alloc; its ring freed at
 * the end, its mailbox drained as it goes (the last posts to it remain). */
static void ring_round(unsigned me, size_t size, void *(*alloc)(size_t))
{
	struct box *next = &boxes[(me + 1) % WORKERS];
	void *ring[RING] = {0};
	uint64_t rng = me + 1;
	for (unsigned i = 0; i < BLOCKS; i++) {
		char *p = alloc(size);
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
}
