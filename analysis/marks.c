/* marks.c - replay TAG and PHASE events into per-tag and per-phase figures
 * (marks.h says what each figure means).
 *
 * One consumer of a pass (analysis/pass.h) with HT_MERGE_MARKS. Live blocks are
 * the pass's, each carrying its tag in the field the pass leaves to one
 * consumer; a block is counted under its tag when it dies, so a retag
 * moves it.
 *
 * "Peak inside" needs, when a phase ends, the highest heap since it began.
 * Updating every open phase on every allocation costs O(open phases) per
 * event; instead the open entries are grouped in segments by begin order
 * (a segment holds consecutive begins), each segment keeping the highest
 * heap since its first begin. Allocations raise only the newest segment;
 * a segment whose maximum is not above the newer one's merges into it (the
 * older entries saw everything the newer did), so maxima strictly decrease
 * from oldest to newest and the highest heap since any begin is its
 * segment's maximum: O(1) per allocation, O(log n) per end.
 */
#include "analysis/marks.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/model.h"
#include "analysis/pass.h"
#include "trace_format.h"

#define NONE UINT32_MAX

/* ---- names -------------------------------------------------------------------- */

/* A copy of the trace's name for id, or "#ID" when the trace lost it. */
static char *name_copy(const ht_trace_t *t, uint64_t id)
{
	const char *s = ht_trace_name(t, id);
	char tmp[32];
	if (!s) {
		snprintf(tmp, sizeof(tmp), "#%" PRIu64, id);
		s = tmp;
	}
	return strdup(s);
}

static int tag_for(ht_marks_t *mk, uint64_t name_id, uint32_t *out)
{
	uint32_t i = ht_map_get(&mk->tag_idx, name_id);
	if (i != HT_MAP_NONE) {
		*out = i;
		return 0;
	}
	if (mk->ntags >= NONE - 1 ||
	    ht_util_grow((void **)&mk->tags, &mk->cap_tags, mk->ntags + 1, sizeof(*mk->tags)))
		return -ENOMEM;
	ht_tag_stat_t *g = &mk->tags[mk->ntags];
	memset(g, 0, sizeof(*g));
	g->name_id = name_id;
	g->name = name_copy(mk->trace, name_id);
	if (!g->name || ht_map_put(&mk->tag_idx, name_id, (uint32_t)mk->ntags)) {
		free(g->name);
		return -ENOMEM;
	}
	*out = (uint32_t)mk->ntags++;
	return 0;
}

static int phase_for(ht_marks_t *mk, uint64_t name_id, uint64_t time, uint32_t *out)
{
	uint32_t i = ht_map_get(&mk->phase_idx, name_id);
	if (i != HT_MAP_NONE) {
		*out = i;
		return 0;
	}
	if (mk->nphases >= NONE - 1 || ht_util_grow((void **)&mk->phases, &mk->cap_phases,
						     mk->nphases + 1, sizeof(*mk->phases)))
		return -ENOMEM;
	ht_phase_stat_t *p = &mk->phases[mk->nphases];
	memset(p, 0, sizeof(*p));
	p->name_id = name_id;
	p->first_time = time;
	p->name = name_copy(mk->trace, name_id);
	if (!p->name || ht_map_put(&mk->phase_idx, name_id, (uint32_t)mk->nphases)) {
		free(p->name);
		return -ENOMEM;
	}
	*out = (uint32_t)mk->nphases++;
	return 0;
}

/* ---- replay state -------------------------------------------------------------- */

/* One open phase of a thread. */
typedef struct open_phase {
	uint32_t phase;	   /* index into phases */
	uint64_t serial;   /* begin number: finds its segment */
	uint64_t heap_at;  /* heap when it began */
	double wheap_at;   /* and the estimated heap (sampled runs) */
} open_phase_t;

typedef struct thread_state {
	open_phase_t *open; /* grown as needed, up to HT_MARKS_MAX_DEPTH */
	size_t nopen, cap_open;
	uint64_t overflow; /* begins past the cap still open */
	/* the tag of the block the last realloc's free half took away */
	uint64_t realloc_old;
	uint32_t realloc_tag;
} thread_state_t;

