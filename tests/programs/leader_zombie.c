/* leader_zombie.c - main ends with pthread_exit; a worker keeps a
 * block in a global and the process ends when the worker returns.
 *
 *   worker  malloc(100) into a global (still reachable), 4 MiB touched
 *           and freed (so the peak RSS is above 4 MiB)
 * Expected: no block lost (the global's is still reachable), peak RSS
 * at least 4 MiB: after main's pthread_exit, /proc/self (the thread group's
 * leader, a zombie) shows neither memory map nor RSS, and the agent must
 * read its own thread's.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void *volatile global_keep;

static void *worker(void *arg)
{
	(void)arg;
	usleep(100000); /* main has left by now */
	global_keep = malloc(100);
	char *big = malloc(4 << 20);
	memset(big, 1, 4 << 20);
	free(big);
	return NULL;
}

int main(void)
{
	pthread_t th;
	if (pthread_create(&th, NULL, worker, NULL) != 0)
		return 1;
	pthread_exit(NULL);
}
