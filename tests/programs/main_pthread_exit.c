/* main_pthread_exit.c - main ends with pthread_exit while its threads go
 * on; the process ends (status 0) when the last of them returns.
 *
 *   worker  2 threads x 1000 x malloc(32), each freed at once
 *   main    starts them and calls pthread_exit(NULL)
 *   ------------------------------------------------------------------------
 *   the workers' own: 2000 allocations, 2000 frees, 64,000 bytes. Plus
 *   glibc's: the threads' DTVs, and pthread_exit loads libgcc_s to unwind
 *   main (the loader's allocations).
 *
 * Exit status 0. No stdio.
 */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

void *worker(void *arg);

void *worker(void *arg)
{
	(void)arg;
	usleep(200000); /* main is gone by then */
	for (int i = 0; i < 1000; i++) {
		void *volatile p = malloc(32);
		free(p);
	}
	return NULL;
}

int main(void)
{
	pthread_t t;
	for (int i = 0; i < 2; i++)
		if (pthread_create(&t, NULL, worker, NULL))
			return 1;
	pthread_exit(NULL);
}
