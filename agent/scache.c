/* scache.c - the miss path of the validated stack cache (agent/unwind.h
 * explains the idea and the hit path).
 *
 * A miss unwinds with unw_backtrace as before. A new chain gets its slots
 * at once when the frame sizes below tell them (next paragraph). Otherwise,
 * when the same key (return address, stack address) misses a second time,
 * the chain is walked again with unw_step, which reports each frame's stack
 * pointer and so where each return address lives; from then on the entry
 * can hit. unw_step is slow (full DWARF interpretation of every frame), so
 * these walks are budgeted (below). A program whose chains never repeat
 * pays one table lookup per event and nothing else.
 *
 * A walk also teaches the thread each return address's frame size: the
 * distance from the slot of return address r to the next slot up is the
 * frame of the function r returns into, at that call, the same at every
 * activation (libunwind's fast trace relies on the same fact). A chain made
 * only of return addresses with known sizes gets its slots by addition,
 * checked against the live stack, without a walk: a recursion that takes
 * hundreds of shapes through a few functions learns them all from a few
 * walks. A return address seen with two different sizes (alloca, dynamic
 * realignment) is marked variable and always needs a walk.
 *
 * A chain is not cached when it goes through a signal frame (its return
 * address is not in a call slot), is deeper than HT_SCACHE_FRAMES, or when
 * the two walks disagree.
 */
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <string.h>
#include <sys/mman.h>

#include "agent.h"
#include "unwind.h"

/* A walk costs as much as tens of unw_backtrace calls of the same depth
 * (and taught frame sizes pay again in other chains). Budget: a few walks
 * to start with; more only while the walks made so far have paid off
 * (HT_HITS_PER_WALK hits each on average), and at most one per
 * HT_CAPTURES_PER_WALK captures (gcc's cc1, 658k captures: 4 and 64 leave
 * about 50k unwinds, 8 and 256 left 134k; with new chains placed at once,
 * 30k). A
 * program whose chains rarely repeat (a deep recursion that changes shape)
 * stops learning after the first few and loses nothing but a lookup. */
#define HT_FREE_WALKS 32
#define HT_HITS_PER_WALK 4
#define HT_CAPTURES_PER_WALK 64

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

/* ---- frame sizes by return address -----------------------------------------
 * Open addressing, per thread, no lock; a full table (3/4 of its entries)
 * just stops learning. 2^14 entries, 256 KiB of address space: gcc's cc1
 * has 6.5k distinct return addresses, and with 2^12 it unwound 35k times
 * instead of 27k. */
#define HT_FSIZE_BITS 14
#define HT_FSIZE_VARIABLE UINT32_MAX

typedef struct ht_fsize_table {
	struct {
		uintptr_t ret; /* 0: empty */
		uint32_t size; /* HT_FSIZE_VARIABLE: seen with two sizes */
	} e[1u << HT_FSIZE_BITS];
	uint32_t used;
} ht_fsize_table_t;

static size_t fsize_home(uintptr_t ret)
{
	return (size_t)((ret * 0x9e3779b97f4a7c15ull) >> (64 - HT_FSIZE_BITS));
}

/* The frame size after return address ret; 0 if unknown or variable. */
static uint32_t fsize_get(const ht_fsize_table_t *ft, uintptr_t ret)
{
	const size_t mask = (1u << HT_FSIZE_BITS) - 1;
	for (size_t i = fsize_home(ret), n = 0; n <= mask; i = (i + 1) & mask, n++) {
		if (ft->e[i].ret == ret)
			return ft->e[i].size == HT_FSIZE_VARIABLE ? 0 : ft->e[i].size;
		if (!ft->e[i].ret)
			return 0;
	}
	return 0;
}

static void fsize_learn(ht_fsize_table_t *ft, uintptr_t ret, uint32_t size)
{
	const size_t mask = (1u << HT_FSIZE_BITS) - 1;
	for (size_t i = fsize_home(ret);; i = (i + 1) & mask) {
		if (ft->e[i].ret == ret) {
			if (ft->e[i].size != size)
				ft->e[i].size = HT_FSIZE_VARIABLE;
			return;
		}
		if (!ft->e[i].ret) {
			if ((ft->used + 1) * 4 > (mask + 1) * 3)
				return; /* full enough: keep probes short */
			ft->e[i].ret = ret;
			ft->e[i].size = size;
			ft->used++;
			return;
		}
	}
}

/* Fills e->slot by adding up known frame sizes from the key's slot (at
 * cfa0 - 8), each slot checked to hold its return address now. False if a
 * size is unknown or a check fails (the caller may walk). */
static bool derive_slots(const ht_thread_t *t, ht_scache_entry_t *e, uintptr_t cfa0)
{
	const ht_fsize_table_t *ft = t->fsizes;
	if (!ft)
		return false;
	uintptr_t slot = cfa0 - 8; /* where ret0 lives */
	uint32_t off[HT_SCACHE_FRAMES];
	for (unsigned k = 1; k < e->n; k++) {
		uint32_t size = fsize_get(ft, e->frames[k - 1]);
		if (!size)
			return false;
		slot += size;
		if (slot + 8 > t->stack_hi || slot - cfa0 > UINT32_MAX ||
		    *(const uintptr_t *)slot != e->frames[k])
			return false;
		off[k] = (uint32_t)(slot - cfa0);
	}
	e->slot[0] = 0;
	memcpy(&e->slot[1], &off[1], (e->n - 1) * sizeof off[0]);
	return true;
}

