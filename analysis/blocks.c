/* blocks.c - the blocks of a trace summed by site, thread, birth and death
 * buckets, lifetime class and flags (blocks.h), as one pass consumer.
 *
 * Whether a block was live at the high of its death's bucket is known only
 * when that bucket closes (a later event of it may reach a new high, at
 * which the block is already dead): blocks dying since the bucket's latest
 * high wait in a list, flushed as "not live at the high" by the next new
 * high or as "live at it" when the bucket closes. Each waits once, so the
 * cost stays O(1) per event. Whether a block was born before its birth's
 * bucket's high compares it with that high's event: its time, then, on the
 * same thread, the allocation numbers (events of two threads at the same
 * nanosecond count as in order).
 */
#include "analysis/blocks.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "trace_format.h"
#include "analysis/pass.h"
#include "analysis/util.h"

/* An event, placed among the blocks' births. */
typedef struct mark {
	uint64_t time, seq; /* seq: its thread's allocations so far */
	uint32_t thread;
	bool set;
} mark_t;

typedef struct job {
	ht_blocks_t *b;
	ht_pass_t *pass;
	double rate;
	uint32_t *slot; /* open addressing: row index + 1; 0 empty */
	size_t scap;	/* power of two */
	size_t rcap, sscap;
	ht_block_row_t *pend; /* deaths since the bucket's latest high */
	size_t npend, pcap;
	mark_t *highs; /* per closed bucket: its high's event */
	mark_t cur;    /* the current bucket's latest high */
	double heap;	 /* weighted bytes live, summed as the model sums them */
	uint64_t bucket_high; /* the bucket's highest heap, rounded as the model's */
	bool moved;	 /* the bucket has had a heap event */
	size_t bucket;
	uint32_t nsites; /* pass sites seen: 0 .. nsites-1 */
	int err;
} job_t;

static size_t bucket_of(const job_t *j, uint64_t t)
{
	const ht_blocks_t *b = j->b;
	unsigned __int128 k = (unsigned __int128)t * b->nbuckets / b->span_ns;
	return k >= b->nbuckets ? b->nbuckets - 1 : (size_t)k;
}

static int class_of(uint64_t x)
{
	return x ? 64 - __builtin_clzll(x) : 0;
}

static uint64_t row_hash(const ht_block_row_t *r)
{
	uint64_t k2 = (uint64_t)r->born << 32 | (uint64_t)r->died << 16 | (uint64_t)r->life << 8 | r->flags;
	return ht_util_hash64(((uint64_t)r->site << 32 | r->thread) ^ ht_util_hash64(k2));
}

static bool row_same(const ht_block_row_t *a, const ht_block_row_t *b)
{
	return a->site == b->site && a->thread == b->thread && a->born == b->born &&
	       a->died == b->died && a->life == b->life && a->flags == b->flags;
}

static int rows_rehash(job_t *j, size_t cap)
{
	uint32_t *s = calloc(cap, sizeof(*s));
	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < j->b->nrows; i++) {
		size_t h = row_hash(&j->b->rows[i]) & (cap - 1);
		while (s[h])
			h = (h + 1) & (cap - 1);
		s[h] = (uint32_t)i + 1;
	}
	free(j->slot);
	j->slot = s;
	j->scap = cap;
	return 0;
}

/* Add r's sums to its row, made when new. */
static void row_add(job_t *j, const ht_block_row_t *r)
{
	ht_blocks_t *b = j->b;
	if ((b->nrows + 1) * 2 > j->scap) {
		if (b->nrows >= UINT32_MAX / 2 || rows_rehash(j, j->scap ? j->scap * 2 : 1024)) {
			j->err = -ENOMEM;
			return;
		}
	}
	size_t h = row_hash(r) & (j->scap - 1);
	for (; j->slot[h]; h = (h + 1) & (j->scap - 1)) {
		ht_block_row_t *x = &b->rows[j->slot[h] - 1];
		if (row_same(x, r)) {
			x->blocks += r->blocks;
			x->bytes += r->bytes;
			x->var_blocks += r->var_blocks;
			x->var_bytes += r->var_bytes;
			return;
		}
	}
	if (ht_util_grow((void **)&b->rows, &j->rcap, b->nrows + 1, sizeof(*b->rows))) {
		j->err = -ENOMEM;
		return;
	}
	b->rows[b->nrows] = *r;
	j->slot[h] = (uint32_t)++b->nrows;
}

/* The deaths waiting for the bucket's high: live at it (keep) or not. */
static void flush_pending(job_t *j, bool keep)
{
	for (size_t i = 0; i < j->npend; i++) {
		ht_block_row_t *r = &j->pend[i];
		if (!keep)
			r->flags &= (uint8_t) ~(r->born == r->died ? HT_BLK_HIGH_BORN : HT_BLK_HIGH_DIED);
		row_add(j, r);
	}
	j->npend = 0;
}

/* Close the buckets before k. */
static void close_to(job_t *j, size_t k)
{
	for (; j->bucket < k; j->bucket++) {
		flush_pending(j, true);
		j->highs[j->bucket] = j->cur;
		j->cur.set = false;
		j->moved = false; /* the next bucket's first heap event is its first high */
	}
}

/* Block b was allocated no later than the event m. */
static bool born_by(const ht_live_t *b, const mark_t *m)
{
	if (!m->set)
		return false;
	if (b->time != m->time)
		return b->time < m->time;
	return b->thread != m->thread || b->seq <= m->seq;
}

