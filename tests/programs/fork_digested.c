/* fork_digested.c - a fork after the agent has digested the parent's
 * events (heaptrail_stats() ships and digests them first): in summary
 * mode the child's rows must still hold the child's allocations only.
 *
 *   function      process  calls                          allocs frees bytes
 *   parent_work   parent   20 x malloc(64) freed,            21    20  2280
 *                          malloc(1000) kept (leaked)
 *   child_work    child    10 x malloc(33) freed             10    10   330
 *
 *   parent: 21 allocs, 20 frees, 2280 bytes; 1 block / 1000 bytes leaked.
 *   child: 10 allocs, 10 frees, 330 bytes, nothing leaked (it leaves the
 *   inherited block alone and ends with _exit(0)).
 *   Exit status 0 if the child exited 0.
 */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "heaptrail.h"

static void *volatile keep;

__attribute__((noinline)) static void parent_work(void)
{
	for (int i = 0; i < 20; i++) {
		void *volatile p = malloc(64);
		free(p);
	}
	keep = malloc(1000);
}

__attribute__((noinline)) static void child_work(void)
{
	for (int i = 0; i < 10; i++) {
		void *volatile p = malloc(33);
		free(p);
	}
}

int main(void)
{
	parent_work();
	struct heaptrail_stats s = {.size = sizeof s};
	heaptrail_stats(&s); /* the agent digests what the parent did */
	pid_t pid = fork();
	if (pid == 0) {
		child_work();
		_exit(0);
	}
	int status;
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return 1;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
