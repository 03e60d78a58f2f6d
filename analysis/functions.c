/* functions.c - replay ENTER/EXIT/ALLOC events into per-thread call trees
 * (see functions.h for what the figures mean).
 *
 * One consumer of a pass (analysis/pass.h) with HT_MERGE_FUNCTIONS: each
 * thread's events come in its recorded order, which is time order on that
 * thread, so ENTER/EXIT nest as the program ran and each allocation falls
 * between the calls that surrounded it. Every thread has its own replay
 * state; the functions are numbered afterwards as if the threads had been
 * replayed one after the other (the main thread first), which is the order
 * the JSON lists functions that allocated nothing in.
 *
 * Time attribution: at every ENTER and EXIT the time since the previous one
 * goes to the self time of the node on top of the stack; at an EXIT the
 * call's whole duration goes to its node's total. Nodes are keyed by path,
 * so one node is never active twice at once (a recursion is one node per
 * depth), except through folding, whose calls add no total of their own:
 * hence self <= total and children's totals <= their parent's.
 *
 * Inclusive heap is not counted per event (that would cost the stack depth
 * per allocation): each allocation goes to the top node's own figures, and
 * heap_* = own + the children's heap_*, summed bottom-up at the end.
 *
 * Memory: nodes (bounded by HT_FN_MAX_NODES), functions, and a replay stack
 * of at most HT_FN_MAX_DEPTH frames per thread, whatever the trace says.
 */
#include "analysis/functions.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/pass.h"
#include "trace_format.h"
#include "analysis/util.h"

/* ---- lookup tables -------------------------------------------------------------
 * Open addressing over indices (HT_FN_NONE = empty); the key lives in the
 * element itself, so a table is one u32 per slot. Load kept under 1/2. */

static uint64_t node_key_hash(uint32_t parent, uint32_t func)
{
	return ht_util_hash64(((uint64_t)parent << 32 | func) + 0x9e3779b97f4a7c15ULL);
}

/* A table of cap (a power of two) empty slots. */
static int tab_alloc(uint32_t **tab, size_t cap)
{
	*tab = malloc(cap * sizeof(**tab));
	if (!*tab)
		return -ENOMEM;
	for (size_t i = 0; i < cap; i++)
		(*tab)[i] = HT_FN_NONE;
	return 0;
}

/* Double the (parent, func) -> node table and re-insert every non-root
 * node: rehashing from the nodes themselves needs no second key array. */
static int node_tab_grow(ht_fn_profile_t *p)
{
	size_t cap = p->node_tab_cap ? p->node_tab_cap * 2 : 1024;
	uint32_t *tab;
	if (tab_alloc(&tab, cap))
		return -ENOMEM;
	for (size_t i = 0; i < p->nnodes; i++) {
		const ht_fn_node_t *n = &p->nodes[i];
		if (n->parent == HT_FN_NONE)
			continue; /* roots are found through their thread */
		size_t s = node_key_hash(n->parent, n->func) & (cap - 1);
		while (tab[s] != HT_FN_NONE)
			s = (s + 1) & (cap - 1);
		tab[s] = (uint32_t)i;
	}
	free(p->node_tab);
	p->node_tab = tab;
	p->node_tab_cap = cap;
	return 0;
}

/* Double the addr -> func table, re-inserting from funcs[]. */
static int func_tab_grow(ht_fn_profile_t *p)
{
	size_t cap = p->func_tab_cap ? p->func_tab_cap * 2 : 1024;
	uint32_t *tab;
	if (tab_alloc(&tab, cap))
		return -ENOMEM;
	for (size_t i = 0; i < p->nfuncs; i++) {
		size_t s = ht_util_hash64(p->funcs[i].addr) & (cap - 1);
		while (tab[s] != HT_FN_NONE)
			s = (s + 1) & (cap - 1);
		tab[s] = (uint32_t)i;
	}
	free(p->func_tab);
	p->func_tab = tab;
	p->func_tab_cap = cap;
	return 0;
}

