/* run_section.h - the report of a run of several processes and the diff
 * of two runs (report/run_section.c), both back ends, from the figures of
 * analysis/run_summary.h.
 *
 * The report of a run is three sections, so that the command can read
 * each process's leaks between them: ht_section_run_head (the title, the
 * PROCESSES table; the JSON object {"heaptrail_run": 1, ...} opened with
 * its "processes"), ht_section_run_leaks for each process whose leaks are
 * shown (text only), and ht_section_run_tail (the top sites of all the
 * processes, the hint to see one; the JSON "sites", the object closed).
 */
#ifndef HEAPTRAIL_RUN_SECTION_H
#define HEAPTRAIL_RUN_SECTION_H

#include <stdbool.h>
#include <stddef.h>

#include "analysis/run_summary.h"
#include "report/emitter.h"

/* source, command: the run file or directory and the run's command line
 * (NULL: none); leaks_only: the head of `heaptrail leaks`. */
void ht_section_run_head(ht_emitter_t *e, const ht_run_summary_t *s, const char *source,
			 const char *command, bool leaks_only);

/* Text only: process p's leaks under a heading naming it, when any was
 * lost (or show_reachable); top stacks per class. Returns 0 or a negative
 * errno. */
int ht_section_run_leaks(ht_emitter_t *e, const ht_proc_t *p, const ht_proc_load_t *l,
			 size_t top, bool show_reachable);

/* leaks_only: the leaks were shown (leak_sections: how many processes
 * were looked at; 0: a line says none lost memory); else the top sites of
 * all the processes, top of them. run_arg: what to type to name the run
 * again, for the hint of how to see one process. Returns 0 or -EIO. */
int ht_section_run_tail(ht_emitter_t *e, const ht_run_summary_t *s, size_t top, bool leaks_only,
			size_t leak_sections, const char *run_arg);

/* Two runs side by side by program: the PROGRAMS table of the text, the
 * JSON object {"heaptrail_run_diff": 1, "programs": [...]}. base, new_:
 * how to name the two runs. Returns 0 or -EIO. */
int ht_section_run_diff(ht_emitter_t *e, const ht_run_programs_t *r, const char *base,
			const char *new_);

#endif /* HEAPTRAIL_RUN_SECTION_H */
