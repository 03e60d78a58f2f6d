/* sampling.c - Poisson sampling over allocated bytes (option sample_rate=R).
 *
 * The sample points form a Poisson process of mean spacing R over the bytes
 * a thread allocates; an allocation of s bytes is recorded when a point falls
 * in it, which happens with probability p = 1 - exp(-s/R) whatever came
 * before (the exponential has no memory). Each thread keeps the bytes left
 * to its next point: an allocation subtracts its size, and only one that
 * takes the countdown to zero or below leaves the fast path (agent.h,
 * ht_sample_skip). The reader weighs each sample by 1/p (docs/INTERNALS.md).
 *
 * The countdown is ceil(D) for D exponential of mean R: an allocation of s
 * bytes (an integer) is sampled iff s >= ceil(D) iff D <= s, exactly the
 * probability above, and the remainder after an unsampled allocation is
 * again ceil of an exponential, so the integer countdown loses nothing.
 *
 * Recorded blocks go into a set so that their frees, and only theirs, are
 * written. In front of it a counting filter (one byte per hash bucket,
 * the number of set members in the bucket, and a bit per bucket set while
 * its count is not 0) lets the free of an unsampled block leave after one
 * load of the bits. The set is sharded by the same hash, so a
 * bucket's counter only changes under its shard's lock; a counter that
 * reaches 255 stays there (the bucket then always asks the set). Buckets
 * pinned at 255 keep NULL and the bootstrap blocks off free's fast path,
 * which then needs no test of its own for them; without sampling every
 * bucket is set, and every free takes the full hook.
 *
 * No malloc: the shards' tables come from mmap and grow by doubling.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "agent.h"

/* ---- the countdown ------------------------------------------------------------ */

static _Atomic uint64_t thread_ordinal;
_Atomic bool ht_sample_fast;

/* splitmix64: seeds from any value; the generator itself (xorshift64*)
 * needs a non-zero state. */
