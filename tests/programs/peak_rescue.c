/* peak_rescue.c - a temporary whose lifetime spans the peak, allocated right
 * after another block of a site whose first block is freed next; two threads
 * take turns (semaphores), so the order of events is fixed:
 *
 *   worker: p[0], p[1] = malloc(16) (one stack); r = malloc(32); free(p[0])
 *   main:   big = malloc(100000)                      <- the peak
 *   worker: free(r); free(p[1])
 *   main:   q = malloc(8); free(big); free(q)
 *
 *   The program's own: 5 allocs, 5 frees, 100072 bytes, peak 100048 at big;
 *   2 temporaries (r and q: freed before their thread allocated again),
 *   nothing leaked. Exit status 0.
 *
 * The heaptrack export writes r as a pair right after the peak's `+`; the
 * `+` of p[1] must then not take the info index that the `-` of p[0]
 * right after it uses, or heaptrack counts a second temporary.
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>

static sem_t to_worker, to_main;

static void *worker(void *arg)
{
	(void)arg;
	void *volatile p[2];
	for (int i = 0; i < 2; i++)
		p[i] = malloc(16);
	void *volatile r = malloc(32);
	free(p[0]);
	sem_post(&to_main);
	sem_wait(&to_worker);
	free(r);
	free(p[1]);
	return NULL;
}

int main(void)
{
	pthread_t t;
	sem_init(&to_worker, 0, 0);
	sem_init(&to_main, 0, 0);
	if (pthread_create(&t, NULL, worker, NULL) != 0)
		return 1;
	sem_wait(&to_main);
	void *volatile big = malloc(100000);
	sem_post(&to_worker);
	pthread_join(t, NULL);
	void *volatile q = malloc(8);
	free(big);
	free(q);
	return 0;
}
