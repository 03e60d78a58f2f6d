/* packed.h - packed thread blocks (HT_REC_THREAD_PACKED, format 1.6).
 *
 * A packed block is a column block (columns.h) whose address column holds
 * address codes instead of address deltas. Addresses are most of a trace's
 * size: malloc hands out nearly random addresses, and deltas between them
 * do not compress. But the addresses a thread uses repeat: malloc returns
 * the chunk of the same size class that was freed last (glibc's tcache is
 * a LIFO per 16-byte class), and a free names a block the thread itself
 * allocated a while ago. So an address is coded, when it can be, as
 *
 *   BIN k  (allocations) the k-th most recent address this stream freed
 *          into the size class of the new block (k = 0 nearly always);
 *   REF d  the address of the stream's allocation n - d, where n counts
 *          the stream's allocations so far (d < HT_PK_WINDOW); a free's
 *          REF in a block of layout HT_PK_RANK names instead the d-th
 *          youngest allocation still live (ht_pk_live_t), 0 the youngest;
 *   FOLLOW k  (frees, which have no BIN) the address of allocation f + k,
 *          f the allocation the stream's last REF or FOLLOW free named,
 *          |k| <= HT_PK_FOLLOW_MAX: a container freeing its elements in
 *          the order it made them frees f + 1, f + 2, ..., which as REFs
 *          are distances that change with every allocation between;
 *   FREED k  (allocations, in a block of layout HT_PK_FREED) the address
 *          of the stream's k-th latest free (0 the latest, k < 256), of
 *          any class: glibc cuts a block from a free chunk that began
 *          where a block was freed, merged with its neighbours (realloc's
 *          moved buffers);
 *   DELTA  the difference to the previous address, as before.
 *
 * Each code only says "this address equals that earlier one", which is
 * true whatever other threads did in between (a free by another thread, the
 * address reused elsewhere), so decoding is exact without pairing frees
 * with allocations. Writer and reader keep the same state per stream (the
 * last HT_PK_WINDOW allocations, per-class stacks of freed addresses),
 * updated by the same rules from the stream's own events in file order; the
 * writer also keeps a hash table from address to allocation number to find
 * REF candidates, which the reader never needs (an allocation enters it
 * only once another comes: a temporary's free is found without it).
 *
 * A stream is a sequence of packed blocks of one thread; the writer keeps
 * HT_PK_STREAMS of them, reused for other threads after a reset (a flag in
 * the record: the reader starts that stream afresh). The reader joins a
 * packed block into exactly the bytes of the THREAD_BLOCK it stands for.
 *
 * Header only, no allocation: the agent's writer and the reader share it.
 */
#ifndef HEAPTRAIL_PACKED_H
#define HEAPTRAIL_PACKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "columns.h"
#include "trace_format.h"

#define HT_PK_WINDOW 16384u	 /* allocations a REF reaches back; a power of 2 */
#define HT_PK_BINS 254u		 /* size classes with freed-address stacks: blocks up to 4,064 bytes */
#define HT_PK_BINS_1_6 64u	 /* format 1.6's (THREAD_PACKED): blocks up to 1,024 bytes */
#define HT_PK_BIN_DEPTH 128u	 /* addresses kept per class; a power of 2, <= 128 (uint8_t count) */
#define HT_PK_NO_BIN 0xffu	 /* a block too large for the classes */
#define HT_PK_STREAMS 16u	 /* streams a writer keeps */
#define HT_PK_TABLE_BITS 15u	 /* writer's address table: 2^15 entries */

enum { HT_PK_DELTA = 0, HT_PK_BIN = 1, HT_PK_REF = 2, HT_PK_ESCAPE = 3 };
#define HT_PK_FOLLOW HT_PK_BIN /* a free's code: BIN's bits, which frees lack */
#define HT_PK_FOLLOW_MAX 4	/* FOLLOW's reach: |k| <= 4 (sqlite3, containers, python3) */
#define HT_PK_CODE_MAX (1 + HT_VARINT_MAX) /* an escape and its varint */
#define HT_PK_SIZE_UNKNOWN UINT64_MAX

/* A REALLOC's size in a block of layout HT_PK_SIZES, when its old block's
 * code named an allocation (REF, FOLLOW), whose size old both sides then
 * know: 0 for twice the old size (a buffer that doubles), else the zigzag
 * change + 1. A string builder that grows by a few bytes at a time writes
 * one byte where its size took two or three. Sizes never exceed
 * PTRDIFF_MAX, so the + 1 cannot wrap. */
static inline uint64_t ht_pk_size_code(uint64_t size, uint64_t old)
{
	return size == 2 * old ? 0 : ht_zigzag((int64_t)(size - old)) + 1;
}

static inline uint64_t ht_pk_size_decode(uint64_t code, uint64_t old)
{
	return code == 0 ? 2 * old : old + (uint64_t)ht_unzigzag(code - 1);
}

/* The size class of a block among nbins (HT_PK_BINS, or HT_PK_BINS_1_6 in
 * a THREAD_PACKED record): glibc's chunk size (size + 8 rounded up to 16,
 * at least 32) in steps of 16; HT_PK_NO_BIN for a size over 16 * nbins.
 * (That cut, not the chunk's, makes 1.6's sizes 1,025-1,032 classless
 * though their chunk is class 63's: a reader must keep it.) */
static inline unsigned ht_pk_bin(uint64_t size, unsigned nbins)
{
	if (size > 16 * nbins)
		return HT_PK_NO_BIN;
	uint64_t chunk = (size + 8 + 15) & ~(uint64_t)15;
	unsigned b = (unsigned)(chunk < 32 ? 32 : chunk) / 16 - 2;
	return b < nbins ? b : HT_PK_NO_BIN;
}

/* Where glibc puts the next chunk cut from the top of the heap: after
 * this block's chunk. An allocation's DELTA counts from there. */
