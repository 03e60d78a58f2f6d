/* html.h - the interactive HTML report (report/html.c): one self-contained
 * file, a template (report/html/, embedded at build time) around the
 * report's data as JSON.
 */
#ifndef HEAPTRAIL_HTML_H
#define HEAPTRAIL_HTML_H

#include <stdio.h>

#include "analysis/blocks.h"
#include "analysis/leaks.h"
#include "report/report.h"

/* The buckets of the page's timeline: the caller that builds the model with
 * a timeline of this size (ht_model_build_timed) spares the writer a
 * replay. */
#define HT_HTML_TL_BUCKETS 200

/* `heaptrail report --format html`: the views of the text report and more
 * (docs/heaptrail.1). lk: the leaks as the caller grouped them
 * (suppressions applied), or NULL (grouped here without suppressions).
 * blk: the trace's blocks over HT_HTML_TL_BUCKETS buckets (analysis/
 * blocks.h), from the pass that built m, or NULL (a summary trace: the
 * page then has no per-block filters). m must have a timeline of
 * HT_HTML_TL_BUCKETS (ht_model_build_timed). sym may be NULL. Returns 0,
 * -ENOMEM or -EIO. */
int ht_report_html(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym,
		   const ht_report_opts_t *o, const ht_leaks_t *lk, const ht_blocks_t *blk);

/* `heaptrail diff --format html`: the two traces of d (built by
 * ht_diff_build) side by side, their rows and a differential flame graph.
 * Returns 0, -ENOMEM or -EIO. */
struct ht_diff;
int ht_report_diff_html(FILE *out, const struct ht_diff *d);

/* The template's parts (build/gen/html_assets.c, from report/html/). */
extern const char ht_html_page[], ht_html_css[], ht_html_js[];

#endif /* HEAPTRAIL_HTML_H */
