/* exit_in_exec.c - a SIGALRM handler that calls _exit (async-signal safe)
 * while the program tries execs that fail, so the signal often comes as
 * an exec returns (under heaptrail, while the exec still holds the
 * trace's lock).
 *
 *   main      malloc(64) 100 times, kept; then execv of a missing file,
 *             again and again, until SIGALRM after 20 ms
 *   on_alarm  _exit(3)
 * Expected: exit status 3, and a complete trace (ended by _exit) with
 * the 100 blocks in use at the end.
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/time.h>
#include <unistd.h>

static void *volatile keep[100];

static void on_alarm(int sig)
{
	(void)sig;
	_exit(3);
}

int main(void)
{
	for (int i = 0; i < 100; i++)
		keep[i] = malloc(64);
	signal(SIGALRM, on_alarm);
	struct itimerval it = {{0, 0}, {0, 20000}};
	setitimer(ITIMER_REAL, &it, NULL);
	char *argv[] = {"x", NULL};
	for (;;)
		execv("/nonexistent/heaptrail-test", argv);
}
