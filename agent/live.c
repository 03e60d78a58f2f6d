/* live.c - the agent's table of live blocks, kept off the program's threads.
 *
 * The leak check at exit needs every live block's address and size inside
 * the process. Keeping that table in the hooks would put a shared hash
 * table (and its locks) on every malloc and free; instead a helper thread,
 * the digester (agent/flusher.c), reads each shipped block of events once
 * more before the writer writes it ("digest") and keeps the table itself,
 * off the program's threads and under ht_live_lock (the only lock this file
 * relies on: every function here is called with it held). In summary mode
 * the writer digests, having nothing else to do.
 *
 * Blocks of different threads arrive out of time order, and one thread's
 * block can come seconds of events after another's (it ships when full, or
 * at exit: a thread that waits ships nothing). An address freed on one
 * thread and reused on another can show its events in any order. But at
 * one address blocks follow each other: allocation, free, allocation...
 * so a block is freed exactly when a later event happens at its address,
 * whatever the order the events come in. The table keeps, for each
 * address, its latest event: a live block (its allocation), or a marker
 * (the latest free there, no block). Then:
 *  - an event older than the entry at its address is past history: an
 *    allocation there is counted allocated and freed at once (stale), a
 *    free dropped (its block was counted freed, or will be as stale);
 *  - a later allocation replaces the entry: a live block there is freed
 *    (its free is still on its way, and will be dropped);
 *  - a later free makes the entry a marker: a live block there is freed.
 * A free that finds nothing leaves a marker too: its allocation may still
 * be on its way (it will be stale), or was never seen.
 * Markers are kept as long as memory allows (markers_forget), not for a
 * time: how late a thread's events come has no bound.
 * Within one thread events come in order, so equal times mean "in order".
 */
#include <errno.h>
#include <string.h>

#include "agent.h"
#include "live.h"

/* Markers may take as many of the table's entries as live blocks, or this
 * many: the table stays within twice what the live blocks need. */
#define MARKERS_MIN 16384


/* ---- slots -------------------------------------------------------------------
 * An entry takes 16 bytes: the address and the time of its latest event
 * decide where each event belongs (see above), the rest is packed around
 * them:
 *   a: bits 0-47 the address, 48 freed (a marker), 49 custom (a block of
 *      the program's own allocator), 50 ext, 51-63 the payload's low 13 bits;
 *   b: bits 0-43 the time in quanta (HT_TIME_QUANTUM_NS: 78 hours; later
 *      times are kept as the last quantum), 44-51 the thread's low 8 bits
 *      (two threads' equal times), 52-63 the payload's high 12 bits.
 * The payload (25 bits) is the size and, in summary mode, the site's row
 * above it (site_bits). A block that does not fit (a larger size or row,
 * a pool's block) is marked ext and keeps size, row, pool and number in a
 * side table (lv.ext) by address: rare blocks, 32 bytes each. So the
 * table costs 16 bytes a slot, 21-43 bytes a live block (grown at 3/4). */
typedef struct {
	uint64_t a, b;
} slot_t;

#define S_ADDR_MASK ((1ull << 48) - 1)
#define S_FREED (1ull << 48)
#define S_CUSTOM (1ull << 49)
#define S_EXT (1ull << 50)
#define S_LO_SHIFT 51
#define S_LO_BITS 13
#define S_TIME_MASK ((1ull << 44) - 1)
#define S_TID_SHIFT 44
#define S_HI_SHIFT 52
#define S_PAY_BITS 25

_Static_assert(sizeof(slot_t) == sizeof(ht_scan_block_t), "the exit check reuses the slots");

typedef struct {
	slot_t *slots;
	size_t mask; /* capacity - 1; capacity is a power of two */
	size_t count;
	unsigned run_shift; /* log2 of the bytes of heap whose blocks share a run */
	unsigned top_shift; /* clz(mask): a product's top bits index a slot */
	size_t run_mask;    /* a granule's place in its run: (1 << (run_shift - 4)) - 1 */
	size_t full;	    /* the count at which it grows: 3/4 of its slots (0: none yet) */
	uint32_t ops;	    /* lookups since the last look at the probes */
	uint64_t probes;    /* and the slots they stepped over */
} live_table_t;

/* A side table's entry: an ext block's fields (key its address), or a
 * pool's list (key the pool; size its first node + 1 or 0, seq the nodes
 * listed, pool the count at which to look again). */
typedef struct {
	uintptr_t key; /* 0: empty */
	uint64_t size, pool;
	uint32_t seq, site;
} xent_t;

typedef struct {
	xent_t *e;
	size_t mask, count;
	unsigned shift;
} xtab_t;

/* An entry, unpacked. time in quanta, tid8 the thread's low 8 bits. */
typedef struct {
	uintptr_t addr;
	uint64_t size, time, pool;
	uint32_t tid8, site, seq;
	bool custom, freed;
} ent_t;

HT_CACHE_ALIGN ht_live_stats_t ht_live_stats;
ht_lock_t ht_live_lock;

/* ---- summary mode: per-site rows ----------------------------------------------
 * Row 0 is the overflow row: sites that came after the table was full
 * (option summary_sites). Rows are found by stack id through a small
 * open-addressing index. bytes_at_peak is kept without touching every
 * row at each new peak: a row remembers the peak epoch of its last change,
 * and before changing it takes its (unchanged) live bytes as its figure
 * at the latest peak if one happened since. */
typedef struct {
	uint32_t stack_id;
	uint64_t first_time; /* of its first allocation (SITE_TIMES) */
	uint64_t allocs, bytes, frees, live_blocks, live_bytes;
	uint64_t at_peak, max_live, largest, epoch;
	uint64_t kind_blocks[4], kind_bytes[4];
} site_t;


/* Everything the writer changes as it digests, in cache lines of its own:
 * the program's threads read the agent's flags on every call, and a line
 * shared with these counters would move between cores at each event. */
static struct {
	live_table_t blocks;	/* live blocks and markers */
	size_t markers;
	uint64_t forgotten_until; /* markers up to this time (quanta) may be forgotten */
	uint64_t unmatched;	/* frees that freed no block when digested */
	xtab_t ext;		/* ext blocks' fields */
	xtab_t pools;		/* a pool's list of blocks (see pool_note) */
	struct pool_node *pool_nodes;
	uint32_t pool_nodes_used, pool_nodes_cap, pool_nodes_free; /* free: index + 1 */
	unsigned site_bits;	/* summary mode: the payload's bits for the row */
	uintptr_t last_alloc;	/* the address of the latest allocation digested */
	bool taken;		/* the check at exit took the table (ht_live_take) */
	uint64_t peak_time;
	/* summary mode */
	site_t *sites;
	uint32_t nsites, sites_cap; /* sites_cap includes row 0 */
	uint32_t *site_index;	   /* stack id + 1 -> row; 0 = empty */
	uint32_t *site_keys;
	size_t site_index_mask;
	uint64_t peak_epoch;
	uint8_t *stack_defs;	   /* STACK events seen, for the file */
	size_t stack_defs_len, stack_defs_cap;
	size_t stack_defs_written; /* by an earlier summary (before an exec) */
	struct kept_map *maps;	   /* the program's map events, for the file */
	uint32_t nmaps, maps_cap, maps_written;
	/* heaptrail run's summary (ht_live_summary) */
	uint64_t n_allocs, n_frees, n_bytes, n_temporary;
	uint32_t seq;	   /* allocations digested (low bits: a pool block's number) */
	uint32_t heap_tid; /* the thread of the first heap event */
	bool inexact;	   /* the figures may differ from the reader's */
} HT_CACHE_ALIGN lv;

