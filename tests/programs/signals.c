/* signals.c - how a trace survives signals, and that the agent's own
 * handlers stay invisible.
 *
 *   signals wait      malloc(100) x 10, a pause of 0.7 s, malloc(100) once
 *                     more (leaked: 11 blocks / 1100 bytes; the agent ships a
 *                     block older than 0.5 s at its next event), then writes
 *                     "ready\n" to stdout and sleeps until killed (the test
 *                     sends SIGTERM or SIGKILL).
 *   signals dfl       checks that every fatal signal reads back as SIG_DFL,
 *                     through sigaction and through signal(); exit 0 if so,
 *                     else the number of the first signal that did not.
 *   signals reraise   sets SIGTERM to SIG_DFL itself, then raise(SIGTERM):
 *                     malloc(64) x 3 before (leaked).
 *   signals mask      the program's signal mask through stacks the agent
 *                     unwinds (it blocks signals while libunwind holds a
 *                     lock): blocks SIGUSR1, then 64 chains x 4 calls of
 *                     malloc(24) + free, each chain a recursion of its own
 *                     depth; the mask must read back as before, a SIGUSR1
 *                     raised meanwhile must wait and be delivered once
 *                     unblocked, and a bad `how` must fail with EINVAL.
 *                     Exit 0, else the number of the check that failed.
 * No stdio: nothing allocates behind the program's back.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void *volatile sink[16];

static int check_dfl(void)
{
	static const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM,
				   SIGINT, SIGHUP, SIGQUIT, SIGPIPE};
	for (unsigned i = 0; i < sizeof sigs / sizeof *sigs; i++) {
		struct sigaction old;
		if (sigaction(sigs[i], NULL, &old) != 0 || old.sa_handler != SIG_DFL)
			return sigs[i];
		/* signal() returns the previous disposition; set it back. */
		if (signal(sigs[i], SIG_DFL) != SIG_DFL)
			return sigs[i];
		if (sigaction(sigs[i], NULL, &old) != 0 || old.sa_handler != SIG_DFL)
			return sigs[i];
	}
	return 0;
}

static volatile sig_atomic_t got_usr1;

static void on_usr1(int sig)
{
	(void)sig;
	got_usr1++;
}

/* A different chain for each depth: the agent unwinds each one anew. */
__attribute__((noinline)) static void nest(int depth)
{
	if (depth > 0) {
		nest(depth - 1);
		__asm__ volatile("" ::: "memory"); /* not a tail call */
		return;
	}
	void *p = malloc(24);
	sink[0] = p;
	free(p);
}

static int same_mask(const sigset_t *a, const sigset_t *b)
{
	for (int s = 1; s < 32; s++) /* the standard signals */
		if (sigismember(a, s) != sigismember(b, s))
			return 0;
	return 1;
}

static int check_mask(void)
{
	sigset_t usr1, before, old, now;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	signal(SIGUSR1, on_usr1);
	if (sigprocmask(SIG_BLOCK, &usr1, &old) != 0 || sigismember(&old, SIGUSR1))
		return 1;
	if (sigprocmask(SIG_SETMASK, NULL, &before) != 0 || !sigismember(&before, SIGUSR1))
		return 2;
	for (int round = 0; round < 4; round++)
		for (int depth = 0; depth < 64; depth++) {
			nest(depth);
			if (depth == 32 && round == 0)
				raise(SIGUSR1); /* held: blocked */
		}
	if (got_usr1)
		return 3;
	if (sigprocmask(SIG_SETMASK, NULL, &now) != 0 || !same_mask(&before, &now))
		return 4;
	if (sigprocmask(SIG_UNBLOCK, &usr1, NULL) != 0 || got_usr1 != 1)
		return 5;
	errno = 0;
	if (sigprocmask(99, &usr1, NULL) != -1 || errno != EINVAL)
		return 6;
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	if (!strcmp(argv[1], "wait")) {
		for (int i = 0; i < 10; i++)
			sink[i] = malloc(100);
		struct timespec pause_ms = {0, 700000000};
		nanosleep(&pause_ms, NULL);
		sink[10] = malloc(100);
		if (write(1, "ready\n", 6) != 6)
			return 1;
		for (;;)
			pause();
	}
	if (!strcmp(argv[1], "dfl"))
		return check_dfl();
	if (!strcmp(argv[1], "mask"))
		return check_mask();
	if (!strcmp(argv[1], "reraise")) {
		for (int i = 0; i < 3; i++)
			sink[i] = malloc(64);
		signal(SIGTERM, SIG_DFL);
		raise(SIGTERM);
		return 1;
	}
	return 2;
}
