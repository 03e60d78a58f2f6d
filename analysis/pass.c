/* pass.c - one merge of a trace through every registered consumer
 * (pass.h).
 *
 * Live blocks sit in one open-addressing table (linear probing,
 * backward-shift deletion: no tombstones, no per-event malloc), shared by
 * every consumer that follows the heap.
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

/* ---- live blocks ---------------------------------------------------------------- */

typedef struct live_table {
	ht_live_t *slot;
	size_t cap, len; /* cap is a power of two */
} live_table_t;

static int live_init(live_table_t *lt, size_t cap)
{
	lt->slot = malloc(cap * sizeof(*lt->slot));
	if (!lt->slot)
		return -ENOMEM;
	for (size_t i = 0; i < cap; i++)
		lt->slot[i].site = HT_LIVE_EMPTY;
	lt->cap = cap;
	lt->len = 0;
	return 0;
}

static inline size_t live_home(const live_table_t *lt, uint64_t addr)
{
	return ht_util_hash64(addr) & (lt->cap - 1);
}

static ht_live_t *live_find(const live_table_t *lt, uint64_t addr)
{
	size_t mask = lt->cap - 1;
	for (size_t i = live_home(lt, addr);; i = (i + 1) & mask) {
		if (lt->slot[i].site == HT_LIVE_EMPTY)
			return NULL;
		if (lt->slot[i].addr == addr)
			return &lt->slot[i];
	}
}

/* Remove the entry at e, shifting later members of its probe run back. */
static void live_remove(live_table_t *lt, ht_live_t *e)
{
	size_t mask = lt->cap - 1;
	size_t i = (size_t)(e - lt->slot);
	for (size_t j = (i + 1) & mask;; j = (j + 1) & mask) {
		if (lt->slot[j].site == HT_LIVE_EMPTY)
			break;
		size_t h = live_home(lt, lt->slot[j].addr);
		/* j's entry may move to i if its home is not in (i, j] cyclically */
		if (((j - h) & mask) >= ((j - i) & mask)) {
			lt->slot[i] = lt->slot[j];
			i = j;
		}
	}
	lt->slot[i].site = HT_LIVE_EMPTY;
	lt->len--;
}

/* Insert v (its address not in the table); the new slot, or NULL on ENOMEM. */
static ht_live_t *live_insert(live_table_t *lt, const ht_live_t *v)
{
	if ((lt->len + 1) * 4 > lt->cap * 3) { /* load <= 3/4 */
		live_table_t n;
		if (lt->cap > SIZE_MAX / 2 / sizeof(ht_live_t) || live_init(&n, lt->cap * 2))
			return NULL;
		for (size_t i = 0; i < lt->cap; i++) {
			if (lt->slot[i].site == HT_LIVE_EMPTY)
				continue;
			size_t j = live_home(&n, lt->slot[i].addr);
			while (n.slot[j].site != HT_LIVE_EMPTY)
				j = (j + 1) & (n.cap - 1);
			n.slot[j] = lt->slot[i];
		}
		n.len = lt->len;
		free(lt->slot);
		*lt = n;
	}
	size_t mask = lt->cap - 1, i = live_home(lt, v->addr);
	while (lt->slot[i].site != HT_LIVE_EMPTY)
		i = (i + 1) & mask;
	lt->slot[i] = *v;
	lt->len++;
	return &lt->slot[i];
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
	size_t *hc, nhc; /* the consumers of heap events */
	unsigned flags;	   /* union of the consumers' */
	bool heap, live;   /* some consumer wants heap events, the table */
	bool ran;
	live_table_t table;
	uint64_t *thread_seq; /* allocations made so far, per thread */
	size_t nthread_seq;
	ht_merge_t *follow;   /* ht_pass_follow's merge */
	ht_map_t site_by_stack;
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
	free(p->table.slot);
	free(p->thread_seq);
	ht_merge_free(p->follow);
	free(p->site_stack);
	ht_map_free(&p->site_by_stack);
	free(p);
}

ht_live_t *ht_pass_find(ht_pass_t *p, uint64_t addr)
{
	return p->table.slot ? live_find(&p->table, addr) : NULL;
}

const ht_live_t *ht_pass_slots(const ht_pass_t *p, size_t *cap)
{
	*cap = p->table.slot ? p->table.cap : 0;
	return p->table.slot;
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
	uint32_t i = ht_map_get(&p->site_by_stack, stack_id);
	*fresh = i == HT_MAP_NONE;
	if (!*fresh) {
		*out = i;
		return 0;
	}
	if (p->nsites >= UINT32_MAX - 1 ||
	    ht_util_grow((void **)&p->site_stack, &p->cap_sites, p->nsites + 1,
			 sizeof(*p->site_stack)) ||
	    ht_map_put(&p->site_by_stack, stack_id, (uint32_t)p->nsites))
		return -ENOMEM;
	p->site_stack[p->nsites] = stack_id;
	*out = (uint32_t)p->nsites++;
	return 0;
}

/* Apply a heap event to the table; st says what it did. */
static int heap_step(ht_pass_t *p, const ht_event_t *ev, ht_heap_step_t *st, ht_live_t *gone)
{
	live_table_t *lt = &p->table;
	ht_live_t *b;
	switch (ev->type) {
	case HT_EV_FREE:
		if ((b = live_find(lt, ev->addr))) {
			*gone = *b;
			st->gone = gone;
			live_remove(lt, b);
		}
		return 0;
	case HT_EV_ALLOC:
	case HT_EV_REALLOC: {
		if ((b = live_find(lt, ev->addr))) {
			*gone = *b;
			st->gone = gone;
			live_remove(lt, b);
		}
		ht_live_t v = { ev->addr, ev->size, ev->time, ++p->thread_seq[ev->thread], 1.0, 0,
				ev->thread, 0, ev->fn };
		if (p->rate) /* else 1 and 0 */
			ht_pass_weigh(p->rate, ev->size, &v.w, &st->var);
		int e = site_of(p, ev->stack_id, &v.site, &st->new_site);
		if (e)
			return e;
		if (!(st->block = live_insert(lt, &v)))
			return -ENOMEM;
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
static int pass_event(ht_pass_t *p, ht_event_t *ev, ht_live_t *gone)
{
	int e = 0;
	ht_heap_step_t st = { NULL, NULL, false, 0 };
	if (is_heap(ev->type)) {
		if (p->live && (e = heap_step(p, ev, &st, gone)))
			return e;
		for (size_t k = 0; k < p->nhc && !e; k++) {
			const ht_pass_consumer_t *c = &p->c[p->hc[k]];
			e = c->on_event(c->ctx, ev, c->live ? &st : NULL);
		}
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
	ht_live_t gone;
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
			e = pass_event(p, &f.buf[slot][i], &gone);
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
			p->hc[p->nhc++] = i;
	if (p->live) {
		p->nthread_seq = t->nthreads ? t->nthreads : 1;
		p->thread_seq = calloc(p->nthread_seq, sizeof(*p->thread_seq));
		if (!p->thread_seq || live_init(&p->table, 1024))
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
			ht_live_t gone;
			while (!e && ht_merge_next(mg, &ev))
				e = pass_event(p, &ev, &gone);
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
	ht_live_t gone;
	while (!e && ht_merge_next(p->follow, &ev))
		e = pass_event(p, &ev, &gone);
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
