/* functions_section.c - the function profile's writers: the text call
 * trees of `heaptrail report --functions`, the JSON report's "functions"
 * section, and the function spans of the Chrome trace export.
 *
 * Function names: an ENTER carries the function's entry address, which is
 * looked up as is (ht_symbolize_exact), not minus 1 as a return address
 * would be. The outermost (non-inlined) frame names the function; an address
 * no symbol covers shows as hex, never as a made-up name.
 *
 * Times in the text report use one unit throughout (--time-unit, or picked
 * from the longest thread) so that columns compare at a glance; the JSON has
 * integer nanoseconds.
 */
#include "report/emitter.h"
#include "report/report.h"
#include "analysis/frames.h"
#include "report/functions_section.h"
#include "report/report.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "trace_format.h"
#include "analysis/util.h"

#define DEFAULT_TOP 10
#define MAX_NAME_COL 64	 /* the name column's width; longer rows overflow it */
#define MAX_INDENT_DEPTH 16 /* deeper rows stop indenting and show [depth] */

const char ht_fn_no_events_msg[] =
	"no function events: build the program with -finstrument-functions and run with --functions";

/* ---- names ------------------------------------------------------------------------ */

/* Resolved names of function addresses, each looked up once. */
typedef struct names {
	ht_map_t map; /* addr -> index */
	char **name;  /* owned copies: outlive nothing but this table */
	const char **file;
	int *line;
	size_t n, cap, cap_file, cap_line;
} names_t;

/* Frees the copies; the file strings belong to the symbolizer. */
static void names_free(names_t *nm)
{
	for (size_t i = 0; i < nm->n; i++)
		free(nm->name[i]);
	free(nm->name);
	free(nm->file);
	free(nm->line);
	ht_map_free(&nm->map);
}

/* Index of addr's entry, resolving it on first sight; HT_MAP_NONE on
 * -ENOMEM. when: a time the function was running (picks the module when
 * address ranges were reused after a dlclose). */
static uint32_t name_of(names_t *nm, const ht_trace_t *t, ht_symbolizer_t *sym, uint64_t addr,
			uint64_t when)
{
	uint32_t i = ht_map_get(&nm->map, addr);
	if (i != HT_MAP_NONE)
		return i;
	if (nm->n >= HT_MAP_NONE - 1 ||
	    ht_util_grow((void **)&nm->name, &nm->cap, nm->n + 1, sizeof(*nm->name)) ||
	    ht_util_grow((void **)&nm->file, &nm->cap_file, nm->n + 1, sizeof(*nm->file)) ||
	    ht_util_grow((void **)&nm->line, &nm->cap_line, nm->n + 1, sizeof(*nm->line)))
		return HT_MAP_NONE;
	const char *fn = NULL, *file = NULL, *mod = NULL;
	int line = 0;
	if (sym) {
		long mi = ht_trace_module_for(t, addr, when);
		ht_frame_t fr[16];
		/* modules are declared by index (ht_model_add_modules), not by id */
		size_t nf = ht_symbolize_exact(sym, mi >= 0 ? (uint64_t)mi : UINT64_MAX, addr, fr, 16);
		/* the out-of-line function is the last frame: an entry address
		 * is not inside an inlined call, but a clipped chain may be */
		if (nf) {
			const ht_frame_t *f = &fr[nf - 1];
			fn = f->function;
			file = f->file;
			line = f->line;
			mod = f->module;
		}
	} else {
		long mi = ht_trace_module_for(t, addr, when);
		mod = mi >= 0 ? t->modules[mi].path : NULL;
	}
	char buf[512];
	if (fn) {
		snprintf(buf, sizeof(buf), "%s", fn);
	} else {
		/* module+offset, as every output labels a frame without a name */
		long mi = ht_trace_module_for(t, addr, when);
		ht_frame_t f = { .module = mod && *mod ? mod : NULL, .address = addr,
				 .has_offset = mi >= 0, .offset = mi >= 0 ? addr - t->modules[mi].bias : 0 };
		ht_frame_label(&f, buf, sizeof buf);
	}
	char *copy = strdup(buf);
	if (!copy || ht_map_put(&nm->map, addr, (uint32_t)nm->n)) {
		free(copy);
		return HT_MAP_NONE;
	}
	nm->name[nm->n] = copy;
	nm->file[nm->n] = file; /* the symbolizer's string: lives while sym does */
	nm->line[nm->n] = line;
	return (uint32_t)nm->n++;
}


