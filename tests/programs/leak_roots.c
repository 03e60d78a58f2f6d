/* leak_roots.c - memory the leak scan must or must not take for roots, one
 * scenario per argument, for tests/e2e/test_leak_classes.py, which compares
 * heaptrail's classes with valgrind memcheck's. As in leak_classes.c, the
 * scenarios build their blocks in noinline functions and wipe the stack
 * below main's frame, so that no stale copy of a pointer is left where
 * either tool would find it.
 *
 *   arena     a worker thread (its own glibc arena) copies the addresses of
 *             two blocks into a block of its arena and frees that, then
 *             waits; the blocks are dropped: main's 1234 bytes and the
 *             worker's page-aligned 1011 (memalign, the only live block of
 *             its arena). Freed chunks are no roots: 2 definite
 */
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

static NOINLINE void wipe_stack(void)
{
	volatile char buf[16384];
	memset((char *)buf, 0, sizeof buf);
	__asm__ volatile("" ::"r"(buf) : "memory");
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int ready;

/* Tells main the worker is done, then waits until the process exits. */
static NOINLINE void done_and_wait(void)
{
	pthread_mutex_lock(&mu);
	ready = 1;
	pthread_cond_broadcast(&cv);
	for (;;)
		pthread_cond_wait(&cv, &mu);
}

static void wait_worker(void)
{
	pthread_mutex_lock(&mu);
	while (!ready)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
}

static void *main_block; /* main's block, until the worker is done */

static NOINLINE void stale_copies(void)
{
	void *aligned = memalign(4096, 1011);
	void **tmp = malloc(64);
	tmp[2] = aligned;
	tmp[3] = main_block;
	free(tmp);
}

static void *arena_worker(void *arg)
{
	(void)arg;
	stale_copies();
	wipe_stack();
	done_and_wait();
	return NULL;
}

static NOINLINE void scenario_arena(void)
{
	main_block = malloc(1234);
	pthread_t th;
	pthread_create(&th, NULL, arena_worker, NULL);
	wait_worker();
	main_block = NULL;
}

int main(int argc, char **argv)
{
	const char *s = argc > 1 ? argv[1] : "";
	if (!strcmp(s, "arena"))
		scenario_arena();
	else
		return 2;
	wipe_stack();
	return 0;
}
