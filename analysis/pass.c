/* pass.c - one merge of a trace through every registered consumer
 * (pass.h).
 *
 * Live blocks sit in one table (below), shared by every consumer that
 * follows the heap.
 */
#include "analysis/pass.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "trace_format.h"
#include "analysis/progress.h"
#include "analysis/util.h"

unsigned long ht_pass_merges;

#define SITE_CACHE 256

/* ---- live blocks ----------------------------------------------------------------
 * A block is a record of 24 bytes in a dense array, found by its id; a
 * freed record joins a chain of free ids that the next allocation takes,
 * so the array holds as many records as blocks were ever live at once.
 * An index of 4-byte slots (linear probing, backward-shift deletion, load
 * at most 3/4, growing by half; any size, the home slot by multiply-shift)
 * maps addresses to ids: a slot holds id + 1 and, in the bits the largest
 * id leaves free, some bits of the address's hash, so that a probe rarely
 * reads a record that is not the one. The index is built again from the
 * records when it grows (the old one freed first).
 *
 * A record's three words: w0 the address / 16 (43 bits), the thread (16),
 * the allocating function (4) and, in bit 63, "wide"; w1 the time (48) and
 * the size's low 16 bits; w2 the seq (32), the site (24) and the size's
 * high 8 bits. A block that does not fit (an address not 16-aligned or
 * past 2^47, a time past 2^48, a size past 2^24 - large blocks are few -,
 * a seq past 2^32, a thread past 65,535 or a site past 2^24 - 3) keeps its
 * whole ht_live_t in a side array, w2's low half its index there. */

#define REC_WIDE 0xFFFFFFu /* site field: the block is in wide[seq] */
#define REC_HOLE 0xFFFFFEu /* site field: no block; seq is the next free id */
#define ADDR_BITS UINT64_C(0x7FFFFFFFFFF) /* w0: the address / 16 */
#define WIDE_BIT (UINT64_C(1) << 63)
#define NO_ID UINT32_MAX
#define INDEX_DENSE ((size_t)1 << 21) /* slots: 8 MiB */

typedef struct rec {
	uint64_t w[3];
} rec_t;

_Static_assert(sizeof(rec_t) == 24, "a live block's record is 24 bytes");

typedef struct live_table {
	rec_t *rec;
	uint32_t *tag;		 /* beside rec, when a consumer keeps a word per block */
	size_t nrec, rcap;	 /* ids below nrec are blocks or free */
	uint32_t free;		 /* the first free id, or NO_ID */
	uint32_t *idx;		 /* 0: empty; else (id + 1) | hash bits above idmask */
	size_t icap, len, limit; /* limit: the most blocks before the index grows */
	uint32_t idmask;	 /* all ones over the bits an id + 1 <= icap needs */
	ht_live_t *wide;	 /* blocks that do not fit a record */
	size_t nwide, cap_wide;
	uint32_t wide_free; /* a chain through .id, or NO_ID */
	bool tags;
} live_table_t;

static inline uint32_t rec_site(const rec_t *r)
{
	return (uint32_t)(r->w[2] >> 32) & 0xFFFFFF;
}

/* seq; for a wide record its index in wide, for a free one the next */
static inline uint32_t rec_link(const rec_t *r)
{
	return (uint32_t)r->w[2];
}

static inline void rec_set_link(rec_t *r, uint32_t site, uint32_t link)
{
	r->w[2] = (uint64_t)site << 32 | link;
}

static inline uint64_t rec_addr(const live_table_t *lt, const rec_t *r)
{
	if (__builtin_expect((int64_t)r->w[0] < 0, 0))
		return lt->wide[rec_link(r)].addr;
	return (r->w[0] & ADDR_BITS) << 4;
}

static inline size_t home_of(const live_table_t *lt, uint64_t h)
{
	return (size_t)(((h >> 32) * (uint64_t)lt->icap) >> 32);
}

