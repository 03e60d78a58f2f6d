/* late_main - a main thread whose events come at both ends of a run that
 * its workers fill: its first block reaches the trace early (the writer
 * ships a quiet thread's buffer), its last one at exit, at the end of the
 * file, after everything the workers recorded.
 *
 * Usage: late_main [ITERATIONS_PER_THREAD]   (default 1000000)
 *   main: 100 x malloc(24), freed; then 4 threads, each ITERATIONS x
 *   malloc of 16-256 bytes into a ring of 64 slots (the block it replaces
 *   freed), their ring freed at the end; after the joins main makes
 *   100 x malloc(40), freed. Everything is freed; prints nothing. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#define THREADS 4
#define RING 64

static unsigned long iterations = 1000000;

static void *worker(void *arg)
{
	uint64_t rng = (uintptr_t)arg * 2654435761u + 1;
	void *ring[RING] = {0};
	for (unsigned long i = 0; i < iterations; i++) {
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		unsigned slot = (unsigned)(rng >> 33) % RING;
		free(ring[slot]);
		ring[slot] = malloc(16 + (rng >> 40) % 241);
		if (ring[slot])
			*(volatile char *)ring[slot] = 1;
	}
	for (unsigned k = 0; k < RING; k++)
		free(ring[k]);
	return NULL;
}

static void burst(size_t size)
{
	void *p[100];
	for (int i = 0; i < 100; i++)
		p[i] = malloc(size);
	for (int i = 0; i < 100; i++)
		free(p[i]);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		iterations = strtoul(argv[1], NULL, 10);
	burst(24);
	usleep(300000); /* quiet: the writer ships main's buffer */
	pthread_t th[THREADS];
	for (uintptr_t i = 0; i < THREADS; i++)
		if (pthread_create(&th[i], NULL, worker, (void *)(i + 1)))
			return 1;
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	burst(40);
	return 0;
}
