/* getattr_first.c - threads whose first heap call is made inside
 * pthread_getattr_np, which holds the thread's own lock while it allocates
 * (the main thread's reads /proc/self/maps): Rust's runtime does that on
 * the main thread, the JVM on each of its threads. The agent, making the
 * thread's state there, must not ask pthread_getattr_np for the stack
 * bounds under that lock (it hung). Then each thread makes one
 * malloc(1000), freed: a stack walked with the bounds read later.
 * Exit status 0 when both threads saw sane stack attributes.
 */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

static void *volatile sink;

static int check_attr(void)
{
	pthread_attr_t at;
	void *lo;
	size_t size;
	if (pthread_getattr_np(pthread_self(), &at) != 0)
		return 1;
	int bad = pthread_attr_getstack(&at, &lo, &size) != 0 || size == 0;
	pthread_attr_destroy(&at);
	sink = malloc(1000);
	free(sink);
	return bad;
}

static void *run(void *arg)
{
	(void)arg;
	return (void *)(long)check_attr();
}

int main(void)
{
	if (check_attr())
		return 1;
	pthread_t t;
	void *r;
	if (pthread_create(&t, NULL, run, NULL) != 0 || pthread_join(t, &r) != 0)
		return 2;
	return r ? 3 : 0;
}
