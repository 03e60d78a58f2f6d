/* model.c - replay merged events into sites and totals.
 *
 * The model is one consumer of a pass (analysis/pass.h), which keeps the live
 * blocks. One pass counts everything, finds the global heap peak and what
 * each site had live at that moment: a new peak only bumps a version, and
 * a site saves its live figures the first time it changes after a peak
 * (site_touch), so no pass stops at the peak to look.
 */
#include "analysis/model.h"
#include "analysis/badfree.h"
#include "analysis/frames.h"
#include "analysis/mapped.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/pass.h"
#include "analysis/resources.h"
#include "trace_format.h"
#include "analysis/util.h"

/* ---- sampling weights (docs/INTERNALS.md; ht_pass_weigh) ------------------------- */

#define weigh ht_pass_weigh
#define round_u64 ht_round_u64

double ht_ci95(double var)
{
	return var > 0 ? 1.96 * sqrt(var) : 0.0;
}

static void est_add(ht_est_t *d, const ht_est_t *s)
{
	d->allocations += s->allocations;
	d->bytes_allocated += s->bytes_allocated;
	d->frees += s->frees;
	d->temporary += s->temporary;
	d->leaked_blocks += s->leaked_blocks;
	d->leaked_bytes += s->leaked_bytes;
	d->peak_bytes += s->peak_bytes;
	d->var_allocations += s->var_allocations;
	d->var_bytes_allocated += s->var_bytes_allocated;
	d->var_leaked_blocks += s->var_leaked_blocks;
	d->var_leaked_bytes += s->var_leaked_bytes;
	d->var_peak_bytes += s->var_peak_bytes;
}

/* ---- time series: buckets (ht_model_timeline) ------------------------------ */

typedef struct tl_ctx {
	ht_timeline_t *tl;
	size_t cur;	      /* bucket of the last event */
	uint64_t rss;	      /* latest RSS sample */
	uint64_t max_so_far;  /* highest heap so far (global) */
	bool moved;	      /* the current bucket saw a heap event */
	double allocs, bytes, frees; /* so far (weighted) */
	ht_replay_fn fn;      /* the caller's own step, or NULL */
	void *fn_ctx;
} tl_ctx_t;

/* Bucket of time t: floor(t * n / span), the last one closed at span. */
static size_t tl_index(const ht_timeline_t *tl, uint64_t t)
{
	unsigned __int128 i = (unsigned __int128)t * tl->n / tl->span_ns;
	return i >= tl->n ? tl->n - 1 : (size_t)i;
}

/* Carry the state at the end of bucket `from` into every bucket up to `to`. */
static void tl_carry(tl_ctx_t *c, size_t to)
{
	ht_timeline_t *tl = c->tl;
	for (; c->cur < to; c->cur++) {
		const ht_tl_bucket_t *p = &tl->b[c->cur];
		ht_tl_bucket_t *q = &tl->b[c->cur + 1];
		q->heap_bytes = q->max_bytes = p->heap_bytes;
		q->heap_blocks = q->max_blocks = p->heap_blocks;
		q->max_time_ns = q->start_ns;
		q->rss_bytes = q->rss_at_max = p->rss_bytes;
	}
}

static void tl_update(tl_ctx_t *c, const ht_event_t *ev, const ht_replay_step_t *st)
{
	ht_timeline_t *tl = c->tl;
	/* still in the current bucket: no division (times never go
	 * backwards in the merge) */
	size_t i = ev->time < tl->b[c->cur].end_ns ? c->cur : tl_index(tl, ev->time);
	if (i > c->cur) {
		tl_carry(c, i);
		c->moved = false;
	}
	ht_tl_bucket_t *b = &tl->b[c->cur];
	switch (ev->type) {
	case HT_EV_RSS:
		c->rss = b->rss_bytes = ev->size;
		tl->rss_samples++;
		if (ev->size > tl->rss_max)
			tl->rss_max = ev->size;
		return;
	case HT_EV_FREE:
		if (!st->ignored) {
			b->frees += st->weight == 1.0 ? 1
						      : round_u64(c->frees + st->weight) -
								round_u64(c->frees);
			c->frees += st->weight;
		}
		break;
	case HT_EV_ALLOC:
	case HT_EV_REALLOC:
		/* differences of rounded running sums: a sampled trace's weights
		 * add up without a rounding error per event. A weight of 1 (every
		 * event of an exact trace) adds 1 and the size to them, whatever
		 * their fractions: the difference is those, without rounding. */
		if (st->weight == 1.0) {
			b->allocations++;
			b->bytes_allocated += ev->size;
		} else {
			b->allocations += round_u64(c->allocs + st->weight) - round_u64(c->allocs);
			b->bytes_allocated +=
				round_u64(c->bytes + st->weight_bytes) - round_u64(c->bytes);
		}
		c->allocs += st->weight;
		c->bytes += st->weight_bytes;
		break;
	default:
		return;
	}
	b->heap_bytes = st->heap_bytes;
	b->heap_blocks = st->heap_blocks;
	/* the bucket's first heap event replaces the carried-in state: a later
	 * lower spike still shows when the slice starts higher */
	if (!c->moved || st->heap_bytes > b->max_bytes) { /* strictly: the first moment */
		c->moved = true;
		b->max_bytes = st->heap_bytes;
		b->max_blocks = st->heap_blocks;
		b->max_time_ns = ev->time;
		b->rss_at_max = c->rss;
	}
	/* the same rule as replay_run: only allocations raise the peak */
	if (ev->type != HT_EV_FREE && st->heap_bytes > c->max_so_far) {
		c->max_so_far = st->heap_bytes;
		tl->peak = c->cur;
		tl->peak_bytes = st->heap_bytes;
		tl->peak_blocks = st->heap_blocks;
		tl->peak_time_ns = ev->time;
	}
}

/* Empty buckets over [0, max(duration, 1)]. Returns 0 or -ENOMEM. */
static int tl_init(ht_timeline_t *tl, size_t nbuckets, uint64_t duration_ns)
{
	memset(tl, 0, sizeof(*tl));
	tl->n = nbuckets;
	tl->span_ns = duration_ns ? duration_ns : 1;
	if (nbuckets > SIZE_MAX / sizeof(*tl->b) || !(tl->b = calloc(nbuckets, sizeof(*tl->b))))
		return -ENOMEM;
	/* bucket i starts at the first integer time t with tl_index(t) == i */
	for (size_t i = 0; i < nbuckets; i++) {
		unsigned __int128 num = (unsigned __int128)i * tl->span_ns;
		tl->b[i].start_ns = (uint64_t)((num + nbuckets - 1) / nbuckets);
		if (i)
			tl->b[i - 1].end_ns = tl->b[i].start_ns;
	}
	tl->b[nbuckets - 1].end_ns = tl->span_ns;
	return 0;
}

/* ---- replay ----------------------------------------------------------------- */

/* A site's live figures at the latest peak (valid once ver == the replay's
 * peak_ver; before that, its live figures have not changed since the peak),
 * and in a sampled trace the running sums the peak's estimates come from. */
typedef struct site_peak {
	uint64_t ver;
	uint64_t bytes, blocks;	    /* live at the peak */
	double est_bytes, var_bytes; /* sampled: live sums of size*w, size^2*var */
	double peak_est_bytes, peak_var_bytes;
} site_peak_t;

typedef struct replay {
	ht_model_t *m;
	ht_pass_t *pass; /* the live blocks, allocation numbers and sites */
	const uint64_t *thread_seq; /* the pass's allocation numbers per thread */
	ht_map_t site_by_stack;
	size_t cap_sites;
	uint32_t *msite; /* the pass's site (one per stack id) -> m->sites */
	size_t cap_msite;
	/* folding sites by frames (ht_model_attach's sym): frames' hash ->
	 * site, colliding hashes probed at hash + 1, + 2, ... */
	ht_symbolizer_t *sym;
	ht_map_t site_by_key;
	ht_frame_t *fa, *fb; /* scratch frames of the new stack and a candidate */
	size_t cap_fa, cap_fb;
	site_peak_t *sp; /* beside m->sites */
	size_t cap_sp;
	uint64_t peak_ver; /* new peaks so far */
	tl_ctx_t *tlc;	   /* timelines folded on the way (m->timelines) */
	size_t ntlc;
	uint64_t cur_bytes, cur_blocks;
	double cur_w;	/* blocks the live samples stand for */
	double cur_est; /* bytes they stand for, unrounded (heap_now) */
	double rate;	/* the trace's sample rate; 0 = exact */
	ht_map_t pool_row; /* pool id -> its current row in m->pools */
	size_t cap_pools, cap_snapshots, cap_checks;
	uint32_t *thread_num; /* per thread: its allocation-number prefix, 0 = none yet */
	uint32_t next_num;
	uint64_t *grow_row[HT_GROWTH_POINTS]; /* live bytes per site at point k */
	size_t grow_len[HT_GROWTH_POINTS], ngrow;
	uint64_t grow_next; /* time of point ngrow: one compare per event */
	uint32_t *remap; /* merge_same_stacks: old site index -> new one */
} replay_t;