/* One thread's events arrive in order; a second thread's may not. */
static inline void note_heap_thread(uint32_t tid)
{
	if (!lv.heap_tid) {
		lv.heap_tid = tid;
	} else if (tid != lv.heap_tid && !lv.inexact) {
		lv.inexact = true;
		/* blocks of threads come in the order they ship, not in time
		 * order: a summary's peak may count a block another thread had
		 * freed already (the trace's reader merges by time instead) */
		if (ht_opt_summary)
			atomic_fetch_or(&ht_agent_flags, HT_AGENT_SUMMARY_PEAK_ORDER);
	}
}

static bool summary_init(void)
{
	if (lv.sites)
		return true;
	lv.sites_cap = ht_opt_summary_sites + 1;
	size_t idx = 1;
	while (idx < (size_t)lv.sites_cap * 2)
		idx *= 2;
	lv.sites = ht_mmap(lv.sites_cap * sizeof *lv.sites);
	lv.site_index = ht_mmap(idx * sizeof *lv.site_index);
	lv.site_keys = ht_mmap(idx * sizeof *lv.site_keys);
	if (!lv.sites || !lv.site_index || !lv.site_keys) {
		atomic_fetch_or(&ht_agent_flags, HT_AGENT_LIVE_TABLE_FULL);
		return false;
	}
	lv.site_index_mask = idx - 1;
	lv.nsites = 1; /* row 0: overflow */
	/* rows that need more bits go ext, and so do sizes past the rest */
	unsigned bits = 1;
	while (bits < 12 && (1u << bits) < lv.sites_cap)
		bits++;
	lv.site_bits = bits;
	return true;
}

static uint32_t site_of(uint32_t stack_id)
{
	if (!summary_init())
		return 0;
	size_t i = ((stack_id + 1) * 0x9E3779B1u) & lv.site_index_mask;
	for (;; i = (i + 1) & lv.site_index_mask) {
		if (lv.site_keys[i] == stack_id + 1)
			return lv.site_index[i];
		if (!lv.site_keys[i])
			break;
	}
	if (lv.nsites == lv.sites_cap)
		return 0; /* full: the overflow row */
	lv.site_keys[i] = stack_id + 1;
	lv.site_index[i] = lv.nsites;
	lv.sites[lv.nsites].stack_id = stack_id;
	return lv.nsites++;
}

/* Before a change of row r's live bytes. */
static inline void site_touch(site_t *r)
{
	if (r->epoch != lv.peak_epoch) {
		r->at_peak = r->live_bytes;
		r->epoch = lv.peak_epoch;
	}
}

/* Summary mode: a map event (EXT MMAP, MUNMAP, MREMAP, MADVISE_FREE) of the program's,
 * kept to be written at the end beside the STACK definitions, so that the
 * report's MAPPED MEMORY is the full trace's. Maps are few; past
 * MAPS_MAX (or out of memory) the rest are not kept, and the END says so. */
typedef struct kept_map {
	uint64_t time;
	uint8_t op, len;
	uint8_t pay[6 * HT_VARINT_MAX];
} kept_map_t;

#define MAPS_MAX 65536u

static void map_keep(uint8_t op, uint64_t time, const uint8_t *pay, uint64_t len)
{
	if (len > sizeof lv.maps->pay)
		return;
	if (lv.nmaps == lv.maps_cap) {
		uint32_t cap = lv.maps_cap ? lv.maps_cap * 2 : 256;
		kept_map_t *a = cap <= MAPS_MAX ? ht_mmap(cap * sizeof *a) : NULL;
		if (!a) {
			atomic_fetch_or(&ht_agent_flags, HT_AGENT_SUMMARY_MAPS_FULL);
			return;
		}
		if (lv.maps) {
			memcpy(a, lv.maps, lv.nmaps * sizeof *a);
			ht_munmap(lv.maps, lv.maps_cap * sizeof *a);
		}
		lv.maps = a;
		lv.maps_cap = cap;
	}
	kept_map_t *m = &lv.maps[lv.nmaps++];
	m->time = time;
	m->op = op;
	m->len = (uint8_t)len;
	memcpy(m->pay, pay, len);
}

static void stack_def_keep(const uint8_t *p, size_t n)
{
	if (lv.stack_defs_len + n > lv.stack_defs_cap) {
		size_t cap = lv.stack_defs_cap ? lv.stack_defs_cap * 2 : 1 << 20;
		while (cap < lv.stack_defs_len + n)
			cap *= 2;
		uint8_t *d = ht_mmap(cap);
		if (!d) {
			atomic_fetch_or(&ht_agent_flags, HT_AGENT_LIVE_TABLE_FULL);
			return;
		}
		if (lv.stack_defs) {
			memcpy(d, lv.stack_defs, lv.stack_defs_len);
			ht_munmap(lv.stack_defs, lv.stack_defs_cap);
		}
		lv.stack_defs = d;
		lv.stack_defs_cap = cap;
	}
	memcpy(lv.stack_defs + lv.stack_defs_len, p, n);
	lv.stack_defs_len += n;
}

/* Slots keep the heap's locality: the 16-byte granules of one page (or,
 * below, of a smaller line) of the heap map to a run of slots in address
 * order (blocks allocated together are digested, and often freed,
 * together: their probes share cache lines). Each run starts at the slot
 * that Fibonacci hashing of the page number picks, from the product's top
 * bits: consecutive pages then start runs spread evenly over the table.
 * (The product's middle bits, used before, spread them by a stride that
 * lined runs up into clusters at some capacities: a 1M-block heap took 20
 * probes an insertion at one run length, 0.6 at another; runs placed at
 * random, by a full mixer, clustered worse still, 6-120 probes.)
 *
 * Whole pages suit dense heaps (python3's digest ran 25-40% slower with
 * 256-byte lines), but not a heap that keeps a few blocks in each of many
 * pages, where runs overlap into long clusters: the 4-thread bench's
 * 14,000 markers in 32,768 slots took 23 probes a lookup. So the table
 * counts its probes, and when lookups step over more than 4 slots on
 * average, it cuts its lines to a quarter and rebuilds itself: 1 KiB,
 * 256 bytes, then 64 (there, 0.7 probes a lookup for that bench; python3
 * goes to 1 KiB once, and a heap of 1M blocks keeps its pages). */
#define RUN_SHIFT_PAGE 12
#define RUN_SHIFT_MIN 6
#define PROBES_LOOK (1u << 20) /* lookups between looks at the probes */
#define PROBES_MAX 4		/* average slots stepped over a lookup */

/* The home slot of a, from t's geometry (set by table_rebuild: its shifts
 * are kept there, as every probe of the digest hashes). */
static inline size_t table_home(const live_table_t *t, uintptr_t a)
{
	uint64_t run = ((a >> t->run_shift) * 0x9E3779B97F4A7C15ull) >> t->top_shift;
	return (size_t)(run + ((a >> 4) & t->run_mask)) & t->mask;
}

