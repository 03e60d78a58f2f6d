/* rawclone_vm.c - a child made by a raw clone(CLONE_VM | SIGCHLD): another
 * process sharing the parent's memory (and, without CLONE_SETTLS, its
 * thread pointer), that allocates while the parent waits for it.
 *
 *   main      malloc(100) + free, 100 times          100 allocs  100 frees
 *             malloc(1 MiB) for the child's stack, freed at the end
 *   child     malloc(100) + free, a 0.7 s sleep (the agent ships a block
 *             that old), malloc(100) + free; returns 3  2 allocs  2 frees
 *   main      waits; malloc(50) + free, 1000 times  1000 allocs 1000 frees
 *
 * Prints "child 3" and, from the exit handler, "exit handler in main"
 * (write, no stdio): as in the plain run, the handler runs once, in main.
 * Expected report: 1103 allocations, 1103 frees, nothing leaked: the
 * child's events land in the parent's trace (same heap, same thread
 * state).
 */
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static pid_t main_pid;

static void say(const char *s)
{
	size_t n = 0;
	while (s[n])
		n++;
	if (write(1, s, n) != (ssize_t)n)
		_exit(1);
}

static void on_exit_handler(void)
{
	say(getpid() == main_pid ? "exit handler in main\n" : "exit handler in the child\n");
}

static int child(void *arg)
{
	(void)arg;
	free(malloc(100));
	usleep(700000);
	free(malloc(100));
	return 3;
}

int main(void)
{
	main_pid = getpid();
	atexit(on_exit_handler);
	for (int i = 0; i < 100; i++)
		free(malloc(100));
	size_t size = 1 << 20;
	char *stack = malloc(size);
	pid_t pid = clone(child, stack + size, CLONE_VM | SIGCHLD, NULL);
	int status = 0;
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return 2;
	say(WEXITSTATUS(status) == 3 ? "child 3\n" : "child: other status\n");
	for (int i = 0; i < 1000; i++)
		free(malloc(50));
	free(stack);
	return 0;
}