static bool str_same(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/* Where a frame whose function is unknown lies: its offset in its module
 * (stable when a library is loaded again at another address), else the
 * address itself. */
static uint64_t frame_offset(const ht_trace_t *t, const ht_frame_t *f, uint64_t when)
{
	long mi = ht_trace_module_for(t, f->address, when);
	return mi >= 0 ? f->address - t->modules[mi].bias : f->address;
}

/* The frames as people read them: function, file, line, module and the
 * inline chain, and for an unknown function its offset in its module. */
static uint64_t frames_hash(const ht_trace_t *t, const ht_frame_t *f, long n, uint64_t when)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ (uint64_t)n;
	for (long i = 0; i < n; i++) {
		h = ht_util_hash64(h ^ ht_fnv1a(f[i].function ? f[i].function : ""));
		h = ht_util_hash64(h ^ ht_fnv1a(f[i].file ? f[i].file : "")) + (uint64_t)f[i].line;
		h = ht_util_hash64(h ^ ht_fnv1a(f[i].module ? f[i].module : "")) + f[i].inlined;
		if (!f[i].function)
			h = ht_util_hash64(h ^ frame_offset(t, &f[i], when));
	}
	return h;
}

static bool frames_same(const ht_trace_t *t, const ht_frame_t *a, uint64_t wa, const ht_frame_t *b,
			uint64_t wb, long n)
{
	for (long i = 0; i < n; i++) {
		if (!str_same(a[i].function, b[i].function) || !str_same(a[i].file, b[i].file) ||
		    a[i].line != b[i].line || a[i].inlined != b[i].inlined ||
		    !str_same(a[i].module, b[i].module))
			return false;
		if (!a[i].function && frame_offset(t, &a[i], wa) != frame_offset(t, &b[i], wb))
			return false;
	}
	return true;
}

/* The site whose frames stack_id's (first allocated at time) are, by
 * r->sym: *out, or HT_MAP_NONE with *key the hash to file a new site
 * under. */
static int site_by_frames(replay_t *r, uint64_t stack_id, uint64_t time, uint32_t *out,
			  uint64_t *key)
{
	ht_model_t *m = r->m;
	const ht_trace_t *t = m->trace;
	ht_site_t tmp = { 0 };
	tmp.stack_id = stack_id;
	tmp.stack = ht_trace_stack(t, stack_id);
	tmp.first_time = time;
	long n = ht_model_frames(m, r->sym, &tmp, &r->fa, &r->cap_fa);
	if (n < 0)
		return (int)n;
	uint64_t h = frames_hash(t, r->fa, n, time);
	uint32_t j;
	while ((j = ht_map_get(&r->site_by_key, h)) != HT_MAP_NONE) {
		const ht_site_t *c = &m->sites[j];
		long k = ht_model_frames(m, r->sym, c, &r->fb, &r->cap_fb);
		if (k < 0)
			return (int)k;
		if (k == n && frames_same(t, r->fa, time, r->fb, c->first_time, n))
			break;
		h++;
	}
	*out = j;
	*key = h;
	return 0;
}

/* The model's site of stack_id, made on its first allocation (at time):
 * one per stack id, or with r->sym one per stack as symbolized. */
static int site_for(replay_t *r, uint64_t stack_id, uint64_t time, uint32_t *out)
{
	ht_model_t *m = r->m;
	uint32_t i = ht_map_get(&r->site_by_stack, stack_id);
	if (i != HT_MAP_NONE) {
		*out = i;
		return 0;
	}
	uint64_t key = 0;
	/* a stack the trace does not define has no frames to fold by */
	bool fold = r->sym && stack_id && stack_id != UINT64_MAX && ht_trace_stack(m->trace, stack_id);
	if (fold) {
		int e = site_by_frames(r, stack_id, time, &i, &key);
		if (e)
			return e;
		if (i != HT_MAP_NONE) {
			if (time < m->sites[i].first_time) /* summary rows come in any order */
				m->sites[i].first_time = time;
			*out = i;
			return ht_map_put(&r->site_by_stack, stack_id, i);
		}
	}
	if (m->nsites >= UINT32_MAX - 1 ||
	    ht_util_grow((void **)&m->sites, &r->cap_sites, m->nsites + 1, sizeof(*m->sites)) ||
	    ht_util_grow((void **)&r->sp, &r->cap_sp, m->nsites + 1, sizeof(*r->sp)) ||
	    ht_map_put(&r->site_by_stack, stack_id, (uint32_t)m->nsites) ||
	    (fold && ht_map_put(&r->site_by_key, key, (uint32_t)m->nsites)))
		return -ENOMEM;
	memset(&r->sp[m->nsites], 0, sizeof(*r->sp));
	r->sp[m->nsites].ver = r->peak_ver; /* nothing live at any peak so far */
	ht_site_t *s = &m->sites[m->nsites];
	memset(s, 0, sizeof(*s));
	s->stack_id = stack_id;
	s->stack = stack_id ? ht_trace_stack(m->trace, stack_id) : NULL;
	s->first_time = time;
	*out = (uint32_t)m->nsites++;
	return 0;
}

/* Site si's live figures are about to change: if they have not since the
 * latest peak, they are its figures at the peak. */
static inline void site_touch(replay_t *r, uint32_t si)
{
	site_peak_t *p = &r->sp[si];
	if (p->ver == r->peak_ver)
		return;
	const ht_site_t *s = &r->m->sites[si];
	p->ver = r->peak_ver;
	p->bytes = s->live_bytes;
	p->blocks = s->live_blocks;
	p->peak_est_bytes = p->est_bytes;
	p->peak_var_bytes = p->var_bytes;
}

/* A live block of site si, of size bytes, comes (sign 1) or goes (-1):
 * the sampled estimates' running sums. */
static inline void site_est_live(replay_t *r, uint32_t si, uint64_t size, double sign)
{
	if (!r->rate)
		return;
	double w, var, sz = (double)size;
	weigh(r->rate, size, &w, &var);
	r->sp[si].est_bytes += sign * sz * w;
	r->sp[si].var_bytes += sign * sz * sz * var;
}

/* The live heap: in a sampled trace the running estimate rounded once, so
 * that the timelines' highest point is the totals' peak_heap_bytes (a sum
 * of blocks rounded one by one would drift from it). */
static uint64_t heap_now(const replay_t *r)
{
	return r->rate ? round_u64(r->cur_est) : r->cur_bytes;
}

/* Block b leaves its site's and the heap's live figures. */
static inline __attribute__((always_inline)) void live_leave(replay_t *r, const ht_live_t *b,
								 uint64_t wsize)
{
	uint32_t si = r->msite[b->site];
	site_touch(r, si);
	site_est_live(r, si, b->size, -1);
	ht_site_t *s = &r->m->sites[si];
	s->live_bytes -= wsize;
	s->live_blocks--;
	s->live_w -= b->w;
	r->cur_bytes -= wsize;
	r->cur_blocks--;
	r->cur_w -= b->w;
	r->cur_est -= (double)b->size * b->w;
}

/* A FREE of b (NULL: never seen allocated). Returns the bytes the block
 * stood for (its size unless sampled), *w and *wbytes the blocks and bytes
 * it stood for; UINT64_MAX when it was unknown. */
