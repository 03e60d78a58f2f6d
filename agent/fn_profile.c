/* fn_profile.c - the function profiler's agent side, and recording on/off.
 *
 * A program built with -finstrument-functions calls __cyg_profile_func_enter
 * and __cyg_profile_func_exit around every function. With functions=1 the
 * agent keeps a per-thread shadow stack of (function, call site) and writes
 * an ENTER and an EXIT event per call into the thread's block. Without the
 * option the two hooks return at once (one load and a branch per call).
 *
 * The shadow stack also gives allocation stacks for free (stacks=shadow, the
 * default with functions=1): the call sites are the return addresses an
 * unwinder would find, for the instrumented frames; frames of code built
 * without the flag (libc, libstdc++) between them are not on it.
 *
 * Recording on/off (heaptrail_set_recording, start=off): while off, ENTER is
 * not written, and a frame remembers whether its ENTER was, so every EXIT
 * written has its ENTER. The hooks of this file run outside the malloc
 * hooks' guard rules only in one way: they never allocate, and they skip
 * when the guard is set (an instrumented signal handler inside a hook), in
 * both enter and exit, so the shadow stack stays balanced.
 */
#include <string.h>

#include "agent.h"

_Atomic bool ht_recording_on = true;
_Atomic bool ht_recording_was_on = true;

/* The thread's state and its shadow stack, or NULL if we cannot record. */
static inline ht_thread_t *shadow_thread(void)
{
	ht_thread_t *t = ht_thread_get();
	if (HT_UNLIKELY(!t))
		return NULL;
	if (HT_UNLIKELY(!t->shadow)) {
		t->shadow = ht_mmap(HT_SHADOW_MAX * sizeof(ht_shadow_frame_t));
		if (!t->shadow)
			return NULL;
	}
	return t;
}


HT_EXPORT void __cyg_profile_func_enter(void *fn, void *call_site);
void __cyg_profile_func_enter(void *fn, void *call_site)
{
	if (HT_LIKELY(!ht_opt_functions) || ht_guard ||
	    atomic_load_explicit(&ht_state, memory_order_relaxed) != HT_STATE_RECORDING)
		return;
	ht_guard = 1;
	ht_thread_t *t = shadow_thread();
	if (!t) {
		ht_guard = 0;
		return;
	}
	if (t->shadow_depth >= HT_SHADOW_MAX) {
		t->shadow_overflow++;
		ht_guard = 0;
		return;
	}
	ht_shadow_frame_t *f = &t->shadow[t->shadow_depth++];
	f->fn = (uintptr_t)fn;
	f->call_site = (uintptr_t)call_site;
	f->recorded = atomic_load_explicit(&ht_recording_on, memory_order_relaxed) &&
		      ht_event_begin(t); /* its EXIT is written if this ENTER was */
	if (f->recorded) {
		ht_thread_reserve(t, HT_MARKER_MAX(2)); /* before last_fn is read */
		uint64_t fields[2] = {ht_zigzag((int64_t)(f->fn - t->last_fn)),
				      ht_zigzag((int64_t)(f->call_site - f->fn))};
		ht_put_marker(t, HT_EV_ENTER, fields, 2);
		t->last_fn = f->fn;
		atomic_store_explicit(&t->in_event, 0, memory_order_relaxed);
	}
	ht_guard = 0;
}

HT_EXPORT void __cyg_profile_func_exit(void *fn, void *call_site);
void __cyg_profile_func_exit(void *fn, void *call_site)
{
	(void)fn;
	(void)call_site;
	if (HT_LIKELY(!ht_opt_functions) || ht_guard ||
	    atomic_load_explicit(&ht_state, memory_order_relaxed) != HT_STATE_RECORDING)
		return;
	ht_guard = 1;
	ht_thread_t *t = ht_thread_get();
	if (!t || !t->shadow) {
		ht_guard = 0;
		return;
	}
	if (t->shadow_overflow) {
		t->shadow_overflow--;
	} else if (t->shadow_depth) {
		ht_shadow_frame_t *f = &t->shadow[--t->shadow_depth];
		if (f->recorded && ht_event_begin(t)) {
			ht_put_marker(t, HT_EV_EXIT, NULL, 0);
			atomic_store_explicit(&t->in_event, 0, memory_order_relaxed);
		}
	}
	ht_guard = 0;
}

/* heaptrail_set_recording() in heaptrail.h. Async-signal-safe: inside a
 * hook (guard set) it only flips the switch, without an event. */
HT_EXPORT int heaptrail_agent_set_recording(int on);
int heaptrail_agent_set_recording(int on)
{
	bool want = on != 0;
	if (want)
		atomic_store(&ht_recording_was_on, true);
	atomic_store(&ht_recording_on, want);
	ht_sample_fast_update();
	if (ht_guard || atomic_load(&ht_state) != HT_STATE_RECORDING)
		return 0;
	ht_guard = 1;
	ht_thread_t *t = ht_thread_get();
	if (t && ht_event_begin(t)) {
		uint64_t field = want;
		ht_put_marker(t, HT_EV_ENABLE, &field, 1);
		atomic_store_explicit(&t->in_event, 0, memory_order_relaxed);
	}
	ht_guard = 0;
	return 0;
}

void ht_functions_fork_child(ht_thread_t *self)
{
	/* The open calls were entered in the parent's trace: their EXITs do
	 * not belong in the child's. */
	if (self && self->shadow)
		for (uint32_t i = 0; i < self->shadow_depth; i++)
			self->shadow[i].recorded = false;
}
