/* exec_parent.c - allocates, then execs exec_target (same directory) with
 * the argument "from-exec". Both images are traced, each into its own file.
 *
 *   image        function     calls                          allocs frees bytes
 *   exec_parent  before_exec  malloc(1234) freed,               2     1   5555
 *                             malloc(4321) live at the exec
 *   exec_parent trace: 2 allocs, 1 free, 5555 bytes; 1 block / 4321 bytes
 *   live when the image is replaced (leaf before_exec).
 *   exec_target trace: see exec_target.c (3 allocs, 2 frees, 3000 bytes).
 *   The process exits with exec_target's status, 0 (exec_parent returns 127
 *   only if the exec fails). No stdio, no allocation by libc: the path comes
 *   from readlink into a static buffer, execv calls execve directly.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *volatile live;
static char path[PATH_MAX];

static void before_exec(void)
{
	void *p = malloc(1234);
	memset(p, 0, 1234);
	free(p);
	live = malloc(4321);
	memset(live, 0, 4321);
}

int main(void)
{
	before_exec();
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 32);
	if (n <= 0)
		return 127;
	path[n] = 0;
	char *slash = strrchr(path, '/');
	strcpy(slash + 1, "exec_target");
	char *argv[] = {path, "from-exec", NULL};
	execv(path, argv);
	return 127;
}