static uint64_t do_free(replay_t *r, const ht_live_t *b, double *w, double *wbytes)
{
	ht_totals_t *tot = &r->m->totals;
	if (!b) {
		tot->ignored_frees++;
		return UINT64_MAX;
	}
	uint64_t size = ht_live_wsize(b, r->rate);
	*w = b->w;
	*wbytes = (double)b->size * b->w;
	live_leave(r, b, size);
	ht_site_t *s = &r->m->sites[r->msite[b->site]];
	{
		tot->frees++;
		s->frees++;
		bool temporary = r->thread_seq[b->thread] == b->seq;
		if (temporary) {
			tot->temporary++;
			s->temporary++;
		}
		if (r->rate) { /* estimates: only a sampled trace has any */
			tot->est.frees += b->w;
			s->est.frees += b->w;
			if (temporary) {
				tot->est.temporary += b->w;
				s->est.temporary += b->w;
			}
		}
	}
	return size;
}

static int do_alloc(replay_t *r, const ht_event_t *ev, const ht_heap_step_t *st)
{
	ht_totals_t *tot = &r->m->totals;
	if (st->gone) {
		/* its free went unrecorded (e.g. from a signal handler): drop it
		 * silently, neither a free nor a leak */
		live_leave(r, st->gone, ht_live_wsize(st->gone, r->rate));
		tot->reused_addresses++;
	}
	const ht_live_t *v = st->block;
	uint32_t si;
	if (st->new_site) { /* the pass numbers its sites 0, 1, 2, ... */
		if (ht_util_grow((void **)&r->msite, &r->cap_msite, (size_t)v->site + 1,
				 sizeof(*r->msite)))
			return -ENOMEM;
		int e = site_for(r, ev->stack_id, ev->time, &si);
		if (e)
			return e;
		r->msite[v->site] = si;
	} else {
		si = r->msite[v->site];
	}
	ht_site_t *s = &r->m->sites[si];
	double w = v->w, var = st->var;
	double sz = (double)ev->size;
	uint64_t wsize = ht_live_wsize(v, r->rate);
	site_touch(r, si);
	site_est_live(r, si, ev->size, 1);
	s->live_bytes += wsize;
	s->live_blocks++;
	s->live_w += w;
	r->cur_bytes += wsize;
	r->cur_blocks++;
	r->cur_w += w;
	r->cur_est += sz * w;
	{
		tot->allocations++;
		tot->bytes_allocated += ev->size;
		s->allocations++;
		s->bytes_allocated += ev->size;
		if (ev->size > s->largest)
			s->largest = ev->size;
		if (r->rate) {
			ht_est_t add = { .allocations = w, .bytes_allocated = sz * w,
					 .var_allocations = var, .var_bytes_allocated = sz * sz * var };
			est_add(&s->est, &add);
			est_add(&tot->est, &add);
		}
	}
	return 0;
}

/* ---- pools and snapshots ------------------------------------------- */

/* The current row of pool id; a new one when there is none, or when the
 * last one was destroyed and `use` (a create, an allocation or a reset:
 * the pool object serves a new pool, created again or not). NULL on
 * ENOMEM. */
static ht_pool_stat_t *pool_row(replay_t *r, uint64_t id, uint64_t time, bool use)
{
	ht_model_t *m = r->m;
	uint32_t i = ht_map_get(&r->pool_row, id);
	if (i != HT_MAP_NONE && !(use && m->pools[i].destroyed))
		return &m->pools[i];
	if (m->npools >= UINT32_MAX - 1 ||
	    ht_util_grow((void **)&m->pools, &r->cap_pools, m->npools + 1, sizeof(*m->pools)) ||
	    ht_map_put(&r->pool_row, id, (uint32_t)m->npools))
		return NULL;
	ht_pool_stat_t *p = &m->pools[m->npools++];
	memset(p, 0, sizeof(*p));
	p->id = id;
	p->first_time = time;
	return p;
}

/* Count one POOL event, or a pool block's allocation or free (freed: the
 * bytes it stood for, fw the blocks). */
static int pool_event(replay_t *r, const ht_event_t *ev, uint64_t freed, double fw)
{
	bool use = ev->type == HT_EV_POOL ? ev->size == HT_POOL_CREATE || ev->size == HT_POOL_RESET
					  : ev->type != HT_EV_FREE;
	ht_pool_stat_t *p = pool_row(r, ev->pool, ev->time, use);
	if (!p)
		return -ENOMEM;
	switch (ev->type) {
	case HT_EV_POOL:
		if (ev->size == HT_POOL_CREATE && ev->name_id)
			p->name_id = ev->name_id;
		else if (ev->size == HT_POOL_RESET)
			p->resets++;
		else if (ev->size == HT_POOL_DESTROY)
			p->destroyed = true;
		break; /* unknown ops: a newer minor's, nothing to count */
	case HT_EV_ALLOC:
	case HT_EV_REALLOC: { /* a pool block's realloc stays in its pool */
		p->allocations++;
		p->bytes_allocated += ev->size;
		p->live_blocks++;
		p->live_bytes += ev->size;
		double w, var;
		weigh(r->rate, ev->size, &w, &var);
		p->est[0] += w;
		p->est[1] += w * (double)ev->size;
		p->est[3] += w;
		/* what its free takes back: the live table's rounded bytes */
		p->est[4] += r->rate ? (double)round_u64(w * (double)ev->size) : (double)ev->size;
		break;
	}
	case HT_EV_FREE:
		if (freed == UINT64_MAX)
			break; /* the model never saw it live: no change */
		p->freed_by_ops += ev->from_pool_op;
		p->live_blocks--;
		p->live_bytes -= r->rate ? 0 : freed; /* sampled: from est[] below */
		p->est[2] += ev->from_pool_op ? fw : 0;
		p->est[3] -= fw;
		p->est[4] -= (double)freed;
		break;
	}
	return 0;
}

/* Record the live heap and its HT_SNAPSHOT_TOP largest sites now. A scan
 * of the sites per snapshot: snapshots are few (the program or a signal
 * asks for each), sites at most some thousands. */
static int take_snapshot(replay_t *r, const ht_event_t *ev)
{
	ht_model_t *m = r->m;
	if (ht_util_grow((void **)&m->snapshots, &r->cap_snapshots, m->nsnapshots + 1,
			 sizeof(*m->snapshots)))
		return -ENOMEM;
	ht_snapshot_t *sn = &m->snapshots[m->nsnapshots++];
	memset(sn, 0, sizeof(*sn));
	sn->name_id = ev->name_id;
	sn->time = ev->time;
	sn->thread = ev->thread;
	sn->live_bytes = heap_now(r);
	sn->live_blocks = r->rate ? round_u64(r->cur_w) : r->cur_blocks;
	for (size_t i = 0; i < m->nsites; i++) {
		const ht_site_t *s = &m->sites[i];
		if (!s->live_blocks)
			continue;
		/* insertion into the short sorted list; earlier sites win ties */
		size_t k = sn->ntop;
		while (k > 0 && (s->live_bytes > sn->top[k - 1].live_bytes ||
				 (s->live_bytes == sn->top[k - 1].live_bytes &&
				  s->live_blocks > sn->top[k - 1].live_blocks)))
			k--;
		if (k >= HT_SNAPSHOT_TOP)
			continue;
		size_t last = sn->ntop < HT_SNAPSHOT_TOP ? sn->ntop : HT_SNAPSHOT_TOP - 1;
		memmove(&sn->top[k + 1], &sn->top[k], (last - k) * sizeof(sn->top[0]));
		sn->top[k].site = (uint32_t)i;
		sn->top[k].live_bytes = s->live_bytes;
		sn->top[k].live_blocks = r->rate ? round_u64(s->live_w) : s->live_blocks;
		if (sn->ntop < HT_SNAPSHOT_TOP)
			sn->ntop++;
	}
	return 0;
}

/* ---- leak checks and growth ----------------------------------------- */

/* The live heap at an on-demand leak check, by the classes its LEAKS
 * records give. One scan of the live table per check: checks are few. */
