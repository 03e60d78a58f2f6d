/* resources_section.c - the RESOURCE LEAKS section of the text report and
 * the "fd_leaks" and "handle_leaks" members of the JSON report, one writer
 * through the emitter (the figures come from analysis/resources.c, defined in analysis/resources.h).
 *
 * Descriptors still open are grouped by the stack that opened them, with
 * the call and their numbers; handles still held per kind, with counts and
 * the stacks that acquired them. Stacks start at the program's frame: the
 * inlined heaptrail.h wrapper of a handle acquire is not shown.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/frames.h"
#include "report/emitter.h"
#include "report/report.h"
#include "analysis/resources.h"
#include "analysis/util.h"

#define MAX_TEXT_FRAMES 16

/* Frames of a stack, from the program's first frame (past heaptrail.h's
 * inlined wrappers). *first: index of that frame. Returns the count, or a
 * negative error. */
static long stack_frames(const ht_model_t *m, ht_symbolizer_t *sym, uint64_t stack_id,
			 const ht_stack_t *stack, uint64_t when, ht_frame_t **frames, size_t *cap,
			 long *first)
{
	ht_site_t s;
	memset(&s, 0, sizeof(s));
	s.stack_id = stack_id;
	s.stack = stack;
	s.first_time = when; /* picks the modules its frames lie in */
	long n = ht_model_frames(m, sym, &s, frames, cap);
	long j = 0;
	while (n > 0 && j + 1 < n && (*frames)[j].function &&
	       !strncmp((*frames)[j].function, "heaptrail_", 10))
		j++;
	*first = j;
	return n;
}

/* when: the first use of the stack, for its frames' modules (a library
 * unloaded later may have had another's address). */
static void print_stack(FILE *out, const ht_trace_t *t, uint64_t when, const ht_frame_t *f,
			long n)
{
	/* the C runtime's frames from main down are the same in every stack */
	for (long i = 1; i < n; i++) {
		const char *fn = f[i].function;
		if (fn && (!strncmp(fn, "__libc_start_", 13) || !strcmp(fn, "start_thread") ||
			   !strcmp(fn, "_start"))) {
			n = i;
			break;
		}
	}
	if (n <= 0) {
		fputs("     (stack unknown)\n", out);
		return;
	}
	long shown = n > MAX_TEXT_FRAMES ? MAX_TEXT_FRAMES : n;
	int col = 0;
	for (long i = 0; i < shown; i++) {
		char lab[HT_FRAME_LABEL_LEN];
		int l = (int)ht_text_len(f[i].function ? f[i].function
						     : ht_frame_label(&f[i], lab, sizeof lab));
		if (l > col && l <= 48)
			col = l;
	}
	for (long i = 0; i < shown; i++) {
		fputs("     ", out);
		char lab[HT_FRAME_LABEL_LEN];
		ht_text_pad(out, f[i].function ? f[i].function : ht_frame_label(&f[i], lab, sizeof lab),
			    col);
		fputs("  ", out);
		if (f[i].file && f[i].line > 0) {
			ht_text_put(out, f[i].file);
			fprintf(out, ":%d", f[i].line);
		} else if (f[i].file) {
			ht_text_put(out, f[i].file);
		} else if (f[i].module) {
			/* module+offset, what addr2line takes, not the address */
			long mi = ht_trace_module_for(t, f[i].address, when);
			fputs("in ", out);
			ht_text_put(out, f[i].module);
			fprintf(out, "+0x%" PRIx64, f[i].address - (mi >= 0 ? t->modules[mi].bias : 0));
		} else
			fprintf(out, "0x%" PRIx64, f[i].address);
		fputs(f[i].inlined ? "  (inlined)\n" : "\n", out);
	}
	if (n > shown)
		fprintf(out, "     ... %ld more frames (--format json lists them all)\n", n - shown);
}

static void print_fds(FILE *out, const ht_fd_leak_t *g)
{
	fprintf(out, "  %zu descriptor%s from %s: fd%s ", g->count, g->count == 1 ? "" : "s",
		ht_fdcall_name(g->call), g->count == 1 ? "" : "s");
	for (size_t k = 0; k < g->count && k < 32; k++)
		fprintf(out, "%s%" PRIu64, k ? ", " : "", g->fds[k]);
	if (g->count > 32)
		fprintf(out, ", ... (%zu more)", g->count - 32);
	fputc('\n', out);
}