/* A fresh index of cap slots holding every record. */
static int index_build(live_table_t *lt, size_t cap)
{
	free(lt->idx);
	lt->icap = cap;
	/* load at most 1/2 while the index is small (shorter probe runs, for
	 * the usual few thousand live blocks), 3/4 once its memory counts */
	lt->limit = cap < INDEX_DENSE ? cap / 2 : cap / 4 * 3 + cap % 4 * 3 / 4;
	unsigned bits = 64 - (unsigned)__builtin_clzll((unsigned long long)cap);
	lt->idmask = bits >= 32 ? UINT32_MAX : (UINT32_C(1) << bits) - 1;
	if (!(lt->idx = calloc(cap, sizeof(*lt->idx))))
		return -ENOMEM;
	for (size_t id = 0; id < lt->nrec; id++) {
		const rec_t *r = &lt->rec[id];
		if (rec_site(r) == REC_HOLE)
			continue;
		uint64_t h = ht_util_hash64(rec_addr(lt, r));
		size_t i = home_of(lt, h);
		while (lt->idx[i])
			if (++i == cap)
				i = 0;
		lt->idx[i] = (uint32_t)(id + 1) | ((uint32_t)h & ~lt->idmask);
	}
	return 0;
}

static int live_init(live_table_t *lt, bool tags)
{
	memset(lt, 0, sizeof(*lt));
	lt->free = lt->wide_free = NO_ID;
	lt->tags = tags;
	return index_build(lt, 1024);
}

static void live_free(live_table_t *lt)
{
	free(lt->rec);
	free(lt->tag);
	free(lt->idx);
	free(lt->wide);
}

/* Whether addr is in the table: *pos is its slot, else the empty slot
 * that ends its probe. */
static inline bool live_probe(const live_table_t *lt, uint64_t addr, size_t *pos, uint32_t *fpp)
{
	uint64_t h = ht_util_hash64(addr);
	uint32_t fp = (uint32_t)h & ~lt->idmask;
	*fpp = fp;
	size_t i = home_of(lt, h);
	for (;;) {
		uint32_t s = lt->idx[i];
		if (!s) {
			*pos = i;
			return false;
		}
		if ((s & ~lt->idmask) == fp && rec_addr(lt, &lt->rec[(s & lt->idmask) - 1]) == addr) {
			*pos = i;
			return true;
		}
		if (++i == lt->icap)
			i = 0;
	}
}

static inline uint32_t slot_id(const live_table_t *lt, size_t pos)
{
	return (lt->idx[pos] & lt->idmask) - 1;
}

/* The block of record id, unpacked (w by the trace's rate). */
static inline void rec_get(const live_table_t *lt, double rate, uint32_t id, ht_live_t *out)
{
	const rec_t *r = &lt->rec[id];
	uint64_t w0 = r->w[0], w1 = r->w[1], w2 = r->w[2];
	if (__builtin_expect((int64_t)w0 < 0, 0)) {
		*out = lt->wide[(uint32_t)w2];
	} else {
		out->addr = (w0 & ADDR_BITS) << 4;
		out->thread = (uint32_t)(w0 >> 43) & 0xFFFF;
		out->fn = (uint8_t)(w0 >> 59);
		out->time = w1 & ((UINT64_C(1) << 48) - 1);
		out->size = w1 >> 48 | (w2 >> 56) << 16;
		out->seq = (uint32_t)w2;
		out->site = (uint32_t)(w2 >> 32) & 0xFFFFFF;
	}
	out->id = id;
	out->tag = lt->tag ? lt->tag[id] : 0;
	out->w = 1;
	if (rate) {
		double var;
		ht_pass_weigh(rate, out->size, &out->w, &var);
	}
}

/* Record id stops pointing into the side array. */
static inline void wide_release(live_table_t *lt, uint32_t id)
{
	rec_t *r = &lt->rec[id];
	if (__builtin_expect((int64_t)r->w[0] < 0, 0)) {
		lt->wide[rec_link(r)].id = lt->wide_free;
		lt->wide_free = rec_link(r);
		r->w[0] = 0;
		rec_set_link(r, REC_HOLE, NO_ID);
	}
}