static int take_check(replay_t *r, const ht_event_t *ev)
{
	ht_model_t *m = r->m;
	if (ht_util_grow((void **)&m->checks, &r->cap_checks, m->nchecks + 1, sizeof(*m->checks)))
		return -ENOMEM;
	/* bytes and blocks per (site, kind) for the kinds that are not
	 * reachable, to find the top stacks */
	uint64_t *acc = calloc((m->nsites ? m->nsites : 1) * 4 * 2, sizeof(*acc));
	if (!acc)
		return -ENOMEM;
	ht_check_stat_t *c = &m->checks[m->nchecks++];
	memset(c, 0, sizeof(*c));
	c->check_id = ev->name_id;
	c->time = ev->time;
	c->thread = ev->thread;
	const ht_leak_check_t *lc = ht_trace_leak_check(m->trace, ev->name_id);
	c->classified = lc != NULL;
	size_t cap;
	const ht_live_t *slot = ht_pass_slots(r->pass, &cap);
	for (size_t i = 0; i < cap; i++) {
		const ht_live_t *b = &slot[i];
		if (b->site == HT_LIVE_EMPTY)
			continue;
		unsigned k = ht_leak_kind_of(lc, b->addr);
		c->blocks[k]++;
		c->bytes[k] += b->size;
		if (k != HT_LEAK_REACHABLE) {
			size_t si = r->msite[b->site];
			acc[(si * 4 + k) * 2] += b->size;
			acc[(si * 4 + k) * 2 + 1]++;
		}
	}
	for (size_t j = 0; j < m->nsites * 4; j++) {
		uint64_t bytes = acc[j * 2], blocks = acc[j * 2 + 1];
		if (!blocks)
			continue;
		size_t k = c->ntop;
		while (k > 0 && bytes > c->top[k - 1].bytes)
			k--;
		if (k >= HT_SNAPSHOT_TOP)
			continue;
		size_t last = c->ntop < HT_SNAPSHOT_TOP ? c->ntop : HT_SNAPSHOT_TOP - 1;
		memmove(&c->top[k + 1], &c->top[k], (last - k) * sizeof(c->top[0]));
		c->top[k].site = (uint32_t)(j / 4);
		c->top[k].kind = (unsigned)(j % 4);
		c->top[k].bytes = bytes;
		c->top[k].blocks = blocks;
		if (c->ntop < HT_SNAPSHOT_TOP)
			c->ntop++;
	}
	free(acc);
	return 0;
}

/* Time of growth point k: the points split the run evenly, the last at its end. */
static uint64_t grow_time(const ht_model_t *m, size_t k)
{
	return (uint64_t)((unsigned __int128)(k + 1) * m->growth_span_ns / HT_GROWTH_POINTS);
}

/* Record the sites' live bytes for every point before time `now`
 * (all remaining points at the end, now = UINT64_MAX). */
static int grow_sample(replay_t *r, uint64_t now)
{
	ht_model_t *m = r->m;
	if (now <= r->grow_next)
		return 0;
	while (r->ngrow < HT_GROWTH_POINTS && (now == UINT64_MAX || now > grow_time(m, r->ngrow))) {
		uint64_t *row = malloc((m->nsites ? m->nsites : 1) * sizeof(*row));
		if (!row)
			return -ENOMEM;
		for (size_t i = 0; i < m->nsites; i++)
			row[i] = m->sites[i].live_bytes;
		r->grow_len[r->ngrow] = m->nsites;
		r->grow_row[r->ngrow++] = row;
	}
	r->grow_next = r->ngrow < HT_GROWTH_POINTS ? grow_time(m, r->ngrow) : UINT64_MAX;
	return 0;
}

static int live_block_cmp(const void *a, const void *b)
{
	uint64_t x = ((const ht_live_block_t *)a)->addr, y = ((const ht_live_block_t *)b)->addr;
	return x < y ? -1 : x > y;
}

/* The blocks live at the end, classified by the exit check. */
static int collect_live_end(replay_t *r)
{
	ht_model_t *m = r->m;
	const ht_leak_check_t *lc = ht_trace_leak_check(m->trace, 0);
	m->leaks_classified = lc != NULL;
	size_t nlive = ht_pass_nlive(r->pass);
	m->live_end = malloc((nlive ? nlive : 1) * sizeof(*m->live_end));
	if (!m->live_end)
		return -ENOMEM;
	size_t cap;
	const ht_live_t *slot = ht_pass_slots(r->pass, &cap);
	for (size_t i = 0; i < cap; i++) {
		const ht_live_t *b = &slot[i];
		if (b->site == HT_LIVE_EMPTY)
			continue;
		m->live_end[m->nlive_end++] = (ht_live_block_t){
			b->addr, b->size, b->time, b->seq, r->thread_num[b->thread], r->msite[b->site],
			ht_leak_kind_of(lc, b->addr), b->w
		};
	}
	if (m->nlive_end)
		qsort(m->live_end, m->nlive_end, sizeof(*m->live_end), live_block_cmp);
	return 0;
}

/* The heap after ev, into the timelines asked for (freed, fw, fwb: what
 * do_free returned for a FREE). */
static void replay_fold(replay_t *r, const ht_event_t *ev, uint64_t freed, double fw, double fwb)
{
	ht_replay_step_t st = { heap_now(r), r->rate ? round_u64(r->cur_w) : r->cur_blocks, 0, 0, 0,
				false };
	if (ev->type == HT_EV_FREE) {
		st.ignored = freed == UINT64_MAX;
		if (!st.ignored) {
			st.freed_bytes = freed;
			st.weight = fw;
			st.weight_bytes = fwb;
		}
	} else if (ev->type == HT_EV_ALLOC || ev->type == HT_EV_REALLOC) {
		double var;
		weigh(r->rate, ev->size, &st.weight, &var);
		st.weight_bytes = (double)ev->size * st.weight;
	}
	for (size_t i = 0; i < r->ntlc; i++)
		tl_update(&r->tlc[i], ev, &st);
}

/* One event of the pass: counts, sites, the peak, the sites' figures at
 * the peak (site_touch), and the timelines asked for. */
static int model_event(void *ctx, const ht_event_t *ev, const ht_heap_step_t *st)
{
	replay_t *r = ctx;
	ht_totals_t *tot = &r->m->totals;
	int e;
	if (!r->thread_seq) /* made when the pass starts */
		r->thread_seq = ht_pass_thread_seqs(r->pass);
	/* allocation numbers: thread 1 is the main thread (set up before the
	 * replay), the others in order of appearance */
	if (!r->thread_num[ev->thread])
		r->thread_num[ev->thread] = r->next_num++;
	if (ev->time > r->grow_next && (e = grow_sample(r, ev->time)))
		return e;
	switch (ev->type) {
	case HT_EV_FREE: { /* for a REALLOC, its free half came first */
		double fw = 0, fwb = 0;
		uint64_t freed = do_free(r, st->gone, &fw, &fwb);
		if (ev->pooled && (e = pool_event(r, ev, freed, fw)))
			return e;
		if (r->ntlc)
			replay_fold(r, ev, freed, fw, fwb);
		break;
	}
	case HT_EV_POOL:
		return pool_event(r, ev, 0, 0);
	case HT_EV_SNAPSHOT:
		return take_snapshot(r, ev);
	case HT_EV_EXT:
		if (ev->fn == HT_EXT_LEAK_CHECK)
			return take_check(r, ev);
		break;
	case HT_EV_REALLOC:
		tot->reallocs++;
		__attribute__((fallthrough));
	case HT_EV_ALLOC:
		if ((e = do_alloc(r, ev, st)))
			return e;
		if (ev->pooled && (e = pool_event(r, ev, 0, 0)))
			return e;
		if (heap_now(r) > tot->peak_heap_bytes) {
			tot->peak_heap_bytes = heap_now(r);
			tot->peak_time_ns = ev->time;
			r->peak_ver++; /* every site's figures now are the peak's */
		}
		if (r->ntlc)
			replay_fold(r, ev, 0, 0, 0);
		break;
	case HT_EV_RSS:
		if (ev->size > tot->peak_rss_bytes)
			tot->peak_rss_bytes = ev->size;
		if (ev->size > tot->peak_rss_sample_bytes) {
			tot->peak_rss_sample_bytes = ev->size;
			tot->peak_rss_time_ns = ev->time;
		}
		if (r->ntlc)
			replay_fold(r, ev, 0, 0, 0);
		break;
	}
	return 0;
}

/* A summary-mode trace has no events: its sites and totals come from the
 * agent's SITES rows (the overflow row becomes a site without a stack). */
