/* top.h - `heaptrail top`: a live view of a trace as the agent writes it. */
#ifndef HEAPTRAIL_TOP_H
#define HEAPTRAIL_TOP_H

#include <stdbool.h>
#include <sys/types.h>

enum { HT_TOP_LIVE, HT_TOP_RATE, HT_TOP_GROWTH, HT_TOP_NSORTS };

typedef struct ht_top_opts {
	const char *target; /* a pid, or a trace file */
	bool once;	    /* one frame as text, then exit */
	unsigned batch;	    /* that many frames as text, one per interval; 0: the view */
	unsigned interval_ms; /* refresh interval (0: 1000) */
	int sort;	    /* HT_TOP_* */
	unsigned nsites;    /* sites listed; 0: as many as fit (text: 10) */
} ht_top_opts_t;

/* heaptrail top. Returns the exit status. */
int ht_top(const ht_top_opts_t *o);

/* heaptrail run --live: the terminal view of the trace at path, written by
 * process pid (our child, which the caller reaps); output names the file
 * the program's output goes to. Returns when the user leaves the view
 * (the program runs on) or -1 when the view could not start. */
int ht_top_live(const char *path, pid_t pid, const char *output);

#endif /* HEAPTRAIL_TOP_H */
