/* exit_while_forking.c - the main thread calls exit() while three other
 * threads allocate and fork, again and again.
 *
 *   main      malloc(64) 100 times, kept; starts the threads; after 20 ms,
 *             exit(7)
 *   forker    malloc and free, and every 65,536 rounds a fork whose child
 *             leaves by _exit(0) at once; the parent waits
 * Expected: exit status 7 at once, and a whole trace ended by exit with
 * main's 100 blocks in use. glibc's exit drops a library's fork handlers
 * with its destructors, before the agent ends the trace: a fork in
 * between kept every lock of the agent's (the exit waited a minute and
 * wrote no END), 1 run in 2 here.
 */
#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void *volatile keep[100];

static void *forker(void *arg)
{
	(void)arg;
	for (unsigned long n = 1;; n++) {
		void *p = malloc(32 + (n & 255));
		__asm__ volatile("" : : "r"(p) : "memory"); /* kept: not elided */
		free(p);
		if (n % 65536 == 0) {
			pid_t c = fork();
			if (c == 0)
				_exit(0);
			if (c > 0)
				waitpid(c, NULL, 0);
		}
	}
	return NULL;
}

int main(void)
{
	for (int i = 0; i < 100; i++)
		keep[i] = malloc(64);
	pthread_t t[3];
	for (int i = 0; i < 3; i++)
		if (pthread_create(&t[i], NULL, forker, NULL))
			return 1;
	struct timespec wait = {0, 20 * 1000 * 1000};
	nanosleep(&wait, NULL);
	exit(7);
}
