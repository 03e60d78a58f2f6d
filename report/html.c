/* html.c - the interactive HTML report: one file that opens from disk in a
 * browser, with no network, server or other file.
 *
 * The page is the template of report/html/ (report.html with its style and
 * script put in place of the <!--HT:CSS--> and <!--HT:JS--> markers; the
 * Makefile embeds the three files as build/gen/html_assets.c) and, in place
 * of <!--HT:DATA-->, the report's figures as one JSON object inside
 * <script type="application/json">. Every string from the trace goes
 * through ht_json_str, and then every '<', '>' and '&' of the object
 * becomes \u003c, \u003e, \u0026: only JSON strings can hold them, where
 * the escape means the same character, and so no name can close the script
 * element or start markup. The page's script reads the object with
 * JSON.parse and shows names with textContent only.
 *
 * The data holds sites and stacks, not events: frames once each, stacks as
 * a tree of (caller, frame) nodes that sites point into, the timeline in
 * TL_BUCKETS buckets, and for the top TOP_SITES sites by bytes their
 * allocations per bucket (what a time window sums), all from one replay
 * (ht_model_timeline_replay), which also gives the size histogram. The
 * layout is documented by the script that reads it (report/html/report.js).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/html.h"
#include "analysis/leaks.h"
#include "report/report.h"
#include "trace_format.h"
#include "analysis/util.h"

#define TL_BUCKETS 200 /* the memory-over-time chart and the window's steps */
#define TOP_SITES 1000 /* sites whose allocations are kept per bucket */
#define SIZE_CLASSES 65 /* size 0, then [2^k, 2^(k+1)) for k = 0..63 */

/* ---- per-event figures, from the timeline's replay ---------------------- */

typedef struct per_event {
	const ht_model_t *m;
	ht_map_t site_of;	/* stack id -> site index */
	int32_t *slot;		/* site -> row of the per-bucket tables, or -1 */
	size_t nslots;
	double *cnt, *bytes;	/* [slot][TL_BUCKETS] */
	uint64_t span;		/* as the timeline's: max(duration, 1) */
	double size_cnt[SIZE_CLASSES], size_bytes[SIZE_CLASSES];
} per_event_t;

static int on_event(void *ctx, const ht_event_t *ev, const ht_replay_step_t *st)
{
	per_event_t *p = ctx;
	if (ev->type != HT_EV_ALLOC && ev->type != HT_EV_REALLOC)
		return 0;
	int k = ev->size ? 64 - __builtin_clzll(ev->size) : 0;
	p->size_cnt[k] += st->weight;
	p->size_bytes[k] += st->weight_bytes;
	uint32_t si = ht_map_get(&p->site_of, ev->stack_id);
	if (si == HT_MAP_NONE || p->slot[si] < 0)
		return 0;
	/* the bucket the timeline puts the event in */
	unsigned __int128 b = (unsigned __int128)ev->time * TL_BUCKETS / p->span;
	size_t i = (size_t)p->slot[si] * TL_BUCKETS + (b >= TL_BUCKETS ? TL_BUCKETS - 1 : (size_t)b);
	p->cnt[i] += st->weight;
	p->bytes[i] += st->weight_bytes;
	return 0;
}

/* ---- frames and the stack tree ------------------------------------------- */

typedef struct stacks {
	ht_frame_t *f; /* distinct frames; strings owned by the symbolizer */
	size_t nf, fcap;
	ht_map_t frame_of; /* hash of a frame -> index (collisions rehashed) */
	uint32_t *node;	   /* pairs (parent + 1, frame) */
	size_t nn, ncap;
	ht_map_t node_of;  /* (parent + 1) << 32 | frame -> node */
} stacks_t;

