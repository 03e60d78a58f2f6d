/* marks_section.c - tags and phases in the text and JSON reports (the
 * figures are defined in analysis/marks.h; docs/API.md explains them to users).
 *
 * Numbers are exact (bytes as counts with thousands separators) so that a
 * script can read the tables as well as a person. Stacks of `--tag` are
 * printed leaf first as `function  file:line`, like the main text report,
 * and grouped after cutting to --depth frames: with --depth 1 the view is
 * "which functions allocate this tag" (Crystal's TRACE_BACKTRACE_LIMIT).
 */
#include "analysis/frames.h"
#include "report/marks_section.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/report.h"
#include "analysis/util.h"

#define DEFAULT_TOP 10

const char ht_marks_no_tags_msg[] =
	"no tags: the program tags no blocks (heaptrail_tag in heaptrail.h)";

static int done(FILE *out)
{
	return ferror(out) ? -EIO : 0;
}

/* ---- --by-tag ------------------------------------------------------------------- */

/* The tags' table (text) or the "tags" member (JSON). */
int ht_section_tags(ht_emitter_t *e, const ht_marks_t *mk)
{
	size_t *idx = malloc((mk->ntags ? mk->ntags : 1) * sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	size_t n = ht_marks_sort_tags(mk, idx);
	char a[HT_FMT_LEN], b[HT_FMT_LEN], c[HT_FMT_LEN], d[HT_FMT_LEN];
	char title[96];
	snprintf(title, sizeof(title), "ALLOCATIONS BY TAG (%zu tag%s)", mk->ntags - 1,
		 mk->ntags == 2 ? "" : "s");
	ht_emit_rule(e, title);
	if (mk->tag_events == 0)
		ht_emit_printf(e, "  %s\n", ht_marks_no_tags_msg);
	/* the tag column fits the longest name, within reason */
	int col = 8;
	for (size_t i = 0; i < n; i++) {
		size_t l = ht_text_len(mk->tags[idx[i]].name);
		if (l > (size_t)col && l <= 40)
			col = (int)l;
	}
	ht_emit_printf(e, "  %-*s %13s %16s %13s %16s\n", col, "tag", "allocations", "bytes",
		       "live blocks", "live bytes");
	ht_emit_arr_begin(e, "tags");
	uint64_t ta = 0, tb = 0, tlb = 0, tly = 0;
	for (size_t i = 0; i < n; i++) {
		const ht_tag_stat_t *g = &mk->tags[idx[i]];
		ht_emit_printf(e, "  ");
		ht_emit_pad(e, g->name, col);
		ht_emit_printf(e, " %13s %16s %13s %16s\n", ht_fmt_count(a, g->allocations),
			       ht_fmt_count(b, g->bytes_allocated), ht_fmt_count(c, g->live_blocks),
			       ht_fmt_count(d, g->live_bytes));
		ta += g->allocations;
		tb += g->bytes_allocated;
		tlb += g->live_blocks;
		tly += g->live_bytes;
		ht_emit_nl(e, 2);
		ht_emit_obj_begin(e, NULL);
		ht_emit_str(e, "tag", g->name);
		ht_emit_bool(e, "untagged", idx[i] == HT_MARKS_UNTAGGED);
		ht_emit_u64(e, "allocations", g->allocations);
		ht_emit_u64(e, "bytes_allocated", g->bytes_allocated);
		ht_emit_u64(e, "live_blocks", g->live_blocks);
		ht_emit_u64(e, "live_bytes", g->live_bytes);
		/* by stack id: the frames are in "sites" under the same id */
		ht_emit_nl(e, 3);
		ht_emit_arr_begin(e, "stacks");
		for (size_t k = 0; ht_emit_json(e) && k < g->nstacks; k++) {
			const ht_tag_stack_t *st = &g->stacks[k];
			ht_emit_obj_begin(e, NULL);
			ht_emit_u64(e, "stack_id", st->stack_id);
			ht_emit_u64(e, "allocations", st->allocations);
			ht_emit_u64(e, "bytes_allocated", st->bytes_allocated);
			ht_emit_u64(e, "live_blocks", st->live_blocks);
			ht_emit_u64(e, "live_bytes", st->live_bytes);
			ht_emit_obj_end(e);
		}
		ht_emit_arr_end(e);
		ht_emit_obj_end(e);
	}
	ht_emit_arr_end(e);
	ht_emit_printf(e, "  %-*s %13s %16s %13s %16s\n", col, "total", ht_fmt_count(a, ta),
		       ht_fmt_count(b, tb), ht_fmt_count(c, tlb), ht_fmt_count(d, tly));
	ht_emit_printf(e, "\n  A block counts once, under the tag it had when freed (or at the end);"
			  "\n  live = still allocated when the trace ended.\n");
	if (mk->trace->sample_rate)
		ht_emit_printf(e,
			       "  Sampled trace (one sample per %" PRIu64 " bytes on average): the "
			       "figures are estimates,\n  and blocks that were not sampled left no tag.\n",
			       mk->trace->sample_rate);
	if (mk->retagged)
		ht_emit_printf(e, "  %s block%s tagged again with another tag (counted under the last)\n",
			       ht_fmt_count(a, mk->retagged), mk->retagged == 1 ? " was" : "s were");
	if (mk->tags_ignored)
		ht_emit_printf(e, "  %s tag%s named no live block and %s ignored\n",
			       ht_fmt_count(a, mk->tags_ignored), mk->tags_ignored == 1 ? "" : "s",
			       mk->tags_ignored == 1 ? "was" : "were");
	free(idx);
	return ferror(e->out) ? -EIO : 0;
}

int ht_report_by_tag_text(FILE *out, const ht_marks_t *mk, const char *trace_path)
{
	fprintf(out, "heaptrail report --by-tag%s", trace_path ? ": " : "");
	ht_text_put(out, trace_path);
	fputc('\n', out);
	ht_emitter_t e;
	ht_emit_init(&e, out, HT_EMIT_TEXT);
	return ht_section_tags(&e, mk);
}

/* ---- --tag NAME ------------------------------------------------------------------ */

/* One distinct stack once cut: its printed frames are the key. */
typedef struct group {
	char *key; /* lines "function\tlocation\n", leaf first */
	uint64_t allocations, bytes, live_blocks;
} group_t;

static bool is_runtime(const char *f)
{
	static const char *const names[] = { "_start", "__libc_start_main", "__libc_start_main_impl",
					     "__libc_start_call_main", "start_thread", "clone",
					     "clone3", "__clone", "__clone3" };
	if (!f)
		return false;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(f, names[i]))
			return true;
	return false;
}