static inline uint64_t ht_pk_after(uint64_t addr, uint64_t size)
{
	uint64_t chunk = (size + 8 + 15) & ~(uint64_t)15;
	return addr + (chunk < 32 ? 32 : chunk);
}

/* Per class, the last HT_PK_BIN_DEPTH freed addresses, newest at top. */
typedef struct {
	uint64_t addr[HT_PK_BINS][HT_PK_BIN_DEPTH];
	uint8_t top[HT_PK_BINS], count[HT_PK_BINS];
} ht_pk_bins_t;

#define HT_PK_AT(bs, b, k) ((bs)->addr[b][((bs)->top[b] - (k)) & (HT_PK_BIN_DEPTH - 1)])

static inline void ht_pk_bin_push(ht_pk_bins_t *bs, unsigned b, uint64_t addr)
{
	if (b >= HT_PK_BINS)
		return;
	bs->top[b] = (uint8_t)((bs->top[b] + 1) & (HT_PK_BIN_DEPTH - 1));
	bs->addr[b][bs->top[b]] = addr;
	if (bs->count[b] < HT_PK_BIN_DEPTH)
		bs->count[b]++;
}

/* Removes and returns the k-th newest address of class b (k < count):
 * the k newer ones move down a place. (top is read once: stores through
 * uint8_t may alias anything, so bs->top in the loop was read again at
 * every step.) */
static inline uint64_t ht_pk_bin_take(ht_pk_bins_t *bs, unsigned b, unsigned k)
{
	uint64_t *a = bs->addr[b];
	unsigned top = bs->top[b], mask = HT_PK_BIN_DEPTH - 1;
	uint64_t v = a[(top - k) & mask];
	if (k <= top) { /* no wrap: one contiguous run */
		for (unsigned i = top - k; i < top; i++)
			a[i] = a[i + 1];
	} else {
		for (unsigned j = k; j > 0; j--)
			a[(top - j) & mask] = a[(top - j + 1) & mask];
	}
	bs->top[b] = (uint8_t)((top - 1) & mask);
	bs->count[b]--;
	return v;
}

/* The k of addr in class b (the k-th newest), or -1: the ring's two
 * contiguous runs, newest first. */
static inline int ht_pk_bin_find(const ht_pk_bins_t *bs, unsigned b, uint64_t addr)
{
	const uint64_t *a = bs->addr[b];
	unsigned top = bs->top[b], count = bs->count[b];
	unsigned first = count <= top + 1 ? count : top + 1;
	for (unsigned k = 0; k < first; k++)
		if (a[top - k] == addr)
			return (int)k;
	for (unsigned k = first; k < count; k++)
		if (a[top + HT_PK_BIN_DEPTH - k] == addr)
			return (int)k;
	return -1;
}

/* The stream's allocations in the window that no free of the stream has
 * named yet (by REF or FOLLOW), one bit each at m % HT_PK_WINDOW: a
 * free's rank among them (HT_PK_RANK) is its REF code. A program keeps
 * blocks of many ages alive while it churns temporaries: threads' ring of
 * 256 messages between two allocations of scratch each step takes REF
 * distances of ~512 (10.4 bits), and ranks below 256 (8 bits). Both sides
 * keep it from the codes alone, so a free by another thread or a DELTA
 * leaves its block counted live, the same on both. */
/* Each group of 256 allocations also keeps its count, so that a rank
 * that reaches far back (churn's ring of 1,024 entries, realloc's 2,048
 * buffers: 3,000 allocations and more) adds a few counts, not 50 words. */
#define HT_PK_LIVE_GROUP 256u
typedef struct {
	uint64_t bits[HT_PK_WINDOW / 64];
	uint16_t group[HT_PK_WINDOW / HT_PK_LIVE_GROUP];
} ht_pk_live_t;

static inline uint16_t *ht_pk_live_group(ht_pk_live_t *l, uint64_t m)
{
	return &l->group[(m / HT_PK_LIVE_GROUP) & (HT_PK_WINDOW / HT_PK_LIVE_GROUP - 1)];
}

/* Allocation m is made: its bit, which allocation m - HT_PK_WINDOW held. */
static inline void ht_pk_live_set(ht_pk_live_t *l, uint64_t m)
{
	uint64_t *w = &l->bits[(m / 64) & (HT_PK_WINDOW / 64 - 1)], bit = 1ull << (m & 63);
	if (!(*w & bit)) {
		*w |= bit;
		(*ht_pk_live_group(l, m))++;
	}
}

static inline void ht_pk_live_clear(ht_pk_live_t *l, uint64_t m)
{
	uint64_t *w = &l->bits[(m / 64) & (HT_PK_WINDOW / 64 - 1)], bit = 1ull << (m & 63);
	if (*w & bit) {
		*w &= ~bit;
		(*ht_pk_live_group(l, m))--;
	}
}

static inline bool ht_pk_live_has(const ht_pk_live_t *l, uint64_t m)
{
	return l->bits[(m / 64) & (HT_PK_WINDOW / 64 - 1)] >> (m & 63) & 1;
}

/* Bits set in x. Without POPCNT in the target (x86-64's baseline lacks
 * it) the builtin is a call into libgcc: 4% of the threads bench's CPU. */
static inline unsigned ht_pk_popcount(uint64_t x)
{
#if defined(__POPCNT__)
	return (unsigned)__builtin_popcountll(x);
#else
	x -= (x >> 1) & 0x5555555555555555ull;
	x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
	x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
	return (unsigned)((x * 0x0101010101010101ull) >> 56);
#endif
}

/* Bits 0 .. k of a word (k < 64). */
static inline uint64_t ht_pk_bits_upto(unsigned k)
{
	return k == 63 ? ~0ull : (2ull << k) - 1;
}

/* How many of allocations m + 1 .. n are live (n - m < HT_PK_WINDOW),
 * counting bits with POP. A rank reaches as far back as the block lived:
 * realloc's 2,048 buffers, ~32 words. */