/* Consecutive begins sharing "highest heap since the first of them". */
typedef struct segment {
	uint64_t first_serial;
	uint64_t max;
	uint64_t open; /* entries of this segment still open */
} segment_t;

typedef struct replay {
	ht_marks_t *mk;
	double rate; /* the trace's sample rate; 0 = exact */
	ht_pass_t *pass; /* the live blocks (their tag field is ours) */
	thread_state_t *th;
	segment_t *seg;
	size_t nseg, cap_seg;
	uint64_t heap;
	double wheap; /* the heap the blocks stand for (= heap unless sampled) */
	uint64_t next_serial;
	uint64_t nallocs; /* allocations so far: stamps phase counting */
	size_t mk_nthreads; /* entries of th */
} replay_t;

/* Merge the newest segment into older ones while they are not higher. */
static void seg_normalize(replay_t *r)
{
	while (r->nseg >= 2 && r->seg[r->nseg - 2].max <= r->seg[r->nseg - 1].max) {
		r->seg[r->nseg - 2].max = r->seg[r->nseg - 1].max;
		r->seg[r->nseg - 2].open += r->seg[r->nseg - 1].open;
		r->nseg--;
	}
}

static void seg_raise(replay_t *r)
{
	if (!r->nseg)
		return;
	if (r->heap > r->seg[r->nseg - 1].max)
		r->seg[r->nseg - 1].max = r->heap;
	seg_normalize(r);
}

/* Highest heap since the begin numbered serial; closes that entry. */
static uint64_t seg_close(replay_t *r, uint64_t serial)
{
	/* last segment whose first serial <= serial */
	size_t lo = 0, hi = r->nseg;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (r->seg[mid].first_serial <= serial)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return r->heap; /* cannot happen: every open entry has a segment */
	segment_t *s = &r->seg[lo - 1];
	uint64_t max = s->max;
	/* an empty segment can go: older ones already hold a higher maximum */
	if (--s->open == 0) {
		memmove(s, s + 1, (r->nseg - lo) * sizeof(*s));
		r->nseg--;
	}
	return max;
}

static uint64_t rounded(double x)
{
	return x > 0 ? (uint64_t)llround(x) : 0;
}

static int first_cmp(const void *a, const void *b)
{
	const ht_tag_stack_t *x = a, *y = b;
	if (x->first_time != y->first_time)
		return x->first_time < y->first_time ? -1 : 1;
	return x->stack_id < y->stack_id ? -1 : x->stack_id > y->stack_id;
}

/* A block leaves the heap (freed, dropped, or at the end with live set):
 * it counts under the tag it carries now. */
static int block_done(replay_t *r, const ht_live_t *b, bool live)
{
	ht_marks_t *mk = r->mk;
	ht_tag_stat_t *g = &mk->tags[b->tag];
	uint64_t stack_id = ht_pass_site_stack(r->pass, b->site);
	uint32_t si = ht_map_get(&g->stack_idx, stack_id);
	if (si == HT_MAP_NONE) {
		if (g->nstacks >= NONE - 1 ||
		    ht_util_grow((void **)&g->stacks, &g->cap_stacks, g->nstacks + 1,
				 sizeof(*g->stacks)) ||
		    ht_map_put(&g->stack_idx, stack_id, (uint32_t)g->nstacks))
			return -ENOMEM;
		si = (uint32_t)g->nstacks++;
		memset(&g->stacks[si], 0, sizeof(g->stacks[si]));
		g->stacks[si].stack_id = stack_id;
		g->stacks[si].first_time = b->time;
	}
	ht_tag_stack_t *st = &g->stacks[si];
	double w = b->w, add[4] = { w, w * (double)b->size, live ? w : 0,
						 live ? w * (double)b->size : 0 };
	for (int k = 0; k < 4; k++) {
		g->est[k] += add[k];
		st->est[k] += add[k];
	}
	g->allocations++;
	g->bytes_allocated += b->size;
	st->allocations++;
	st->bytes_allocated += b->size;
	if (b->time < st->first_time)
		st->first_time = b->time;
	if (live) {
		g->live_blocks++;
		g->live_bytes += b->size;
		st->live_blocks++;
		st->live_bytes += b->size;
	}
	return 0;
}

