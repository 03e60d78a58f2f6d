/* event_log.c - the events export's records (event_log.h). */
#include "analysis/event_log.h"

#include <errno.h>
#include <stdlib.h>

#include "trace_format.h"

typedef struct pending {
	uint64_t size; /* the old block's size */
	bool known;    /* the old block was live */
} pending_t;

typedef struct elog {
	ht_pass_t *p;
	const ht_trace_t *t;
	ht_event_rec_fn fn;
	void *ctx;
	ht_event_log_t *out;
	pending_t *pend;     /* per thread: a realloc's free half, held for it */
	uint8_t *stack_done; /* bit per index of t->stacks: used by a record */
} elog_t;

static int elog_event(void *ctx, const ht_event_t *ev, const ht_heap_step_t *st)
{
	elog_t *l = ctx;
	ht_event_log_t *o = l->out;
	const ht_live_t *b = st->gone && ev->addr ? st->gone : NULL;
	ht_event_rec_t r = { ev, o->records, 0, false, false, false };
	switch (ev->type) {
	case HT_EV_FREE:
		if (ev->from_realloc) {
			/* the REALLOC line says it: the same thread's next event */
			l->pend[ev->thread] = (pending_t){ b ? b->size : 0, b != NULL };
			return 0;
		}
		r.known = b != NULL;
		r.size = b ? b->size : 0;
		o->free++;
		o->unknown_frees += !b;
		break;
	case HT_EV_ALLOC:
	case HT_EV_REALLOC: {
		const ht_stack_t *s = ev->stack_id ? ht_trace_stack(l->t, ev->stack_id) : NULL;
		r.stack_known = s != NULL;
		if (s) {
			size_t i = (size_t)(s - l->t->stacks);
			r.new_stack = !(l->stack_done[i / 8] & (1u << (i % 8)));
			l->stack_done[i / 8] |= (uint8_t)(1u << (i % 8));
		}
		if (ev->type == HT_EV_REALLOC) {
			pending_t *pd = &l->pend[ev->thread];
			r.known = pd->known;
			r.size = pd->size;
			*pd = (pending_t){ 0, false };
			o->realloc++;
			o->unknown_prev += !r.known;
		} else {
			o->alloc++;
		}
		break;
	}
	default: /* RSS samples: not allocation events */
		return 0;
	}
	o->records++;
	return l->fn(l->ctx, &r);
}

static int elog_end(void *ctx)
{
	elog_t *l = ctx;
	/* a block at address 0 is not one the log saw */
	l->out->live_blocks = ht_pass_nlive(l->p) - (ht_pass_find(l->p, 0, NULL));
	return 0;
}

static void elog_fini(void *ctx)
{
	elog_t *l = ctx;
	free(l->pend);
	free(l->stack_done);
	free(l);
}

int ht_event_log_attach(ht_pass_t *p, const ht_trace_t *t, ht_event_rec_fn fn, void *ctx,
			ht_event_log_t *out)
{
	*out = (ht_event_log_t){ 0 };
	elog_t *l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	*l = (elog_t){ p, t, fn, ctx, out, NULL, NULL };
	l->pend = calloc(t->nthreads ? t->nthreads : 1, sizeof(*l->pend));
	l->stack_done = calloc(t->nstacks / 8 + 1, 1);
	if (!l->pend || !l->stack_done) {
		elog_fini(l);
		return -ENOMEM;
	}
	ht_pass_consumer_t c = { 0, true, true, elog_event, elog_end, elog_fini, l, false };
	return ht_pass_add(p, &c);
}
