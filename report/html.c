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
 * TL_BUCKETS buckets, and the blocks summed by site, thread, birth and
 * death buckets, lifetime class and flags (analysis/blocks.h), which the
 * page's filters and time window combine per block. Everything comes
 * finished from the pass that built the model: the writer reads no
 * events. The layout is documented by the script that reads it
 * (report/html/report.js).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/frames.h"
#include "report/html.h"
#include "analysis/blocks.h"
#include "analysis/diff.h"
#include "analysis/leaks.h"
#include "analysis/pass.h"
#include "report/report.h"
#include "trace_format.h"
#include "analysis/util.h"

#define TL_BUCKETS HT_HTML_TL_BUCKETS /* the memory-over-time chart and the window's steps */
#define DIFF_ROWS 20000 /* diff rows kept (by the change in bytes); the rest summed */

/* ---- frames and the stack tree ------------------------------------------- */

typedef struct stacks {
	ht_frame_t *f; /* distinct frames; strings owned by the symbolizer */
	size_t nf, fcap;
	ht_map_t frame_of; /* hash of a frame -> index (collisions rehashed) */
	uint32_t *node;	   /* pairs (parent + 1, frame) */
	size_t nn, ncap;
	ht_map_t node_of;  /* (parent + 1) << 32 | frame -> node */
} stacks_t;

/* The "frames" ([function, file, line, module, address]) and "nodes"
 * (parent + 1, 0: outermost; frame) members of a stack tree, each with
 * its leading ",\n" and without the closing bracket of "nodes". */
static void put_stack_tree(FILE *out, const stacks_t *st)
{
	fputs(",\n\"frames\": [", out);
	for (size_t i = 0; i < st->nf; i++) {
		const ht_frame_t *f = &st->f[i];
		fputs(i ? ",\n[" : "\n[", out);
		ht_json_str(out, f->function);
		fputs(", ", out);
		ht_json_str(out, f->file);
		fprintf(out, ", %d, ", f->line > 0 ? f->line : 0);
		ht_json_str(out, f->module);
		fprintf(out, ", \"0x%" PRIx64 "\"", f->address);
		if (!f->function) { /* the label every output gives it */
			char lab[HT_FRAME_LABEL_LEN];
			fputs(", ", out);
			ht_json_str(out, ht_frame_label(f, lab, sizeof lab));
		}
		fputc(']', out);
	}
	fputs("],\n\"nodes\": [", out);
	for (size_t i = 0; i < 2 * st->nn; i++)
		fprintf(out, i ? (i % 32 ? ",%" PRIu32 : ",\n%" PRIu32) : "%" PRIu32, st->node[i]);
}

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

static int row_cmp(const void *pa, const void *pb)
{
	const ht_block_row_t *a = pa, *b = pb;
#define CMP(f)                          \
	if (a->f != b->f)               \
		return a->f < b->f ? -1 : 1
	CMP(site);
	CMP(thread);
	CMP(born);
	CMP(died);
	CMP(life);
	CMP(flags);
#undef CMP
	return 0;
}

/* blk's rows by the model's sites (stacks that symbolize alike are one
 * site), in order, those with the same keys summed. */
static int model_rows(const ht_model_t *m, const ht_blocks_t *blk, ht_block_row_t **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	if (!blk || !blk->nrows)
		return 0;
	ht_block_row_t *r = malloc(blk->nrows * sizeof(*r));
	if (!r)
		return -ENOMEM;
	size_t k = 0;
	for (size_t i = 0; i < blk->nrows; i++) {
		const ht_block_row_t *x = &blk->rows[i];
		uint32_t si = x->site < blk->nsites ? ht_model_site_of(m, blk->site_stack[x->site])
						    : HT_MAP_NONE;
		if (si == HT_MAP_NONE)
			continue;
		r[k] = *x;
		r[k++].site = si;
	}
	qsort(r, k, sizeof(*r), row_cmp);
	size_t w = 0;
	for (size_t i = 0; i < k; i++) {
		if (w && !row_cmp(&r[w - 1], &r[i])) {
			r[w - 1].blocks += r[i].blocks;
			r[w - 1].bytes += r[i].bytes;
			r[w - 1].var_blocks += r[i].var_blocks;
			r[w - 1].var_bytes += r[i].var_bytes;
		} else {
			r[w++] = r[i];
		}
	}
	*out = r;
	*n = w;
	return 0;
}

