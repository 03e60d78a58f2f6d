/* run.h - `heaptrail run`: start a program under the agent. */
#ifndef HEAPTRAIL_RUN_H
#define HEAPTRAIL_RUN_H

#include <stdbool.h>

#include "analysis/leaks.h"

typedef struct ht_run_opts {
	const char *output; /* trace path template, or NULL for the agent default */
	unsigned depth;	    /* 0 = agent default */
	const char *unwind; /* "fp", "libunwind" or NULL */
	bool no_follow_fork;
	bool functions; /* agent option functions=1: ENTER/EXIT events */
	bool start_off; /* agent option start=off: recording starts switched off */
	bool summary;	/* agent option summary=1: per-site totals, no events */
	unsigned summary_sites; /* agent option summary_sites (0: its default) */
	const char *break_alloc; /* agent option break=LIST (numbers joined by '+'), or NULL */
	bool gdb; /* run the program under gdb, break_traced=1 */
	int leak_exitcode;	 /* exit status when definite/indirect leaks remain; -1: off */
	bool no_leak_report;	 /* with leak_exitcode: no leak section on stderr */
	bool no_mmap;		 /* agent option mmap=0: the program's maps not recorded */
	bool free_stacks;	 /* agent option free_stacks=1: every free's stack */
	int error_exitcode;	 /* exit status when a traced process made a double,
				  * invalid or mismatched free; -1: off */
	bool no_leak_check;	 /* agent option leak_check=0: no live table, no scan */
	ht_supp_list_t *supps;	 /* suppressions for the leak exit code; may be NULL */
	unsigned long long sample_rate; /* agent option sample_rate; 0 = exact */
	bool sample_seed_set;
	unsigned long long sample_seed; /* agent option sample_seed */
	bool live;	 /* the live view (cli/top.h) while it runs; its output to a file */
	char **argv; /* PROGRAM ARGS..., NULL-terminated */
} ht_run_opts_t;

/* Run the program, wait, print the summary and trace paths on stderr.
 * Returns the exit status heaptrail should end with: the program's (128+N
 * for signal N), 127 not found, 126 not executable, 1 on our own failure;
 * leak_exitcode instead of the program's own exit status (not of a death
 * by signal) when its main trace has unsuppressed definite or indirect
 * leaks (unclassified ones count as definite); error_exitcode instead of
 * either (a death by signal included: glibc aborts on a double free) when
 * a trace of the run has a bad free. */
int ht_run(const ht_run_opts_t *o);

/* The agent's path (HEAPTRAIL_AGENT, beside the command, or its lib/): 0,
 * or -errno having said why on stderr. */
int ht_find_agent(char *buf, size_t len);

#endif /* HEAPTRAIL_RUN_H */
