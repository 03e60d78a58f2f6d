/* signal_open.c - a SIGALRM handler that allocates, every 50 us, while the
 * main thread's first calls are open() and close(): natively fine (they
 * are async-signal-safe), and under the agent the thread's first event
 * (made in the open hook) must not run malloc where the handler can land.
 * Prints "handler allocations N" on stderr; exit status 0.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <unistd.h>

static volatile long handled;

static void on_alarm(int sig)
{
	(void)sig;
	free(malloc(48));
	handled++;
}

int main(void)
{
	struct sigaction sa = { 0 };
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval every = { { 0, 50 }, { 0, 50 } };
	setitimer(ITIMER_REAL, &every, NULL);
	for (int i = 0; i < 100000; i++)
		close(open("/dev/null", O_RDONLY));
	struct itimerval stop = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_REAL, &stop, NULL);
	fprintf(stderr, "handler allocations %ld\n", handled);
	return 0;
}
