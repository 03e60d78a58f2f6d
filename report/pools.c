/* pools.c (report/) - the POOLS and SNAPSHOTS sections: tables in the
 * text report, the "pools" and "snapshots" members of the JSON report, one
 * writer each through the emitter (the figures come from analysis/model.c
 * and are defined in analysis/model.h).
 *
 * Numbers are exact (byte counts with thousands separators in the text) so
 * that a script can read the tables as well as a person, as in the PHASES
 * table. A snapshot's top sites are named by their leaf frame, the
 * allocation's caller, as `function file:line`: one line per snapshot.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/report.h"
#include "analysis/util.h"


/* A pool's or snapshot's name: the trace's text, else "#ID" (the NAME
 * event was lost with a damaged tail) or the given fallback for id 0. */
static const char *name_of(const ht_trace_t *t, uint64_t id, const char *none, char *buf,
			   size_t len)
{
	const char *s = id ? ht_trace_name(t, id) : NULL;
	if (s)
		return s;
	if (!id && none)
		return none;
	snprintf(buf, len, "#%" PRIu64, id);
	return buf;
}

static const char *pool_name(const ht_trace_t *t, const ht_pool_stat_t *p, char *buf, size_t len)
{
	const char *s = p->name_id ? ht_trace_name(t, p->name_id) : NULL;
	if (s && *s)
		return s;
	snprintf(buf, len, "#%" PRIu64, p->id); /* unnamed: the pool id tells them apart */
	return buf;
}

/* The leaf frame of a site's stack, past heaptrail.h's wrappers: they are
 * static inline, so an unoptimized build keeps them as the leaf frame
 * (heaptrail_pool_alloc heaptrail.h:175), and the site is their caller.
 * *f: NULL when the stack is unknown or empty (*n tells which). */
static int site_leaf(const ht_model_t *m, ht_symbolizer_t *sym, const ht_site_t *s,
		     const ht_frame_t **f, long *n, ht_frame_t **frames, size_t *cap)
{
	*f = NULL;
	*n = 0;
	if (!s->stack)
		return 0;
	*n = ht_model_frames(m, sym, s, frames, cap);
	if (*n < 0)
		return (int)*n;
	long k = 0;
	while (k + 1 < *n && (*frames)[k].function && !strncmp((*frames)[k].function, "heaptrail_", 10))
		k++;
	if (*n > 0)
		*f = &(*frames)[k];
	return 0;
}

/* A site as the text names it: `function file:line` (or what is known). */
static void site_label(const ht_site_t *s, const ht_frame_t *f, char *buf, size_t len)
{
	if (!s->stack) {
		snprintf(buf, len, "(stack unknown)");
		return;
	}
	if (!f) {
		snprintf(buf, len, "(empty stack)");
		return;
	}
	if (f->function)
		snprintf(buf, len, "%s", f->function);
	else
		snprintf(buf, len, "0x%" PRIx64, f->address);
	size_t used = strlen(buf);
	if (f->file && f->line > 0)
		snprintf(buf + used, len - used, " %s:%d", ht_base_name(f->file), f->line);
	else if (f->module)
		snprintf(buf + used, len - used, " in %s", ht_base_name(f->module));
}

int ht_section_pools(ht_emitter_t *e, const ht_model_t *m)
{
	if (!m->npools)
		return 0;
	const ht_trace_t *t = m->trace;
	char nb[32];
	ht_emit_rule(e, "POOLS");
	ht_emit_printf(e, "  %-20s %12s %14s %7s %10s %12s %14s\n", "pool", "allocations", "bytes",
		       "resets", "destroyed", "live blocks", "live bytes");
	ht_emit_arr_begin(e, "pools");
	for (size_t i = 0; i < m->npools; i++) {
		const ht_pool_stat_t *p = &m->pools[i];
		const char *name = p->name_id ? ht_trace_name(t, p->name_id) : NULL;
		ht_emit_nl(e, 2);
		ht_emit_obj_begin(e, NULL);
		ht_emit_row_begin(e, "  ");
		ht_emit_u64(e, "id", p->id);
		ht_emit_str(e, "name", name && *name ? name : NULL);
		ht_emit_col_name(e, 20, pool_name(t, p, nb, sizeof(nb)));
		ht_emit_cell_count(e, "allocations", 12, p->allocations);
		ht_emit_cell_count(e, "bytes_allocated", 14, p->bytes_allocated);
		ht_emit_cell_count(e, "resets", 7, p->resets);
		ht_emit_u64(e, "freed_by_reset_or_destroy", p->freed_by_ops);
		ht_emit_cell_yesno(e, "destroyed", 10, p->destroyed);
		ht_emit_cell_count(e, "live_blocks", 12, p->live_blocks);
		ht_emit_cell_count(e, "live_bytes", 14, p->live_bytes);
		ht_emit_row_end(e);
		ht_emit_obj_end(e);
	}
	ht_emit_arr_end(e);
	return ferror(e->out) ? -EIO : 0;
}

