/* attach_mainexit.c - a process whose main thread has ended (pthread_exit)
 * while another works on: /proc/PID shows no executable and no maps then,
 * for heaptrail attach. The worker reads numbers from stdin; for each n it
 * makes n malloc/free pairs of 48 bytes and answers "ok N" (N: pairs so
 * far); at stdin's end it prints "total N" and exits 0. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *worker(void *arg)
{
	(void)arg;
	char line[64];
	unsigned long total = 0;
	while (fgets(line, sizeof line, stdin)) {
		long n = atol(line);
		for (long i = 0; i < n; i++) {
			char *p = malloc(48);
			memset(p, 1, 48);
			free(p);
		}
		total += (unsigned long)n;
		printf("ok %lu\n", total);
		fflush(stdout);
	}
	printf("total %lu\n", total);
	exit(0);
}

int main(void)
{
	pthread_t t;
	pthread_create(&t, NULL, worker, NULL);
	pthread_exit(NULL);
}