static int do_free(replay_t *r, const ht_event_t *ev, const ht_heap_step_t *st)
{
	const ht_live_t *b = st->gone;
	thread_state_t *ts = &r->th[ev->thread];
	if (ev->from_realloc) {
		ts->realloc_old = ev->addr;
		ts->realloc_tag = b ? b->tag : NONE;
	}
	if (!b)
		return 0; /* never seen allocated: ignored, as the model does */
	r->heap -= b->size;
	r->wheap -= b->w * (double)b->size;
	return block_done(r, b, false);
}

static int do_alloc(replay_t *r, const ht_event_t *ev, const ht_heap_step_t *st)
{
	ht_marks_t *mk = r->mk;
	thread_state_t *ts = &r->th[ev->thread];
	int e;
	const ht_live_t *old = st->gone;
	if (old) {
		/* its free went unrecorded: the model drops it, neither a free
		 * nor a leak; it still was an allocation of its tag */
		r->heap -= old->size;
		r->wheap -= old->w * (double)old->size;
		if ((e = block_done(r, old, false)))
			return e;
	}
	uint32_t tag = HT_MARKS_UNTAGGED;
	if (ev->type == HT_EV_REALLOC && ts->realloc_tag != NONE &&
	    ts->realloc_old == ev->old_addr)
		tag = ts->realloc_tag; /* the object grew: it keeps its tag */
	ts->realloc_tag = NONE;
	*ht_pass_tag(r->pass, st->block->id) = tag;
	double w = st->block->w;
	r->heap += ev->size;
	r->wheap += w * (double)ev->size;
	mk->allocations++;
	mk->bytes_allocated += ev->size;
	mk->est[0] += w;
	mk->est[1] += w * (double)ev->size;
	r->nallocs++;
	/* inclusive: every phase open on this thread, once per name */
	for (size_t i = 0; i < ts->nopen; i++) {
		ht_phase_stat_t *p = &mk->phases[ts->open[i].phase];
		if (p->counted_at == r->nallocs)
			continue;
		p->counted_at = r->nallocs;
		p->allocations++;
		p->bytes_allocated += ev->size;
		p->est[0] += w;
		p->est[1] += w * (double)ev->size;
	}
	seg_raise(r);
	return 0;
}

static int do_tag(replay_t *r, const ht_event_t *ev)
{
	ht_marks_t *mk = r->mk;
	mk->tag_events++;
	ht_live_t b;
	if (!ht_pass_find(r->pass, ev->addr, &b)) {
		mk->tags_ignored++;
		return 0;
	}
	uint32_t g;
	int e = tag_for(mk, ev->name_id, &g);
	if (e)
		return e;
	if (b.tag != HT_MARKS_UNTAGGED && b.tag != g)
		mk->retagged++;
	*ht_pass_tag(r->pass, b.id) = g;
	return 0;
}

static void close_entry(replay_t *r, const open_phase_t *o)
{
	ht_phase_stat_t *p = &r->mk->phases[o->phase];
	uint64_t max = seg_close(r, o->serial);
	/* in unsigned arithmetic: a damaged trace's sizes may wrap, never UB;
	 * sampled: the estimate (the peak inside stays the recorded heap's) */
	uint64_t net = r->heap - o->heap_at;
	if (r->rate > 0)
		net = (uint64_t)(int64_t)llround(r->wheap - o->wheap_at);
	p->net_live_bytes = (int64_t)((uint64_t)p->net_live_bytes + net);
	if (max >= o->heap_at && max - o->heap_at > p->peak_inside)
		p->peak_inside = max - o->heap_at;
}

