/* run_section.c - a run of several processes and two runs side by side
 * (run_section.h), each section written once against the emitter: the
 * text's table and lines and the JSON's members in one walk.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/safe.h"
#include "analysis/util.h"
#include "report/report.h"
#include "report/run_section.h"

/* Text lines of a stack shown per site of the whole run: the process's
 * own report has the rest. */
#define STACK_LINES 6

/* The program column: as wide as the longest name w has seen (name), from
 * 7 up to 24. */
static int widen(int w, const char *name)
{
	int l = (int)ht_text_len(name ? name : "?");
	return l > w ? (l < 24 ? l : 24) : w;
}

static void process_row(ht_emitter_t *e, const ht_run_proc_t *r, int w)
{
	const ht_proc_t *p = r->p;
	char a[HT_FMT_LEN], b[HT_FMT_LEN], c[HT_FMT_LEN];
	ht_emit_nl(e, 2);
	ht_emit_obj_begin(e, NULL);
	ht_emit_str(e, "program", p->program ? p->program : "");
	ht_emit_i64(e, "pid", p->pid);
	ht_emit_i64(e, "parent", p->ppid);
	ht_emit_str(e, "trace", p->shown);
	ht_emit_printf(e, "  ");
	ht_emit_pad(e, p->program ? p->program : "?", w);
	if (r->loaded) {
		ht_emit_u64(e, "allocations", r->allocations);
		ht_emit_u64(e, "bytes_allocated", r->bytes);
		ht_emit_u64(e, "peak_heap_bytes", r->peak);
		ht_emit_u64(e, "lost_bytes", r->lost);
		ht_emit_u64(e, "in_use_at_exit_bytes", r->in_use);
		const char *tilde = r->sampled ? "~" : " ";
		ht_emit_printf(e, " %8ld %8ld %s%10s %s%10s %s%10s  ", p->pid, p->ppid, tilde,
			       ht_fmt_size(a, r->bytes), tilde, ht_fmt_size(b, r->peak), tilde,
			       ht_fmt_size(c, r->lost));
		ht_emit_put(e, p->ended[0] ? p->ended : "?");
		ht_emit_printf(e, "\n");
	} else {
		ht_emit_printf(e, " %8ld %8ld %11s %11s %11s  %s\n", p->pid, p->ppid, "?", "?", "?",
			       "unreadable");
	}
	ht_emit_str(e, "ended", p->ended);
	ht_emit_obj_end(e);
}

void ht_section_run_head(ht_emitter_t *e, const ht_run_summary_t *s, const char *source,
			 const char *command, bool leaks_only)
{
	ht_emit_obj_begin(e, NULL);
	ht_emit_u64(e, "heaptrail_run", 1);
	ht_emit_str(e, "source", source ? source : "");
	ht_emit_str(e, "command", command ? command : "");
	ht_emit_printf(e, "heaptrail %s: %zu processes", leaks_only ? "leaks" : "report", s->n);
	if (source) {
		ht_emit_printf(e, " of ");
		ht_emit_put(e, source);
	}
	ht_emit_printf(e, "\n");
	if (command) {
		ht_emit_printf(e, "  command     ");
		ht_emit_put(e, command);
		ht_emit_printf(e, "\n");
	}

	ht_emit_rule(e, "PROCESSES");
	int w = 7;
	for (size_t i = 0; i < s->n; i++)
		w = widen(w, s->procs[i].p->program);
	ht_emit_printf(e, "  %-*s %8s %8s %11s %11s %11s  %s\n", w, "program", "pid", "parent",
		       "allocated", "peak", "lost", "ended");
	ht_emit_nl(e, 0);
	ht_emit_arr_begin(e, "processes");
	for (size_t i = 0; i < s->n; i++)
		process_row(e, &s->procs[s->order[i]], w);
	ht_emit_nl_end(e, 0);
	ht_emit_arr_end(e);
	if (s->most != SIZE_MAX) {
		const ht_run_proc_t *most = &s->procs[s->most];
		char a[HT_FMT_LEN], b[HT_FMT_LEN];
		ht_emit_printf(e, "  %s allocated in all; most by ", ht_fmt_size(a, s->total));
		ht_emit_put(e, most->p->program);
		ht_emit_printf(e, " (pid %ld): %s\n", most->p->pid, ht_fmt_size(b, most->bytes));
	}
}

