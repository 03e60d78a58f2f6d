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
 * Memory stays bounded whatever the number of events: the events stream
 * from the loaded trace one at a time; what is kept is one bit per stack
 * (written yet?), one slot per thread (a realloc's pending free), and the
 * blocks live at the moment (address -> size, for a free's "size" and a
 * realloc's "prev_size"), the same table the model's replay keeps. Nothing
 * grows with the count of events.
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

#include "report/export.h"
#include "report/report.h"
#include "trace_format.h"
#include "analysis/util.h"

/* ---- live blocks: address -> size ------------------------------------------------
 * Open addressing, linear probing, backward-shift deletion (no tombstones,
 * so a long run of alloc/free does not degrade it). addr 0 marks an empty
 * slot: no allocator returns NULL for a block it recorded. */

typedef struct slot {
	uint64_t addr, size;
} slot_t;

typedef struct live {
	slot_t *slot;
	size_t cap, len; /* cap: power of two */
} live_t;

static inline size_t live_home(const live_t *l, uint64_t addr)
{
	return ht_util_hash64(addr) & (l->cap - 1);
}

static slot_t *live_find(live_t *l, uint64_t addr)
{
	if (!addr || !l->cap)
		return NULL;
	size_t mask = l->cap - 1;
	for (size_t i = live_home(l, addr);; i = (i + 1) & mask) {
		if (!l->slot[i].addr)
			return NULL;
		if (l->slot[i].addr == addr)
			return &l->slot[i];
	}
}

static void live_remove(live_t *l, slot_t *e)
{
	size_t mask = l->cap - 1;
	size_t i = (size_t)(e - l->slot);
	for (size_t j = (i + 1) & mask; l->slot[j].addr; j = (j + 1) & mask) {
		size_t h = live_home(l, l->slot[j].addr);
		/* j's entry may move to the hole at i unless its home is in (i, j] */
		if (((j - h) & mask) >= ((j - i) & mask)) {
			l->slot[i] = l->slot[j];
			i = j;
		}
	}
	l->slot[i].addr = 0;
	l->len--;
}

/* Insert or overwrite (a block whose free went unrecorded: the model drops
 * it the same way). Returns 0 or -ENOMEM. */
static int live_put(live_t *l, uint64_t addr, uint64_t size)
{
	if (!addr)
		return 0;
	slot_t *e = live_find(l, addr);
	if (e) {
		e->size = size;
		return 0;
	}
	if ((l->len + 1) * 4 > l->cap * 3) { /* load <= 3/4 */
		size_t ncap = l->cap ? l->cap * 2 : 1024;
		slot_t *n = ncap <= SIZE_MAX / sizeof(*n) ? calloc(ncap, sizeof(*n)) : NULL;
		if (!n)
			return -ENOMEM;
		for (size_t i = 0; i < l->cap; i++) {
			if (!l->slot[i].addr)
				continue;
			size_t j = ht_util_hash64(l->slot[i].addr) & (ncap - 1);
			while (n[j].addr)
				j = (j + 1) & (ncap - 1);
			n[j] = l->slot[i];
		}
		free(l->slot);
		l->slot = n;
		l->cap = ncap;
	}
	size_t mask = l->cap - 1, i = live_home(l, addr);
	while (l->slot[i].addr)
		i = (i + 1) & mask;
	l->slot[i] = (slot_t){ addr, size };
	l->len++;
	return 0;
}

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

typedef struct pending {
	uint64_t size; /* the old block's size */
	bool known;    /* the old block was live */
} pending_t;

typedef struct writer {
	FILE *out;
	const ht_model_t *m;
	ht_symbolizer_t *sym;
	uint8_t *stack_done; /* bit per index of trace->stacks: frames written */
	ht_frame_t *frames;
	size_t cap_frames;
	uint64_t n_alloc, n_realloc, n_free, n_unknown_free, n_unknown_prev;
} writer_t;

/* Write stack id's definition line unless already written. Returns 0 or
 * -ENOMEM; *known is false when the trace never defined the id. */
static int define_stack(writer_t *w, uint64_t id, uint64_t time, bool *known)
{
	const ht_trace_t *t = w->m->trace;
	const ht_stack_t *st = id ? ht_trace_stack(t, id) : NULL;
	*known = st != NULL;
	if (!st)
		return 0;
	size_t i = (size_t)(st - t->stacks);
	if (w->stack_done[i / 8] & (1u << (i % 8)))
		return 0;
	w->stack_done[i / 8] |= (uint8_t)(1u << (i % 8));
	/* a one-site view of the stack, to reuse the model's frame expansion
	 * (allocator frames dropped, inlined frames expanded) */
	ht_site_t site;
	memset(&site, 0, sizeof site);
	site.stack_id = id;
	site.stack = st;
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
		fprintf(w->out, ", \"inlined\": %s}", f->inlined ? "true" : "false");
	}
	fputs("]}\n", w->out);
	return 0;
}

static void write_header(FILE *out, const ht_trace_t *t)
{
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
}

int ht_export_events(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym, const ht_export_opts_t *o)
{
	(void)o;
	const ht_trace_t *t = m->trace;
	writer_t w;
	memset(&w, 0, sizeof w);
	w.out = out;
	w.m = m;
	w.sym = sym;
	live_t live = { 0 };
	ht_merge_t *mg = NULL;
	pending_t *pend = calloc(t->nthreads ? t->nthreads : 1, sizeof(*pend));
	w.stack_done = calloc(t->nstacks / 8 + 1, 1);
	int e = -ENOMEM;
	if (!pend || !w.stack_done || (e = ht_merge_new(t, &mg)))
		goto out;

	write_header(out, t);
	ht_event_t ev;
	uint64_t id = 0;
	char line[512];
	while (ht_merge_next(mg, &ev) && !ferror(out)) {
		char *p = line;
		slot_t *b;
		bool known;
		if (ev.type == HT_EV_FREE && ev.from_realloc) {
			/* the free half of a realloc: held for the realloc line, which
			 * the same thread's next event is */
			b = live_find(&live, ev.addr);
			pend[ev.thread] = (pending_t){ b ? b->size : 0, b != NULL };
			if (b)
				live_remove(&live, b);
			continue;
		}
		switch (ev.type) {
		case HT_EV_FREE:
			b = live_find(&live, ev.addr);
			p = put_lit(p, "{\"kind\": \"free\", \"id\": ");
			p = put_u64(p, id++);
			p = put_lit(p, ", \"time\": ");
			p = put_u64(p, ev.time);
			p = put_lit(p, ", \"thread\": ");
			p = put_u64(p, t->threads[ev.thread].tid);
			p = put_lit(p, ", \"addr\": ");
			p = put_hex(p, ev.addr);
			p = put_lit(p, ", \"size\": ");
			if (b) {
				p = put_u64(p, b->size);
				live_remove(&live, b);
			} else {
				p = put_lit(p, "null");
				w.n_unknown_free++;
			}
			p = put_lit(p, "}\n");
			w.n_free++;
			break;
		case HT_EV_ALLOC:
		case HT_EV_REALLOC: {
			/* the stack of its site: the site's number in the other
			 * outputs (stacks of a site symbolize alike) */
			uint64_t sid = ev.stack_id, when = ev.time;
			uint32_t si = ht_model_site_of(m, sid);
			if (si != HT_MAP_NONE && m->sites[si].stack) {
				sid = m->sites[si].stack_id;
				when = m->sites[si].first_time;
			}
			if ((e = define_stack(&w, sid, when, &known)))
				goto out;
			p = put_lit(p, ev.type == HT_EV_ALLOC ? "{\"kind\": \"alloc\", \"id\": "
							      : "{\"kind\": \"realloc\", \"id\": ");
			p = put_u64(p, id++);
			p = put_lit(p, ", \"time\": ");
			p = put_u64(p, ev.time);
			p = put_lit(p, ", \"thread\": ");
			p = put_u64(p, t->threads[ev.thread].tid);
			p = put_lit(p, ", \"fn\": \"");
			p = put_lit(p, ev.fn < HT_FN_COUNT ? fn_names[ev.fn] : "unknown");
			p = put_lit(p, "\", \"addr\": ");
			p = put_hex(p, ev.addr);
			p = put_lit(p, ", \"size\": ");
			p = put_u64(p, ev.size);
			if (ev.type == HT_EV_REALLOC) {
				pending_t *pd = &pend[ev.thread];
				p = put_lit(p, ", \"prev_addr\": ");
				p = put_hex(p, ev.old_addr);
				p = put_lit(p, ", \"prev_size\": ");
				if (pd->known) {
					p = put_u64(p, pd->size);
				} else {
					p = put_lit(p, "null");
					w.n_unknown_prev++;
				}
				/* when the old block was released: another thread may
				 * have been given its address before this line's time */
				p = put_lit(p, ", \"prev_time\": ");
				p = put_u64(p, ev.free_time);
				*pd = (pending_t){ 0, false };
				w.n_realloc++;
			} else {
				w.n_alloc++;
			}
			p = put_lit(p, ", \"stack\": ");
			if (known)
				p = put_u64(p, sid);
			else
				p = put_lit(p, "null");
			p = put_lit(p, "}\n");
			if ((e = live_put(&live, ev.addr, ev.size)))
				goto out;
			break;
		}
		default: /* RSS samples: not allocation events */
			continue;
		}
		fwrite(line, 1, (size_t)(p - line), out);
	}
	/* the closing line: lets a reader tell a complete file from a cut one */
	fprintf(out,
		"{\"kind\": \"end\", \"events\": %" PRIu64 ", \"alloc\": %" PRIu64
		", \"realloc\": %" PRIu64 ", \"free\": %" PRIu64 ", \"unknown_frees\": %" PRIu64
		", \"unknown_realloc_blocks\": %" PRIu64 ", \"live_blocks\": %zu, \"truncated\": %s}\n",
		id, w.n_alloc, w.n_realloc, w.n_free, w.n_unknown_free, w.n_unknown_prev, live.len,
		t->error ? "true" : "false");
	e = 0;
out:
	ht_merge_free(mg);
	free(live.slot);
	free(pend);
	free(w.stack_done);
	free(w.frames);
	if (e)
		return e;
	return ferror(out) ? -EIO : 0;
}
