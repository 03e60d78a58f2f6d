/* exit_during_exec.c - one thread tries execs that fail, again and again,
 * while the main thread ends the process with _exit.
 *
 *   main      malloc(64) 100 times, kept; starts the thread; after 20 ms,
 *             _exit(3)
 *   execer    execv of a missing file, in a loop
 * Expected: exit status 3, and a complete trace ended by _exit with the
 * 100 blocks in use (and the thread's own). The _exit used to find the
 * other thread's exec flushing nearly every time, and ended the trace
 * without END: it read "ended at exec".
 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static void *volatile keep[100];

static void *execer(void *arg)
{
	(void)arg;
	char *argv[] = {"x", NULL};
	for (;;)
		execv("/nonexistent/heaptrail-test", argv);
	return NULL;
}

int main(void)
{
	for (int i = 0; i < 100; i++)
		keep[i] = malloc(64);
	pthread_t t;
	if (pthread_create(&t, NULL, execer, NULL))
		return 1;
	struct timespec wait = {0, 20 * 1000 * 1000};
	nanosleep(&wait, NULL);
	_exit(3);
}