/* ---- time units -------------------------------------------------------------------------- */

bool ht_time_unit_parse(const char *s, ht_time_unit_t *out)
{
	static const struct {
		const char *name;
		ht_time_unit_t unit;
	} units[] = { { "ns", HT_TIME_NS }, { "us", HT_TIME_US }, { "ms", HT_TIME_MS },
		      { "s", HT_TIME_S } };
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (!strcmp(s, units[i].name)) {
			*out = units[i].unit;
			return true;
		}
	}
	return false;
}

/* The unit as --time-unit spells it (the header states it once). */
static const char *unit_name(ht_time_unit_t u)
{
	switch (u) {
	case HT_TIME_US: return "us";
	case HT_TIME_MS: return "ms";
	case HT_TIME_S: return "s";
	default: return "ns";
	}
}

/* A time in unit u: integer nanoseconds, else three decimals (exact: the
 * decimals are the remainder, not a float). */
static char *fmt_time(char *buf, uint64_t ns, ht_time_unit_t u)
{
	uint64_t div = u == HT_TIME_S ? 1000000000ULL : u == HT_TIME_MS ? 1000000ULL :
		       u == HT_TIME_US ? 1000ULL : 1;
	if (div == 1) {
		snprintf(buf, HT_FMT_LEN, "%" PRIu64, ns);
		return buf;
	}
	/* round to the nearest thousandth of the unit */
	uint64_t milli = div / 1000;
	uint64_t v = (ns + milli / 2) / milli;
	snprintf(buf, HT_FMT_LEN, "%" PRIu64 ".%03u", v / 1000, (unsigned)(v % 1000));
	return buf;
}

/* AUTO: the unit in which the longest thread takes 10 to 10,000 units. */
static ht_time_unit_t pick_unit(const ht_fn_profile_t *p, ht_time_unit_t u)
{
	if (u != HT_TIME_AUTO)
		return u;
	uint64_t mx = 0;
	for (size_t i = 0; i < p->nthreads; i++)
		if (p->nodes[p->threads[i].root].total_ns > mx)
			mx = p->nodes[p->threads[i].root].total_ns;
	if (mx >= 10000000000ULL)
		return HT_TIME_S;
	if (mx >= 10000000ULL)
		return HT_TIME_MS;
	if (mx >= 10000ULL)
		return HT_TIME_US;
	return HT_TIME_NS;
}

/* ---- the text report ---------------------------------------------------------------------- */

/* State of one text or JSON writer: names are resolved once per function
 * and freed with the writer; the first error sticks and ends the output. */
typedef struct tw {
	ht_emitter_t *e;
	const ht_fn_profile_t *p;
	ht_symbolizer_t *sym;
	const ht_fn_report_opts_t *o;
	ht_time_unit_t unit;
	names_t names;
	int col; /* width of the name column */
	int err;
} tw_t;

/* A node's function name; "?" (and w->err set) when out of memory. */
static const char *node_name(tw_t *w, const ht_fn_node_t *n)
{
	const ht_fn_func_t *f = &w->p->funcs[n->func];
	uint32_t i = name_of(&w->names, w->p->trace, w->sym, f->addr, f->first_time);
	if (i == HT_MAP_NONE) {
		w->err = -ENOMEM;
		return "?";
	}
	return w->names.name[i];
}

/* Characters the node's name cell takes: indentation, depth marker, name. */
static int cell_width(tw_t *w, const ht_fn_node_t *n)
{
	uint32_t d = n->depth - 1;
	int ind = 2 * (int)(d < MAX_INDENT_DEPTH ? d : MAX_INDENT_DEPTH);
	int mark = d >= MAX_INDENT_DEPTH ? snprintf(NULL, 0, "[%u] ", n->depth) : 0;
	return ind + mark + (int)ht_text_len(node_name(w, n));
}