/* ---- the block table: open addressing, linear probing ------------------ */

static inline uintptr_t slot_addr(const slot_t *s)
{
	return (uintptr_t)(s->a & S_ADDR_MASK);
}

/* Moves t's entries to a table of cap slots, placed by run_shift. */
static bool table_rebuild(live_table_t *t, size_t cap, unsigned run_shift)
{
	live_table_t n = *t; /* the new geometry, t's counters */
	n.slots = ht_mmap(cap * sizeof *n.slots);
	if (!n.slots)
		return false;
	n.mask = cap - 1;
	n.run_shift = run_shift;
	n.top_shift = (unsigned)__builtin_clzll(n.mask);
	n.run_mask = ((size_t)1 << (run_shift - 4)) - 1;
	n.full = cap / 4 * 3;
	if (t->slots) {
		for (size_t i = 0; i <= t->mask; i++) {
			const slot_t *e = &t->slots[i];
			if (!e->a)
				continue;
			size_t j = table_home(&n, slot_addr(e));
			while (n.slots[j].a)
				j = (j + 1) & n.mask;
			n.slots[j] = *e;
		}
		ht_munmap(t->slots, (t->mask + 1) * sizeof *t->slots);
	}
	*t = n;
	return true;
}

static bool table_grow(live_table_t *t)
{
	if (!t->slots)
		return table_rebuild(t, 4096, RUN_SHIFT_PAGE);
	return table_rebuild(t, (t->mask + 1) * 2, t->run_shift);
}

/* Counts a lookup that stepped over n slots. */
static inline void probes_note(live_table_t *t, size_t n)
{
	t->probes += n;
	t->ops++;
}

/* Every PROBES_LOOK lookups, shortens the runs if they have clustered
 * (see table_home). It moves entries, so it runs where growing would: at
 * an insertion's start, when no caller holds an entry. */
static void probes_look(live_table_t *t)
{
	if (t->probes > (uint64_t)PROBES_MAX * t->ops && t->run_shift > RUN_SHIFT_MIN)
		table_rebuild(t, t->mask + 1, t->run_shift - 2); /* kept as it is if no memory */
	t->ops = 0;
	t->probes = 0;
}

static slot_t *table_find(live_table_t *t, uintptr_t addr)
{
	if (!t->slots)
		return NULL;
	size_t start = table_home(t, addr);
	for (size_t i = start;; i = (i + 1) & t->mask) {
		slot_t *e = &t->slots[i];
		if (!e->a)
			break;
		if (slot_addr(e) == addr) {
			probes_note(t, (i - start) & t->mask);
			return e;
		}
	}
	return NULL;
}

/* Removes the entry e (a slot of t) and closes the gap it leaves, so that
 * the table never needs tombstones. */
static void table_remove(live_table_t *t, slot_t *e)
{
	size_t i = (size_t)(e - t->slots);
	for (size_t j = (i + 1) & t->mask;; j = (j + 1) & t->mask) {
		if (!t->slots[j].a)
			break;
		size_t home = table_home(t, slot_addr(&t->slots[j]));
		/* move j into the hole at i if its home is not in (i, j] */
		if (((j - home) & t->mask) >= ((j - i) & t->mask)) {
			t->slots[i] = t->slots[j];
			i = j;
		}
	}
	t->slots[i].a = 0;
	t->slots[i].b = 0;
	t->count--;
}

/* The entry of addr, or a fresh one (addr set, the rest to fill: *fresh
 * tells which); NULL when out of memory. One probe for both. */
static slot_t *table_upsert(live_table_t *t, uintptr_t addr, bool *fresh)
{
	if (HT_UNLIKELY(t->count >= t->full) && !table_grow(t))
		return NULL;
	if (HT_UNLIKELY(t->ops >= PROBES_LOOK))
		probes_look(t);
	size_t start = table_home(t, addr), i = start;
	for (;; i = (i + 1) & t->mask) {
		if (!t->slots[i].a)
			break;
		if (slot_addr(&t->slots[i]) == addr) {
			*fresh = false;
			probes_note(t, (i - start) & t->mask);
			return &t->slots[i];
		}
	}
	probes_note(t, (i - start) & t->mask);
	t->slots[i].a = addr;
	t->slots[i].b = 0;
	t->count++;
	*fresh = true;
	return &t->slots[i];
}

/* ---- side tables: ext blocks' fields, pools' lists ----------------------------- */

static inline size_t xt_home(const xtab_t *t, uintptr_t key)
{
	return (size_t)((key * 0x9E3779B97F4A7C15ull) >> t->shift) & t->mask;
}

static xent_t *xt_find(xtab_t *t, uintptr_t key)
{
	if (!t->e)
		return NULL;
	for (size_t i = xt_home(t, key);; i = (i + 1) & t->mask) {
		if (t->e[i].key == key)
			return &t->e[i];
		if (!t->e[i].key)
			return NULL;
	}
}

static bool xt_grow(xtab_t *t)
{
	size_t cap = t->e ? (t->mask + 1) * 2 : 256;
	xtab_t n = {ht_mmap(cap * sizeof(xent_t)), cap - 1, t->count, 0};
	if (!n.e)
		return false;
	n.shift = (unsigned)__builtin_clzll(n.mask);
	if (t->e) {
		for (size_t i = 0; i <= t->mask; i++) {
			if (!t->e[i].key)
				continue;
			size_t j = xt_home(&n, t->e[i].key);
			while (n.e[j].key)
				j = (j + 1) & n.mask;
			n.e[j] = t->e[i];
		}
		ht_munmap(t->e, (t->mask + 1) * sizeof(xent_t));
	}
	*t = n;
	return true;
}

/* The entry of key, or a fresh zeroed one; NULL when out of memory. */
static xent_t *xt_upsert(xtab_t *t, uintptr_t key, bool *fresh)
{
	if ((!t->e || t->count >= (t->mask + 1) / 4 * 3) && !xt_grow(t))
		return NULL;
	size_t i = xt_home(t, key);
	for (; t->e[i].key; i = (i + 1) & t->mask) {
		if (t->e[i].key == key) {
			*fresh = false;
			return &t->e[i];
		}
	}
	t->e[i] = (xent_t){.key = key};
	t->count++;
	*fresh = true;
	return &t->e[i];
}

static void xt_remove(xtab_t *t, xent_t *e)
{
	size_t i = (size_t)(e - t->e);
	for (size_t j = (i + 1) & t->mask; t->e[j].key; j = (j + 1) & t->mask) {
		size_t home = xt_home(t, t->e[j].key);
		if (((j - home) & t->mask) >= ((j - i) & t->mask)) {
			t->e[i] = t->e[j];
			i = j;
		}
	}
	t->e[i].key = 0;
	t->count--;
}

static void xt_clear(xtab_t *t)
{
	if (t->e)
		memset(t->e, 0, (t->mask + 1) * sizeof(xent_t));
	t->count = 0;
}

/* ---- entries: packing --------------------------------------------------------- */

/* A time (ns) in the slots' quanta. */
static inline uint64_t tq(uint64_t time)
{
	uint64_t q = time / HT_TIME_QUANTUM_NS;
	return q > S_TIME_MASK ? S_TIME_MASK : q;
}

static inline uint64_t size_max(void)
{
	return (1ull << (S_PAY_BITS - lv.site_bits)) - 1;
}

