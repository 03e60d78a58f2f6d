/* crash_resethand.c - 100 x malloc(100), kept; then a SIGSEGV handler
 * installed with SA_RESETHAND (as crash reporters install theirs) that
 * writes a line and returns: the fault repeats under SIG_DFL, which the
 * kernel put back. The trace must be complete all the same: 100
 * allocations, killed by signal 11.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *volatile sink;

static void on_crash(int sig, siginfo_t *info, void *uc)
{
	(void)sig;
	(void)info;
	(void)uc;
	if (write(2, "crash\n", 6) < 0)
		_exit(3);
}

int main(void)
{
	for (int i = 0; i < 100; i++)
		sink = malloc(100);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_crash;
	sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
	sigaction(SIGSEGV, &sa, NULL);
	*(volatile int *)0 = 1;
	return 0;
}
