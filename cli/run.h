/* run.h - `heaptrail run`: start a program under the agent. */
#ifndef HEAPTRAIL_RUN_H
#define HEAPTRAIL_RUN_H

#include <stdbool.h>

typedef struct ht_run_opts {
	const char *output; /* trace path template, or NULL for the agent default */
	unsigned depth;	    /* 0 = agent default */
	const char *unwind; /* "fp", "libunwind" or NULL */
	bool no_follow_fork;
	bool functions; /* agent option functions=1: ENTER/EXIT events */
	bool start_off; /* agent option start=off: recording starts switched off */
	unsigned long long sample_rate; /* agent option sample_rate; 0 = exact */
	bool sample_seed_set;
	unsigned long long sample_seed; /* agent option sample_seed */
	char **argv; /* PROGRAM ARGS..., NULL-terminated */
} ht_run_opts_t;

/* Run the program, wait, print the summary and trace paths on stderr.
 * Returns the exit status heaptrail should end with: the program's (128+N
 * for signal N), 127 not found, 126 not executable, 1 on our own failure. */
int ht_run(const ht_run_opts_t *o);

#endif /* HEAPTRAIL_RUN_H */