static int do_phase(replay_t *r, const ht_event_t *ev)
{
	ht_marks_t *mk = r->mk;
	thread_state_t *ts = &r->th[ev->thread];
	mk->phase_events++;
	if (ev->size) { /* begin */
		uint32_t pi;
		int e = phase_for(mk, ev->name_id, ev->time, &pi);
		if (e)
			return e;
		mk->phases[pi].entered++;
		if (ts->nopen == HT_MARKS_MAX_DEPTH) {
			ts->overflow++;
			mk->depth_capped = true;
			return 0;
		}
		if (ht_util_grow((void **)&r->seg, &r->cap_seg, r->nseg + 1, sizeof(*r->seg)) ||
		    ht_util_grow((void **)&ts->open, &ts->cap_open, ts->nopen + 1,
				 sizeof(*ts->open)))
			return -ENOMEM;
		uint64_t serial = ++r->next_serial;
		r->seg[r->nseg++] = (segment_t){ serial, r->heap, 1 };
		seg_normalize(r);
		ts->open[ts->nopen++] = (open_phase_t){ pi, serial, r->heap, r->wheap };
		return 0;
	}
	/* end: begins past the cap are the innermost, so they pair first */
	if (ts->overflow) {
		ts->overflow--;
		return 0;
	}
	uint32_t pi = ht_map_get(&mk->phase_idx, ev->name_id);
	for (size_t i = ts->nopen; pi != HT_MAP_NONE && i-- > 0;) {
		if (ts->open[i].phase != pi)
			continue;
		close_entry(r, &ts->open[i]);
		memmove(&ts->open[i], &ts->open[i + 1], (ts->nopen - i - 1) * sizeof(ts->open[0]));
		ts->nopen--;
		return 0;
	}
	mk->unmatched_ends++;
	return 0;
}

/* ---- build ------------------------------------------------------------------------ */

static int marks_event(void *ctx, const ht_event_t *ev, const ht_heap_step_t *st)
{
	replay_t *r = ctx;
	switch (ev->type) {
	case HT_EV_FREE:
		return do_free(r, ev, st);
	case HT_EV_ALLOC:
	case HT_EV_REALLOC:
		return do_alloc(r, ev, st);
	case HT_EV_TAG:
		return do_tag(r, ev);
	case HT_EV_PHASE:
		return do_phase(r, ev);
	default:
		return 0;
	}
}

static void use_estimates(ht_marks_t *mk);

static int marks_end(void *ctx)
{
	replay_t *r = ctx;
	/* the end of the trace closes what is still open */
	ht_marks_t *mk = r->mk;
	int e;
	for (size_t i = 0; i < mk->trace->nthreads; i++) {
		thread_state_t *ts = &r->th[i];
		while (ts->nopen) {
			const open_phase_t *o = &ts->open[--ts->nopen];
			mk->phases[o->phase].open_at_end++;
			close_entry(r, o);
		}
		ts->overflow = 0;
	}
	size_t *seen = malloc((mk->ntags ? mk->ntags : 1) * sizeof(*seen));
	if (!seen)
		return -ENOMEM;
	for (size_t i = 0; i < mk->ntags; i++)
		seen[i] = mk->tags[i].nstacks;
	size_t nid = ht_pass_live_ids(r->pass);
	ht_live_t b;
	for (size_t i = 0; i < nid; i++)
		if (ht_pass_live_get(r->pass, i, &b) && (e = block_done(r, &b, true))) {
			free(seen);
			return e;
		}
	/* stacks first met among the blocks live at the end: in the order of
	 * their first allocation, not of the table's records */
	for (size_t i = 0; i < mk->ntags; i++) {
		ht_tag_stat_t *g = &mk->tags[i];
		if (g->nstacks - seen[i] < 2)
			continue;
		qsort(g->stacks + seen[i], g->nstacks - seen[i], sizeof(*g->stacks), first_cmp);
		for (size_t k = seen[i]; k < g->nstacks; k++)
			(void)ht_map_put(&g->stack_idx, g->stacks[k].stack_id, (uint32_t)k); /* known key */
	}
	free(seen);
	if (r->rate)
		use_estimates(mk);
	return 0;
}

/* A sampled trace: the figures become their rounded estimates (the heap
 * of the phases' peaks stays in recorded bytes: a known limit). */
