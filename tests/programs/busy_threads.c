/* busy_threads.c - N threads (argv[1], default 8) malloc and free as fast
 * as they can while main sleeps half a second and returns: the exit must
 * not wait on those threads. Each thread holds at most one block. Exit
 * status 0. Prints nothing: the exit's time is the figure (tests and
 * bench/RESULTS.md measure it against the plain run). */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

static void *volatile sink[1024];

static void *spin(void *arg)
{
	long i = (long)arg;
	for (;;) {
		void *p = malloc(64 + (size_t)(i % 8) * 16);
		sink[i] = p;
		free(p);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 8;
	if (n < 1 || n > 1024)
		return 2;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	for (long i = 0; i < n; i++) {
		pthread_t t;
		if (pthread_create(&t, &attr, spin, (void *)i) != 0)
			return 1;
	}
	struct timespec half = {0, 500000000};
	nanosleep(&half, NULL);
	return 0;
}
