/* odd_exits.c - ways out of a process that bypass exit()'s usual path,
 * chosen by argv[1]. No stdio.
 *
 *   vfork_exit   2 x malloc(100), 1 freed; a vfork child calls exit(5)
 *                (undefined by POSIX, fine natively: it runs the shared
 *                exit handlers); the parent waits, then 2 x malloc(50),
 *                both freed. 4 allocations, 3 frees, 300 bytes; 1 block
 *                (100 bytes) leaked. Exit status 0.
 *   quick_exit   3 x malloc(100); an at_quick_exit handler frees one;
 *                quick_exit(3). 3 allocations, 1 free, 300 bytes. Exit 3.
 *   execveat     2 x malloc(64), 1 freed, then execveat of /bin/true:
 *                the trace before the exec holds them. Exit 0 (true's).
 *   untraced     the same, then execve of /bin/true with an empty
 *                environment (no LD_PRELOAD): the new image is not traced,
 *                and heaptrail run must say so. Exit 0.
 *   exit_group   2 x malloc(64), 1 freed, then the raw exit_group system
 *                call (Go programs leave so): no hook sees it, the events
 *                still buffered are lost, and heaptrail run must say the
 *                figures are partial. Exit 4.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;
static void *volatile blocks[3];

static void free_one(void)
{
	free(blocks[0]);
}

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "";
	if (!strcmp(how, "vfork_exit")) {
		blocks[0] = malloc(100);
		blocks[1] = malloc(100);
		free(blocks[0]);
		pid_t pid = vfork();
		if (pid == 0)
			exit(5);
		int status;
		if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 5)
			return 1;
		for (int i = 0; i < 2; i++)
			free(malloc(50));
		return 0;
	}
	if (!strcmp(how, "quick_exit")) {
		for (int i = 0; i < 3; i++)
			blocks[i] = malloc(100);
		at_quick_exit(free_one);
		quick_exit(3);
	}
	if (!strcmp(how, "execveat") || !strcmp(how, "untraced")) {
		blocks[0] = malloc(64);
		blocks[1] = malloc(64);
		free(blocks[0]);
		char *args[] = { "true", NULL }, *none[] = { NULL };
		if (!strcmp(how, "untraced"))
			execve("/bin/true", args, none);
		else
			execveat(AT_FDCWD, "/bin/true", args, environ, 0);
		return 1;
	}
	if (!strcmp(how, "exit_group")) {
		blocks[0] = malloc(64);
		blocks[1] = malloc(64);
		free(blocks[0]);
		syscall(SYS_exit_group, 4);
	}
	return 2;
}
