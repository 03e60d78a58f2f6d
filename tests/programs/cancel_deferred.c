/* cancel_deferred.c - threads cancelled with deferred cancellation while
 * they allocate all the time.
 *
 *   work   4 threads: malloc(64) + free in a loop, pthread_testcancel()
 *          every 20,000 rounds, the only cancellation point they reach
 *   main   cancels them after 300 ms and joins them
 * malloc and free are no cancellation points: each thread must be
 * cancelled in pthread_testcancel, with a round count that is a multiple
 * of 20,000 and no block in hand. Exit status 0 if so, 1 if a thread was
 * cancelled anywhere else (inside malloc or free, holding whatever it
 * held), 2 if main gave up waiting. The agent's own system calls inside
 * a hook (reading /proc, writing the trace, waiting for its lock) must
 * not be glibc's cancellation points.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#define THREADS 4
#define ROUNDS 20000

static void *volatile sink;
static atomic_int started;
static long rounds_left[THREADS];

struct worker {
	long index, rounds;
};

static void on_cancel(void *arg)
{
	struct worker *w = arg;
	rounds_left[w->index] = w->rounds % ROUNDS;
}

static void *work(void *arg)
{
	struct worker w = {(long)arg, 0};
	pthread_cleanup_push(on_cancel, &w);
	atomic_fetch_add(&started, 1);
	for (;;) {
		void *p = malloc(64);
		sink = p;
		free(p);
		if (++w.rounds % ROUNDS == 0)
			pthread_testcancel();
	}
	pthread_cleanup_pop(0);
	return NULL;
}

int main(void)
{
	pthread_t th[THREADS];
	for (long i = 0; i < THREADS; i++)
		if (pthread_create(&th[i], NULL, work, (void *)i) != 0)
			return 2;
	for (int i = 0; atomic_load(&started) < THREADS; i++) {
		if (i > 10000)
			return 2;
		usleep(1000);
	}
	usleep(300000);
	for (int i = 0; i < THREADS; i++)
		pthread_cancel(th[i]);
	int bad = 0;
	for (int i = 0; i < THREADS; i++) {
		pthread_join(th[i], NULL);
		bad += rounds_left[i] != 0;
	}
	return bad ? 1 : 0;
}
