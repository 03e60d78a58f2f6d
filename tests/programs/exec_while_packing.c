/* exec_while_packing.c - execs while threads allocate fast enough to fill
 * blocks and pack them themselves, blocks handed between the threads.
 *
 *   4 workers, worker i: 120,000 x malloc(40 + 8 i) in function alloc_i;
 *   every 8th block is posted to worker i+1's mailbox and freed there, the
 *   others replace a slot of a 64-slot ring; then every post made (a
 *   barrier), the last ones drained and the ring freed.
 *   a spawner: 50 threads one after the other, each 1,000 x malloc(24) in
 *   function brief_alloc, freed at once, so that threads end (and ship
 *   their last block) while execs flush.
 *   main: execv("/nonexistent/heaptrail-exec-while-packing") until every
 *   worker and the spawner are done (each fails: ENOENT).
 *   ------------------------------------------------------------------------
 *   no argument: main then joins the workers and exits 0. Each worker:
 *   120,000 allocations of its size and 120,000 frees on its own thread
 *   (105,000 of its own blocks, 15,000 of its predecessor's); nothing
 *   leaked; brief_alloc: 50,000 allocations. stdout: the number of failed
 *   execs.
 *   "succeed": once every worker is done the workers allocate on (size
 *   40 + 8 i + 4, freed at once, without end), main tries 20 more failing
 *   execs and then execs exec_target "from-exec" (same directory), which
 *   exits 0 after its 3 allocations. This image's trace ends at the exec
 *   with each worker's 120,000 allocations of its size and brief_alloc's
 *   50,000, whole.
 * Exit status 2: an exec did not fail as it should; 3: the workers could
 * not start.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WORKERS 4
#define BLOCKS 120000
#define RING 64
#include "mailbox_ring.h"

static pthread_barrier_t posted;
static atomic_int done;
static int succeed;

#define ALLOC_FN(i) \
	__attribute__((noinline)) static void *alloc_##i(size_t n) \
	{ \
		void *p = malloc(n); \
		__asm__ volatile("" ::: "memory"); /* not a tail call */ \
		return p; \
	}
ALLOC_FN(0)
ALLOC_FN(1)
ALLOC_FN(2)
ALLOC_FN(3)
static void *(*const alloc_of[WORKERS])(size_t) = {alloc_0, alloc_1, alloc_2, alloc_3};

#define BRIEF 50
#define BRIEF_BLOCKS 1000

__attribute__((noinline)) static void *brief_alloc(size_t n)
{
	void *p = malloc(n);
	__asm__ volatile("" ::: "memory");
	return p;
}

static void *brief(void *arg)
{
	(void)arg;
	for (unsigned i = 0; i < BRIEF_BLOCKS; i++) {
		char *p = brief_alloc(24);
		if (!p)
			abort();
		memset(p, 1, 8);
		free(p);
	}
	return NULL;
}

static void *spawner(void *arg)
{
	(void)arg;
	for (unsigned i = 0; i < BRIEF; i++) {
		pthread_t th;
		if (pthread_create(&th, NULL, brief, NULL) != 0)
			abort();
		pthread_join(th, NULL);
	}
	atomic_fetch_add(&done, 1);
	return NULL;
}

static void *worker(void *arg)
{
	unsigned me = (unsigned)(uintptr_t)arg;
	size_t size = 40 + 8 * (size_t)me;
	ring_round(me, size, alloc_of[me]);
	pthread_barrier_wait(&posted);
	drain(&boxes[me]);
	atomic_fetch_add(&done, 1);
	while (succeed) { /* until the exec ends the image */
		char *p = malloc(size + 4);
		if (!p)
			abort();
		memset(p, 1, 8);
		free(p);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	succeed = argc > 1 && strcmp(argv[1], "succeed") == 0;
	pthread_t th[WORKERS], sp;
	pthread_barrier_init(&posted, NULL, WORKERS);
	boxes_init();
	for (unsigned i = 0; i < WORKERS; i++)
		if (pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)i) != 0)
			return 3;
	if (pthread_create(&sp, NULL, spawner, NULL) != 0)
		return 3;
	char *fail_argv[] = {"x", NULL};
	unsigned long failed = 0;
	for (unsigned extra = 0; atomic_load(&done) < WORKERS + 1 || (succeed && extra++ < 20);) {
		if (execv("/nonexistent/heaptrail-exec-while-packing", fail_argv) != -1 ||
		    errno != ENOENT)
			return 2;
		failed++;
	}
	if (succeed) {
		static char path[PATH_MAX];
		ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 32);
		if (n <= 0)
			return 2;
		path[n] = 0;
		strcpy(strrchr(path, '/') + 1, "exec_target");
		char *argv2[] = {path, "from-exec", NULL};
		execv(path, argv2);
		return 2;
	}
	for (unsigned i = 0; i < WORKERS; i++)
		pthread_join(th[i], NULL);
	pthread_join(sp, NULL);
	printf("%lu\n", failed);
	return 0;
}
