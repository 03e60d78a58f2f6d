/* exec_fail_threads.c - execs that fail while another thread allocates.
 *
 *   worker  malloc(24) + free, 200,000 times             200,000 allocs
 *   main    execv("/nonexistent/heaptrail-test", ...) until the worker
 *           is done (each fails: ENOENT), then joins it
 * Expected report: the worker's 200,000 allocations, all of them: a failed
 * exec stops the recording of no thread.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile int done;

__attribute__((noinline)) static void *worker(void *arg)
{
	(void)arg;
	for (int i = 0; i < 200000; i++) {
		void *p = malloc(24);
		memset(p, 0, 24);
		free(p);
	}
	done = 1;
	return NULL;
}

int main(void)
{
	pthread_t th;
	if (pthread_create(&th, NULL, worker, NULL) != 0)
		return 1;
	char *argv[] = {"x", NULL};
	while (!done)
		if (execv("/nonexistent/heaptrail-test", argv) != -1 || errno != ENOENT)
			return 2;
	pthread_join(th, NULL);
	return 0;
}