/* Store v as record id (not pointing into the side array now). */
static inline int rec_put(live_table_t *lt, uint32_t id, const ht_live_t *v)
{
	rec_t *r = &lt->rec[id];
	if (__builtin_expect(!((v->addr & 15) | v->addr >> 47 | v->time >> 48 | v->size >> 24 |
			       v->seq >> 32 | v->thread >> 16 | (unsigned)v->fn >> 4) &&
				     v->site < REC_HOLE,
			     1)) {
		r->w[0] = v->addr >> 4 | (uint64_t)v->thread << 43 | (uint64_t)v->fn << 59;
		r->w[1] = v->time | v->size << 48;
		r->w[2] = v->seq | (uint64_t)v->site << 32 | (v->size >> 16) << 56;
		return 0;
	}
	uint32_t k = lt->wide_free;
	if (k != NO_ID) {
		lt->wide_free = lt->wide[k].id;
	} else {
		if (lt->nwide >= NO_ID ||
		    ht_util_grow((void **)&lt->wide, &lt->cap_wide, lt->nwide + 1, sizeof(*lt->wide)))
			return -ENOMEM;
		k = (uint32_t)lt->nwide++;
	}
	lt->wide[k] = *v;
	/* the record only says where the block is: rec_addr and rec_get read
	 * it from wide */
	r->w[0] = WIDE_BIT;
	r->w[1] = 0;
	rec_set_link(r, REC_WIDE, k);
	return 0;
}

/* A record for a new block: a free one, or one more. NO_ID on ENOMEM. */
static inline uint32_t rec_take(live_table_t *lt)
{
	uint32_t id = lt->free;
	if (id != NO_ID) {
		lt->free = rec_link(&lt->rec[id]);
		return id;
	}
	if (lt->nrec == lt->rcap) {
		if (lt->rcap >= NO_ID - 1)
			return NO_ID;
		size_t n = lt->rcap + lt->rcap / 2 + 1024;
		if (n > NO_ID - 1)
			n = NO_ID - 1;
		rec_t *r = realloc(lt->rec, n * sizeof(*r));
		if (!r)
			return NO_ID;
		lt->rec = r;
		if (lt->tags) {
			uint32_t *t = realloc(lt->tag, n * sizeof(*t));
			if (!t)
				return NO_ID;
			lt->tag = t;
		}
		lt->rcap = n;
	}
	return (uint32_t)lt->nrec++;
}

/* Remove the block in slot pos, shifting later members of its probe run
 * back. */
static void live_remove(live_table_t *lt, size_t pos)
{
	uint32_t id = slot_id(lt, pos);
	wide_release(lt, id);
	rec_set_link(&lt->rec[id], REC_HOLE, lt->free);
	lt->free = id;
	size_t cap = lt->icap, i = pos, j = pos;
	for (;;) {
		if (++j == cap)
			j = 0;
		uint32_t s = lt->idx[j];
		if (!s)
			break;
		size_t h = home_of(lt, ht_util_hash64(rec_addr(lt, &lt->rec[(s & lt->idmask) - 1])));
		/* j's entry may move to i if its home is not in (i, j] cyclically */
		size_t dh = j >= h ? j - h : j + cap - h, di = j >= i ? j - i : j + cap - i;
		if (dh >= di) {
			lt->idx[i] = s;
			i = j;
		}
	}
	lt->idx[i] = 0;
	lt->len--;
}

/* Room in the index for one more block. */
static inline int live_room(live_table_t *lt)
{
	if (__builtin_expect(lt->len < lt->limit, 1))
		return 0;
	if (lt->icap >= UINT32_MAX)
		return -ENOMEM;
	size_t n = lt->icap + lt->icap / 2;
	return index_build(lt, n > UINT32_MAX ? UINT32_MAX : n);
}

/* ---- sampling weights ---------------------------------------------------------------- */

