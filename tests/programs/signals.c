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
 * No stdio: nothing allocates behind the program's back.
 */
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
	if (!strcmp(argv[1], "reraise")) {
		for (int i = 0; i < 3; i++)
			sink[i] = malloc(64);
		signal(SIGTERM, SIG_DFL);
		raise(SIGTERM);
		return 1;
	}
	return 2;
}
