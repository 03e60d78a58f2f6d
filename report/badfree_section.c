/* badfree_section.c - the INVALID FREES section of the text and JSON
 * reports (analysis/badfree.h): memcheck's "Invalid free()" and
 * "Mismatched free() / delete / delete []", each with the bad free's
 * stack when the agent recorded it, and the stacks and times of the block
 * concerned. */
#include "report/badfree_section.h"

#include <inttypes.h>
#include <stdlib.h>

#include "analysis/badfree.h"
#include "analysis/safe.h"
#include "analysis/util.h"
#include "report/report.h"

static uint64_t tid_of(const ht_trace_t *t, uint32_t thread)
{
	return thread < t->nthreads ? t->threads[thread].tid : 0;
}

/* A stack by id, printed as a site's. */
static int stack_text(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym, uint64_t id,
		      uint64_t time)
{
	ht_site_t s = { 0 };
	s.stack_id = id;
	s.stack = id ? ht_trace_stack(m->trace, id) : NULL;
	s.first_time = time;
	return ht_report_stack_text(out, m, sym, &s, false);
}

static const char *fn_call(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s%s", name, name[0] == 'n' || name[0] == 'd' ? "" : "()");
	return buf;
}

int ht_report_badfrees_text(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym)
{
	const ht_badfrees_t *b = m->bad;
	if (!b || !b->total)
		return 0;
	const ht_trace_t *t = m->trace;
	char a[HT_FMT_LEN], d[HT_FMT_LEN], f1[32], f2[32];
	ht_report_rule(out, "INVALID FREES");
	fprintf(out, "  %s bad %s: %" PRIu64 " double, %" PRIu64 " invalid, %" PRIu64
		     " mismatched, %" PRIu64 " in a damaged heap\n",
		ht_fmt_count(a, b->total), b->total == 1 ? "free" : "frees", b->count[HT_BAD_DOUBLE],
		b->count[HT_BAD_INVALID], b->count[HT_BAD_MISMATCH], b->count[HT_BAD_ABORTED]);
	if (b->unseen)
		fprintf(out, "  (and %s frees of blocks allocated before the trace began: not errors)\n",
			ht_fmt_count(a, b->unseen));
	int e = 0;
	for (size_t i = 0; i < b->n && !e; i++) {
		const ht_bad_free_t *x = &b->item[i];
		fprintf(out, "\n  %s: %s of 0x%" PRIx64 " at %s on thread %" PRIu64 "%s\n",
			ht_bad_kind_name(x->kind),
			fn_call(f1, sizeof f1, ht_bad_free_fn_name(x->free_fn)), x->addr,
			ht_fmt_duration(d, x->time), tid_of(t, x->thread),
			x->aborted ? "; the allocator aborted the program here" : "");
		if (x->stack_id) {
			e = stack_text(out, m, sym, x->stack_id, x->time);
		} else {
			fputs("     (stack not recorded: heaptrail run --free-stacks records every free's)\n",
			      out);
		}
		if (e || !x->have_block) {
			if (x->kind == HT_BAD_INVALID)
				fputs("    the address is not in a block the trace saw allocated\n", out);
			continue;
		}
		const char *how = x->kind == HT_BAD_INVALID ? "points into" : "is";
		uint64_t off = x->addr - x->block_addr;
		if (x->kind == HT_BAD_INVALID)
			fprintf(out, "    the address is %" PRIu64 " bytes inside", off);
		else
			fprintf(out, "    the address %s", how);
		fprintf(out, " a block of %s bytes allocated by %s at %s on thread %" PRIu64 ":\n",
			ht_fmt_count(a, x->size), fn_call(f2, sizeof f2, ht_bad_alloc_fn_name(x->alloc_fn)),
			ht_fmt_duration(d, x->alloc_time), tid_of(t, x->alloc_thread));
		e = stack_text(out, m, sym, x->alloc_stack, x->alloc_time);
		if (!e && x->have_first_free) {
			fprintf(out, "    first freed by %s at %s on thread %" PRIu64 "%s\n",
				fn_call(f1, sizeof f1, ht_bad_free_fn_name(x->first_free_fn)),
				ht_fmt_duration(d, x->first_free_time), tid_of(t, x->first_free_thread),
				x->first_free_stack ? ":" : " (its stack: heaptrail run --free-stacks)");
			if (x->first_free_stack)
				e = stack_text(out, m, sym, x->first_free_stack, x->first_free_time);
		}
	}
	if (!e && b->total > b->n)
		fprintf(out, "\n  ... %" PRIu64 " more, not listed\n", b->total - b->n);
	return e;
}