void ht_pass_weigh(double rate, uint64_t size, double *w, double *var)
{
	double p = rate > 0 ? -expm1(-(double)size / rate) : 1.0;
	if (!(p > 0)) { /* size 0: the agent never samples one; count it once */
		*w = 1;
		*var = 0;
		return;
	}
	*w = 1 / p;
	*var = (1 - p) / (p * p);
}

/* ---- the pass -------------------------------------------------------------------------- */

struct ht_pass {
	const ht_trace_t *t;
	double rate; /* the trace's sample rate; 0 = exact */
	ht_pass_consumer_t *c;
	size_t nc;
	/* the consumers of heap events, each with the step it gets (&step or NULL) */
	struct heap_call {
		int (*on_event)(void *ctx, const ht_event_t *ev, const ht_heap_step_t *st);
		void *ctx;
		const ht_heap_step_t *st;
	} *hc;
	size_t nhc;
	ht_heap_step_t step; /* the current heap event's */
	unsigned flags;	   /* union of the consumers' */
	bool heap, live;   /* some consumer wants heap events, the table */
	bool tags;	   /* ... and a word per block */
	bool ran;
	live_table_t table;
	ht_live_t gone, block; /* the current event's (ht_heap_step_t) */
	uint64_t *thread_seq; /* allocations made so far, per thread */
	size_t nthread_seq;
	ht_merge_t *follow;   /* ht_pass_follow's merge */
	ht_map_t site_by_stack;
	/* the latest sites by stack id, ahead of site_by_stack: site + 1, 0 empty */
	struct {
		uint64_t stack;
		uint32_t site1;
	} site_cache[SITE_CACHE];
	uint64_t *site_stack; /* site -> stack id */
	size_t nsites, cap_sites;
};

int ht_pass_new(const ht_trace_t *t, ht_pass_t **out)
{
	*out = NULL;
	ht_pass_t *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->t = t;
	p->rate = (double)t->sample_rate;
	*out = p;
	return 0;
}

int ht_pass_add(ht_pass_t *p, const ht_pass_consumer_t *c)
{
	size_t cap = p->nc;
	if (ht_util_grow((void **)&p->c, &cap, p->nc + 1, sizeof(*p->c))) {
		if (c->fini)
			c->fini(c->ctx);
		return -ENOMEM;
	}
	p->c[p->nc] = *c;
	if (c->live)
		p->c[p->nc].heap = true;
	p->flags |= c->flags;
	p->heap |= p->c[p->nc].heap;
	p->live |= c->live;
	p->tags |= c->tags;
	p->nc++;
	return 0;
}

void ht_pass_free(ht_pass_t *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nc; i++)
		if (p->c[i].fini)
			p->c[i].fini(p->c[i].ctx);
	free(p->c);
	free(p->hc);
	live_free(&p->table);
	free(p->thread_seq);
	ht_merge_free(p->follow);
	free(p->site_stack);
	ht_map_free(&p->site_by_stack);
	free(p);
}

bool ht_pass_find(const ht_pass_t *p, uint64_t addr, ht_live_t *out)
{
	const live_table_t *lt = &p->table;
	size_t pos;
	uint32_t fp;
	if (!lt->idx || !live_probe(lt, addr, &pos, &fp))
		return false;
	if (out)
		rec_get(lt, p->rate, slot_id(lt, pos), out);
	return true;
}

size_t ht_pass_live_ids(const ht_pass_t *p)
{
	return p->table.nrec;
}

bool ht_pass_live_get(const ht_pass_t *p, size_t id, ht_live_t *out)
{
	const live_table_t *lt = &p->table;
	if (id >= lt->nrec || rec_site(&lt->rec[id]) == REC_HOLE)
		return false;
	rec_get(lt, p->rate, (uint32_t)id, out);
	return true;
}

uint32_t *ht_pass_tag(ht_pass_t *p, uint32_t id)
{
	return p->table.tag ? &p->table.tag[id] : NULL;
}

size_t ht_pass_nlive(const ht_pass_t *p)
{
	return p->table.len;
}

