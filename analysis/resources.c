/* resources.c - replay of the EXT events into descriptor and handle leaks
 * (the rules are in resources.h).
 *
 * One record per descriptor or handle ever opened, found through a map
 * keyed by the number (per kind for handles); a close or release clears
 * its live flag, a new open of the same number reuses the record. At the
 * end the live records are sorted by group and coalesced. A consumer of a
 * pass (analysis/pass.h) that wants only the EXT events.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/pass.h"
#include "analysis/resources.h"
#include "trace_format.h"
#include "analysis/util.h"

typedef struct rec {
	uint64_t id;	   /* fd or handle */
	uint64_t stack_id;
	uint64_t time;
	uint32_t group;	   /* call (fds) or kind index (handles) */
	bool live;
} rec_t;

typedef struct kind_state {
	uint64_t name_id;
	ht_map_t by_handle; /* handle -> index in handles */
	uint64_t acquired, released;
} kind_state_t;

typedef struct replay {
	rec_t *fds, *handles;
	size_t nfds, cap_fds, nhandles, cap_handles;
	ht_map_t fd_idx;
	kind_state_t *kinds;
	size_t nkinds, cap_kinds;
} replay_t;

const char *ht_fdcall_name(unsigned call)
{
	static const char *const names[] = { "open", "socket", "accept", "pipe", "dup", "fopen" };
	return call < sizeof(names) / sizeof(names[0]) ? names[call] : "other";
}

/* Opens (or reuses) the record of id in recs via map; NULL on -ENOMEM.
 * *fresh: the id was not live before. */
static rec_t *rec_open(rec_t **recs, size_t *n, size_t *cap, ht_map_t *map, uint64_t id,
		       bool *fresh)
{
	uint32_t i = ht_map_get(map, id);
	if (i == HT_MAP_NONE) {
		if (*n >= UINT32_MAX - 1 || ht_util_grow((void **)recs, cap, *n + 1, sizeof(**recs)) ||
		    ht_map_put(map, id, (uint32_t)*n))
			return NULL;
		i = (uint32_t)(*n)++;
		(*recs)[i].live = false;
	}
	rec_t *r = &(*recs)[i];
	*fresh = !r->live;
	r->id = id;
	r->live = true;
	return r;
}

/* The kind of name_id, created on first sight; -1 on -ENOMEM. */
static long kind_index(replay_t *rp, uint64_t name_id)
{
	for (size_t i = 0; i < rp->nkinds; i++) /* a program has a few kinds */
		if (rp->kinds[i].name_id == name_id)
			return (long)i;
	if (ht_util_grow((void **)&rp->kinds, &rp->cap_kinds, rp->nkinds + 1, sizeof(*rp->kinds)))
		return -1;
	memset(&rp->kinds[rp->nkinds], 0, sizeof(*rp->kinds));
	rp->kinds[rp->nkinds].name_id = name_id;
	return (long)rp->nkinds++;
}

static int replay_event(replay_t *rp, ht_resources_t *res, const ht_event_t *ev)
{
	bool fresh;
	uint32_t i;
	switch (ev->fn) {
	case HT_EXT_FD_OPEN: {
		rec_t *r = rec_open(&rp->fds, &rp->nfds, &rp->cap_fds, &rp->fd_idx, ev->addr, &fresh);
		if (!r)
			return -ENOMEM;
		r->stack_id = ev->stack_id;
		r->time = ev->time;
		r->group = (uint32_t)(ev->size > HT_FDCALL_OTHER ? HT_FDCALL_OTHER : ev->size);
		res->fds_opened += fresh;
		break;
	}
	case HT_EXT_FD_CLOSE:
		i = ht_map_get(&rp->fd_idx, ev->addr);
		if (i != HT_MAP_NONE && rp->fds[i].live) {
			rp->fds[i].live = false;
			res->fds_closed++;
		}
		break;
	case HT_EXT_HANDLE_ACQUIRE:
	case HT_EXT_HANDLE_RELEASE: {
		long k = kind_index(rp, ev->name_id);
		if (k < 0)
			return -ENOMEM;
		kind_state_t *ks = &rp->kinds[k];
		if (ev->fn == HT_EXT_HANDLE_RELEASE) {
			i = ht_map_get(&ks->by_handle, ev->addr);
			if (i != HT_MAP_NONE && rp->handles[i].live) {
				rp->handles[i].live = false;
				ks->released++;
			}
			break;
		}
		rec_t *r = rec_open(&rp->handles, &rp->nhandles, &rp->cap_handles, &ks->by_handle,
				    ev->addr, &fresh);
		if (!r)
			return -ENOMEM;
		r->stack_id = ev->stack_id;
		r->time = ev->time;
		r->group = (uint32_t)k;
		ks->acquired++;
		break;
	}
	default:
		break; /* a kind of a later format (LEAK_CHECK is not ours) */
	}
	return 0;
}

