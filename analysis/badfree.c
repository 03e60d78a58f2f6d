/* badfree.c - double, invalid and mismatched frees (badfree.h). */
#include "analysis/badfree.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "trace_format.h"
#include "analysis/util.h"

typedef struct find {
	const ht_trace_t *t;
	ht_pass_t *p;
	ht_badfrees_t *b;
	ht_badfrees_t **out;
	size_t cap;
	bool kinds;	   /* FREE events carry their function (format 1.12) */
	bool unresolved;   /* some free found no block: a second pass is due */
	/* the latest free that found its block, for a BAD_FREE that follows it */
	ht_live_t last_gone;
	uint64_t last_gone_stack, last_free_time;
	uint32_t last_free_thread;
	bool have_last;
	/* per thread: the entry of its latest free when that was bad, for the
	 * FREE_STACK after it (free_stacks=1); SIZE_MAX otherwise */
	size_t *last_bad;
} find_t;

const char *ht_bad_free_fn_name(unsigned f)
{
	switch (f) {
	case HT_FREE_FREE: return "free";
	case HT_FREE_DELETE: return "delete";
	case HT_FREE_DELETE_ARRAY: return "delete[]";
	case HT_BAD_FREE_REALLOC: return "realloc";
	default: return "free";
	}
}

const char *ht_bad_alloc_fn_name(unsigned fn)
{
	static const char *const names[HT_FN_COUNT] = {
		"malloc", "calloc", "realloc", "reallocarray", "posix_memalign", "aligned_alloc",
		"memalign", "valloc", "pvalloc", "new", "new[]", "heaptrail_alloc",
	};
	return fn < HT_FN_COUNT ? names[fn] : "malloc";
}

const char *ht_bad_kind_name(unsigned k)
{
	switch (k) {
	case HT_BAD_DOUBLE: return "double free";
	case HT_BAD_INVALID: return "invalid free";
	case HT_BAD_MISMATCH: return "mismatched free";
	case HT_BAD_ABORTED: return "free in a damaged heap";
	default: return "bad free";
	}
}

/* Whether a block made by alloc_fn may be freed by free_fn (memcheck's
 * rule: new with delete, new[] with delete[], the rest with free or
 * realloc; the program's own blocks are its business). */
static bool matches(unsigned alloc_fn, unsigned free_fn)
{
	if (alloc_fn == HT_FN_CUSTOM)
		return true;
	if (alloc_fn == HT_FN_NEW)
		return free_fn == HT_FREE_DELETE;
	if (alloc_fn == HT_FN_NEW_ARRAY)
		return free_fn == HT_FREE_DELETE_ARRAY;
	return free_fn == HT_FREE_FREE || free_fn == HT_BAD_FREE_REALLOC;
}

static unsigned free_fn_of(const ht_event_t *ev)
{
	if (ev->from_realloc)
		return HT_BAD_FREE_REALLOC;
	return ev->fn <= HT_FREE_DELETE_ARRAY ? ev->fn : HT_FREE_FREE;
}

static void set_block(ht_bad_free_t *x, ht_pass_t *p, const ht_live_t *g)
{
	x->have_block = true;
	x->block_addr = g->addr;
	x->size = g->size;
	x->alloc_time = g->time;
	x->alloc_stack = ht_pass_site_stack(p, g->site);
	x->seq = g->seq;
	x->alloc_fn = g->fn;
	x->alloc_thread = g->thread;
}

/* A new entry (NULL past HT_BAD_KEEP or out of memory: only counted). */
static ht_bad_free_t *add(find_t *f, unsigned kind, const ht_event_t *ev, unsigned free_fn)
{
	f->b->total++;
	if (kind)
		f->b->count[kind]++;
	if (f->b->n >= HT_BAD_KEEP ||
	    ht_util_grow((void **)&f->b->item, &f->cap, f->b->n + 1, sizeof(*f->b->item)))
		return NULL;
	ht_bad_free_t *x = &f->b->item[f->b->n++];
	memset(x, 0, sizeof(*x));
	x->kind = kind;
	x->free_fn = free_fn;
	x->addr = ev->addr;
	x->time = ev->time;
	x->thread = ev->thread;
	return x;
}

