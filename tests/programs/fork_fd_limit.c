/* fork_fd_limit.c - a program that lowers its hard RLIMIT_NOFILE to 4 (the
 * three standard descriptors and one more) and then forks children that
 * leak: each child's trace takes its last free descriptor, and what heaptrail
 * run needs to know of the child must not need another.
 *
 *   parent   malloc(64), freed; then the limit; 3 children in turn
 *   child i  malloc(1000 + i), never freed, then exit(0)
 *
 * With argv[1] "close": closefrom(3) first (a daemon closing every
 * descriptor it did not open): the agent keeps the trace's, but its other
 * ones may go, and with them a child's side channel to heaptrail run; and
 * each child lowers its limit to 3, so that not even its trace's number,
 * once closed at the exit, can be opened again: nothing can be added to
 * heaptrail run's list then.
 *
 * Exit status 0; 1 if setrlimit fails, 2 if a fork or a child fails.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static void *volatile keep;

int main(int argc, char **argv)
{
	free(malloc(64));
	if (argc > 1 && !strcmp(argv[1], "close"))
		closefrom(3);
	struct rlimit rl = { 4, 4 };
	if (setrlimit(RLIMIT_NOFILE, &rl))
		return 1;
	for (int i = 0; i < 3; i++) {
		pid_t pid = fork();
		if (pid < 0)
			return 2;
		if (pid == 0) {
			struct rlimit three = { 3, 3 };
			if (argc > 1 && setrlimit(RLIMIT_NOFILE, &three))
				_exit(1);
			keep = malloc(1000 + (size_t)i);
			exit(0);
		}
		int st;
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
			return 2;
	}
	return 0;
}
