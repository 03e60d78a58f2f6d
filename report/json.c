/* json.c - the JSON report: the contract of issue #2 ("heaptrail_report": 1).
 *
 * Fields of the contract never change meaning; later additions only add
 * fields. Unknown values are null, never made up. Strings go through
 * ht_json_str (safe.h), which emits valid JSON for any bytes.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/leaks.h"
#include "report/badfree_section.h"
#include "report/mapped_section.h"
#include "report/report.h"
#include "report/timeline.h"
#include "trace_format.h"
#include "analysis/util.h"

void ht_json_frames(FILE *out, const ht_frame_t *f, long n)
{
	fputc('[', out);
	for (long i = 0; i < n; i++) {
		fputs(i ? ",\n      {\"function\": " : "\n      {\"function\": ", out);
		ht_json_str(out, f[i].function);
		fputs(", \"file\": ", out);
		ht_json_str(out, f[i].file);
		if (f[i].line > 0)
			fprintf(out, ", \"line\": %d", f[i].line);
		else
			fputs(", \"line\": null", out);
		fputs(", \"module\": ", out);
		ht_json_str(out, f[i].module);
		fprintf(out, ", \"address\": \"0x%" PRIx64 "\", \"inlined\": %s}", f[i].address,
			f[i].inlined ? "true" : "false");
	}
	fputc(']', out);
}

static const char *ending_name(ht_ending_t e)
{
	switch (e) {
	case HT_ENDING_EXIT: return "exit";
	case HT_ENDING_UNDERSCORE_EXIT: return "_exit";
	case HT_ENDING_SIGNAL: return "signal";
	case HT_ENDING_DETACH: return "detach";
	case HT_ENDING_EXEC: return "exec";
	case HT_ENDING_CUT_SHORT: return "cut_short";
	}
	return "unknown";
}

void ht_report_program_json(FILE *out, const ht_trace_t *t)
{
	fputs("{\"command\": [", out);
	for (size_t i = 0; i < t->argc; i++) {
		if (i)
			fputs(", ", out);
		ht_json_str(out, t->argv[i]);
	}
	if (t->argc == 0 && t->exe_path && t->exe_path[0]) /* argv unknown to the agent */
		ht_json_str(out, t->exe_path);
	fputs("], \"executable\": ", out);
	ht_json_str(out, t->exe_path);
	fprintf(out, ", \"pid\": %" PRIu64 ", \"ppid\": %" PRIu64, t->pid, t->ppid);
	bool code_known = (t->ending == HT_ENDING_EXIT || t->ending == HT_ENDING_UNDERSCORE_EXIT) &&
			  !(t->agent_flags & HT_AGENT_EXIT_CODE_UNKNOWN);
	if (code_known)
		fprintf(out, ", \"exit_code\": %" PRIu64, t->end_status & 0xff); /* as wait() sees it */
	else
		fputs(", \"exit_code\": null", out);
	if (t->ending == HT_ENDING_SIGNAL)
		fprintf(out, ", \"signal\": %" PRIu64, t->end_status);
	else
		fputs(", \"signal\": null", out);
	fprintf(out, ", \"ending\": \"%s\", \"exec\": ", ending_name(t->ending));
	ht_json_str(out, t->ending == HT_ENDING_EXEC ? t->exec_path : NULL);
	fprintf(out, ", \"forked\": %s}", t->proc_flags & HT_PROC_FORKED ? "true" : "false");
}

int ht_report_json(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym, const ht_report_opts_t *o)
{
	return ht_report_json_leaks(out, m, sym, o, NULL);
}