#define HT_PK_LIVE_RANK_BODY(POP)                                                                  \
	const uint64_t mask = HT_PK_WINDOW / 64 - 1, per = HT_PK_LIVE_GROUP / 64;                  \
	if (m >= n)                                                                                \
		return 0;                                                                          \
	uint64_t lo = m + 1, wa = lo / 64, wb = n / 64;                                            \
	if (wa == wb)                                                                              \
		return POP((l->bits[wa & mask] >> (lo & 63)) & ht_pk_bits_upto((unsigned)(n - lo))); \
	uint64_t count = POP(l->bits[wa++ & mask] >> (lo & 63));                                   \
	for (; wa < wb && wa % per; wa++) /* whole words up to a group */                          \
		count += POP(l->bits[wa & mask]);                                                  \
	for (; wa + per <= wb; wa += per) /* whole groups */                                       \
		count += l->group[(wa / per) & (HT_PK_WINDOW / HT_PK_LIVE_GROUP - 1)];             \
	for (; wa < wb; wa++)                                                                      \
		count += POP(l->bits[wa & mask]);                                                  \
	return count + POP(l->bits[wb & mask] & ht_pk_bits_upto((unsigned)(n & 63)))

#if defined(__x86_64__) && !defined(__POPCNT__)
#include <cpuid.h>
/* With the POPCNT instruction, where the CPU has it (nearly all do; the
 * compiler may not assume it): the shift-and-add count made a realloc
 * bench's ranks 14% of its CPU. */
__attribute__((target("popcnt"))) static uint64_t ht_pk_live_rank_popcnt(const ht_pk_live_t *l,
									  uint64_t m, uint64_t n)
{
	HT_PK_LIVE_RANK_BODY(__builtin_popcountll);
}

static inline bool ht_pk_cpu_popcnt(void)
{
	static int has = -1; /* per file; a race only computes it twice */
	if (has < 0) {
		unsigned a, b, c, d;
		has = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_POPCNT);
	}
	return has;
}
#endif

static inline uint64_t ht_pk_live_rank(const ht_pk_live_t *l, uint64_t m, uint64_t n)
{
#if defined(__x86_64__) && !defined(__POPCNT__)
	if (ht_pk_cpu_popcnt())
		return ht_pk_live_rank_popcnt(l, m, n);
#endif
	HT_PK_LIVE_RANK_BODY(ht_pk_popcount);
}

/* The allocation whose rank (above) is r, counting from n down, never
 * below n - HT_PK_WINDOW + 1 nor 1; 0 if there is none. */
static inline uint64_t ht_pk_live_select(const ht_pk_live_t *l, uint64_t r, uint64_t n)
{
	const uint64_t words = HT_PK_WINDOW / 64;
	uint64_t floor = n >= HT_PK_WINDOW ? n - HT_PK_WINDOW + 1 : 1;
	uint64_t hi = n; /* look at allocations floor .. hi */
	while (hi >= floor && hi > 0) {
		if ((hi + 1) % HT_PK_LIVE_GROUP == 0 && hi - floor >= HT_PK_LIVE_GROUP - 1) {
			uint64_t g = l->group[(hi / HT_PK_LIVE_GROUP) &
					      (HT_PK_WINDOW / HT_PK_LIVE_GROUP - 1)];
			if (r >= g) { /* not in this group */
				r -= g;
				if (hi < HT_PK_LIVE_GROUP)
					break;
				hi -= HT_PK_LIVE_GROUP;
				continue;
			}
		}
		uint64_t w = hi / 64, start = w * 64 > floor ? w * 64 : floor;
		uint64_t bits = l->bits[w & (words - 1)];
		unsigned top = (unsigned)(hi & 63), low = (unsigned)(start & 63);
		bits &= ht_pk_bits_upto(top) & ~0ull << low;
		uint64_t c = ht_pk_popcount(bits);
		if (r < c) { /* the (r + 1)-th highest bit of bits */
			for (; r; r--)
				bits &= ~(1ull << (63 - __builtin_clzll(bits)));
			return w * 64 + (uint64_t)(63 - __builtin_clzll(bits));
		}
		r -= c;
		if (start == 0)
			break;
		hi = start - 1;
	}
	return 0;
}

/* The addresses of the stream's last HT_PK_RECENT frees, of any class,
 * at their free's number (n-th free of the stream) % HT_PK_RECENT: what
 * FREED codes name. Every free of the stream goes in, however it was
 * coded (both sides know its address once decoded), and nothing leaves
 * but by age, so a code is a subtraction on both sides. */
#define HT_PK_RECENT 256u
typedef struct {
	uint64_t addr[HT_PK_RECENT];
	uint64_t n; /* frees so far */
} ht_pk_recent_t;

static inline void ht_pk_recent_push(ht_pk_recent_t *r, uint64_t addr)
{
	r->addr[r->n++ & (HT_PK_RECENT - 1)] = addr;
}

/* The writer's way back from an address to its latest free: a direct
 * mapped table, so a collision only costs a FREED code. */
#define HT_PK_RECENT_INDEX_BITS 10u

/* ---- the writer ------------------------------------------------------------ */

typedef struct {
	uint64_t addr;
	uint64_t num_bin; /* allocation number << 8 | class; 0: empty */
	uint64_t size;
} ht_pk_slot_t;

/* The writer's count of the addresses in its classes' stacks, by a hash
 * of the class and the address: an allocation whose count is 0 is not in
 * its class's stack, and its 128 addresses need no search. (Searching was
 * 18% of the whole run's CPU under C++ containers, whose new blocks are
 * often not ones freed lately; the filter spares a third of it, the
 * searches that miss.) One byte a count: with 2^16 counts of 16 bits,
 * the 32,512 addresses the classes hold made "maybe" the answer for a
 * third of the addresses not there, each a search of a whole class; 2^18
 * bytes (256 KiB) cut the bench's realloc writer's coding of allocations
 * from 91 to 67 M instructions (callgrind, 600k iterations). Counts
 * saturate, and stay, at UINT8_MAX. */
