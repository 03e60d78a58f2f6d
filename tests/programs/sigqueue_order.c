/* sigqueue_order.c - real-time signals queued to a thread that allocates
 * all the time (so, under heaptrail, often inside the agent).
 *
 *   sender     a second thread: pthread_sigqueue(main, SIGRTMIN, i) for
 *              i = 1..K, again while the queue is full (EAGAIN); then
 *              SIGUSR1 with values 1..U, each once the last was handled
 *   main       malloc(40) + free until the handlers have seen them all
 *   on_signal  checks each signal's value (one more than the last of its
 *              number), its si_code (SI_QUEUE) and its sender (this
 *              process)
 *
 * Real-time signals queue: their handler must see every one, once, in
 * the order they were sent. A standard signal whose handler the agent
 * holds back until an allocation hook is done must reach it with its own
 * siginfo. Prints "K received out_of_order bad_info" for SIGRTMIN, then
 * the same for SIGUSR1 with U (write, no stdio); expected "K K 0 0 U U 0
 * 0". Exit status 2 if main waited 60 s.
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "put_u.h"

#define K 5000
#define U 300

static pthread_t main_thread;
/* [0] SIGRTMIN, [1] SIGUSR1 */
static volatile sig_atomic_t received[2], out_of_order[2], bad_info[2], last[2];

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	int k = sig == SIGUSR1;
	int v = si->si_value.sival_int;
	if (v != last[k] + 1)
		out_of_order[k]++;
	if (si->si_code != SI_QUEUE || si->si_pid != getpid())
		bad_info[k]++;
	last[k] = v;
	received[k]++;
}

static void *sender(void *arg)
{
	(void)arg;
	for (int i = 1; i <= K; i++) {
		union sigval v = {.sival_int = i};
		while (pthread_sigqueue(main_thread, SIGRTMIN, v) != 0)
			sched_yield();
		if (i % 64 == 0)
			sched_yield();
	}
	for (int i = 1; i <= U; i++) {
		union sigval v = {.sival_int = i};
		while (pthread_sigqueue(main_thread, SIGUSR1, v) != 0)
			sched_yield();
		while (received[1] < i)
			sched_yield();
	}
	return NULL;
}

int main(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGRTMIN, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	main_thread = pthread_self();
	pthread_t th;
	if (pthread_create(&th, NULL, sender, NULL) != 0)
		return 1;
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int status = 0;
	while (received[0] < K || received[1] < U) {
		for (int i = 0; i < 64; i++) {
			void *p = malloc(40);
			memset(p, 0, 40);
			free(p);
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 60) {
			status = 2;
			break;
		}
	}
	pthread_join(th, NULL);
	unsigned long figures[8];
	for (int k = 0; k < 2; k++) {
		figures[4 * k] = k ? U : K;
		figures[4 * k + 1] = (unsigned long)received[k];
		figures[4 * k + 2] = (unsigned long)out_of_order[k];
		figures[4 * k + 3] = (unsigned long)bad_info[k];
	}
	if (print_figures(figures, 8))
		return 1;
	return status;
}
