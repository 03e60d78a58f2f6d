/* mailbox - threads that hand blocks to each other through a locked mailbox.
 *
 * Usage: mailbox [BLOCKS_PER_THREAD [THREADS]]   (defaults 1000000, 4)
 *
 * Each thread allocates its blocks (16-1015 bytes) into a 128-slot ring,
 * freeing the one it replaces; every 16th block goes instead to the next
 * thread's mailbox (a mutex and a small queue), and each thread frees
 * what its own mailbox holds. So about one free in 16 is of a block
 * another thread allocated: the case where a block's life crosses
 * threads, which a recorder must order right. Deterministic per thread,
 * prints nothing, frees everything.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_THREADS 256
#define RING 128
#define BOX 64

struct box {
	pthread_mutex_t lock;
	void *slot[BOX];
	unsigned n;
	char pad[64];
};

static struct box boxes[MAX_THREADS];
static unsigned nthreads = 4;
static unsigned long blocks = 1000000;
volatile uint64_t sink;

/* Empties a mailbox: its blocks are freed by the thread that owns it. */
static void drain(struct box *b)
{
	void *got[BOX];
	pthread_mutex_lock(&b->lock);
	unsigned n = b->n;
	memcpy(got, b->slot, n * sizeof got[0]);
	b->n = 0;
	pthread_mutex_unlock(&b->lock);
	for (unsigned i = 0; i < n; i++)
		free(got[i]);
}

/* Puts p in a mailbox; false when it is full (the caller frees p). */
static int post(struct box *b, void *p)
{
	pthread_mutex_lock(&b->lock);
	int ok = b->n < BOX;
	if (ok)
		b->slot[b->n++] = p;
	pthread_mutex_unlock(&b->lock);
	return ok;
}

static void *worker(void *arg)
{
	unsigned me = (unsigned)(uintptr_t)arg;
	struct box *next = &boxes[(me + 1) % nthreads];
	uint64_t rng = 0x9e3779b97f4a7c15ull * (me + 1);
	void *ring[RING] = {0};
	uint64_t sum = 0;
	for (unsigned long i = 0; i < blocks; i++) {
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		size_t size = 16 + (size_t)((rng >> 33) % 1000);
		unsigned char *p = malloc(size);
		if (!p)
			abort();
		p[0] = (unsigned char)i;
		p[size - 1] = (unsigned char)size;
		sum += p[0];
		if (i % 16 == 15) {
			if (!post(next, p))
				free(p);
			drain(&boxes[me]);
			continue;
		}
		unsigned slot = (unsigned)(rng >> 20) % RING;
		free(ring[slot]);
		ring[slot] = p;
	}
	for (unsigned i = 0; i < RING; i++)
		free(ring[i]);
	sink += sum;
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		blocks = strtoul(argv[1], NULL, 10);
	if (argc > 2)
		nthreads = (unsigned)strtoul(argv[2], NULL, 10);
	if (nthreads < 1 || nthreads > MAX_THREADS) {
		fprintf(stderr, "mailbox: 1 to %d threads\n", MAX_THREADS);
		return 2;
	}
	pthread_t th[MAX_THREADS];
	for (unsigned i = 0; i < nthreads; i++)
		pthread_mutex_init(&boxes[i].lock, NULL);
	for (unsigned i = 0; i < nthreads; i++)
		if (pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)i) != 0)
			abort();
	for (unsigned i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	/* what the last posts left in the mailboxes */
	for (unsigned i = 0; i < nthreads; i++)
		drain(&boxes[i]);
	return 0;
}
