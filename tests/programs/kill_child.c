/* kill_child.c - forks a child that allocates until the parent kills it
 * with SIGKILL after 100 ms (as a debugger kills its probe children): the
 * child's trace has no end, and heaptrail run's listing says it was cut
 * short. Parent: malloc(10), freed at the end. Exit status 0.
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void *volatile keep;

int main(void)
{
	keep = malloc(10);
	pid_t c = fork();
	if (c == 0) {
		for (;;) {
			free(malloc(20));
			usleep(1000);
		}
	}
	if (c < 0)
		return 1;
	usleep(100000);
	kill(c, SIGKILL);
	waitpid(c, NULL, 0);
	free(keep);
	return 0;
}