/* ---- the per-block table, packed ----------------------------------------
 * Rows sorted by site as varints (LEB128), base64 encoded: a head byte
 * (bits 0-2: the row's flags; 3: died != born; 4: blocks != 1; 5: thread
 * differs from the row before's; 6: site differs), then the site's
 * increase (bit 6), the thread (bit 5), born, died - born (bit 3), the
 * lifetime class, blocks (bit 4), bytes, and with variances var_blocks and
 * var_bytes: 5 to 6 bytes a row where the JSON arrays took 25, which keeps
 * a compiler's report (280k rows) within a few MB. Sums are rounded as
 * put_num does. */

typedef struct b64 {
	FILE *out;
	unsigned char in[3];
	int n;
} b64_t;

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void b64_byte(b64_t *b, unsigned char c)
{
	b->in[b->n++] = c;
	if (b->n < 3)
		return;
	unsigned v = (unsigned)b->in[0] << 16 | (unsigned)b->in[1] << 8 | b->in[2];
	char q[4] = { B64[v >> 18], B64[(v >> 12) & 63], B64[(v >> 6) & 63], B64[v & 63] };
	fwrite(q, 1, 4, b->out);
	b->n = 0;
}

static void b64_end(b64_t *b)
{
	if (!b->n)
		return;
	unsigned v = (unsigned)b->in[0] << 16 | (b->n > 1 ? (unsigned)b->in[1] << 8 : 0);
	char q[4] = { B64[v >> 18], B64[(v >> 12) & 63], b->n > 1 ? B64[(v >> 6) & 63] : '=', '=' };
	fwrite(q, 1, 4, b->out);
	b->n = 0;
}

static void put_varint(b64_t *b, uint64_t v)
{
	while (v >= 128) {
		b64_byte(b, (unsigned char)(v | 128));
		v >>= 7;
	}
	b64_byte(b, (unsigned char)v);
}

static int put_rows(FILE *out, const ht_block_row_t *rows, size_t n, bool variances)
{
	b64_t b = { out, { 0 }, 0 };
	uint32_t site = 0, thread = 0;
	for (size_t i = 0; i < n; i++) {
		const ht_block_row_t *r = &rows[i];
		uint64_t blocks = ht_round_u64(r->blocks);
		unsigned head = r->flags & 7;
		head |= (r->died != r->born) << 3 | (blocks != 1) << 4 | (r->thread != thread) << 5 |
			(r->site != site) << 6;
		b64_byte(&b, (unsigned char)head);
		if (r->site != site)
			put_varint(&b, r->site - site);
		if (r->thread != thread)
			put_varint(&b, r->thread);
		put_varint(&b, r->born);
		if (r->died != r->born)
			put_varint(&b, (uint64_t)(r->died - r->born));
		put_varint(&b, r->life);
		if (blocks != 1)
			put_varint(&b, blocks);
		put_varint(&b, ht_round_u64(r->bytes));
		if (variances) {
			put_varint(&b, ht_round_u64(r->var_blocks));
			put_varint(&b, ht_round_u64(r->var_bytes));
		}
		site = r->site;
		thread = r->thread;
	}
	b64_end(&b);
	return ferror(out) ? -EIO : 0;
}

