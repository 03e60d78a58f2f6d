/* threads - 4 threads, each churning small malloc/free pairs.
 *
 * Usage: threads [ITERATIONS_PER_THREAD [THREADS]]   (defaults 5000000, 4)
 *
 * Each thread runs the same mix from a few call sites 4-6 frames deep:
 * a temporary buffer (allocated, touched, freed), and a message that replaces
 * a random slot of the thread's own 256-entry ring. No locks of its own and no
 * shared data: plain, the threads scale with the cores, so a profiler that
 * serialises events on a global lock shows up at once. Every 64th message is
 * handed to the next thread through a lock-free slot so that some blocks are
 * freed by a thread other than the one that allocated them.
 * Deterministic per thread (own LCG), prints nothing, frees everything.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline, noclone))
#define BARRIER() __asm__ volatile("" ::: "memory")
#define MAX_THREADS 64
#define RING 256

struct msg {
	uint32_t id;
	uint32_t len;
	unsigned char body[];
};

struct worker {
	pthread_t thread;
	unsigned index;
	unsigned long iterations;
	uint64_t rng;
	uint64_t sum;
	struct msg *ring[RING];
	struct msg *_Atomic handoff; /* filled by the previous thread */
	char pad[64];
};

static struct worker workers[MAX_THREADS];
static unsigned nthreads = 4;
volatile uint64_t sink;

static inline uint32_t rnd(struct worker *w)
{
	w->rng = w->rng * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(w->rng >> 33);
}

NOINLINE static struct msg *msg_alloc(uint32_t id, uint32_t len)
{
	struct msg *m = malloc(sizeof *m + len);
	if (!m)
		abort();
	m->id = id;
	m->len = len;
	memset(m->body, (int)(id & 0xff), len < 32 ? len : 32);
	BARRIER();
	return m;
}

NOINLINE static void msg_release(struct worker *w, struct msg *m)
{
	w->sum += m->id + m->body[0];
	free(m);
	BARRIER();
}

NOINLINE static uint64_t scratch_work(struct worker *w, uint32_t r)
{
	struct msg *tmp = msg_alloc(r, 16 + (r & 127));
	uint64_t h = tmp->id ^ tmp->len;
	msg_release(w, tmp);
	BARRIER();
	return h;
}

NOINLINE static void post_message(struct worker *w, uint32_t r)
{
	unsigned slot = (r >> 8) % RING;
	if (w->ring[slot])
		msg_release(w, w->ring[slot]);
	w->ring[slot] = msg_alloc(r, 24 + ((r >> 3) % 230));
	if ((r & 63) == 0) {
		/* hand one message to the next thread; take the one handed to us */
		struct worker *next = &workers[(w->index + 1) % nthreads];
		struct msg *m = msg_alloc(r, 40);
		struct msg *old = __atomic_exchange_n(&next->handoff, m, __ATOMIC_ACQ_REL);
		if (old)
			msg_release(w, old);
		struct msg *mine = __atomic_exchange_n(&w->handoff, NULL, __ATOMIC_ACQ_REL);
		if (mine)
			msg_release(w, mine);
	}
	BARRIER();
}

NOINLINE static void worker_step(struct worker *w)
{
	uint32_t r = rnd(w);
	w->sum += scratch_work(w, r);
	post_message(w, r);
	BARRIER();
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	for (unsigned long i = 0; i < w->iterations; i++)
		worker_step(w);
	for (unsigned i = 0; i < RING; i++)
		if (w->ring[i])
			msg_release(w, w->ring[i]);
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned long iterations = argc > 1 ? strtoul(argv[1], NULL, 0) : 5000000ul;
	if (argc > 2)
		nthreads = (unsigned)strtoul(argv[2], NULL, 0);
	if (nthreads < 1 || nthreads > MAX_THREADS) {
		fprintf(stderr, "threads: 1..%d threads\n", MAX_THREADS);
		return 2;
	}
	for (unsigned i = 0; i < nthreads; i++) {
		workers[i].index = i;
		workers[i].iterations = iterations;
		workers[i].rng = 0x9e3779b97f4a7c15ull * (i + 1);
	}
	for (unsigned i = 0; i < nthreads; i++)
		if (pthread_create(&workers[i].thread, NULL, worker_main, &workers[i]) != 0) {
			fprintf(stderr, "threads: pthread_create failed\n");
			return 1;
		}
	uint64_t total = 0;
	for (unsigned i = 0; i < nthreads; i++) {
		pthread_join(workers[i].thread, NULL);
		total += workers[i].sum;
	}
	for (unsigned i = 0; i < nthreads; i++) {
		struct msg *m = workers[i].handoff;
		if (m)
			free(m);
	}
	sink = total;
	return 0;
}