static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t rng_next(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* Bytes to the next sample point: ceil of an exponential of mean R. */
static int64_t draw(ht_thread_t *t)
{
	/* u in (0, 1], from 53 random bits: log(u) is finite */
	double u = (double)((rng_next(&t->sample_rng) >> 11) + 1) * 0x1p-53;
	double d = ceil(-log(u) * (double)ht_opt_sample_rate);
	if (d < 1)
		return 1;
	if (d > 0x1p62)
		return (int64_t)1 << 62;
	return (int64_t)d;
}

/* Sets the countdown to d bytes: up to HT_SAMPLE_SPAN of them in
 * sample_left, the rest carried. */
static void arm(ht_thread_t *t, int64_t d)
{
	t->sample_left = d < HT_SAMPLE_SPAN ? d : HT_SAMPLE_SPAN;
	t->sample_carry = d - t->sample_left;
}

void ht_sample_thread_init(ht_thread_t *t)
{
	/* With sample_seed, the n-th thread to start gets the same stream run
	 * to run (a deterministic program samples the same blocks). */
	uint64_t n = atomic_fetch_add(&thread_ordinal, 1);
	uint64_t seed = ht_opt_sample_seed_set
				? ht_opt_sample_seed + n * 0x632be59bd9b4e019ull
				: ht_clock_ns() ^ ((uint64_t)t->tid << 32) ^ (uintptr_t)t;
	t->sample_rng = mix64(seed) | 1;
	arm(t, draw(t));
}

bool ht_sample_slow(size_t size)
{
	/* the thread's first event creates its state, which may set errno
	 * (callers evaluate this before saving it) */
	int e = errno;
	ht_thread_t *t = ht_thread_get();
	errno = e;
	if (HT_UNLIKELY(!t))
		return false;
	/* the whole countdown: what sample_left holds and what it carries */
	int64_t left = t->sample_left + t->sample_carry - (int64_t)size;
	if (left > 0) {
		arm(t, left);
		t->n_allocs++;
		t->n_bytes += size;
		return false;
	}
	arm(t, draw(t));
	return true;
}

/* ---- the set of sampled blocks ------------------------------------------------- */

uint8_t ht_sfilter[1u << HT_SFILTER_BITS];
uint64_t ht_sfilter_bits[(1u << HT_SFILTER_BITS) / 64];

#define SHARD_BITS 6
#define NSHARDS (1u << SHARD_BITS)

typedef struct shard {
	ht_lock_t lock;
	uintptr_t *slot; /* open addressing, 0 = empty; cap a power of two */
	size_t cap, len;
} HT_CACHE_ALIGN shard_t;

static shard_t shards[NSHARDS];

static inline shard_t *shard_of(size_t fi)
{
	return &shards[fi & (NSHARDS - 1)];
}

/* Home slot: the address's other hash bits, so that a shard's members
 * (which share the filter's low bits) still spread over its table. */
static inline size_t home(const shard_t *s, uintptr_t a)
{
	return (size_t)(mix64(a) & (s->cap - 1));
}

static bool grow(shard_t *s)
{
	size_t ncap = s->cap ? s->cap * 2 : 1024;
	uintptr_t *n = ht_mmap(ncap * sizeof *n);
	if (!n) {
		atomic_fetch_or(&ht_agent_flags, HT_AGENT_OUT_OF_MEMORY);
		return false;
	}
	uintptr_t *old = s->slot;
	size_t ocap = s->cap;
	s->slot = n;
	s->cap = ncap;
	for (size_t i = 0; i < ocap; i++) {
		if (!old[i])
			continue;
		size_t j = home(s, old[i]);
		while (n[j])
			j = (j + 1) & (ncap - 1);
		n[j] = old[i];
	}
	if (old)
		ht_munmap(old, ocap * sizeof *old);
	return true;
}

/* Index of a in s, or SIZE_MAX. Caller holds s->lock. */
static size_t find(const shard_t *s, uintptr_t a)
{
	if (!s->cap)
		return SIZE_MAX;
	for (size_t i = home(s, a);; i = (i + 1) & (s->cap - 1)) {
		if (!s->slot[i])
			return SIZE_MAX;
		if (s->slot[i] == a)
			return i;
	}
}

void ht_sampled_add(const void *p)
{
	uintptr_t a = (uintptr_t)p;
	size_t fi = ht_sfilter_index(p);
	shard_t *s = shard_of(fi);
	ht_lock(&s->lock);
	/* Already there: a pool block whose pool was reset (the agent does not
	 * see which blocks a reset frees) got the same address again. */
	if (find(s, a) == SIZE_MAX && ((s->len + 1) * 2 <= s->cap || grow(s))) {
		size_t i = home(s, a);
		while (s->slot[i])
			i = (i + 1) & (s->cap - 1);
		s->slot[i] = a;
		s->len++;
		uint8_t c = ht_sfilter[fi];
		if (c == 0) /* other buckets of the word belong to other shards */
			__atomic_fetch_or(&ht_sfilter_bits[fi / 64], 1ull << (fi % 64),
					  __ATOMIC_RELAXED);
		if (c < 255)
			__atomic_store_n(&ht_sfilter[fi], (uint8_t)(c + 1), __ATOMIC_RELAXED);
	}
	ht_unlock(&s->lock);
}

void ht_sfilter_pin(const void *p)
{
	size_t fi = ht_sfilter_index(p);
	shard_t *s = shard_of(fi);
	ht_lock(&s->lock);
	__atomic_store_n(&ht_sfilter[fi], (uint8_t)255, __ATOMIC_RELAXED); /* saturated: stays */
	__atomic_fetch_or(&ht_sfilter_bits[fi / 64], 1ull << (fi % 64), __ATOMIC_RELAXED);
	ht_unlock(&s->lock);
}

void ht_sfilter_init(void)
{
	ht_sfilter_pin(NULL);
	if (!ht_opt_sample_rate) /* no member is ever added or removed */
		memset(ht_sfilter_bits, 0xff, sizeof ht_sfilter_bits);
}

bool ht_sampled_remove(const void *p)
{
	uintptr_t a = (uintptr_t)p;
	size_t fi = ht_sfilter_index(p);
	shard_t *s = shard_of(fi);
	ht_lock(&s->lock);
	size_t i = find(s, a);
	if (i == SIZE_MAX) {
		ht_unlock(&s->lock);
		return false;
	}
	/* backward-shift deletion: no tombstones */
	size_t mask = s->cap - 1;
	for (size_t j = (i + 1) & mask; s->slot[j]; j = (j + 1) & mask) {
		size_t h = home(s, s->slot[j]);
		if (((j - h) & mask) >= ((j - i) & mask)) {
			s->slot[i] = s->slot[j];
			i = j;
		}
	}
	s->slot[i] = 0;
	s->len--;
	uint8_t c = ht_sfilter[fi];
	if (c < 255)
		__atomic_store_n(&ht_sfilter[fi], (uint8_t)(c - 1), __ATOMIC_RELAXED);
	if (c == 1)
		__atomic_fetch_and(&ht_sfilter_bits[fi / 64], ~(1ull << (fi % 64)),
				   __ATOMIC_RELAXED);
	ht_unlock(&s->lock);
	return true;
}

bool ht_sampled_has(const void *p)
{
	if (!ht_sampled_maybe(p))
		return false;
	shard_t *s = shard_of(ht_sfilter_index(p));
	ht_lock(&s->lock);
	bool r = find(s, (uintptr_t)p) != SIZE_MAX;
	ht_unlock(&s->lock);
	return r;
}

/* fork: no shard may be mid-change in the child. */
void ht_sampling_fork_prepare(void)
{
	for (unsigned i = 0; i < NSHARDS; i++)
		ht_lock(&shards[i].lock);
}

void ht_sampling_fork_parent(void)
{
	for (unsigned i = NSHARDS; i-- > 0;)
		ht_unlock(&shards[i].lock);
}

void ht_sampling_fork_child(void)
{
	for (unsigned i = 0; i < NSHARDS; i++)
		ht_lock_reset(&shards[i].lock);
}