static inline uint64_t slot_time(const slot_t *s)
{
	return s->b & S_TIME_MASK;
}

static inline uint32_t slot_tid8(const slot_t *s)
{
	return (uint32_t)(s->b >> S_TID_SHIFT) & 0xff;
}

static void ent_load(const slot_t *s, ent_t *e)
{
	e->addr = slot_addr(s);
	e->time = slot_time(s);
	e->tid8 = slot_tid8(s);
	e->freed = s->a & S_FREED;
	e->custom = s->a & S_CUSTOM;
	e->pool = 0;
	e->seq = 0;
	if (s->a & S_EXT) {
		const xent_t *x = xt_find(&lv.ext, e->addr);
		e->size = x ? x->size : 0;
		e->site = x ? x->site : 0;
		e->pool = x ? x->pool : 0;
		e->seq = x ? x->seq : 0;
	} else {
		uint64_t p = s->a >> S_LO_SHIFT | (s->b >> S_HI_SHIFT) << S_LO_BITS;
		e->size = p & size_max();
		e->site = (uint32_t)(p >> (S_PAY_BITS - lv.site_bits));
	}
}

/* Drops s's ext fields, if any. */
static inline void ext_drop(slot_t *s)
{
	if (HT_UNLIKELY(s->a & S_EXT)) {
		xent_t *x = xt_find(&lv.ext, slot_addr(s));
		if (x)
			xt_remove(&lv.ext, x);
		s->a &= ~S_EXT;
	}
}

/* Packs e into s (whose address it is). Without memory for the side
 * table, a block keeps what fits, and the report is told. */
static void ent_store(slot_t *s, const ent_t *e)
{
	uint64_t a = e->addr | (e->freed ? S_FREED : 0) | (e->custom ? S_CUSTOM : 0);
	uint64_t b = e->time | (uint64_t)e->tid8 << S_TID_SHIFT;
	if (!e->freed) {
		uint64_t size = e->size, site = e->site;
		if (HT_UNLIKELY(size > size_max() || site >> lv.site_bits || e->pool)) {
			bool fresh;
			xent_t *x = xt_upsert(&lv.ext, e->addr, &fresh);
			if (x) {
				x->size = size;
				x->site = (uint32_t)site;
				x->pool = e->pool;
				x->seq = e->seq;
				s->a = a | S_EXT;
				s->b = b;
				return;
			}
			atomic_fetch_or(&ht_agent_flags, HT_AGENT_LIVE_TABLE_FULL);
			size = size > size_max() ? size_max() : size;
			site = site >> lv.site_bits ? 0 : site;
		}
		uint64_t p = size | site << (S_PAY_BITS - lv.site_bits);
		a |= p << S_LO_SHIFT;
		b |= (p >> S_LO_BITS) << S_HI_SHIFT;
	}
	ext_drop(s);
	s->a = a;
	s->b = b;
}

/* Removes s from the blocks' table, and its ext fields. */
static void slot_drop(slot_t *s)
{
	ext_drop(s);
	table_remove(&lv.blocks, s);
}

/* ---- markers --------------------------------------------------------------- */

static inline size_t live_count(void)
{
	return lv.blocks.count - lv.markers;
}

/* Forgets the oldest markers, at least half of them: the oldest are the
 * least likely to meet an allocation still on its way. One that would
 * have met it finds nothing: the block looks live (live_alloc raises a flag
 * for the report). Two passes over the table: the markers' times, by 64ths
 * of their range, then the removal up to the time that leaves half. */
static void markers_forget(void)
{
	live_table_t *t = &lv.blocks;
	uint64_t lo = UINT64_MAX, hi = 0;
	for (size_t i = 0; i <= t->mask; i++) {
		const slot_t *e = &t->slots[i];
		if (e->a & S_FREED) {
			lo = slot_time(e) < lo ? slot_time(e) : lo;
			hi = slot_time(e) > hi ? slot_time(e) : hi;
		}
	}
	if (lo > hi)
		return;
	uint64_t span = (hi - lo) / 64 + 1;
	size_t per[64] = {0};
	for (size_t i = 0; i <= t->mask; i++) {
		const slot_t *e = &t->slots[i];
		if (e->a & S_FREED)
			per[(slot_time(e) - lo) / span]++;
	}
	size_t n = 0, k = 0;
	while (k < 63 && (n += per[k]) < lv.markers / 2)
		k++;
	uint64_t until = lo + (k + 1) * span - 1;
	for (size_t i = 0; i <= t->mask; i++) {
		slot_t *e = &t->slots[i];
		while ((e->a & S_FREED) && slot_time(e) <= until) {
			lv.markers--;
			table_remove(t, e); /* moves a later entry into e */
		}
	}
	if (until > lv.forgotten_until)
		lv.forgotten_until = until;
}

/* The entry of addr in the blocks' table, or a fresh one; before the table
 * grows, markers beyond their share are forgotten instead. */
static slot_t *block_upsert(uintptr_t addr, bool *fresh)
{
	live_table_t *t = &lv.blocks;
	if (HT_UNLIKELY(t->slots && t->count >= t->full) &&
	    lv.markers > MARKERS_MIN && lv.markers > live_count())
		markers_forget();
	return table_upsert(t, addr, fresh);
}

/* Makes s the marker of a free at time q (quanta) on a thread of tid8. */
static inline void marker_set(slot_t *s, uint64_t q, uint32_t tid8)
{
	ext_drop(s); /* no pool's list names it any more */
	s->a = (s->a & S_ADDR_MASK) | S_FREED;
	s->b = q | (uint64_t)tid8 << S_TID_SHIFT;
	lv.markers++;
}

/* ---- pools' blocks ------------------------------------------------------------
 * A reset or destroy frees the pool's live blocks. Finding them by walking
 * the whole table would cost every live block at each reset (a server that
 * resets a request's arena among a large heap); instead each pool keeps a
 * list of its blocks, as nodes (address, number) of one shared array. A
 * node whose block went another way (freed on its own, or its address
 * reused: the table's entry there is another block, told by its number) is
 * dropped when met: at a reset, or when the list has grown to twice what
 * was valid at its last look. A pool's block is always ext: its pool and
 * number are in lv.ext. The pools' index is a side table (xent_t). */

typedef struct pool_node {
	uintptr_t addr;
	uint32_t seq;
	uint32_t next; /* index + 1; 0: the end */
} pool_node_t;

#define POOL_LOOK_MIN 16

/* The table's slot of the block n lists in pool, or NULL if gone. */
static slot_t *pool_node_block(uint64_t pool, const pool_node_t *n)
{
	slot_t *s = table_find(&lv.blocks, n->addr);
	if (!s || !(s->a & S_EXT))
		return NULL;
	const xent_t *x = xt_find(&lv.ext, n->addr);
	return x && x->pool == pool && x->seq == n->seq ? s : NULL;
}

/* Frees node i (index + 1); returns its next. */
static uint32_t pool_node_drop(uint32_t i)
{
	uint32_t next = lv.pool_nodes[i - 1].next;
	lv.pool_nodes[i - 1].next = lv.pool_nodes_free;
	lv.pool_nodes_free = i;
	return next;
}

