/* pools.c (report/) - the POOLS and SNAPSHOTS sections of the text report
 * and the "pools" and "snapshots" members of the JSON report (the
 * figures come from analysis/model.c and are defined in analysis/model.h).
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

/* Leaf frame of a site as `function file:line` (or what is known of it). */
static int site_label(const ht_model_t *m, ht_symbolizer_t *sym, uint32_t site, char *buf,
		      size_t len, ht_frame_t **frames, size_t *cap)
{
	const ht_site_t *s = &m->sites[site];
	if (!s->stack) {
		snprintf(buf, len, "(stack unknown)");
		return 0;
	}
	long n = ht_model_frames(m, sym, s, frames, cap);
	if (n < 0)
		return (int)n;
	if (n == 0) {
		snprintf(buf, len, "(empty stack)");
		return 0;
	}
	/* heaptrail.h's wrappers are static inline, so an unoptimized build
	 * keeps them as the leaf frame (heaptrail_pool_alloc heaptrail.h:175):
	 * the site is their caller */
	long k = 0;
	while (k + 1 < n && (*frames)[k].function && !strncmp((*frames)[k].function, "heaptrail_", 10))
		k++;
	const ht_frame_t *f = &(*frames)[k];
	if (f->function)
		snprintf(buf, len, "%s", f->function);
	else
		snprintf(buf, len, "0x%" PRIx64, f->address);
	size_t used = strlen(buf);
	if (f->file && f->line > 0)
		snprintf(buf + used, len - used, " %s:%d", ht_base_name(f->file), f->line);
	else if (f->module)
		snprintf(buf + used, len - used, " in %s", ht_base_name(f->module));
	return 0;
}

/* ---- text ------------------------------------------------------------------------ */

int ht_report_pools_text(FILE *out, const ht_model_t *m)
{
	if (!m->npools)
		return 0;
	const ht_trace_t *t = m->trace;
	char nb[32], a[HT_FMT_LEN], b[HT_FMT_LEN], c[HT_FMT_LEN], d[HT_FMT_LEN], e[HT_FMT_LEN];
	ht_report_rule(out, "POOLS");
	fprintf(out, "  %-20s %12s %14s %7s %10s %12s %14s\n", "pool", "allocations", "bytes",
		"resets", "destroyed", "live blocks", "live bytes");
	for (size_t i = 0; i < m->npools; i++) {
		const ht_pool_stat_t *p = &m->pools[i];
		fputs("  ", out);
		ht_text_pad(out, pool_name(t, p, nb, sizeof(nb)), 20);
		fprintf(out, " %12s %14s %7s %10s %12s %14s\n", ht_fmt_count(a, p->allocations),
			ht_fmt_count(b, p->bytes_allocated), ht_fmt_count(c, p->resets),
			p->destroyed ? "yes" : "no", ht_fmt_count(d, p->live_blocks),
			ht_fmt_count(e, p->live_bytes));
	}
	return ferror(out) ? -EIO : 0;
}

int ht_report_snapshots_text(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym)
{
	if (!m->nsnapshots)
		return 0;
	const ht_trace_t *t = m->trace;
	ht_frame_t *frames = NULL;
	size_t cap = 0;
	int err = 0;
	char nb[32], a[HT_FMT_LEN], b[HT_FMT_LEN], c[HT_FMT_LEN], lab[600];
	ht_report_rule(out, "SNAPSHOTS");
	fprintf(out, "  %-16s %10s %14s %12s  %s\n", "snapshot", "time", "live bytes",
		"live blocks", "top sites by live bytes");
	for (size_t i = 0; i < m->nsnapshots && !err; i++) {
		const ht_snapshot_t *sn = &m->snapshots[i];
		const char *sname = name_of(t, sn->name_id, "signal", nb, sizeof(nb));
		fputs("  ", out);
		ht_text_pad(out, *sname ? sname : "(unnamed)", 16);
		fprintf(out, " %10s %14s %12s ", ht_fmt_duration(a, sn->time),
			ht_fmt_count(b, sn->live_bytes), ht_fmt_count(c, sn->live_blocks));
		if (!sn->ntop)
			fputs(" (nothing live)", out);
		for (size_t k = 0; k < sn->ntop; k++) {
			if ((err = site_label(m, sym, sn->top[k].site, lab, sizeof(lab), &frames, &cap)))
				break;
			fputs(k ? "; " : " ", out);
			ht_text_put(out, lab); /* what it adds to the names is plain */
			fprintf(out, " (%s B)", ht_fmt_count(a, sn->top[k].live_bytes));
		}
		fputc('\n', out);
	}
	free(frames);
	if (err)
		return err;
	return ferror(out) ? -EIO : 0;
}

