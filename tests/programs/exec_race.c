/* exec_race.c - several threads whose execs fail at the same time.
 *
 *   run   4 threads: execv("/nonexistent/...") 3000 times each (ENOENT),
 *         then, past a barrier (no exec after it), malloc(777) 1000 times,
 *         kept                                       4000 allocs
 * Expected: every thread's 1000 allocations recorded. Each exec's flush
 * and its wait belong to the thread that made them: a thread's failed
 * exec must not undo another's.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

static char *argv_x[] = {"x", NULL};
static pthread_barrier_t barrier;
void *volatile sink;

__attribute__((noinline)) static void *run(void *arg)
{
	(void)arg;
	for (int i = 0; i < 3000; i++)
		if (execv("/nonexistent/heaptrail-test", argv_x) != -1 || errno != ENOENT)
			exit(2);
	pthread_barrier_wait(&barrier);
	for (int i = 0; i < 1000; i++)
		sink = malloc(777);
	return NULL;
}

int main(void)
{
	pthread_t th[4];
	pthread_barrier_init(&barrier, NULL, 4);
	for (int i = 0; i < 4; i++)
		if (pthread_create(&th[i], NULL, run, NULL) != 0)
			return 1;
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	return 0;
}