/* A node's index + 1, or 0 when out of memory. */
static uint32_t pool_node_new(void)
{
	if (lv.pool_nodes_free) {
		uint32_t i = lv.pool_nodes_free;
		lv.pool_nodes_free = lv.pool_nodes[i - 1].next;
		return i;
	}
	if (lv.pool_nodes_used == lv.pool_nodes_cap) {
		uint32_t cap = lv.pool_nodes_cap ? lv.pool_nodes_cap * 2 : 4096;
		pool_node_t *a = cap > lv.pool_nodes_cap ? ht_mmap(cap * sizeof *a) : NULL;
		if (!a)
			return 0;
		if (lv.pool_nodes) {
			memcpy(a, lv.pool_nodes, lv.pool_nodes_used * sizeof *a);
			ht_munmap(lv.pool_nodes, lv.pool_nodes_cap * sizeof *a);
		}
		lv.pool_nodes = a;
		lv.pool_nodes_cap = cap;
	}
	return ++lv.pool_nodes_used;
}

/* The block at addr, number seq, just made a block of pool, joins the
 * pool's list. */
static void pool_note(uint64_t pool, uintptr_t addr, uint32_t seq)
{
	bool fresh;
	xent_t *p = xt_upsert(&lv.pools, pool, &fresh);
	uint32_t i = p ? pool_node_new() : 0;
	if (!i) {
		/* the reset will not free it: it will look leaked */
		atomic_fetch_or(&ht_agent_flags, HT_AGENT_LIVE_TABLE_FULL);
		if (p && fresh)
			xt_remove(&lv.pools, p);
		return;
	}
	if (fresh) {
		p->size = 0;
		p->seq = 0;
		p->pool = POOL_LOOK_MIN;
	}
	pool_node_t *n = &lv.pool_nodes[i - 1];
	n->addr = addr;
	n->seq = seq;
	n->next = (uint32_t)p->size;
	p->size = i;
	if (++p->seq < p->pool)
		return;
	/* drop the nodes of blocks gone */
	uint32_t head = i, *link = &head;
	while (*link) {
		if (pool_node_block(pool, &lv.pool_nodes[*link - 1])) {
			link = &lv.pool_nodes[*link - 1].next;
		} else {
			p->seq--;
			*link = pool_node_drop(*link);
		}
	}
	p->size = head;
	p->pool = 2 * (uint64_t)p->seq + POOL_LOOK_MIN;
}

/* ---- applying events ------------------------------------------------------- */

static void site_free(const ent_t *e)
{
	if (!ht_opt_summary)
		return;
	site_t *r = &lv.sites[e->site];
	site_touch(r);
	r->frees++;
	r->live_blocks--;
	r->live_bytes -= e->size;
}

/* The heap held bytes at time: a new peak if more than ever. */
static void note_peak(uint64_t bytes, uint64_t time)
{
	if (bytes > ht_live_stats.peak_bytes) {
		ht_live_stats.peak_bytes = bytes;
		lv.peak_time = time;
		lv.peak_epoch++; /* every row's live bytes are its figure at this peak */
	}
}

/* Whether an entry (time q0, thread tid80) is a later event than one at
 * q on thread tid: within one thread, equal times are in order. */
static inline bool entry_later(uint64_t q0, uint32_t tid80, uint64_t q, uint32_t tid)
{
	return q0 > q || (q0 == q && tid80 != (tid & 0xff));
}

static void live_alloc(uintptr_t addr, uint64_t size, uint64_t time, uint32_t tid,
		       uint64_t pool, bool custom, uint32_t stack_id)
{
	if (HT_UNLIKELY(!addr || addr > S_ADDR_MASK)) {
		/* no room in a slot's address: not kept */
		atomic_fetch_or(&ht_agent_flags, HT_AGENT_LIVE_TABLE_FULL);
		return;
	}
	uint64_t q = tq(time);
	bool fresh;
	slot_t *s = block_upsert(addr, &fresh);
	if (HT_UNLIKELY(!s)) {
		atomic_fetch_or(&ht_agent_flags, HT_AGENT_LIVE_TABLE_FULL);
		return;
	}
	ent_t e;
	if (!fresh) {
		if (entry_later(slot_time(s), slot_tid8(s), q, tid)) {
			/* stale: the entry is a later event at this address, so
			 * this block's free came before it, and was dropped or
			 * will be (older than the entry): the summary counts the
			 * block allocated and freed now */
			if (ht_opt_summary) {
				/* site_of first: it makes the rows (a marker can
				 * come before the first allocation) */
				uint32_t row = site_of(stack_id);
				site_t *r = &lv.sites[row];
				site_touch(r);
				if (!r->allocs || time < r->first_time)
					r->first_time = time;
				r->allocs++;
				r->bytes += size;
				r->frees++;
				if (size > r->largest)
					r->largest = size;
			}
			return;
		}
		if (s->a & S_FREED) {
			lv.markers--;
		} else {
			/* the entry's free is still on its way: it will be dropped */
			ent_load(s, &e);
			ht_live_stats.bytes -= e.size;
			site_free(&e);
		}
	} else if (HT_UNLIKELY(q <= lv.forgotten_until)) {
		/* the marker of its free may have been forgotten: the block may
		 * be counted live when it is not */
		atomic_fetch_or(&ht_agent_flags, HT_AGENT_FREES_FORGOTTEN);
	}
	e = (ent_t){.addr = addr, .size = size, .time = q, .tid8 = tid & 0xff, .pool = pool,
		    .custom = custom, .seq = ++lv.seq};
	lv.last_alloc = addr;
	note_heap_thread(tid);
	if (pool || custom)
		lv.inexact = true; /* pool resets: not replayed here */
	lv.n_allocs++;
	lv.n_bytes += size;
	ht_live_stats.bytes += size;
	ht_live_stats.blocks = live_count();
	if (ht_opt_summary) {
		e.site = site_of(stack_id);
		site_t *r = &lv.sites[e.site];
		site_touch(r);
		if (!r->allocs || time < r->first_time)
			r->first_time = time;
		r->allocs++;
		r->bytes += size;
		r->live_blocks++;
		r->live_bytes += size;
		if (r->live_bytes > r->max_live)
			r->max_live = r->live_bytes;
		if (size > r->largest)
			r->largest = size;
	}
	ent_store(s, &e);
	if (pool)
		pool_note(pool, addr, e.seq);
	note_peak(ht_live_stats.bytes, time);
}

