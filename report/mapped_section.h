/* mapped_section.h - the MAPPED MEMORY section (report/mapped_section.c). */
#ifndef HEAPTRAIL_MAPPED_SECTION_H
#define HEAPTRAIL_MAPPED_SECTION_H

#include <stdio.h>

#include "analysis/model.h"
#include "analysis/symbolize.h"

/* The text section: nothing when the trace has no map events. top: rows
 * (0: 10). Returns 0 or a negative errno. */
int ht_report_mapped_text(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym, size_t top);
/* The JSON value of "mapped" (docs/JSON.md): null without map events. */
int ht_report_mapped_json(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym);

#endif