static void use_estimates(ht_marks_t *mk)
{
	for (size_t i = 0; i < mk->ntags; i++) {
		ht_tag_stat_t *g = &mk->tags[i];
		g->allocations = rounded(g->est[0]);
		g->bytes_allocated = rounded(g->est[1]);
		g->live_blocks = rounded(g->est[2]);
		g->live_bytes = rounded(g->est[3]);
		for (size_t j = 0; j < g->nstacks; j++) {
			ht_tag_stack_t *st = &g->stacks[j];
			st->allocations = rounded(st->est[0]);
			st->bytes_allocated = rounded(st->est[1]);
			st->live_blocks = rounded(st->est[2]);
			st->live_bytes = rounded(st->est[3]);
		}
	}
	for (size_t i = 0; i < mk->nphases; i++) {
		mk->phases[i].allocations = rounded(mk->phases[i].est[0]);
		mk->phases[i].bytes_allocated = rounded(mk->phases[i].est[1]);
	}
	mk->allocations = rounded(mk->est[0]);
	mk->bytes_allocated = rounded(mk->est[1]);
}

static void marks_fini(void *ctx)
{
	replay_t *r = ctx;
	for (size_t i = 0; r->th && i < r->mk_nthreads; i++)
		free(r->th[i].open);
	free(r->th);
	free(r->seg);
	free(r);
}

int ht_marks_attach(struct ht_pass *p, const ht_trace_t *t, ht_marks_t **out)
{
	*out = NULL;
	ht_marks_t *mk = calloc(1, sizeof(*mk));
	replay_t *r = calloc(1, sizeof(*r));
	if (!mk || !r) {
		free(mk);
		free(r);
		return -ENOMEM;
	}
	mk->trace = t;
	r->mk = mk;
	r->pass = p;
	r->mk_nthreads = t->nthreads;
	/* row 0: untagged, never in tag_idx (name ids start at 1, but a
	 * damaged trace may use 0: it then gets a row of its own) */
	if (ht_util_grow((void **)&mk->tags, &mk->cap_tags, 1, sizeof(*mk->tags)))
		goto fail;
	memset(&mk->tags[0], 0, sizeof(mk->tags[0]));
	if (!(mk->tags[0].name = strdup("untagged")))
		goto fail;
	mk->ntags = 1;
	r->th = calloc(t->nthreads ? t->nthreads : 1, sizeof(*r->th));
	if (!r->th)
		goto fail;
	for (size_t i = 0; i < t->nthreads; i++)
		r->th[i].realloc_tag = NONE;
	r->rate = (double)t->sample_rate;
	ht_pass_consumer_t c = { HT_MERGE_MARKS, true, true, marks_event, marks_end, marks_fini, r,
				 true };
	int e = ht_pass_add(p, &c); /* r is freed on failure */
	if (e) {
		ht_marks_free(mk);
		return e;
	}
	*out = mk;
	return 0;
fail:
	marks_fini(r);
	ht_marks_free(mk);
	return -ENOMEM;
}

int ht_marks_build(const ht_trace_t *t, ht_marks_t **out)
{
	*out = NULL;
	ht_pass_t *p;
	ht_marks_t *mk = NULL;
	int e = ht_pass_new(t, &p);
	if (e)
		return e;
	if (!(e = ht_marks_attach(p, t, &mk)) && (e = ht_pass_run(p))) {
		ht_marks_free(mk);
		mk = NULL;
	}
	ht_pass_free(p);
	*out = mk;
	return e;
}

void ht_marks_free(ht_marks_t *mk)
{
	if (!mk)
		return;
	for (size_t i = 0; i < mk->ntags; i++) {
		free(mk->tags[i].name);
		free(mk->tags[i].stacks);
		ht_map_free(&mk->tags[i].stack_idx);
	}
	free(mk->tags);
	for (size_t i = 0; i < mk->nphases; i++)
		free(mk->phases[i].name);
	free(mk->phases);
	ht_map_free(&mk->tag_idx);
	ht_map_free(&mk->phase_idx);
	free(mk);
}

/* ---- queries ------------------------------------------------------------------------ */