#define HT_PK_FILTER_BITS 18u

typedef struct ht_pk_writer {
	uint64_t n;    /* allocations coded so far */
	uint64_t next; /* ht_pk_after the last allocation */
	uint64_t last; /* the last allocation's address, not in the table yet;
			  0: none (freed, or moved to the table) */
	uint64_t freed; /* the allocation the last REF or FOLLOW free named; 0: none */
	uint64_t last_size;
	uint64_t named_size; /* the size of the allocation the last free's code
				named; HT_PK_SIZE_UNKNOWN after a DELTA */
	unsigned last_bin;
	bool join_next; /* the last block split had no DELTA: join the next (HT_PK_JOINED) */
	bool rank;	/* the block being split codes frees' REFs by rank (HT_PK_RANK) */
	bool freed_codes; /* ... and may code allocations FREED (HT_PK_FREED) */
	ht_pk_live_t live;
	ht_pk_recent_t recent;
	struct {
		uint64_t addr, n; /* n: the free's number + 1; 0: empty */
	} recent_index[1u << HT_PK_RECENT_INDEX_BITS];
	ht_pk_bins_t bins;
	ht_pk_slot_t table[1u << HT_PK_TABLE_BITS];
	uint8_t in_bins[1u << HT_PK_FILTER_BITS];
} ht_pk_writer_t;

static inline uint8_t *ht_pk_filter(ht_pk_writer_t *w, unsigned b, uint64_t addr)
{
	return &w->in_bins[((addr ^ (uint64_t)b << 52) * 0xff51afd7ed558ccdull) >>
			   (64 - HT_PK_FILTER_BITS)];
}

/* Moves a filter count by d (+1 or -1) unless it saturated. */
static inline void ht_pk_filter_add(uint8_t *f, int d)
{
	if (*f != UINT8_MAX)
		*f = (uint8_t)(*f + d);
}

/* ht_pk_bin_push for the writer, counting what comes in and goes out. */
static inline void ht_pk_w_push(ht_pk_writer_t *w, unsigned b, uint64_t addr)
{
	if (b >= HT_PK_BINS)
		return;
	if (w->bins.count[b] == HT_PK_BIN_DEPTH) /* the oldest falls out */
		ht_pk_filter_add(ht_pk_filter(w, b, HT_PK_AT(&w->bins, b, HT_PK_BIN_DEPTH - 1)), -1);
	ht_pk_bin_push(&w->bins, b, addr);
	ht_pk_filter_add(ht_pk_filter(w, b, addr), 1);
}

static inline ht_pk_slot_t *ht_pk_slot(ht_pk_writer_t *w, uint64_t addr)
{
	return &w->table[(addr * 0x9e3779b97f4a7c15ull) >> (64 - HT_PK_TABLE_BITS)];
}

/* addr's slot when it holds one of the stream's last HT_PK_WINDOW
 * allocations at addr (a REF can name it), else NULL. */
static inline ht_pk_slot_t *ht_pk_find(ht_pk_writer_t *w, uint64_t addr)
{
	ht_pk_slot_t *s = ht_pk_slot(w, addr);
	return s->num_bin && s->addr == addr && w->n - (s->num_bin >> 8) < HT_PK_WINDOW ? s : NULL;
}

/* True if the code at p is a DELTA (or its escape): an address that no
 * state of the stream predicted. */
static inline bool ht_pk_is_delta(const uint8_t *p)
{
	return (*p & 3) == HT_PK_DELTA || (*p & 3) == HT_PK_ESCAPE;
}

static inline size_t ht_pk_put_delta(uint8_t *out, uint64_t addr, uint64_t prev)
{
	uint64_t z = ht_zigzag((int64_t)(addr - prev));
	if (z < (1ull << 62))
		return ht_varint_put(out, z << 2 | HT_PK_DELTA);
	size_t n = ht_varint_put(out, HT_PK_ESCAPE);
	return n + ht_varint_put(out + n, z);
}

/* The code of a freed address (a FREE, or the old block of a REALLOC). */
static inline size_t ht_pk_put_free_code(ht_pk_writer_t *w, uint8_t *out, uint64_t addr,
					 uint64_t prev)
{
	if (addr && addr == w->last) {
		/* the block allocated last (a temporary, the commonest free):
		 * REF 0 (its rank is 0 too), and it never goes into the table
		 * (two cache misses saved, the table being far larger than L2) */
		w->last = 0;
		w->freed = w->n;
		w->named_size = w->last_size;
		ht_pk_live_clear(&w->live, w->n);
		ht_pk_w_push(w, w->last_bin, addr);
		return ht_varint_put(out, HT_PK_REF);
	}
	ht_pk_slot_t *s = ht_pk_find(w, addr);
	if (s) {
		uint64_t m = s->num_bin >> 8;
		int64_t k = (int64_t)(m - w->freed);
		bool follow = w->freed && k >= -(int64_t)HT_PK_FOLLOW_MAX && k <= HT_PK_FOLLOW_MAX;
		w->freed = m;
		w->named_size = s->size;
		ht_pk_w_push(w, (unsigned)(s->num_bin & 0xff), addr);
		s->num_bin = 0;
		ht_pk_live_clear(&w->live, m);
		if (follow)
			return ht_varint_put(out, ht_zigzag(k) << 2 | HT_PK_FOLLOW);
		uint64_t d = w->rank ? ht_pk_live_rank(&w->live, m, w->n) : w->n - m;
		return ht_varint_put(out, d << 2 | HT_PK_REF);
	}
	w->named_size = HT_PK_SIZE_UNKNOWN;
	return ht_pk_put_delta(out, addr, prev);
}

static inline unsigned ht_pk_recent_home(uint64_t addr)
{
	return (unsigned)((addr * 0x9e3779b97f4a7c15ull) >> (64 - HT_PK_RECENT_INDEX_BITS));
}

