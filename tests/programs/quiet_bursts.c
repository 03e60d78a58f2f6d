/* quiet_bursts - threads that allocate in bursts between quiet spells of
 * about the agent's take age (200 ms), so that the agent's writer takes
 * their buffers now between events, now while they record: no event may
 * be lost, doubled or reordered.
 *
 * Usage: quiet_bursts [THREADS] [ROUNDS]   (default 6, 10)
 *   Each thread, each round: 200 blocks from burst_alloc (sizes 1..200 by
 *   index), frees the odd ones at once, keeps the even ones until the
 *   next round's end (then frees them), and sleeps 150-290 ms; its last
 *   round's 100 blocks leak. Totals by construction:
 *   allocations THREADS*ROUNDS*200, frees THREADS*(ROUNDS*200-100),
 *   leaked blocks THREADS*100. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int rounds = 10;

__attribute__((noinline)) static void *burst_alloc(size_t n)
{
	return malloc(n);
}

static void *worker(void *arg)
{
	uint64_t seed = (uintptr_t)arg * 2654435761u + 1;
	void *kept[100] = {0};
	for (int r = 0; r < rounds; r++) {
		void *now[100];
		for (int i = 0; i < 200; i++) {
			void *p = burst_alloc((size_t)i + 1);
			memset(p, i, (size_t)i + 1);
			if (i % 2)
				free(p);
			else
				now[i / 2] = p;
		}
		for (int i = 0; i < 100; i++) {
			free(kept[i]); /* free(NULL) the first round: not an event */
			kept[i] = now[i];
		}
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		struct timespec ts = {0, 150000000 + (long)((seed >> 33) % 140000000)};
		nanosleep(&ts, NULL);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 6;
	if (argc > 2)
		rounds = atoi(argv[2]);
	pthread_t th[64];
	if (n > 64)
		n = 64;
	for (int i = 0; i < n; i++)
		pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)(i + 1));
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	return 0;
}
