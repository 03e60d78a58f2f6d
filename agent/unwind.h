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

/* The frame-pointer walk from fp, on a stack that is not the thread's own
 * (a coroutine's, a signal handler's alternate stack): agent/unwind.c. */
unsigned ht_fp_walk_foreign(uintptr_t fp, void **out, unsigned max);

__attribute__((always_inline)) static inline unsigned
ht_fp_walk(const ht_thread_t *t, void **out, unsigned max)
{
	uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
	uintptr_t lo = t->stack_lo, hi = t->stack_hi;
	unsigned n = 0;
	if (!hi) { /* unknown bounds: allow a window above the current frame */
		lo = fp;
		hi = fp + (8u << 20);
	} else if (HT_UNLIKELY(fp < lo || fp >= hi))
		return ht_fp_walk_foreign(fp, out, max);
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

/* Bracket every libunwind call of the agent: signals blocked once for the
 * whole unwind instead of around each of libunwind's locks
 * (agent/unwind.c). */
void ht_unwind_begin(ht_thread_t *t);
void ht_unwind_end(ht_thread_t *t);

/* Our frames at the top of a capture: a small fixed allowance. */
#define HT_AGENT_FRAMES 4

/* Walks the current stack into t->frames (at most max), leaf first, the
 * agent's frames included, by frame pointers or libunwind as configured.
 * Returns the number of frames. */
__attribute__((always_inline)) static inline unsigned ht_unwind_walk(ht_thread_t *t, unsigned max)
{
	void **f = t->frames;
	unsigned n;
	if (ht_opt_unwind_fp)
		n = ht_fp_walk(t, f, max);
	else {
		ht_unwind_begin(t);
		int r = unw_backtrace(f, (int)max);
		ht_unwind_end(t);
		n = r > 0 ? (unsigned)r : 0;
	}
	return n;
}

/* Captures the current stack into t->frames, leaf first, without the
 * agent's frames. Returns the number of frames. */
__attribute__((always_inline)) static inline unsigned ht_unwind(ht_thread_t *t)
{
	void **f = t->frames;
	unsigned n = ht_unwind_walk(t, ht_opt_depth + HT_AGENT_FRAMES);
	/* Usually only f[0] is ours; the loop also drops main_wrapper. */
	unsigned out = 0;
	for (unsigned i = 0; i < n && out < ht_opt_depth; i++) {
		if (!ht_addr_in_agent((uintptr_t)f[i]))
			f[out++] = f[i];
	}
	return out;
}

/* ---- the validated stack cache ---------------------------------------------
 * Unwinding dominates the cost of an event (libunwind: ~47 ns per call plus
 * ~4.5 ns per frame), and programs allocate again and again from the same
 * call chains. A thread's cache maps (return address into the program, the
 * stack address just above it) to a stack already captured, together with
 * the stack address of every return address in it. A hit re-reads those
 * slots: if each still holds the same return address, the chain is the same
 * one (each function's frame size at a given return address is fixed, so
 * equal return addresses put the next slot at the same place), and the
 * stack id is reused without unwinding or hashing. Anything else unwinds.
 * Slot positions come from a slow libunwind walk (unw_step), made only for
 * chains seen twice and within a budget (agent/scache.c).
 *
 * The set is chosen by the key and, once known, by the return address one
 * frame up (ret1): a helper like `new_node` called from many places at one
 * depth makes dozens of chains with the same key, more than a set's ways.
 * ret1's slot is at a fixed distance from cfa0 for a given ret0 (the frame
 * of the function ret0 returns into), learned with the chain's slots and
 * kept in a small table by ret0; until then, or when that frame varies,
 * ret1 counts as 0. The set is only a hint: a hit still checks every slot. */

#define HT_SCACHE_SETS 256
#define HT_SCACHE_WAYS 32 /* chains that share a set: with 16, deep still
			     missed 4% of its captures; with 32, none */
#define HT_SCACHE_FRAMES 64
#define HT_SCACHE_UP_BITS 12 /* the ret1 slot table: ret0 -> offset; with 2^8
			       slots, cc1's ret0s collided and its unwinds
			       ranged 25k-43k over runs, with 2^12 26k-31k */
#define HT_SCACHE_UP_VARIABLE UINT32_MAX

typedef struct ht_scache_key {
	uintptr_t ret0; /* 0: empty */
	uintptr_t cfa0; /* | 1 when the entry has its slots (can hit): cfa0
			   is a frame address (8-aligned), and a lookup
			   never touches an entry that cannot hit */
} ht_scache_key_t;

typedef struct ht_scache_entry { /* its key is in ht_scache_t.key */
	uint32_t sid;
	uint16_t n;	   /* frames, ret0 included */
	uint8_t has_slots; /* slot[] known: the entry can hit */
	uintptr_t frames[HT_SCACHE_FRAMES];
	uint32_t slot[HT_SCACHE_FRAMES]; /* slot address - cfa0 */
} ht_scache_entry_t;

/* Keys apart from the entries, so a lookup scans a set's keys in a few
 * cache lines. One mapping per thread (ht_mmap: pages are touched as
 * chains arrive); 6.4 MB of address space. */
typedef struct ht_scache {
	ht_scache_key_t key[HT_SCACHE_SETS][HT_SCACHE_WAYS];
	ht_scache_entry_t e[HT_SCACHE_SETS][HT_SCACHE_WAYS];
	uint8_t next_victim[HT_SCACHE_SETS];
	struct {
		uintptr_t ret0;	 /* 0: empty */
		uint32_t offset; /* ret1's slot - cfa0; HT_SCACHE_UP_VARIABLE */
	} up[1u << HT_SCACHE_UP_BITS];
} ht_scache_t;

/* The miss path: unwinds, interns, and maybe learns the slots. */
uint32_t ht_capture_slow(ht_thread_t *t, uintptr_t ret0, uintptr_t cfa0);

static inline unsigned ht_scache_up_home(uintptr_t ret0)
{
	return (unsigned)((ret0 * 0x9e3779b97f4a7c15ull) >> (64 - HT_SCACHE_UP_BITS));
}

/* The set of key (ret0, cfa0), with ret1 read from the stack when its
 * slot is known. */
static inline unsigned ht_scache_set(const ht_thread_t *t, const ht_scache_t *c, uintptr_t ret0,
				     uintptr_t cfa0)
{
	uintptr_t ret1 = 0;
	unsigned u = ht_scache_up_home(ret0);
	if (c->up[u].ret0 == ret0 && c->up[u].offset != HT_SCACHE_UP_VARIABLE &&
	    cfa0 + c->up[u].offset + 8 <= t->stack_hi)
		ret1 = *(const uintptr_t *)(cfa0 + c->up[u].offset);
	uint64_t h = (ret0 ^ (cfa0 << 7) ^ (ret1 << 17)) * 0x9e3779b97f4a7c15ull;
	return (unsigned)(h >> 48) & (HT_SCACHE_SETS - 1);
}

/* The frame of the hook the program called: climbs our own frames (the
 * agent keeps frame pointers) to the first return address into the
 * program. NULL if the chain looks wrong. Inline: starts in the caller. */
__attribute__((always_inline)) static inline uintptr_t *ht_hook_frame(void)
{
	uintptr_t *fp = __builtin_frame_address(0);
	for (int i = 0; i < 4 && ht_addr_in_agent(fp[1]); i++) {
		uintptr_t *next = (uintptr_t *)fp[0];
		if (next <= fp)
			return NULL;
		fp = next;
	}
	return ht_addr_in_agent(fp[1]) ? NULL : fp;
}

/* The id of the current stack taken from the function profiler's shadow
 * stack (functions=1, stacks=shadow): the return address into the caller
 * of malloc, then the call sites of the open instrumented functions,
 * innermost first. No unwinding at all. */
__attribute__((always_inline)) static inline uint32_t ht_capture_shadow(ht_thread_t *t)
{
	uintptr_t *fp = ht_hook_frame();
	unsigned n = 0;
	if (fp)
		t->frames[n++] = (void *)fp[1];
	for (uint32_t i = t->shadow_depth; i-- > 0 && n < ht_opt_depth;)
		t->frames[n++] = (void *)t->shadow[i].call_site;
	return ht_stack_intern(t, n);
}

/* The id of the current stack (leaf first, agent frames dropped), defined
 * in t's buffer when new. Must be inlined into the hook: it starts from the
 * hook's own frame. */
__attribute__((always_inline)) static inline uint32_t ht_capture(ht_thread_t *t)
{
	if (ht_opt_functions && ht_opt_stacks_shadow && t->shadow_depth && !t->shadow_overflow)
		return ht_capture_shadow(t);
	uintptr_t *fp = ht_hook_frame();
	if (!fp)
		return ht_capture_slow(t, 0, 0);
	uintptr_t ret0 = fp[1], cfa0 = (uintptr_t)(fp + 2);
	if (cfa0 < t->stack_lo || cfa0 >= t->stack_hi)
		return ht_capture_slow(t, 0, 0); /* another stack (coroutine...) */
	ht_scache_t *c = t->scache;
	if (HT_UNLIKELY(t->scache_gen != atomic_load_explicit(&ht_stacks_gen, memory_order_acquire))) {
		/* a library was unloaded: its chains' ids are stale */
		t->scache_gen = atomic_load_explicit(&ht_stacks_gen, memory_order_acquire);
		ht_scache_forget(t);
		c = NULL;
	}
	if (HT_LIKELY(c != NULL)) {
		unsigned s = ht_scache_set(t, c, ret0, cfa0);
		const ht_scache_key_t *key = c->key[s];
		for (unsigned w = 0; w < HT_SCACHE_WAYS; w++) {
			if (key[w].ret0 != ret0 || key[w].cfa0 != (cfa0 | 1))
				continue;
			const ht_scache_entry_t *e = &c->e[s][w];
			unsigned i = 1;
			while (i < e->n && *(const uintptr_t *)(cfa0 + e->slot[i]) == e->frames[i])
				i++;
			if (HT_LIKELY(i == e->n)) {
				t->scache_hits++;
				return e->sid;
			}
		}
	}
	return ht_capture_slow(t, ret0, cfa0);
}

#endif /* HEAPTRAIL_UNWIND_H */