/* Widen the name column to the widest row below node ni (capped, so one
 * long C++ name cannot push every number off the screen). Recursion depth
 * is bounded by HT_FN_MAX_DEPTH. */
static void measure(tw_t *w, uint32_t ni)
{
	const ht_fn_profile_t *p = w->p;
	for (uint32_t c = p->nodes[ni].first_child; c != HT_FN_NONE; c = p->nodes[c].next_sibling) {
		int cw = cell_width(w, &p->nodes[c]);
		if (cw > w->col)
			w->col = cw < MAX_NAME_COL ? cw : MAX_NAME_COL;
		measure(w, c);
	}
}

/* One heap column pair: readable size, then the allocation count. */
static void heap_cells(tw_t *w, uint64_t bytes, uint64_t allocs)
{
	char a[HT_FMT_LEN], b[HT_FMT_LEN];
	ht_emit_printf(w->e, "  %10s %8s", ht_fmt_size(a, bytes), ht_fmt_count(b, allocs));
}

static void print_node(tw_t *w, uint32_t ni);

/* The children kids[0..k) of a node at depth, longest first: with --top N
 * the first N and a line for the rest. */
static void print_kids(tw_t *w, const uint32_t *kids, long k, uint32_t depth)
{
	size_t top = w->o->top && w->o->top != SIZE_MAX ? w->o->top : SIZE_MAX;
	for (long i = 0; i < k && !w->err; i++) {
		if ((size_t)i >= top) {
			char a[HT_FMT_LEN];
			uint64_t calls = 0;
			for (long j = i; j < k; j++)
				calls += w->p->nodes[kids[j]].calls;
			uint32_t d = depth < MAX_INDENT_DEPTH ? depth : MAX_INDENT_DEPTH;
			ht_emit_printf(w->e, "  %*s... %ld more callee%s (%s calls; --top 0 shows all)\n",
				2 * (int)d, "", k - i, k - i == 1 ? "" : "s", ht_fmt_count(a, calls));
			break;
		}
		print_node(w, kids[i]);
	}
}

/* Row of node ni, then its subtree, children longest first. */
static void print_node(tw_t *w, uint32_t ni)
{
	const ht_fn_profile_t *p = w->p;
	const ht_fn_node_t *n = &p->nodes[ni];
	ht_emitter_t *e = w->e;
	char a[HT_FMT_LEN], b[HT_FMT_LEN], c[HT_FMT_LEN];
	uint32_t d = n->depth - 1;
	int ind = 2 * (int)(d < MAX_INDENT_DEPTH ? d : MAX_INDENT_DEPTH);
	int used = ind;
	ht_emit_printf(e, "  %*s", ind, "");
	if (d >= MAX_INDENT_DEPTH) {
		used += snprintf(NULL, 0, "[%u] ", n->depth);
		ht_emit_printf(e, "[%u] ", n->depth);
	}
	ht_emit_put(e, node_name(w, n));
	used += (int)ht_text_len(node_name(w, n));
	ht_emit_printf(e, "%*s  %10s %14s %14s", used < w->col ? w->col - used : 0, "",
		ht_fmt_count(a, n->calls), fmt_time(b, n->total_ns, w->unit),
		fmt_time(c, n->self_ns, w->unit));
	if (w->o->memory) {
		heap_cells(w, n->heap_bytes, n->heap_allocs);
		heap_cells(w, n->own_bytes, n->own_allocs);
	}
	/* what the figures do not show plainly */
	if (n->folded_calls)
		ht_emit_printf(e, "  [+%s deeper calls folded in]", ht_fmt_count(a, n->folded_calls));
	if (n->closed_at_end)
		ht_emit_printf(e, "  [%s still open at the end]", ht_fmt_count(a, n->closed_at_end));
	ht_emit_printf(e, "\n");

	uint32_t *kids = NULL;
	size_t cap = 0;
	long k = ht_fn_children(p, ni, &kids, &cap);
	if (k < 0)
		w->err = (int)k;
	print_kids(w, kids, k, n->depth);
	free(kids);
}