/* Index of the function at addr, added on first sight. */
static int func_get(ht_fn_profile_t *p, uint64_t addr, uint64_t when, uint32_t *out)
{
	if ((p->nfuncs + 1) * 2 > p->func_tab_cap && func_tab_grow(p))
		return -ENOMEM;
	size_t mask = p->func_tab_cap - 1, s = ht_util_hash64(addr) & mask;
	for (; p->func_tab[s] != HT_FN_NONE; s = (s + 1) & mask) {
		if (p->funcs[p->func_tab[s]].addr == addr) {
			*out = p->func_tab[s];
			return 0;
		}
	}
	if (p->nfuncs >= HT_FN_NONE - 1 ||
	    ht_util_grow((void **)&p->funcs, &p->cap_funcs, p->nfuncs + 1, sizeof(*p->funcs)))
		return -ENOMEM;
	p->funcs[p->nfuncs] = (ht_fn_func_t){ .addr = addr, .first_time = when };
	p->func_tab[s] = (uint32_t)p->nfuncs;
	*out = (uint32_t)p->nfuncs++;
	return 0;
}

/* Append a node (parent HT_FN_NONE: a thread's root) and link it under its
 * parent. Indices stay valid as nodes[] grows; pointers into it do not. */
static int node_new(ht_fn_profile_t *p, uint32_t parent, uint32_t func, uint32_t thread,
		    uint32_t depth, uint64_t when, uint32_t *out)
{
	if (ht_util_grow((void **)&p->nodes, &p->cap_nodes, p->nnodes + 1, sizeof(*p->nodes)))
		return -ENOMEM;
	uint32_t i = (uint32_t)p->nnodes++;
	p->nodes[i] = (ht_fn_node_t){
		.func = func,
		.parent = parent,
		.first_child = HT_FN_NONE,
		.next_sibling = HT_FN_NONE,
		.thread = thread,
		.depth = depth,
		.first_time = when,
	};
	if (parent != HT_FN_NONE) {
		/* prepend: ht_fn_children sorts anyway */
		p->nodes[i].next_sibling = p->nodes[parent].first_child;
		p->nodes[parent].first_child = i;
	}
	*out = i;
	return 0;
}

/* The child of parent for func: found, created, or (past HT_FN_MAX_NODES)
 * HT_FN_NONE, meaning "fold into the parent". */
static int child_get(ht_fn_profile_t *p, uint32_t parent, uint32_t func, uint64_t when,
		     uint32_t *out)
{
	if ((p->nnodes + 1) * 2 > p->node_tab_cap && node_tab_grow(p))
		return -ENOMEM;
	size_t mask = p->node_tab_cap - 1, s = node_key_hash(parent, func) & mask;
	for (; p->node_tab[s] != HT_FN_NONE; s = (s + 1) & mask) {
		const ht_fn_node_t *n = &p->nodes[p->node_tab[s]];
		if (n->parent == parent && n->func == func) {
			*out = p->node_tab[s];
			return 0;
		}
	}
	if (p->nnodes >= HT_FN_MAX_NODES) {
		p->nodes_capped = true;
		*out = HT_FN_NONE;
		return 0;
	}
	const ht_fn_node_t *par = &p->nodes[parent];
	int e = node_new(p, parent, func, par->thread, par->depth + 1, when, out);
	if (!e)
		p->node_tab[s] = *out;
	return e;
}

/* ---- the replay of one thread ----------------------------------------------------- */

typedef struct frame {
	uint32_t node;
	uint64_t enter; /* time of its ENTER */
} frame_t;

typedef struct replay {
	ht_fn_profile_t *p;
	ht_fn_thread_t *th;
	uint32_t last_func;	      /* the function of the last ENTER */
	frame_t stack[HT_FN_MAX_DEPTH]; /* the open calls that have a node */
	uint32_t depth;		      /* frames in stack */
	uint64_t folded;	      /* open calls above stack[depth-1], folded into it */
	uint64_t last;		      /* time of the previous ENTER/EXIT */
} replay_t;

/* The node the thread is in now: its innermost call with a node, or its
 * root outside any instrumented function. Folded calls are inside it. */
static uint32_t top_node(const replay_t *r)
{
	return r->depth ? r->stack[r->depth - 1].node : r->th->root;
}