static inline size_t ht_pk_put_free(ht_pk_writer_t *w, uint8_t *out, uint64_t addr, uint64_t prev)
{
	if (w->freed_codes) { /* only the writer's: blocks without FREED skip it */
		unsigned h = ht_pk_recent_home(addr);
		w->recent_index[h].addr = addr;
		w->recent_index[h].n = w->recent.n + 1;
	}
	ht_pk_recent_push(&w->recent, addr);
	return ht_pk_put_free_code(w, out, addr, prev);
}

/* The code of an allocated address (an ALLOC, or the new block of a
 * REALLOC, whose DELTA counts from prev, the old block); the allocation
 * then counts. */
static inline size_t ht_pk_put_alloc(ht_pk_writer_t *w, uint8_t *out, uint64_t addr, uint64_t size,
				     uint64_t prev, unsigned nbins)
{
	if (w->last) { /* the previous allocation outlived the next event */
		ht_pk_slot_t *p = ht_pk_slot(w, w->last);
		p->addr = w->last;
		p->num_bin = w->n << 8 | w->last_bin;
		p->size = w->last_size;
	}
	unsigned b = ht_pk_bin(size, nbins);
	size_t n = 0;
	uint8_t *f = ht_pk_filter(w, b, addr);
	if (b < HT_PK_BINS && *f) {
		int k = ht_pk_bin_find(&w->bins, b, addr);
		if (k >= 0) {
			ht_pk_bin_take(&w->bins, b, (unsigned)k);
			ht_pk_filter_add(f, -1);
			n = ht_varint_put(out, (uint64_t)k << 2 | HT_PK_BIN);
		}
	}
	if (!n) {
		const ht_pk_slot_t *s = ht_pk_find(w, addr);
		if (s)
			n = ht_varint_put(out, (w->n - (s->num_bin >> 8)) << 2 | HT_PK_REF);
	}
	if (!n && w->freed_codes && addr != prev) { /* DELTA 0 is as short */
		unsigned h = ht_pk_recent_home(addr);
		uint64_t nf = w->recent_index[h].n; /* the free's number + 1 */
		if (nf && w->recent_index[h].addr == addr && w->recent.n - nf < HT_PK_RECENT)
			n = ht_varint_put(out, (w->recent.n - nf + 1) << 2 | HT_PK_ESCAPE);
	}
	if (!n)
		n = ht_pk_put_delta(out, addr, prev);
	w->n++;
	ht_pk_live_set(&w->live, w->n);
	w->next = ht_pk_after(addr, size);
	w->last = addr;
	w->last_bin = b;
	w->last_size = size;
	return n;
}

/* Reads one varint of in, or false. */
static inline bool ht_pk_get(ht_col_in_t *in, uint64_t *v)
{
	size_t k = ht_varint_get(in->p + in->pos, in->len - in->pos, v);
	in->pos += k;
	return k > 0;
}

/* A packed block's layout, bits of:
 *   HT_PK_BATCH   a block of a THREAD_BATCH (format 1.7): its stack ids go
 *                 with the events' first bytes, in column 0, and it has
 *                 HT_PK_BINS size classes (a THREAD_PACKED record's have 64);
 *   HT_PK_JOINED  (batch blocks of format 1.8, a flag in their header) its
 *                 address codes go to column 0 as well, each event's
 *                 before its stack id. Where every address is a code of a
 *                 few values (a program that frees what it allocated in a
 *                 steady pattern: no DELTA in the block), a run of events
 *                 repeats whole in column 0, one zstd match: deep
 *                 recursion's trace 16% smaller. Where addresses vary, the
 *                 mix breaks the other fields' runs (cc1 +17%), so the
 *                 writer joins a stream's block only when its previous
 *                 block had no DELTA code (ht_pk_writer_t.join_next).
 *   HT_PK_SIZES   (batch blocks of format 1.10, a flag in their header) a
 *                 REALLOC whose old block is coded REF or FOLLOW has its
 *                 size coded against that block's (ht_pk_size_code);
 *   HT_PK_RANK    (batch blocks of format 1.11, a flag in their header)
 *                 a free's REF (FREE, a REALLOC's old block) is its
 *                 allocation's rank among the stream's live ones
 *                 (ht_pk_live_t), not its distance;
 *   HT_PK_FREES   (batch blocks of format 1.11, a flag in their header)
 *                 the frees' address codes (FREE's, a REALLOC's old
 *                 block's) go to column 4, which batch blocks leave empty:
 *                 which block a program frees and where its new block
 *                 lands follow different statistics, and apart zstd fits
 *                 a table to each (threads' address codes 6% smaller,
 *                 containers' 9%). Not with HT_PK_JOINED in this writer;
 *   HT_PK_FREED   (batch blocks of format 1.11, a flag in their header)
 *                 an allocation may be coded FREED k: (k + 1) << 2 | 3,
 *                 the codes above ESCAPE's (ht_pk_recent_t). */
#define HT_PK_BATCH 1u
#define HT_PK_JOINED 2u
#define HT_PK_SIZES 4u
#define HT_PK_RANK 8u
#define HT_PK_FREES 16u
#define HT_PK_FREED 32u

/* A batch block's header flags (trace_format.h, HT_BATCH_*) are its
 * layout's bits but HT_PK_BATCH, one place down. */
_Static_assert(HT_BATCH_JOINED << 1 == HT_PK_JOINED && HT_BATCH_SIZES << 1 == HT_PK_SIZES &&
		       HT_BATCH_RANK << 1 == HT_PK_RANK && HT_BATCH_FREES << 1 == HT_PK_FREES &&
		       HT_BATCH_FREED << 1 == HT_PK_FREED,
	       "batch flags are layout bits shifted");
#define HT_BATCH_FLAGS_KNOWN                                                                       \
	(HT_BATCH_JOINED | HT_BATCH_SIZES | HT_BATCH_RANK | HT_BATCH_FREES | HT_BATCH_FREED)

