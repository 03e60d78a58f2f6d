/* main_named.c - the main thread named by the program. Usage: main_named
 * HOW, HOW one of
 *   prctl    prctl(PR_SET_NAME, "mainloop") after main's first events
 *   setname  pthread_setname_np(pthread_self(), "mainloop")
 *   exit     prctl as above, then pthread_exit from main (the worker ends
 *            the process)
 *   keep     never renamed: the process's own name
 * and a worker thread that names itself "helper". Each thread makes 10
 * malloc/free pairs. The trace names main "mainloop" (none with keep) and
 * the worker "helper". Exit status 0. No stdio.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

static void *volatile sink;

static void churn(void)
{
	for (int i = 0; i < 10; i++) {
		sink = malloc(16);
		free(sink);
	}
}

static void *helper(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "helper");
	churn();
	return NULL;
}

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "prctl";
	churn();
	if (!strcmp(how, "prctl") || !strcmp(how, "exit"))
		prctl(PR_SET_NAME, "mainloop");
	else if (!strcmp(how, "setname"))
		pthread_setname_np(pthread_self(), "mainloop");
	else if (strcmp(how, "keep"))
		return 2;
	pthread_t t;
	if (pthread_create(&t, NULL, helper, NULL))
		return 1;
	if (!strcmp(how, "exit"))
		pthread_exit(NULL);
	pthread_join(t, NULL);
	return 0;
}
