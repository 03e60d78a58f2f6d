/* marks.h - tags and phases (heaptrail.h's heaptrail_tag and
 * heaptrail_phase_begin/end) replayed from a trace's TAG and PHASE
 * events.
 *
 * One replay of the merged events (a pass with HT_MERGE_MARKS, analysis/pass.h)
 * through the same live blocks as the heap model (analysis/model.c): frees
 * of unknown blocks are ignored, an allocation over a live block drops that
 * block, a REALLOC is one free plus one allocation.
 *
 * Tags. A TAG gives the live block at its address a tag; a later TAG of the
 * same block replaces it. A block is counted once, under the tag it carries
 * when it dies (freed, dropped, or still live at the end), so the
 * allocations and bytes of all tags plus "untagged" equal the heap model's
 * totals. A realloc'd block keeps its tag: the new block (a new allocation,
 * as memcheck counts it) carries the tag of the one it replaced, since the
 * program sees one object that grew. Per tag, the distinct allocation stacks
 * (stack ids) of its blocks with their counts.
 *
 * Phases. Phases are per thread and nest; an end closes the innermost open
 * phase of that name on its thread (an end with none open is ignored). Per
 * phase name:
 *   entered          PHASE begins;
 *   allocations,     allocations (and allocation halves of REALLOC) made by
 *   bytes_allocated  the thread while the phase was open on it, inclusive:
 *                    an allocation inside "emit" inside "parse" counts for
 *                    both, but once per name however deep a phase recurses;
 *   net_live_bytes   sum over entries of (heap at exit - heap at entry), the
 *                    whole process's live bytes, so it may be negative;
 *   peak_inside      max over entries of (highest heap while open - heap at
 *                    entry), again the whole process's heap.
 * Phases still open at the end of the trace are closed there (open_at_end).
 * Each thread tracks at most HT_MARKS_MAX_DEPTH open phases; begins past it
 * count as entered and nothing else (depth_capped), and ends pair with them
 * first.
 */
#ifndef HEAPTRAIL_MARKS_H
#define HEAPTRAIL_MARKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/reader.h"
#include "analysis/util.h"

#define HT_MARKS_MAX_DEPTH 256 /* open phases tracked per thread */
#define HT_MARKS_UNTAGGED 0    /* index of the "untagged" row in tags */

/* One distinct allocation stack of a tag's blocks. */
typedef struct ht_tag_stack {
	uint64_t stack_id;
	uint64_t first_time; /* first allocation: picks modules for its frames */
	uint64_t allocations, bytes_allocated;
	uint64_t live_blocks, live_bytes; /* at the end of the trace */
	double est[4]; /* sampled trace: the four figures above, weighted */
} ht_tag_stack_t;

typedef struct ht_tag_stat {
	uint64_t name_id; /* 0 for untagged */
	char *name;	  /* "untagged", the trace's name, or "#ID" when undefined */
	uint64_t allocations, bytes_allocated;
	uint64_t live_blocks, live_bytes; /* at the end of the trace (leaked) */
	double est[4]; /* sampled trace: the four figures above, weighted */
	ht_tag_stack_t *stacks;
	size_t nstacks, cap_stacks;
	ht_map_t stack_idx; /* stack id -> index in stacks */
} ht_tag_stat_t;

typedef struct ht_phase_stat {
	uint64_t name_id;
	char *name; /* the trace's name, or "#ID" when undefined */
	uint64_t entered;
	uint64_t open_at_end; /* entries still open when the trace ended */
	uint64_t allocations, bytes_allocated;
	double est[2]; /* sampled trace: the two figures above, weighted */
	int64_t net_live_bytes;
	uint64_t peak_inside;
	uint64_t first_time; /* first begin: orders ties */
	/* replay scratch */
	uint64_t counted_at; /* ordinal+1 of the last allocation counted */
} ht_phase_stat_t;

typedef struct ht_marks {
	const ht_trace_t *trace; /* must outlive the marks */
	ht_tag_stat_t *tags;	 /* tags[HT_MARKS_UNTAGGED] is "untagged" */
	size_t ntags, cap_tags;
	ht_phase_stat_t *phases;
	size_t nphases, cap_phases;
	uint64_t tag_events, phase_events;
	uint64_t tags_ignored;	 /* TAG of an address with no live block */
	uint64_t retagged;	 /* TAG of a block that had another tag */
	uint64_t unmatched_ends; /* end of a phase not open on its thread */
	bool depth_capped;	 /* some begins were past HT_MARKS_MAX_DEPTH */
	uint64_t allocations, bytes_allocated; /* all blocks: = the heap model's */
	double est[2]; /* sampled trace: the two figures above, weighted */
	ht_map_t tag_idx, phase_idx;	       /* name id -> index */
} ht_marks_t;

/* In a sampled trace (t->sample_rate) the figures are estimates: each
 * recorded block of s bytes stands for 1/(1-exp(-s/R)) blocks (model.h);
 * est[] holds the unrounded sums, the integer fields their rounding.
 * Replay t's tags and phases. A trace without TAG or PHASE events gives
 * marks with tag_events == phase_events == 0 (every block untagged), not
 * an error. Returns 0 or -ENOMEM (*out then NULL). Free with ht_marks_free. */
int ht_marks_build(const ht_trace_t *t, ht_marks_t **out);
/* The same replay as one consumer of pass p (analysis/pass.h), sharing its
 * live blocks: *out is the marks once ht_pass_run(p) has returned 0; the
 * caller frees them in any case. Returns 0 or -ENOMEM. */
struct ht_pass;
int ht_marks_attach(struct ht_pass *p, const ht_trace_t *t, ht_marks_t **out);
void ht_marks_free(ht_marks_t *mk);

/* Fold each tag's stacks into the model's sites (ht_model_site_of): one
 * entry per site, under its stack_id, as the report's sites. */
struct ht_model;
void ht_marks_fold_sites(ht_marks_t *mk, const struct ht_model *m);

/* Fill idx (room for mk->ntags) with the tags that have allocations, by
 * bytes allocated (ties: allocations, then name), "untagged" last. Returns
 * how many. */
size_t ht_marks_sort_tags(const ht_marks_t *mk, size_t *idx);

/* Fill idx (room for mk->nphases) with every phase, by bytes allocated
 * (ties: first entered first). Returns how many. */
size_t ht_marks_sort_phases(const ht_marks_t *mk, size_t *idx);

/* The tag named name, or NULL. "untagged" finds the untagged row. */
const ht_tag_stat_t *ht_marks_find_tag(const ht_marks_t *mk, const char *name);

#endif /* HEAPTRAIL_MARKS_H */