int ht_report_json_leaks(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym,
			 const ht_report_opts_t *o, const ht_leaks_t *leaks)
{
	const ht_trace_t *t = m->trace;
	const ht_totals_t *tt = &m->totals;
	size_t *idx = malloc((m->nsites ? m->nsites : 1) * sizeof(*idx));
	ht_frame_t *frames = NULL;
	size_t cap = 0;
	int err = 0;
	if (!idx)
		return -ENOMEM;
	/* leaks by class, grouped here when the caller did not */
	ht_leaks_t own;
	const ht_leaks_t *lk = leaks;
	if (!lk) {
		if ((err = ht_leaks_build(m, sym, NULL, &own))) {
			free(idx);
			return err;
		}
		lk = &own;
	}

	fputs("{\"heaptrail_report\": 1,\n \"program\": ", out);
	ht_report_program_json(out, t);
	fputs(",\n", out);
	/* a sampled trace: figures are estimates, with *_ci95 companions (the
	 * half width of their 95% interval); temporary allocations are unknown */
	bool sampled = m->sample_rate != 0;
	if (sampled)
		fprintf(out, " \"sampled\": {\"rate\": %" PRIu64 ", \"exact_totals\": %s},\n",
			t->sample_rate, t->have_end_counts ? "true" : "false");

	/* totals */
	fprintf(out,
		" \"totals\": {\"allocations\": %" PRIu64 ", \"frees\": %" PRIu64
		", \"bytes_allocated\": %" PRIu64 ",\n            \"peak_heap_bytes\": %" PRIu64
		", \"peak_time_seconds\": %.9f, \"peak_rss_bytes\": ",
		tt->allocations, tt->frees, tt->bytes_allocated, tt->peak_heap_bytes,
		(double)tt->peak_time_ns / 1e9);
	if (tt->peak_rss_bytes)
		fprintf(out, "%" PRIu64, tt->peak_rss_bytes);
	else
		fputs("null", out);
	fprintf(out, ",\n            \"leaked_blocks\": %" PRIu64 ", \"leaked_bytes\": %" PRIu64,
		tt->leaked_blocks, tt->leaked_bytes);
	/* a summary has no events: what only events tell is unknown too */
	bool no_events = t->have_summary;
	if (sampled || no_events)
		fputs(", \"temporary_allocations\": null", out);
	else
		fprintf(out, ", \"temporary_allocations\": %" PRIu64, tt->temporary);
	fprintf(out,
		",\n            \"duration_seconds\": %.9f"
		", \"allocations_per_second\": %.1f, \"sites\": %zu,\n            ",
		(double)tt->duration_ns / 1e9, tt->allocs_per_second, m->nsites);
	if (no_events)
		fputs("\"reallocs\": null, \"ignored_frees\": null, \"reused_addresses\": null", out);
	else
		fprintf(out,
			"\"reallocs\": %" PRIu64 ", \"ignored_frees\": %" PRIu64
			", \"reused_addresses\": %" PRIu64,
			tt->reallocs, tt->ignored_frees, tt->reused_addresses);
	fprintf(out, ",\n            \"leaks_classified\": %s", lk->classified ? "true" : "false");
	ht_report_leak_totals_json(out, lk);
	if (sampled) {
		const ht_est_t *e = &tt->est;
		fprintf(out,
			",\n            \"allocations_ci95\": %.0f, \"bytes_allocated_ci95\": %.0f"
			", \"peak_heap_bytes_ci95\": %.0f,\n            \"leaked_blocks_ci95\": %.0f"
			", \"leaked_bytes_ci95\": %.0f",
			ht_ci95(e->var_allocations), ht_ci95(e->var_bytes_allocated),
			ht_ci95(e->var_peak_bytes), ht_ci95(e->var_leaked_blocks),
			ht_ci95(e->var_leaked_bytes));
	}
	fputs("},\n", out);

	/* trace health */
	char w[8][HT_WARN_LEN];
	size_t nw = ht_report_warnings(m, w, 8);
	fprintf(out, " \"truncated\": %s, \"error\": ", t->error ? "true" : "false");
	ht_json_str(out, t->error ? t->message : NULL);
	if (t->error)
		fprintf(out, ", \"error_offset\": %" PRIu64, t->error_offset);
	fputs(", \"warnings\": [", out);
	for (size_t i = 0; i < nw; i++) {
		if (i)
			fputs(", ", out);
		ht_json_str(out, w[i]);
	}
	fputs("],\n", out);

	/* sites: every stack unless --top */
	size_t n = ht_model_sort(m, HT_BY_BYTES, idx);
	/* sites with only zero-byte allocations still count as stacks */
	for (size_t i = 0; i < m->nsites; i++)
		if (!m->sites[i].bytes_allocated && m->sites[i].allocations)
			idx[n++] = i;
	if (o && o->top && o->top < n)
		n = o->top;
	fputs(" \"sites\": [", out);
	for (size_t i = 0; i < n && !err; i++) {
		const ht_site_t *s = &m->sites[idx[i]];
		long nf = ht_model_frames(m, sym, s, &frames, &cap);
		if (nf < 0) {
			err = (int)nf;
			break;
		}
		fprintf(out,
			"%s\n  {\"allocations\": %" PRIu64 ", \"bytes_allocated\": %" PRIu64
			", \"peak_bytes\": %" PRIu64 ", \"leaked_blocks\": %" PRIu64
			", \"leaked_bytes\": %" PRIu64,
			i ? "," : "", s->allocations, s->bytes_allocated, s->peak_bytes, s->leaked_blocks,
			s->leaked_bytes);
		if (sampled || t->have_summary)
			fputs(", \"temporary_allocations\": null", out);
		else
			fprintf(out, ", \"temporary_allocations\": %" PRIu64, s->temporary);
		fprintf(out, ", \"frees\": %" PRIu64 ", \"largest\": %" PRIu64 ", \"stack_id\": %" PRIu64,
			s->frees, s->largest, s->overflow ? (uint64_t)0 : s->stack_id);
		if (sampled)
			fprintf(out,
				",\n   \"allocations_ci95\": %.0f, \"bytes_allocated_ci95\": %.0f"
				", \"peak_bytes_ci95\": %.0f, \"leaked_blocks_ci95\": %.0f"
				", \"leaked_bytes_ci95\": %.0f",
				ht_ci95(s->est.var_allocations), ht_ci95(s->est.var_bytes_allocated),
				ht_ci95(s->est.var_peak_bytes), ht_ci95(s->est.var_leaked_blocks),
				ht_ci95(s->est.var_leaked_bytes));
		fputs(",\n   \"stack\": ", out);
		ht_json_frames(out, frames, nf);
		if (s->overflow)
			fputs(", \"overflow\": true", out);
		fputc('}', out);
	}
	fputs("],\n", out);

	/* leaks: every unsuppressed group of blocks live at the end, by class
	 * and stack, largest first (the suppressed ones are counted in
	 * "suppressions") */
	fputs(" \"leaks\": ", out);
	if (!err)
		err = ht_report_leaks_json(out, m, sym, lk);
	/* memory over time: a bounded series, the exact peak marked */
	fputs(",\n ", out);
	if (!err)
		err = ht_report_timeline_json(out, m);
	/* heaptrail.h's pools and snapshots: new members last, and only when
	 * the trace has them, so existing readers see the same object */
	if (!err && m->npools) {
		fputs(",\n \"pools\": ", out);
		err = ht_report_pools_json(out, m);
	}
	if (!err && m->nsnapshots) {
		fputs(",\n \"snapshots\": ", out);
		err = ht_report_snapshots_json(out, m, sym);
	}
	if (!err && t->have_summary) {
		bool full = false;
		for (size_t i = 0; i < m->nsites; i++)
			full |= m->sites[i].overflow;
		fprintf(out, ",\n \"summary_mode\": {\"site_table_full\": %s, \"peak_in_arrival_order\": %s}",
			full ? "true" : "false",
			t->agent_flags & HT_AGENT_SUMMARY_PEAK_ORDER ? "true" : "false");
	}
	/* suppressions and on-demand leak checks */
	if (!err && lk->supps && lk->supps->n) {
		fputs(",\n \"suppressions\": ", out);
		err = ht_report_suppressions_json(out, lk);
	}
	if (!err && m->nchecks) {
		fputs(",\n \"leak_checks\": ", out);
		err = ht_report_checks_json(out, m, sym);
	}
	if (lk == &own)
		ht_leaks_free(&own);
	if (!err) { /* double, invalid and mismatched frees */
		fputs(",\n \"invalid_frees\": ", out);
		err = ht_report_badfrees_json(out, m, sym);
	}
	if (!err) { /* the program's own memory maps */
		fputs(",\n \"mapped\": ", out);
		err = ht_report_mapped_json(out, m, sym);
	}
	if (!err) { /* descriptors and handles still open: always there */
		fputs(",\n ", out);
		err = ht_report_resources_json(out, m, sym);
	}
	fputs("}\n", out);

	free(idx);
	free(frames);
	if (err)
		return err;
	return ferror(out) ? -EIO : 0;
}