int ht_section_resources(ht_emitter_t *e, const ht_model_t *m, ht_symbolizer_t *sym)
{
	const ht_trace_t *t = m->trace;
	bool json = ht_emit_json(e);
	FILE *out = e->out;
	if (!json && !t->next_events)
		return 0;
	ht_resources_t *r = m->resources; /* made by the report's pass */
	int err = r ? 0 : ht_resources_build(t, &r);
	if (err)
		return err;
	ht_frame_t *frames = NULL;
	size_t cap = 0;
	long first;
	const char *when = t->ending == HT_ENDING_EXEC ? "exec" : "exit";
	ht_emit_rule(e, "RESOURCE LEAKS");
	ht_emit_printf(e,
		       "  file descriptors still open at %s: %" PRIu64 " (%" PRIu64 " opened, %" PRIu64
		       " closed; 0-2 and inherited ones are not counted)\n",
		       when, r->fds_leaked, r->fds_opened, r->fds_closed);
	ht_emit_arr_begin(e, "fd_leaks");
	for (size_t i = 0; i < r->nfd_leaks && !err; i++) {
		const ht_fd_leak_t *g = &r->fd_leaks[i];
		long n = stack_frames(m, sym, g->stack_id, g->stack, g->first_time, &frames, &cap,
				      &first);
		if (n < 0) {
			err = (int)n;
			break;
		}
		const ht_frame_t *f = frames ? frames + first : NULL;
		if (!json) {
			fputc('\n', out);
			print_fds(out, g);
			print_stack(out, t, g->first_time, f, n - first);
			continue;
		}
		ht_emit_nl(e, 2);
		ht_emit_obj_begin(e, NULL);
		ht_emit_str(e, "call", ht_fdcall_name(g->call));
		ht_emit_u64(e, "count", g->count);
		ht_emit_arr_begin(e, "fds");
		for (size_t k = 0; k < g->count; k++)
			ht_emit_u64(e, NULL, g->fds[k]);
		ht_emit_arr_end(e);
		ht_emit_u64(e, "stack_id", g->stack_id);
		ht_emit_nl(e, 3);
		ht_emit_frames(e, "stack", f, n - first);
		ht_emit_obj_end(e);
	}
	ht_emit_arr_end(e);
	if (!json && r->nkinds) { /* only kinds with handles held */
		fprintf(out, "\n  handles still held at %s: %" PRIu64, when, r->handles_held);
		for (size_t k = 0; k < r->nkinds; k++) {
			fputs(k ? ", " : " (", out);
			ht_text_put(out, r->kinds[k].name ? r->kinds[k].name : "?");
			fprintf(out, " %" PRIu64, r->kinds[k].held);
		}
		fputs(")\n", out);
	}
	ht_emit_nl(e, 1);
	ht_emit_arr_begin(e, "handle_leaks");
	for (size_t k = 0; k < r->nkinds && !err; k++) {
		const ht_handle_kind_t *hk = &r->kinds[k];
		ht_emit_nl(e, 2);
		ht_emit_obj_begin(e, NULL);
		ht_emit_str(e, "kind", hk->name);
		ht_emit_u64(e, "held", hk->held);
		ht_emit_u64(e, "acquired", hk->acquired);
		ht_emit_u64(e, "released", hk->released);
		ht_emit_arr_begin(e, "stacks");
		for (size_t i = 0; i < hk->nsites; i++) {
			const ht_handle_site_t *s = &hk->sites[i];
			long n = stack_frames(m, sym, s->stack_id, s->stack, s->first_time, &frames, &cap,
					      &first);
			if (n < 0) {
				err = (int)n;
				break;
			}
			const ht_frame_t *f = frames ? frames + first : NULL;
			ht_emit_printf(e, "\n  %" PRIu64 " handle%s of kind ", s->count,
				       s->count == 1 ? "" : "s");
			ht_emit_put(e, hk->name ? hk->name : "?");
			ht_emit_printf(e, " still held (of %" PRIu64 " acquired, %" PRIu64 " released)\n",
				       hk->acquired, hk->released);
			if (!json)
				print_stack(out, t, s->first_time, f, n - first);
			ht_emit_nl(e, 3);
			ht_emit_obj_begin(e, NULL);
			ht_emit_u64(e, "count", s->count);
			ht_emit_u64(e, "stack_id", s->stack_id);
			ht_emit_frames(e, "stack", f, n - first);
			ht_emit_obj_end(e);
		}
		ht_emit_arr_end(e);
		ht_emit_obj_end(e);
	}
	ht_emit_arr_end(e);
	free(frames);
	if (r != m->resources)
		ht_resources_free(r);
	if (err)
		return err;
	return ferror(out) ? -EIO : 0;
}

int ht_report_resources_json(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym)
{
	ht_emitter_t e;
	ht_emit_init(&e, out, HT_EMIT_JSON);
	e.depth = 1; /* members of the caller's object, which wrote the separator */
	e.item[1] = false;
	return ht_section_resources(&e, m, sym);
}
