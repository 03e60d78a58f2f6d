/* stacks.c - interning of call stacks: each distinct stack is written once.
 *
 * Lookups are lock-free: a stack is hashed and probed in a set of
 * open-addressing tables ("levels"); a level that gets 70% full is never
 * grown but followed by a new level twice its size, so published entries
 * never move and readers need no lock. Inserting a new stack (rare next to
 * lookups) takes stack_lock, re-checks, stores the frames in an mmap arena
 * and publishes the slot with a release store of its hash.
 *
 * The thread that inserts a stack writes its STACK definition into its own
 * buffer, right before the event that uses it. Other threads may use the id
 * before that buffer reaches the file; the reader resolves ids at the end.
 */
#include <string.h>

#include "agent.h"

typedef struct slot {
	_Atomic uint64_t hash; /* 0: empty; published last */
	uint32_t id;
	uint32_t depth;
	const uintptr_t *frames;
} slot_t;

#define HT_LEVELS 16
#define HT_LEVEL0_BITS 14

typedef struct level {
	slot_t *slots;
	uint64_t mask;
	uint64_t used;
} level_t;

static level_t levels[HT_LEVELS];
static _Atomic unsigned nlevels;
static ht_lock_t stack_lock;
static uint32_t next_id = 1;

/* Arena for frame arrays: chunks from mmap, bump allocation under stack_lock. */
#define HT_ARENA_CHUNK (4u << 20)
static uint8_t *arena_pos, *arena_end;

_Atomic unsigned ht_agent_flags;

/* Runs on every allocation: a rotate-xor per frame (independent of the
 * multiply latency chain), one multiply and a final mix at the end. Equal
 * hashes are confirmed by comparing the frames, so the hash only needs to
 * spread well. */
static inline uint64_t hash_frames(void *const *f, unsigned n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
	for (unsigned i = 0; i < n; i++)
		h = ((h << 17) | (h >> 47)) ^ (uint64_t)(uintptr_t)f[i];
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return h | 1; /* never 0, the empty mark */
}

/* depth of a slot whose stack was forgotten: it matches no stack */
#define HT_DEPTH_FORGOTTEN UINT32_MAX

static inline bool same(const slot_t *s, void *const *f, unsigned n)
{
	if (__atomic_load_n(&s->depth, __ATOMIC_RELAXED) != n)
		return false;
	for (unsigned i = 0; i < n; i++) /* short arrays: no memcmp call */
		if (s->frames[i] != (uintptr_t)f[i])
			return false;
	return true;
}

/* Returns the id of the stack in the published levels, or 0. */
static inline uint32_t lookup(uint64_t h, void *const *f, unsigned n)
{
	unsigned nl = atomic_load_explicit(&nlevels, memory_order_acquire);
	for (unsigned l = 0; l < nl; l++) {
		const level_t *lv = &levels[l];
		for (uint64_t i = h;; i++) {
			slot_t *s = &lv->slots[i & lv->mask];
			uint64_t sh = atomic_load_explicit(&s->hash,
							   memory_order_acquire);
			if (sh == 0)
				break;
			if (sh == h && same(s, f, n))
				return s->id;
		}
	}
	return 0;
}

static bool add_level(void)
{
	unsigned nl = atomic_load(&nlevels);
	if (nl == HT_LEVELS)
		return false;
	uint64_t size = 1ull << (HT_LEVEL0_BITS + nl);
	slot_t *slots = ht_mmap(size * sizeof(slot_t));
	if (!slots)
		return false;
	levels[nl].slots = slots;
	levels[nl].mask = size - 1;
	levels[nl].used = 0;
	atomic_store_explicit(&nlevels, nl + 1, memory_order_release);
	return true;
}

static uintptr_t *arena_copy(void *const *f, unsigned n)
{
	size_t bytes = n * sizeof(uintptr_t);
	if (arena_pos == NULL || (size_t)(arena_end - arena_pos) < bytes) {
		uint8_t *chunk = ht_mmap(HT_ARENA_CHUNK);
		if (!chunk)
			return NULL;
		arena_pos = chunk;
		arena_end = chunk + HT_ARENA_CHUNK;
	}
	uintptr_t *dst = (uintptr_t *)arena_pos;
	memcpy(dst, f, bytes);
	arena_pos += bytes;
	return dst;
}