int ht_section_run_leaks(ht_emitter_t *e, const ht_proc_t *p, const ht_proc_load_t *l,
			 size_t top, bool show_reachable)
{
	/* the JSON of a run has its processes' figures, not their leaks */
	if (ht_emit_json(e) || !l->have_lk || (!ht_leaks_fail(&l->lk) && !show_reachable))
		return 0;
	ht_emit_printf(e, "\n== ");
	ht_emit_put(e, p->program);
	ht_emit_printf(e, ", pid %ld: ", p->pid);
	ht_emit_put(e, p->shown);
	ht_emit_printf(e, " ==\n");
	return ht_report_leaks_text(e->out, l->m, l->sym, &l->lk, top, show_reachable);
}

/* Text: a site's stack, its first STACK_LINES lines. */
static int stack_head(ht_emitter_t *e, const ht_kept_stack_t *k)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return -ENOMEM;
	ht_stack_text_kept(f, k, false);
	if (fclose(f)) {
		free(text);
		return -ENOMEM;
	}
	const char *cut = text;
	for (int l = 0; cut && l < STACK_LINES; l++)
		cut = (cut = strchr(cut, '\n')) ? cut + 1 : NULL;
	if (cut && *cut) {
		fwrite(text, 1, (size_t)(cut - text), e->out);
		fputs("     ...\n", e->out);
	} else {
		fputs(text, e->out);
	}
	free(text);
	return 0;
}

static int top_sites(ht_emitter_t *e, const ht_run_summary_t *s, size_t top)
{
	size_t shown = s->nsites < top ? s->nsites : top;
	int err = 0;
	if (!ht_emit_json(e))
		ht_report_list_rule(e->out, "TOP SITES OF ALL PROCESSES BY BYTES ALLOCATED", shown,
				    s->nsites_all);
	ht_emit_nl(e, 0);
	ht_emit_arr_begin(e, "sites");
	for (size_t i = 0; i < shown; i++) {
		const ht_run_site_t *st = &s->sites[i];
		const ht_run_proc_t *r = &s->procs[st->proc];
		char a[HT_FMT_LEN], b[HT_FMT_LEN], c[HT_FMT_LEN];
		ht_emit_nl(e, 2);
		ht_emit_obj_begin(e, NULL);
		ht_emit_str(e, "program", r->p->program ? r->p->program : "");
		ht_emit_i64(e, "pid", r->p->pid);
		ht_emit_u64(e, "bytes_allocated", st->bytes);
		ht_emit_u64(e, "allocations", st->allocations);
		ht_emit_u64(e, "peak_bytes", st->peak);
		ht_emit_frames(e, "frames", st->stack.frames, st->stack.n);
		ht_emit_obj_end(e);
		ht_emit_printf(e, "#%zu  ", i + 1);
		ht_emit_put(e, r->p->program);
		ht_emit_printf(e, " (pid %ld): %s%s in %s allocation%s, %s at its process's peak\n",
			       r->p->pid, r->sampled ? "~" : "", ht_fmt_size(a, st->bytes),
			       ht_fmt_count(b, st->allocations), st->allocations == 1 ? "" : "s",
			       ht_fmt_size(c, st->peak));
		if (!ht_emit_json(e) && !err)
			err = stack_head(e, &st->stack);
	}
	ht_emit_nl_end(e, 0);
	ht_emit_arr_end(e);
	if (!shown)
		ht_emit_printf(e, "  no allocations\n");
	return err;
}