/* The key of one stack: frames from ht_model_frames (allocator frames at
 * the leaf already dropped), the C runtime below main dropped as the text
 * report does, cut to depth. Returns a malloc'd string or NULL. */
static char *stack_key(const ht_model_t *m, ht_symbolizer_t *sym, const ht_tag_stack_t *ts,
		       size_t depth, ht_frame_t **frames, size_t *cap, int *err)
{
	ht_site_t site;
	memset(&site, 0, sizeof(site));
	site.stack_id = ts->stack_id;
	site.stack = ts->stack_id ? ht_trace_stack(m->trace, ts->stack_id) : NULL;
	site.first_time = ts->first_time;
	if (!site.stack)
		return strdup(ts->stack_id ? "(stack unknown: its definition is missing)\t\n"
					   : "(stack unknown)\t\n");
	long n = ht_model_frames(m, sym, &site, frames, cap);
	if (n < 0) {
		*err = (int)n;
		return NULL;
	}
	for (long i = 1; i < n; i++) {
		const char *f = (*frames)[i].function;
		if (f && (!strncmp(f, "__libc_start_", 13) || !strcmp(f, "start_thread"))) {
			n = i;
			break;
		}
	}
	while (n > 1 && is_runtime((*frames)[n - 1].function))
		n--;
	if (depth && (size_t)n > depth)
		n = (long)depth;
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);
	if (!mem) {
		*err = -ENOMEM;
		return NULL;
	}
	if (n == 0)
		fputs("(empty stack)\t\n", mem);
	for (long i = 0; i < n; i++) {
		const ht_frame_t *f = &(*frames)[i];
		long mi;
		/* escaped here: tabs and newlines separate the key's fields */
		char lab[HT_FRAME_LABEL_LEN];
		ht_text_put(mem, f->function ? f->function : ht_frame_label(f, lab, sizeof lab));
		fputc('\t', mem);
		if (f->file && f->line > 0) {
			ht_text_put(mem, f->file);
			fprintf(mem, ":%d", f->line);
		} else if (f->file) {
			ht_text_put(mem, f->file);
		} else if (!f->function) {
			/* the label says where: module+offset */
		} else if (f->module && (mi = ht_trace_module_for(m->trace, f->address,
								ts->first_time)) >= 0) {
			/* module+offset: tells frames apart without symbols, for addr2line */
			fputs("in ", mem);
			ht_text_put(mem, f->module);
			fprintf(mem, "+0x%" PRIx64, f->address - m->trace->modules[mi].bias);
		} else if (f->module) {
			fputs("in ", mem);
			ht_text_put(mem, f->module);
		} else
			fputs("in an unknown module", mem);
		fputs(f->inlined ? "  (inlined)\n" : "\n", mem);
	}
	if (fclose(mem)) {
		free(buf);
		*err = -ENOMEM;
		return NULL;
	}
	return buf;
}

