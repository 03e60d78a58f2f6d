/* unwind.c - capture the return addresses of the current call stack.
 *
 * Two backends:
 * - libunwind's unw_backtrace (default): DWARF CFI, right on code built
 *   without frame pointers (most distribution binaries). A frame it has
 *   met before is replayed from its per-thread trace cache, without locks.
 * - a frame-pointer walker (unwind=fp): a few loads per frame, for programs
 *   built with -fno-omit-frame-pointer. Every frame pointer is checked against
 *   the thread's stack bounds, so garbage ends the walk instead of a crash;
 *   a walk that starts on another stack (a coroutine's, an alternate signal
 *   stack) checks each page it enters instead (ht_fp_walk_foreign).
 *
 * A frame it has not met (and every unw_step) goes through its DWARF path,
 * whose register-state cache and memory pools libunwind 1.6 (as Debian
 * builds it) guards with locks taken with every signal masked: two
 * sigprocmask system calls per lock, several locks per frame; gcc's cc1
 * made 231,000 of those calls under the agent. So the agent blocks the
 * signals itself once around each of its unwinds (ht_unwind_begin/end) and
 * interposes sigprocmask: libunwind's calls during the agent's unwinds do
 * nothing. Two system calls per unwind, none per lock, and no handler can
 * interrupt libunwind while it holds a lock, as it wants. Blocking up front
 * rather than at libunwind's first call keeps out a handler that would run
 * before it and use libunwind itself (a CPU profiler's SIGPROF): its calls
 * would be taken for the agent's. The synchronous faults stay open: reading
 * a broken stack must still reach the handler that finishes the trace (a
 * blocked one kills the process at once). Calls from anywhere else, and
 * from libunwind outside the agent's unwinds, go to libc unchanged.
 *
 * Frames are raw return addresses; symbolization happens later, in the CLI.
 * The capture itself is inline (agent/unwind.h), so that the walk starts in
 * the hook's own frame: every agent frame costs a lookup per event.
 */
#define UNW_LOCAL_ONLY
#include <errno.h>
#include <libunwind.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "agent.h"
#include "unwind.h"

/* A walk that starts outside the thread's stack bounds runs on another
 * stack: a coroutine's (makecontext, a fiber library's), or the alternate
 * stack of a signal handler, whose frame chain goes on into the code it
 * interrupted when that lies higher (the walk only climbs). Its bounds
 * are unknown, so each page the walk enters is
 * checked first: process_vm_readv of one byte fails with EFAULT where a
 * load would fault (unmapped, a guard page), and protection is per page.
 * One system call per page: a few per capture, on this path only. */
static bool page_readable(uintptr_t page)
{
	char byte;
	struct iovec local = {&byte, 1}, remote = {(void *)page, 1};
	return syscall(SYS_process_vm_readv, (long)getpid(), &local, 1L, &remote, 1L, 0L) == 1;
}

unsigned ht_fp_walk_foreign(uintptr_t fp, void **out, unsigned max)
{
	const uintptr_t page = 4096;
	/* fp's own page holds the hook's frame: readable */
	uintptr_t ok_lo = fp & ~(page - 1), ok_hi = ok_lo + page;
	unsigned n = 0;
	while (n < max && !(fp & 7)) {
		/* the frame's two words lie in [fp, fp + 16): extend the
		 * readable range over the pages they touch */
		for (uintptr_t p = fp & ~(page - 1); p < fp + 16; p += page) {
			if (p >= ok_lo && p < ok_hi)
				continue;
			if (!page_readable(p))
				return n;
			if (p == ok_hi)
				ok_hi += page;
			else
				ok_lo = p, ok_hi = p + page;
		}
		uintptr_t next = ((uintptr_t *)fp)[0];
		uintptr_t ret = ((uintptr_t *)fp)[1];
		if (!ret)
			break;
		out[n++] = (void *)ret;
		if (next <= fp) /* callers live higher, on this stack or the next */
			break;
		fp = next;
	}
	return n;
}

/* Every signal but the synchronous faults (above): built once. */
static sigset_t unwind_mask;

void ht_unwind_init(void)
{
	ht_async_signals(&unwind_mask);
	/* Cache unwind info per thread where libunwind can, and warm the
	 * caches up before the hooks are armed. */
	unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
	void *warm[8];
	unw_backtrace(warm, 8);
}

void ht_unwind_begin(ht_thread_t *t)
{
	pthread_sigmask(SIG_SETMASK, &unwind_mask, &t->unwind_saved_mask);
	t->unwinding = true;
}

void ht_unwind_end(ht_thread_t *t)
{
	t->unwinding = false;
	pthread_sigmask(SIG_SETMASK, &t->unwind_saved_mask, NULL);
}

/* The program's sigprocmask is glibc's: pthread_sigmask with errno. */
HT_EXPORT int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	ht_thread_t *t = ht_tls_thread;
	uintptr_t caller = (uintptr_t)__builtin_return_address(0);
	if (HT_UNLIKELY(t != NULL && t->unwinding) &&
	    caller - ht_libunwind_lo < ht_libunwind_hi - ht_libunwind_lo) {
		/* libunwind inside an agent unwind: already blocked */
		if (old)
			*old = t->unwind_saved_mask;
		return 0;
	}
	int r = pthread_sigmask(how, set, old);
	if (r != 0) {
		errno = r;
		return -1;
	}
	return 0;
}