/* The time since the previous stack change is the top's self time. */
static void attribute(replay_t *r, uint64_t now)
{
	if (now <= r->last)
		return; /* equal stamps; never earlier within a thread */
	ht_fn_node_t *n = &r->p->nodes[top_node(r)];
	n->self_ns += now - r->last;
	if (n->func != HT_FN_NONE)
		r->p->funcs[n->func].self_ns += now - r->last;
	r->last = now;
}

/* An ENTER: find or make the child node of the current top for this
 * function and push it, or fold the call past a cap. */
static int on_enter(replay_t *r, const ht_event_t *ev)
{
	ht_fn_profile_t *p = r->p;
	attribute(r, ev->time);
	r->th->enters++;
	p->enters++;
	uint64_t open = r->depth + r->folded + 1;
	if (open > r->th->max_depth)
		r->th->max_depth = open;
	uint32_t fi, ni = HT_FN_NONE;
	int e = func_get(p, ev->addr, ev->time, &fi);
	if (e)
		return e;
	r->last_func = fi;
	p->funcs[fi].calls++;
	if (!r->folded && r->depth < HT_FN_MAX_DEPTH) {
		if ((e = child_get(p, top_node(r), fi, ev->time, &ni)))
			return e;
	} else {
		p->depth_capped = true;
	}
	if (ni == HT_FN_NONE) {
		/* past a cap: the call counts in the node it folds into */
		p->nodes[top_node(r)].folded_calls++;
		r->th->folded_calls++;
		r->folded++;
		return 0;
	}
	p->nodes[ni].calls++;
	r->stack[r->depth++] = (frame_t){ ni, ev->time };
	return 0;
}

/* Close the top call at time now (an EXIT, or the end of the thread). */
static void close_top(replay_t *r, uint64_t now, bool at_end)
{
	attribute(r, now);
	if (r->folded) {
		r->folded--;
		return;
	}
	frame_t *f = &r->stack[--r->depth];
	ht_fn_node_t *n = &r->p->nodes[f->node];
	n->total_ns += now > f->enter ? now - f->enter : 0;
	if (at_end) {
		n->closed_at_end++;
		r->th->closed_at_end++;
	}
}

/* An allocation belongs to the top node (own); inclusive figures come
 * from sum_inclusive at the end. */
static void on_alloc(replay_t *r, const ht_event_t *ev)
{
	ht_fn_node_t *n = &r->p->nodes[top_node(r)];
	n->own_bytes += ev->size;
	n->own_allocs++;
	if (n->func != HT_FN_NONE) {
		r->p->funcs[n->func].own_bytes += ev->size;
		r->p->funcs[n->func].own_allocs++;
	}
}

/* The pass's state: a replay per thread with function events. */
typedef struct job {
	ht_fn_profile_t *p;
	const ht_trace_t *t;
	replay_t **th;	  /* per trace thread: its replay, or NULL */
	bool *seen;	  /* per trace thread: its first event came */
	uint32_t *rank;	  /* per trace thread: its place in p->threads */
	/* per function: the first thread (by rank) that called it and the
	 * number of that thread's ENTER that did, for the numbering */
	struct fkey {
		uint32_t rank;
		uint64_t ord;
	} *fkey;
	size_t cap_fkey;
} job_t;

