/* key_after_agent.c - a program's thread-specific key whose destructor
 * frees: it runs after the agent's own key's destructor (the agent's key
 * was made first), when the agent has already let the thread's state go.
 *
 *   work    2000 threads, one after the other: malloc(32) into the key,
 *           freed by its destructor at the thread's end
 *                                                2000 allocs  2000 frees
 *   deep    one more thread: malloc(1000), its only pointer left in a
 *           dead stack slot (definitely lost once the thread is gone),
 *           and a key value freed by the destructor   2 allocs  1 free
 * A second key's destructor, run last, opens and closes /dev/null: the
 * thread's last events are then a descriptor's, not the heap's.
 * Expected: the 2000 blocks at work freed, the 1000 bytes at deep
 * definitely lost (the dead thread's stack is no root).
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

static pthread_key_t key, fd_key;

static void destroy(void *p)
{
	free(p);
}

static void reopen(void *p)
{
	(void)p;
	int fd = open("/dev/null", O_RDONLY);
	if (fd >= 0)
		close(fd);
}

__attribute__((noinline)) static void *work(void *arg)
{
	(void)arg;
	pthread_setspecific(key, malloc(32));
	pthread_setspecific(fd_key, (void *)1);
	return NULL;
}

__attribute__((noinline)) static void deep(void)
{
	volatile void *slot[2048];
	slot[10] = malloc(1000);
	slot[2000] = 0;
}

static void *leaker(void *arg)
{
	(void)arg;
	deep();
	pthread_setspecific(key, malloc(32));
	pthread_setspecific(fd_key, (void *)1);
	return NULL;
}

int main(void)
{
	if (pthread_key_create(&key, destroy) != 0 || pthread_key_create(&fd_key, reopen) != 0)
		return 1;
	for (int i = 0; i < 2000; i++) {
		pthread_t th;
		if (pthread_create(&th, NULL, work, NULL) != 0)
			return 1;
		pthread_join(th, NULL);
	}
	pthread_t th;
	if (pthread_create(&th, NULL, leaker, NULL) != 0)
		return 1;
	pthread_join(th, NULL);
	return 0;
}