static int key_cmp(const void *a, const void *b)
{
	return strcmp(((const group_t *)a)->key, ((const group_t *)b)->key);
}

static int count_cmp(const void *a, const void *b)
{
	const group_t *x = a, *y = b;
	if (x->allocations != y->allocations)
		return x->allocations > y->allocations ? -1 : 1;
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return strcmp(x->key, y->key);
}

static void print_key(FILE *out, const char *key)
{
	/* the function column fits this stack's longest name, up to 48 */
	size_t col = 0;
	for (const char *p = key; *p;) {
		const char *tab = strchr(p, '\t'), *nl = strchr(p, '\n');
		if (!tab || !nl)
			break;
		size_t l = (size_t)(tab - p);
		if (l > col && l <= 48)
			col = l;
		p = nl + 1;
	}
	for (const char *p = key; *p;) {
		const char *tab = strchr(p, '\t'), *nl = strchr(p, '\n');
		if (!tab || !nl)
			break;
		int l = (int)(tab - p), ll = (int)(nl - tab - 1);
		if (!ll) /* no location: no padding either */
			fprintf(out, "     %.*s\n", l, p);
		else
			fprintf(out, "     %.*s%*s  %.*s\n", l, p,
				(size_t)l < col ? (int)(col - (size_t)l) : 0, "", ll, tab + 1);
		p = nl + 1;
	}
}