static int write_data(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym,
		      const ht_report_opts_t *o, const ht_leaks_t *lk, const ht_blocks_t *blk)
{
	const ht_trace_t *t = m->trace;
	stacks_t st = { 0 };
	ht_timeline_t tl = { 0 };
	ht_frame_t *frames = NULL;
	size_t cap = 0;
	long *site_node_of = NULL;
	ht_block_row_t *rows = NULL;
	size_t nrows = 0;
	int err = -ENOMEM;

	if (!(site_node_of = malloc((m->nsites + 1) * sizeof(*site_node_of))))
		goto out;
	if ((err = ht_model_timeline(m, TL_BUCKETS, &tl)) || (err = model_rows(m, blk, &rows, &nrows)))
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

	fputc(']', out);
	put_stack_tree(out, &st);
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
		fprintf(out, ",%" PRIu64 ",%" PRIu64, s->frees, s->largest);
		if (sampled) {
			const ht_est_t *e = &s->est;
			fprintf(out, ",%.0f,%.0f,%.0f,%.0f,%.0f", ht_ci95(e->var_allocations),
				ht_ci95(e->var_bytes_allocated), ht_ci95(e->var_peak_bytes),
				ht_ci95(e->var_leaked_blocks), ht_ci95(e->var_leaked_bytes));
		}
		fputc(']', out);
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
	/* blocks: the per-block table (analysis/blocks.h) by the model's
	 * sites, packed (put_rows) */
	fprintf(out, "]},\n\"blocks\": {\"rows\": %zu, \"variances\": %s, \"packed\": \"", nrows,
		sampled ? "true" : "false");
	if ((err = put_rows(out, rows, nrows, sampled)))
		goto out;
	err = -ENOMEM;
	fputs("\"},\n", out);
	/* threads: [number (1: main), tid, name] */
	fputs("\"threads\": [", out);
	for (size_t i = 0; i < t->nthreads; i++) {
		fprintf(out, "%s[%zu,%" PRIu64 ",", i ? "," : "", i + 1, t->threads[i].tid);
		ht_json_str(out, t->threads[i].name);
		fputc(']', out);
	}
	/* sizes: [k, allocations, bytes]: size 0 (k = -1), or [2^k, 2^(k+1)) */
	if (t->have_summary || !blk) {
		fputs("],\n\"sizes\": null", out);
	} else {
		fputs("],\n\"sizes\": [", out);
		bool first = true;
		for (int k = 0; k < HT_BLK_SIZE_CLASSES; k++) {
			if (blk->size_blocks[k] == 0)
				continue;
			fprintf(out, first ? "[%d," : ",[%d,", k - 1);
			put_num(out, blk->size_blocks[k]);
			fputc(',', out);
			put_num(out, blk->size_bytes[k]);
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
	free(site_node_of);
	free(rows);
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

/* The template with its markers replaced: data goes in as put_script_safe
 * writes it. */
static int put_page(FILE *out, const char *data, size_t len)
{
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
	return ferror(out) ? -EIO : 0;
}

int ht_report_html(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym,
		   const ht_report_opts_t *o, const ht_leaks_t *leaks, const ht_blocks_t *blk)
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
		err = write_data(mem, m, sym, o, lk, blk);
		if (fclose(mem) && !err)
			err = -ENOMEM;
	}
	if (lk == &own)
		ht_leaks_free(&own);
	if (!err)
		err = put_page(out, data, len);
	free(data);
	return err;
}

/* ---- the diff page ------------------------------------------------------ */

/* One side's figures of a diff row: allocations, bytes allocated, frees,
 * peak bytes, leaked blocks, leaked bytes, temporary (null: unknown). */
static void put_figs(FILE *out, const ht_diff_figs_t *f, bool temp_known)
{
	fprintf(out, "%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",",
		f->allocations, f->bytes_allocated, f->frees, f->peak_bytes, f->leaked_blocks,
		f->leaked_bytes);
	if (temp_known)
		fprintf(out, "%" PRIu64, f->temporary);
	else
		fputs("null", out);
}

static void put_diff_side(FILE *out, const ht_diff_side_t *sd)
{
	const ht_model_t *m = sd->m;
	const ht_trace_t *t = m->trace;
	const ht_totals_t *tt = &m->totals;
	fputs("{\"path\": ", out);
	ht_json_str(out, sd->path);
	fputs(", \"program\": ", out);
	ht_report_program_json(out, t);
	if (m->sample_rate)
		fprintf(out, ", \"sampled\": {\"rate\": %" PRIu64 ", \"exact_totals\": %s}", t->sample_rate,
			t->have_end_counts ? "true" : "false");
	else
		fputs(", \"sampled\": null", out);
	fprintf(out, ", \"summary_mode\": %s, \"truncated\": %s, \"warnings\": [",
		t->have_summary ? "true" : "false", t->error ? "true" : "false");
	char w[8][HT_WARN_LEN];
	size_t nw = ht_report_warnings(m, w, 8);
	for (size_t i = 0; i < nw; i++) {
		if (i)
			fputs(", ", out);
		ht_json_str(out, w[i]);
	}
	/* as `heaptrail diff --format json`: null where the trace does not know */
	fprintf(out,
		"],\n \"totals\": {\"allocations\": %" PRIu64 ", \"frees\": %" PRIu64
		", \"bytes_allocated\": %" PRIu64 ", \"peak_heap_bytes\": %" PRIu64 ", \"peak_rss_bytes\": ",
		tt->allocations, tt->frees, tt->bytes_allocated, tt->peak_heap_bytes);
	if (tt->peak_rss_bytes)
		fprintf(out, "%" PRIu64, tt->peak_rss_bytes);
	else
		fputs("null", out);
	fprintf(out, ", \"leaked_bytes\": %" PRIu64 ", \"leaked_blocks\": %" PRIu64
		     ", \"temporary_allocations\": ",
		tt->leaked_bytes, tt->leaked_blocks);
	if (sd->temporary_known)
		fprintf(out, "%" PRIu64, tt->temporary);
	else
		fputs("null", out);
	fprintf(out, ", \"duration_seconds\": %.9f, \"sites\": %zu}}", (double)tt->duration_ns / 1e9,
		m->nsites);
}

static int write_diff_data(FILE *out, const ht_diff_t *d)
{
	stacks_t st = { 0 };
	ht_frame_t *frames = NULL;
	size_t cap = 0;
	size_t *idx = malloc((d->nsites + 1) * sizeof(*idx));
	long *node = malloc((d->nsites + 1) * sizeof(*node));
	int err = -ENOMEM;
	if (!idx || !node)
		goto out;
	/* every row by the change in bytes allocated, the largest first; past
	 * DIFF_ROWS the rest are summed into one row */
	size_t n = ht_diff_sort(d, HT_BY_BYTES, true, idx);
	size_t shown = n < DIFF_ROWS ? n : DIFF_ROWS;
	for (size_t i = 0; i < shown; i++) {
		const ht_diff_site_t *s = &d->sites[idx[i]];
		int side = ht_diff_shown_side(s);
		const ht_diff_side_t *sd = &d->side[side];
		if ((node[i] = site_node(&st, sd->m, sd->sym, &sd->m->sites[s->rep[side]], &frames, &cap)) < 0) {
			err = (int)node[i];
			goto out;
		}
	}
	long rest_node = -1;
	if (n > shown) {
		ht_frame_t ph = { 0 };
		ph.function = "[the other rows, summed]";
		long fi = frame_index(&st, &ph);
		if ((rest_node = fi < 0 ? fi : node_index(&st, UINT32_MAX, (uint32_t)fi)) < 0) {
			err = (int)rest_node;
			goto out;
		}
	}
	bool tk[2] = { d->side[0].temporary_known, d->side[1].temporary_known };
	fprintf(out, "{\"heaptrail_html_diff\": 1, \"match\": \"%s\",\n\"base\": ",
		d->match == HT_DIFF_BY_LINE ? "line" : "function");
	put_diff_side(out, &d->side[HT_DIFF_BASE]);
	fputs(",\n\"new\": ", out);
	put_diff_side(out, &d->side[HT_DIFF_NEW]);
	put_stack_tree(out, &st);
	/* rows: [node, status, sites in base, sites in new, base figures (7),
	 * new figures (7)] */
	fprintf(out, "],\n\"rows_total\": %zu, \"rows\": [", n);
	for (size_t i = 0; i < shown; i++) {
		const ht_diff_site_t *s = &d->sites[idx[i]];
		fprintf(out, "%s[%ld,", i ? ",\n" : "\n", node[i]);
		ht_json_str(out, ht_diff_status(d, s));
		fprintf(out, ",%" PRIu32 ",%" PRIu32 ",", s->nsites[0], s->nsites[1]);
		put_figs(out, &s->fig[0], tk[0]);
		fputc(',', out);
		put_figs(out, &s->fig[1], tk[1]);
		fputc(']', out);
	}
	if (n > shown) {
		ht_diff_figs_t sum[2];
		uint32_t ns[2] = { 0, 0 };
		memset(sum, 0, sizeof(sum));
		for (size_t i = shown; i < n; i++)
			for (int k = 0; k < 2; k++) {
				const ht_diff_figs_t *f = &d->sites[idx[i]].fig[k];
				sum[k].allocations += f->allocations;
				sum[k].bytes_allocated += f->bytes_allocated;
				sum[k].frees += f->frees;
				sum[k].peak_bytes += f->peak_bytes;
				sum[k].leaked_blocks += f->leaked_blocks;
				sum[k].leaked_bytes += f->leaked_bytes;
				sum[k].temporary += f->temporary;
				ns[k] += d->sites[idx[i]].nsites[k];
			}
		fprintf(out, ",\n[%ld,\"changed\",%" PRIu32 ",%" PRIu32 ",", rest_node, ns[0], ns[1]);
		put_figs(out, &sum[0], tk[0]);
		fputc(',', out);
		put_figs(out, &sum[1], tk[1]);
		fputc(']', out);
	}
	fputs("]}\n", out);
	err = 0;
out:
	free(frames);
	free(idx);
	free(node);
	free(st.f);
	free(st.node);
	ht_map_free(&st.frame_of);
	ht_map_free(&st.node_of);
	return err;
}

int ht_report_diff_html(FILE *out, const ht_diff_t *d)
{
	char *data = NULL;
	size_t len = 0;
	int err;
	FILE *mem = open_memstream(&data, &len);
	if (!mem)
		return -ENOMEM;
	err = write_diff_data(mem, d);
	if (fclose(mem) && !err)
		err = -ENOMEM;
	if (!err)
		err = put_page(out, data, len);
	free(data);
	return err;
}
