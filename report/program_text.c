/* program_text.c - the traced program as the text views show it: its
 * command line, quoted for a shell, and how it ended.
 */
#include <inttypes.h>
#include <signal.h>
#include <string.h>

#include "report/report.h"
#include "trace_format.h"

void ht_report_command_text(FILE *out, const ht_trace_t *t)
{
	if (t->argc == 0) {
		ht_text_put(out, t->exe_path && t->exe_path[0] ? t->exe_path : "(unknown)");
		return;
	}
	size_t col = 14;
	for (size_t i = 0; i < t->argc; i++) {
		const char *a = t->argv[i];
		bool quote = !a[0] || strpbrk(a, " \t\n'\"\\$`*?;&|<>()") != NULL ||
			     !ht_text_is_safe(a);
		size_t len = ht_text_len(a) + (quote ? 2 : 0) + (i ? 1 : 0);
		if (col + len > 300) { /* keep a giant command line from flooding */
			fputs(" ...", out);
			return;
		}
		if (i)
			fputc(' ', out);
		if (quote) {
			fputc('\'', out);
			for (const char *p = a, *q; *p; p = q) {
				q = strchrnul(p, '\'');
				ht_text_putn(out, p, (size_t)(q - p));
				if (*q == '\'') {
					fputs("'\\''", out);
					q++;
				}
			}
			fputc('\'', out);
		} else {
			fputs(a, out);
		}
		col += len;
	}
}

void ht_report_ending_text(FILE *out, const ht_trace_t *t)
{
	if (t->proc_flags & HT_PROC_ATTACHED)
		fputs(t->ending == HT_ENDING_DETACH ? "attached while it ran, then detached"
						    : "attached while it ran, then ",
		      out);
	if (t->proc_flags & HT_PROC_ATTACHED && t->ending == HT_ENDING_DETACH)
		return;
	switch (t->ending) {
	case HT_ENDING_EXIT:
		if (t->agent_flags & HT_AGENT_EXIT_CODE_UNKNOWN)
			fputs("exited (status unknown)", out);
		else
			fprintf(out, "exited with status %" PRIu64, t->end_status & 0xff);
		break;
	case HT_ENDING_UNDERSCORE_EXIT:
		fprintf(out, "called _exit(%" PRIu64 ")", t->end_status & 0xff);
		break;
	case HT_ENDING_SIGNAL: {
		const char *abbr = t->end_status < 65 ? sigabbrev_np((int)t->end_status) : NULL;
		fprintf(out, "killed by signal %" PRIu64 "%s%s%s", t->end_status, abbr ? " (SIG" : "",
			abbr ? abbr : "", abbr ? ")" : "");
		break;
	}
	case HT_ENDING_DETACH:
		fputs("the agent stopped recording before the end", out);
		break;
	case HT_ENDING_EXEC:
		fputs("replaced itself by exec of ", out);
		ht_text_put(out, t->exec_path ? t->exec_path : "?");
		break;
	case HT_ENDING_CUT_SHORT:
		fputs("unknown: the trace has no END record", out);
		break;
	}
}
