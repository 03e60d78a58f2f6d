/* diff.c - two traces' sites matched by symbolized stack (diff.h). */
#include "analysis/diff.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/util.h"

#define NO_SITE UINT32_MAX
#define NO_ROW SIZE_MAX

/* A growable string: the key being built. */
typedef struct keybuf {
	char *s;
	size_t len, cap;
} keybuf_t;

static int key_add(keybuf_t *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int key_add(keybuf_t *k, const char *fmt, ...)
{
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(k->s ? k->s + k->len : NULL, k->s ? k->cap - k->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0)
			return -EINVAL;
		if (k->s && k->len + (size_t)n < k->cap) {
			k->len += (size_t)n;
			return 0;
		}
		if (ht_util_grow((void **)&k->s, &k->cap, k->len + (size_t)n + 1, 1))
			return -ENOMEM;
	}
}

/* The key of site s of side sd into k (reset first). */
static int site_key(const ht_diff_side_t *sd, ht_diff_match_t match, const ht_site_t *s,
		    ht_frame_t **frames, size_t *cap, keybuf_t *k)
{
	k->len = 0;
	if (k->s)
		k->s[0] = 0;
	/* no frames to match by: such rows match only their like */
	if (s->overflow || !s->stack)
		return key_add(k, "%s", ht_site_placeholder(s));
	long n = ht_model_frames(sd->m, sd->sym, s, frames, cap);
	if (n < 0)
		return (int)n;
	const ht_trace_t *t = sd->m->trace;
	int r = 0;
	for (long i = 0; i < n && !r; i++) {
		const ht_frame_t *f = &(*frames)[i];
		const char *mod = f->module ? ht_base_name(f->module) : "?";
		if (f->function) {
			r = key_add(k, "%s%s @%s", i ? "\n" : "", f->function, mod);
		} else {
			/* an offset in its module stays put while that module does */
			long mi = ht_trace_module_for(t, f->address, s->first_time);
			uint64_t off = mi >= 0 ? f->address - t->modules[mi].bias : f->address;
			r = key_add(k, "%s?? @%s+0x%" PRIx64, i ? "\n" : "", mod, off);
		}
		if (!r && match == HT_DIFF_BY_LINE && f->file)
			r = key_add(k, " %s:%d", ht_base_name(f->file), f->line);
	}
	if (!r && n == 0)
		r = key_add(k, "[empty stack]");
	return r;
}

/* Does a site take part: anything allocated, or left live (a summary's
 * rows, a trace whose allocations were not all recorded). Sites of
 * descriptors and handles alone do not. */
static bool counts(const ht_site_t *s)
{
	return s->allocations || s->leaked_blocks || s->overflow;
}

static int add_side(ht_diff_t *d, int side, ht_map_t *by_hash, size_t *cap)
{
	const ht_diff_side_t *sd = &d->side[side];
	const ht_model_t *m = sd->m;
	ht_frame_t *frames = NULL;
	size_t fcap = 0;
	keybuf_t k = { NULL, 0, 0 };
	int r = 0;
	for (size_t i = 0; i < m->nsites && !r; i++) {
		const ht_site_t *s = &m->sites[i];
		if (!counts(s))
			continue;
		if ((r = site_key(sd, d->match, s, &frames, &fcap, &k)))
			break;
		uint64_t h = ht_fnv1a(k.s);
		uint32_t head = ht_map_get(by_hash, h);
		size_t row = head == HT_MAP_NONE ? NO_ROW : head;
		while (row != NO_ROW && strcmp(d->sites[row].key, k.s))
			row = d->sites[row].next;
		if (row == NO_ROW) {
			if (d->nsites >= HT_MAP_NONE - 1 ||
			    ht_util_grow((void **)&d->sites, cap, d->nsites + 1, sizeof(*d->sites))) {
				r = -ENOMEM;
				break;
			}
			ht_diff_site_t *ns = &d->sites[d->nsites];
			memset(ns, 0, sizeof(*ns));
			ns->rep[0] = ns->rep[1] = NO_SITE;
			ns->next = head == HT_MAP_NONE ? NO_ROW : head;
			if (!(ns->key = strdup(k.s)) || ht_map_put(by_hash, h, (uint32_t)d->nsites)) {
				free(ns->key);
				r = -ENOMEM;
				break;
			}
			row = d->nsites++;
		}
		ht_diff_site_t *ds = &d->sites[row];
		ht_diff_figs_t *f = &ds->fig[side];
		f->allocations += s->allocations;
		f->bytes_allocated += s->bytes_allocated;
		f->frees += s->frees;
		f->peak_bytes += s->peak_bytes;
		f->leaked_blocks += s->leaked_blocks;
		f->leaked_bytes += s->leaked_bytes;
		f->temporary += s->temporary;
		if (ds->rep[side] == NO_SITE ||
		    s->bytes_allocated > m->sites[ds->rep[side]].bytes_allocated)
			ds->rep[side] = (uint32_t)i;
		ds->nsites[side]++;
	}
	free(frames);
	free(k.s);
	return r;
}