/* b's row, but for the bit of its death's bucket's high */
static void row_of(const job_t *j, const ht_live_t *b, uint64_t until, size_t died, uint8_t flags,
		   ht_block_row_t *r)
{
	size_t born = bucket_of(j, b->time);
	double w = b->w, sz = (double)b->size, var = j->rate ? w * (w - 1) : 0;
	r->site = b->site;
	r->thread = b->thread;
	r->born = (uint16_t)born;
	r->died = (uint16_t)died;
	r->life = (uint8_t)class_of(until > b->time ? until - b->time : 0);
	r->flags = flags;
	if (born < died && born_by(b, &j->highs[born]))
		r->flags |= HT_BLK_HIGH_BORN;
	r->blocks = w;
	r->bytes = sz * w;
	r->var_blocks = var;
	r->var_bytes = sz * sz * var;
}

/* b died at an event of bucket k (high: the heap after it is the bucket's
 * highest so far). */
static void block_died(job_t *j, const ht_live_t *b, uint64_t now, size_t k, bool temp, bool high)
{
	ht_block_row_t r;
	row_of(j, b, now, k, temp ? HT_BLK_TEMPORARY : 0, &r);
	/* live at the latest high (so far the bucket's) unless born after it
	 * or that high is this very event */
	bool waits = !high && (r.born < k || born_by(b, &j->cur));
	if (!waits) {
		row_add(j, &r);
		return;
	}
	r.flags |= r.born == k ? HT_BLK_HIGH_BORN : HT_BLK_HIGH_DIED;
	if (ht_util_grow((void **)&j->pend, &j->pcap, j->npend + 1, sizeof(*j->pend))) {
		j->err = -ENOMEM;
		return;
	}
	j->pend[j->npend++] = r;
}

static int blk_event(void *ctx, const ht_event_t *ev, const ht_heap_step_t *st)
{
	job_t *j = ctx;
	ht_blocks_t *b = j->b;
	if (ev->type != HT_EV_ALLOC && ev->type != HT_EV_REALLOC && ev->type != HT_EV_FREE)
		return 0;
	size_t k = bucket_of(j, ev->time);
	if (k > j->bucket)
		close_to(j, k);
	const ht_live_t *g = st->gone;
	if (g)
		j->heap -= (double)g->size * g->w;
	if (ev->type != HT_EV_FREE && st->block) {
		const ht_live_t *n = st->block;
		int c = class_of(n->size);
		b->size_blocks[c] += n->w;
		b->size_bytes[c] += (double)n->size * n->w;
		j->heap += (double)n->size * n->w;
		if (n->site >= j->nsites)
			j->nsites = n->site + 1;
	}
	/* the model's heap: in a sampled trace its running estimate rounded */
	uint64_t now = ht_round_u64(j->heap);
	bool high = !j->moved || now > j->bucket_high;
	if (high) { /* the deaths since the latest high were not live at this one */
		flush_pending(j, false);
		j->moved = true;
		j->bucket_high = now;
		j->cur = (mark_t){ ev->time, ht_pass_thread_seq(j->pass, ev->thread), ev->thread, true };
	}
	if (g) {
		bool temp = ev->type == HT_EV_FREE && g->seq == ht_pass_thread_seq(j->pass, g->thread);
		block_died(j, g, ev->time, k, temp, high);
	}
	return j->err;
}

static int blk_end(void *ctx)
{
	job_t *j = ctx;
	ht_blocks_t *b = j->b;
	close_to(j, b->nbuckets);
	size_t nid = ht_pass_live_ids(j->pass);
	for (size_t i = 0; i < nid && !j->err; i++) {
		ht_live_t bl;
		if (!ht_pass_live_get(j->pass, i, &bl))
			continue;
		ht_block_row_t r;
		row_of(j, &bl, b->span_ns, b->nbuckets, 0, &r);
		row_add(j, &r);
	}
	if (j->err)
		return j->err;
	if (!(b->site_stack = malloc(((size_t)j->nsites + 1) * sizeof(*b->site_stack))))
		return -ENOMEM;
	for (uint32_t s = 0; s < j->nsites; s++)
		b->site_stack[s] = ht_pass_site_stack(j->pass, s);
	b->nsites = j->nsites;
	return 0;
}

static void blk_fini(void *ctx)
{
	job_t *j = ctx;
	free(j->slot);
	free(j->pend);
	free(j->highs);
	free(j);
}

int ht_blocks_attach(ht_pass_t *p, const ht_trace_t *t, size_t nbuckets, ht_blocks_t **out)
{
	*out = NULL;
	if (nbuckets < 1 || nbuckets > UINT16_MAX)
		return -EINVAL;
	ht_blocks_t *b = calloc(1, sizeof(*b));
	job_t *j = calloc(1, sizeof(*j));
	mark_t *highs = calloc(nbuckets, sizeof(*highs));
	if (!b || !j || !highs) {
		free(b);
		free(j);
		free(highs);
		return -ENOMEM;
	}
	b->nbuckets = nbuckets;
	b->span_ns = t->last_time ? t->last_time : 1;
	j->b = b;
	j->pass = p;
	j->rate = (double)t->sample_rate;
	j->highs = highs;
	ht_pass_consumer_t c = { 0, true, true, blk_event, blk_end, blk_fini, j, false };
	int e = ht_pass_add(p, &c); /* j is freed on failure */
	if (e) {
		ht_blocks_free(b);
		return e;
	}
	*out = b;
	return 0;
}

void ht_blocks_free(ht_blocks_t *b)
{
	if (!b)
		return;
	free(b->rows);
	free(b->site_stack);
	free(b);
}