static void live_free(uintptr_t addr, uint64_t time, uint32_t tid)
{
	note_heap_thread(tid);
	if (HT_UNLIKELY(!addr || addr > S_ADDR_MASK)) {
		lv.unmatched++;
		return;
	}
	uint64_t q = tq(time);
	bool fresh;
	slot_t *s = block_upsert(addr, &fresh);
	if (HT_UNLIKELY(!s)) {
		atomic_fetch_or(&ht_agent_flags, HT_AGENT_LIVE_TABLE_FULL);
		return;
	}
	if (fresh) {
		/* its allocation is on its way (it will be stale), or was
		 * never seen */
		marker_set(s, q, tid & 0xff);
		lv.unmatched++;
		return;
	}
	if (entry_later(slot_time(s), slot_tid8(s), q, tid))
		return; /* frees an earlier block at this address */
	if (s->a & S_FREED) {
		/* after another free: the block between is on its way */
		s->b = q | (uint64_t)(tid & 0xff) << S_TID_SHIFT;
		lv.unmatched++;
		return;
	}
	ent_t e;
	ent_load(s, &e);
	lv.n_frees++;
	/* freed before its thread allocated again (one thread: the digest's
	 * latest allocation is the thread's) */
	if (lv.last_alloc == addr)
		lv.n_temporary++;
	ht_live_stats.bytes -= e.size;
	site_free(&e);
	if (!lv.inexact && atomic_load_explicit(&ht_thread_states, memory_order_acquire) <= 1) {
		/* one thread in the process so far: its events come in order,
		 * no block of another can be on its way to this address, and a
		 * marker would only grow the table (a single-threaded
		 * program's digest ran 15% slower with one per free). One
		 * thread digested is not enough: another's events, earlier
		 * and at this address, may still be on their way (a free here
		 * may have ended that thread's block, not this one). A thread
		 * is counted before it stamps anything, and this block was
		 * shipped after its events, so a count of 1 holds for them. */
		slot_drop(s);
	} else {
		marker_set(s, q, tid & 0xff);
	}
	ht_live_stats.blocks = live_count();
}

/* An allocation freed by the very next event of its block (a temporary,
 * the commonest pair of a busy program): what live_alloc then live_free
 * would do, without their probes, when nothing is at addr but maybe an
 * older marker, and the block is the program's own (no pool, no summary
 * row). No marker is left (nor an older one moved on): an allocation still
 * on its way, older than this one, was freed before it by a free that
 * found this address empty or marked (it left or moved the marker), or
 * that is still on its way itself. False: take the slow way. */
static bool live_temporary(uintptr_t addr, uint64_t size, uint64_t time, uint32_t tid)
{
	const slot_t *e = table_find(&lv.blocks, addr);
	if (e && (!(e->a & S_FREED) || entry_later(slot_time(e), slot_tid8(e), tq(time), tid)))
		return false;
	note_heap_thread(tid);
	lv.seq++;
	lv.last_alloc = 0; /* the latest allocation is freed already */
	lv.n_allocs++;
	lv.n_bytes += size;
	lv.n_frees++;
	lv.n_temporary++;
	note_peak(ht_live_stats.bytes + size, time);
	return true;
}

/* A pool reset or destroyed at time: every block of it allocated before
 * is freed. Costs the pool's list, not the table. */
static void live_pool_clear(uint64_t pool, uint64_t time)
{
	xent_t *p = lv.pools.count ? xt_find(&lv.pools, pool) : NULL;
	if (!p)
		return;
	uint64_t q = tq(time);
	uint32_t head = (uint32_t)p->size, *link = &head;
	while (*link) {
		pool_node_t *n = &lv.pool_nodes[*link - 1];
		slot_t *s = pool_node_block(pool, n);
		if (s && slot_time(s) > q) {
			link = &n->next; /* allocated after the reset (another thread's) */
			continue;
		}
		if (s) {
			ent_t e;
			ent_load(s, &e);
			ht_live_stats.bytes -= e.size;
			ht_live_stats.pool_frees++;
			site_free(&e);
			slot_drop(s);
		}
		p->seq--;
		*link = pool_node_drop(*link);
	}
	ht_live_stats.blocks = live_count();
	p->size = head;
	if (!head)
		xt_remove(&lv.pools, p); /* no block left: forget the pool */
}

/* ---- digest: reading a block of events ------------------------------------ */

typedef struct {
	const uint8_t *p, *end;
	bool bad;
} cursor_t;

static inline __attribute__((always_inline)) uint64_t get_u(cursor_t *c)
{
	if (HT_LIKELY(c->p < c->end && *c->p < 0x80))
		return *c->p++; /* one byte: most fields */
	if (HT_LIKELY(c->end - c->p >= HT_VARINT_MAX)) {
		/* room for the longest: no bound check per byte (addresses'
		 * deltas and ns times take 3-5 bytes) */
		uint64_t v = *c->p++ & 0x7f;
		for (unsigned s = 7; s < 63; s += 7) {
			uint64_t b = *c->p++;
			v |= (b & 0x7f) << s;
			if (b < 0x80)
				return v;
		}
		uint64_t b = *c->p++; /* the 10th byte: bit 63 only */
		if (b > 1) {
			c->bad = true;
			c->p = c->end;
			return 0;
		}
		return v | b << 63;
	}
	uint64_t v = 0;
	size_t n = ht_varint_get(c->p, (size_t)(c->end - c->p), &v);
	if (!n) {
		c->bad = true;
		c->p = c->end;
		return 0;
	}
	c->p += n;
	return v;
}

static inline int64_t get_s(cursor_t *c)
{
	return ht_unzigzag(get_u(c));
}

static void skip(cursor_t *c, uint64_t n)
{
	if (n > (uint64_t)(c->end - c->p)) {
		c->bad = true;
		c->p = c->end;
	} else {
		c->p += n;
	}
}

/* A plain allocation held back one event by the digest: freed by the
 * next event of its block, it goes through live_temporary. */
typedef struct {
	bool on;
	uintptr_t addr;
	uint64_t size, time, sid;
} held_alloc_t;

/* The held allocation, if any, digested the usual way. */
static void held_release(held_alloc_t *h, uint32_t tid)
{
	if (h->on) {
		h->on = false;
		live_alloc(h->addr, h->size, h->time, tid, 0, false, (uint32_t)h->sid);
	}
}