uint64_t ht_pass_thread_seq(const ht_pass_t *p, uint32_t thread)
{
	return p->thread_seq[thread];
}

const uint64_t *ht_pass_thread_seqs(const ht_pass_t *p)
{
	return p->thread_seq;
}

uint64_t ht_pass_site_stack(const ht_pass_t *p, uint32_t site)
{
	return p->site_stack[site];
}

/* The site of stack_id, made on first sight (*fresh). */
static int site_of(ht_pass_t *p, uint64_t stack_id, uint32_t *out, bool *fresh)
{
	__typeof__(p->site_cache[0]) *c = &p->site_cache[stack_id % SITE_CACHE];
	if (c->site1 && c->stack == stack_id) {
		*fresh = false;
		*out = c->site1 - 1;
		return 0;
	}
	uint32_t i = ht_map_get(&p->site_by_stack, stack_id);
	*fresh = i == HT_MAP_NONE;
	if (!*fresh) {
		*out = i;
		c->stack = stack_id;
		c->site1 = i + 1;
		return 0;
	}
	if (p->nsites >= UINT32_MAX - 1 ||
	    ht_util_grow((void **)&p->site_stack, &p->cap_sites, p->nsites + 1,
			 sizeof(*p->site_stack)) ||
	    ht_map_put(&p->site_by_stack, stack_id, (uint32_t)p->nsites))
		return -ENOMEM;
	p->site_stack[p->nsites] = stack_id;
	c->stack = stack_id;
	c->site1 = (uint32_t)p->nsites + 1;
	*out = (uint32_t)p->nsites++;
	return 0;
}

/* Apply a heap event to the table; st says what it did. */
static int heap_step(ht_pass_t *p, const ht_event_t *ev, ht_heap_step_t *st)
{
	live_table_t *lt = &p->table;
	size_t pos;
	uint32_t fp;
	switch (ev->type) {
	case HT_EV_FREE:
		if (live_probe(lt, ev->addr, &pos, &fp)) {
			rec_get(lt, p->rate, slot_id(lt, pos), &p->gone);
			st->gone = &p->gone;
			live_remove(lt, pos);
		}
		return 0;
	case HT_EV_ALLOC:
	case HT_EV_REALLOC: {
		ht_live_t *v = &p->block;
		int e = live_room(lt);
		if (e)
			return e;
		uint32_t id;
		if (live_probe(lt, ev->addr, &pos, &fp)) {
			/* the block there is dropped: the new one takes its record */
			id = slot_id(lt, pos);
			rec_get(lt, p->rate, id, &p->gone);
			st->gone = &p->gone;
			wide_release(lt, id);
		} else {
			if ((id = rec_take(lt)) == NO_ID)
				return -ENOMEM;
			lt->idx[pos] = (id + 1) | fp;
			lt->len++;
		}
		*v = (ht_live_t){ ev->addr, ev->size, ev->time, ++p->thread_seq[ev->thread], 1.0, 0,
				  ev->thread, id, 0, ev->fn };
		if (p->rate) /* else 1 and 0 */
			ht_pass_weigh(p->rate, ev->size, &v->w, &st->var);
		if ((e = site_of(p, ev->stack_id, &v->site, &st->new_site)))
			return e;
		if ((e = rec_put(lt, id, v)))
			return e;
		if (lt->tag)
			lt->tag[id] = 0;
		st->block = v;
		return 0;
	}
	default:
		return 0;
	}
}

static bool is_heap(uint8_t type)
{
	return type == HT_EV_ALLOC || type == HT_EV_FREE || type == HT_EV_REALLOC ||
	       type == HT_EV_RSS;
}

/* The HT_MERGE_* flag that brings an event of that type; 0 for the heap's. */
static unsigned flag_of(uint8_t type)
{
	switch (type) {
	case HT_EV_ENTER:
	case HT_EV_EXIT:
	case HT_EV_ENABLE:
		return HT_MERGE_FUNCTIONS;
	case HT_EV_TAG:
	case HT_EV_PHASE:
		return HT_MERGE_MARKS;
	case HT_EV_POOL:
		return HT_MERGE_POOLS;
	case HT_EV_SNAPSHOT:
		return HT_MERGE_SNAPSHOTS;
	case HT_EV_EXT:
		return HT_MERGE_EXT;
	default:
		return 0;
	}
}