static int fn_event(void *ctx, const ht_event_t *ev, const ht_heap_step_t *st)
{
	(void)st;
	job_t *j = ctx;
	replay_t *r = j->th[ev->thread];
	if (!r)
		return 0;
	ht_fn_profile_t *p = j->p;
	ht_fn_thread_t *th = r->th;
	int e = 0;
	if (!j->seen[ev->thread]) {
		th->first_time = r->last = ev->time;
		p->nodes[th->root].first_time = ev->time;
		j->seen[ev->thread] = true;
	}
	if (ev->time > th->last_time)
		th->last_time = ev->time;
	switch (ev->type) {
	case HT_EV_ENTER: {
		size_t nf = p->nfuncs;
		if ((e = on_enter(r, ev)))
			return e;
		/* the function on_enter found or made: the last one it looked up */
		uint32_t fi = r->last_func, rk = j->rank[ev->thread];
		if (p->nfuncs > nf) {
			if (ht_util_grow((void **)&j->fkey, &j->cap_fkey, p->nfuncs, sizeof(*j->fkey)))
				return -ENOMEM;
			j->fkey[fi] = (struct fkey){ rk, th->enters };
		} else if (rk < j->fkey[fi].rank) {
			/* its first call in the thread replayed first */
			j->fkey[fi] = (struct fkey){ rk, th->enters };
			p->funcs[fi].first_time = ev->time;
		}
		break;
	}
	case HT_EV_EXIT:
		th->exits++;
		if (r->depth || r->folded)
			close_top(r, ev->time, false);
		else
			th->unmatched_exits++; /* entered while recording was off */
		break;
	case HT_EV_ALLOC:
	case HT_EV_REALLOC: /* its free half came first, as a FREE */
		on_alloc(r, ev);
		break;
	case HT_EV_ENABLE:
		if (ev->size)
			th->switches_on++;
		else
			th->switches_off++;
		p->switches++;
		break;
	default:
		break;
	}
	return 0;
}

static const job_t *sort_job;

static int func_order_cmp(const void *a, const void *b)
{
	const struct fkey *x = &sort_job->fkey[*(const uint32_t *)a];
	const struct fkey *y = &sort_job->fkey[*(const uint32_t *)b];
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->ord < y->ord ? -1 : x->ord > y->ord;
}

/* Number the functions in the order a replay of one thread after the
 * other would have met them, and rebuild the lookups over the new
 * numbers. */
static int renumber_funcs(job_t *j)
{
	ht_fn_profile_t *p = j->p;
	if (p->nfuncs < 2)
		return 0;
	uint32_t *order = malloc(p->nfuncs * sizeof(*order));
	uint32_t *to = malloc(p->nfuncs * sizeof(*to));
	ht_fn_func_t *funcs = malloc(p->nfuncs * sizeof(*funcs));
	if (!order || !to || !funcs) {
		free(order);
		free(to);
		free(funcs);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < p->nfuncs; i++)
		order[i] = i;
	sort_job = j;
	qsort(order, p->nfuncs, sizeof(*order), func_order_cmp);
	for (uint32_t i = 0; i < p->nfuncs; i++) {
		to[order[i]] = i;
		funcs[i] = p->funcs[order[i]];
	}
	memcpy(p->funcs, funcs, p->nfuncs * sizeof(*funcs));
	for (size_t i = 0; i < p->nnodes; i++)
		if (p->nodes[i].func != HT_FN_NONE)
			p->nodes[i].func = to[p->nodes[i].func];
	free(order);
	free(to);
	free(funcs);
	/* the tables hash the numbers: rebuilt at their sizes */
	p->node_tab_cap /= 2;
	p->func_tab_cap /= 2;
	return node_tab_grow(p) || func_tab_grow(p) ? -ENOMEM : 0;
}

static void sum_inclusive(ht_fn_profile_t *p);

static int fn_end(void *ctx)
{
	job_t *j = ctx;
	ht_fn_profile_t *p = j->p;
	/* calls still open: closed at the thread's last event */
	for (size_t i = 0; i < p->nthreads; i++) {
		replay_t *r = j->th[p->threads[i].thread];
		while (r->depth || r->folded)
			close_top(r, r->th->last_time, true);
	}
	int e = renumber_funcs(j);
	if (!e)
		sum_inclusive(p);
	return e;
}

static void fn_fini(void *ctx)
{
	job_t *j = ctx;
	for (size_t i = 0; j->th && i < j->t->nthreads; i++)
		free(j->th[i]);
	free(j->th);
	free(j->seen);
	free(j->rank);
	free(j->fkey);
	free(j);
}

/* heap_* = own + children's heap_*: children always come after their
 * parent in nodes[], so one backward pass sums every subtree. */
