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
#include "report/emitter.h"
#include "report/stack_text.h"
#include "report/text_layout.h"

struct ht_leaks;
struct ht_diff;

/* Make stdout break the lines longer than width (report/wrap.c); 0: as it
 * is. For the text views only. Returns 0 or -errno. */
int ht_wrap_stdout(size_t width);

typedef struct ht_report_opts {
	const char *trace_path; /* shown in the text header; may be NULL */
	size_t top;		/* entries per list; 0 = writer default (text 10, json all) */
} ht_report_opts_t;

/* What a report shows beside the model, all built by the command: the
 * leaks grouped by class (analysis/leaks.h: ht_leaks_build, required);
 * in the text, show_reachable lists the still-reachable blocks too; the
 * function profile and the tags and phases (NULL: none) add the JSON
 * members "functions", "tags" and "phases", and the text PHASES table. */
typedef struct ht_report_parts {
	const struct ht_leaks *leaks;
	bool show_reachable;
	const struct ht_fn_profile *functions;
	const struct ht_marks *marks;
} ht_report_parts_t;

/* The whole report (report/document.c) through the emitter e, text or JSON. */
int ht_report_write(ht_emitter_t *e, const ht_model_t *m, ht_symbolizer_t *sym,
		    const ht_report_opts_t *o, const ht_report_parts_t *p);
/* The same with the leaks alone, to out. */
int ht_report_text(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym,
		   const ht_report_opts_t *o, const struct ht_leaks *lk);
int ht_report_json(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym,
		   const ht_report_opts_t *o, const struct ht_leaks *lk);
/* Only the text report's TOP SITES BY BYTES ALLOCATED section (what
 * `heaptrail run --summary` prints at the end). */
int ht_report_top_sites_text(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym, size_t top);

/* Pools and snapshots (figures in analysis/model.h), both back ends: the
 * POOLS and SNAPSHOTS tables of the text, the "pools" and "snapshots"
 * members of the JSON; nothing when the trace has none. sym may be NULL.
 * Return 0, -ENOMEM or -EIO. */
int ht_section_pools(ht_emitter_t *e, const ht_model_t *m);
int ht_section_snapshots(ht_emitter_t *e, const ht_model_t *m, ht_symbolizer_t *sym);

/* The leak section and its companions (report/leaks_section.c), both
 * back ends. Leaks: the text lists at most top stacks per class (0: 10),
 * labels[site] is a site's [site N] (0: not shown yet) and *next the last N
 * given, both updated; the JSON member "leaks" lists every group.
 * Suppressions: the text's "suppressed:" lines (when any block was), the
 * JSON member "suppressions" (when there are patterns). Checks: the LEAK
 * CHECKS table and the JSON member "leak_checks", when the trace has
 * on-demand checks. */
int ht_section_leaks(ht_emitter_t *e, const ht_model_t *m, ht_symbolizer_t *sym,
		     const struct ht_leaks *l, size_t top, bool show_reachable, uint32_t *labels,
		     uint32_t *next);
int ht_section_suppressions(ht_emitter_t *e, const ht_model_t *m, const struct ht_leaks *l);
int ht_section_checks(ht_emitter_t *e, const ht_model_t *m, ht_symbolizer_t *sym);
/* The text leak section with its suppressions, to out (its own labels). */
int ht_report_leaks_text(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym,
			 const struct ht_leaks *l, size_t top, bool show_reachable);
/* The "leak_checks" member, key included, after a separator the caller
 * wrote (the HTML report's data). */
int ht_report_checks_json(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym);
/* JSON only: the members the leaks add to "totals". */
void ht_section_leak_totals(ht_emitter_t *e, const struct ht_leaks *l);
/* The same to out, after a member of an object (the HTML report's data). */
void ht_report_leak_totals_json(FILE *out, const struct ht_leaks *l);
/* Growth suspects (analysis/leaks.h: ht_growth_rank gives g[n]): the
 * GROWTH SUSPECTS section of the text, top sites (0: 10); the "growth"
 * member of the JSON, every site. */
struct ht_growth;
int ht_section_growth(ht_emitter_t *e, const ht_model_t *m, ht_symbolizer_t *sym,
		      const struct ht_growth *g, size_t n, size_t top);

/* The program of a trace as the text report's header shows it
 * (report/program_text.c): its command line (quoted for a shell), and how it ended. */
void ht_report_command_text(FILE *out, const ht_trace_t *t);
void ht_report_ending_text(FILE *out, const ht_trace_t *t);
/* The JSON report's "program" object (its value); through the emitter,
 * the member key (NULL: a value). */
void ht_report_program_json(FILE *out, const ht_trace_t *t);
void ht_emit_program(ht_emitter_t *e, const char *key, const ht_trace_t *t);

/* `heaptrail diff` (analysis/diff.h; report/diff_report.c): totals side by side and the
 * largest changes of the matched sites, top rows per table (0: 10); the
 * JSON object {"heaptrail_diff": 1, ...} with every row (docs/JSON.md). */
int ht_section_diff(ht_emitter_t *e, const struct ht_diff *d, size_t top);

/* Warnings about the trace as one line each (no newline), for both writers:
 * damage, a missing END, agent trouble. Returns how many were written to
 * lines (at most max); each is a static or buf-backed string. */
#define HT_WARN_LEN 700
size_t ht_report_warnings(const ht_model_t *m, char buf[][HT_WARN_LEN], size_t max);

/* Writes frames as the JSON array of FRAME objects (docs/JSON.md). */
void ht_emit_frames(ht_emitter_t *e, const char *key, const ht_frame_t *f, long n);

/* Resource leaks (figures in analysis/resources.h): descriptors still
 * open at exit and handles still held. The text section is printed when
 * the trace recorded any descriptor or handle event (nothing for older
 * traces); the JSON members "fd_leaks" and "handle_leaks" are always
 * written. sym may be NULL. Return 0, -ENOMEM or -EIO. The FILE form
 * writes the two members after a separator the caller wrote (the HTML
 * report's data). */
int ht_section_resources(ht_emitter_t *e, const ht_model_t *m, ht_symbolizer_t *sym);
int ht_report_resources_json(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym);

#endif /* HEAPTRAIL_REPORT_H */
