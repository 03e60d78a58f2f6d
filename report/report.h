/* report.h - report writers over the model (one file per format).
 *
 * Writers only read the model and the trace; symbolization goes through the
 * symbolizer passed in (NULL: frames carry module + address only, as in the
 * fuzz target). They return 0 or a negative error code; -EIO when the output
 * stream failed.
 */
#ifndef HEAPTRAIL_REPORT_H
#define HEAPTRAIL_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "analysis/model.h"
#include "analysis/safe.h"
#include "analysis/symbolize.h"

struct ht_leaks;
struct ht_diff;

typedef struct ht_report_opts {
	const char *trace_path; /* shown in the text header; may be NULL */
	size_t top;		/* entries per list; 0 = writer default (text 10, json all) */
} ht_report_opts_t;

int ht_report_text(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym,
		   const ht_report_opts_t *o);
int ht_report_json(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym,
		   const ht_report_opts_t *o);
/* Only the text report's TOP SITES BY BYTES ALLOCATED section (what
 * `heaptrail run --summary` prints at the end). */
int ht_report_top_sites_text(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym, size_t top);
/* The same with the leaks grouped by the caller (analysis/leaks.h: suppressions
 * applied); the plain writers group them without suppressions. Text:
 * show_reachable lists the still-reachable blocks too. */
int ht_report_text_leaks(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym,
			 const ht_report_opts_t *o, const struct ht_leaks *l, bool show_reachable);
int ht_report_json_leaks(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym,
			 const ht_report_opts_t *o, const struct ht_leaks *l);

/* Pools and snapshots (figures in analysis/model.h). The text
 * sections print nothing when the trace has no pools or snapshots; the
 * JSON writers write the members' values (arrays; the caller writes the
 * keys). sym may be NULL. Return 0, -ENOMEM or -EIO. */
int ht_report_pools_text(FILE *out, const ht_model_t *m);
int ht_report_snapshots_text(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym);
int ht_report_pools_json(FILE *out, const ht_model_t *m);
int ht_report_snapshots_json(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym);

/* The leak section and its companions (report/leaks_section.c). The text
 * leak section lists at most top stacks per class (0: 10); the checks
 * section prints nothing without on-demand checks. The JSON writers write
 * members' values, ht_report_leak_totals_json the members it adds to
 * "totals" (each preceded by ", "). */
int ht_report_leaks_text(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym,
			 const struct ht_leaks *l, size_t top, bool show_reachable);
/* The same inside a report that labels sites already: labels[site] is its
 * [site N] (0: not shown yet), *next the last N given; both are updated. */
int ht_report_leaks_text_labeled(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym,
				 const struct ht_leaks *l, size_t top, bool show_reachable,
				 uint32_t *labels, uint32_t *next);
int ht_report_checks_text(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym);
int ht_report_growth_text(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym, size_t top);
void ht_report_leak_totals_json(FILE *out, const struct ht_leaks *l);
int ht_report_leaks_json(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym,
			 const struct ht_leaks *l);
int ht_report_suppressions_json(FILE *out, const struct ht_leaks *l);
int ht_report_checks_json(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym);
int ht_report_growth_json(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym);

/* A section title of the text reports: "\nTITLE ---...---" to 100 columns. */
void ht_report_rule(FILE *out, const char *title);
/* The rule of a list of sites: "TITLE (top SHOWN of N sites)", or "(N sites)". */
void ht_report_list_rule(FILE *out, const char *title, size_t shown, size_t n);

/* A site's stack as the text report prints it (leaf first, `function
 * file:line`); brief: its top frames only (it was printed in full above). */
int ht_report_stack_text(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym,
			 const ht_site_t *s, bool brief);

/* The program of a trace as the text report's header shows it: its
 * command line (quoted for a shell), and how it ended. */
void ht_report_command_text(FILE *out, const ht_trace_t *t);
void ht_report_ending_text(FILE *out, const ht_trace_t *t);
/* The JSON report's "program" object (its value). */
void ht_report_program_json(FILE *out, const ht_trace_t *t);

/* `heaptrail diff` (analysis/diff.h; report/diff_report.c): totals side by side and the
 * largest changes of the matched sites, top rows per table (0: 10); the
 * JSON object {"heaptrail_diff": 1, ...} with every row (docs/JSON.md). */
int ht_report_diff_text(FILE *out, const struct ht_diff *d, size_t top);
int ht_report_diff_json(FILE *out, const struct ht_diff *d);

/* Warnings about the trace as one line each (no newline), for both writers:
 * damage, a missing END, agent trouble. Returns how many were written to
 * lines (at most max); each is a static or buf-backed string. */
#define HT_WARN_LEN 700
size_t ht_report_warnings(const ht_model_t *m, char buf[][HT_WARN_LEN], size_t max);

/* Writes frames as the JSON array of FRAME objects (docs/JSON.md). */
void ht_json_frames(FILE *out, const ht_frame_t *f, long n);

/* Resource leaks (figures in analysis/resources.h): descriptors still
 * open at exit and handles still held. The text section is printed when
 * the trace recorded any descriptor or handle event (nothing for older
 * traces); `heaptrail report` prints it after the heap leaks, and any
 * other command may call it alone. The JSON writer writes the members
 * "fd_leaks" and "handle_leaks" (keys included, no separator around).
 * sym may be NULL. Return 0, -ENOMEM or -EIO. */
int ht_report_resources_text(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym);
int ht_report_resources_json(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym);

#endif /* HEAPTRAIL_REPORT_H */
