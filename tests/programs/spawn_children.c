/* spawn_children.c - starts exec_target (same directory) as a child in
 * every way that bypasses the fork handlers an agent can register:
 *
 *   spawn     posix_spawn (glibc clones and execs inside libc)
 *   system    system("exec_target from-exec") through /bin/sh
 *   vfork     vfork, then execve with environ
 *   fork_env  fork, then execve with a copy of the environment's strings
 *             taken before the fork
 *
 * and checks each child's exit status (exec_target returns 0 when given
 * "from-exec"). The parent's own work, in spawn_work: 4 x malloc(512),
 * 2 freed: 4 allocations, 2 frees, 2048 bytes; 2 blocks / 1024 bytes live.
 * No stdio; the path comes from readlink into a static buffer. Exit status
 * 0, or 10 + the number of the mode that failed.
 */
#include <limits.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static void *volatile keep[4];
static char path[PATH_MAX];
static char env_copy[1 << 16];
static char *env_ptrs[512];

static void spawn_work(void)
{
	for (int i = 0; i < 4; i++) {
		keep[i] = malloc(512);
		memset(keep[i], i, 512);
	}
	free(keep[0]);
	free(keep[1]);
}

static int wait_ok(pid_t pid)
{
	int status;
	return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	       WEXITSTATUS(status) == 0;
}

/* The environment's strings, copied: a fork child editing its own
 * environ's strings does not reach these. */
static void copy_environ(void)
{
	size_t used = 0, n = 0;
	for (char **e = environ; *e && n + 1 < sizeof env_ptrs / sizeof *env_ptrs; e++) {
		size_t len = strlen(*e) + 1;
		if (used + len > sizeof env_copy)
			break;
		memcpy(env_copy + used, *e, len);
		env_ptrs[n++] = env_copy + used;
		used += len;
	}
	env_ptrs[n] = NULL;
}

int main(void)
{
	spawn_work();
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 32);
	if (n <= 0)
		return 9;
	path[n] = 0;
	strcpy(strrchr(path, '/') + 1, "exec_target");
	char *argv[] = {path, "from-exec", NULL};

	pid_t pid;
	if (posix_spawn(&pid, path, NULL, NULL, argv, environ) != 0 || !wait_ok(pid))
		return 11;

	static char cmd[PATH_MAX + 32];
	strcpy(cmd, path);
	strcat(cmd, " from-exec");
	int st = system(cmd);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return 12;

	pid = vfork();
	if (pid == 0) {
		execve(path, argv, environ);
		_exit(127);
	}
	if (!wait_ok(pid))
		return 13;

	copy_environ();
	pid = fork();
	if (pid == 0) {
		execve(path, argv, env_ptrs);
		_exit(127);
	}
	if (!wait_ok(pid))
		return 14;
	return 0;
}
