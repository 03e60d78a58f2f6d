/* badfree_section.c - the INVALID FREES section of the text and JSON
 * reports (analysis/badfree.h): memcheck's "Invalid free()" and
 * "Mismatched free() / delete / delete []", each with the bad free's
 * stack when the agent recorded it, and the stacks and times of the block
 * concerned. Written once against the emitter: the text's prose and the
 * JSON's "invalid_frees" member walk the same list. */
#include "report/badfree_section.h"

#include <inttypes.h>
#include <stdlib.h>

#include "analysis/badfree.h"
#include "analysis/safe.h"
#include "analysis/util.h"
#include "report/emitter.h"
#include "report/report.h"

static uint64_t tid_of(const ht_trace_t *t, uint32_t thread)
{
	return thread < t->nthreads ? t->threads[thread].tid : 0;
}

/* A stack by id: printed as a site's in text, its frames (null when
 * unknown) in JSON. */
static int stack(ht_emitter_t *e, const ht_model_t *m, ht_symbolizer_t *sym, uint64_t id,
		 uint64_t time)
{
	ht_site_t s = { 0 };
	s.stack_id = id;
	s.stack = id ? ht_trace_stack(m->trace, id) : NULL;
	s.first_time = time;
	if (!ht_emit_json(e))
		return ht_report_stack_text(e->out, m, sym, &s, false);
	if (!s.stack) {
		ht_emit_null(e, "stack");
		return 0;
	}
	ht_frame_t *frames = NULL;
	size_t cap = 0;
	long n = ht_model_frames(m, sym, &s, &frames, &cap);
	if (n < 0)
		return (int)n;
	ht_emit_frames(e, "stack", frames, n);
	free(frames);
	return 0;
}

static const char *fn_call(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s%s", name, name[0] == 'n' || name[0] == 'd' ? "" : "()");
	return buf;
}

static const char *kind_key(unsigned k)
{
	switch (k) {
	case HT_BAD_DOUBLE: return "double";
	case HT_BAD_INVALID: return "invalid";
	case HT_BAD_MISMATCH: return "mismatched";
	default: return "aborted";
	}
}

/* The block a bad free concerns: who allocated it, and who freed it
 * first. */
static int block(ht_emitter_t *e, const ht_model_t *m, ht_symbolizer_t *sym,
		 const ht_bad_free_t *x)
{
	const ht_trace_t *t = m->trace;
	char a[HT_FMT_LEN], d[HT_FMT_LEN], f1[32], f2[32];
	const char *how = x->kind == HT_BAD_INVALID ? "points into" : "is";
	uint64_t off = x->addr - x->block_addr;
	if (x->kind == HT_BAD_INVALID)
		ht_emit_printf(e, "    the address is %" PRIu64 " bytes inside", off);
	else
		ht_emit_printf(e, "    the address %s", how);
	ht_emit_printf(e, " a block of %s bytes allocated by %s at %s on thread %" PRIu64 ":\n",
		       ht_fmt_count(a, x->size),
		       fn_call(f2, sizeof f2, ht_bad_alloc_fn_name(x->alloc_fn)),
		       ht_fmt_duration(d, x->alloc_time), tid_of(t, x->alloc_thread));
	ht_emit_obj_begin(e, "block");
	ht_emit_u64(e, "address", x->block_addr);
	ht_emit_u64(e, "size", x->size);
	ht_emit_str(e, "function", ht_bad_alloc_fn_name(x->alloc_fn));
	ht_emit_u64(e, "time_ns", x->alloc_time);
	ht_emit_u64(e, "tid", tid_of(t, x->alloc_thread));
	int err = stack(e, m, sym, x->alloc_stack, x->alloc_time);
	if (!err && x->have_first_free) {
		ht_emit_printf(e, "    first freed by %s at %s on thread %" PRIu64 "%s\n",
			       fn_call(f1, sizeof f1, ht_bad_free_fn_name(x->first_free_fn)),
			       ht_fmt_duration(d, x->first_free_time), tid_of(t, x->first_free_thread),
			       x->first_free_stack ? ":" : " (its stack: heaptrail run --free-stacks)");
		ht_emit_obj_begin(e, "first_free");
		ht_emit_str(e, "function", ht_bad_free_fn_name(x->first_free_fn));
		ht_emit_u64(e, "time_ns", x->first_free_time);
		ht_emit_u64(e, "tid", tid_of(t, x->first_free_thread));
		if (x->first_free_stack)
			err = stack(e, m, sym, x->first_free_stack, x->first_free_time);
		else
			ht_emit_null(e, "stack");
		ht_emit_obj_end(e);
	}
	ht_emit_obj_end(e);
	return err;
}

