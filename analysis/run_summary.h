/* run_summary.h - the processes of a run, each read on its own and kept
 * as the few figures and stacks a report of the whole run shows
 * (report/run_section.h writes them).
 *
 * A run of 80 processes costs the memory of its largest: each trace is
 * read, modelled and symbolized, its row and its top sites (their frames
 * copied) are kept, and the rest is freed before the next.
 */
#ifndef HEAPTRAIL_RUN_SUMMARY_H
#define HEAPTRAIL_RUN_SUMMARY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/leaks.h"
#include "analysis/model.h"
#include "analysis/symbolize.h"

/* A process of a run, as a run file names it or its trace says. */
typedef struct ht_proc {
	char *path;    /* the trace as it can be opened */
	char *shown;   /* as the user gave or the run file names it */
	char *program; /* NULL until known */
	long pid, ppid; /* -1 until known */
	char ended[128]; /* "exit 0", "signal 9 (SIGKILL)", "exec", ...; "" unknown */
} ht_proc_t;

/* Fills what p does not know yet (program, pid, parent, how it ended)
 * from its trace. */
void ht_proc_fill(ht_proc_t *p, const ht_trace_t *t);

/* One process read: its trace, symbolizer (may be NULL), model and, when
 * have_lk, its leaks. */
typedef struct ht_proc_load {
	ht_trace_t *t;
	ht_symbolizer_t *sym;
	ht_model_t *m;
	ht_leaks_t lk;
	bool have_lk;
} ht_proc_load_t;

/* Reads p's trace (by_address: sites by stack id) and fills p from it;
 * supps: the suppressions of its leaks (NULL: none). Returns 0, or 1
 * after saying why on stderr. */
int ht_proc_load(ht_proc_load_t *l, ht_proc_t *p, bool by_address, ht_supp_list_t *supps);
void ht_proc_load_free(ht_proc_load_t *l);

/* A site's stack kept past its model: what ht_model_frames gives, the
 * strings copied. */
typedef struct ht_kept_stack {
	ht_frame_t *frames;
	long n;
	bool overflow;	   /* the summary's row of all other sites */
	bool known;	   /* the site has a stack */
	uint64_t stack_id; /* when not known: 0, or the id the trace never defined */
} ht_kept_stack_t;

void ht_kept_stack_free(ht_kept_stack_t *k);

/* A process's row of the run. */
typedef struct ht_run_proc {
	ht_proc_t *p;
	bool loaded; /* false: its trace could not be read */
	uint64_t start_ns;
	uint64_t allocations, bytes, peak, lost, in_use;
	size_t nsites; /* sites with allocations */
	bool sampled;
} ht_run_proc_t;

/* One of the top sites of a process. */
typedef struct ht_run_site {
	size_t proc; /* index of its process in procs */
	uint64_t bytes, allocations, peak;
	ht_kept_stack_t stack;
} ht_run_site_t;

typedef struct ht_run_summary {
	ht_run_proc_t *procs; /* in the order given */
	size_t n;
	size_t *order;	      /* procs in the order they started; unreadable last */
	ht_run_site_t *sites; /* the top of each process, all by bytes allocated */
	size_t nsites;
	size_t nsites_all; /* sites with allocations in all the processes */
	uint64_t total;	   /* bytes allocated by all */
	size_t most;	   /* the process that allocated most, SIZE_MAX: none read */
	unsigned failed;   /* traces that could not be read (said on stderr) */
} ht_run_summary_t;

/* Reads the n processes p one at a time and keeps each one's row and its
 * top sites (sites false: none). Returns 0, or -ENOMEM (s is then empty). */
int ht_run_summarize(ht_run_summary_t *s, ht_proc_t *p, size_t n, size_t top, bool sites,
		     bool by_address, ht_supp_list_t *supps);
void ht_run_summary_free(ht_run_summary_t *s);

/* Two runs by program: each program's processes on either side, their
 * bytes allocated and lost summed, the largest peak. */
typedef struct ht_run_program {
	const char *program; /* a process's: valid while its run is */
	size_t procs[2];
	uint64_t bytes[2], peak[2], lost[2];
} ht_run_program_t;

typedef struct ht_run_programs {
	ht_run_program_t *rows; /* in the order first seen, BASE first */
	size_t n, cap;
	unsigned failed; /* traces that could not be read (said on stderr) */
} ht_run_programs_t;

/* side[k]: the nproc[k] processes of BASE (0) and NEW (1). Returns 0 or
 * -ENOMEM. */
int ht_run_by_program(ht_run_programs_t *r, ht_proc_t *const side[2], const size_t nproc[2],
		      bool by_address);
void ht_run_programs_free(ht_run_programs_t *r);

#endif /* HEAPTRAIL_RUN_SUMMARY_H */
