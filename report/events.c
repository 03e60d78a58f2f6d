/* events.c - `heaptrail convert --format events`: every allocation, free and
 * realloc of the trace as JSON Lines (one JSON object per line), in time
 * order (ht_merge_*). docs/EXPORTS.md is the schema; in short:
 *
 *   {"kind": "header", "heaptrail_events": 1, "time_unit": "ns", ...}
 *   {"kind": "stack", "stack": 7, "frames": [{"ip": "0x...", "name": ..., ...}]}
 *   {"kind": "alloc", "id": 0, "time": 1234, "thread": 4242, "fn": "malloc",
 *    "addr": "0x...", "size": 16, "stack": 7}
 *   {"kind": "realloc", ..., "prev_addr": "0x...", "prev_size": 16, "prev_time": 1200}
 *   {"kind": "free", "id": 2, "time": ..., "thread": ..., "addr": "0x...", "size": 16}
 *   {"kind": "end", "events": 3, "alloc": 1, "realloc": 1, "free": 1, ...}
 *
 * Stacks are interned: a stack's frames are written once, on a "stack" line
 * right before the first event that uses it; events refer to it by id.
 *
 * The lines are written while the command's pass runs (analysis/pass.h),
 * one per record of analysis/event_log.h, whose callback this file's
 * ht_events_record is: the one way to keep memory bounded whatever the
 * number of events, since nothing is stored per event. The header goes out
 * before the pass (ht_events_begin), the closing line after it
 * (ht_export_events). The sizes of freed blocks come from the pass's table
 * of live blocks, the one the model counts with.
 *
 * Counting follows the model (memcheck's convention), so the lines add up to
 * the JSON report's totals: allocations = alloc + realloc lines; frees =
 * free lines with a size + realloc lines with a prev_size. A free of a block
 * the trace never saw allocated is still written (it happened) with "size":
 * null, as the report counts it under ignored_frees.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/frames.h"
#include "report/export.h"
#include "report/report.h"
#include "trace_format.h"
#include "analysis/event_log.h"
#include "analysis/util.h"

/* ---- JSON output ---------------------------------------------------------------- */

/* Event lines are the bulk of the output (10M events = 10M lines): each is
 * assembled in a small buffer with these, then written with one fwrite. */
static char *put_u64(char *p, uint64_t v)
{
	char tmp[24];
	int n = 0;
	do
		tmp[n++] = (char)('0' + v % 10);
	while ((v /= 10));
	while (n)
		*p++ = tmp[--n];
	return p;
}

static char *put_hex(char *p, uint64_t v)
{
	static const char digits[] = "0123456789abcdef";
	char tmp[16];
	int n = 0;
	*p++ = '"';
	*p++ = '0';
	*p++ = 'x';
	do
		tmp[n++] = digits[v & 15];
	while ((v >>= 4));
	while (n)
		*p++ = tmp[--n];
	*p++ = '"';
	return p;
}

static char *put_lit(char *p, const char *s)
{
	size_t n = strlen(s);
	memcpy(p, s, n);
	return p + n;
}

static const char *const fn_names[HT_FN_COUNT] = {
	[HT_FN_MALLOC] = "malloc",
	[HT_FN_CALLOC] = "calloc",
	[HT_FN_REALLOC] = "realloc",
	[HT_FN_REALLOCARRAY] = "reallocarray",
	[HT_FN_POSIX_MEMALIGN] = "posix_memalign",
	[HT_FN_ALIGNED_ALLOC] = "aligned_alloc",
	[HT_FN_MEMALIGN] = "memalign",
	[HT_FN_VALLOC] = "valloc",
	[HT_FN_PVALLOC] = "pvalloc",
	[HT_FN_CUSTOM] = "custom",
	[HT_FN_NEW] = "operator new",
	[HT_FN_NEW_ARRAY] = "operator new[]",
};

/* ---- the writer ------------------------------------------------------------------ */