/* Column titles, repeated per thread so each tree reads on its own. */
static void print_header_row(tw_t *w)
{
	ht_emit_printf(w->e, "  %-*s  %10s %14s %14s", w->col, "function", "calls", "total", "self");
	if (w->o->memory)
		ht_emit_printf(w->e, "  %10s %8s  %10s %8s", "heap", "allocs", "own heap", "allocs");
	ht_emit_printf(w->e, "\n");
}

/* One thread: a title line, its tree, then a note for each figure that
 * needed an assumption (open calls, ignored returns, folding). */
static void print_thread(tw_t *w, const ht_fn_thread_t *th)
{
	const ht_fn_profile_t *p = w->p;
	const ht_trace_t *t = p->trace;
	const ht_thread_t *tt = &t->threads[th->thread];
	const ht_fn_node_t *root = &p->nodes[th->root];
	char a[HT_FMT_LEN], b[HT_FMT_LEN], c[HT_FMT_LEN];
	ht_emitter_t *e = w->e;

	ht_emit_printf(e, "\nthread %" PRIu64, tt->tid);
	if (tt->name && tt->name[0]) {
		ht_emit_printf(e, " (");
		ht_emit_put(e, tt->name);
		ht_emit_printf(e, ")");
	} else if (tt->tid == t->pid)
		ht_emit_printf(e, " (main)");
	ht_emit_printf(e, ": %s call%s, %s %s recorded\n", ht_fmt_count(a, th->enters),
		th->enters == 1 ? "" : "s",
		fmt_time(b, root->total_ns, w->unit), unit_name(w->unit));
	if (w->o->memory && root->own_allocs)
		ht_emit_printf(e, "  outside instrumented functions: %s allocations, %s\n",
			ht_fmt_count(a, root->own_allocs), ht_fmt_size(c, root->own_bytes));
	print_header_row(w);

	uint32_t *kids = NULL;
	size_t cap = 0;
	long k = ht_fn_children(p, th->root, &kids, &cap);
	if (k < 0)
		w->err = (int)k;
	print_kids(w, kids, k, 0);
	free(kids);

	if (th->closed_at_end)
		ht_emit_printf(e, "  note: %s calls were still open when the thread's events ended; "
			     "they are closed at its last event\n",
			ht_fmt_count(a, th->closed_at_end));
	if (th->unmatched_exits)
		ht_emit_printf(e, "  note: %s returns from calls entered while recording was off "
			     "were ignored\n",
			ht_fmt_count(a, th->unmatched_exits));
	if (th->folded_calls)
		ht_emit_printf(e, "  note: %s calls deeper than %d levels (deepest stack: %" PRIu64
			     ") are folded into the deepest node shown\n",
			ht_fmt_count(a, th->folded_calls), HT_FN_MAX_DEPTH, th->max_depth);
}

/* One of the two top tables: functions across threads by own bytes or own
 * allocation count. */
