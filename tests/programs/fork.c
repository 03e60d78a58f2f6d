/* fork.c - parent and child each allocate known amounts; the child is traced
 * into its own file.
 *
 *   function        process  calls                        allocs frees bytes
 *   before_fork     parent   malloc(111) freed,              2     1    333
 *                            malloc(222) kept across fork
 *   child_work      child    10 x malloc(500), 9 freed      10     9   5000
 *                            (1 leaked, 500 bytes)
 *   parent_after    parent   3 x malloc(700), all freed,     3     3   2100
 *                            after the child has exited
 *   main            parent   free(the 222 block) at the end  0     1      0
 *
 *   parent's trace: 5 allocs, 5 frees, 2433 bytes, nothing leaked.
 *   child's trace: its own events are child_work's: 10 allocs, 9 frees,
 *   5000 bytes, 1 block / 500 bytes leaked by child_work. The child does not
 *   free the inherited 222-byte block and exits with status 0; nothing of
 *   parent_after appears in it. (memcheck, which carries the parent's
 *   counters into the child, says 12 allocs, 10 frees, 5333 bytes for the
 *   child, and 5 / 5 / 2433 for the parent.)
 *   The parent exits 0 if the child exited 0, else 1.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void *volatile kept;

static void before_fork(void)
{
	void *p = malloc(111);
	memset(p, 1, 111);
	free(p);
	kept = malloc(222);
}

static void child_work(void)
{
	void *p[10];
	for (int i = 0; i < 10; i++) {
		p[i] = malloc(500);
		memset(p[i], i, 500);
	}
	for (int i = 0; i < 9; i++)
		free(p[i]);
	kept = p[9]; /* overwritten: the last 500-byte block is leaked */
	kept = NULL;
}

static void parent_after(void)
{
	for (int i = 0; i < 3; i++) {
		void *p = malloc(700);
		memset(p, i, 700);
		free(p);
	}
}

int main(void)
{
	before_fork();
	pid_t pid = fork();
	if (pid < 0)
		return 2;
	if (pid == 0) {
		child_work();
		return 0;
	}
	int status = 0;
	if (waitpid(pid, &status, 0) != pid)
		return 2;
	parent_after();
	free(kept);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
