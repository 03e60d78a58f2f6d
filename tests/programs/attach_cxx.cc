/* attach_cxx.cc - attach_loop.c with operator new[] and delete[], and new
 * and delete of an object every iteration, for heaptrail attach.
 *
 * Each worker keeps 8 arrays; an iteration replaces one of them (delete[],
 * new[]) and makes and deletes one object. So blocks allocated before an attach are freed or
 * realloc'ed after it. The main thread waits for SIGUSR1 in sigwaitinfo
 * (a blocked system call to attach across) and toggles: the first stops
 * the workers at a barrier and prints "paused" with the totals so far, the
 * next lets them go ("running"), and so on (the totals end with each
 * thread's iterations so far); SIGTERM (or stdin's end when
 * given "stdin") stops them for good, and the program checks its blocks
 * and prints "done" with its totals, exiting 0. While paused, no thread
 * allocates: the trace's counts for an attach made and undone while paused
 * equal the difference of two printed totals.
 */
#include <pthread.h>
#include <signal.h>
#include <atomic>
#include <stdio.h>
#include <stdlib.h>
#include <new>
#include <string.h>
#include <unistd.h>

#define NT 4
#define KEEP 8

static std::atomic<int> paused, quit;
static std::atomic<int> waiting;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static unsigned long allocs[NT], frees[NT], bytes[NT], iters[NT];
static int bad;

static void *worker(void *arg)
{
	long id = (long)arg;
	char *keep[KEEP] = {0};
	size_t size[KEEP] = {0};
	unsigned long it = 0;
	for (;;) {
		if (paused.load()) {
			pthread_mutex_lock(&mu);
			waiting++;
			while (paused.load() && !quit.load())
				pthread_cond_wait(&cv, &mu);
			waiting--;
			pthread_mutex_unlock(&mu);
		}
		if (quit.load())
			break;
		int k = (int)(it % KEEP);
		size_t n = 16 + (size_t)((it * 7 + (unsigned long)id * 13) % 200);
		if (keep[k] && keep[k][0] != (char)(id + 1))
			bad = 1;
		if (keep[k]) {
			delete[] keep[k];
			frees[id]++;
		}
		keep[k] = new char[n];
		memset(keep[k], (char)(id + 1), n);
		size[k] = n;
		allocs[id]++;
		bytes[id] += n;
		struct obj {
			long v[5];
		};
		obj *o = new obj();
		o->v[0] = (long)it;
		if (o->v[1])
			bad = 1;
		delete o;
		allocs[id]++;
		frees[id]++;
		bytes[id] += sizeof(obj);
		it++;
		iters[id] = it;
		if (it % 64 == 0)
			usleep(100);
	}
	for (int k = 0; k < KEEP; k++)
		if (keep[k]) {
			if (keep[k][size[k] - 1] != (char)(id + 1))
				bad = 1;
			delete[] keep[k];
			frees[id]++;
		}
	return NULL;
}

static void totals(const char *what)
{
	unsigned long a = 0, f = 0, b = 0;
	for (int i = 0; i < NT; i++) {
		a += allocs[i];
		f += frees[i];
		b += bytes[i];
	}
	char line[256];
	int n = snprintf(line, sizeof line,
			 "%s allocs=%lu frees=%lu bytes=%lu it0=%lu it1=%lu it2=%lu it3=%lu\n", what, a, f,
			 b, iters[0], iters[1], iters[2], iters[3]);
	if (write(1, line, (size_t)n) != n)
		_exit(3);
}

static void *stdin_watch(void *arg)
{
	(void)arg;
	char buf[256];
	while (read(0, buf, sizeof buf) > 0)
		;
	kill(getpid(), SIGTERM);
	return NULL;
}

int main(int argc, char **argv)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL); /* the workers inherit it */
	pthread_t th[NT + 1];
	for (long i = 0; i < NT; i++)
		pthread_create(&th[i], NULL, worker, (void *)i);
	if (argc > 1 && !strcmp(argv[1], "stdin"))
		pthread_create(&th[NT], NULL, stdin_watch, NULL);
	if (write(1, "ready\n", 6) != 6)
		return 3;
	for (;;) {
		siginfo_t si;
		int sig = sigwaitinfo(&set, &si);
		if (sig == SIGTERM)
			break;
		if (sig != SIGUSR1)
			continue;
		if (!paused.load()) {
			paused.store(1);
			while (waiting.load() < NT)
				usleep(200);
			totals("paused");
		} else {
			pthread_mutex_lock(&mu);
			paused.store(0);
			pthread_cond_broadcast(&cv);
			pthread_mutex_unlock(&mu);
			if (write(1, "running\n", 8) != 8)
				return 3;
		}
	}
	pthread_mutex_lock(&mu);
	quit.store(1);
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	for (int i = 0; i < NT; i++)
		pthread_join(th[i], NULL);
	totals("done");
	return bad ? 1 : 0;
}
