/* html_blocks.c - per-block figures known by construction for the HTML
 * report's filters (tests/e2e/test_html.py, html.blocks). Two threads run
 * one after the other through the same allocation site (blk_alloc, called
 * from one place in work, so one stack), each with its own plan:
 *   thread "blk-1"  40 blocks of 100 B, each freed at once (temporary);
 *                   3 blocks of 700 B never freed
 *   thread "blk-2"  (150 ms later) 2 blocks of 900 B never freed, 4 of
 *                   500 B held, then 30 of 200 B freed at once (the first
 *                   of them is the run's peak: 2100 + 1800 + 2000 + 200 B),
 *                   then 50 ms later the 4 blocks of 500 B are freed
 * and main: main_temp makes 10 temporary blocks of 64 B before the threads,
 * main_leak leaks one of 333 B after them. So per block: thread blk-2 and
 * only temporaries give 30 blocks of 6000 B at blk_alloc, where per site
 * they would give blk_alloc's 70 temporaries or blk-2's 36 blocks; only
 * leaked with blk-1 gives 3 blocks of 2100 B; leaked and temporary
 * together give nothing.
 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

struct step {
	size_t size;
	int how; /* 0: free at once, 1: keep to the thread's end, 2: never free */
};

static void *volatile sink;

__attribute__((noinline)) static void *blk_alloc(size_t size)
{
	return malloc(size);
}

__attribute__((noinline)) static void main_temp(void)
{
	for (int i = 0; i < 10; i++) {
		sink = malloc(64);
		free(sink);
	}
}

__attribute__((noinline)) static void main_leak(void)
{
	sink = malloc(333);
}

static void pause_ms(long ms)
{
	struct timespec ts = { 0, ms * 1000 * 1000 };
	nanosleep(&ts, NULL);
}

static void *work(void *arg)
{
	int id = *(int *)arg;
	struct step plan[80];
	int n = 0;
	if (id == 1) {
		pthread_setname_np(pthread_self(), "blk-1");
		for (int i = 0; i < 40; i++)
			plan[n++] = (struct step){ 100, 0 };
		for (int i = 0; i < 3; i++)
			plan[n++] = (struct step){ 700, 2 };
	} else {
		pthread_setname_np(pthread_self(), "blk-2");
		for (int i = 0; i < 2; i++)
			plan[n++] = (struct step){ 900, 2 };
		for (int i = 0; i < 4; i++)
			plan[n++] = (struct step){ 500, 1 };
		for (int i = 0; i < 30; i++)
			plan[n++] = (struct step){ 200, 0 };
	}
	void *kept[80];
	int nk = 0;
	for (int i = 0; i < n; i++) {
		void *p = blk_alloc(plan[i].size); /* the one call: one site */
		if (plan[i].how == 0)
			free(p);
		else if (plan[i].how == 1)
			kept[nk++] = p;
		else
			sink = p;
	}
	if (nk) {
		pause_ms(50); /* the held blocks live 50 ms at least */
		for (int i = 0; i < nk; i++)
			free(kept[i]);
	}
	return NULL;
}

int main(void)
{
	static int ids[2] = { 1, 2 };
	pthread_t t;
	main_temp();
	pthread_create(&t, NULL, work, &ids[0]);
	pthread_join(t, NULL);
	pause_ms(150);
	pthread_create(&t, NULL, work, &ids[1]);
	pthread_join(t, NULL);
	main_leak();
	pause_ms(30); /* blk-2's leaks live 80 ms at least */
	return 0;
}