void ht_live_digest(const ht_block_t *b)
{
	if (HT_UNLIKELY(lv.taken))
		return; /* the check at exit has run: the process is ending */
	cursor_t c = {b->data, b->data + b->len, false};
	uint64_t time = b->base_time;
	uintptr_t addr = 0;
	held_alloc_t held = {false, 0, 0, 0, 0};
	while (c.p < c.end && !c.bad) {
		uint8_t op = *c.p++;
		unsigned ev = op & 0x0f;
		uint64_t size, lead, pool, sid;
		int64_t d;
		if (ev != HT_EV_FREE)
			held_release(&held, b->tid);
		switch (ev) {
		case HT_EV_ALLOC:
		case HT_EV_PALLOC:
			time += get_u(&c);
			addr += (uintptr_t)get_s(&c);
			size = get_u(&c);
			sid = get_u(&c);
			pool = ev == HT_EV_PALLOC ? get_u(&c) : 0;
			if (c.bad)
				break;
			if (ev == HT_EV_ALLOC && (op >> 4) != HT_FN_CUSTOM && !ht_opt_summary) {
				held.on = true;
				held.addr = addr;
				held.size = size;
				held.time = time;
				held.sid = sid;
				break;
			}
			live_alloc(addr, size, time, b->tid, pool, (op >> 4) == HT_FN_CUSTOM, (uint32_t)sid);
			break;
		case HT_EV_FREE:
			time += get_u(&c);
			addr += (uintptr_t)get_s(&c);
			if (held.on && !c.bad && addr == held.addr &&
			    live_temporary(held.addr, held.size, held.time, b->tid)) {
				held.on = false;
				break;
			}
			held_release(&held, b->tid);
			if (!c.bad)
				live_free(addr, time, b->tid);
			break;
		case HT_EV_REALLOC: {
			uint64_t dt = get_u(&c);
			addr += (uintptr_t)get_s(&c);
			size = get_u(&c);
			sid = get_u(&c);
			d = get_s(&c);
			lead = get_u(&c);
			uint64_t free_time = lead <= dt ? time + dt - lead : time;
			time += dt;
			if (!c.bad) {
				live_free(addr + (uintptr_t)d, free_time, b->tid);
				live_alloc(addr, size, time, b->tid, 0, (op >> 4) == HT_FN_CUSTOM,
					   (uint32_t)sid);
			}
			break;
		}
		case HT_EV_STACK: {
			const uint8_t *start = c.p - 1;
			get_u(&c); /* id */
			uint64_t depth = get_u(&c);
			for (uint64_t i = 0; i < depth && !c.bad; i++)
				get_u(&c);
			if (ht_opt_summary && !c.bad)
				stack_def_keep(start, (size_t)(c.p - start));
			break;
		}
		case HT_EV_NAME:
			get_u(&c); /* id */
			skip(&c, get_u(&c));
			break;
		case HT_EV_TAG:
			time += get_u(&c);
			addr += (uintptr_t)get_s(&c); /* the heap events' address chain */
			get_u(&c);
			break;
		case HT_EV_POOL: {
			time += get_u(&c);
			pool = get_u(&c);
			uint64_t pop = get_u(&c);
			get_u(&c); /* name */
			if (!c.bad && (pop == HT_POOL_RESET || pop == HT_POOL_DESTROY))
				live_pool_clear(pool, time);
			break;
		}
		case HT_EV_RSS:
		case HT_EV_ENABLE:
		case HT_EV_SNAPSHOT:
			time += get_u(&c);
			get_u(&c);
			break;
		case HT_EV_PHASE:
			time += get_u(&c);
			get_u(&c);
			get_u(&c);
			break;
		case HT_EV_ENTER:
			time += get_u(&c);
			get_u(&c);
			get_u(&c);
			break;
		case HT_EV_EXIT:
			time += get_u(&c);
			break;
		case HT_EV_EXT: {
			time += get_u(&c);
			uint64_t n = get_u(&c);
			unsigned kind = op >> 4;
			if (ht_opt_summary && !c.bad && n <= (uint64_t)(c.end - c.p) &&
			    (kind == HT_EXT_MMAP || kind == HT_EXT_MUNMAP || kind == HT_EXT_MREMAP ||
			     kind == HT_EXT_MADVISE_FREE))
				map_keep(op, time, c.p, n);
			skip(&c, n);
			break;
		}
		default:
			c.bad = true; /* our own writer never does this */
			break;
		}
	}
	held_release(&held, b->tid);
}

static inline ht_scan_block_t scan_block(const slot_t *s)
{
	ent_t e;
	ent_load(s, &e);
	uint64_t size = e.size > HT_SCAN_SIZE_MASK ? HT_SCAN_SIZE_MASK : e.size;
	return (ht_scan_block_t){e.addr, size | (e.custom ? HT_SCAN_CUSTOM : 0) |
					     (uint64_t)e.site << HT_SCAN_SITE_SHIFT};
}

size_t ht_live_copy(ht_scan_block_t *out, size_t cap)
{
	size_t k = 0;
	for (size_t i = 0; lv.blocks.slots && i <= lv.blocks.mask && k < cap; i++) {
		const slot_t *s = &lv.blocks.slots[i];
		if (s->a && !(s->a & S_FREED))
			out[k++] = scan_block(s);
	}
	return k;
}

ht_scan_block_t *ht_live_take(size_t *n, size_t *bytes)
{
	slot_t *slots = lv.blocks.slots;
	if (!slots)
		return NULL;
	/* each block moves down to its place or stays: a slot is read
	 * before any block is written over it */
	ht_scan_block_t *out = (ht_scan_block_t *)(void *)slots;
	size_t k = 0;
	for (size_t i = 0; i <= lv.blocks.mask; i++) {
		slot_t s = slots[i];
		if (s.a && !(s.a & S_FREED))
			out[k++] = scan_block(&s);
	}
	*n = k;
	*bytes = (lv.blocks.mask + 1) * sizeof *slots;
	lv.blocks.slots = NULL;
	lv.taken = true;
	return out;
}

size_t ht_live_count(void)
{
	return live_count();
}

bool ht_live_summary(ht_live_summary_t *out)
{
	/* leak_check=0: no table; summary mode and sampling: run needs the
	 * trace's rows, or estimates */
	if (!ht_opt_leak_check || ht_opt_summary || ht_opt_sample_rate || lv.inexact ||
	    lv.unmatched ||
	    (atomic_load(&ht_agent_flags) & (HT_AGENT_OUT_OF_MEMORY | HT_AGENT_LIVE_TABLE_FULL)))
		return false;
	*out = (ht_live_summary_t){
		.allocs = lv.n_allocs,
		.frees = lv.n_frees,
		.bytes = lv.n_bytes,
		.peak_bytes = ht_live_stats.peak_bytes,
		.live_bytes = ht_live_stats.bytes,
		.live_blocks = live_count(),
		.temporary = lv.n_temporary,
	};
	return true;
}

static void table_clear(live_table_t *tb)
{
	if (tb->slots)
		memset(tb->slots, 0, (tb->mask + 1) * sizeof *tb->slots);
	tb->count = 0;
}

void ht_live_fork_child(void)
{
	lv.inexact = true;
	ht_live_stats.pool_frees = 0; /* the child counts its own frees */
	if (!ht_opt_summary || !lv.sites)
		return;
	/* The child's summary holds its own allocations, as its trace would:
	 * the rows the parent's digested events made go, and so do the
	 * parent's blocks (their frees in the child match nothing, like a
	 * trace's frees of blocks allocated before the fork). Its stacks are
	 * defined again (ht_stacks_fork_child). */
	memset(lv.sites, 0, lv.sites_cap * sizeof *lv.sites);
	memset(lv.site_index, 0, (lv.site_index_mask + 1) * sizeof *lv.site_index);
	memset(lv.site_keys, 0, (lv.site_index_mask + 1) * sizeof *lv.site_keys);
	lv.nsites = 1;
	lv.peak_epoch = 0;
	lv.peak_time = 0;
	lv.stack_defs_len = lv.stack_defs_written = 0;
	lv.nmaps = lv.maps_written = 0;
	table_clear(&lv.blocks);
	lv.markers = 0;
	lv.forgotten_until = 0;
	xt_clear(&lv.pools);
	xt_clear(&lv.ext);
	lv.last_alloc = 0;
	lv.pool_nodes_used = lv.pool_nodes_free = 0;
	memset(&ht_live_stats, 0, sizeof ht_live_stats);
}

/* ---- summary mode: the file --------------------------------------------------- */

void ht_summary_leak(uint32_t site, unsigned kind, uint64_t size)
{
	if (lv.sites && site < lv.nsites && kind >= HT_LEAK_DEFINITE && kind <= HT_LEAK_REACHABLE) {
		lv.sites[site].kind_blocks[kind - 1]++;
		lv.sites[site].kind_bytes[kind - 1] += size;
	}
}

/* Sorts the maps kept since the last write by time (blocks of threads
 * come out of time order; one thread's are in order): insertion, as they
 * come nearly sorted. */
