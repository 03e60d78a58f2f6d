/* activity.c - per-thread heap activity and function spans for the Chrome
 * trace export (activity.h). */
#include "analysis/activity.h"

#include <errno.h>
#include <stdlib.h>

#include "analysis/functions.h"
#include "analysis/model.h"
#include "analysis/util.h"
#include "trace_format.h"

/* ---- heap activity -------------------------------------------------------------- */

typedef struct acc {
	double w_allocs, w_frees, w_bytes, w_freed; /* unrounded sums */
	size_t slot; /* the open slice's bucket, SIZE_MAX when none */
	ht_activity_slice_t s;
} acc_t;

typedef struct act {
	ht_activity_t *a;
	const ht_trace_t *t;
	acc_t *acc;
	size_t nbuckets, cap_slices;
	uint64_t span;
	uint64_t max_so_far;
	int err;
} act_t;

/* Add x to the running sum *sum; returns what that adds to its rounded
 * value, so that rounded parts (slices, threads) add up with no error. */
static uint64_t add_rounded(double *sum, double x)
{
	uint64_t before = (uint64_t)(*sum + 0.5);
	*sum += x;
	return (uint64_t)(*sum + 0.5) - before;
}

/* Close thread i's open slice. */
static int flush_slice(act_t *c, uint32_t i)
{
	acc_t *x = &c->acc[i];
	if (x->slot == SIZE_MAX)
		return 0;
	ht_activity_t *a = c->a;
	if (ht_util_grow((void **)&a->slices, &c->cap_slices, a->nslices + 1, sizeof(*a->slices)))
		return -ENOMEM;
	a->slices[a->nslices++] = x->s;
	x->slot = SIZE_MAX;
	return 0;
}

static int activity_step(void *ctx, const ht_event_t *ev, const ht_replay_step_t *st)
{
	act_t *c = ctx;
	if (ev->type == HT_EV_RSS || (ev->type == HT_EV_FREE && st->ignored))
		return 0;
	if (ev->thread >= c->t->nthreads)
		return 0; /* the reader validates this; never index past it */
	acc_t *x = &c->acc[ev->thread];
	ht_thread_activity_t *a = &c->a->th[ev->thread];
	unsigned __int128 b = (unsigned __int128)ev->time * c->nbuckets / c->span;
	size_t slot = b >= c->nbuckets ? c->nbuckets - 1 : (size_t)b;
	int e;
	if (x->slot != slot) {
		if ((e = flush_slice(c, ev->thread)))
			return e;
		x->slot = slot;
		x->s = (ht_activity_slice_t){ ev->thread, ev->time, 0, 0, 0, 0, 0 };
	}
	if (!x->w_allocs && !x->w_frees)
		a->first = ev->time;
	a->last = x->s.last = ev->time;
	uint64_t d;
	if (ev->type == HT_EV_FREE) {
		d = add_rounded(&x->w_frees, st->weight);
		a->frees += d;
		x->s.frees += d;
		d = add_rounded(&x->w_freed, st->weight_bytes);
		a->bytes_freed += d;
		x->s.bytes_freed += d;
		return 0;
	}
	d = add_rounded(&x->w_allocs, st->weight);
	a->allocations += d;
	x->s.allocations += d;
	d = add_rounded(&x->w_bytes, st->weight_bytes);
	a->bytes_allocated += d;
	x->s.bytes_allocated += d;
	/* the allocation that first reached the replay's highest heap made the
	 * peak (the model's rule), whatever rounding a sampled trace has */
	if (st->heap_bytes > c->max_so_far) {
		c->max_so_far = st->heap_bytes;
		c->a->have_peak = true;
		c->a->peak_thread = ev->thread;
	}
	return 0;
}

static int activity_end(void *ctx)
{
	act_t *c = ctx;
	int e = 0;
	for (uint32_t i = 0; i < c->t->nthreads && !e; i++)
		e = flush_slice(c, i);
	return e;
}

static void activity_fini(void *ctx)
{
	act_t *c = ctx;
	free(c->acc);
	free(c);
}

void ht_activity_free(ht_activity_t *a)
{
	if (!a)
		return;
	free(a->th);
	free(a->slices);
	free(a);
}

int ht_activity_attach(ht_pass_t *p, const ht_trace_t *t, size_t nbuckets, ht_activity_t **out)
{
	size_t nt = t->nthreads ? t->nthreads : 1;
	ht_activity_t *a = *out = calloc(1, sizeof(*a));
	act_t *c = calloc(1, sizeof(*c));
	if (!a || !c || !(a->th = calloc(nt, sizeof(*a->th))) || !(c->acc = calloc(nt, sizeof(*c->acc)))) {
		if (c)
			activity_fini(c);
		return -ENOMEM;
	}
	c->a = a;
	c->t = t;
	c->nbuckets = nbuckets ? nbuckets : 1;
	c->span = t->last_time ? t->last_time : 1; /* the model's duration */
	for (size_t i = 0; i < nt; i++)
		c->acc[i].slot = SIZE_MAX;
	return ht_model_replay_attach(p, t, activity_step, activity_end, activity_fini, c);
}

/* ---- function spans ------------------------------------------------------------- */

typedef struct open_call {
	uint64_t addr, enter;
	uint32_t fn; /* index into the thread's fn_addr, UINT32_MAX until written */
	bool open;   /* its B was recorded and its E not yet */
} open_call_t;

typedef struct thread_calls {
	open_call_t *stack; /* HT_FN_MAX_DEPTH; NULL for a thread without calls */
	uint32_t depth;
	uint64_t over;	    /* open calls above the stack, never recorded */
	size_t budget;	    /* spans that may still be recorded */
	uint64_t last;	    /* time of its latest event */
	ht_map_t fn_of;	    /* entry address -> index into fn_addr */
} thread_calls_t;

