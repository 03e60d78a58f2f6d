/* fork_during_exec.c - the main thread forks 40 children while another
 * thread tries execs that fail, again and again.
 *
 *   execer    execv of a missing file, in a loop
 *   main      40 times: fork a child that mallocs 1,000 bytes and leaves
 *             by _exit(0), and wait for it; then _exit(0)
 * Expected: every child exits at once, with a trace of its one
 * allocation. A child forked while the other thread's exec flushed the
 * trace kept that exec's state, and its malloc waited for the exec to end,
 * forever.
 */
#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void *execer(void *arg)
{
	char *argv[] = {"x", NULL};
	for (;;)
		execv("/nonexistent/heaptrail-test", argv);
	return arg;
}

int main(void)
{
	pthread_t t;
	if (pthread_create(&t, NULL, execer, NULL))
		return 1;
	for (int i = 0; i < 40; i++) {
		pid_t c = fork();
		if (c == 0) {
			void *p = malloc(1000);
			__asm__ volatile("" : : "r"(p) : "memory"); /* kept: not elided */
			_exit(0);
		}
		if (c > 0)
			waitpid(c, NULL, 0);
	}
	_exit(0);
}