/* Walks the stack with unw_step and fills e->slot for the frames in
 * e->frames (e->n of them, agent frames excluded). Returns false if the
 * walk does not reproduce the same frames. */
static bool learn_slots(ht_thread_t *t, ht_scache_entry_t *e, uintptr_t cfa0)
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
			if (k == 0 ? sp != cfa0 : sp <= cfa0 || sp - 8 - cfa0 > UINT32_MAX)
				return false;
			e->slot[k] = k ? (uint32_t)(sp - 8 - cfa0) : 0;
			k++;
		}
		if (unw_step(&c) <= 0)
			break;
	}
	if (k != e->n)
		return false;
	/* a good walk: its frame sizes serve other chains (slot[0] stands for
	 * ret0's slot at cfa0 - 8, offset -8) */
	if (!t->fsizes)
		t->fsizes = ht_mmap(sizeof *t->fsizes);
	if (t->fsizes)
		for (unsigned i = 1; i < e->n; i++)
			fsize_learn(t->fsizes, e->frames[i - 1],
				    (uint32_t)(e->slot[i] - (i > 1 ? e->slot[i - 1] : (uint32_t)-8)));
	return true;
}

/* ret1's slot is offset above cfa0 under ret0 (see ht_scache_set), known
 * once entry e has its slots. The set of a key moves when its ret0 is
 * first learned here: its entries are found again after two misses. A
 * ret0 seen with two offsets stays variable, so keys do not move back and
 * forth. */
static void learn_up(ht_scache_t *c, uintptr_t ret0, const ht_scache_entry_t *e)
{
	if (!e->has_slots || e->n < 2)
		return;
	uint32_t offset = e->slot[1];
	unsigned u = ht_scache_up_home(ret0);
	if (c->up[u].ret0 == ret0) {
		if (c->up[u].offset != offset)
			c->up[u].offset = HT_SCACHE_UP_VARIABLE;
	} else if (!c->up[u].ret0) {
		c->up[u].ret0 = ret0;
		c->up[u].offset = offset;
	}
	/* another ret0 holds the slot: this one keeps ret1 = 0 */
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
	ht_scache_t *c = t->scache;
	unsigned set = ht_scache_set(t, c, ret0, cfa0);
	ht_scache_key_t *key = c->key[set];
	ht_scache_entry_t *ways = c->e[set];
	for (unsigned w = 0; w < HT_SCACHE_WAYS; w++) {
		ht_scache_entry_t *e = &ways[w];
		/* Interned ids name the frames: equal ids, equal chains (id 0,
		 * "table full", is never cached). */
		if (key[w].ret0 != ret0 || (key[w].cfa0 & ~(uintptr_t)1) != cfa0 || e->sid != sid)
			continue;
		/* This chain is known. Seen again without slots: worth learning
		 * where its return addresses live, if the budget allows. (With
		 * slots, it missed: the stack above changed under the same key,
		 * a dynamic frame perhaps; learn again.) */
		if (derive_slots(t, e, cfa0)) {
			e->has_slots = 1;
		} else if (may_walk(t)) {
			t->scache_walks++;
			ht_unwind_begin(t);
			e->has_slots = learn_slots(t, e, cfa0);
			ht_unwind_end(t);
		}
		key[w].cfa0 = cfa0 | e->has_slots;
		learn_up(c, ret0, e);
		return sid;
	}
	/* A new chain: an empty way, else one not learned yet (a chain seen
	 * once must not push out one that hits), else any. Both searches go
	 * round robin: always taking the first unlearned way would leave the
	 * set's chains that are not learned one way to fight over, so none
	 * would be seen twice. */
	unsigned w = HT_SCACHE_WAYS;
	for (unsigned i = 0; i < HT_SCACHE_WAYS && w == HT_SCACHE_WAYS; i++)
		if (!key[i].ret0)
			w = i;
	for (unsigned i = 0, r = c->next_victim[set]; i < HT_SCACHE_WAYS && w == HT_SCACHE_WAYS; i++)
		if (!ways[(r + i) % HT_SCACHE_WAYS].has_slots)
			w = (r + i) % HT_SCACHE_WAYS;
	if (w == HT_SCACHE_WAYS)
		w = c->next_victim[set] % HT_SCACHE_WAYS;
	c->next_victim[set] = (uint8_t)((w + 1) % HT_SCACHE_WAYS);
	ht_scache_entry_t *e = &ways[w];
	key[w].ret0 = ret0;
	key[w].cfa0 = cfa0;
	e->sid = sid;
	e->n = (uint16_t)n;
	memcpy(e->frames, t->frames, n * sizeof(uintptr_t));
	/* Frame sizes learned from other chains may place its slots now. */
	e->has_slots = derive_slots(t, e, cfa0);
	key[w].cfa0 = cfa0 | e->has_slots;
	learn_up(c, ret0, e);
	return sid;
}

void ht_scache_forget(ht_thread_t *t)
{
	/* zero pages again, and the memory back to the system (a memset
	 * would touch every page of the 256 KiB frame-size table) */
	if (t->scache)
		madvise(t->scache, sizeof *t->scache, MADV_DONTNEED);
	if (t->fsizes)
		madvise(t->fsizes, sizeof *t->fsizes, MADV_DONTNEED);
	t->scache_hits = t->scache_misses = t->scache_walks = 0;
}
