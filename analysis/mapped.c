/* mapped.c - bytes mapped by call site (mapped.h).
 *
 * The maps live in an array of disjoint ranges sorted by start: an unmap
 * may cover several maps or part of one (a runtime unmaps the unused ends
 * of an aligned reservation), so it trims, splits or drops each range it
 * overlaps. Map events are few (a runtime maps megabytes at a time): the
 * array's moves do not matter. */
#include "analysis/mapped.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "trace_format.h"
#include "analysis/util.h"

static int on_map_event(void *ctx, const ht_event_t *ev, const ht_heap_step_t *st);

typedef struct range {
	uint64_t lo, hi;
	uint32_t site;
} range_t;

typedef struct mctx {
	ht_mapped_t *m;
	ht_mapped_t **out;
	size_t cap_sites;
	ht_map_t by_stack;
	range_t *r;
	size_t n, cap;
	uint64_t page; /* lengths round up to whole pages, as the kernel's */
} mctx_t;

static uint64_t pages(const mctx_t *c, uint64_t len)
{
	uint64_t r = (len + c->page - 1) & ~(c->page - 1);
	return r < len ? len : r;
}

static int site_of(mctx_t *c, uint64_t stack_id, unsigned kind, uint64_t time, uint32_t *out)
{
	uint32_t i = ht_map_get(&c->by_stack, stack_id);
	if (i != HT_MAP_NONE) {
		*out = i;
		return 0;
	}
	ht_mapped_t *m = c->m;
	if (ht_util_grow((void **)&m->sites, &c->cap_sites, m->nsites + 1, sizeof(*m->sites)) ||
	    ht_map_put(&c->by_stack, stack_id, (uint32_t)m->nsites))
		return -ENOMEM;
	ht_map_site_t *s = &m->sites[m->nsites];
	memset(s, 0, sizeof(*s));
	s->stack_id = stack_id;
	s->kind = kind;
	s->first_time = time;
	*out = (uint32_t)m->nsites++;
	return 0;
}

/* The first range whose end is past lo. */
static size_t first_after(const mctx_t *c, uint64_t lo)
{
	size_t a = 0, b = c->n;
	while (a < b) {
		size_t mid = a + (b - a) / 2;
		if (c->r[mid].hi <= lo)
			a = mid + 1;
		else
			b = mid;
	}
	return a;
}

static void take(mctx_t *c, uint32_t site, uint64_t bytes)
{
	c->m->sites[site].live -= bytes;
	c->m->live -= bytes;
}

/* Unmaps [lo, hi): returns the bytes that were mapped there. */
static int unmap(mctx_t *c, uint64_t lo, uint64_t hi, uint64_t *found)
{
	*found = 0;
	size_t i = first_after(c, lo);
	while (i < c->n && c->r[i].lo < hi) {
		range_t *x = &c->r[i];
		uint64_t a = x->lo > lo ? x->lo : lo, b = x->hi < hi ? x->hi : hi;
		take(c, x->site, b - a);
		*found += b - a;
		if (a == x->lo && b == x->hi) { /* all of it */
			memmove(x, x + 1, (c->n - i - 1) * sizeof(*x));
			c->n--;
			continue;
		}
		if (a == x->lo) { /* its start */
			x->lo = b;
		} else if (b == x->hi) { /* its end */
			x->hi = a;
		} else { /* its middle: two ranges */
			if (ht_util_grow((void **)&c->r, &c->cap, c->n + 1, sizeof(*c->r)))
				return -ENOMEM;
			x = &c->r[i];
			memmove(x + 1, x, (c->n - i) * sizeof(*x));
			c->n++;
			x->hi = a;
			x[1].lo = b;
		}
		i++;
	}
	return 0;
}

static int map(mctx_t *c, uint64_t lo, uint64_t len, uint32_t site, uint64_t time)
{
	uint64_t gone;
	int e = unmap(c, lo, lo + len, &gone); /* MAP_FIXED over an old map */
	if (e)
		return e;
	if (ht_util_grow((void **)&c->r, &c->cap, c->n + 1, sizeof(*c->r)))
		return -ENOMEM;
	size_t i = first_after(c, lo);
	memmove(&c->r[i + 1], &c->r[i], (c->n - i) * sizeof(*c->r));
	c->r[i] = (range_t){ lo, lo + len, site };
	c->n++;
	ht_mapped_t *m = c->m;
	ht_map_site_t *s = &m->sites[site];
	s->live += len;
	if (s->live > s->max_live)
		s->max_live = s->live;
	m->live += len;
	if (m->live > m->peak) { /* maps are few: every site's figure, now */
		m->peak = m->live;
		m->peak_time = time;
		for (size_t k = 0; k < m->nsites; k++)
			m->sites[k].at_peak = m->sites[k].live;
	}
	return 0;
}

