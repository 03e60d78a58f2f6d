/* chdir_fork.c - a program that changes directory, then forks a child that
 * allocates, and (argv[2] "exec") forks one that execs this program again.
 * Every trace must be where the output path said, relative to the
 * directory the program started in, not to the one it moved to.
 *
 *   main    100 x malloc(24), all freed; chdir(argv[1])
 *   child   50 x malloc(40), 45 freed: 5 blocks (200 bytes) leaked; exit 0
 *   exec    (argv[2] "exec") a child execs "chdir_fork leaf":
 *           30 x malloc(56), all freed
 *
 * Exit status 0; 2 if the chdir fails, 3 if a child does not exit 0.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void *volatile keep[100];

static int wait_ok(pid_t pid)
{
	int st;
	return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "leaf")) {
		for (int i = 0; i < 30; i++)
			free(malloc(56));
		return 0;
	}
	for (int i = 0; i < 100; i++)
		keep[i] = malloc(24);
	for (int i = 0; i < 100; i++)
		free(keep[i]);
	if (argc < 2 || chdir(argv[1]) != 0)
		return 2;
	pid_t pid = fork();
	if (pid == 0) {
		for (int i = 0; i < 50; i++)
			keep[i] = malloc(40);
		for (int i = 5; i < 50; i++)
			free(keep[i]);
		exit(0);
	}
	if (!wait_ok(pid))
		return 3;
	if (argc > 2 && !strcmp(argv[2], "exec")) {
		pid = fork();
		if (pid == 0) {
			execl("/proc/self/exe", "chdir_fork", "leaf", (char *)NULL);
			_exit(127);
		}
		if (!wait_ok(pid))
			return 3;
	}
	return 0;
}
