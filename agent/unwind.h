/* unwind.h - the inline stack capture, used by the hooks (agent/unwind.c
 * explains the two backends).
 *
 * Inline on purpose: libunwind starts from the frame that calls it, and each
 * agent frame between the hook and the program costs a cache lookup per
 * event. The agent's frames that remain (the hook itself, and main_wrapper
 * near the root) are dropped, so frames[0] is the return address into the
 * caller of malloc/new.
 */
#ifndef HEAPTRAIL_UNWIND_H
#define HEAPTRAIL_UNWIND_H

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "agent.h"

__attribute__((always_inline)) static inline unsigned
ht_fp_walk(const ht_thread_t *t, void **out, unsigned max)
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

/* Our frames at the top of a capture: a small fixed allowance. */
#define HT_AGENT_FRAMES 4

/* Captures the current stack into t->frames, leaf first, without the
 * agent's frames. Returns the number of frames. */
__attribute__((always_inline)) static inline unsigned ht_unwind(ht_thread_t *t)
{
	void **f = t->frames;
	unsigned max = ht_opt_depth + HT_AGENT_FRAMES;
	unsigned n;
	if (ht_opt_unwind_fp)
		n = ht_fp_walk(t, f, max);
	else {
		int r = unw_backtrace(f, (int)max);
		n = r > 0 ? (unsigned)r : 0;
	}
	/* Usually only f[0] is ours; the loop also drops main_wrapper. */
	unsigned out = 0;
	for (unsigned i = 0; i < n && out < ht_opt_depth; i++) {
		if (!ht_addr_in_agent((uintptr_t)f[i]))
			f[out++] = f[i];
	}
	return out;
}

#endif /* HEAPTRAIL_UNWIND_H */
