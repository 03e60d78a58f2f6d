/* runset.h - the traces of one run as one thing: the run file that
 * `heaptrail run` writes beside them (one line per process: its trace,
 * pid, parent, program and how it ended), and the set of traces a command
 * was given (a run file, a directory, several traces, `-` for standard
 * input), from which report, leaks, convert and diff take one process or
 * all of them.
 */
#ifndef HEAPTRAIL_RUNSET_H
#define HEAPTRAIL_RUNSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "analysis/leaks.h"
#include "analysis/run_summary.h"

/* The first line of a run file; its other lines starting with '#' are
 * comments, and each further line is TRACE<TAB>PID<TAB>PARENT<TAB>PROGRAM
 * <TAB>ENDED (TRACE relative to the run file's directory unless absolute). */
#define HT_RUNFILE_MAGIC "# heaptrail run"

typedef struct ht_runset {
	ht_proc_t *p;
	size_t n, cap;
	char *source;  /* the run file or directory when one was given (else NULL) */
	char *command; /* the run file's command line, or NULL */
	int stdin_fd;  /* the spooled standard input, or -1 */
} ht_runset_t;

void ht_runset_init(ht_runset_t *rs);
void ht_runset_free(ht_runset_t *rs);

/* Adds what arg names: a run file's processes, a directory's traces (its
 * run files' if it holds any, else every trace in it, by name), a trace,
 * or `-`: standard input, spooled to an unlinked temporary file (the
 * reader maps its input) unless it is a regular file already. Prints why
 * and returns 1 when it cannot. */
int ht_runset_add(ht_runset_t *rs, const char *cmd, const char *arg);

/* Reads program, pid and parent from each trace that lacks them (a trace
 * or directory given directly). */
void ht_runset_fill(ht_runset_t *rs);

/* The index of the one process chosen by pid (>= 0) or program name (not
 * NULL), or -1 after printing what the set holds. */
long ht_runset_pick(ht_runset_t *rs, const char *cmd, long pid, const char *program);

/* Text (or JSON) of the whole set: the table of processes (program, pid,
 * parent, allocated, peak, lost, ended), then the top sites of all of
 * them together, each naming its program and pid; top 0: 10. run_arg:
 * what to type to name the set again, for the hint of how to see one
 * process. Returns 0, or 1 when a trace could not be read (its row says
 * so, the others are all printed) or the output failed. */
int ht_runset_report(FILE *out, ht_runset_t *rs, bool json, size_t top, bool by_address,
		     ht_supp_list_t *supps, const char *run_arg, bool leaks_only,
		     bool show_reachable);

/* Two runs (or a run and a trace) side by side by program: processes,
 * bytes allocated and lost summed, the largest peak. Returns 0, or 1 when
 * a trace could not be read (said on stderr). */
int ht_runset_diff(FILE *out, ht_runset_t *base, ht_runset_t *new_, bool json, bool by_address);

/* `heaptrail run`'s side: writes the run file beside root_trace (its name
 * with .ht replaced by .run, or .run added; never over a file). argv: the
 * command. Returns the path written (the caller frees it), or NULL after
 * printing why. */
char *ht_runfile_write(const char *root_trace, char *const *argv, const ht_proc_t *p,
		       size_t n);

#endif /* HEAPTRAIL_RUNSET_H */