/* Live records first, then by group, stack, time. */
static int rec_cmp(const void *a, const void *b)
{
	const rec_t *x = a, *y = b;
	if (x->live != y->live)
		return x->live ? -1 : 1;
	if (x->group != y->group)
		return x->group < y->group ? -1 : 1;
	if (x->stack_id != y->stack_id)
		return x->stack_id < y->stack_id ? -1 : 1;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return 0;
}

static int fd_leak_cmp(const void *a, const void *b)
{
	const ht_fd_leak_t *x = a, *y = b;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return x->first_time < y->first_time ? -1 : x->first_time > y->first_time;
}

static int handle_site_cmp(const void *a, const void *b)
{
	const ht_handle_site_t *x = a, *y = b;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return x->first_time < y->first_time ? -1 : x->first_time > y->first_time;
}

static int kind_cmp(const void *a, const void *b)
{
	const ht_handle_kind_t *x = a, *y = b;
	const char *p = x->name ? x->name : "", *q = y->name ? y->name : "";
	int c = strcmp(p, q);
	return c ? c : (x->name_id < y->name_id ? -1 : x->name_id > y->name_id);
}

/* qsort, which must not be given NULL even for no elements */
static void sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(base, n, size, cmp);
}

/* Fills res's groups from the replay's live records. */
static int collect(const ht_trace_t *t, replay_t *rp, ht_resources_t *res)
{
	/* descriptors 0-2 are the standard ones, never leaks */
	for (size_t i = 0; i < rp->nfds; i++)
		if (rp->fds[i].id <= 2)
			rp->fds[i].live = false;
	sort(rp->fds, rp->nfds, sizeof(*rp->fds), rec_cmp);
	size_t cap_leaks = 0;
	for (size_t i = 0; i < rp->nfds && rp->fds[i].live;) {
		size_t j = i;
		while (j < rp->nfds && rp->fds[j].live && rp->fds[j].group == rp->fds[i].group &&
		       rp->fds[j].stack_id == rp->fds[i].stack_id)
			j++;
		if (ht_util_grow((void **)&res->fd_leaks, &cap_leaks, res->nfd_leaks + 1,
				 sizeof(*res->fd_leaks)))
			return -ENOMEM;
		ht_fd_leak_t *g = &res->fd_leaks[res->nfd_leaks];
		memset(g, 0, sizeof(*g));
		g->fds = malloc((j - i) * sizeof(*g->fds));
		if (!g->fds)
			return -ENOMEM;
		res->nfd_leaks++;
		g->call = rp->fds[i].group;
		g->stack_id = rp->fds[i].stack_id;
		g->stack = ht_trace_stack(t, g->stack_id);
		g->first_time = rp->fds[i].time;
		for (size_t k = i; k < j; k++) {
			g->fds[g->count++] = rp->fds[k].id;
			if (rp->fds[k].time < g->first_time)
				g->first_time = rp->fds[k].time;
		}
		res->fds_leaked += g->count;
		i = j;
	}
	sort(res->fd_leaks, res->nfd_leaks, sizeof(*res->fd_leaks), fd_leak_cmp);

	res->kinds = calloc(rp->nkinds ? rp->nkinds : 1, sizeof(*res->kinds));
	if (!res->kinds)
		return -ENOMEM;
	res->nkinds = rp->nkinds;
	for (size_t k = 0; k < rp->nkinds; k++) {
		ht_handle_kind_t *hk = &res->kinds[k];
		hk->name_id = rp->kinds[k].name_id;
		hk->name = ht_trace_name(t, hk->name_id);
		hk->acquired = rp->kinds[k].acquired;
		hk->released = rp->kinds[k].released;
	}
	sort(rp->handles, rp->nhandles, sizeof(*rp->handles), rec_cmp);
	for (size_t i = 0; i < rp->nhandles && rp->handles[i].live;) {
		size_t j = i;
		while (j < rp->nhandles && rp->handles[j].live &&
		       rp->handles[j].group == rp->handles[i].group &&
		       rp->handles[j].stack_id == rp->handles[i].stack_id)
			j++;
		ht_handle_kind_t *hk = &res->kinds[rp->handles[i].group];
		size_t cap = hk->nsites;
		if (ht_util_grow((void **)&hk->sites, &cap, hk->nsites + 1, sizeof(*hk->sites)))
			return -ENOMEM;
		ht_handle_site_t *s = &hk->sites[hk->nsites++];
		s->stack_id = rp->handles[i].stack_id;
		s->stack = ht_trace_stack(t, s->stack_id);
		s->first_time = rp->handles[i].time;
		s->count = j - i;
		for (size_t k = i; k < j; k++)
			if (rp->handles[k].time < s->first_time)
				s->first_time = rp->handles[k].time;
		hk->held += s->count;
		res->handles_held += s->count;
		i = j;
	}
	/* a kind with nothing held (all released, or a release of a handle
	 * never seen acquired) leaked nothing: not listed */
	size_t kept = 0;
	for (size_t k = 0; k < res->nkinds; k++)
		if (res->kinds[k].held)
			res->kinds[kept++] = res->kinds[k];
	res->nkinds = kept;
	for (size_t k = 0; k < res->nkinds; k++)
		sort(res->kinds[k].sites, res->kinds[k].nsites, sizeof(*res->kinds[k].sites),
		      handle_site_cmp);
	sort(res->kinds, res->nkinds, sizeof(*res->kinds), kind_cmp);
	return 0;
}

