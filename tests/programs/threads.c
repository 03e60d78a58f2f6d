/* threads.c - 4 threads, each with its own known counts, all running at the
 * same time (a barrier releases them together).
 *
 *   function  thread  calls                                allocs frees bytes
 *   worker0   T0      100 x malloc(16), 99 freed              100    99   1600
 *   worker1   T1      200 x malloc(32), 199 freed             200   199   6400
 *   worker2   T2      300 x malloc(48), 299 freed             300   299  14400
 *   worker3   T3      400 x malloc(64), 399 freed             400   399  25600
 *   main      main    malloc(1000), freed after the joins       1     1   1000
 *   ------------------------------------------------------------------------
 *   program's own                                          1001   997  49000
 *   leaked by the program: 4 blocks (one per worker, its last), 160 bytes.
 *
 * Plus glibc's own, which memcheck counts too: each pthread_create callocs
 * the new thread's DTV (dynamic thread vector) in _dl_allocate_tls; its size
 * depends on how many loaded objects use TLS (so it differs under valgrind
 * and under an LD_PRELOADed agent), and it stays allocated in the stack
 * cache after the join. Its stack passes through pthread_create.
 *
 * Each worker allocates in batches of up to 50 blocks at a time (live at
 * once), then frees the batch but its last block; blocks freed are freed by
 * the thread that allocated them. 5 threads in all (main + 4).
 * Exit status 0.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BATCH 50

static pthread_barrier_t start;
static void *volatile leaked[4];

/* n allocations of size bytes in batches; all freed but the very last. */
static void churn(int idx, int n, size_t size, void *(*alloc)(size_t))
{
	void *batch[BATCH];
	int done = 0;
	while (done < n) {
		int k = n - done < BATCH ? n - done : BATCH;
		for (int i = 0; i < k; i++) {
			batch[i] = alloc(size);
			memset(batch[i], idx, size);
		}
		done += k;
		for (int i = 0; i < k; i++) {
			if (done == n && i == k - 1)
				leaked[idx] = batch[i];
			else
				free(batch[i]);
		}
	}
}

/* One allocating function per worker, so each thread's site has its own leaf
 * function name. */
void *worker0_alloc(size_t n);
void *worker1_alloc(size_t n);
void *worker2_alloc(size_t n);
void *worker3_alloc(size_t n);
void *worker0_alloc(size_t n) { return malloc(n); }
void *worker1_alloc(size_t n) { return malloc(n); }
void *worker2_alloc(size_t n) { return malloc(n); }
void *worker3_alloc(size_t n) { return malloc(n); }

static void *(*const allocs[4])(size_t) = {worker0_alloc, worker1_alloc,
					   worker2_alloc, worker3_alloc};

static void *worker(void *arg)
{
	int idx = (int)(long)arg;
	pthread_barrier_wait(&start);
	churn(idx, 100 * (idx + 1), 16 * (size_t)(idx + 1), allocs[idx]);
	return NULL;
}

int main(void)
{
	pthread_t t[4];
	pthread_barrier_init(&start, NULL, 4);
	for (long i = 0; i < 4; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)i) != 0)
			return 1;
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	void *p = malloc(1000);
	memset(p, 0, 1000);
	free(p);
	for (int i = 0; i < 4; i++)
		leaked[i] = NULL;
	return 0;
}