int ht_report_tag_text(FILE *out, const ht_model_t *m, const ht_marks_t *mk,
		       ht_symbolizer_t *sym, const ht_tag_report_opts_t *o)
{
	char a[HT_FMT_LEN], b[HT_FMT_LEN], c[HT_FMT_LEN], d[HT_FMT_LEN];
	fputs("heaptrail report --tag ", out);
	ht_text_put(out, o->name);
	fputs(o->trace_path ? ": " : "", out);
	ht_text_put(out, o->trace_path);
	fputc('\n', out);
	const ht_tag_stat_t *g = ht_marks_find_tag(mk, o->name);
	if (!g || !g->allocations) {
		fputs("\n  no allocations carry the tag '", out);
		ht_text_put(out, o->name);
		fputc('\'', out);
		if (mk->tag_events == 0) {
			fprintf(out, ": %s\n", ht_marks_no_tags_msg);
		} else {
			fputs("; the tags are:", out);
			for (size_t i = 1; i < mk->ntags; i++) {
				if (mk->tags[i].allocations) {
					fputc(' ', out);
					ht_text_put(out, mk->tags[i].name);
				}
			}
			fputc('\n', out);
		}
		return ferror(out) ? -EIO : -ENOENT;
	}

	/* cut, then group stacks whose cut frames are equal */
	group_t *gr = calloc(g->nstacks ? g->nstacks : 1, sizeof(*gr));
	ht_frame_t *frames = NULL;
	size_t cap = 0, ng = 0;
	int err = 0;
	if (!gr)
		return -ENOMEM;
	for (size_t i = 0; i < g->nstacks && !err; i++) {
		const ht_tag_stack_t *ts = &g->stacks[i];
		char *key = stack_key(m, sym, ts, o->depth, &frames, &cap, &err);
		if (!key) {
			if (!err)
				err = -ENOMEM;
			break;
		}
		gr[ng++] = (group_t){ key, ts->allocations, ts->bytes_allocated, ts->live_blocks };
	}
	free(frames);
	size_t nu = 0;
	if (!err && ng) {
		qsort(gr, ng, sizeof(*gr), key_cmp);
		for (size_t i = 1; i < ng; i++) {
			if (!strcmp(gr[i].key, gr[nu].key)) {
				gr[nu].allocations += gr[i].allocations;
				gr[nu].bytes += gr[i].bytes;
				gr[nu].live_blocks += gr[i].live_blocks;
				free(gr[i].key);
			} else {
				gr[++nu] = gr[i];
			}
		}
		nu++;
		qsort(gr, nu, sizeof(*gr), count_cmp);
	}
	if (!err) {
		size_t kept = 0;
		while (kept < nu && gr[kept].allocations >= o->min_count)
			kept++;
		size_t top = o->top ? o->top : DEFAULT_TOP;
		size_t shown = kept < top ? kept : top;
		fputs("  tag         ", out);
		ht_text_put(out, g->name);
		fputc('\n', out);
		fprintf(out, "  allocations %s, %s B; %s still live at the end (%s B)\n",
			ht_fmt_count(a, g->allocations), ht_fmt_count(b, g->bytes_allocated),
			ht_fmt_count(c, g->live_blocks), ht_fmt_count(d, g->live_bytes));
		char title[160], dep[40];
		if (o->depth)
			snprintf(dep, sizeof(dep), "%zu frame%s", o->depth, o->depth == 1 ? "" : "s");
		else
			snprintf(dep, sizeof(dep), "all frames");
		snprintf(title, sizeof(title), "CALL STACKS (%zu of %zu distinct, %s, at least %" PRIu64
			 " allocation%s)", shown, nu, dep, o->min_count, o->min_count == 1 ? "" : "s");
		ht_report_rule(out, title);
		if (!shown)
			fprintf(out, "  no stack made at least %" PRIu64 " allocations\n", o->min_count);
		for (size_t i = 0; i < shown; i++) {
			fprintf(out, "%s#%-3zu%10s allocation%s, %s B", i ? "\n" : "", i + 1,
				ht_fmt_count(a, gr[i].allocations), gr[i].allocations == 1 ? "" : "s",
				ht_fmt_count(b, gr[i].bytes));
			if (gr[i].live_blocks)
				fprintf(out, ", %s live at the end", ht_fmt_count(c, gr[i].live_blocks));
			fputc('\n', out);
			print_key(out, gr[i].key);
		}
		if (kept > shown)
			fprintf(out, "\n... and %zu more stacks (--top 0 shows all)\n", kept - shown);
		if (nu > kept)
			fprintf(out, "\n%zu stack%s with fewer than %" PRIu64 " allocations left out"
				" (--min-count)\n", nu - kept, nu - kept == 1 ? "" : "s", o->min_count);
	}
	for (size_t i = 0; i < nu; i++)
		free(gr[i].key);
	if (nu == 0)
		for (size_t i = 0; i < ng; i++)
			free(gr[i].key);
	free(gr);
	return err ? err : done(out);
}

