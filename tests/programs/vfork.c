/* vfork.c - a vfork child that calls _exit must not end the parent's trace
 * (the child shares the parent's memory until it execs or exits).
 *
 *   main: malloc(100) x 2 before vfork; the child only calls _exit(0);
 *         then malloc(200) x 3 after it (freed: 3 frees).
 *   totals: 5 allocations, 3 frees, 800 bytes; leaked 2 blocks / 200 bytes.
 */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void *volatile sink[8];

int main(void)
{
	sink[0] = malloc(100);
	sink[1] = malloc(100);
	pid_t pid = vfork();
	if (pid == 0)
		_exit(0);
	if (pid < 0)
		return 1;
	int status;
	waitpid(pid, &status, 0);
	for (int i = 2; i < 5; i++)
		sink[i] = malloc(200);
	for (int i = 2; i < 5; i++)
		free(sink[i]);
	return 0;
}
