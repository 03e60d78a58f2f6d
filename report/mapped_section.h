/* mapped_section.h - the MAPPED MEMORY section (report/mapped_section.c). */
#ifndef HEAPTRAIL_MAPPED_SECTION_H
#define HEAPTRAIL_MAPPED_SECTION_H

#include <stdio.h>

#include "analysis/model.h"
#include "analysis/symbolize.h"
#include "report/emitter.h"

/* The text section (nothing when the trace has no map events; top: rows,
 * 0: 10), or the JSON member "mapped" (docs/JSON.md): null without map
 * events, every site. Returns 0 or a negative errno. */
int ht_section_mapped(ht_emitter_t *e, const ht_model_t *m, ht_symbolizer_t *sym, size_t top);

#endif