struct ht_events_writer {
	FILE *out;
	const ht_model_t *m;
	uint8_t *defined; /* a bit per trace stack: its line is written */
	ht_symbolizer_t *sym;
	ht_frame_t *frames;
	size_t cap_frames;
};

/* Write the definition line of stack id, first used at time. Returns 0 or
 * -ENOMEM. */
static int define_stack(ht_events_writer_t *w, uint64_t id, uint64_t time)
{
	/* a one-site view of the stack, to reuse the model's frame expansion
	 * (allocator frames dropped, inlined frames expanded) */
	ht_site_t site;
	memset(&site, 0, sizeof site);
	site.stack_id = id;
	site.stack = ht_trace_stack(w->m->trace, id);
	site.first_time = time;
	long n = ht_model_frames(w->m, w->sym, &site, &w->frames, &w->cap_frames);
	if (n < 0)
		return (int)n;
	fprintf(w->out, "{\"kind\": \"stack\", \"stack\": %" PRIu64 ", \"frames\": [", id);
	for (long k = 0; k < n; k++) {
		const ht_frame_t *f = &w->frames[k];
		fprintf(w->out, "%s{\"ip\": \"0x%" PRIx64 "\", \"name\": ", k ? ", " : "", f->address);
		ht_json_str(w->out, f->function);
		fputs(", \"file\": ", w->out);
		ht_json_str(w->out, f->file);
		if (f->line > 0)
			fprintf(w->out, ", \"line\": %d", f->line);
		else
			fputs(", \"line\": null", w->out);
		fputs(", \"module\": ", w->out);
		ht_json_str(w->out, f->module);
		fprintf(w->out, ", \"inlined\": %s", f->inlined ? "true" : "false");
		if (!f->function) { /* the label every output gives it */
			char lab[HT_FRAME_LABEL_LEN];
			fputs(", \"label\": ", w->out);
			ht_json_str(w->out, ht_frame_label(f, lab, sizeof lab));
		}
		fputc('}', w->out);
	}
	fputs("]}\n", w->out);
	return 0;
}

int ht_events_begin(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym, ht_events_writer_t **wp)
{
	const ht_trace_t *t = m->trace;
	ht_events_writer_t *w = calloc(1, sizeof(*w));
	*wp = w;
	if (!w)
		return -ENOMEM;
	w->out = out;
	w->m = m;
	w->sym = sym;
	if (!(w->defined = calloc(t->nstacks / 8 + 1, 1)))
		return -ENOMEM;
	fprintf(out, "{\"kind\": \"header\", \"heaptrail_events\": 1, \"time_unit\": \"ns\", "
		     "\"time_origin\": \"process start\", \"start_realtime_ns\": %" PRIu64
		     ", \"pid\": %" PRIu64 ", \"command\": [",
		t->start_realtime_ns, t->pid);
	for (size_t i = 0; i < t->argc; i++) {
		if (i)
			fputs(", ", out);
		ht_json_str(out, t->argv[i]);
	}
	fputs("], \"executable\": ", out);
	ht_json_str(out, t->exe_path);
	fputs(", \"threads\": [", out);
	for (size_t i = 0; i < t->nthreads; i++) {
		fprintf(out, "%s{\"thread\": %" PRIu64 ", \"name\": ", i ? ", " : "", t->threads[i].tid);
		ht_json_str(out, t->threads[i].name);
		fputc('}', out);
	}
	fputs("]}\n", out);
	return 0;
}

void ht_events_writer_free(ht_events_writer_t *w)
{
	if (!w)
		return;
	free(w->frames);
	free(w->defined);
	free(w);
}

