/* sampled_thread.c - a worker thread makes the heap's peak: it allocates
 * 200 blocks of 64 bytes, then frees them; the main thread only starts and
 * joins it. Exact: 200 allocations of the worker (plus the thread's own
 * start-up), peak 12,800 bytes or more, reached on the worker. Run sampled,
 * the chrome export must still put the peak on the worker, and its
 * per-thread figures must be the weighted estimates. Exit status 0.
 */
#include <pthread.h>
#include <stdlib.h>

static void *worker(void *arg)
{
	void *p[200];
	(void)arg;
	for (int i = 0; i < 200; i++)
		p[i] = malloc(64);
	for (int i = 0; i < 200; i++)
		free(p[i]);
	return NULL;
}

int main(void)
{
	pthread_t t;
	if (pthread_create(&t, NULL, worker, NULL))
		return 1;
	pthread_join(t, NULL);
	return 0;
}