static void sum_inclusive(ht_fn_profile_t *p)
{
	for (size_t i = 0; i < p->nnodes; i++) {
		p->nodes[i].heap_bytes = p->nodes[i].own_bytes;
		p->nodes[i].heap_allocs = p->nodes[i].own_allocs;
	}
	for (size_t i = p->nnodes; i-- > 0;) {
		const ht_fn_node_t *n = &p->nodes[i];
		if (n->parent == HT_FN_NONE)
			continue;
		p->nodes[n->parent].heap_bytes += n->heap_bytes;
		p->nodes[n->parent].heap_allocs += n->heap_allocs;
	}
	/* a root spans its thread: its total is the thread's recorded time */
	for (size_t i = 0; i < p->nthreads; i++) {
		ht_fn_node_t *root = &p->nodes[p->threads[i].root];
		root->total_ns = p->threads[i].last_time - p->threads[i].first_time;
	}
}

int ht_fn_attach(struct ht_pass *ps, const ht_trace_t *t, ht_fn_profile_t **out)
{
	*out = NULL;
	ht_fn_profile_t *p = calloc(1, sizeof(*p));
	job_t *j = calloc(1, sizeof(*j));
	if (!p || !j) {
		free(p);
		free(j);
		return -ENOMEM;
	}
	p->trace = t;
	j->p = p;
	j->t = t;
	size_t want = 0, n = t->nthreads ? t->nthreads : 1;
	for (size_t i = 0; i < t->nthreads; i++)
		want += t->threads[i].nfn_events > 0;
	p->threads = calloc(want ? want : 1, sizeof(*p->threads));
	j->th = calloc(n, sizeof(*j->th));
	j->seen = calloc(n, sizeof(*j->seen));
	j->rank = calloc(n, sizeof(*j->rank));
	int e = -ENOMEM;
	if (!p->threads || !j->th || !j->seen || !j->rank)
		goto fail;
	/* the main thread (tid == pid) first, then the others as they came */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < t->nthreads; i++) {
			if (!(t->threads[i].nfn_events > 0 && (t->threads[i].tid == t->pid) == !pass))
				continue;
			ht_fn_thread_t *th = &p->threads[p->nthreads];
			memset(th, 0, sizeof(*th));
			th->thread = (uint32_t)i;
			if ((e = node_new(p, HT_FN_NONE, HT_FN_NONE, (uint32_t)p->nthreads, 0, 0,
					  &th->root)))
				goto fail;
			replay_t *r = calloc(1, sizeof(*r));
			if (!r) {
				e = -ENOMEM;
				goto fail;
			}
			r->p = p;
			r->th = th;
			j->th[i] = r;
			j->rank[i] = (uint32_t)p->nthreads++;
		}
	}
	/* a trace without function events merges nothing for the profile */
	ht_pass_consumer_t c = { p->nthreads ? HT_MERGE_FUNCTIONS : 0, p->nthreads > 0, false,
				 fn_event, fn_end, fn_fini, j, false };
	if ((e = ht_pass_add(ps, &c))) {
		ht_fn_free(p);
		return e;
	}
	*out = p;
	return 0;
fail:
	fn_fini(j);
	ht_fn_free(p);
	return e;
}

int ht_fn_build(const ht_trace_t *t, ht_fn_profile_t **out)
{
	*out = NULL;
	ht_pass_t *ps;
	ht_fn_profile_t *p = NULL;
	int e = ht_pass_new(t, &ps);
	if (e)
		return e;
	if (!(e = ht_fn_attach(ps, t, &p)) && (e = ht_pass_run(ps))) {
		ht_fn_free(p);
		p = NULL;
	}
	ht_pass_free(ps);
	*out = p;
	return e;
}

void ht_fn_free(ht_fn_profile_t *p)
{
	if (!p)
		return;
	free(p->nodes);
	free(p->funcs);
	free(p->threads);
	free(p->node_tab);
	free(p->func_tab);
	free(p);
}

/* ---- orderings -------------------------------------------------------------------- */

/* qsort has no context argument: the comparators read these (the CLI is
 * single-threaded). */
static const ht_fn_profile_t *sort_p;
static bool sort_by_count;