typedef struct job {
	const ht_trace_t *t;
	replay_t rp;
	ht_resources_t *res;
} job_t;

static int res_event(void *ctx, const ht_event_t *ev, const ht_heap_step_t *st)
{
	(void)st;
	job_t *j = ctx;
	return ev->type == HT_EV_EXT ? replay_event(&j->rp, j->res, ev) : 0;
}

static int res_end(void *ctx)
{
	job_t *j = ctx;
	return collect(j->t, &j->rp, j->res);
}

static void res_fini(void *ctx)
{
	job_t *j = ctx;
	free(j->rp.fds);
	free(j->rp.handles);
	ht_map_free(&j->rp.fd_idx);
	for (size_t k = 0; k < j->rp.nkinds; k++)
		ht_map_free(&j->rp.kinds[k].by_handle);
	free(j->rp.kinds);
	free(j);
}

int ht_resources_attach(struct ht_pass *p, const ht_trace_t *t, ht_resources_t **out)
{
	*out = NULL;
	ht_resources_t *res = calloc(1, sizeof(*res));
	job_t *j = calloc(1, sizeof(*j));
	if (!res || !j) {
		free(res);
		free(j);
		return -ENOMEM;
	}
	j->t = t;
	j->res = res;
	/* older traces and programs without EXT events: nothing to merge for */
	ht_pass_consumer_t c = { t->next_events ? HT_MERGE_EXT : 0, false, false, res_event,
				 res_end, res_fini, j, false };
	int err = ht_pass_add(p, &c);
	if (err) {
		ht_resources_free(res);
		return err;
	}
	*out = res;
	return 0;
}

int ht_resources_build(const ht_trace_t *t, ht_resources_t **out)
{
	*out = NULL;
	ht_pass_t *p;
	ht_resources_t *res = NULL;
	int err = ht_pass_new(t, &p);
	if (err)
		return err;
	if (!(err = ht_resources_attach(p, t, &res)) && (err = ht_pass_run(p))) {
		ht_resources_free(res);
		res = NULL;
	}
	ht_pass_free(p);
	*out = res;
	return err;
}

void ht_resources_free(ht_resources_t *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nfd_leaks; i++)
		free(r->fd_leaks[i].fds);
	free(r->fd_leaks);
	for (size_t k = 0; k < r->nkinds; k++)
		free(r->kinds[k].sites);
	free(r->kinds);
	free(r);
}
