/* resources_threads.c - descriptors opened and closed by 4 threads at once
 *: each thread opens and closes /dev/null 2000 times, so numbers
 * pass between threads all the time, then leaks one (thread_leak) and
 * prints "leak thread_leak FD". By construction: 8004 descriptors made,
 * 8000 closed, 4 leaked, all from thread_leak. A report that orders one
 * thread's close after another thread's open of the same number shows
 * extra leaks from churn.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define THREADS 4
#define ROUNDS 2000

static void churn(void)
{
	for (int i = 0; i < ROUNDS; i++) {
		int fd = open("/dev/null", O_RDONLY);
		if (fd < 0 || close(fd) != 0)
			exit(2);
	}
}

static int thread_leak(void)
{
	int fd = open("/dev/null", O_RDONLY);
	if (fd < 0)
		exit(2);
	return fd;
}

static void *run(void *arg)
{
	churn();
	*(int *)arg = thread_leak();
	return NULL;
}

int main(void)
{
	pthread_t th[THREADS];
	int fds[THREADS];
	for (int i = 0; i < THREADS; i++)
		if (pthread_create(&th[i], NULL, run, &fds[i]) != 0)
			return 2;
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < THREADS; i++)
		printf("leak thread_leak %d\n", fds[i]);
	return 0;
}