int ht_events_record(void *ctx, const ht_event_rec_t *r)
{
	ht_events_writer_t *w = ctx;
	const ht_event_t *ev = r->ev;
	const ht_trace_t *t = w->m->trace;
	char line[512];
	char *p = line;
	int e;
	if (ferror(w->out))
		return -EIO;
	if (ev->type == HT_EV_FREE) {
		p = put_lit(p, "{\"kind\": \"free\", \"id\": ");
		p = put_u64(p, r->id);
		p = put_lit(p, ", \"time\": ");
		p = put_u64(p, ev->time);
		p = put_lit(p, ", \"thread\": ");
		p = put_u64(p, t->threads[ev->thread].tid);
		p = put_lit(p, ", \"addr\": ");
		p = put_hex(p, ev->addr);
		p = put_lit(p, ", \"size\": ");
		p = r->known ? put_u64(p, r->size) : put_lit(p, "null");
		p = put_lit(p, "}\n");
		fwrite(line, 1, (size_t)(p - line), w->out);
		return 0;
	}
	/* the stack of its site: the site's number in the other outputs
	 * (stacks of a site symbolize alike) */
	uint64_t sid = r->stack_known ? ht_model_site_stack(w->m, ev->stack_id) : ev->stack_id;
	const ht_stack_t *s = r->stack_known ? ht_trace_stack(t, sid) : NULL;
	if (s) {
		size_t i = (size_t)(s - t->stacks);
		if (!(w->defined[i / 8] & (1u << (i % 8)))) {
			w->defined[i / 8] |= (uint8_t)(1u << (i % 8));
			if ((e = define_stack(w, sid, ev->time)))
				return e;
		}
	}
	p = put_lit(p, ev->type == HT_EV_ALLOC ? "{\"kind\": \"alloc\", \"id\": "
					       : "{\"kind\": \"realloc\", \"id\": ");
	p = put_u64(p, r->id);
	p = put_lit(p, ", \"time\": ");
	p = put_u64(p, ev->time);
	p = put_lit(p, ", \"thread\": ");
	p = put_u64(p, t->threads[ev->thread].tid);
	p = put_lit(p, ", \"fn\": \"");
	p = put_lit(p, ev->fn < HT_FN_COUNT ? fn_names[ev->fn] : "unknown");
	p = put_lit(p, "\", \"addr\": ");
	p = put_hex(p, ev->addr);
	p = put_lit(p, ", \"size\": ");
	p = put_u64(p, ev->size);
	if (ev->type == HT_EV_REALLOC) {
		p = put_lit(p, ", \"prev_addr\": ");
		p = put_hex(p, ev->old_addr);
		p = put_lit(p, ", \"prev_size\": ");
		p = r->known ? put_u64(p, r->size) : put_lit(p, "null");
		/* when the old block was released: another thread may have been
		 * given its address before this line's time */
		p = put_lit(p, ", \"prev_time\": ");
		p = put_u64(p, ev->free_time);
	}
	p = put_lit(p, ", \"stack\": ");
	p = r->stack_known ? put_u64(p, sid) : put_lit(p, "null");
	p = put_lit(p, "}\n");
	fwrite(line, 1, (size_t)(p - line), w->out);
	return 0;
}

int ht_export_events(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym, const ht_export_opts_t *o,
		     const ht_export_data_t *d)
{
	(void)sym;
	(void)o;
	const ht_event_log_t *l = d->events;
	/* the closing line: lets a reader tell a complete file from a cut one */
	fprintf(out,
		"{\"kind\": \"end\", \"events\": %" PRIu64 ", \"alloc\": %" PRIu64
		", \"realloc\": %" PRIu64 ", \"free\": %" PRIu64 ", \"unknown_frees\": %" PRIu64
		", \"unknown_realloc_blocks\": %" PRIu64 ", \"live_blocks\": %" PRIu64
		", \"truncated\": %s}\n",
		l->records, l->alloc, l->realloc, l->free, l->unknown_frees, l->unknown_prev,
		l->live_blocks, m->trace->error ? "true" : "false");
	return ferror(out) ? -EIO : 0;
}