/* Notes live at time after a change (see ht_mapped_t's steps). */
static int step(ht_mapped_t *m, uint64_t time)
{
	if (m->nsteps && m->step_time[m->nsteps - 1] == time) {
		m->step_live[m->nsteps - 1] = m->live;
		return 0;
	}
	if (m->steps_skip) {
		m->steps_skip--;
		return 0;
	}
	if (m->nsteps == HT_MAPPED_STEPS) { /* keep every other one */
		for (size_t i = 0; i < m->nsteps / 2; i++) {
			m->step_time[i] = m->step_time[2 * i + 1];
			m->step_live[i] = m->step_live[2 * i + 1];
		}
		m->nsteps /= 2;
		m->steps_every = m->steps_every ? m->steps_every * 2 : 2;
	}
	if (m->nsteps == m->steps_cap) {
		size_t cap = m->steps_cap, c2 = cap;
		if (ht_util_grow((void **)&m->step_time, &cap, m->nsteps + 1, sizeof(uint64_t)) ||
		    ht_util_grow((void **)&m->step_live, &c2, m->nsteps + 1, sizeof(uint64_t)))
			return -ENOMEM;
		m->steps_cap = cap < c2 ? cap : c2;
	}
	m->step_time[m->nsteps] = time;
	m->step_live[m->nsteps++] = m->live;
	m->steps_skip = m->steps_every ? m->steps_every - 1 : 0;
	return 0;
}

uint64_t ht_mapped_at(const ht_mapped_t *m, uint64_t t)
{
	if (!m)
		return 0;
	size_t a = 0, b = m->nsteps; /* the first step after t */
	while (a < b) {
		size_t mid = a + (b - a) / 2;
		if (m->step_time[mid] <= t)
			a = mid + 1;
		else
			b = mid;
	}
	return a ? m->step_live[a - 1] : 0;
}

static int on_event(void *ctx, const ht_event_t *ev, const ht_heap_step_t *st)
{
	int r = on_map_event(ctx, ev, st);
	mctx_t *c = ctx;
	if (!r && c->m && ev->type == HT_EV_EXT && ev->fn != HT_EXT_MADVISE_FREE)
		r = step(c->m, ev->time);
	return r;
}

static int on_map_event(void *ctx, const ht_event_t *ev, const ht_heap_step_t *st)
{
	(void)st;
	mctx_t *c = ctx;
	if (ev->type != HT_EV_EXT)
		return 0;
	uint64_t gone;
	uint32_t site;
	int e;
	switch (ev->fn) {
	case HT_EXT_MMAP:
	case HT_EXT_MREMAP:
		if (!c->m && !(c->m = calloc(1, sizeof(*c->m))))
			return -ENOMEM;
		if (ev->fn == HT_EXT_MREMAP) {
			c->m->remaps++;
			if ((e = unmap(c, ev->old_addr, ev->old_addr + pages(c, ev->old_size), &gone)))
				return e;
		} else {
			c->m->maps++;
		}
		if ((e = site_of(c, ev->stack_id, ev->fn == HT_EXT_MMAP ? (unsigned)ev->name_id : HT_MAP_ANON,
				 ev->time, &site)))
			return e;
		c->m->sites[site].maps++;
		c->m->sites[site].bytes_mapped += pages(c, ev->size);
		return map(c, ev->addr, pages(c, ev->size), site, ev->time);
	case HT_EXT_MUNMAP:
		if (!c->m && !(c->m = calloc(1, sizeof(*c->m))))
			return -ENOMEM;
		c->m->unmaps++;
		if ((e = unmap(c, ev->addr, ev->addr + pages(c, ev->size), &gone)))
			return e;
		c->m->unknown_unmapped += pages(c, ev->size) - gone;
		return 0;
	case HT_EXT_MADVISE_FREE:
		if (!c->m && !(c->m = calloc(1, sizeof(*c->m))))
			return -ENOMEM;
		c->m->advised_free += ev->size;
		return 0;
	default:
		return 0;
	}
}

static int on_end(void *ctx)
{
	mctx_t *c = ctx;
	*c->out = c->m;
	c->m = NULL;
	return 0;
}

static void fini(void *ctx)
{
	mctx_t *c = ctx;
	ht_mapped_free(c->m);
	ht_map_free(&c->by_stack);
	free(c->r);
	free(c);
}

void ht_mapped_free(ht_mapped_t *m)
{
	if (!m)
		return;
	free(m->sites);
	free(m->step_time);
	free(m->step_live);
	free(m);
}

int ht_mapped_attach(ht_pass_t *p, const ht_trace_t *t, ht_mapped_t **out)
{
	*out = NULL;
	mctx_t *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->page = t->page_size && !(t->page_size & (t->page_size - 1)) ? t->page_size : 4096;
	c->out = out;
	ht_pass_consumer_t k = { HT_MERGE_EXT, false, false, on_event, on_end, fini, c, false };
	return ht_pass_add(p, &k);
}
