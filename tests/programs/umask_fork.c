/* umask_fork.c - a program that sets umask 0777 and then forks: the
 * child's trace is created under that umask.
 *
 *   main    umask(0777); fork; waits
 *   child   malloc(10) + free; exit(0)              1 alloc  1 free
 * Expected: both traces mode 0600, readable by their owner.
 */
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void)
{
	umask(0777);
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		free(malloc(10));
		exit(0);
	}
	int status;
	return waitpid(pid, &status, 0) == pid && WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