int ht_section_snapshots(ht_emitter_t *e, const ht_model_t *m, ht_symbolizer_t *sym)
{
	if (!m->nsnapshots)
		return 0;
	const ht_trace_t *t = m->trace;
	ht_frame_t *frames = NULL;
	size_t cap = 0;
	int err = 0;
	char nb[32], a[HT_FMT_LEN], lab[600];
	ht_emit_rule(e, "SNAPSHOTS");
	ht_emit_printf(e, "  %-16s %10s %14s %12s  %s\n", "snapshot", "time", "live bytes",
		       "live blocks", "top sites by live bytes");
	ht_emit_arr_begin(e, "snapshots");
	for (size_t i = 0; i < m->nsnapshots && !err; i++) {
		const ht_snapshot_t *sn = &m->snapshots[i];
		const char *name = sn->name_id ? ht_trace_name(t, sn->name_id) : NULL;
		const char *sname = name_of(t, sn->name_id, "signal", nb, sizeof(nb));
		ht_emit_nl(e, 2);
		ht_emit_obj_begin(e, NULL);
		ht_emit_row_begin(e, "  ");
		/* heaptrail_snapshot(NULL) names it "" */
		ht_emit_str(e, "name", name && *name ? name : NULL);
		ht_emit_col_name(e, 16, *sname ? sname : "(unnamed)");
		ht_emit_u64(e, "name_id", sn->name_id);
		ht_emit_bool(e, "signal", !sn->name_id);
		ht_emit_dbl(e, "time_seconds", 9, (double)sn->time / 1e9);
		ht_emit_col(e, 10, ht_fmt_duration(a, sn->time));
		ht_emit_cell_count(e, "live_bytes", 14, sn->live_bytes);
		ht_emit_cell_count(e, "live_blocks", 12, sn->live_blocks);
		ht_emit_printf(e, " %s", sn->ntop ? "" : " (nothing live)");
		ht_emit_nl(e, 3);
		ht_emit_arr_begin(e, "top_sites");
		for (size_t k = 0; k < sn->ntop; k++) {
			const ht_site_t *s = &m->sites[sn->top[k].site];
			const ht_frame_t *f;
			long n;
			if ((err = site_leaf(m, sym, s, &f, &n, &frames, &cap)))
				break;
			ht_emit_obj_begin(e, NULL);
			ht_emit_u64(e, "stack_id", s->stack_id);
			ht_emit_u64(e, "live_bytes", sn->top[k].live_bytes);
			ht_emit_u64(e, "live_blocks", sn->top[k].live_blocks);
			ht_emit_str(e, "function", f ? f->function : NULL);
			ht_emit_str(e, "file", f ? f->file : NULL);
			ht_emit_u64_or_null(e, "line", f && f->line > 0, f ? (uint64_t)f->line : 0);
			ht_emit_obj_end(e);
			if (!ht_emit_json(e)) {
				site_label(s, f, lab, sizeof(lab));
				ht_emit_printf(e, "%s", k ? "; " : " ");
				ht_emit_put(e, lab); /* what it adds to the names is plain */
				ht_emit_printf(e, " (%s B)", ht_fmt_count(a, sn->top[k].live_bytes));
			}
		}
		ht_emit_arr_end(e);
		ht_emit_row_end(e);
		ht_emit_obj_end(e);
	}
	ht_emit_arr_end(e);
	free(frames);
	if (err)
		return err;
	return ferror(e->out) ? -EIO : 0;
}
