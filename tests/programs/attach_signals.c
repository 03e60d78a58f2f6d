/* attach_signals.c - a program that takes real-time signals (queued, never
 * merged) while it allocates, for heaptrail attach: it counts the handler's
 * runs and, at stdin's end, prints "signals=N" and exits 0 if every block
 * it kept is intact. A signal that an attach lost or ran twice shows. */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <pthread.h>

static atomic_long count;
static atomic_int done;

static void on_sig(int sig)
{
	(void)sig;
	atomic_fetch_add(&count, 1);
}

static void *reader(void *arg)
{
	(void)arg;
	char buf[256];
	while (read(0, buf, sizeof buf) > 0)
		;
	atomic_store(&done, 1);
	return NULL;
}

int main(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_sig;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGRTMIN, &sa, NULL);
	pthread_t th;
	pthread_create(&th, NULL, reader, NULL);
	char *keep[16] = {0};
	int bad = 0;
	unsigned long it = 0;
	if (write(1, "ready\n", 6) != 6)
		return 3;
	while (!atomic_load(&done)) {
		int k = (int)(it % 16);
		if (keep[k] && keep[k][0] != (char)k)
			bad = 1;
		free(keep[k]);
		keep[k] = malloc(32 + it % 100);
		memset(keep[k], k, 32);
		if (++it % 256 == 0)
			usleep(200);
	}
	pthread_join(th, NULL);
	printf("signals=%ld\n", atomic_load(&count));
	return bad;
}