static inline unsigned ht_pk_layout_of_flags(uint64_t flags)
{
	return HT_PK_BATCH | (unsigned)(flags & HT_BATCH_FLAGS_KNOWN) << 1;
}

static inline unsigned ht_pk_flags_of_layout(unsigned layout)
{
	return layout >> 1 & HT_BATCH_FLAGS_KNOWN;
}

static inline unsigned ht_pk_nbins(unsigned layout)
{
	return layout & HT_PK_BATCH ? HT_PK_BINS : HT_PK_BINS_1_6;
}

/* The column of a packed block's field f. */
static inline unsigned ht_pk_column(char f, unsigned layout)
{
	if ((f == 'K' && (layout & HT_PK_BATCH)) || (f == 'A' && (layout & HT_PK_JOINED)))
		return HT_COL_EVENT;
	return ht_field_column(f);
}

/* The column of a packed block's free codes (FREE, a REALLOC's old block). */
static inline unsigned ht_pk_free_column(unsigned layout)
{
	return layout & HT_PK_FREES ? HT_COL_STACK : ht_pk_column('A', layout);
}

/* Splits the events ev[0..n) into columns like ht_columns_split, with the
 * address codes of stream w, in the columns layout says. Columns have
 * room bytes each, room >= n (only the column of the address codes can
 * outgrow the events). False on bytes that are not whole events, or when
 * the address codes outgrow room: w is then out of step and must be
 * reset. Sets w->join_next for the stream's next block. */
static inline bool ht_packed_split(const uint8_t *ev, size_t n, uint8_t *col[HT_NCOLS],
				   size_t len[HT_NCOLS], size_t room, ht_pk_writer_t *w, unsigned layout)
{
	ht_col_in_t in = {ev, 0, n};
	const unsigned kc = ht_pk_column('K', layout), ca = ht_pk_column('A', layout);
	const unsigned fc = ht_pk_free_column(layout);
	const unsigned nbins = ht_pk_nbins(layout);
	/* joined, column 0 takes an event's first byte and stack id too */
	const size_t margin = 2 * HT_PK_CODE_MAX + (ca == HT_COL_EVENT ? 1 + HT_VARINT_MAX : 0);
	uint64_t blk_prev = 0, pk_prev = 0;
	size_t codes = 0, deltas = 0;
	w->rank = (layout & HT_PK_RANK) != 0;
	w->freed_codes = (layout & HT_PK_FREED) != 0;
	for (unsigned c = 0; c < HT_NCOLS; c++)
		len[c] = 0;
	while (in.pos < n) {
		uint8_t op = ev[in.pos++];
		unsigned kind = op & 0x0f;
		const char *f = ht_event_fields(kind);
		if (!f)
			return false;
		col[HT_COL_EVENT][len[HT_COL_EVENT]++] = op;
		/* The other columns only take the events' own bytes, but the
		 * address codes count from other places than the raw deltas
		 * (an allocation from the predicted chunk, say, after a free
		 * far away), so their column can outgrow the events: room for
		 * this event's two codes at most, or give up. */
		if (len[ca] + margin > room || len[fc] + margin > room)
			return false;
		uint64_t addr = 0, size = 0, v;
		ht_col_in_t at_k; /* the stack id, copied after the address codes */
		/* the two events nearly every block is made of, without going
		 * through their field lists (the writer's hottest loop) */
		if (kind == HT_EV_FREE || kind == HT_EV_ALLOC) { /* "TA", "TASK" */
			if (!ht_col_copy_varint(&in, col[HT_COL_TIME], &len[HT_COL_TIME], NULL) ||
			    !ht_pk_get(&in, &v))
				return false;
			addr = blk_prev + (uint64_t)ht_unzigzag(v);
			blk_prev = addr;
			uint8_t *a;
			if (kind == HT_EV_FREE) {
				a = col[fc] + len[fc];
				len[fc] += ht_pk_put_free(w, a, addr, pk_prev);
			} else {
				a = col[ca] + len[ca];
				if (!ht_col_copy_varint(&in, col[HT_COL_SIZE], &len[HT_COL_SIZE], &size))
					return false;
				at_k = in;
				if (!ht_pk_get(&in, &v)) /* the stack id, skipped */
					return false;
				len[ca] += ht_pk_put_alloc(w, a, addr, size, w->next, nbins);
				ht_col_copy_varint(&at_k, col[kc], &len[kc], NULL);
			}
			codes++;
			deltas += ht_pk_is_delta(a);
			pk_prev = addr;
			continue;
		}
		if (kind == HT_EV_REALLOC) { /* "TASKRR": the new block, then old - new */
			uint64_t d;
			/* a size code may be longer than the size it stands for */
			if (len[HT_COL_SIZE] + HT_VARINT_MAX > room)
				return false;
			if (!ht_col_copy_varint(&in, col[HT_COL_TIME], &len[HT_COL_TIME], NULL) ||
			    !ht_pk_get(&in, &v) || !ht_pk_get(&in, &size))
				return false;
			at_k = in;
			if (!ht_pk_get(&in, &d) || /* the stack id, skipped */
			    !ht_pk_get(&in, &d) ||
			    !ht_col_copy_varint(&in, col[HT_COL_OTHER], &len[HT_COL_OTHER], NULL))
				return false;
			addr = blk_prev + (uint64_t)ht_unzigzag(v);
			blk_prev = addr;
			uint64_t old = addr + (uint64_t)ht_unzigzag(d);
			uint8_t *a = col[fc] + len[fc];
			len[fc] += ht_pk_put_free(w, a, old, pk_prev);
			len[HT_COL_SIZE] += ht_varint_put(
				col[HT_COL_SIZE] + len[HT_COL_SIZE],
				(layout & HT_PK_SIZES) && w->named_size != HT_PK_SIZE_UNKNOWN
					? ht_pk_size_code(size, w->named_size)
					: size);
			uint8_t *b = col[ca] + len[ca];
			len[ca] += ht_pk_put_alloc(w, b, addr, size, old, nbins);
			ht_col_copy_varint(&at_k, col[kc], &len[kc], NULL);
			codes += 2;
			deltas += ht_pk_is_delta(a) + ht_pk_is_delta(b);
			pk_prev = addr;
			continue;
		}
		/* every other event: no heap address, its fields as they are */
		for (unsigned i = 0; f[i]; i++) {
			unsigned c = ht_pk_column(f[i], layout);
			if (f[i] != 'A') {
				if (!ht_col_copy_field(f[i], &in, col[c], &len[c]))
					return false;
				continue;
			}
			if (!ht_pk_get(&in, &v))
				return false;
			addr = blk_prev + (uint64_t)ht_unzigzag(v);
			blk_prev = addr;
			len[c] += ht_pk_put_delta(col[c] + len[c], addr, pk_prev);
			pk_prev = addr;
		}
	}
	w->join_next = codes && !deltas;
	return true;
}