/* ---- the merge ahead of the consumers --------------------------------------------
 * With a second core, the merge runs on a worker thread of its own and
 * hands its events over in batches through a ring of FEED_RING buffers;
 * the consumers take them on the calling thread in the same order, so the
 * output is the same with one thread or more. The merge (decoding the
 * blocks, replays, the heap of cursors) and the consumers (the live-block
 * table, sites, timeline) each take about half of a pass. */
#define FEED_BATCH 2048
#define FEED_RING 8

typedef struct feed {
	ht_merge_t *mg;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	ht_event_t *buf[FEED_RING];
	size_t n[FEED_RING];
	size_t head, tail; /* batches made and taken */
	bool done, stop;
} feed_t;

static void *feed_main(void *arg)
{
	feed_t *f = arg;
	for (;;) {
		pthread_mutex_lock(&f->mu);
		while (f->head - f->tail == FEED_RING && !f->stop)
			pthread_cond_wait(&f->cv, &f->mu);
		bool stop = f->stop;
		size_t slot = f->head % FEED_RING;
		pthread_mutex_unlock(&f->mu);
		size_t n = 0;
		while (!stop && n < FEED_BATCH && ht_merge_next(f->mg, &f->buf[slot][n]))
			n++;
		pthread_mutex_lock(&f->mu);
		if (n) {
			f->n[slot] = n;
			f->head++;
		}
		if (stop || n < FEED_BATCH)
			f->done = true;
		pthread_cond_broadcast(&f->cv);
		bool end = f->done;
		pthread_mutex_unlock(&f->mu);
		if (end)
			return NULL;
	}
}

/* The consumers' share of one event. */
static int pass_event(ht_pass_t *p, ht_event_t *ev)
{
	int e = 0;
	if (is_heap(ev->type)) {
		p->step = (ht_heap_step_t){ NULL, NULL, false, 0 };
		if (p->live && (e = heap_step(p, ev, &p->step)))
			return e;
		for (const struct heap_call *h = p->hc, *end = h + p->nhc; h < end && !e; h++)
			e = h->on_event(h->ctx, ev, h->st);
		return e;
	}
	unsigned f = flag_of(ev->type);
	for (size_t i = 0; i < p->nc && !e; i++) {
		const ht_pass_consumer_t *c = &p->c[i];
		if (c->flags & f)
			e = c->on_event(c->ctx, ev, NULL);
	}
	return e;
}

/* The merge on a worker, the consumers here. 1 when the worker could not
 * be had (the caller then runs it all itself), else 0 or an error. */
static int pass_fed(ht_pass_t *p, ht_merge_t *mg)
{
	feed_t f = { .mg = mg };
	int e = 0;
	for (size_t i = 0; i < FEED_RING; i++)
		if (!(f.buf[i] = malloc(FEED_BATCH * sizeof(ht_event_t))))
			e = -ENOMEM;
	pthread_t th;
	if (e || pthread_mutex_init(&f.mu, NULL)) {
		for (size_t i = 0; i < FEED_RING; i++)
			free(f.buf[i]);
		return 1;
	}
	pthread_cond_init(&f.cv, NULL);
	if (pthread_create(&th, NULL, feed_main, &f)) {
		e = 1;
		goto out;
	}
	for (;;) {
		pthread_mutex_lock(&f.mu);
		while (f.tail == f.head && !f.done)
			pthread_cond_wait(&f.cv, &f.mu);
		bool have = f.tail != f.head;
		size_t slot = f.tail % FEED_RING, n = have ? f.n[slot] : 0;
		pthread_mutex_unlock(&f.mu);
		if (!have)
			break;
		for (size_t i = 0; i < n && !e; i++)
			e = pass_event(p, &f.buf[slot][i]);
		if (n)
			ht_merge_progress(f.mg, f.buf[slot][n - 1].time);
		pthread_mutex_lock(&f.mu);
		f.tail++;
		if (e)
			f.stop = true;
		pthread_cond_broadcast(&f.cv);
		pthread_mutex_unlock(&f.mu);
		if (e)
			break;
	}
	pthread_join(th, NULL);
out:
	pthread_cond_destroy(&f.cv);
	pthread_mutex_destroy(&f.mu);
	for (size_t i = 0; i < FEED_RING; i++)
		free(f.buf[i]);
	return e;
}

