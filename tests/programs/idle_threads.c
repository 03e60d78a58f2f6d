/* idle_threads - allocates on the main thread and two others, then all
 * three go quiet: what they recorded must reach the trace without another
 * event (the agent's writer ships idle threads' buffers), so that a
 * SIGKILL later keeps it.
 *
 * Usage: idle_threads [BYTES]
 *   main: 100 blocks of 100 bytes; each thread: 1000 blocks of 333 bytes,
 *   every other one freed at once (500 live per thread). Then "ready" on
 *   stdout and sleep until killed. With BYTES, the threads go on to
 *   allocate BYTES more each in blocks of 64 KiB, touched (an OOM kill),
 *   printing "ready" first. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *volatile sink[100];
static long extra;
static pthread_barrier_t done;

static void *worker(void *arg)
{
	void **keep = malloc(500 * sizeof *keep); /* one more block per thread */
	for (int i = 0; i < 1000; i++) {
		void *p = malloc(333);
		memset(p, i, 333);
		if (i % 2)
			free(p);
		else
			keep[i / 2] = p;
	}
	*(void ***)arg = keep;
	pthread_barrier_wait(&done);
	if (extra) {
		sleep(1); /* after the quiet spell */
		for (long n = 0; n < extra; n += 65536) {
			char *p = malloc(65536);
			if (p)
				memset(p, 1, 65536);
		}
	}
	for (;;)
		pause();
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		extra = atol(argv[1]);
	for (int i = 0; i < 100; i++)
		sink[i] = malloc(100);
	pthread_barrier_init(&done, NULL, 3);
	pthread_t th[2];
	void **kept[2];
	for (int i = 0; i < 2; i++)
		if (pthread_create(&th[i], NULL, worker, &kept[i]) != 0)
			return 1;
	pthread_barrier_wait(&done);
	if (write(1, "ready\n", 6) != 6)
		return 1;
	for (;;)
		pause();
}