static void print_top(tw_t *w, bool by_count, size_t *idx)
{
	const ht_fn_profile_t *p = w->p;
	ht_emitter_t *e = w->e;
	size_t top = w->o->top ? w->o->top : DEFAULT_TOP;
	size_t n = ht_fn_sort_funcs(p, by_count, idx);
	ht_emit_printf(e, "\nTop functions by own %s (allocations made while the function was on "
		     "top; all threads)\n",
		by_count ? "allocation count" : "bytes allocated");
	if (!n) {
		ht_emit_printf(e, "  (none: no allocation was made inside an instrumented function)\n");
		return;
	}
	ht_emit_printf(e, "  %4s  %12s %10s %12s  %s\n", "#", "own bytes", "allocs", "calls", "function");
	for (size_t i = 0; i < n && i < top && !w->err; i++) {
		const ht_fn_func_t *f = &p->funcs[idx[i]];
		char a[HT_FMT_LEN], b[HT_FMT_LEN], c[HT_FMT_LEN];
		uint32_t ni = name_of(&w->names, p->trace, w->sym, f->addr, f->first_time);
		if (ni == HT_MAP_NONE) {
			w->err = -ENOMEM;
			break;
		}
		ht_emit_printf(e, "  %4zu  %12s %10s %12s  ", i + 1, ht_fmt_size(a, f->own_bytes),
			ht_fmt_count(b, f->own_allocs), ht_fmt_count(c, f->calls));
		ht_emit_put(e, w->names.name[ni]);
		if (w->names.file[ni]) {
			ht_emit_printf(e, "  ");
			ht_emit_put(e, w->names.file[ni]);
			ht_emit_printf(e, ":%d", w->names.line[ni]);
		}
		ht_emit_printf(e, "\n");
	}
}

/* The flat profile (ht_fn_flat): one row per function, most self time
 * first, up to the top. */
static void print_flat(tw_t *w, const uint64_t *total, const size_t *idx)
{
	ht_emitter_t *e = w->e;
	const ht_fn_profile_t *p = w->p;
	size_t top = w->o->top ? w->o->top : DEFAULT_TOP;
	size_t n = p->nfuncs < top ? p->nfuncs : top;
	uint64_t all = 0;
	for (size_t i = 0; i < p->nthreads; i++)
		all += p->nodes[p->threads[i].root].total_ns;
	char title[128];
	if (n < p->nfuncs)
		snprintf(title, sizeof title, "FLAT PROFILE (top %zu of %zu functions)", n, p->nfuncs);
	else
		snprintf(title, sizeof title, "FLAT PROFILE (%zu function%s)", n, n == 1 ? "" : "s");
	ht_emit_rule(e, title);
	ht_emit_printf(e, "  by self time; calls counts every call, recursive ones too; total "
			  "counts each outermost call once\n");
	ht_emit_printf(e, "  %12s %6s %12s %10s %12s", "self", "%self", "total", "calls", "self/call");
	if (w->o->memory)
		ht_emit_printf(e, "  %10s %8s", "own heap", "allocs");
	ht_emit_printf(e, "  function\n");
	for (size_t i = 0; i < n && !w->err; i++) {
		const ht_fn_func_t *f = &p->funcs[idx[i]];
		char a[HT_FMT_LEN], b[HT_FMT_LEN], c[HT_FMT_LEN], d[HT_FMT_LEN];
		uint32_t ni = name_of(&w->names, p->trace, w->sym, f->addr, f->first_time);
		if (ni == HT_MAP_NONE) {
			w->err = -ENOMEM;
			break;
		}
		ht_emit_printf(e, "  %12s %5.1f%% %12s %10s %12s", fmt_time(a, f->self_ns, w->unit),
			       all ? 100.0 * (double)f->self_ns / (double)all : 0.0,
			       fmt_time(b, total[idx[i]], w->unit), ht_fmt_count(c, f->calls),
			       fmt_time(d, f->calls ? f->self_ns / f->calls : 0, w->unit));
		if (w->o->memory)
			ht_emit_printf(e, "  %10s %8s", ht_fmt_size(a, f->own_bytes),
				       ht_fmt_count(b, f->own_allocs));
		ht_emit_printf(e, "  ");
		ht_emit_put(e, w->names.name[ni]);
		ht_emit_printf(e, "\n");
	}
}

/* The text report: the header, the tables, then the trees (the JSON back
 * end writes nothing here). */
