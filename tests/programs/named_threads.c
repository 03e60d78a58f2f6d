/* named_threads.c - threads named with pthread_setname_np: two that exit
 * ("worker-1", "worker-2", 100 malloc/free pairs each), one left unnamed
 * (a malloc/free pair), and "spinner", still running when main calls
 * exit(). The trace names the three named threads, and no other. */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

static void *volatile sink;
static volatile int started;

static void *work(void *name)
{
	pthread_setname_np(pthread_self(), (const char *)name);
	for (int i = 0; i < 100; i++) {
		sink = malloc(10);
		free(sink);
	}
	return NULL;
}

static void *spin(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "spinner");
	for (;;) {
		sink = malloc(10);
		free(sink);
		started = 1;
		usleep(1000);
	}
	return NULL;
}

static void *anon(void *arg)
{
	(void)arg;
	sink = malloc(20);
	free(sink);
	return NULL;
}

int main(void)
{
	pthread_t t[4];
	pthread_create(&t[0], NULL, work, "worker-1");
	pthread_create(&t[1], NULL, work, "worker-2");
	pthread_create(&t[2], NULL, anon, NULL);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	pthread_create(&t[3], NULL, spin, NULL);
	while (!started)
		usleep(1000);
	exit(0);
}