int ht_diff_build(ht_diff_t *d)
{
	ht_map_t by_hash = { 0 };
	size_t cap = 0;
	d->sites = NULL;
	d->nsites = 0;
	int r = add_side(d, HT_DIFF_BASE, &by_hash, &cap);
	if (!r)
		r = add_side(d, HT_DIFF_NEW, &by_hash, &cap);
	ht_map_free(&by_hash);
	if (r)
		ht_diff_free(d);
	return r;
}

void ht_diff_free(ht_diff_t *d)
{
	for (size_t i = 0; i < d->nsites; i++)
		free(d->sites[i].key);
	free(d->sites);
	d->sites = NULL;
	d->nsites = 0;
}

const char *ht_diff_status(const ht_diff_t *d, const ht_diff_site_t *s)
{
	if (!s->nsites[HT_DIFF_BASE])
		return "new";
	if (!s->nsites[HT_DIFF_NEW])
		return "gone";
	ht_diff_figs_t a = s->fig[HT_DIFF_BASE], b = s->fig[HT_DIFF_NEW];
	/* a count one side does not know is not a change */
	if (!d->side[HT_DIFF_BASE].temporary_known || !d->side[HT_DIFF_NEW].temporary_known)
		a.temporary = b.temporary = 0;
	return memcmp(&a, &b, sizeof(a)) ? "changed" : "same";
}

uint64_t ht_diff_fig(const ht_diff_figs_t *f, ht_site_order_t order)
{
	switch (order) {
	case HT_BY_BYTES: return f->bytes_allocated;
	case HT_BY_COUNT: return f->allocations;
	case HT_BY_PEAK: return f->peak_bytes;
	case HT_BY_LEAKED: return f->leaked_bytes;
	case HT_BY_TEMPORARY: return f->temporary;
	}
	return 0;
}

/* |NEW - BASE| of a figure */
static uint64_t abs_change(const ht_diff_site_t *s, ht_site_order_t order)
{
	uint64_t a = ht_diff_fig(&s->fig[HT_DIFF_BASE], order);
	uint64_t b = ht_diff_fig(&s->fig[HT_DIFF_NEW], order);
	return a > b ? a - b : b - a;
}

typedef struct sort_ctx {
	const ht_diff_site_t *sites;
	ht_site_order_t order;
} sort_ctx_t;

static int row_cmp(const void *pa, const void *pb, void *arg)
{
	const sort_ctx_t *c = arg;
	const ht_diff_site_t *x = &c->sites[*(const size_t *)pa], *y = &c->sites[*(const size_t *)pb];
	uint64_t kx = abs_change(x, c->order), ky = abs_change(y, c->order);
	if (kx != ky)
		return kx > ky ? -1 : 1;
	kx = abs_change(x, HT_BY_COUNT);
	ky = abs_change(y, HT_BY_COUNT);
	if (kx != ky)
		return kx > ky ? -1 : 1;
	return strcmp(x->key, y->key);
}

size_t ht_diff_sort(const ht_diff_t *d, ht_site_order_t order, bool all, size_t *idx)
{
	size_t n = 0;
	for (size_t i = 0; i < d->nsites; i++) {
		const ht_diff_site_t *s = &d->sites[i];
		/* a leak of empty blocks changes no byte count: still a change */
		bool moved = abs_change(s, order) ||
			     (order == HT_BY_LEAKED &&
			      s->fig[0].leaked_blocks != s->fig[1].leaked_blocks);
		if (all || moved)
			idx[n++] = i;
	}
	sort_ctx_t c = { d->sites, all ? HT_BY_BYTES : order };
	qsort_r(idx, n, sizeof(*idx), row_cmp, &c);
	return n;
}