/* ---- JSON ------------------------------------------------------------------------- */

int ht_report_pools_json(FILE *out, const ht_model_t *m)
{
	const ht_trace_t *t = m->trace;
	fputc('[', out);
	for (size_t i = 0; i < m->npools; i++) {
		const ht_pool_stat_t *p = &m->pools[i];
		const char *name = p->name_id ? ht_trace_name(t, p->name_id) : NULL;
		fprintf(out, "%s\n  {\"id\": %" PRIu64 ", \"name\": ", i ? "," : "", p->id);
		ht_json_str(out, name && *name ? name : NULL);
		fprintf(out,
			", \"allocations\": %" PRIu64 ", \"bytes_allocated\": %" PRIu64
			", \"resets\": %" PRIu64 ", \"freed_by_reset_or_destroy\": %" PRIu64
			", \"destroyed\": %s, \"live_blocks\": %" PRIu64 ", \"live_bytes\": %" PRIu64 "}",
			p->allocations, p->bytes_allocated, p->resets, p->freed_by_ops,
			p->destroyed ? "true" : "false", p->live_blocks, p->live_bytes);
	}
	fputc(']', out);
	return ferror(out) ? -EIO : 0;
}

int ht_report_snapshots_json(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym)
{
	const ht_trace_t *t = m->trace;
	ht_frame_t *frames = NULL;
	size_t cap = 0;
	int err = 0;
	fputc('[', out);
	for (size_t i = 0; i < m->nsnapshots && !err; i++) {
		const ht_snapshot_t *sn = &m->snapshots[i];
		const char *name = sn->name_id ? ht_trace_name(t, sn->name_id) : NULL;
		fprintf(out, "%s\n  {\"name\": ", i ? "," : "");
		ht_json_str(out, name && *name ? name : NULL); /* heaptrail_snapshot(NULL): "" */
		fprintf(out,
			", \"name_id\": %" PRIu64 ", \"signal\": %s, \"time_seconds\": %.9f"
			", \"live_bytes\": %" PRIu64 ", \"live_blocks\": %" PRIu64 ",\n   \"top_sites\": [",
			sn->name_id, sn->name_id ? "false" : "true", (double)sn->time / 1e9,
			sn->live_bytes, sn->live_blocks);
		for (size_t k = 0; k < sn->ntop; k++) {
			const ht_site_t *s = &m->sites[sn->top[k].site];
			const ht_frame_t *f = NULL;
			if (s->stack) {
				long n = ht_model_frames(m, sym, s, &frames, &cap);
				if (n < 0) {
					err = (int)n;
					break;
				}
				long j = 0; /* past heaptrail.h's wrappers, as in the text */
				while (j + 1 < n && frames[j].function &&
				       !strncmp(frames[j].function, "heaptrail_", 10))
					j++;
				if (n > 0)
					f = &frames[j];
			}
			fprintf(out,
				"%s{\"stack_id\": %" PRIu64 ", \"live_bytes\": %" PRIu64
				", \"live_blocks\": %" PRIu64 ", \"function\": ",
				k ? ", " : "", s->stack_id, sn->top[k].live_bytes, sn->top[k].live_blocks);
			ht_json_str(out, f ? f->function : NULL);
			fputs(", \"file\": ", out);
			ht_json_str(out, f ? f->file : NULL);
			if (f && f->line > 0)
				fprintf(out, ", \"line\": %d}", f->line);
			else
				fputs(", \"line\": null}", out);
		}
		fputs("]}", out);
	}
	fputc(']', out);
	free(frames);
	if (err)
		return err;
	return ferror(out) ? -EIO : 0;
}