/* ---- phases ----------------------------------------------------------------------- */

int ht_section_phases(ht_emitter_t *e, const ht_marks_t *mk)
{
	if (!mk->nphases && !ht_emit_json(e))
		return 0;
	size_t *idx = malloc((mk->nphases ? mk->nphases : 1) * sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	size_t n = ht_marks_sort_phases(mk, idx);
	char a[HT_FMT_LEN], b[HT_FMT_LEN], c[HT_FMT_LEN], d[HT_FMT_LEN], f[HT_FMT_LEN];
	char title[64];
	snprintf(title, sizeof(title), "PHASES (%zu)", n);
	ht_emit_rule(e, title);
	int col = 8;
	for (size_t i = 0; i < n; i++) {
		size_t l = ht_text_len(mk->phases[idx[i]].name);
		if (l > (size_t)col && l <= 40)
			col = (int)l;
	}
	ht_emit_printf(e, "  %-*s %9s %13s %16s %18s %16s\n", col, "phase", "entered",
		       "allocations", "bytes", "net live change", "peak inside");
	ht_emit_arr_begin(e, "phases");
	uint64_t open = 0;
	for (size_t i = 0; i < n; i++) {
		const ht_phase_stat_t *p = &mk->phases[idx[i]];
		int64_t net = p->net_live_bytes;
		uint64_t mag = net < 0 ? (uint64_t)0 - (uint64_t)net : (uint64_t)net;
		char sn[HT_FMT_LEN + 2];
		snprintf(sn, sizeof(sn), "%s%s", net > 0 ? "+" : net < 0 ? "-" : "",
			 ht_fmt_count(d, mag));
		ht_emit_printf(e, "  ");
		ht_emit_pad(e, p->name, col);
		ht_emit_printf(e, " %9s %13s %16s %18s %16s%s\n", ht_fmt_count(a, p->entered),
			       ht_fmt_count(b, p->allocations), ht_fmt_count(c, p->bytes_allocated),
			       sn, ht_fmt_count(f, p->peak_inside), p->open_at_end ? "  *" : "");
		open += p->open_at_end;
		ht_emit_nl(e, 2);
		ht_emit_obj_begin(e, NULL);
		ht_emit_str(e, "phase", p->name);
		ht_emit_u64(e, "entered", p->entered);
		ht_emit_u64(e, "allocations", p->allocations);
		ht_emit_u64(e, "bytes_allocated", p->bytes_allocated);
		ht_emit_i64(e, "net_live_bytes", p->net_live_bytes);
		ht_emit_u64(e, "peak_inside_bytes", p->peak_inside);
		ht_emit_u64(e, "open_at_end", p->open_at_end);
		ht_emit_obj_end(e);
	}
	ht_emit_arr_end(e);
	ht_emit_printf(e, "\n  Allocations and bytes: made by the thread while the phase was open on it,"
			  "\n  nested phases included. Net live change and peak inside: the whole heap,"
			  "\n  from each entry to its exit, summed (net) or the highest (peak) over entries.\n");
	if (open)
		ht_emit_printf(e, "  * %s entr%s still open when the trace ended, closed there\n",
			       ht_fmt_count(a, open), open == 1 ? "y was" : "ies were");
	if (mk->unmatched_ends)
		ht_emit_printf(e, "  %s phase end%s had no open phase of that name and %s ignored\n",
			       ht_fmt_count(a, mk->unmatched_ends), mk->unmatched_ends == 1 ? "" : "s",
			       mk->unmatched_ends == 1 ? "was" : "were");
	if (mk->depth_capped)
		ht_emit_printf(e, "  phases nested deeper than %d on a thread count as entered only\n",
			       HT_MARKS_MAX_DEPTH);
	free(idx);
	return ferror(e->out) ? -EIO : 0;
}
