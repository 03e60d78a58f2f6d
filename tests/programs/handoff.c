/* handoff.c - blocks allocated on one thread and freed on another, as fast
 * as two threads can pass them, so that a free follows its allocation by
 * well under a microsecond and glibc hands the address straight back.
 *
 *   main      500,000 x malloc(32), each passed through one atomic slot
 *   consumer  frees each block as soon as it takes it
 *   ------------------------------------------------------------------------
 *   program's own: 500,000 allocations, 500,000 frees, 16,000,000 bytes,
 *   nothing leaked; plus the DTV calloc of pthread_create (glibc's, left
 *   in its stack cache: one leaked block).
 *
 * The frees must pair with their allocations exactly: a free stamped in
 * the same time quantum as the allocation it ends, on another thread,
 * would be sorted before it (an ignored free and a false leak).
 * Exit status 0.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#define HANDOFFS 500000

static _Atomic(void *) slot;

static void *consumer(void *arg)
{
	(void)arg;
	for (int i = 0; i < HANDOFFS; i++) {
		void *p;
		while (!(p = atomic_exchange(&slot, NULL)))
			;
		free(p);
	}
	return NULL;
}

int main(void)
{
	pthread_t t;
	if (pthread_create(&t, NULL, consumer, NULL))
		return 1;
	for (int i = 0; i < HANDOFFS; i++) {
		void *p = malloc(32);
		if (!p)
			return 1;
		while (atomic_load(&slot))
			;
		atomic_store(&slot, p);
	}
	pthread_join(t, NULL);
	return 0;
}
