/* unwind.c - capture the return addresses of the current call stack.
 *
 * Two backends:
 * - libunwind's unw_backtrace (default): DWARF CFI, right on code built
 *   without frame pointers (most distribution binaries). A frame it has
 *   met before is replayed from its per-thread trace cache, without locks.
 * - a frame-pointer walker (unwind=fp): a few loads per frame, for programs
 *   built with -fno-omit-frame-pointer. Every frame pointer is checked against
 *   the thread's stack bounds, so garbage ends the walk instead of a crash.
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

#include "agent.h"
#include "unwind.h"

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
