/* unwind.c - capture the return addresses of the current call stack.
 *
 * Two backends:
 * - libunwind's unw_backtrace (default): DWARF CFI, right on code built
 *   without frame pointers (most distribution binaries). With the per-thread
 *   cache policy it replays cached frame descriptions, without locks.
 * - a frame-pointer walker (unwind=fp): a few loads per frame, for programs
 *   built with -fno-omit-frame-pointer. Every frame pointer is checked against
 *   the thread's stack bounds, so garbage ends the walk instead of a crash.
 *
 * Frames are raw return addresses; symbolization happens later, in the CLI.
 * The agent's own frames (the hook and what it calls) are dropped, so
 * frames[0] is the return address into the caller of malloc/new.
 */
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "agent.h"

static unsigned fp_walk(ht_thread_t *t, void **out, unsigned max)
{
	uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
	uintptr_t lo = t->stack_lo, hi = t->stack_hi;
	unsigned n = 0;
	if (!hi) { /* unknown bounds: allow a window above the current frame */
		lo = fp;
		hi = fp + (8u << 20);
	}
	while (n < max) {
		if (fp < lo || fp + 16 > hi || (fp & 7))
			break;
		uintptr_t next = ((uintptr_t *)fp)[0];
		uintptr_t ret = ((uintptr_t *)fp)[1];
		if (!ret)
			break;
		out[n++] = (void *)ret;
		if (next <= fp) /* the stack grows down: callers live higher */
			break;
		fp = next;
	}
	return n;
}

/* Our frames sit at the top of any capture; a small fixed allowance. */
#define HT_AGENT_FRAMES 8

unsigned ht_unwind(ht_thread_t *t)
{
	void **f = t->frames;
	unsigned max = ht_opt_depth + HT_AGENT_FRAMES;
	unsigned n;
	if (ht_opt_unwind_fp)
		n = fp_walk(t, f, max);
	else {
		int r = unw_backtrace(f, (int)max);
		n = r > 0 ? (unsigned)r : 0;
	}
	/* Drop the agent's frames: the hook on top, and main_wrapper (hooks.c)
	 * near the root, between main and libc. */
	unsigned out = 0;
	for (unsigned i = 0; i < n && out < ht_opt_depth; i++) {
		if (!ht_addr_in_agent((uintptr_t)f[i]))
			f[out++] = f[i];
	}
	n = out;
	return n;
}

void ht_unwind_init(void)
{
	/* Cache unwind info per thread, so that unwinding takes no lock, and
	 * warm the cache up before the hooks are armed. */
	unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
	void *warm[8];
	unw_backtrace(warm, 8);
}
