/* exit_in_dlclose.c - a SIGALRM handler that calls _exit (async-signal
 * safe) while the program loads and unloads a library in a loop, so the
 * signal often lands inside dlopen or dlclose (and inside the agent's
 * work there).
 *
 *   main   dlopen(argv[1]) + dlclose, until SIGALRM after 20 ms
 *   on_alarm  _exit(3)
 * Expected: exit status 3, at once, every time.
 */
#include <dlfcn.h>
#include <signal.h>
#include <sys/time.h>
#include <unistd.h>

static void on_alarm(int sig)
{
	(void)sig;
	_exit(3);
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	signal(SIGALRM, on_alarm);
	struct itimerval it = {{0, 0}, {0, 20000}};
	setitimer(ITIMER_REAL, &it, NULL);
	for (;;) {
		void *h = dlopen(argv[1], RTLD_NOW);
		if (!h)
			return 1;
		dlclose(h);
	}
}
