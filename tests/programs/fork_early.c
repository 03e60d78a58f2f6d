/* fork_early.c - forks after one allocation, before the agent has a helper
 * thread; the child allocates a little and leaves with _exit. Run under
 * another allocator (jemalloc, tcmalloc, mimalloc), preloaded or linked:
 * their fork handlers hold their locks across the fork, so nothing of the
 * agent's fork handling may allocate or start a thread.
 *
 *   function       process  calls                        allocs bytes leaked
 *   before_fork    parent   malloc(10), freed at the end    1     10     0
 *   child_work     child    2 x malloc(20), both freed      2     40     0
 *   parent_after   parent   3 x malloc(30), all freed       3     90     0
 *
 *   The parent exits 0 if the child exited 0, else 1.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void *volatile kept;

__attribute__((noinline)) static void before_fork(void)
{
	kept = malloc(10);
	memset(kept, 1, 10);
}

__attribute__((noinline)) static void child_work(void)
{
	void *p[2];
	for (int i = 0; i < 2; i++) {
		p[i] = malloc(20);
		memset(p[i], 2, 20);
	}
	for (int i = 0; i < 2; i++)
		free(p[i]);
}

__attribute__((noinline)) static void parent_after(void)
{
	for (int i = 0; i < 3; i++) {
		void *volatile p = malloc(30);
		memset(p, 3, 30);
		free(p);
	}
}

int main(void)
{
	before_fork();
	pid_t c = fork();
	if (c == 0) {
		child_work();
		_exit(0);
	}
	if (c < 0)
		return 1;
	int st = 0;
	if (waitpid(c, &st, 0) != c)
		return 1;
	parent_after();
	free(kept);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