/* A stack by id as JSON frames (null when unknown). */
static int stack_json(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym, uint64_t id,
		      uint64_t time)
{
	ht_site_t s = { 0 };
	s.stack_id = id;
	s.stack = id ? ht_trace_stack(m->trace, id) : NULL;
	s.first_time = time;
	if (!s.stack) {
		fputs("null", out);
		return 0;
	}
	ht_frame_t *frames = NULL;
	size_t cap = 0;
	long n = ht_model_frames(m, sym, &s, &frames, &cap);
	if (n < 0)
		return (int)n;
	ht_json_frames(out, frames, n);
	free(frames);
	return 0;
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

int ht_report_badfrees_json(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym)
{
	const ht_badfrees_t *b = m->bad;
	if (!b) {
		fputs("null", out);
		return 0;
	}
	const ht_trace_t *t = m->trace;
	fprintf(out,
		"{\"count\": %" PRIu64 ", \"double\": %" PRIu64 ", \"invalid\": %" PRIu64
		", \"mismatched\": %" PRIu64 ", \"aborted\": %" PRIu64 ", \"before_trace\": %" PRIu64
		",\n  \"frees\": [",
		b->total, b->count[HT_BAD_DOUBLE], b->count[HT_BAD_INVALID], b->count[HT_BAD_MISMATCH],
		b->count[HT_BAD_ABORTED], b->unseen);
	int e = 0;
	for (size_t i = 0; i < b->n && !e; i++) {
		const ht_bad_free_t *x = &b->item[i];
		fprintf(out,
			"%s\n  {\"kind\": \"%s\", \"function\": \"%s\", \"address\": %" PRIu64
			", \"time_ns\": %" PRIu64 ", \"tid\": %" PRIu64 ", \"aborted\": %s, \"stack\": ",
			i ? "," : "", kind_key(x->kind), ht_bad_free_fn_name(x->free_fn), x->addr, x->time,
			tid_of(t, x->thread), x->aborted ? "true" : "false");
		e = stack_json(out, m, sym, x->stack_id, x->time);
		if (e)
			break;
		fputs(",\n   \"block\": ", out);
		if (!x->have_block) {
			fputs("null", out);
		} else {
			fprintf(out,
				"{\"address\": %" PRIu64 ", \"size\": %" PRIu64 ", \"function\": \"%s\""
				", \"time_ns\": %" PRIu64 ", \"tid\": %" PRIu64 ", \"stack\": ",
				x->block_addr, x->size, ht_bad_alloc_fn_name(x->alloc_fn), x->alloc_time,
				tid_of(t, x->alloc_thread));
			e = stack_json(out, m, sym, x->alloc_stack, x->alloc_time);
			if (!e && x->have_first_free) {
				fprintf(out,
					", \"first_free\": {\"function\": \"%s\", \"time_ns\": %" PRIu64
					", \"tid\": %" PRIu64 ", \"stack\": ",
					ht_bad_free_fn_name(x->first_free_fn), x->first_free_time,
					tid_of(t, x->first_free_thread));
				e = stack_json(out, m, sym, x->first_free_stack, x->first_free_time);
				fputc('}', out);
			}
			fputc('}', out);
		}
		fputc('}', out);
	}
	fputs("]}", out);
	return e;
}