static int find_event(void *ctx, const ht_event_t *ev, const ht_heap_step_t *st)
{
	find_t *f = ctx;
	if (ev->type == HT_EV_FREE && !ev->from_pool_op) {
		unsigned fn = free_fn_of(ev);
		if (ev->thread < f->t->nthreads)
			f->last_bad[ev->thread] = SIZE_MAX;
		if (!st->gone) {
			if (add(f, 0, ev, fn)) { /* past the kept ones: counted, not told apart */
				f->unresolved = true;
				if (ev->thread < f->t->nthreads)
					f->last_bad[ev->thread] = f->b->n - 1;
			}
			f->have_last = false;
			return 0;
		}
		f->last_gone = *st->gone;
		f->last_gone_stack = ht_pass_site_stack(f->p, st->gone->site);
		f->last_free_time = ev->time;
		f->last_free_thread = ev->thread;
		f->have_last = true;
		if (f->kinds && !matches(st->gone->fn, fn)) {
			ht_bad_free_t *x = add(f, HT_BAD_MISMATCH, ev, fn);
			if (x) {
				set_block(x, f->p, st->gone);
				if (ev->thread < f->t->nthreads)
					f->last_bad[ev->thread] = f->b->n - 1;
			}
		}
		return 0;
	}
	if (ev->type == HT_EV_EXT && ev->fn == HT_EXT_FREE_STACK) {
		size_t i = ev->thread < f->t->nthreads ? f->last_bad[ev->thread] : SIZE_MAX;
		if (i != SIZE_MAX && !f->b->item[i].stack_id)
			f->b->item[i].stack_id = ev->stack_id;
		if (i != SIZE_MAX)
			f->last_bad[ev->thread] = SIZE_MAX;
		return 0;
	}
	if (ev->type != HT_EV_EXT || ev->fn != HT_EXT_BAD_FREE)
		return 0;
	/* the free it names was recorded just before, on the same thread */
	for (size_t i = f->b->n; i-- > 0;) {
		ht_bad_free_t *x = &f->b->item[i];
		if (x->thread == ev->thread && x->addr == ev->addr && !x->aborted) {
			x->aborted = true;
			x->stack_id = ev->stack_id;
			if (ev->size == HT_FREE_REALLOC_ABORT) /* glibc aborted inside realloc */
				x->free_fn = HT_BAD_FREE_REALLOC;
			return 0;
		}
		if (ev->time - x->time > 1000000000ull)
			break;
	}
	ht_event_t fe = *ev;
	fe.type = HT_EV_FREE;
	ht_bad_free_t *x = add(f, HT_BAD_ABORTED, &fe,
			       ev->size == HT_FREE_REALLOC_ABORT ? HT_BAD_FREE_REALLOC
			       : ev->size <= 2 ? (unsigned)ev->size : 0);
	if (x) {
		x->aborted = true;
		x->stack_id = ev->stack_id;
		if (f->have_last && f->last_gone.addr == ev->addr && f->last_free_thread == ev->thread) {
			set_block(x, f->p, &f->last_gone);
			x->alloc_stack = f->last_gone_stack;
			x->time = f->last_free_time;
		}
	}
	return 0;
}

/* ---- the second pass: what was at the addresses of frees that found nothing */

typedef struct hist {
	bool have, freed;
	ht_live_t block;
	uint64_t stack;
	uint64_t free_time;
	uint32_t free_thread;
	unsigned free_fn;
	uint64_t free_stack; /* free_stacks=1 */
} hist_t;

typedef struct replay {
	find_t *f;
	ht_pass_t *p;
	ht_map_t at; /* address -> index into h */
	hist_t *h;
	size_t next; /* the next unresolved entry */
	uint32_t *last_first; /* per thread: the hist whose first free it made last, or HT_MAP_NONE */
} replay_t;

static void skip_resolved(replay_t *r)
{
	while (r->next < r->f->b->n && r->f->b->item[r->next].kind != 0)
		r->next++;
}

static int replay_event(void *ctx, const ht_event_t *ev, const ht_heap_step_t *st)
{
	replay_t *r = ctx;
	bool own = ev->thread < r->f->t->nthreads;
	if (ev->type == HT_EV_EXT) {
		if (ev->fn == HT_EXT_FREE_STACK && own && r->last_first[ev->thread] != HT_MAP_NONE) {
			r->h[r->last_first[ev->thread]].free_stack = ev->stack_id;
			r->last_first[ev->thread] = HT_MAP_NONE;
		}
		return 0;
	}
	uint32_t i;
	if (ev->type == HT_EV_FREE && own)
		r->last_first[ev->thread] = HT_MAP_NONE;
	if (ev->type == HT_EV_FREE && !ev->from_pool_op) {
		if (!st->gone && r->next < r->f->b->n) {
			ht_bad_free_t *x = &r->f->b->item[r->next];
			if (x->addr == ev->addr && x->time == ev->time && x->thread == ev->thread) {
				i = ht_map_get(&r->at, ev->addr);
				hist_t *h = &r->h[i];
				if (h->have && h->freed) {
					x->kind = HT_BAD_DOUBLE;
					set_block(x, r->p, &h->block);
					x->alloc_stack = h->stack;
					x->have_first_free = true;
					x->first_free_time = h->free_time;
					x->first_free_thread = h->free_thread;
					x->first_free_fn = h->free_fn;
					x->first_free_stack = h->free_stack;
				} else {
					x->kind = HT_BAD_INVALID;
					/* a pointer into a live block (memcheck: "16 bytes
					 * inside a block of size 64") */
					size_t nid = ht_pass_live_ids(r->p);
					ht_live_t s;
					for (size_t k = 0; k < nid; k++)
						if (ht_pass_live_get(r->p, k, &s) && ev->addr > s.addr &&
						    ev->addr - s.addr < s.size) {
							set_block(x, r->p, &s);
							break;
						}
				}
				r->next++;
				skip_resolved(r);
			}
		}
		if (st->gone && (i = ht_map_get(&r->at, ev->addr)) != HT_MAP_NONE && !r->h[i].freed) {
			r->h[i].freed = true;
			r->h[i].free_time = ev->time;
			r->h[i].free_thread = ev->thread;
			r->h[i].free_fn = free_fn_of(ev);
			r->h[i].free_stack = 0;
			if (own)
				r->last_first[ev->thread] = i;
		}
		return 0;
	}
	if ((ev->type == HT_EV_ALLOC || ev->type == HT_EV_REALLOC) && st->block &&
	    (i = ht_map_get(&r->at, ev->addr)) != HT_MAP_NONE) {
		hist_t *h = &r->h[i];
		h->have = true;
		h->freed = false;
		h->block = *st->block;
		h->stack = ev->stack_id;
	}
	return 0;
}

