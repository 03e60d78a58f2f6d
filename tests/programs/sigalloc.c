/* sigalloc.c - a signal handler that allocates, interrupting a program
 * that allocates all the time (so, under heaptrail, often the agent).
 *
 *   main       malloc(16) + free, N times for 300 ms       N allocs  N frees
 *   warm_up    malloc(48), freed by the first on_alarm   1 alloc   1 free
 *   on_alarm   SIGALRM every 100 us (setitimer): frees the block of its
 *              previous call, then malloc(48); main frees the last one
 *                                                          H allocs  H frees
 * The handler reads back as set (sigaction, signal), or the exit status
 * is 3 or 4. Prints "N H" on stdout (write, no stdio). Expected report: N + H + 1
 * allocations, as many frees, 16 N + 48 (H + 1) bytes, nothing leaked, no
 * free of an unknown block, and H allocations at the site on_alarm.
 * Allocating in a handler is not async-signal-safe: glibc's malloc would
 * deadlock on its arena's lock if the handler needed it while main held
 * it. Here every call after warm_up is served by glibc's per-thread cache
 * (a free, then a malloc of the same size), which takes no lock.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "put_u.h"

static void *volatile prev;
static volatile sig_atomic_t handled;

__attribute__((noinline)) static void on_alarm(int sig)
{
	(void)sig;
	free(prev);
	void *p = malloc(48);
	memset(p, 1, 48);
	prev = p;
	handled++;
}

__attribute__((noinline)) static void warm_up(void)
{
	prev = malloc(48);
	free(malloc(16));
}

int main(void)
{
	warm_up();
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	struct sigaction cur;
	if (sigaction(SIGALRM, NULL, &cur) != 0 || cur.sa_handler != on_alarm ||
	    (cur.sa_flags & SA_SIGINFO))
		return 3; /* the program reads back what it set */
	struct itimerval it = {{0, 100}, {0, 100}};
	setitimer(ITIMER_REAL, &it, NULL);
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	unsigned long n = 0;
	do {
		for (int i = 0; i < 256; i++) {
			void *p = malloc(16);
			memset(p, 0, 16);
			free(p);
			n++;
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 300000000L);
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &off, NULL);
	if (signal(SIGALRM, SIG_IGN) != on_alarm)
		return 4;
	free(prev);
	unsigned long figures[] = { n, (unsigned long)handled };
	return print_figures(figures, 2);
}
