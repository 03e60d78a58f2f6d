/* stack_text.h - a site's stack in the text views (report/stack_text.c). */
#ifndef HEAPTRAIL_STACK_TEXT_H
#define HEAPTRAIL_STACK_TEXT_H

#include <stdbool.h>
#include <stdio.h>

#include "analysis/model.h"
#include "analysis/run_summary.h"
#include "analysis/symbolize.h"

/* What printing stacks needs, kept across the stacks of a list so the
 * frame buffer is reused: frames/cap start NULL/0 and are the caller's to
 * free; err keeps the first error (a negative errno). */
typedef struct ht_stack_text {
	FILE *out;
	const ht_model_t *m;
	ht_symbolizer_t *sym; /* NULL: module + address only */
	ht_frame_t *frames;
	size_t cap;
	int err;
} ht_stack_text_t;

/* Print s leaf first, one frame a line; brief: its top frames only (an
 * earlier list printed it in full). */
void ht_stack_text_print(ht_stack_text_t *c, const ht_site_t *s, bool brief);

/* The same for a stack kept past its model. */
void ht_stack_text_kept(FILE *out, const ht_kept_stack_t *k, bool repeat);

/* The same on its own: returns 0 or a negative errno. */
int ht_report_stack_text(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym,
			 const ht_site_t *s, bool brief);

#endif /* HEAPTRAIL_STACK_TEXT_H */
