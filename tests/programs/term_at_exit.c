/* term_at_exit.c - SIGTERM sent to a process while it exits, the moment a
 * supervisor (or Python's Pool.terminate) would send it.
 *
 *   main  1000 x malloc(600), 500 freed; then exit(0). An atexit handler
 *         releases a thread that sends SIGTERM to the process without end.
 *   ------------------------------------------------------------------------
 *   1000 allocations, 500 frees, 600,000 bytes; 500 blocks live at the end.
 *
 * The process may end by exit (0) or by the signal (143): either way the
 * trace must hold every event. No stdio.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

static void *volatile blocks[1000];
static atomic_int exiting;

static void *terminator(void *arg)
{
	(void)arg;
	while (!atomic_load(&exiting))
		;
	for (;;)
		kill(getpid(), SIGTERM);
	return NULL;
}

static void release(void)
{
	atomic_store(&exiting, 1);
}

int main(void)
{
	pthread_t t;
	if (pthread_create(&t, NULL, terminator, NULL))
		return 1;
	for (int i = 0; i < 1000; i++)
		blocks[i] = malloc(600);
	for (int i = 0; i < 1000; i += 2)
		free(blocks[i]);
	atexit(release);
	exit(0);
}
