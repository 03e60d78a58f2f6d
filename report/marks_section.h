/* marks_section.h - writers of tags and phases (the model is
 * analysis/marks.h): `heaptrail report --by-tag`, `--tag NAME`, the PHASES
 * section of the text report, and the "tags" and "phases" members of the
 * JSON report.
 *
 * Like report/functions_section.h, this header shares its name with the model's:
 * sources include the other one by relative path.
 */
#ifndef HEAPTRAIL_REPORT_MARKS_H
#define HEAPTRAIL_REPORT_MARKS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis/marks.h"
#include "analysis/model.h"
#include "analysis/symbolize.h"
#include "report/emitter.h"

/* The line the tag views print when a trace has no TAG events. */
extern const char ht_marks_no_tags_msg[];

/* `--by-tag`: one row per tag (allocations, bytes, live blocks and bytes at
 * the end), by bytes, "untagged" last, and a total row. Returns 0 or -EIO. */
int ht_report_by_tag_text(FILE *out, const ht_marks_t *mk, const char *trace_path);

typedef struct ht_tag_report_opts {
	const char *trace_path; /* shown in the header; may be NULL */
	const char *name;	/* the tag */
	size_t depth;		/* frames per stack, leaf first; 0 = all */
	uint64_t min_count;	/* stacks with fewer allocations are left out */
	size_t top;		/* stacks listed; 0 = 10, SIZE_MAX = all */
} ht_tag_report_opts_t;

/* `--tag NAME`: the distinct call stacks that allocated blocks with the
 * tag, cut to o->depth frames (stacks equal once cut are one), most
 * allocations first, each with its count and bytes. m gives the frames
 * (ht_model_frames); sym may be NULL. Returns 0, -ENOENT when the trace
 * has no such tag (a message saying so and listing the tags is printed),
 * -ENOMEM or -EIO. */
int ht_report_tag_text(FILE *out, const ht_model_t *m, const ht_marks_t *mk,
		       ht_symbolizer_t *sym, const ht_tag_report_opts_t *o);

/* Phases: in text the PHASES section, one row per phase name (entered,
 * allocations, bytes, net live change, peak inside), nothing when the
 * trace has no phases; in JSON the "phases" member. Returns 0, -ENOMEM or
 * -EIO. */
int ht_section_phases(ht_emitter_t *e, const ht_marks_t *mk);

/* Tags: in text the ALLOCATIONS BY TAG table of `--by-tag`; in JSON the
 * "tags" member, each tag with its stacks. Returns 0, -ENOMEM or -EIO. */
int ht_section_tags(ht_emitter_t *e, const ht_marks_t *mk);

#endif /* HEAPTRAIL_REPORT_MARKS_H */