/* Encodes a STACK definition into t's buffer. */
static void define(ht_thread_t *t, uint32_t id, void *const *f, unsigned n)
{
	ht_thread_reserve(t, 1 + 2 * HT_VARINT_MAX + (size_t)n * HT_VARINT_MAX);
	uint8_t *p = t->buf + t->len;
	size_t k = 0;
	p[k++] = HT_EV_STACK;
	k += ht_varint_put(p + k, id);
	k += ht_varint_put(p + k, n);
	uint64_t prev = 0;
	for (unsigned i = 0; i < n; i++) {
		uint64_t ip = (uint64_t)(uintptr_t)f[i];
		k += ht_varint_put(p + k, ht_zigzag((int64_t)(ip - prev)));
		prev = ip;
	}
	t->len += (uint32_t)k;
}

HT_NOINLINE HT_COLD static uint32_t insert(ht_thread_t *t, uint64_t h,
					   unsigned n)
{
	void *const *f = t->frames;
	/* A library loaded without our dlopen hook (NSS, iconv modules, libc's
	 * own dlopen) shows up here first: note it before the stack uses it. */
	for (unsigned i = 0; i < n; i++) {
		if (!ht_modules_known((uintptr_t)f[i])) {
			ht_modules_refresh();
			break;
		}
	}
	ht_lock(&stack_lock);
	uint32_t id = lookup(h, f, n);
	if (id) {
		ht_unlock(&stack_lock);
		return id;
	}
	unsigned nl = atomic_load(&nlevels);
	level_t *lv = nl ? &levels[nl - 1] : NULL;
	if (!lv || lv->used * 10 >= (lv->mask + 1) * 7) {
		if (!add_level())
			goto full;
		lv = &levels[atomic_load(&nlevels) - 1];
	}
	const uintptr_t *copy = arena_copy(f, n);
	if (!copy)
		goto full;
	id = next_id++;
	for (uint64_t i = h;; i++) {
		slot_t *s = &lv->slots[i & lv->mask];
		if (atomic_load_explicit(&s->hash, memory_order_relaxed) == 0) {
			s->id = id;
			s->depth = n;
			s->frames = copy;
			atomic_store_explicit(&s->hash, h, memory_order_release);
			break;
		}
	}
	lv->used++;
	ht_unlock(&stack_lock);
	define(t, id, f, n);
	return id;
full:
	ht_unlock(&stack_lock);
	atomic_fetch_or(&ht_agent_flags, HT_AGENT_STACK_TABLE_FULL);
	return 0;
}

_Atomic uint32_t ht_stacks_gen;

void ht_stacks_forget_range(uintptr_t lo, uintptr_t hi)
{
	if (lo >= hi)
		return;
	ht_lock(&stack_lock);
	unsigned nl = atomic_load(&nlevels);
	for (unsigned l = 0; l < nl; l++) {
		const level_t *lv = &levels[l];
		for (uint64_t i = 0; i <= lv->mask; i++) {
			slot_t *s = &lv->slots[i];
			if (!atomic_load_explicit(&s->hash, memory_order_relaxed) ||
			    s->depth == HT_DEPTH_FORGOTTEN)
				continue;
			for (uint32_t k = 0; k < s->depth; k++) {
				if (s->frames[k] - lo < hi - lo) {
					/* stays occupied, so probes go on past it */
					__atomic_store_n(&s->depth, HT_DEPTH_FORGOTTEN, __ATOMIC_RELAXED);
					break;
				}
			}
		}
	}
	atomic_fetch_add_explicit(&ht_stacks_gen, 1, memory_order_release);
	ht_unlock(&stack_lock);
}

uint32_t ht_stack_intern(ht_thread_t *t, unsigned n)
{
	uint64_t h = hash_frames(t->frames, n);
	uint32_t id = lookup(h, t->frames, n);
	if (HT_LIKELY(id != 0))
		return id;
	return insert(t, h, n);
}

void ht_stacks_init(void)
{
	if (atomic_load(&nlevels) == 0)
		add_level();
}

void ht_stacks_fork_prepare(void)
{
	ht_lock(&stack_lock);
}

void ht_stacks_fork_parent(void)
{
	ht_unlock(&stack_lock);
}

void ht_stacks_fork_child(void)
{
	/* The child's trace starts empty, so every stack must be defined again:
	 * drop the tables (the arena is simply abandoned; it is small). */
	ht_lock_reset(&stack_lock);
	unsigned nl = atomic_load(&nlevels);
	for (unsigned l = 0; l < nl; l++) {
		ht_munmap(levels[l].slots, (levels[l].mask + 1) * sizeof(slot_t));
		levels[l].slots = NULL;
	}
	atomic_store(&nlevels, 0);
	next_id = 1;
	arena_pos = arena_end = NULL;
	add_level();
}