static int summary_sites(replay_t *r)
{
	ht_model_t *m = r->m;
	const ht_trace_t *t = m->trace;
	ht_totals_t *tot = &m->totals;
	for (size_t i = 0; i < t->nsummary_rows; i++) {
		const ht_summary_row_t *row = &t->summary_rows[i];
		uint32_t k;
		int e = site_for(r, row->overflow ? UINT64_MAX : row->stack_id, row->first_time, &k);
		if (e)
			return e;
		ht_site_t *s = &m->sites[k];
		if (row->overflow) {
			s->stack = NULL;
			s->overflow = true;
		}
		s->allocations += row->allocations;
		s->bytes_allocated += row->bytes_allocated;
		s->frees += row->frees;
		s->leaked_blocks += row->live_blocks;
		s->leaked_bytes += row->live_bytes;
		s->live_blocks = s->leaked_blocks;
		s->live_bytes = s->leaked_bytes;
		s->peak_bytes += row->bytes_at_peak;
		uint64_t classified = 0;
		for (int c = 0; c < 4; c++) {
			s->sum_kind_blocks[c + 1] += row->kind_blocks[c];
			s->sum_kind_bytes[c + 1] += row->kind_bytes[c];
			classified += row->kind_blocks[c];
		}
		if (classified)
			m->leaks_classified = true;
		else if (row->live_blocks) {
			s->sum_kind_blocks[0] += row->live_blocks;
			s->sum_kind_bytes[0] += row->live_bytes;
		}
		if (row->largest > s->largest)
			s->largest = row->largest;
		tot->allocations += row->allocations;
		tot->bytes_allocated += row->bytes_allocated;
		tot->frees += row->frees;
	}
	tot->peak_heap_bytes = t->summary_peak_bytes;
	tot->peak_time_ns = t->summary_peak_time;
	tot->leaked_blocks = t->summary_live_blocks;
	tot->leaked_bytes = t->summary_live_bytes;
	return 0;
}

/* True when sites a and b (of equal frames) have every frame in the same
 * module: not so when a library was unloaded and another loaded at its
 * address, whose stacks the agent defines anew. */
static bool same_modules(const ht_trace_t *t, const ht_site_t *a, const ht_site_t *b)
{
	for (uint32_t k = 0; k < a->stack->depth; k++) {
		uint64_t ip = t->ips[a->stack->first + k];
		if (ht_trace_module_for(t, ip, a->first_time) != ht_trace_module_for(t, ip, b->first_time))
			return false;
	}
	return true;
}

/* Stack ids are meant to be unique per content, but nothing in the format
 * promises it, and every undefined id means "unknown": fold sites with the
 * same frames (in the same modules) into one so that each stack is
 * reported once. */
static int merge_same_stacks(ht_model_t *m, uint32_t **remap_out)
{
	const ht_trace_t *t = m->trace;
	ht_map_t seen = { 0 };
	size_t out = 0;
	int e = 0;
	/* old site index -> new one, for the snapshots' top sites */
	uint32_t *remap = malloc((m->nsites ? m->nsites : 1) * sizeof(*remap));
	if (!remap)
		return -ENOMEM;
	for (size_t i = 0; i < m->nsites; i++) {
		ht_site_t *s = &m->sites[i];
		uint64_t h = 0x9e3779b97f4a7c15ULL;
		uint32_t depth = s->stack ? s->stack->depth : 0;
		for (uint32_t k = 0; k < depth; k++)
			h = ht_util_hash64(h ^ t->ips[s->stack->first + k]) + k;
		h ^= depth;
		/* chain through equal hashes: compare frames to be exact */
		uint32_t j = ht_map_get(&seen, h);
		while (j != HT_MAP_NONE) {
			ht_site_t *d = &m->sites[j];
			uint32_t dd = d->stack ? d->stack->depth : 0;
			if (dd == depth && (!depth || (!memcmp(&t->ips[d->stack->first],
							       &t->ips[s->stack->first],
							       depth * sizeof(uint64_t)) &&
						       same_modules(t, d, s))))
				break;
			h++; /* probe the next hash value */
			j = ht_map_get(&seen, h);
		}
		if (j == HT_MAP_NONE) {
			if ((e = ht_map_put(&seen, h, (uint32_t)out)))
				break;
			remap[i] = (uint32_t)out;
			m->sites[out++] = *s;
			continue;
		}
		remap[i] = j;
		ht_site_t *d = &m->sites[j];
		d->allocations += s->allocations;
		d->bytes_allocated += s->bytes_allocated;
		d->frees += s->frees;
		d->peak_bytes += s->peak_bytes;
		d->leaked_blocks += s->leaked_blocks;
		d->leaked_bytes += s->leaked_bytes;
		d->temporary += s->temporary;
		d->live_bytes += s->live_bytes;
		d->live_blocks += s->live_blocks;
		d->live_w += s->live_w;
		for (int c = 0; c < HT_LEAK_KINDS; c++) {
			d->sum_kind_blocks[c] += s->sum_kind_blocks[c];
			d->sum_kind_bytes[c] += s->sum_kind_bytes[c];
		}
		est_add(&d->est, &s->est);
		if (s->largest > d->largest)
			d->largest = s->largest;
		if (s->first_time < d->first_time)
			d->first_time = s->first_time;
	}
	ht_map_free(&seen);
	if (!e) {
		m->nsites = out;
		/* two top sites of a snapshot may now be one: add them up (the
		 * list may then miss a site that the fold would have lifted
		 * into it; stacks are unique per content in practice) */
		for (size_t i = 0; i < m->nsnapshots; i++) {
			ht_snapshot_t *sn = &m->snapshots[i];
			size_t n = 0;
			for (size_t k = 0; k < sn->ntop; k++) {
				uint32_t ns = remap[sn->top[k].site];
				size_t q = 0;
				while (q < n && sn->top[q].site != ns)
					q++;
				if (q < n) {
					sn->top[q].live_bytes += sn->top[k].live_bytes;
					sn->top[q].live_blocks += sn->top[k].live_blocks;
					continue;
				}
				sn->top[n] = sn->top[k];
				sn->top[n++].site = ns;
			}
			sn->ntop = n;
		}
	}
	if (e)
		free(remap);
	else
		*remap_out = remap;
	return e;
}

/* Follow merge_same_stacks' fold (old site i is now remap[i]) in the leak
 * and growth figures, and lay the growth rows out as one matrix. */
static int remap_leaks_growth(replay_t *r, const uint32_t *remap)
{
	ht_model_t *m = r->m;
	for (size_t i = 0; i < m->nlive_end; i++)
		m->live_end[i].site = remap[m->live_end[i].site];
	for (size_t i = 0; i < m->nchecks; i++) {
		ht_check_stat_t *c = &m->checks[i];
		size_t n = 0;
		for (size_t k = 0; k < c->ntop; k++) {
			uint32_t ns = remap[c->top[k].site];
			size_t q = 0;
			while (q < n && !(c->top[q].site == ns && c->top[q].kind == c->top[k].kind))
				q++;
			if (q < n) {
				c->top[q].bytes += c->top[k].bytes;
				c->top[q].blocks += c->top[k].blocks;
				continue;
			}
			c->top[n] = c->top[k];
			c->top[n++].site = ns;
		}
		c->ntop = n;
	}
	m->growth = calloc((size_t)HT_GROWTH_POINTS * (m->nsites ? m->nsites : 1), sizeof(*m->growth));
	if (!m->growth)
		return -ENOMEM;
	for (size_t k = 0; k < r->ngrow; k++)
		for (size_t i = 0; i < r->grow_len[k]; i++)
			m->growth[k * m->nsites + remap[i]] += r->grow_row[k][i];
	return 0;
}

/* Sum the estimates over the blocks live at the end: what leaked. */
static void leak_estimates(replay_t *r)
{
	ht_totals_t *tot = &r->m->totals;
	size_t cap;
	const ht_live_t *slot = ht_pass_slots(r->pass, &cap);
	for (size_t i = 0; i < cap; i++) {
		const ht_live_t *b = &slot[i];
		if (b->site == HT_LIVE_EMPTY)
			continue;
		double w, var, sz = (double)b->size;
		weigh(r->rate, b->size, &w, &var);
		ht_est_t add = { .leaked_blocks = w, .leaked_bytes = sz * w,
				 .var_leaked_blocks = var, .var_leaked_bytes = sz * sz * var };
		est_add(&r->m->sites[r->msite[b->site]].est, &add);
		est_add(&tot->est, &add);
	}
}

/* A sampled trace: the figures become the rounded estimates, but for the
 * totals the agent counted exactly (END), which are exact, and temporary
 * allocations, which are unknown (0). */