static bool str_eq(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static bool frame_eq(const ht_frame_t *a, const ht_frame_t *b)
{
	return str_eq(a->function, b->function) && str_eq(a->file, b->file) && a->line == b->line &&
	       str_eq(a->module, b->module) && (a->function || a->address == b->address);
}

static uint64_t frame_hash(const ht_frame_t *f)
{
	uint64_t h = ht_fnv1a(f->function ? f->function : "");
	h = ht_util_hash64(h ^ ht_fnv1a(f->file ? f->file : "")) + (uint64_t)f->line;
	h = ht_util_hash64(h ^ ht_fnv1a(f->module ? f->module : ""));
	if (!f->function) /* unknown functions are told apart by address */
		h = ht_util_hash64(h ^ f->address);
	return h;
}

/* Index of frame f, added when new; -ENOMEM. */
static long frame_index(stacks_t *s, const ht_frame_t *f)
{
	uint64_t h = frame_hash(f);
	for (;;) {
		uint32_t i = ht_map_get(&s->frame_of, h);
		if (i == HT_MAP_NONE)
			break;
		if (frame_eq(&s->f[i], f))
			return i;
		h = ht_util_hash64(h + 1); /* another frame with this hash */
	}
	if (s->nf >= UINT32_MAX - 1 || ht_util_grow((void **)&s->f, &s->fcap, s->nf + 1, sizeof(*s->f)) ||
	    ht_map_put(&s->frame_of, h, (uint32_t)s->nf))
		return -ENOMEM;
	s->f[s->nf] = *f;
	return (long)s->nf++;
}

/* The node of frame fi under parent (UINT32_MAX: a root); -ENOMEM. */
static long node_index(stacks_t *s, uint32_t parent, uint32_t fi)
{
	uint64_t key = (uint64_t)(parent + 1U) << 32 | fi;
	uint32_t i = ht_map_get(&s->node_of, key);
	if (i != HT_MAP_NONE)
		return i;
	if (s->nn >= UINT32_MAX - 1 ||
	    ht_util_grow((void **)&s->node, &s->ncap, 2 * (s->nn + 1), sizeof(*s->node)) ||
	    ht_map_put(&s->node_of, key, (uint32_t)s->nn))
		return -ENOMEM;
	s->node[2 * s->nn] = parent + 1U;
	s->node[2 * s->nn + 1] = fi;
	return (long)s->nn++;
}

/* The leaf node of site s's stack; -ENOMEM. */
static long site_node(stacks_t *st, const ht_model_t *m, ht_symbolizer_t *sym, const ht_site_t *s,
		      ht_frame_t **frames, size_t *cap)
{
	long nf = ht_model_frames(m, sym, s, frames, cap);
	if (nf < 0)
		return nf;
	if (nf == 0) { /* one frame that says why there are none */
		ht_frame_t ph = { 0 };
		ph.function = ht_site_placeholder(s);
		long fi = frame_index(st, &ph);
		return fi < 0 ? fi : node_index(st, UINT32_MAX, (uint32_t)fi);
	}
	uint32_t parent = UINT32_MAX;
	for (long j = nf - 1; j >= 0; j--) { /* from the outermost caller */
		long fi = frame_index(st, &(*frames)[j]);
		long ni = fi < 0 ? fi : node_index(st, parent, (uint32_t)fi);
		if (ni < 0)
			return ni;
		parent = (uint32_t)ni;
	}
	return parent;
}

/* ---- the data object ---------------------------------------------------- */

/* A weighted sum, rounded (exact in an unsampled trace). */
static void put_num(FILE *out, double v)
{
	if (v < 1.8e19)
		fprintf(out, "%" PRIu64, (uint64_t)(v + 0.5));
	else
		fprintf(out, "%.0f", v);
}

static void write_totals(FILE *out, const ht_model_t *m, const ht_leaks_t *lk)
{
	const ht_totals_t *tt = &m->totals;
	const ht_trace_t *t = m->trace;
	bool no_events = t->have_summary, sampled = m->sample_rate != 0;
	fprintf(out,
		"{\"allocations\": %" PRIu64 ", \"frees\": %" PRIu64 ", \"bytes_allocated\": %" PRIu64
		", \"peak_heap_bytes\": %" PRIu64 ", \"peak_time_seconds\": %.9f, \"peak_rss_bytes\": ",
		tt->allocations, tt->frees, tt->bytes_allocated, tt->peak_heap_bytes,
		(double)tt->peak_time_ns / 1e9);
	if (tt->peak_rss_bytes)
		fprintf(out, "%" PRIu64, tt->peak_rss_bytes);
	else
		fputs("null", out);
	fprintf(out, ", \"leaked_blocks\": %" PRIu64 ", \"leaked_bytes\": %" PRIu64, tt->leaked_blocks,
		tt->leaked_bytes);
	if (sampled || no_events)
		fputs(", \"temporary_allocations\": null", out);
	else
		fprintf(out, ", \"temporary_allocations\": %" PRIu64, tt->temporary);
	fprintf(out, ", \"duration_seconds\": %.9f, \"allocations_per_second\": %.1f, \"sites\": %zu",
		(double)tt->duration_ns / 1e9, tt->allocs_per_second, m->nsites);
	if (no_events)
		fputs(", \"reallocs\": null, \"ignored_frees\": null, \"reused_addresses\": null", out);
	else
		fprintf(out,
			", \"reallocs\": %" PRIu64 ", \"ignored_frees\": %" PRIu64
			", \"reused_addresses\": %" PRIu64,
			tt->reallocs, tt->ignored_frees, tt->reused_addresses);
	fprintf(out, ", \"leaks_classified\": %s", lk->classified ? "true" : "false");
	ht_report_leak_totals_json(out, lk);
	if (sampled) {
		const ht_est_t *e = &tt->est;
		fprintf(out,
			", \"allocations_ci95\": %.0f, \"bytes_allocated_ci95\": %.0f"
			", \"peak_heap_bytes_ci95\": %.0f, \"leaked_blocks_ci95\": %.0f"
			", \"leaked_bytes_ci95\": %.0f",
			ht_ci95(e->var_allocations), ht_ci95(e->var_bytes_allocated),
			ht_ci95(e->var_peak_bytes), ht_ci95(e->var_leaked_blocks),
			ht_ci95(e->var_leaked_bytes));
	}
	fputc('}', out);
}

static int write_data(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym,
		      const ht_report_opts_t *o, const ht_leaks_t *lk)
{
	const ht_trace_t *t = m->trace;
	stacks_t st = { 0 };
	per_event_t pe = { 0 };
	ht_timeline_t tl = { 0 };
	ht_frame_t *frames = NULL;
	size_t cap = 0;
	long *site_node_of = NULL;
	size_t *idx = NULL;
	int err = -ENOMEM;

	/* the sites kept per bucket: most bytes first */
	pe.m = m;
	pe.span = m->totals.duration_ns ? m->totals.duration_ns : 1;
	if (!(idx = malloc((m->nsites + 1) * sizeof(*idx))) ||
	    !(pe.slot = malloc((m->nsites + 1) * sizeof(*pe.slot))) ||
	    !(site_node_of = malloc((m->nsites + 1) * sizeof(*site_node_of))))
		goto out;
	size_t nsorted = ht_model_sort(m, HT_BY_BYTES, idx);
	pe.nslots = nsorted < TOP_SITES ? nsorted : TOP_SITES;
	if (!(pe.cnt = calloc(pe.nslots * TL_BUCKETS + 1, sizeof(double))) ||
	    !(pe.bytes = calloc(pe.nslots * TL_BUCKETS + 1, sizeof(double))))
		goto out;
	for (size_t i = 0; i < m->nsites; i++) {
		pe.slot[i] = -1;
		if (!m->sites[i].overflow && ht_map_put(&pe.site_of, m->sites[i].stack_id, (uint32_t)i))
			goto out;
	}
	for (size_t i = 0; i < pe.nslots; i++)
		pe.slot[idx[i]] = (int32_t)i;
	if ((err = ht_model_timeline_replay(m, TL_BUCKETS, on_event, &pe, &tl)))
		goto out;
	for (size_t i = 0; i < m->nsites; i++)
		if ((site_node_of[i] = site_node(&st, m, sym, &m->sites[i], &frames, &cap)) < 0) {
			err = (int)site_node_of[i];
			goto out;
		}

	bool sampled = m->sample_rate != 0;
	fputs("{\"heaptrail_html\": 1, \"trace\": ", out);
	ht_json_str(out, o ? o->trace_path : NULL);
	fputs(",\n\"program\": ", out);
	ht_report_program_json(out, t);
	if (sampled)
		fprintf(out, ",\n\"sampled\": {\"rate\": %" PRIu64 ", \"exact_totals\": %s}",
			t->sample_rate, t->have_end_counts ? "true" : "false");
	else
		fputs(",\n\"sampled\": null", out);
	fprintf(out, ",\n\"summary_mode\": %s,\n\"totals\": ", t->have_summary ? "true" : "false");
	write_totals(out, m, lk);

	char w[8][HT_WARN_LEN];
	size_t nw = ht_report_warnings(m, w, 8);
	fputs(",\n\"error\": ", out);
	ht_json_str(out, t->error ? t->message : NULL);
	fputs(", \"warnings\": [", out);
	for (size_t i = 0; i < nw; i++) {
		if (i)
			fputs(", ", out);
		ht_json_str(out, w[i]);
	}

	/* frames: [function, file, line, module, address] */
	fputs("],\n\"frames\": [", out);
	for (size_t i = 0; i < st.nf; i++) {
		const ht_frame_t *f = &st.f[i];
		fputs(i ? ",\n[" : "\n[", out);
		ht_json_str(out, f->function);
		fputs(", ", out);
		ht_json_str(out, f->file);
		fprintf(out, ", %d, ", f->line > 0 ? f->line : 0);
		ht_json_str(out, f->module);
		fprintf(out, ", \"0x%" PRIx64 "\"]", f->address);
	}
	/* nodes: parent + 1 (0: outermost), frame; a site points at its leaf */
	fputs("],\n\"nodes\": [", out);
	for (size_t i = 0; i < 2 * st.nn; i++)
		fprintf(out, i ? (i % 32 ? ",%" PRIu32 : ",\n%" PRIu32) : "%" PRIu32, st.node[i]);
	/* sites: [node, allocations, bytes, peak bytes, leaked blocks, leaked
	 * bytes, temporary (null: unknown), frees, largest] */
	fputs("],\n\"sites\": [", out);
	for (size_t i = 0; i < m->nsites; i++) {
		const ht_site_t *s = &m->sites[i];
		fprintf(out,
			"%s[%ld,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",",
			i ? ",\n" : "\n", site_node_of[i], s->allocations, s->bytes_allocated,
			s->peak_bytes, s->leaked_blocks, s->leaked_bytes);
		if (sampled || t->have_summary)
			fputs("null", out);
		else
			fprintf(out, "%" PRIu64, s->temporary);
		fprintf(out, ",%" PRIu64 ",%" PRIu64 "]", s->frees, s->largest);
	}

	/* timeline: [start, end (seconds), heap at the end, highest heap,
	 * RSS (0: no sample yet), allocations, bytes allocated, frees] */
	fprintf(out, "],\n\"timeline\": {\"span_seconds\": %.9f, \"peak\": %zu, \"rss_samples\": %" PRIu64
		     ", \"buckets\": [",
		(double)tl.span_ns / 1e9, tl.peak, tl.rss_samples);
	for (size_t i = 0; i < tl.n; i++) {
		const ht_tl_bucket_t *b = &tl.b[i];
		fprintf(out,
			"%s[%.9f,%.9f,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "]",
			i ? ",\n" : "\n", (double)b->start_ns / 1e9, (double)b->end_ns / 1e9,
			b->heap_bytes, b->max_bytes, b->rss_bytes, b->allocations, b->bytes_allocated,
			b->frees);
	}
	/* site_time: per kept site, its non-empty buckets as flat triples
	 * (bucket, allocations, bytes) */
	fputs("]},\n\"site_time\": {\"sites\": [", out);
	for (size_t i = 0; i < pe.nslots; i++)
		fprintf(out, i ? ",%zu" : "%zu", idx[i]);
	fputs("], \"data\": [", out);
	for (size_t i = 0; i < pe.nslots && !t->have_summary; i++) {
		fputs(i ? ",\n[" : "\n[", out);
		bool first = true;
		for (size_t b = 0; b < TL_BUCKETS; b++) {
			double c = pe.cnt[i * TL_BUCKETS + b];
			if (c == 0)
				continue;
			fprintf(out, first ? "%zu," : ",%zu,", b);
			put_num(out, c);
			fputc(',', out);
			put_num(out, pe.bytes[i * TL_BUCKETS + b]);
			first = false;
		}
		fputc(']', out);
	}
	/* sizes: [k, allocations, bytes]: size 0 (k = -1), or [2^k, 2^(k+1)) */
	if (t->have_summary) {
		fputs("]},\n\"sizes\": null", out);
	} else {
		fputs("]},\n\"sizes\": [", out);
		bool first = true;
		for (int k = 0; k < SIZE_CLASSES; k++) {
			if (pe.size_cnt[k] == 0)
				continue;
			fprintf(out, first ? "[%d," : ",[%d,", k - 1);
			put_num(out, pe.size_cnt[k]);
			fputc(',', out);
			put_num(out, pe.size_bytes[k]);
			fputc(']', out);
			first = false;
		}
		fputc(']', out);
	}
	/* leaks: groups [class (0: unclassified, 1 definite .. 4 reachable),
	 * site, blocks, bytes], largest first within a class */
	fprintf(out, ",\n\"leaks\": {\"classified\": %s, \"suppressed_blocks\": %" PRIu64
		     ", \"suppressed_bytes\": %" PRIu64 ", \"groups\": [",
		lk->classified ? "true" : "false", lk->supp_blocks, lk->supp_bytes);
	for (size_t i = 0; i < lk->nshown; i++) {
		const ht_leak_group_t *g = &lk->g[i];
		fprintf(out, "%s[%u,%" PRIu32 ",%" PRIu64 ",%" PRIu64 "]", i ? ",\n" : "\n", g->kind,
			g->site, g->blocks, g->bytes);
	}
	fputs("]}", out);
	err = 0;
	if (m->nchecks) {
		fputs(",\n", out);
		err = ht_report_checks_json(out, m, sym);
	}
	if (!err) {
		fputs(",\n", out);
		err = ht_report_resources_json(out, m, sym);
	}
	fputs("}\n", out);
out:
	ht_timeline_free(&tl);
	free(frames);
	free(idx);
	free(site_node_of);
	free(pe.slot);
	free(pe.cnt);
	free(pe.bytes);
	ht_map_free(&pe.site_of);
	free(st.f);
	free(st.node);
	ht_map_free(&st.frame_of);
	ht_map_free(&st.node_of);
	return err;
}