static void functions_text(tw_t *w)
{
	ht_emitter_t *e = w->e;
	const ht_fn_profile_t *p = w->p;
	const ht_fn_report_opts_t *o = w->o;
	const ht_trace_t *t = p->trace;
	char a[HT_FMT_LEN], b[HT_FMT_LEN];
	w->col = (int)strlen("function");

	ht_emit_printf(e, "heaptrail function profile");
	if (o->trace_path) {
		ht_emit_printf(e, " of ");
		ht_emit_put(e, o->trace_path);
	}
	ht_emit_printf(e, " (pid %" PRIu64 ")\n", t->pid);
	if (!p->nthreads) {
		ht_emit_printf(e, "%s\n", ht_fn_no_events_msg);
		return;
	}
	ht_emit_printf(e, "%s call%s of %s function%s on %zu thread%s; times in %s\n",
		       ht_fmt_count(a, p->enters), p->enters == 1 ? "" : "s",
		       ht_fmt_count(b, p->nfuncs), p->nfuncs == 1 ? "" : "s", p->nthreads,
		       p->nthreads == 1 ? "" : "s", unit_name(w->unit));
	ht_emit_printf(e, "total: the calls' time including what they called; self: time in the "
			  "function's own code\n");
	if (o->memory)
		ht_emit_printf(e, "heap: bytes and allocations made inside the call (its callees "
				  "included); own heap: made while the function itself was on top\n");
	if (t->proc_flags & HT_PROC_START_OFF)
		ht_emit_printf(e, "recording started switched off (--start-off): only the regions "
				  "switched on with heaptrail_set_recording(1) are recorded\n");
	if (o->memory && (t->proc_flags & HT_PROC_STACKS_SHADOW))
		ht_emit_printf(e, "allocation stacks (in the memory report) come from the function "
				  "shadow stack: instrumented frames only\n");
	if (p->switches)
		ht_emit_printf(e, "recording was switched on or off %s times; a call that began while "
				  "on is timed to its return\n",
			       ht_fmt_count(a, p->switches));
	if (p->nodes_capped)
		ht_emit_printf(e, "note: more than %u distinct call paths; new ones are folded into "
				  "their caller\n",
			       HT_FN_MAX_NODES);

	/* the tables first, then the trees (bounded by --top) */
	size_t *idx = malloc((p->nfuncs ? p->nfuncs : 1) * sizeof(*idx));
	uint64_t *total = malloc((p->nfuncs ? p->nfuncs : 1) * sizeof(*total));
	if (!idx || !total)
		w->err = -ENOMEM;
	if (!w->err)
		w->err = ht_fn_flat(p, total, idx);
	if (!w->err)
		print_flat(w, total, idx);
	if (o->memory && !w->err) {
		print_top(w, false, idx);
		print_top(w, true, idx);
	}
	free(idx);
	free(total);
	if (!w->err)
		ht_emit_rule(e, o->top && o->top != SIZE_MAX ? "CALL TREES (--top callees per call)"
							     : "CALL TREES");
	for (size_t i = 0; i < p->nthreads; i++)
		measure(w, p->threads[i].root);
	for (size_t i = 0; i < p->nthreads && !w->err; i++)
		print_thread(w, &p->threads[i]);
}

/* ---- the JSON section --------------------------------------------------------------------- */

/* "function", "file", "line", "address" of one function (null when
 * unknown, never made up). */
static void json_fn_fields(tw_t *w, uint64_t addr, uint64_t when)
{
	uint32_t ni = name_of(&w->names, w->p->trace, w->sym, addr, when);
	if (ni == HT_MAP_NONE) {
		w->err = -ENOMEM;
		return;
	}
	ht_emit_str(w->e, "function", w->names.name[ni]);
	ht_emit_str(w->e, "file", w->names.file[ni]);
	ht_emit_u64_or_null(w->e, "line", w->names.line[ni] > 0, (uint64_t)w->names.line[ni]);
	ht_emit_hex(w->e, "address", addr);
}

/* Node ni and its subtree as nested objects (depth bounded by
 * HT_FN_MAX_DEPTH, so the recursion is too; HT_EMIT_DEPTH holds it). */
