/* badfree_section.h - the INVALID FREES section (report/badfree_section.c). */
#ifndef HEAPTRAIL_BADFREE_SECTION_H
#define HEAPTRAIL_BADFREE_SECTION_H

#include <stdio.h>

#include "analysis/model.h"
#include "analysis/symbolize.h"

/* The text section: nothing when the trace has no bad free. Returns 0 or
 * a negative errno. */
int ht_report_badfrees_text(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym);
/* The JSON value of "invalid_frees" (docs/JSON.md): null for a sampled or
 * summary trace, where unmatched frees are not errors. */
int ht_report_badfrees_json(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym);

#endif