static void use_estimates(ht_model_t *m)
{
	for (size_t i = 0; i < m->nsites; i++) {
		ht_site_t *s = &m->sites[i];
		s->allocations = round_u64(s->est.allocations);
		s->bytes_allocated = round_u64(s->est.bytes_allocated);
		s->frees = round_u64(s->est.frees);
		/* the samples cannot tell whether a block was freed before its
		 * thread's next allocation (the unsampled ones are unseen) */
		s->temporary = 0;
		s->leaked_blocks = round_u64(s->est.leaked_blocks);
		s->leaked_bytes = round_u64(s->est.leaked_bytes);
		s->peak_bytes = round_u64(s->est.peak_bytes);
	}
	ht_totals_t *tot = &m->totals;
	const ht_trace_t *t = m->trace;
	if (t->have_end_counts) {
		/* the agent counted every call exactly; the blocks a pool reset
		 * or destroy freed are not calls it could count (the unsampled
		 * ones went unseen): those are estimated */
		double pool_frees = 0;
		for (size_t i = 0; i < m->npools; i++)
			pool_frees += m->pools[i].est[2];
		tot->est.allocations = (double)t->end_allocs;
		tot->est.frees = (double)t->end_frees + pool_frees;
		tot->est.bytes_allocated = (double)t->end_bytes;
		tot->est.var_allocations = tot->est.var_bytes_allocated = 0;
	}
	tot->allocations = round_u64(tot->est.allocations);
	tot->frees = round_u64(tot->est.frees);
	tot->bytes_allocated = round_u64(tot->est.bytes_allocated);
	tot->temporary = 0;
	tot->leaked_blocks = round_u64(tot->est.leaked_blocks);
	tot->leaked_bytes = round_u64(tot->est.leaked_bytes);
	/* peak_heap_bytes stays the replay's (heap_now): the timelines' peak */
	for (size_t i = 0; i < m->npools; i++) {
		ht_pool_stat_t *p = &m->pools[i];
		p->allocations = round_u64(p->est[0]);
		p->bytes_allocated = round_u64(p->est[1]);
		p->freed_by_ops = round_u64(p->est[2]);
		p->live_blocks = round_u64(p->est[3]);
		p->live_bytes = round_u64(p->est[4]);
	}
}

/* After the last event: leaks, the peak's figures per site, estimates,
 * the summary's rows, sites of equal stacks folded. */
static int model_end(void *ctx)
{
	replay_t *r = ctx;
	ht_model_t *m = r->m;
	const ht_trace_t *t = m->trace;
	ht_totals_t *tot = &m->totals;
	int e;
	for (size_t i = 0; i < m->nsites; i++) {
		m->sites[i].leaked_blocks = m->sites[i].live_blocks;
		m->sites[i].leaked_bytes = m->sites[i].live_bytes;
	}
	tot->leaked_blocks = r->cur_blocks;
	tot->leaked_bytes = r->cur_bytes;
	if ((e = grow_sample(r, UINT64_MAX)) || (e = collect_live_end(r)))
		return e;
	if (r->rate)
		leak_estimates(r);
	/* what each site held at the peak: a site untouched since the last
	 * peak holds it still */
	for (size_t i = 0; tot->peak_heap_bytes > 0 && i < m->nsites; i++) {
		site_touch(r, (uint32_t)i);
		m->sites[i].peak_bytes = r->sp[i].bytes;
		if (r->rate) {
			ht_est_t add = { .peak_bytes = r->sp[i].peak_est_bytes,
					 .var_peak_bytes = r->sp[i].peak_var_bytes };
			est_add(&m->sites[i].est, &add);
			est_add(&tot->est, &add);
		}
	}
	if (r->rate)
		use_estimates(m);

	if (t->have_summary && (e = summary_sites(r)))
		return e;
	if ((e = merge_same_stacks(m, &r->remap)) || (e = remap_leaks_growth(r, r->remap)))
		return e;
	/* every stack id seen, to its site (ht_model_site_of) */
	for (size_t i = 0; i < r->site_by_stack.cap; i++)
		if (r->site_by_stack.vals[i] != HT_MAP_NONE)
			r->site_by_stack.vals[i] = r->remap[r->site_by_stack.vals[i]];
	m->site_of = r->site_by_stack;
	m->site_map = &m->site_of;
	memset(&r->site_by_stack, 0, sizeof(r->site_by_stack));

	/* the END record's peak RSS is the kernel's high-water mark: prefer it */
	if (t->ending <= HT_ENDING_DETACH && t->end_peak_rss > tot->peak_rss_bytes)
		tot->peak_rss_bytes = t->end_peak_rss;
	tot->duration_ns = t->last_time;
	tot->allocs_per_second =
		tot->duration_ns ? (double)tot->allocations / ((double)tot->duration_ns / 1e9) : 0.0;
	for (size_t i = 0; i < r->ntlc; i++)
		tl_carry(&r->tlc[i], r->tlc[i].tl->n - 1); /* quiet time after the last event */
	return 0;
}

/* The replay's scratch (not the model: the caller may have freed it). */
static void model_fini(void *ctx)
{
	replay_t *r = ctx;
	/* a pass that stopped early: the model (freed after its pass) no longer
	 * has the running map */
	if (r->m->site_map == &r->site_by_stack)
		r->m->site_map = NULL;
	free(r->tlc);
	free(r->sp);
	free(r->thread_num);
	free(r->remap);
	free(r->msite);
	free(r->fa);
	free(r->fb);
	for (size_t k = 0; k < r->ngrow; k++)
		free(r->grow_row[k]);
	ht_map_free(&r->site_by_stack);
	ht_map_free(&r->site_by_key);
	ht_map_free(&r->pool_row);
	free(r);
}

/* The pass folds sites by their frames as it meets them: every stack's
 * addresses are looked up on the way. With more than one thread, the
 * distinct ones start resolving on workers now, and the pass takes their
 * answers. An address that more than one module held in turn is left to
 * the pass, which knows the time to choose by. Failing leaves it all to
 * the pass. */
static void prefetch_frames(const ht_trace_t *t, ht_symbolizer_t *sym)
{
	unsigned nth = ht_threads();
	if (nth < 2 || !t->nips)
		return;
	uint64_t *mods = malloc(t->nips * sizeof(*mods));
	uint64_t *ips = malloc(t->nips * sizeof(*ips));
	ht_map_t seen = { 0 };
	size_t n = 0;
	for (size_t s = 0; mods && ips && s < t->nstacks; s++) {
		const ht_stack_t *st = &t->stacks[s];
		for (uint32_t k = 0; k < st->depth && st->first + k < t->nips; k++) {
			uint64_t ip = t->ips[st->first + k];
			if (ht_map_get(&seen, ip) != HT_MAP_NONE)
				continue;
			long mi = ht_trace_module_only(t, ip);
			if (ht_map_put(&seen, ip, 0))
				goto done;
			if (mi < 0)
				continue;
			mods[n] = (uint64_t)mi;
			ips[n++] = ip;
		}
	}
	ht_symbolize_prefetch(sym, mods, ips, n, nth);
done:
	ht_map_free(&seen);
	free(mods);
	free(ips);
}

int ht_model_attach(ht_pass_t *p, const ht_trace_t *t, const size_t *tl_sizes, size_t n_tl,
		    ht_symbolizer_t *sym, ht_model_t **out)
{
	*out = NULL;
	ht_model_t *m = calloc(1, sizeof(*m));
	replay_t *r = calloc(1, sizeof(*r));
	if (!m || !r) {
		free(m);
		free(r);
		return -ENOMEM;
	}
	m->trace = t;
	m->sample_rate = (double)t->sample_rate;
	r->m = m;
	m->site_map = &r->site_by_stack;
	r->pass = p;
	r->rate = m->sample_rate;
	r->sym = sym;
	if (sym)
		prefetch_frames(t, sym);
	int e = -ENOMEM;
	if (n_tl) {
		/* the span is the model's duration (totals.duration_ns, below) */
		if (!(m->timelines = calloc(n_tl, sizeof(*m->timelines))) ||
		    !(r->tlc = calloc(n_tl, sizeof(*r->tlc))))
			goto fail;
		for (; r->ntlc < n_tl; r->ntlc++) {
			if (tl_init(&m->timelines[r->ntlc], tl_sizes[r->ntlc] ? tl_sizes[r->ntlc] : 1,
				    t->last_time)) {
				m->ntimelines = r->ntlc;
				goto fail;
			}
			r->tlc[r->ntlc] = (tl_ctx_t){ &m->timelines[r->ntlc], 0, 0, 0, false, 0, 0, 0, NULL, NULL };
		}
		m->ntimelines = n_tl;
	}
	r->thread_num = calloc(t->nthreads ? t->nthreads : 1, sizeof(*r->thread_num));
	if (!r->thread_num)
		goto fail;
	r->next_num = 2;
	for (size_t i = 0; i < t->nthreads; i++)
		if (t->threads[i].tid == t->pid && !r->thread_num[i])
			r->thread_num[i] = 1;
	m->growth_span_ns = t->last_time;
	r->grow_next = grow_time(m, 0);
	ht_pass_consumer_t c = { HT_MERGE_POOLS | HT_MERGE_SNAPSHOTS | HT_MERGE_EXT, true, true,
				 model_event, model_end, model_fini, r };
	if ((e = ht_pass_add(p, &c))) { /* r is freed */
		ht_model_free(m);
		return e;
	}
	*out = m;
	if ((e = ht_badfree_attach(p, t, &m->bad)) || (e = ht_mapped_attach(p, t, &m->mapped)))
		return e; /* *out set: the caller frees the model */
	return 0;
fail:
	model_fini(r);
	ht_model_free(m);
	return e;
}

