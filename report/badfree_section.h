/* badfree_section.h - the INVALID FREES section (report/badfree_section.c). */
#ifndef HEAPTRAIL_BADFREE_SECTION_H
#define HEAPTRAIL_BADFREE_SECTION_H

#include <stdio.h>

#include "analysis/model.h"
#include "analysis/symbolize.h"
#include "report/emitter.h"

/* The text section (nothing when the trace has no bad free), or the JSON
 * member "invalid_frees" (docs/JSON.md): null for a sampled or summary
 * trace, where unmatched frees are not errors. Returns 0 or a negative
 * errno. */
int ht_section_badfrees(ht_emitter_t *e, const ht_model_t *m, ht_symbolizer_t *sym);

#endif