static int history(find_t *f)
{
	replay_t r = { f, NULL, { 0 }, NULL, 0, NULL };
	int e = -ENOMEM;
	if (!(r.h = calloc(f->b->n, sizeof(*r.h))) ||
	    !(r.last_first = malloc((f->t->nthreads + 1) * sizeof(*r.last_first))))
		goto out;
	for (size_t k = 0; k <= f->t->nthreads; k++)
		r.last_first[k] = HT_MAP_NONE;
	for (size_t k = 0, n = 0; k < f->b->n; k++)
		if (!f->b->item[k].kind && ht_map_get(&r.at, f->b->item[k].addr) == HT_MAP_NONE &&
		    ht_map_put(&r.at, f->b->item[k].addr, (uint32_t)n++))
			goto out;
	skip_resolved(&r);
	if ((e = ht_pass_new(f->t, &r.p)))
		goto out;
	ht_pass_consumer_t c = { HT_MERGE_EXT, true, true, replay_event, NULL, NULL, &r, false };
	if (!(e = ht_pass_add(r.p, &c)))
		e = ht_pass_run(r.p);
out:
	ht_pass_free(r.p);
	ht_map_free(&r.at);
	free(r.h);
	free(r.last_first);
	return e;
}

static int find_end(void *ctx)
{
	find_t *f = ctx;
	if (f->unresolved) {
		int e = history(f);
		if (e)
			return e;
	}
	/* a free that found nothing, at an address never used before: a block
	 * from before the trace began when the trace began late (a fork
	 * child's parent's blocks, start=off, an attach), else a free of
	 * memory the allocator never returned */
	bool late = f->t->proc_flags & (HT_PROC_FORKED | HT_PROC_START_OFF | HT_PROC_ATTACHED);
	size_t o = 0;
	for (size_t k = 0; k < f->b->n; k++) {
		ht_bad_free_t *x = &f->b->item[k];
		if (!x->kind)
			x->kind = HT_BAD_INVALID; /* not reached again: cannot happen */
		if (x->kind == HT_BAD_INVALID && late && !x->have_block && !x->aborted) {
			f->b->total--;
			f->b->unseen++;
			continue;
		}
		if (x->kind == HT_BAD_DOUBLE || x->kind == HT_BAD_INVALID)
			f->b->count[x->kind]++; /* the others were counted when found */
		f->b->item[o++] = *x;
	}
	f->b->n = o;
	*f->out = f->b;
	f->b = NULL;
	return 0;
}

static void find_fini(void *ctx)
{
	find_t *f = ctx;
	ht_badfrees_free(f->b);
	free(f->last_bad);
	free(f);
}

void ht_badfrees_free(ht_badfrees_t *b)
{
	if (!b)
		return;
	free(b->item);
	free(b);
}

int ht_badfree_attach(ht_pass_t *p, const ht_trace_t *t, ht_badfrees_t **out)
{
	*out = NULL;
	if (t->sample_rate || (t->proc_flags & HT_PROC_SUMMARY))
		return 0;
	find_t *f = calloc(1, sizeof(*f));
	if (!f || !(f->b = calloc(1, sizeof(*f->b)))) {
		free(f);
		return -ENOMEM;
	}
	if (!(f->last_bad = malloc((t->nthreads + 1) * sizeof(*f->last_bad)))) {
		ht_badfrees_free(f->b);
		free(f);
		return -ENOMEM;
	}
	for (size_t k = 0; k <= t->nthreads; k++)
		f->last_bad[k] = SIZE_MAX;
	f->t = t;
	f->p = p;
	f->out = out;
	f->kinds = t->major > 1 || t->minor >= 12;
	ht_pass_consumer_t c = { HT_MERGE_EXT, true, true, find_event, find_end, find_fini, f, false };
	return ht_pass_add(p, &c);
}