/* The consumers of heap events, and the table for those that want it. */
static int pass_setup(ht_pass_t *p)
{
	const ht_trace_t *t = p->t;
	if (p->ran)
		return -EINVAL;
	p->ran = true;
	if (!(p->hc = malloc((p->nc ? p->nc : 1) * sizeof(*p->hc))))
		return -ENOMEM;
	for (size_t i = 0; i < p->nc; i++)
		if (p->c[i].heap)
			p->hc[p->nhc++] = (struct heap_call){ p->c[i].on_event, p->c[i].ctx,
							      p->c[i].live ? &p->step : NULL };
	if (p->live) {
		p->nthread_seq = t->nthreads ? t->nthreads : 1;
		p->thread_seq = calloc(p->nthread_seq, sizeof(*p->thread_seq));
		if (!p->thread_seq || live_init(&p->table, p->tags))
			return -ENOMEM;
	}
	return 0;
}

int ht_pass_run(ht_pass_t *p)
{
	const ht_trace_t *t = p->t;
	int e = pass_setup(p);
	if (e)
		return e;
	/* a pass nobody needs events from (a consumer of EXT events in a trace
	 * without any, say) merges nothing */
	if (p->heap || p->flags) {
		ht_merge_t *mg;
		if ((e = ht_merge_new_ex(t, p->flags, UINT32_MAX, &mg)))
			return e;
		ht_pass_merges++;
		if (ht_threads() < 2 || (e = pass_fed(p, mg)) == 1) {
			e = 0;
			ht_event_t ev;
			while (!e && ht_merge_next(mg, &ev))
				e = pass_event(p, &ev);
		}
		ht_merge_free(mg);
	}
	ht_progress_clear();
	for (size_t i = 0; i < p->nc && !e; i++)
		if (p->c[i].on_end)
			e = p->c[i].on_end(p->c[i].ctx);
	return e;
}

/* ---- following a growing trace ------------------------------------------------------- */

int ht_pass_follow(ht_pass_t *p)
{
	int e = pass_setup(p);
	if (e)
		return e;
	if ((e = ht_merge_new_ex(p->t, p->flags | HT_MERGE_FOLLOW, UINT32_MAX, &p->follow)))
		return e;
	ht_pass_merges++;
	return 0;
}

int ht_pass_advance(ht_pass_t *p, uint64_t limit)
{
	const ht_trace_t *t = p->t;
	if (!p->follow)
		return -EINVAL;
	if (p->live && t->nthreads > p->nthread_seq) {
		size_t cap = p->nthread_seq;
		if (ht_util_grow((void **)&p->thread_seq, &cap, t->nthreads, sizeof(*p->thread_seq)))
			return -ENOMEM;
		memset(p->thread_seq + p->nthread_seq, 0,
		       (cap - p->nthread_seq) * sizeof(*p->thread_seq));
		p->nthread_seq = cap;
	}
	int e = ht_merge_follow(p->follow, limit);
	ht_event_t ev;
	while (!e && ht_merge_next(p->follow, &ev))
		e = pass_event(p, &ev);
	return e;
}

int ht_pass_finish(ht_pass_t *p)
{
	int e = 0;
	for (size_t i = 0; i < p->nc && !e; i++)
		if (p->c[i].on_end)
			e = p->c[i].on_end(p->c[i].ctx);
	return e;
}
