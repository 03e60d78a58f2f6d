/* fork_free_parent.c - a fork child frees a block its parent allocated
 * before the fork: in the child's trace that free's block was never seen
 * allocated, yet the free is right (not a bad free). The parent frees its
 * own copy after the child exits. Exit status 0. */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void)
{
	void *p = malloc(333);
	pid_t c = fork();
	if (c == 0) {
		free(p);
		_exit(0);
	}
	int st = 0;
	waitpid(c, &st, 0);
	free(p);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
