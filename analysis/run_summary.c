/* run_summary.c - the processes of a run read one at a time (run_summary.h). */
#include "analysis/run_summary.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/reader.h"
#include "analysis/safe.h"
#include "analysis/util.h"
#include "trace_format.h"

/* "exit 0", "signal 9 (SIGKILL)", ... for the table. */
static void ending_short(const ht_trace_t *t, char *buf, size_t len)
{
	const char *abbr;
	switch (t->ending) {
	case HT_ENDING_EXIT:
		if (t->agent_flags & HT_AGENT_EXIT_CODE_UNKNOWN)
			snprintf(buf, len, "exit ?");
		else
			snprintf(buf, len, "exit %" PRIu64, t->end_status & 0xff);
		break;
	case HT_ENDING_UNDERSCORE_EXIT:
		snprintf(buf, len, "_exit %" PRIu64, t->end_status & 0xff);
		break;
	case HT_ENDING_SIGNAL:
		abbr = t->end_status < 65 ? sigabbrev_np((int)t->end_status) : NULL;
		snprintf(buf, len, "signal %" PRIu64 "%s%s%s", t->end_status, abbr ? " (SIG" : "",
			 abbr ? abbr : "", abbr ? ")" : "");
		break;
	case HT_ENDING_DETACH:
		snprintf(buf, len, "detached");
		break;
	case HT_ENDING_EXEC:
		snprintf(buf, len, "exec %s", t->exec_path ? ht_base_name(t->exec_path) : "");
		break;
	default:
		snprintf(buf, len, "cut short");
		break;
	}
	for (char *c = buf; *c; c++)
		if (*c == '\t' || *c == '\n')
			*c = ' ';
}

void ht_proc_fill(ht_proc_t *p, const ht_trace_t *t)
{
	if (!p->program) {
		const char *exe = t->exe_path && *t->exe_path ? t->exe_path
				  : t->argc ? t->argv[0] : "?";
		p->program = strdup(ht_base_name(exe));
	}
	if (p->pid < 0)
		p->pid = (long)t->pid;
	if (p->ppid < 0)
		p->ppid = (long)t->ppid;
	if (!p->ended[0])
		ending_short(t, p->ended, sizeof p->ended);
}

int ht_proc_load(ht_proc_load_t *l, ht_proc_t *p, bool by_address, ht_supp_list_t *supps)
{
	memset(l, 0, sizeof *l);
	int rc = ht_reader_load_file(p->path, NULL, &l->t);
	if (rc < 0) {
		fprintf(stderr, "heaptrail: %s: %s\n", HT_TEXT(p->shown),
			l->t && l->t->message[0] ? HT_TEXT(l->t->message) : ht_strerror(rc));
		ht_proc_load_free(l);
		return 1;
	}
	if (l->t->error)
		fprintf(stderr, "heaptrail: warning: %s: %s; reporting the records complete before it\n",
			HT_TEXT(p->shown), HT_TEXT(l->t->message));
	ht_proc_fill(p, l->t);
	l->sym = ht_symbolizer_new();
	if (l->sym)
		ht_trace_add_modules(l->t, l->sym);
	if (ht_model_build_sym(l->t, by_address ? NULL : l->sym, &l->m)) {
		fprintf(stderr, "heaptrail: %s: out of memory\n", HT_TEXT(p->shown));
		ht_proc_load_free(l);
		return 1;
	}
	l->have_lk = ht_leaks_build(l->m, l->sym, supps, &l->lk) == 0;
	return 0;
}

void ht_proc_load_free(ht_proc_load_t *l)
{
	if (l->have_lk)
		ht_leaks_free(&l->lk);
	ht_model_free(l->m);
	ht_symbolizer_free(l->sym);
	ht_trace_free(l->t);
	memset(l, 0, sizeof *l);
}

/* s copied to *pool, which moves past it; NULL stays NULL. */
static const char *pool_put(char **pool, const char *s)
{
	if (!s)
		return NULL;
	size_t n = strlen(s) + 1;
	char *d = memcpy(*pool, s, n);
	*pool += n;
	return d;
}

/* Keeps site's frames (n of f), their strings with them in one block. */
static int keep_stack(ht_kept_stack_t *k, const ht_site_t *site, const ht_frame_t *f, long n)
{
	memset(k, 0, sizeof *k);
	k->overflow = site->overflow;
	k->known = site->stack != NULL;
	k->stack_id = site->stack_id;
	if (n <= 0)
		return 0;
	size_t strs = 0;
	for (long i = 0; i < n; i++) {
		const char *s[4] = { f[i].function, f[i].file, f[i].module, f[i].folded_via };
		for (int j = 0; j < 4; j++)
			strs += s[j] ? strlen(s[j]) + 1 : 0;
	}
	k->frames = malloc((size_t)n * sizeof *f + strs);
	if (!k->frames)
		return -ENOMEM;
	char *pool = (char *)(k->frames + n);
	for (long i = 0; i < n; i++) {
		ht_frame_t *d = &k->frames[i];
		*d = f[i];
		d->function = pool_put(&pool, f[i].function);
		d->file = pool_put(&pool, f[i].file);
		d->module = pool_put(&pool, f[i].module);
		d->folded_via = pool_put(&pool, f[i].folded_via);
	}
	k->n = n;
	return 0;
}

void ht_kept_stack_free(ht_kept_stack_t *k)
{
	free(k->frames);
	memset(k, 0, sizeof *k);
}