int ht_section_run_tail(ht_emitter_t *e, const ht_run_summary_t *s, size_t top, bool leaks_only,
			size_t leak_sections, const char *run_arg)
{
	int err = 0;
	if (!leaks_only)
		err = top_sites(e, s, top);
	else if (!leak_sections)
		ht_emit_printf(e, "\nno process lost memory (definitely or indirectly)\n");
	if (s->most != SIZE_MAX) {
		ht_emit_printf(e, "\none process in full: heaptrail %s --pid %ld ",
			       leaks_only ? "leaks" : "report", s->procs[s->most].p->pid);
		ht_emit_put(e, run_arg);
		ht_emit_printf(e, " (or --program NAME)\n");
	}
	ht_emit_obj_end(e);
	if (ht_emit_json(e))
		fputc('\n', e->out);
	if (err)
		return err;
	return ferror(e->out) ? -EIO : 0;
}

/* ---- two runs side by side ------------------------------------------------------ */

int ht_section_run_diff(ht_emitter_t *e, const ht_run_programs_t *r, const char *base,
			const char *new_)
{
	static const char *const side[2] = { "base", "new" };
	int w = 7;
	for (size_t i = 0; i < r->n; i++)
		w = widen(w, r->rows[i].program);
	ht_emit_obj_begin(e, NULL);
	ht_emit_u64(e, "heaptrail_run_diff", 1);
	ht_emit_printf(e, "heaptrail diff of runs: ");
	ht_emit_put(e, base);
	ht_emit_printf(e, " -> ");
	ht_emit_put(e, new_);
	ht_emit_printf(e, "\n\n");
	ht_emit_rule(e, "PROGRAMS (the processes of each summed; peak: the largest process's)");
	ht_emit_printf(e, "  %-*s %9s %23s %23s %23s\n", w, "program", "processes",
		       "allocated base -> new", "peak base -> new", "lost base -> new");
	ht_emit_arr_begin(e, "programs");
	for (size_t i = 0; i < r->n; i++) {
		const ht_run_program_t *p = &r->rows[i];
		ht_emit_nl(e, 2);
		ht_emit_obj_begin(e, NULL);
		ht_emit_str(e, "program", p->program);
		for (int k = 0; k < 2; k++) {
			ht_emit_obj_begin(e, side[k]);
			ht_emit_u64(e, "processes", p->procs[k]);
			ht_emit_u64(e, "bytes_allocated", p->bytes[k]);
			ht_emit_u64(e, "peak_heap_bytes", p->peak[k]);
			ht_emit_u64(e, "lost_bytes", p->lost[k]);
			ht_emit_obj_end(e);
		}
		ht_emit_obj_end(e);
		char a[HT_FMT_LEN], b[HT_FMT_LEN], c[HT_FMT_LEN], d[HT_FMT_LEN], f[HT_FMT_LEN],
			g[HT_FMT_LEN], pc[48];
		snprintf(pc, sizeof pc, "%zu -> %zu", p->procs[0], p->procs[1]);
		ht_emit_printf(e, "  ");
		ht_emit_pad(e, p->program, w);
		ht_emit_printf(e, " %9s %10s -> %-10s %10s -> %-10s %10s -> %-10s\n", pc,
			       ht_fmt_size(a, p->bytes[0]), ht_fmt_size(b, p->bytes[1]),
			       ht_fmt_size(c, p->peak[0]), ht_fmt_size(d, p->peak[1]),
			       ht_fmt_size(f, p->lost[0]), ht_fmt_size(g, p->lost[1]));
	}
	ht_emit_nl_end(e, 0);
	ht_emit_arr_end(e);
	ht_emit_obj_end(e);
	ht_emit_printf(e, "\nthe sites of one program: heaptrail diff --program NAME BASE NEW\n");
	if (ht_emit_json(e))
		fputc('\n', e->out);
	return ferror(e->out) ? -EIO : 0;
}