static int func_cmp(const void *a, const void *b)
{
	const ht_fn_func_t *x = &sort_p->funcs[*(const size_t *)a];
	const ht_fn_func_t *y = &sort_p->funcs[*(const size_t *)b];
	uint64_t kx = sort_by_count ? x->own_allocs : x->own_bytes;
	uint64_t ky = sort_by_count ? y->own_allocs : y->own_bytes;
	uint64_t ox = sort_by_count ? x->own_bytes : x->own_allocs;
	uint64_t oy = sort_by_count ? y->own_bytes : y->own_allocs;
	if (kx != ky)
		return kx > ky ? -1 : 1;
	if (ox != oy)
		return ox > oy ? -1 : 1;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

size_t ht_fn_sort_funcs(const ht_fn_profile_t *p, bool by_count, size_t *idx)
{
	size_t n = 0;
	for (size_t i = 0; i < p->nfuncs; i++)
		if (by_count ? p->funcs[i].own_allocs : p->funcs[i].own_bytes)
			idx[n++] = i;
	sort_p = p;
	sort_by_count = by_count;
	qsort(idx, n, sizeof(*idx), func_cmp);
	return n;
}

static int node_cmp(const void *a, const void *b)
{
	const ht_fn_node_t *x = &sort_p->nodes[*(const uint32_t *)a];
	const ht_fn_node_t *y = &sort_p->nodes[*(const uint32_t *)b];
	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	if (x->first_time != y->first_time)
		return x->first_time < y->first_time ? -1 : 1;
	uint32_t ia = *(const uint32_t *)a, ib = *(const uint32_t *)b;
	return (ia > ib) - (ia < ib);
}

long ht_fn_children(const ht_fn_profile_t *p, uint32_t n, uint32_t **kids, size_t *cap)
{
	size_t k = 0;
	for (uint32_t c = p->nodes[n].first_child; c != HT_FN_NONE; c = p->nodes[c].next_sibling) {
		if (ht_util_grow((void **)kids, cap, k + 1, sizeof(**kids)))
			return -ENOMEM;
		(*kids)[k++] = c;
	}
	sort_p = p;
	if (k > 1)
		qsort(*kids, k, sizeof(**kids), node_cmp);
	return (long)k;
}

/* Add node ni's total to its function unless the function is already on
 * the path above it (on[f]: its calls on the path), then its children.
 * Depth is bounded by HT_FN_MAX_DEPTH. */
static void flat_walk(const ht_fn_profile_t *p, uint32_t ni, uint64_t *total, uint32_t *on)
{
	const ht_fn_node_t *n = &p->nodes[ni];
	bool fn = n->func != HT_FN_NONE;
	if (fn) {
		if (!on[n->func])
			total[n->func] += n->total_ns;
		on[n->func]++;
	}
	for (uint32_t c = n->first_child; c != HT_FN_NONE; c = p->nodes[c].next_sibling)
		flat_walk(p, c, total, on);
	if (fn)
		on[n->func]--;
}

static const uint64_t *flat_total;

static int flat_cmp(const void *a, const void *b)
{
	size_t ia = *(const size_t *)a, ib = *(const size_t *)b;
	const ht_fn_func_t *x = &sort_p->funcs[ia], *y = &sort_p->funcs[ib];
	if (x->self_ns != y->self_ns)
		return x->self_ns > y->self_ns ? -1 : 1;
	if (flat_total[ia] != flat_total[ib])
		return flat_total[ia] > flat_total[ib] ? -1 : 1;
	if (x->calls != y->calls)
		return x->calls > y->calls ? -1 : 1;
	return (ia > ib) - (ia < ib);
}

int ht_fn_flat(const ht_fn_profile_t *p, uint64_t *total, size_t *idx)
{
	uint32_t *on = calloc(p->nfuncs ? p->nfuncs : 1, sizeof(*on));
	if (!on)
		return -ENOMEM;
	memset(total, 0, p->nfuncs * sizeof(*total));
	for (size_t i = 0; i < p->nthreads; i++)
		flat_walk(p, p->threads[i].root, total, on);
	free(on);
	for (size_t i = 0; i < p->nfuncs; i++)
		idx[i] = i;
	sort_p = p;
	flat_total = total;
	qsort(idx, p->nfuncs, sizeof(*idx), flat_cmp);
	return 0;
}