static void json_node(tw_t *w, const char *key, uint32_t ni, int indent)
{
	const ht_fn_profile_t *p = w->p;
	const ht_fn_node_t *n = &p->nodes[ni];
	ht_emitter_t *e = w->e;
	ht_emit_obj_begin(e, key);
	if (n->func != HT_FN_NONE) {
		json_fn_fields(w, p->funcs[n->func].addr, p->funcs[n->func].first_time);
	} else {
		/* the thread itself: its total is the thread's recorded time, its
		 * own heap what was allocated outside instrumented functions */
		ht_emit_null(e, "function");
		ht_emit_bool(e, "root", true);
	}
	ht_emit_u64(e, "calls", n->calls);
	ht_emit_u64(e, "total_ns", n->total_ns);
	ht_emit_u64(e, "self_ns", n->self_ns);
	ht_emit_u64(e, "heap_bytes", n->heap_bytes);
	ht_emit_u64(e, "heap_allocations", n->heap_allocs);
	ht_emit_u64(e, "own_bytes", n->own_bytes);
	ht_emit_u64(e, "own_allocations", n->own_allocs);
	ht_emit_u64(e, "closed_at_end", n->closed_at_end);
	ht_emit_u64(e, "folded_calls", n->folded_calls);
	ht_emit_arr_begin(e, "children");
	uint32_t *kids = NULL;
	size_t cap = 0;
	long k = ht_fn_children(p, ni, &kids, &cap);
	if (k < 0)
		w->err = (int)k;
	/* indentation stops growing at some depth: a recursion 256 deep
	 * would otherwise spend most of the output on spaces */
	int ind = indent < 40 ? indent + 1 : indent;
	for (long i = 0; i < k && !w->err; i++) {
		ht_emit_nl(e, ind);
		json_node(w, NULL, kids[i], ind);
	}
	free(kids);
	ht_emit_arr_end(e);
	ht_emit_obj_end(e);
}

/* The "functions" member: the profile's flags, one tree per thread, then
 * every function (the text back end writes nothing here). Times are
 * integer nanoseconds. */
static void functions_json(tw_t *w)
{
	ht_emitter_t *e = w->e;
	const ht_fn_profile_t *p = w->p;
	const ht_trace_t *t = p->trace;
	ht_emit_obj_begin(e, "functions");
	ht_emit_bool(e, "recorded", p->nthreads != 0);
	ht_emit_str(e, "message", p->nthreads ? NULL : ht_fn_no_events_msg);
	ht_emit_u64(e, "calls", p->enters);
	ht_emit_bool(e, "started_off", t->proc_flags & HT_PROC_START_OFF);
	ht_emit_u64(e, "switches", p->switches);
	ht_emit_i64(e, "depth_cap", HT_FN_MAX_DEPTH);
	ht_emit_bool(e, "depth_capped", p->depth_capped);
	ht_emit_bool(e, "nodes_capped", p->nodes_capped);
	ht_emit_nl(e, 2);
	ht_emit_arr_begin(e, "threads");
	for (size_t i = 0; i < p->nthreads && !w->err; i++) {
		const ht_fn_thread_t *th = &p->threads[i];
		const ht_thread_t *tt = &t->threads[th->thread];
		ht_emit_nl(e, 3);
		ht_emit_obj_begin(e, NULL);
		ht_emit_u64(e, "tid", tt->tid);
		ht_emit_str(e, "name", tt->name);
		ht_emit_u64(e, "calls", th->enters);
		ht_emit_u64(e, "exits", th->exits);
		ht_emit_u64(e, "unmatched_exits", th->unmatched_exits);
		ht_emit_u64(e, "closed_at_end", th->closed_at_end);
		ht_emit_u64(e, "folded_calls", th->folded_calls);
		ht_emit_u64(e, "max_depth", th->max_depth);
		ht_emit_u64(e, "switches_on", th->switches_on);
		ht_emit_u64(e, "switches_off", th->switches_off);
		ht_emit_u64(e, "first_ns", th->first_time);
		ht_emit_u64(e, "last_ns", th->last_time);
		ht_emit_nl(e, 4);
		json_node(w, "tree", th->root, 4);
		ht_emit_obj_end(e);
	}
	ht_emit_arr_end(e);
	ht_emit_nl(e, 2);
	ht_emit_arr_begin(e, "by_function");
	/* every function, by own bytes then own allocations: the top tables
	 * are a prefix of this list */
	size_t *idx = malloc((p->nfuncs ? p->nfuncs : 1) * sizeof(*idx));
	if (!idx && !w->err)
		w->err = -ENOMEM;
	size_t n = 0;
	/* each function's total, counted once per outermost call (ht_fn_flat) */
	uint64_t *total = malloc((p->nfuncs ? p->nfuncs : 1) * sizeof(*total));
	if (idx && total && !w->err)
		w->err = ht_fn_flat(p, total, idx);
	else if (!w->err)
		w->err = -ENOMEM;
	if (idx) {
		n = ht_fn_sort_funcs(p, false, idx);
		/* then the functions that allocated nothing, in address order */
		for (size_t i = 0; i < p->nfuncs; i++)
			if (!p->funcs[i].own_bytes)
				idx[n++] = i;
	}
	for (size_t i = 0; i < n && !w->err; i++) {
		const ht_fn_func_t *f = &p->funcs[idx[i]];
		ht_emit_nl(e, 3);
		ht_emit_obj_begin(e, NULL);
		json_fn_fields(w, f->addr, f->first_time);
		ht_emit_u64(e, "calls", f->calls);
		ht_emit_u64(e, "self_ns", f->self_ns);
		ht_emit_u64(e, "own_bytes", f->own_bytes);
		ht_emit_u64(e, "own_allocations", f->own_allocs);
		ht_emit_u64(e, "total_ns", total ? total[idx[i]] : 0);
		ht_emit_obj_end(e);
	}
	free(idx);
	free(total);
	ht_emit_arr_end(e);
	ht_emit_obj_end(e);
}