int ht_model_build(const ht_trace_t *t, ht_model_t **out)
{
	return ht_model_build_timed(t, NULL, 0, NULL, out);
}

int ht_model_build_sym(const ht_trace_t *t, ht_symbolizer_t *sym, ht_model_t **out)
{
	return ht_model_build_timed(t, NULL, 0, sym, out);
}

int ht_model_build_timed(const ht_trace_t *t, const size_t *tl_sizes, size_t n_tl,
			 ht_symbolizer_t *sym, ht_model_t **out)
{
	*out = NULL;
	ht_pass_t *p;
	ht_model_t *m = NULL;
	int e = ht_pass_new(t, &p);
	if (e)
		return e;
	if ((e = ht_model_attach(p, t, tl_sizes, n_tl, sym, &m)) || (e = ht_pass_run(p))) {
		ht_model_free(m);
		m = NULL;
	}
	ht_pass_free(p);
	*out = m;
	return e;
}

void ht_model_free(ht_model_t *m)
{
	if (!m)
		return;
	ht_badfrees_free(m->bad);
	ht_mapped_free(m->mapped);
	free(m->sites);
	free(m->pools);
	free(m->snapshots);
	free(m->live_end);
	free(m->checks);
	free(m->growth);
	ht_map_free(&m->site_of);
	ht_resources_free(m->resources);
	for (size_t i = 0; i < m->ntimelines; i++)
		free(m->timelines[i].b);
	free(m->timelines);
	free(m);
}

/* ---- sorting ------------------------------------------------------------------ */

static uint64_t site_key(const ht_site_t *s, ht_site_order_t o)
{
	switch (o) {
	case HT_BY_BYTES: return s->bytes_allocated;
	case HT_BY_COUNT: return s->allocations;
	case HT_BY_PEAK: return s->peak_bytes;
	case HT_BY_LEAKED: return s->leaked_bytes ? s->leaked_bytes : s->leaked_blocks;
	case HT_BY_TEMPORARY: return s->temporary;
	}
	return 0;
}

typedef struct sort_ctx {
	const ht_site_t *sites;
	ht_site_order_t order;
} sort_ctx_t;

static int site_cmp(const void *a, const void *b, void *arg)
{
	const sort_ctx_t *c = arg;
	const ht_site_t *x = &c->sites[*(const size_t *)a], *y = &c->sites[*(const size_t *)b];
	uint64_t kx = site_key(x, c->order), ky = site_key(y, c->order);
	if (kx != ky)
		return kx > ky ? -1 : 1;
	if (c->order == HT_BY_LEAKED && x->leaked_blocks != y->leaked_blocks)
		return x->leaked_blocks > y->leaked_blocks ? -1 : 1;
	if (x->bytes_allocated != y->bytes_allocated)
		return x->bytes_allocated > y->bytes_allocated ? -1 : 1;
	if (x->allocations != y->allocations)
		return x->allocations > y->allocations ? -1 : 1;
	return x->stack_id < y->stack_id ? -1 : x->stack_id > y->stack_id;
}

size_t ht_model_sort(const ht_model_t *m, ht_site_order_t order, size_t *idx)
{
	size_t n = 0;
	for (size_t i = 0; i < m->nsites; i++)
		if (site_key(&m->sites[i], order) || (order == HT_BY_LEAKED && m->sites[i].leaked_blocks))
			idx[n++] = i;
	sort_ctx_t c = { m->sites, order };
	qsort_r(idx, n, sizeof(*idx), site_cmp, &c); /* glibc's: a context, no globals */
	return n;
}

/* ---- frames ---------------------------------------------------------------------- */

/* The main program may be recorded with an empty path (the dynamic linker
 * names it ""); the PROCESS record knows its real path. */
static const char *module_path(const ht_trace_t *t, const ht_module_t *mod)
{
	if (mod->path[0])
		return mod->path;
	return t->exe_path && t->exe_path[0] ? t->exe_path : NULL;
}

uint32_t ht_model_site_of(const ht_model_t *m, uint64_t stack_id)
{
	return ht_map_get(&m->site_of, stack_id);
}

uint64_t ht_model_site_stack(const ht_model_t *m, uint64_t stack_id)
{
	uint32_t i = m->site_map ? ht_map_get(m->site_map, stack_id) : HT_MAP_NONE;
	return i == HT_MAP_NONE || i >= m->nsites ? stack_id : m->sites[i].stack_id;
}

void ht_model_add_modules(const ht_model_t *m, ht_symbolizer_t *sym)
{
	ht_trace_add_modules(m->trace, sym);
}

/* Whether a module is where threads start: libc (__libc_start_call_main,
 * start_thread, clone3) or the dynamic linker (_dl_start_user, which runs
 * the constructors). */
static bool entry_module(const char *path)
{
	const char *b = path ? ht_base_name(path) : "";
	return !strncmp(b, "libc.so", 7) || !strncmp(b, "libc-", 5) || !strncmp(b, "ld-linux", 8) ||
	       !strncmp(b, "ld-", 3) || !strncmp(b, "ld.so", 5);
}

const char *ht_model_fp_broken(const ht_model_t *m, size_t *bad, size_t *total)
{
	const ht_trace_t *t = m->trace;
	const char *where = NULL;
	*bad = *total = 0;
	if (!(t->proc_flags & HT_PROC_UNWIND_FP))
		return NULL;
	for (size_t i = 0; i < m->nsites; i++) {
		const ht_site_t *s = &m->sites[i];
		if (!s->stack || !s->stack->depth)
			continue;
		++*total;
		uint32_t d = s->stack->depth;
		const char *cut = NULL;
		for (uint32_t k = 1; k < d && !cut; k++)
			if (ht_trace_module_for(t, t->ips[s->stack->first + k], s->first_time) < 0)
				cut = "no module";
		if (!cut && (!t->max_depth || d < t->max_depth)) {
			long mi = ht_trace_module_for(t, t->ips[s->stack->first + d - 1], s->first_time);
			const char *path = mi >= 0 ? module_path(t, &t->modules[mi]) : NULL;
			if (mi < 0)
				cut = "no module";
			else if (!entry_module(path))
				cut = path ? path : "an unnamed module";
		}
		if (cut) {
			++*bad;
			if (!where)
				where = cut;
		}
	}
	return *bad >= 2 && *bad * 10 >= *total ? where : NULL;
}

void ht_trace_add_modules(const ht_trace_t *t, ht_symbolizer_t *sym)
{
	/* keyed by index, not the trace's id: unambiguous even if ids repeat */
	for (size_t i = 0; i < t->nmodules; i++) {
		const ht_module_t *mod = &t->modules[i];
		const char *path = module_path(t, mod);
		if (!path)
			continue;
		ht_symbolizer_add_module(sym, i, path, mod->build_id, mod->build_id_len, mod->bias,
					 mod->segs, mod->nsegs);
	}
}

/* Allocator entry points that can still show up as the leaf: inline
 * wrappers (ld.so's rtld-malloc.h defines malloc/calloc inline; heaptrail.h's
 * custom-allocator calls are inlined into the program's allocator) and a
 * statically linked operator new (cc1 links libstdc++ statically), which the
 * agent cannot interpose. The user's stack starts at their caller. */
