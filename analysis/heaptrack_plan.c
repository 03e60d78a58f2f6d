/* heaptrack_plan.c - heaptrack's two-pass plan (heaptrack_plan.h).
 *
 * The peak is the model's, known only at the end, so its event is found
 * among the record highs of the heap (each event that raised the running
 * maximum): the first event at which the heap reached the final peak is
 * one of them. A record high below the model's peak so far can be that
 * event no more and is dropped: in an exact trace the model's peak is this
 * heap's maximum, and one candidate is kept at a time. For each candidate
 * the temporaries freed across it are kept (at most one per thread: a
 * temporary is its thread's last allocation), so that the one that turns
 * out to be the peak's can undo their pull bits at the end.
 */
#include "analysis/heaptrack_plan.h"

#include <errno.h>
#include <stdlib.h>

#include "analysis/util.h"
#include "trace_format.h"

typedef struct cand {
	uint64_t ord, heap;
	uint64_t *across; /* allocation events of temporaries freed across it, in free order */
	size_t n, cap;
} cand_t;

typedef struct plan {
	ht_hk_plan_t *pl;
	ht_pass_t *p;
	const uint64_t *peak;
	uint64_t max_ord, ord;
	uint64_t heap, high;	 /* the heap now, its running maximum */
	uint64_t *last_alloc;	 /* per thread: the event of its latest allocation */
	cand_t *c;		 /* record highs that may be the peak's, by ord */
	size_t nc, cap_c, first; /* live ones: c[first..nc) */
} plan_t;

static int plan_event(void *ctx, const ht_event_t *ev, const ht_heap_step_t *st)
{
	plan_t *c = ctx;
	if (c->ord >= c->max_ord)
		return 0;
	uint64_t ord = c->ord++;
	if (ev->type == HT_EV_FREE) {
		const ht_live_t *b = st->gone;
		if (!b)
			return 0;
		c->heap -= b->size;
		if (ht_pass_thread_seq(c->p, b->thread) != b->seq)
			return 0;
		/* a temporary, allocated by its thread's latest allocation */
		uint64_t a = c->last_alloc[b->thread];
		c->pl->pull[a / 8] |= (uint8_t)(1u << (a % 8));
		/* the candidates it spans: those after its allocation */
		for (size_t k = c->nc; k-- > c->first && c->c[k].ord > a;) {
			cand_t *d = &c->c[k];
			if (ht_util_grow((void **)&d->across, &d->cap, d->n + 1, sizeof(*d->across)))
				return -ENOMEM;
			d->across[d->n++] = a;
		}
		return 0;
	}
	if (ev->type != HT_EV_ALLOC && ev->type != HT_EV_REALLOC)
		return 0;
	if (st->gone) /* its free went unrecorded: dropped, as the model does */
		c->heap -= st->gone->size;
	c->heap += ev->size;
	c->last_alloc[ev->thread] = ord;
	if (c->heap <= c->high)
		return 0;
	c->high = c->heap;
	/* drop the candidates the model's peak has passed */
	while (c->first < c->nc && c->c[c->first].heap < *c->peak) {
		free(c->c[c->first].across);
		c->first++;
	}
	if (c->first == c->nc)
		c->first = c->nc = 0;
	if (ht_util_grow((void **)&c->c, &c->cap_c, c->nc + 1, sizeof(*c->c)))
		return -ENOMEM;
	c->c[c->nc++] = (cand_t){ ord, c->heap, NULL, 0, 0 };
	return 0;
}

static int plan_end(void *ctx)
{
	plan_t *c = ctx;
	ht_hk_plan_t *pl = c->pl;
	uint64_t peak = *c->peak;
	pl->nevents = c->ord;
	for (size_t k = c->first; peak && k < c->nc; k++) {
		cand_t *d = &c->c[k];
		if (d->heap < peak)
			continue;
		pl->peak_ord = d->ord;
		/* the temporaries across the peak stay plain; the first one freed
		 * is written at the peak (invariant 3), unless the peak's own
		 * block is a pair: that one is the pair there */
		for (size_t j = 0; j < d->n; j++)
			pl->pull[d->across[j] / 8] &= (uint8_t)~(1u << (d->across[j] % 8));
		if (d->n && !(pl->pull[d->ord / 8] & (1u << (d->ord % 8))))
			pl->rescue_ord = d->across[0];
		break;
	}
	return 0;
}

static void plan_fini(void *ctx)
{
	plan_t *c = ctx;
	for (size_t k = 0; k < c->nc; k++)
		free(c->c[k].across);
	free(c->c);
	free(c->last_alloc);
	free(c);
}

void ht_hk_plan_free(ht_hk_plan_t *pl)
{
	if (!pl)
		return;
	free(pl->pull);
	free(pl);
}

int ht_hk_plan_attach(ht_pass_t *p, const ht_trace_t *t, const uint64_t *peak, ht_hk_plan_t **out)
{
	ht_hk_plan_t *pl = *out = calloc(1, sizeof(*pl));
	plan_t *c = calloc(1, sizeof(*c));
	/* a REALLOC comes out of the merge as two events */
	uint64_t max_ord = 2 * t->nevents + 1;
	if (!pl || !c || !(pl->pull = calloc(max_ord / 8 + 1, 1)) ||
	    !(c->last_alloc = calloc(t->nthreads ? t->nthreads : 1, sizeof(*c->last_alloc)))) {
		free(c);
		return -ENOMEM;
	}
	pl->peak_ord = pl->rescue_ord = UINT64_MAX;
	*c = (plan_t){ pl, p, peak, max_ord, 0, 0, 0, c->last_alloc, NULL, 0, 0, 0 };
	ht_pass_consumer_t cs = { 0, true, true, plan_event, plan_end, plan_fini, c, false };
	return ht_pass_add(p, &cs);
}