/* One process: its row, and its top sites appended to s. */
static int summarize_one(ht_run_summary_t *s, size_t *scap, size_t ri, size_t top,
			 bool by_address, ht_supp_list_t *supps)
{
	ht_run_proc_t *r = &s->procs[ri];
	ht_proc_load_t l;
	if (ht_proc_load(&l, r->p, by_address, supps))
		return 1;
	const ht_model_t *m = l.m;
	r->loaded = true;
	r->start_ns = l.t->start_realtime_ns;
	r->allocations = m->totals.allocations;
	r->bytes = m->totals.bytes_allocated;
	r->peak = m->totals.peak_heap_bytes;
	r->in_use = m->totals.leaked_bytes;
	r->sampled = m->sample_rate != 0;
	if (l.have_lk)
		r->lost = l.lk.bytes[0] + l.lk.bytes[HT_LEAK_DEFINITE] + l.lk.bytes[HT_LEAK_INDIRECT];
	size_t *idx = malloc((m->nsites ? m->nsites : 1) * sizeof *idx);
	size_t k = idx ? ht_model_sort(m, HT_BY_BYTES, idx) : 0;
	r->nsites = k;
	if (k > top)
		k = top;
	ht_frame_t *frames = NULL;
	size_t fcap = 0;
	for (size_t i = 0; i < k; i++) {
		const ht_site_t *site = &m->sites[idx[i]];
		long nf = ht_model_frames(m, l.sym, site, &frames, &fcap);
		if (ht_util_grow((void **)&s->sites, scap, s->nsites + 1, sizeof *s->sites))
			break;
		ht_run_site_t *st = &s->sites[s->nsites];
		*st = (ht_run_site_t){ ri, site->bytes_allocated, site->allocations,
				       site->peak_bytes, { 0 } };
		if (keep_stack(&st->stack, site, frames, nf))
			break;
		s->nsites++;
	}
	free(frames);
	free(idx);
	ht_proc_load_free(&l);
	return 0;
}

static int cmp_start(const void *a, const void *b, void *arg)
{
	const ht_run_proc_t *procs = arg;
	const ht_run_proc_t *x = &procs[*(const size_t *)a], *y = &procs[*(const size_t *)b];
	if (x->loaded != y->loaded) /* an unreadable trace has no start: last */
		return x->loaded ? -1 : 1;
	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	return x->p < y->p ? -1 : x->p > y->p;
}

static int cmp_site(const void *a, const void *b)
{
	const ht_run_site_t *x = a, *y = b;
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return x->proc < y->proc ? -1 : x->proc > y->proc;
}

int ht_run_summarize(ht_run_summary_t *s, ht_proc_t *p, size_t n, size_t top, bool sites,
		     bool by_address, ht_supp_list_t *supps)
{
	memset(s, 0, sizeof *s);
	s->most = SIZE_MAX;
	s->procs = calloc(n ? n : 1, sizeof *s->procs);
	s->order = malloc((n ? n : 1) * sizeof *s->order);
	if (!s->procs || !s->order) {
		ht_run_summary_free(s);
		return -ENOMEM;
	}
	s->n = n;
	size_t scap = 0;
	for (size_t i = 0; i < n; i++) {
		s->procs[i].p = &p[i];
		s->failed += summarize_one(s, &scap, i, sites ? top : 0, by_address, supps) != 0;
		s->order[i] = i;
	}
	/* the processes in the order they started; the sites keep their
	 * process's index */
	qsort_r(s->order, n, sizeof *s->order, cmp_start, s->procs);
	if (s->nsites)
		qsort(s->sites, s->nsites, sizeof *s->sites, cmp_site);
	for (size_t i = 0; i < n; i++) {
		const ht_run_proc_t *r = &s->procs[i];
		s->total += r->bytes;
		s->nsites_all += r->nsites;
		if (r->loaded && (s->most == SIZE_MAX || r->bytes > s->procs[s->most].bytes))
			s->most = i;
	}
	return 0;
}

void ht_run_summary_free(ht_run_summary_t *s)
{
	for (size_t i = 0; i < s->nsites; i++)
		ht_kept_stack_free(&s->sites[i].stack);
	free(s->sites);
	free(s->order);
	free(s->procs);
	memset(s, 0, sizeof *s);
	s->most = SIZE_MAX;
}

/* ---- two runs by program ---------------------------------------------------------- */

static ht_run_program_t *program_row(ht_run_programs_t *r, const char *program)
{
	for (size_t i = 0; i < r->n; i++)
		if (!strcmp(r->rows[i].program, program))
			return &r->rows[i];
	if (ht_util_grow((void **)&r->rows, &r->cap, r->n + 1, sizeof *r->rows))
		return NULL;
	ht_run_program_t *row = &r->rows[r->n++];
	memset(row, 0, sizeof *row);
	row->program = program;
	return row;
}

int ht_run_by_program(ht_run_programs_t *r, ht_proc_t *const side[2], const size_t nproc[2],
		      bool by_address)
{
	memset(r, 0, sizeof *r);
	for (int k = 0; k < 2; k++) {
		for (size_t i = 0; i < nproc[k]; i++) {
			ht_run_summary_t one;
			/* no sites: the figures alone */
			if (ht_run_summarize(&one, &side[k][i], 1, 0, false, by_address, NULL))
				return -ENOMEM;
			const ht_run_proc_t pr = one.procs[0];
			r->failed += one.failed;
			ht_run_summary_free(&one);
			if (!pr.loaded)
				continue;
			ht_run_program_t *row =
				program_row(r, pr.p->program ? pr.p->program : "?");
			if (!row)
				continue;
			row->procs[k]++;
			row->bytes[k] += pr.bytes;
			row->lost[k] += pr.lost;
			if (pr.peak > row->peak[k])
				row->peak[k] = pr.peak;
		}
	}
	return 0;
}

void ht_run_programs_free(ht_run_programs_t *r)
{
	free(r->rows);
	memset(r, 0, sizeof *r);
}
