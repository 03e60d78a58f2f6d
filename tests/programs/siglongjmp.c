/* siglongjmp.c - a SIGALRM handler that leaves by siglongjmp, interrupting
 * a program that allocates all the time (so, under heaptrail, often the
 * agent). With the argument "rt", the signal is SIGRTMIN instead, from a
 * POSIX timer (real-time signals queue, and keep their order).
 *
 *   main       malloc(24) + free, N times for 300 ms      N allocs  N frees
 *   on_alarm   SIGALRM every 100 us (setitimer); siglongjmps back to main's
 *              loop when it interrupted spin() (plain code, nothing held),
 *              or any code of libheaptrail.so; returns otherwise (glibc's
 *              malloc must not be left half done)
 *
 * A program may leave a handler by siglongjmp from wherever the signal
 * found it. The agent must never run an asynchronous handler in the
 * middle of its own work: one that left by siglongjmp there would leave
 * the agent's state half done (the thread recorded nothing more after).
 * Prints "N H J A" on stdout (write, no stdio): N allocations, H signals
 * handled, J jumps out of spin(), A handlers that found the agent
 * interrupted (A is 0 under a correct agent). Expected report: N + 1
 * allocations (main's, and setitimer's none: one for the warm-up),
 * N + 1 frees, nothing leaked.
 */
#include <link.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "put_u.h"

static sigjmp_buf env;
static volatile sig_atomic_t handled, jumps, in_agent;
static uintptr_t agent_lo, agent_hi;
extern char __start_spin_text[], __stop_spin_text[];

/* a short busy loop: the one place of main's where leaving is safe */
__attribute__((noinline, section("spin_text"))) static void spin(void)
{
	for (volatile int i = 0; i < 40; i++)
		;
}

static void on_alarm(int sig, siginfo_t *si, void *ucv)
{
	(void)sig;
	(void)si;
	uintptr_t pc = (uintptr_t)((ucontext_t *)ucv)->uc_mcontext.gregs[REG_RIP];
	handled++;
	if (pc >= agent_lo && pc < agent_hi) {
		in_agent++;
		siglongjmp(env, 1);
	}
	if (pc >= (uintptr_t)__start_spin_text && pc < (uintptr_t)__stop_spin_text) {
		jumps++;
		siglongjmp(env, 1);
	}
}

/* the executable segment of libheaptrail.so, if it is loaded */
static int find_agent(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	(void)data;
	if (!strstr(info->dlpi_name, "libheaptrail"))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			agent_lo = info->dlpi_addr + ph->p_vaddr;
			agent_hi = agent_lo + ph->p_memsz;
		}
	}
	return 1;
}

static long elapsed_ns(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000000000L + (t.tv_nsec - t0->tv_nsec);
}

int main(int argc, char **argv)
{
	int rt = argc > 1 && !strcmp(argv[1], "rt");
	int sig = rt ? SIGRTMIN : SIGALRM;
	free(malloc(8)); /* the agent's start, before the timer */
	dl_iterate_phdr(find_agent, NULL);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_alarm;
	sa.sa_flags = SA_SIGINFO;
	sigaction(sig, &sa, NULL);
	struct itimerval it = {{0, 100}, {0, 100}};
	static struct timespec t0;
	static volatile unsigned long n;
	timer_t timer;
	struct sigevent sev;
	memset(&sev, 0, sizeof sev);
	sev.sigev_notify = SIGEV_SIGNAL;
	sev.sigev_signo = sig;
	struct itimerspec its = {{0, 100000}, {0, 100000}};
	if (rt && timer_create(CLOCK_MONOTONIC, &sev, &timer) != 0)
		return 3;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (rt)
		timer_settime(timer, 0, &its, NULL);
	else
		setitimer(ITIMER_REAL, &it, NULL);
	sigsetjmp(env, 1);
	while (elapsed_ns(&t0) < 300000000L) {
		for (int i = 0; i < 64; i++) {
			spin();
			void *p = malloc(24);
			memset(p, 0, 24);
			free(p);
			n++;
		}
	}
	struct itimerval off = {{0, 0}, {0, 0}};
	if (rt)
		timer_delete(timer);
	else
		setitimer(ITIMER_REAL, &off, NULL);
	unsigned long figures[] = { n, (unsigned long)handled, (unsigned long)jumps,
				    (unsigned long)in_agent };
	return print_figures(figures, 4);
}
