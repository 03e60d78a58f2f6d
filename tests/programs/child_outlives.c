/* child_outlives.c - a forked child that is still running when its parent
 * ends (a daemon's way): heaptrail run lists its trace then, unfinished.
 *
 *   child   malloc(10) (its trace now exists), tells the parent, sleeps
 *           1.5 s, frees, exits 0
 *   parent  waits for the word, then exits 0 without waiting for the child
 */
#include <stdlib.h>
#include <unistd.h>

int main(void)
{
	int fds[2];
	if (pipe(fds) != 0)
		return 1;
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		close(fds[0]);
		void *p = malloc(10);
		if (write(fds[1], "x", 1) != 1)
			_exit(1);
		close(fds[1]);
		usleep(1500000);
		free(p);
		exit(0);
	}
	close(fds[1]);
	char c;
	return read(fds[0], &c, 1) == 1 ? 0 : 1;
}
