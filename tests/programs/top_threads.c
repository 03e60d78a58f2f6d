/* top_threads.c - blocks allocated on a quiet thread and freed on a busy
 * one, for heaptrail top following the trace while it grows
 * (tests/e2e/test_top.py: its last frame must be the report's figures).
 * The busy thread fills its event buffer every few milliseconds, so its
 * frees reach the file before the quiet thread's allocations, which wait
 * there until their buffer is 200 ms old: a reader that counted events as
 * they come would see frees of blocks it never saw allocated.
 *
 *   main      150 x malloc(200), one every 20 ms, each handed to the
 *             consumer; then malloc(1000), left at the end
 *   consumer  frees each handed block; in between, rounds of 600 x
 *             malloc(48) freed at once, 5 ms of sleep a round
 *
 * In use at exit: the 1000 bytes (and what glibc keeps). Exit status 0.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define HANDED 150

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static void *box[HANDED];
static int nbox;
static atomic_int done;
static void *kept;

static void take(void)
{
	pthread_mutex_lock(&mu);
	for (int i = 0; i < nbox; i++)
		free(box[i]);
	nbox = 0;
	pthread_mutex_unlock(&mu);
}

static void *consumer(void *arg)
{
	(void)arg;
	while (!atomic_load(&done)) {
		for (int i = 0; i < 600; i++) {
			char *volatile p = malloc(48);
			p[0] = 1;
			free(p);
		}
		take();
		nanosleep(&(struct timespec){ 0, 5000000 }, NULL);
	}
	take();
	return NULL;
}

int main(void)
{
	pthread_t th;
	pthread_create(&th, NULL, consumer, NULL);
	for (int i = 0; i < HANDED; i++) {
		char *p = malloc(200);
		memset(p, 2, 200);
		pthread_mutex_lock(&mu);
		box[nbox++] = p;
		pthread_mutex_unlock(&mu);
		nanosleep(&(struct timespec){ 0, 20000000 }, NULL);
	}
	atomic_store(&done, 1);
	pthread_join(th, NULL);
	kept = malloc(1000);
	return 0;
}
