/* attach_epoll.c - the main thread waits in epoll_wait, which a ptrace
 * stop makes fail with EINTR, while a worker reads stdin (read restarts
 * after a stop), for heaptrail attach: it must borrow the worker. The
 * worker allocates a copy of each line and answers "ok N"; at stdin's end
 * it wakes the main thread through an eventfd, which prints "epoll ok", or
 * "epoll EINTR" if its wait was broken, and exits 0. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

static int efd;

static void *worker(void *arg)
{
	(void)arg;
	char line[256];
	unsigned long n = 0;
	while (fgets(line, sizeof line, stdin)) {
		char *copy = strdup(line);
		n += strlen(copy);
		free(copy);
		printf("ok %lu\n", n);
		fflush(stdout);
	}
	uint64_t one = 1;
	if (write(efd, &one, sizeof one) != sizeof one)
		abort();
	return NULL;
}

int main(void)
{
	efd = eventfd(0, 0);
	int ep = epoll_create1(0);
	struct epoll_event ev = {.events = EPOLLIN};
	epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev);
	pthread_t t;
	pthread_create(&t, NULL, worker, NULL);
	int r = epoll_wait(ep, &ev, 1, -1);
	pthread_join(t, NULL);
	printf("epoll %s\n", r == 1 ? "ok" : errno == EINTR ? "EINTR" : "error");
	return 0;
}
