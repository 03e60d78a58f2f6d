/* attach_getattr.c - for heaptrail attach: the main thread's first call
 * into malloc after the attach comes from inside pthread_getattr_np (which
 * reads /proc/self/maps with stdio while it holds the thread's lock), the
 * agent's own first look at the thread's stack needs that lock too. For
 * each line on stdin: pthread_getattr_np on itself, "ok"; at the end
 * "done", 0. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

int main(void)
{
	char line[64];
	if (write(1, "ready\n", 6) != 6)
		return 3;
	while (read(0, line, sizeof line) > 0) {
		pthread_attr_t a;
		size_t size = 0;
		if (pthread_getattr_np(pthread_self(), &a) || pthread_attr_getstacksize(&a, &size) ||
		    !size)
			return 1;
		pthread_attr_destroy(&a);
		if (write(1, "ok\n", 3) != 3)
			return 3;
	}
	if (write(1, "done\n", 5) != 5)
		return 3;
	return 0;
}