/* ---- the page ----------------------------------------------------------- */

/* The data inside a script element: '<', '>' and '&' occur only in JSON
 * strings, where their \u escapes mean the same. */
static void put_script_safe(FILE *out, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c == '<')
			fputs("\\u003c", out);
		else if (c == '>')
			fputs("\\u003e", out);
		else if (c == '&')
			fputs("\\u0026", out);
		else
			fputc(c, out);
	}
}

int ht_report_html(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym,
		   const ht_report_opts_t *o, const ht_leaks_t *leaks)
{
	ht_leaks_t own;
	const ht_leaks_t *lk = leaks;
	int err;
	if (!lk) {
		if ((err = ht_leaks_build(m, sym, NULL, &own)))
			return err;
		lk = &own;
	}
	char *data = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&data, &len);
	if (!mem)
		err = -ENOMEM;
	else {
		err = write_data(mem, m, sym, o, lk);
		if (fclose(mem) && !err)
			err = -ENOMEM;
	}
	if (lk == &own)
		ht_leaks_free(&own);
	if (err) {
		free(data);
		return err;
	}
	/* the template with its markers replaced */
	const char *p = ht_html_page;
	for (;;) {
		const char *mk = strstr(p, "<!--HT:");
		if (!mk) {
			fputs(p, out);
			break;
		}
		fwrite(p, 1, (size_t)(mk - p), out);
		const char *end = strstr(mk, "-->");
		if (!end)
			break;
		size_t nl = (size_t)(end - mk) - 7;
		const char *name = mk + 7;
		if (nl == 3 && !memcmp(name, "CSS", 3))
			fputs(ht_html_css, out);
		else if (nl == 2 && !memcmp(name, "JS", 2))
			fputs(ht_html_js, out);
		else if (nl == 4 && !memcmp(name, "DATA", 4))
			put_script_safe(out, data, len);
		p = end + 3;
	}
	free(data);
	return ferror(out) ? -EIO : 0;
}
