/* json.c - pieces of the JSON report (report/document.c writes the whole):
 * frames and the program. The report's contract is "heaptrail_report": 1
 * (docs/JSON.md). Fields of the contract never change meaning; later additions only add
 * fields. Unknown values are null, never made up. Strings go through
 * ht_json_str (safe.h), which emits valid JSON for any bytes.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/emitter.h"
#include "report/report.h"
#include "trace_format.h"
#include "analysis/util.h"

void ht_emit_frames(ht_emitter_t *e, const char *key, const ht_frame_t *f, long n)
{
	ht_emit_arr_begin(e, key);
	for (long i = 0; i < n; i++) {
		ht_emit_nl(e, 6);
		ht_emit_obj_begin(e, NULL);
		ht_emit_str(e, "function", f[i].function);
		ht_emit_str(e, "file", f[i].file);
		ht_emit_u64_or_null(e, "line", f[i].line > 0, (uint64_t)f[i].line);
		ht_emit_str(e, "module", f[i].module);
		ht_emit_hex(e, "address", f[i].address);
		ht_emit_bool(e, "inlined", f[i].inlined);
		if (f[i].folded) { /* the allocator frames folded below it */
			ht_emit_u64(e, "folded_frames", f[i].folded);
			ht_emit_str(e, "folded_via", f[i].folded_via);
		}
		ht_emit_obj_end(e);
	}
	ht_emit_arr_end(e);
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

void ht_emit_program(ht_emitter_t *e, const char *key, const ht_trace_t *t)
{
	ht_emit_obj_begin(e, key);
	ht_emit_arr_begin(e, "command");
	for (size_t i = 0; i < t->argc; i++)
		ht_emit_str(e, NULL, t->argv[i]);
	if (t->argc == 0 && t->exe_path && t->exe_path[0]) /* argv unknown to the agent */
		ht_emit_str(e, NULL, t->exe_path);
	ht_emit_arr_end(e);
	ht_emit_str(e, "executable", t->exe_path);
	ht_emit_u64(e, "pid", t->pid);
	ht_emit_u64(e, "ppid", t->ppid);
	bool code_known = (t->ending == HT_ENDING_EXIT || t->ending == HT_ENDING_UNDERSCORE_EXIT) &&
			  !(t->agent_flags & HT_AGENT_EXIT_CODE_UNKNOWN);
	/* the exit code as wait() sees it */
	ht_emit_u64_or_null(e, "exit_code", code_known, t->end_status & 0xff);
	ht_emit_u64_or_null(e, "signal", t->ending == HT_ENDING_SIGNAL, t->end_status);
	ht_emit_str(e, "ending", ending_name(t->ending));
	ht_emit_str(e, "exec", t->ending == HT_ENDING_EXEC ? t->exec_path : NULL);
	ht_emit_bool(e, "forked", t->proc_flags & HT_PROC_FORKED);
	ht_emit_bool(e, "attached", t->proc_flags & HT_PROC_ATTACHED);
	ht_emit_obj_end(e);
}

void ht_report_program_json(FILE *out, const ht_trace_t *t)
{
	ht_emitter_t e;
	ht_emit_init(&e, out, HT_EMIT_JSON);
	ht_emit_program(&e, NULL, t);
}