static int tag_cmp(const void *a, const void *b, void *arg)
{
	const ht_tag_stat_t *tags = arg;
	size_t ia = *(const size_t *)a, ib = *(const size_t *)b;
	const ht_tag_stat_t *x = &tags[ia], *y = &tags[ib];
	if ((ia == HT_MARKS_UNTAGGED) != (ib == HT_MARKS_UNTAGGED))
		return ia == HT_MARKS_UNTAGGED ? 1 : -1;
	if (x->bytes_allocated != y->bytes_allocated)
		return x->bytes_allocated > y->bytes_allocated ? -1 : 1;
	if (x->allocations != y->allocations)
		return x->allocations > y->allocations ? -1 : 1;
	int c = strcmp(x->name, y->name);
	return c ? c : (ia < ib ? -1 : ia > ib);
}

size_t ht_marks_sort_tags(const ht_marks_t *mk, size_t *idx)
{
	size_t n = 0;
	for (size_t i = 0; i < mk->ntags; i++)
		if (mk->tags[i].allocations)
			idx[n++] = i;
	qsort_r(idx, n, sizeof(*idx), tag_cmp, mk->tags);
	return n;
}

static int phase_cmp(const void *a, const void *b, void *arg)
{
	const ht_phase_stat_t *ph = arg;
	size_t ia = *(const size_t *)a, ib = *(const size_t *)b;
	const ht_phase_stat_t *x = &ph[ia], *y = &ph[ib];
	if (x->bytes_allocated != y->bytes_allocated)
		return x->bytes_allocated > y->bytes_allocated ? -1 : 1;
	if (x->first_time != y->first_time)
		return x->first_time < y->first_time ? -1 : 1;
	return ia < ib ? -1 : ia > ib;
}

size_t ht_marks_sort_phases(const ht_marks_t *mk, size_t *idx)
{
	for (size_t i = 0; i < mk->nphases; i++)
		idx[i] = i;
	qsort_r(idx, mk->nphases, sizeof(*idx), phase_cmp, mk->phases);
	return mk->nphases;
}

const ht_tag_stat_t *ht_marks_find_tag(const ht_marks_t *mk, const char *name)
{
	/* a real tag wins over the untagged row's label */
	for (size_t i = 1; i < mk->ntags; i++)
		if (!strcmp(mk->tags[i].name, name))
			return &mk->tags[i];
	return !strcmp(name, "untagged") ? &mk->tags[HT_MARKS_UNTAGGED] : NULL;
}

void ht_marks_fold_sites(ht_marks_t *mk, const ht_model_t *m)
{
	for (size_t i = 0; i < mk->ntags; i++) {
		ht_tag_stat_t *g = &mk->tags[i];
		size_t n = 0;
		/* the map is rebuilt in place: an entry only ever moves down */
		ht_map_free(&g->stack_idx);
		for (size_t k = 0; k < g->nstacks; k++) {
			ht_tag_stack_t s = g->stacks[k];
			uint32_t si = ht_model_site_of(m, s.stack_id);
			if (si != HT_MAP_NONE && m->sites[si].stack_id)
				s.stack_id = m->sites[si].stack_id;
			uint32_t j = ht_map_get(&g->stack_idx, s.stack_id);
			if (j == HT_MAP_NONE) {
				/* out of memory: a later entry of the site stays
				 * apart, nothing is lost */
				(void)ht_map_put(&g->stack_idx, s.stack_id, (uint32_t)n);
				g->stacks[n++] = s;
				continue;
			}
			ht_tag_stack_t *d = &g->stacks[j];
			d->allocations += s.allocations;
			d->bytes_allocated += s.bytes_allocated;
			d->live_blocks += s.live_blocks;
			d->live_bytes += s.live_bytes;
			for (int q = 0; q < 4; q++)
				d->est[q] += s.est[q];
			if (s.first_time < d->first_time)
				d->first_time = s.first_time;
			if (mk->trace->sample_rate) {
				d->allocations = rounded(d->est[0]);
				d->bytes_allocated = rounded(d->est[1]);
				d->live_blocks = rounded(d->est[2]);
				d->live_bytes = rounded(d->est[3]);
			}
		}
		g->nstacks = n;
	}
}
