/* sigreadback.c - prints what every way of setting a signal's disposition
 * returns and what sigaction reads back: handlers set by signal, sigaction,
 * bsd_signal, sysv_signal, ssignal and sigset, SIG_DFL set on signals the
 * agent catches (SIGINT, SIGTERM), one never touched (SIGHUP), signal()
 * after siginterrupt (no SA_RESTART). Under
 * heaptrail the output must be the plain run's, byte for byte. Exit 0.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#pragma GCC diagnostic ignored "-Wdeprecated-declarations" /* sigset: tested on purpose */

extern __sighandler_t bsd_signal(int, __sighandler_t);

static void h1(int s)
{
	(void)s;
}

static void h3(int s)
{
	(void)s;
}

static void h4(int s, siginfo_t *i, void *u)
{
	(void)s;
	(void)i;
	(void)u;
}

static const char *n(__sighandler_t p)
{
	return p == h1 ? "h1" : p == h3 ? "h3" : p == SIG_DFL ? "SIG_DFL" : p == SIG_IGN ? "SIG_IGN" : "OTHER";
}

static void show(const char *what, int sig)
{
	struct sigaction a;
	sigaction(sig, NULL, &a);
	const char *h = (a.sa_flags & SA_SIGINFO) ? (a.sa_sigaction == h4 ? "h4" : "OTHER")
						 : n(a.sa_handler);
	printf("%s: %s flags %#x mask-quit %d mask-kill %d\n", what, h, (unsigned)a.sa_flags,
	       sigismember(&a.sa_mask, SIGQUIT), sigismember(&a.sa_mask, SIGKILL));
}

int main(void)
{
	printf("fresh sysv_signal(SIGTERM): %s\n", n(sysv_signal(SIGTERM, h1)));
	printf("fresh sigset(SIGUSR2): %s\n", n(sigset(SIGUSR2, h1)));
	signal(SIGUSR1, h1);
	printf("bsd_signal: %s\n", n(bsd_signal(SIGUSR1, h3)));
	signal(SIGUSR1, h1);
	printf("sysv_signal: %s\n", n(sysv_signal(SIGUSR1, h3)));
	show("after sysv_signal", SIGUSR1);
	signal(SIGUSR1, h1);
	printf("sigset: %s\n", n(sigset(SIGUSR1, h3)));
	signal(SIGUSR1, h1);
	printf("ssignal: %s\n", n(ssignal(SIGUSR1, h3)));
	signal(SIGINT, h1);
	printf("signal(SIGINT, SIG_DFL): %s\n", n(signal(SIGINT, SIG_DFL)));
	printf("signal(SIGINT, h3): %s\n", n(signal(SIGINT, h3)));
	show("SIGINT", SIGINT);
	struct sigaction d;
	memset(&d, 0, sizeof d);
	d.sa_handler = SIG_DFL;
	d.sa_flags = SA_RESTART;
	sigfillset(&d.sa_mask);
	sigaction(SIGTERM, &d, NULL);
	show("SIGTERM set to SIG_DFL", SIGTERM);
	d.sa_sigaction = h4;
	d.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
	sigemptyset(&d.sa_mask);
	sigaddset(&d.sa_mask, SIGQUIT);
	struct sigaction old;
	sigaction(SIGTERM, &d, &old);
	printf("old SIGTERM: %s flags %#x\n", n(old.sa_handler), (unsigned)old.sa_flags);
	show("SIGTERM set to h4", SIGTERM);
	show("SIGHUP untouched", SIGHUP);
	siginterrupt(SIGUSR2, 1); /* signal() then leaves SA_RESTART out */
	signal(SIGUSR2, h1);
	show("SIGUSR2 after siginterrupt", SIGUSR2);
	return 0;
}