/* ---- the reader ------------------------------------------------------------ */

typedef struct ht_pk_reader {
	uint64_t n;    /* allocations decoded so far */
	uint64_t next; /* ht_pk_after the last allocation */
	uint64_t freed; /* the allocation the last REF or FOLLOW free named; 0: none */
	unsigned nbins; /* size classes of the block being read (ht_pk_nbins) */
	bool started; /* false: before a reset, or after damage */
	bool rank;    /* the block being read codes frees' REFs by rank (HT_PK_RANK) */
	bool freed_codes; /* ... and may code allocations FREED (HT_PK_FREED) */
	ht_pk_live_t live;
	ht_pk_recent_t recent;
	ht_pk_bins_t bins;
	uint64_t named_size; /* the size of the allocation the last free's code
				named; HT_PK_SIZE_UNKNOWN after a DELTA */
	uint64_t ring[HT_PK_WINDOW];	 /* address of allocation m at m % W */
	uint64_t ring_size[HT_PK_WINDOW]; /* its size */
	uint8_t ring_bin[HT_PK_WINDOW]; /* its class */
} ht_pk_reader_t;

static inline void ht_pk_reader_reset(ht_pk_reader_t *r)
{
	r->n = 0;
	r->next = 0;
	r->freed = 0;
	r->nbins = HT_PK_BINS;
	r->started = true;
	memset(&r->live, 0, sizeof r->live);
	memset(&r->recent, 0, sizeof r->recent);
	memset(&r->bins, 0, sizeof r->bins);
}

/* Decodes one address code. alloc: an allocation of the given size (BIN
 * allowed, and the allocation counts); else a free. */
static inline bool ht_pk_decode(ht_pk_reader_t *r, ht_col_in_t *in, bool heap, bool alloc,
				uint64_t size, uint64_t prev, uint64_t *addr)
{
	uint64_t c, z;
	if (!ht_pk_get(in, &c))
		return false;
	unsigned b = alloc ? ht_pk_bin(size, r->nbins) : HT_PK_NO_BIN;
	r->named_size = HT_PK_SIZE_UNKNOWN;
	switch (c & 3) {
	case HT_PK_DELTA:
		*addr = prev + (uint64_t)ht_unzigzag(c >> 2);
		break;
	case HT_PK_ESCAPE:
		if (c != HT_PK_ESCAPE) { /* FREED k */
			z = (c >> 2) - 1;
			if (!alloc || !heap || !r->freed_codes || z >= HT_PK_RECENT ||
			    z >= r->recent.n)
				return false;
			*addr = r->recent.addr[(r->recent.n - 1 - z) & (HT_PK_RECENT - 1)];
			break;
		}
		if (!ht_pk_get(in, &z))
			return false;
		*addr = prev + (uint64_t)ht_unzigzag(z);
		break;
	case HT_PK_BIN: /* HT_PK_FOLLOW for a free */
		if (alloc) {
			if (b >= HT_PK_BINS || (c >> 2) >= r->bins.count[b])
				return false;
			*addr = ht_pk_bin_take(&r->bins, b, (unsigned)(c >> 2));
			break;
		}
		if (!heap || !r->freed)
			return false;
		z = r->freed + (uint64_t)ht_unzigzag(c >> 2);
		if (z == 0 || z > r->n || r->n - z >= HT_PK_WINDOW)
			return false;
		goto named;
	default: /* HT_PK_REF */
		z = c >> 2;
		if (!heap || z >= HT_PK_WINDOW || z >= r->n)
			return false;
		if (!alloc && r->rank) {
			if (!(z = ht_pk_live_select(&r->live, z, r->n)))
				return false;
		} else {
			z = r->n - z;
		}
	named: /* the address of allocation z; a free of it feeds its class */
		*addr = r->ring[z & (HT_PK_WINDOW - 1)];
		if (!alloc) {
			ht_pk_bin_push(&r->bins, r->ring_bin[z & (HT_PK_WINDOW - 1)], *addr);
			r->freed = z;
			r->named_size = r->ring_size[z & (HT_PK_WINDOW - 1)];
			ht_pk_live_clear(&r->live, z);
		}
		break;
	}
	if (heap && !alloc)
		ht_pk_recent_push(&r->recent, *addr);
	if (alloc) {
		r->n++;
		ht_pk_live_set(&r->live, r->n);
		r->next = ht_pk_after(*addr, size);
		r->ring[r->n & (HT_PK_WINDOW - 1)] = *addr;
		r->ring_size[r->n & (HT_PK_WINDOW - 1)] = size;
		r->ring_bin[r->n & (HT_PK_WINDOW - 1)] = (uint8_t)b;
	}
	return true;
}

/* The most bytes a packed block of this layout can take once joined: each
 * byte of the column that holds its address codes (column 0 when joined)
 * may stand for two 10-byte fields, and with HT_PK_SIZES each byte of the
 * size column for a 10-byte size. */