typedef struct spans {
	ht_fn_spans_t *s;
	const ht_trace_t *t;
	thread_calls_t *tc;
} spans_t;

/* Record a B or E of call c of thread i at ns. */
static int span_event(spans_t *sp, uint32_t i, open_call_t *c, char ph, uint64_t ns)
{
	ht_thread_spans_t *ts = &sp->s->th[i];
	if (c->fn == UINT32_MAX) {
		uint32_t k = ht_map_get(&sp->tc[i].fn_of, c->addr);
		if (k == HT_MAP_NONE) {
			if (ts->nfn >= HT_MAP_NONE - 1 ||
			    ht_util_grow((void **)&ts->fn_addr, &ts->cap_fn, ts->nfn + 1,
					 sizeof(*ts->fn_addr)))
				return -ENOMEM;
			size_t cap = ts->nfn; /* fn_when grows with fn_addr */
			if (ht_util_grow((void **)&ts->fn_when, &cap, ts->nfn + 1, sizeof(*ts->fn_when)) ||
			    ht_map_put(&sp->tc[i].fn_of, c->addr, (uint32_t)ts->nfn))
				return -ENOMEM;
			k = (uint32_t)ts->nfn;
			ts->fn_addr[k] = c->addr;
			ts->fn_when[k] = c->enter;
			ts->nfn++;
		}
		c->fn = k;
	}
	if (ht_util_grow((void **)&ts->ev, &ts->cap, ts->n + 1, sizeof(*ts->ev)))
		return -ENOMEM;
	ts->ev[ts->n++] = (ht_span_event_t){ ns, c->fn, ph };
	return 0;
}

static int spans_event(void *ctx, const ht_event_t *ev, const ht_heap_step_t *st)
{
	(void)st;
	spans_t *sp = ctx;
	if (ev->thread >= sp->t->nthreads)
		return 0;
	thread_calls_t *tc = &sp->tc[ev->thread];
	if (!tc->stack)
		return 0; /* no function events */
	tc->last = ev->time;
	if (ev->type == HT_EV_ENTER) {
		if (tc->over || tc->depth >= HT_FN_MAX_DEPTH) {
			tc->over++;
			sp->s->th[ev->thread].dropped++;
			return 0;
		}
		open_call_t *c = &tc->stack[tc->depth++];
		*c = (open_call_t){ ev->addr, ev->time, UINT32_MAX, false };
		if (!tc->budget) {
			sp->s->th[ev->thread].dropped++;
			return 0;
		}
		tc->budget--;
		c->open = true;
		return span_event(sp, ev->thread, c, 'B', ev->time);
	}
	if (ev->type == HT_EV_EXIT) {
		if (tc->over) {
			tc->over--;
		} else if (tc->depth) {
			open_call_t *c = &tc->stack[--tc->depth];
			/* not open: its B was over budget */
			if (c->open)
				return span_event(sp, ev->thread, c, 'E', ev->time);
		}
		/* an EXIT with nothing open: entered while recording was off */
	}
	return 0;
}

/* Calls still open: ended at their thread's last event. */
static int spans_end(void *ctx)
{
	spans_t *sp = ctx;
	int e = 0;
	for (uint32_t i = 0; i < sp->t->nthreads && !e; i++) {
		thread_calls_t *tc = &sp->tc[i];
		for (uint32_t k = tc->depth; k-- > 0 && !e;)
			if (tc->stack[k].open)
				e = span_event(sp, i, &tc->stack[k], 'E', tc->last);
	}
	return e;
}

static void spans_fini(void *ctx)
{
	spans_t *sp = ctx;
	for (size_t i = 0; sp->tc && i < sp->t->nthreads; i++) {
		free(sp->tc[i].stack);
		ht_map_free(&sp->tc[i].fn_of);
	}
	free(sp->tc);
	free(sp);
}

void ht_fn_spans_free(ht_fn_spans_t *s)
{
	if (!s)
		return;
	for (size_t i = 0; s->th && i < s->nthreads; i++) {
		free(s->th[i].ev);
		free(s->th[i].fn_addr);
		free(s->th[i].fn_when);
	}
	free(s->th);
	free(s);
}

int ht_fn_spans_attach(ht_pass_t *p, const ht_trace_t *t, size_t max_spans, ht_fn_spans_t **out)
{
	size_t nt = t->nthreads ? t->nthreads : 1;
	ht_fn_spans_t *s = *out = calloc(1, sizeof(*s));
	spans_t *sp = calloc(1, sizeof(*sp));
	if (!s || !sp || !(s->th = calloc(nt, sizeof(*s->th))) || !(sp->tc = calloc(nt, sizeof(*sp->tc)))) {
		free(sp ? sp->tc : NULL);
		free(sp);
		return -ENOMEM;
	}
	s->nthreads = t->nthreads;
	sp->s = s;
	sp->t = t;
	bool any = false;
	for (size_t i = 0; i < t->nthreads; i++) {
		if (!t->threads[i].nfn_events)
			continue;
		any = true;
		sp->tc[i].budget = max_spans ? max_spans : HT_FN_CHROME_MAX_SPANS;
		if (!(sp->tc[i].stack = malloc(HT_FN_MAX_DEPTH * sizeof(*sp->tc[i].stack)))) {
			spans_fini(sp);
			return -ENOMEM;
		}
	}
	if (!any) { /* nothing to follow: no merge of function events */
		spans_fini(sp);
		return 0;
	}
	ht_pass_consumer_t c = { HT_MERGE_FUNCTIONS, true, false, spans_event, spans_end, spans_fini, sp, false };
	return ht_pass_add(p, &c);
}