int ht_section_functions(ht_emitter_t *e, const ht_fn_profile_t *p, ht_symbolizer_t *sym,
			 const ht_fn_report_opts_t *o)
{
	static const ht_fn_report_opts_t defaults = { NULL, HT_TIME_AUTO, false, 0 };
	if (!o)
		o = &defaults;
	tw_t w = { .e = e, .p = p, .sym = sym, .o = o };
	if (ht_emit_json(e)) {
		w.unit = HT_TIME_NS;
		functions_json(&w);
	} else {
		w.unit = pick_unit(p, o->unit);
		functions_text(&w);
	}
	names_free(&w.names);
	if (w.err)
		return w.err;
	return ferror(e->out) ? -EIO : 0;
}

/* ---- Chrome trace spans ----------------------------------------------------------------------- */

int ht_functions_chrome_spans(FILE *out, const ht_trace_t *t, ht_symbolizer_t *sym,
			      const ht_fn_spans_t *spans, uint32_t thread, uint64_t pid, uint64_t tid,
			      size_t *nevents)
{
	if (!spans || thread >= spans->nthreads)
		return 0;
	const ht_thread_spans_t *ts = &spans->th[thread];
	names_t names = { 0 };
	/* each function's name looked up once, in order of first use */
	uint32_t *name = malloc((ts->nfn ? ts->nfn : 1) * sizeof(*name));
	int err = name ? 0 : -ENOMEM;
	for (size_t k = 0; k < ts->nfn && !err; k++)
		if ((name[k] = name_of(&names, t, sym, ts->fn_addr[k], ts->fn_when[k])) == HT_MAP_NONE)
			err = -ENOMEM;
	for (size_t i = 0; i < ts->n && !err; i++) {
		const ht_span_event_t *e = &ts->ev[i];
		fprintf(out, "%s\n{\"ph\":\"%c\",\"name\":", (*nevents)++ ? "," : "", e->ph);
		ht_json_str(out, names.name[name[e->fn]]);
		fprintf(out,
			",\"cat\":\"function\",\"pid\":%" PRIu64 ",\"tid\":%" PRIu64 ",\"ts\":%" PRIu64
			".%03u}",
			pid, tid, e->ns / 1000, (unsigned)(e->ns % 1000));
	}
	free(name);
	names_free(&names);
	if (err)
		return err;
	return ferror(out) ? -EIO : 0;
}
