/* sigprof_unwind.c - a CPU profiler's pattern under the agent: a SIGPROF
 * timer whose handler walks the stack with libunwind, while the program
 * allocates from stacks the agent has to unwind anew (an alloca of one of
 * 16,384 sizes moves each chain, more chains than the agent's stack cache
 * holds). The agent
 * blocks signals while it unwinds, and libunwind takes locks inside both;
 * the handler must keep running, nothing may hang, and the program's mask
 * must come back as it was.
 *
 *   sigprof_unwind    allocates and frees blocks of 40 bytes, 2 at a time,
 *                     for at least 0.5 s of CPU time with a 1 ms profiling
 *                     timer. Exit 0, else: 1 the handler ran fewer than 20
 *                     times, 2 SIGPROF blocked afterwards, 3 timer set-up.
 * No stdio.
 */
#define UNW_LOCAL_ONLY
#include <alloca.h>
#include <libunwind.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static volatile sig_atomic_t ticks;
static void *volatile sink;

static void on_prof(int sig)
{
	(void)sig;
	void *frames[32];
	if (unw_backtrace(frames, 32) > 0)
		ticks++;
}

__attribute__((noinline)) static void leaf(void)
{
	void *p = malloc(40);
	sink = p;
	free(p);
}

__attribute__((noinline)) static void shifted(unsigned pad)
{
	volatile char *gap = alloca(16 + pad * 16);
	gap[0] = 0;
	leaf();
	leaf();
	__asm__ volatile("" ::: "memory"); /* not a tail call */
}

static double cpu_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_prof;
	sa.sa_flags = SA_RESTART;
	struct itimerval it = {{0, 1000}, {0, 1000}};
	if (sigaction(SIGPROF, &sa, NULL) != 0 || setitimer(ITIMER_PROF, &it, NULL) != 0)
		return 3;
	double start = cpu_seconds();
	for (unsigned i = 0; (i & 1023) || cpu_seconds() - start < 0.5; i++)
		shifted((i * 40503u) % 16384);
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_PROF, &off, NULL);
	sigset_t now;
	sigprocmask(SIG_SETMASK, NULL, &now);
	if (sigismember(&now, SIGPROF))
		return 2;
	return ticks >= 20 ? 0 : 1;
}