static void maps_sort(kept_map_t *a, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		if (a[i - 1].time <= a[i].time)
			continue;
		kept_map_t v = a[i];
		size_t j = i;
		for (; j > 0 && a[j - 1].time > v.time; j--)
			a[j] = a[j - 1];
		a[j] = v;
	}
}

/* Summary mode: one THREAD_BLOCK of tid 0 with the program's map events
 * kept since the last write and the highest RSS sample (agent/rss.c), in
 * time order: the report's MAPPED MEMORY, mapped and resident bytes come
 * from them as from a trace's events. */
static void summary_write_samples(uint8_t *rec, size_t cap)
{
	uint64_t rss, rss_time;
	ht_rss_peak(&rss, &rss_time);
	kept_map_t *a = lv.maps + lv.maps_written;
	size_t n = lv.nmaps - lv.maps_written, i = 0;
	maps_sort(a, n);
	bool rss_done = !rss;
	if (!n && rss_done)
		return;
	do {
		size_t k = 0;
		uint64_t last = 0;
		k += ht_varint_put(rec + k, 0); /* tid */
		k += ht_varint_put(rec + k, 0); /* base time */
		while ((i < n || !rss_done) && k + 4 * HT_VARINT_MAX + sizeof a->pay < cap) {
			if (!rss_done && (i == n || rss_time < a[i].time)) {
				uint64_t t = rss_time < last ? last : rss_time;
				rec[k++] = HT_EV_RSS;
				k += ht_varint_put(rec + k, t - last);
				k += ht_varint_put(rec + k, rss);
				last = t;
				rss_done = true;
				continue;
			}
			uint64_t t = a[i].time < last ? last : a[i].time;
			rec[k++] = a[i].op;
			k += ht_varint_put(rec + k, t - last);
			k += ht_varint_put(rec + k, a[i].len);
			memcpy(rec + k, a[i].pay, a[i].len);
			k += a[i].len;
			last = t;
			i++;
		}
		ht_writer_record(HT_REC_THREAD_BLOCK, rec, k);
	} while (i < n);
	lv.maps_written = lv.nmaps;
}

void ht_summary_write(void)
{
	if (lv.stack_defs_len > lv.stack_defs_written) {
		/* one THREAD_BLOCK of STACK events: tid 0, base time 0 */
		uint8_t head[2] = {0, 0};
		ht_writer_record2(HT_REC_THREAD_BLOCK, head, 2, lv.stack_defs + lv.stack_defs_written,
				  lv.stack_defs_len - lv.stack_defs_written);
		lv.stack_defs_written = lv.stack_defs_len;
	}
	if (!summary_init())
		return;
	size_t cap = 1 << 20;
	uint8_t *rec = ht_mmap(cap);
	if (!rec)
		return;
	summary_write_samples(rec, cap);
	uint32_t i = 0;
	do {
		size_t n = ht_varint_put(rec, ht_now());
		n += ht_varint_put(rec + n, ht_live_stats.peak_bytes);
		n += ht_varint_put(rec + n, lv.peak_time);
		n += ht_varint_put(rec + n, ht_live_stats.blocks);
		n += ht_varint_put(rec + n, ht_live_stats.bytes);
		for (; i < lv.nsites && n + 30 * HT_VARINT_MAX < cap; i++) {
			site_t *r = &lv.sites[i];
			if (i == 0 && !r->allocs)
				continue; /* no overflow */
			site_touch(r);
			uint64_t f[] = {i == 0 ? HT_SITE_OVERFLOW : 0, r->stack_id, r->allocs, r->bytes,
					r->frees, r->live_blocks, r->live_bytes, r->at_peak, r->max_live,
					r->largest};
			for (size_t k = 0; k < sizeof f / sizeof f[0]; k++)
				n += ht_varint_put(rec + n, f[k]);
			for (int k = 0; k < 4; k++) {
				n += ht_varint_put(rec + n, r->kind_blocks[k]);
				n += ht_varint_put(rec + n, r->kind_bytes[k]);
			}
		}
		ht_writer_record(HT_REC_SITES, rec, n);
	} while (i < lv.nsites);
	/* the rows' first times, by stack id (the overflow row has none) */
	i = 1;
	while (i < lv.nsites) {
		size_t n = 0;
		for (; i < lv.nsites && n + 2 * HT_VARINT_MAX < cap; i++) {
			if (!lv.sites[i].allocs)
				continue;
			n += ht_varint_put(rec + n, lv.sites[i].stack_id);
			n += ht_varint_put(rec + n, lv.sites[i].first_time);
		}
		if (n)
			ht_writer_record(HT_REC_SITE_TIMES, rec, n);
	}
	ht_munmap(rec, cap);
}

/* ---- queries from the program (heaptrail.h) ------------------------------------ */

bool ht_live_sync(ht_thread_t *t)
{
	if (t && ht_event_begin(t)) {
		ht_thread_flush(t);
		atomic_store_explicit(&t->in_event, 0, memory_order_relaxed);
	}
	if (!ht_lock_timed(&ht_writer_lock, 10000))
		return false;
	ht_blocks_drain_locked();
	return true;
}

/* Mirrors struct heaptrail_stats in include/heaptrail.h. */
struct ht_api_stats {
	uint64_t size; /* sizeof the caller's struct: fields past it are not written */
	uint64_t allocations, frees, bytes_allocated;
	uint64_t live_bytes, live_blocks, peak_live_bytes;
	uint64_t mapped_bytes, resident_bytes;
};

/* Counts are exact (per-thread counters; frees made by pool resets and
 * destroys come from the table, so they need it). Live and peak figures come from
 * the writer's table: the caller's own events are shipped and every queued
 * block digested first, so they are exact for a single-threaded program;
 * other threads' last unshipped events (at most ~0.5 s) are not in them.
 * Returns 0, or -1 when the table is not kept (leak_check=0 and no
 * summary): live and peak are then left at 0. */
HT_EXPORT int heaptrail_agent_stats(struct ht_api_stats *out);
int heaptrail_agent_stats(struct ht_api_stats *out)
{
	if (!out || out->size < sizeof(uint64_t) * 4 || ht_guard)
		return -1;
	if (atomic_load(&ht_state) == HT_STATE_UNINIT)
		ht_init();
	struct ht_api_stats s = {0};
	s.size = out->size < sizeof s ? out->size : sizeof s;
	ht_thread_totals(&s.allocations, &s.frees, &s.bytes_allocated);
	s.mapped_bytes = ht_maps_mapped();
	s.resident_bytes = ht_read_rss();
	int r = -1;
	if ((ht_opt_leak_check || ht_opt_summary) &&
	    atomic_load(&ht_state) == HT_STATE_RECORDING) {
		int saved = errno;
		ht_guard = 1;
		if (ht_live_sync(ht_thread_peek())) {
			ht_lock(&ht_live_lock);
			s.live_bytes = ht_live_stats.bytes;
			s.live_blocks = ht_live_stats.blocks;
			s.peak_live_bytes = ht_live_stats.peak_bytes;
			/* a pool reset frees its blocks without a call to count:
			 * the table saw them go (as the report counts them) */
			s.frees += ht_live_stats.pool_frees;
			ht_unlock(&ht_live_lock);
			ht_unlock(&ht_writer_lock);
			r = 0;
		}
		ht_guard = 0;
		errno = saved;
	}
	memcpy(out, &s, s.size);
	return r;
}