int ht_section_badfrees(ht_emitter_t *e, const ht_model_t *m, ht_symbolizer_t *sym)
{
	const ht_badfrees_t *b = m->bad;
	if (!b) {
		ht_emit_null(e, "invalid_frees");
		return 0;
	}
	if (!ht_emit_json(e) && !b->total)
		return 0;
	const ht_trace_t *t = m->trace;
	char a[HT_FMT_LEN], d[HT_FMT_LEN], f1[32];
	ht_emit_rule(e, "INVALID FREES");
	ht_emit_printf(e, "  %s bad %s: %" PRIu64 " double, %" PRIu64 " invalid, %" PRIu64
			  " mismatched, %" PRIu64 " in a damaged heap\n",
		       ht_fmt_count(a, b->total), b->total == 1 ? "free" : "frees",
		       b->count[HT_BAD_DOUBLE], b->count[HT_BAD_INVALID], b->count[HT_BAD_MISMATCH],
		       b->count[HT_BAD_ABORTED]);
	if (b->unseen)
		ht_emit_printf(e, "  (and %s frees of blocks allocated before the trace began: not "
				  "errors)\n",
			       ht_fmt_count(a, b->unseen));
	ht_emit_obj_begin(e, "invalid_frees");
	ht_emit_u64(e, "count", b->total);
	ht_emit_u64(e, "double", b->count[HT_BAD_DOUBLE]);
	ht_emit_u64(e, "invalid", b->count[HT_BAD_INVALID]);
	ht_emit_u64(e, "mismatched", b->count[HT_BAD_MISMATCH]);
	ht_emit_u64(e, "aborted", b->count[HT_BAD_ABORTED]);
	ht_emit_u64(e, "before_trace", b->unseen);
	ht_emit_nl(e, 2);
	ht_emit_arr_begin(e, "frees");
	int err = 0;
	for (size_t i = 0; i < b->n && !err; i++) {
		const ht_bad_free_t *x = &b->item[i];
		ht_emit_printf(e, "\n  %s: %s of 0x%" PRIx64 " at %s on thread %" PRIu64 "%s\n",
			       ht_bad_kind_name(x->kind),
			       fn_call(f1, sizeof f1, ht_bad_free_fn_name(x->free_fn)), x->addr,
			       ht_fmt_duration(d, x->time), tid_of(t, x->thread),
			       x->aborted ? "; the allocator aborted the program here" : "");
		ht_emit_nl(e, 2);
		ht_emit_obj_begin(e, NULL);
		ht_emit_str(e, "kind", kind_key(x->kind));
		ht_emit_str(e, "function", ht_bad_free_fn_name(x->free_fn));
		ht_emit_u64(e, "address", x->addr);
		ht_emit_u64(e, "time_ns", x->time);
		ht_emit_u64(e, "tid", tid_of(t, x->thread));
		ht_emit_bool(e, "aborted", x->aborted);
		if (x->stack_id) {
			err = stack(e, m, sym, x->stack_id, x->time);
		} else {
			ht_emit_printf(e, "     (stack not recorded: heaptrail run --free-stacks records "
					  "every free's)\n");
			ht_emit_null(e, "stack");
		}
		if (err || !x->have_block) {
			if (x->kind == HT_BAD_INVALID)
				ht_emit_printf(e, "    the address is not in a block the trace saw "
						  "allocated\n");
		}
		if (!err) {
			ht_emit_nl(e, 3);
			if (x->have_block)
				err = block(e, m, sym, x);
			else
				ht_emit_null(e, "block");
		}
		ht_emit_obj_end(e);
	}
	if (!err && b->total > b->n)
		ht_emit_printf(e, "\n  ... %" PRIu64 " more, not listed\n", b->total - b->n);
	ht_emit_arr_end(e);
	ht_emit_obj_end(e);
	return err;
}