static bool is_allocator(const char *fn)
{
	static const char *const names[] = {
		"malloc", "calloc", "realloc", "reallocarray", "posix_memalign", "aligned_alloc",
		"memalign", "valloc", "pvalloc", "__libc_malloc", "__libc_calloc", "__libc_realloc",
		"__libc_memalign", "__libc_valloc", "__libc_pvalloc", "__posix_memalign",
		"__rtld_malloc", "__rtld_calloc", "__rtld_realloc",
		/* heaptrail.h's inline wrappers: the program's allocator called them */
		"heaptrail_alloc", "heaptrail_realloc", "heaptrail_pool_alloc",
	};
	if (!fn)
		return false;
	if (!strncmp(fn, "operator new", 12))
		return true;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(fn, names[i]))
			return true;
	return false;
}

long ht_model_frames(const ht_model_t *m, ht_symbolizer_t *sym, const ht_site_t *site,
		     ht_frame_t **frames, size_t *cap)
{
	const ht_trace_t *t = m->trace;
	if (!site->stack)
		return 0;
	size_t n = 0;
	ht_frame_t tmp[64];
	for (uint32_t i = 0; i < site->stack->depth; i++) {
		uint64_t ip = t->ips[site->stack->first + i];
		long mi = ht_trace_module_for(t, ip, site->first_time);
		size_t k;
		if (sym) {
			k = ht_symbolize(sym, mi >= 0 ? (uint64_t)mi : UINT64_MAX, ip, tmp, 64);
			if (k == 0 || k > 64) {
				k = 1;
				tmp[0] = (ht_frame_t){ 0 };
				tmp[0].address = ip;
			}
		} else {
			k = 1;
			tmp[0] = (ht_frame_t){ 0 };
			tmp[0].address = ip;
		}
		/* the symbolizer may not know the module (missing file): name it */
		if (mi >= 0) {
			for (size_t j = 0; j < k; j++) {
				if (!tmp[j].module)
					tmp[j].module = module_path(t, &t->modules[mi]);
				tmp[j].has_offset = true;
				tmp[j].offset = ip - t->modules[mi].bias;
			}
		}
		size_t skip = 0;
		/* drop allocator frames at the leaf, keeping at least one frame */
		while (n == 0 && skip < k && is_allocator(tmp[skip].function) &&
		       (skip + 1 < k || i + 1 < site->stack->depth))
			skip++;
		if (ht_util_grow((void **)frames, cap, n + k - skip, sizeof(**frames)))
			return -ENOMEM;
		if (k > skip) /* *frames may still be NULL */
			memcpy(*frames + n, tmp + skip, (k - skip) * sizeof(*tmp));
		n += k - skip;
	}
	if (sym) /* names to fold by: not with --by-address */
		n = ht_frames_fold(*frames, n);
	return (long)n;
}

/* ---- time series ------------------------------------------------------------------ */

/* A replay that only follows the heap: the pass's live blocks (unknown
 * frees ignored, an allocation over a block whose free went unrecorded
 * drops that block), without sites. */
typedef struct heap_replay {
	ht_replay_fn fn;
	void *ctx;
	int (*on_end)(void *ctx);   /* ht_model_replay_attach's */
	void (*fini)(void *ctx);
	double rate;
	double heap_w;	 /* exact in an unsampled trace: sums of 1 */
	double heap_est; /* sampled: rounded once, as heap_now() */
	uint64_t heap;
} heap_replay_t;

static int heap_replay_event(void *ctx, const ht_event_t *ev, const ht_heap_step_t *hs)
{
	heap_replay_t *h = ctx;
	ht_replay_step_t st = { 0, 0, 0, 0, 0, false };
	const ht_live_t *b = hs->gone;
	switch (ev->type) {
	case HT_EV_FREE:
		if (b) {
			st.freed_bytes = ht_live_wsize(b, h->rate);
			st.weight = b->w;
			st.weight_bytes = (double)b->size * b->w;
			h->heap -= st.freed_bytes;
			h->heap_w -= b->w;
			h->heap_est -= st.weight_bytes;
		} else {
			st.ignored = true;
		}
		break;
	case HT_EV_ALLOC:
	case HT_EV_REALLOC:
		if (b) {
			h->heap -= ht_live_wsize(b, h->rate);
			h->heap_w -= b->w;
			h->heap_est -= (double)b->size * b->w;
		}
		st.weight = hs->block->w;
		st.weight_bytes = (double)ev->size * st.weight;
		h->heap += ht_live_wsize(hs->block, h->rate);
		h->heap_w += st.weight;
		h->heap_est += st.weight_bytes;
		break;
	default:
		break;
	}
	st.heap_bytes = h->rate ? round_u64(h->heap_est) : h->heap;
	st.heap_blocks = round_u64(h->heap_w);
	return h->fn(h->ctx, ev, &st);
}

static int heap_replay_end(void *ctx)
{
	heap_replay_t *h = ctx;
	return h->on_end ? h->on_end(h->ctx) : 0;
}

static void heap_replay_fini(void *ctx)
{
	heap_replay_t *h = ctx;
	if (h->fini)
		h->fini(h->ctx);
	free(h);
}

int ht_model_replay_attach(ht_pass_t *p, const ht_trace_t *t, ht_replay_fn fn,
			   int (*on_end)(void *ctx), void (*fini)(void *ctx), void *ctx)
{
	heap_replay_t *h = malloc(sizeof(*h));
	if (!h) {
		if (fini)
			fini(ctx);
		return -ENOMEM;
	}
	*h = (heap_replay_t){ fn, ctx, on_end, fini, (double)t->sample_rate, 0, 0, 0 };
	ht_pass_consumer_t c = { 0, true, true, heap_replay_event, heap_replay_end, heap_replay_fini, h };
	return ht_pass_add(p, &c);
}

int ht_model_replay(const ht_model_t *m, ht_replay_fn fn, void *ctx)
{
	heap_replay_t h = { fn, ctx, NULL, NULL, m->sample_rate, 0, 0, 0 };
	ht_pass_consumer_t c = { 0, true, true, heap_replay_event, NULL, NULL, &h };
	ht_pass_t *p;
	int e = ht_pass_new(m->trace, &p);
	if (e)
		return e;
	if (!(e = ht_pass_add(p, &c)))
		e = ht_pass_run(p);
	ht_pass_free(p);
	return e;
}

static int tl_step(void *ctx, const ht_event_t *ev, const ht_replay_step_t *st)
{
	tl_ctx_t *c = ctx;
	tl_update(c, ev, st);
	return c->fn ? c->fn(c->fn_ctx, ev, st) : 0;
}

int ht_model_timeline(const ht_model_t *m, size_t nbuckets, ht_timeline_t *out)
{
	return ht_model_timeline_replay(m, nbuckets, NULL, NULL, out);
}

int ht_model_timeline_replay(const ht_model_t *m, size_t nbuckets, ht_replay_fn fn, void *ctx,
			     ht_timeline_t *out)
{
	memset(out, 0, sizeof(*out));
	if (nbuckets == 0)
		nbuckets = 1;
	if (!fn) { /* folded by ht_model_build_timed's replay? */
		for (size_t i = 0; i < m->ntimelines; i++) {
			const ht_timeline_t *made = &m->timelines[i];
			if (made->n != nbuckets)
				continue;
			*out = *made;
			if (!(out->b = malloc(nbuckets * sizeof(*out->b)))) {
				memset(out, 0, sizeof(*out));
				return -ENOMEM;
			}
			memcpy(out->b, made->b, nbuckets * sizeof(*out->b));
			return 0;
		}
	}
	ht_timeline_t tl;
	if (tl_init(&tl, nbuckets, m->totals.duration_ns))
		return -ENOMEM;
	tl_ctx_t c = { &tl, 0, 0, 0, false, 0, 0, 0, fn, ctx };
	int e = ht_model_replay(m, tl_step, &c);
	if (e) {
		free(tl.b);
		return e;
	}
	tl_carry(&c, nbuckets - 1); /* quiet time after the last event */
	*out = tl;
	return 0;
}

void ht_timeline_free(ht_timeline_t *tl)
{
	if (!tl)
		return;
	free(tl->b);
	tl->b = NULL;
	tl->n = 0;
}
