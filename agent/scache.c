/* scache.c - the miss path of the validated stack cache (agent/unwind.h
 * explains the idea and the hit path).
 *
 * A miss unwinds with unw_backtrace as before. When the same key (return
 * address, stack address) misses a second time, the chain is walked again
 * with unw_step, which reports each frame's stack pointer and so where each
 * return address lives; from then on the entry can hit. unw_step is slow
 * (~0.6 us per frame: full DWARF interpretation), so these walks are budgeted
 * (below). A program whose chains never repeat pays one table lookup per
 * event and nothing else.
 *
 * A chain is not cached when it goes through a signal frame (its return
 * address is not in a call slot), is deeper than HT_SCACHE_FRAMES, or when
 * the two walks disagree.
 */
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <string.h>

#include "agent.h"
#include "unwind.h"

/* A walk costs about as much as 150 unw_backtrace calls of the same depth
 * and pays off after as many hits. Budget: a few walks to start with; more
 * only while the walks made so far have paid off (HT_HITS_PER_WALK hits
 * each on average), and at most one per HT_CAPTURES_PER_WALK captures. A
 * program whose chains rarely repeat (a deep recursion that changes shape)
 * stops learning after the first few and loses nothing but a lookup. */
#define HT_FREE_WALKS 32
#define HT_HITS_PER_WALK 8
#define HT_CAPTURES_PER_WALK 256

/* Without hits, still one walk per this many captures: the chains a
 * program repeats may come after the ones its start-up repeated. */
#define HT_CAPTURES_PER_BLIND_WALK 1024

static bool may_walk(const ht_thread_t *t)
{
	uint64_t w = t->scache_walks, captures = t->scache_hits + t->scache_misses;
	return w < HT_FREE_WALKS ||
	       (t->scache_hits >= w * HT_HITS_PER_WALK && w * HT_CAPTURES_PER_WALK < captures) ||
	       w * HT_CAPTURES_PER_BLIND_WALK < captures;
}

/* Walks the stack with unw_step and fills e->slot for the frames in
 * e->frames (e->n of them, agent frames excluded). Returns false if the
 * walk does not reproduce the same frames. */
static bool learn_slots(ht_scache_entry_t *e)
{
	unw_context_t uc;
	unw_cursor_t c;
	if (unw_getcontext(&uc) != 0 || unw_init_local(&c, &uc) != 0)
		return false;
	unsigned k = 0;
	for (unsigned steps = 0; steps < HT_SCACHE_FRAMES + 16; steps++) {
		unw_word_t ip, sp;
		if (unw_get_reg(&c, UNW_REG_IP, &ip) != 0 || unw_get_reg(&c, UNW_REG_SP, &sp) != 0)
			return false;
		if (!ht_addr_in_agent(ip)) {
			if (k >= e->n)
				break;
			/* A return address is pushed by the call just below the
			 * caller's stack pointer; a signal frame breaks that. The
			 * first one is the key itself, at cfa0 - 8. */
			if (ip != e->frames[k] || unw_is_signal_frame(&c) > 0)
				return false;
			if (k == 0 ? sp != e->cfa0 : sp <= e->cfa0 || sp - 8 - e->cfa0 > UINT32_MAX)
				return false;
			e->slot[k] = k ? (uint32_t)(sp - 8 - e->cfa0) : 0;
			k++;
		}
		if (unw_step(&c) <= 0)
			break;
	}
	return k == e->n;
}

uint32_t ht_capture_slow(ht_thread_t *t, uintptr_t ret0, uintptr_t cfa0)
{
	unsigned n = ht_unwind(t);
	uint32_t sid = ht_stack_intern(t, n);
	t->scache_misses++;
	if (!ret0 || !sid || ht_opt_unwind_fp || n == 0 || n > HT_SCACHE_FRAMES ||
	    (uintptr_t)t->frames[0] != ret0)
		return sid;
	if (!t->scache) {
		t->scache = ht_mmap(sizeof *t->scache);
		if (!t->scache)
			return sid;
	}
	unsigned set = ht_scache_index(ret0, cfa0);
	ht_scache_entry_t *ways = t->scache->e[set];
	for (unsigned w = 0; w < HT_SCACHE_WAYS; w++) {
		ht_scache_entry_t *e = &ways[w];
		/* Interned ids name the frames: equal ids, equal chains (id 0,
		 * "table full", is never cached). */
		if (e->ret0 != ret0 || e->cfa0 != cfa0 || e->sid != sid)
			continue;
		/* This chain is known. Seen again without slots: worth learning
		 * where its return addresses live, if the budget allows. (With
		 * slots, it missed: the stack above changed under the same key,
		 * a dynamic frame perhaps; learn again.) */
		if (may_walk(t)) {
			t->scache_walks++;
			e->has_slots = learn_slots(e);
		}
		return sid;
	}
	/* A new chain: an empty way, else one not learned yet (a chain seen
	 * once must not push out one that hits), else round robin. */
	ht_scache_entry_t *e = NULL;
	for (unsigned w = 0; w < HT_SCACHE_WAYS && !e; w++)
		if (!ways[w].ret0)
			e = &ways[w];
	for (unsigned w = 0; w < HT_SCACHE_WAYS && !e; w++)
		if (!ways[w].has_slots)
			e = &ways[w];
	if (!e)
		e = &ways[t->scache->next_victim[set]++ % HT_SCACHE_WAYS];
	e->ret0 = ret0;
	e->cfa0 = cfa0;
	e->sid = sid;
	e->n = (uint16_t)n;
	e->has_slots = 0;
	memcpy(e->frames, t->frames, n * sizeof(uintptr_t));
	return sid;
}

void ht_scache_forget(ht_thread_t *t)
{
	if (t->scache)
		memset(t->scache, 0, sizeof *t->scache);
	t->scache_hits = t->scache_misses = t->scache_walks = 0;
}