static inline size_t ht_packed_join_bound(const size_t len[HT_NCOLS], unsigned layout)
{
	size_t total = 0;
	for (unsigned c = 0; c < HT_NCOLS; c++)
		total += len[c];
	size_t codes = len[ht_pk_column('A', layout)];
	if (ht_pk_free_column(layout) != ht_pk_column('A', layout))
		codes += len[ht_pk_free_column(layout)];
	return total + 2 * HT_VARINT_MAX * codes +
	       (layout & HT_PK_SIZES ? HT_VARINT_MAX * len[HT_COL_SIZE] : 0);
}

/* Joins a packed block's columns into the events of the THREAD_BLOCK it
 * stands for, in out (room for ht_packed_join_bound bytes), decoding
 * addresses with stream r; layout as for ht_packed_split. Returns the
 * bytes written; on damage (*bad set) the bytes of the whole events before
 * it, and r is no longer started. */
static inline size_t ht_packed_join(const uint8_t *const col[HT_NCOLS], const size_t len[HT_NCOLS],
				    uint8_t *out, ht_pk_reader_t *r, unsigned layout, bool *bad)
{
	ht_col_in_t in[HT_NCOLS];
	for (unsigned c = 0; c < HT_NCOLS; c++)
		in[c] = (ht_col_in_t){col[c], 0, len[c]};
	size_t o = 0, whole = 0;
	uint64_t blk_prev = 0, pk_prev = 0, addr_fast;
	*bad = false;
	r->nbins = ht_pk_nbins(layout);
	r->rank = (layout & HT_PK_RANK) != 0;
	r->freed_codes = (layout & HT_PK_FREED) != 0;
	const unsigned ca = ht_pk_column('A', layout), fc = ht_pk_free_column(layout);
	const unsigned ck = ht_pk_column('K', layout);
	while (in[HT_COL_EVENT].pos < len[HT_COL_EVENT]) {
		uint8_t op = col[HT_COL_EVENT][in[HT_COL_EVENT].pos++];
		unsigned kind = op & 0x0f;
		/* ALLOC and FREE, nearly every event, field by field without
		 * their grammar ("TASK", "TA"): the loop below does the same
		 * for every event, in the same order, at twice the cost */
		if (kind == HT_EV_FREE) {
			out[o++] = op;
			if (!ht_col_copy_varint(&in[HT_COL_TIME], out, &o, NULL) ||
			    !ht_pk_decode(r, &in[fc], true, false, 0, pk_prev, &addr_fast))
				goto damaged;
			pk_prev = addr_fast;
			o += ht_varint_put(out + o, ht_zigzag((int64_t)(addr_fast - blk_prev)));
			blk_prev = addr_fast;
			whole = o;
			continue;
		}
		if (kind == HT_EV_ALLOC) {
			uint64_t size;
			out[o++] = op;
			ht_col_in_t s = in[HT_COL_SIZE]; /* the size is copied after */
			if (!ht_col_copy_varint(&in[HT_COL_TIME], out, &o, NULL) || !ht_pk_get(&s, &size) ||
			    !ht_pk_decode(r, &in[ca], true, true, size, r->next, &addr_fast))
				goto damaged;
			pk_prev = addr_fast;
			o += ht_varint_put(out + o, ht_zigzag((int64_t)(addr_fast - blk_prev)));
			blk_prev = addr_fast;
			if (!ht_col_copy_varint(&in[HT_COL_SIZE], out, &o, NULL) ||
			    !ht_col_copy_varint(&in[ck], out, &o, NULL))
				goto damaged;
			whole = o;
			continue;
		}
		const char *f = ht_event_fields(kind);
		if (!f)
			goto damaged;
		out[o++] = op;
		bool heap = kind == HT_EV_ALLOC || kind == HT_EV_FREE || kind == HT_EV_REALLOC;
		uint64_t addr = 0, old = 0, size = 0;
		for (unsigned i = 0; f[i]; i++) {
			if (f[i] == 'A') {
				if (kind == HT_EV_ALLOC || (kind == HT_EV_REALLOC && !(layout & HT_PK_SIZES))) {
					ht_col_in_t s = in[HT_COL_SIZE]; /* copied at 'S' */
					if (!ht_pk_get(&s, &size))
						goto damaged;
				}
				ht_col_in_t *a = &in[ca];
				if (kind == HT_EV_REALLOC) {
					if (!ht_pk_decode(r, &in[fc], true, false, 0, pk_prev, &old))
						goto damaged;
					if (layout & HT_PK_SIZES) { /* written at 'S' */
						if (!ht_pk_get(&in[HT_COL_SIZE], &size))
							goto damaged;
						if (r->named_size != HT_PK_SIZE_UNKNOWN)
							size = ht_pk_size_decode(size, r->named_size);
					}
					if (!ht_pk_decode(r, a, true, true, size, old, &addr))
						goto damaged;
				} else if (!ht_pk_decode(r, kind == HT_EV_FREE ? &in[fc] : a, heap,
							 kind == HT_EV_ALLOC, size,
							 kind == HT_EV_ALLOC ? r->next : pk_prev, &addr)) {
					goto damaged;
				}
				pk_prev = addr;
				o += ht_varint_put(out + o, ht_zigzag((int64_t)(addr - blk_prev)));
				blk_prev = addr;
			} else if (kind == HT_EV_REALLOC && i == 4) {
				o += ht_varint_put(out + o, ht_zigzag((int64_t)(old - addr)));
			} else if (kind == HT_EV_REALLOC && f[i] == 'S' && (layout & HT_PK_SIZES)) {
				o += ht_varint_put(out + o, size);
			} else if (!ht_col_copy_field(f[i], &in[ht_pk_column(f[i], layout)], out, &o)) {
				goto damaged;
			}
		}
		whole = o;
	}
	for (unsigned c = 0; c < HT_NCOLS; c++)
		if (in[c].pos != in[c].len)
			goto damaged; /* bytes no event used */
	return whole;
damaged:
	*bad = true;
	r->started = false;
	return whole;
}

#endif /* HEAPTRAIL_PACKED_H */
