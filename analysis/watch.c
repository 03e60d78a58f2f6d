/* watch.c - the figures of heaptrail top (watch.h). */
#include "analysis/watch.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "trace_format.h"
#include "analysis/util.h"

#define NS 1000000000ull

static int site_room(ht_watch_t *w, size_t site)
{
	if (site < w->nsites)
		return 0;
	size_t old = w->cap_sites;
	if (ht_util_grow((void **)&w->sites, &w->cap_sites, site + 1, sizeof(*w->sites)))
		return -ENOMEM;
	/* a new site had nothing in every second before */
	memset(w->sites + old, 0, (w->cap_sites - old) * sizeof(*w->sites));
	w->nsites = site + 1;
	return 0;
}

void ht_watch_tick(ht_watch_t *w, uint64_t time)
{
	uint64_t s = time / NS;
	if (time > w->now)
		w->now = time;
	if (!w->started) {
		w->started = true;
		w->sec0 = w->sec = s;
		w->hist_max[s % HT_WATCH_HISTORY] = w->heap;
		w->hist_allocs[s % HT_WATCH_HISTORY] = 0;
		return;
	}
	if (s <= w->sec)
		return;
	if (s - w->sec > HT_WATCH_HISTORY)
		w->sec = s - HT_WATCH_HISTORY;
	while (w->sec < s) {
		w->sec++;
		w->hist_max[w->sec % HT_WATCH_HISTORY] = w->heap;
		w->hist_allocs[w->sec % HT_WATCH_HISTORY] = 0;
		/* the sites' values only for the seconds their window keeps */
		if (s - w->sec >= HT_WATCH_WINDOW)
			continue;
		size_t k = w->sec % HT_WATCH_WINDOW;
		for (size_t i = 0; i < w->nsites; i++) {
			w->sites[i].ring_allocs[k] = w->sites[i].allocs;
			w->sites[i].ring_live[k] = w->sites[i].live_bytes;
		}
	}
}

static void drop(ht_watch_t *w, const ht_live_t *b)
{
	uint64_t size = ht_live_wsize(b, w->rate), n = w->rate ? ht_round_u64(b->w) : 1;
	w->heap -= size < w->heap ? size : w->heap;
	w->blocks -= n < w->blocks ? n : w->blocks;
	w->frees += n;
	if (b->site < w->nsites) {
		ht_watch_site_t *s = &w->sites[b->site];
		s->live_bytes -= size < s->live_bytes ? size : s->live_bytes;
		s->live_blocks -= n < s->live_blocks ? n : s->live_blocks;
	}
}

static int on_event(void *ctx, const ht_event_t *ev, const ht_heap_step_t *st)
{
	ht_watch_t *w = ctx;
	if (ev->type != HT_EV_ALLOC && ev->type != HT_EV_REALLOC && ev->type != HT_EV_FREE)
		return 0;
	ht_watch_tick(w, ev->time);
	if (ev->time > w->last_time)
		w->last_time = ev->time;
	if (st->gone)
		drop(w, st->gone);
	if (!st->block)
		return 0;
	const ht_live_t *b = st->block;
	if (site_room(w, b->site))
		return -ENOMEM;
	uint64_t size = ht_live_wsize(b, w->rate), n = w->rate ? ht_round_u64(b->w) : 1;
	ht_watch_site_t *s = &w->sites[b->site];
	s->live_bytes += size;
	s->live_blocks += n;
	s->allocs += n;
	s->bytes += size;
	w->heap += size;
	w->blocks += n;
	w->allocs += n;
	w->bytes += size;
	if (w->heap > w->peak) {
		w->peak = w->heap;
		w->peak_time = ev->time;
	}
	size_t h = w->sec % HT_WATCH_HISTORY;
	if (w->heap > w->hist_max[h])
		w->hist_max[h] = w->heap;
	w->hist_allocs[h] += n;
	return 0;
}

int ht_watch_attach(ht_pass_t *p, ht_watch_t *w)
{
	w->pass = p;
	ht_pass_consumer_t c = { 0, true, true, on_event, NULL, NULL, w, false };
	return ht_pass_add(p, &c);
}

/* How many whole seconds back a window of n can go. */
static unsigned back(const ht_watch_t *w, unsigned n)
{
	if (n >= HT_WATCH_WINDOW)
		n = HT_WATCH_WINDOW - 1;
	uint64_t have = w->started ? w->sec - w->sec0 : 0;
	return have < n ? (unsigned)have : n;
}

double ht_watch_site_rate(const ht_watch_t *w, size_t i, unsigned n)
{
	unsigned k = back(w, n);
	if (!k || i >= w->nsites)
		return 0;
	const ht_watch_site_t *s = &w->sites[i];
	uint64_t now = s->ring_allocs[w->sec % HT_WATCH_WINDOW];
	uint64_t then = s->ring_allocs[(w->sec - k) % HT_WATCH_WINDOW];
	return (double)(now - then) / k;
}

int64_t ht_watch_site_growth(const ht_watch_t *w, size_t i, unsigned n)
{
	if (i >= w->nsites)
		return 0;
	const ht_watch_site_t *s = &w->sites[i];
	unsigned k = back(w, n);
	/* a trace shorter than the window: since its start */
	uint64_t then = k < n ? 0 : s->ring_live[(w->sec - k) % HT_WATCH_WINDOW];
	return (int64_t)(s->live_bytes - then);
}

double ht_watch_rate(const ht_watch_t *w, unsigned n)
{
	if (!w->started)
		return 0;
	uint64_t have = w->sec - w->sec0, sum = 0;
	if (n > have)
		n = (unsigned)have;
	if (n > HT_WATCH_HISTORY - 1)
		n = HT_WATCH_HISTORY - 1;
	if (!n) { /* less than a whole second: over the time there is */
		uint64_t span = w->now - w->sec0 * NS;
		return span ? (double)w->allocs * 1e9 / (double)span : 0;
	}
	for (unsigned k = 1; k <= n; k++)
		sum += w->hist_allocs[(w->sec - k) % HT_WATCH_HISTORY];
	return n ? (double)sum / n : 0;
}

void ht_watch_free(ht_watch_t *w)
{
	free(w->sites);
	w->sites = NULL;
	w->nsites = w->cap_sites = 0;
}
