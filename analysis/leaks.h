/* leaks.h - the leak view of a model: blocks live at the end
 * grouped by class and stack, LeakSanitizer-style suppressions, the leak
 * exit code's test, and growth suspects.
 *
 * The model classifies each live block by the exit check (analysis/model.h);
 * this groups them per (site, class), matches suppressions against the
 * symbolized frames, and sorts the groups largest first.
 */
#ifndef HEAPTRAIL_LEAKS_H
#define HEAPTRAIL_LEAKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/model.h"
#include "analysis/symbolize.h"

/* ---- suppressions ------------------------------------------------------------
 * LeakSanitizer's format: one `leak:PATTERN` per line, `#` comments, blank
 * lines. A pattern matches a stack when it matches any frame's function,
 * source file or module: `*` matches any run of characters, `^` anchors at
 * the start, `$` at the end, and without anchors it may match anywhere. */
typedef struct ht_supp {
	char *pattern;
	const char *origin; /* the file it came from, or "built-in" */
	const char *leaf_module; /* built-ins only: the leaf frame's module must match too */
	uint64_t blocks, bytes, groups; /* what it suppressed */
} ht_supp_t;

typedef struct ht_supp_list {
	ht_supp_t *s;
	size_t n, cap;
} ht_supp_list_t;

/* Add the built-in patterns: one-time allocations of libc, ld.so and the
 * C++ runtime that stay live until exit by design. Returns 0 or -ENOMEM. */
int ht_supp_add_defaults(ht_supp_list_t *l);
/* Add the patterns of a suppressions file (path must outlive l). Returns 0,
 * -errno when it cannot be read, -HT_ENOTREG when it is not a regular file,
 * -EFBIG past HT_SUPP_FILE_MAX bytes, or -EINVAL for a line that is not
 * `leak:PATTERN`, a comment or blank; *bad_line then holds its number. */
#define HT_SUPP_FILE_MAX ((uint64_t)16 << 20)
int ht_supp_load_file(ht_supp_list_t *l, const char *path, size_t *bad_line);
void ht_supp_free(ht_supp_list_t *l);

/* LeakSanitizer's template match (sanitizer_common's TemplateMatch
 * semantics): true when templ matches str; never for NULL or "". */
bool ht_supp_match(const char *templ, const char *str);

/* The suppression matching a stack's frames (f[0] the leaf): the leaf-most
 * frame that any pattern matches (by its module, function or file)
 * decides, and of the patterns matching it the first in the list; a
 * pattern with a leaf module counts only when f[0]'s module matches that.
 * Each distinct string is matched against the patterns once, on its first
 * query. Returns the pattern's index, -1 for none, or -2 for no memory.
 * The list must not change while the cache lives. */
typedef struct ht_supp_cache ht_supp_cache_t;
ht_supp_cache_t *ht_supp_cache_new(const ht_supp_list_t *sl);
long ht_supp_cache_frames(ht_supp_cache_t *c, const ht_frame_t *f, size_t n);
void ht_supp_cache_free(ht_supp_cache_t *c);

/* ---- leak groups -------------------------------------------------------------- */

/* Blocks live at the end with one stack and one class. */
typedef struct ht_leak_group {
	uint32_t site;	  /* index into the model's sites */
	unsigned kind;	  /* HT_LEAK_*, 0: unclassified */
	uint64_t blocks, bytes;
	/* one of its blocks, to find again (the lowest allocation number) */
	uint32_t ex_thread; /* 1: the main thread */
	uint64_t ex_seq, ex_addr;
	long supp;	  /* index of the suppression that matched, or -1 */
	/* sampled trace: blocks and bytes are these estimates, rounded, with
	 * their variances (analysis/model.h, ht_est_t) */
	double est_blocks, est_bytes, var_blocks, var_bytes;
} ht_leak_group_t;

typedef struct ht_leaks {
	ht_leak_group_t *g; /* unsuppressed first: by class, then bytes, largest first */
	size_t n, nshown;   /* nshown: the unsuppressed ones, g[0, nshown) */
	bool classified;    /* the trace has the exit check's classes */
	/* unsuppressed, by class; sampled: estimates rounded once per class */
	uint64_t blocks[HT_LEAK_KINDS], bytes[HT_LEAK_KINDS];
	uint64_t supp_blocks, supp_bytes;
	const ht_supp_list_t *supps; /* may be NULL */
} ht_leaks_t;

/* Group m's live blocks; sl (may be NULL) suppresses, and gets its
 * counters filled. sym may be NULL only when sl is NULL or empty (patterns
 * need names). Returns 0 or -ENOMEM. */
int ht_leaks_build(const ht_model_t *m, ht_symbolizer_t *sym, ht_supp_list_t *sl,
		   ht_leaks_t *out);
void ht_leaks_free(ht_leaks_t *l);

/* Whether the leak exit code applies: definite or indirect leaks remain,
 * unclassified ones counting as definite, suppressed ones never. */
bool ht_leaks_fail(const ht_leaks_t *l);

/* "definite", "indirect", "possible", "reachable", or NULL (unclassified) */
const char *ht_leak_kind_name(unsigned kind);

/* One block's allocation number as trace_format.h names it: "n" on the
 * main thread, "T.n" on thread T. buf has room for 48 bytes. */
char *ht_alloc_number(char *buf, uint32_t thread_num, uint64_t seq);

/* ---- growth suspects ----------------------------------------------------------- */

typedef struct ht_growth {
	uint32_t site;
	double slope;	    /* least-squares trend of live bytes, bytes per second */
	double r2;	    /* how well a line fits (0..1) */
	double new_highs;   /* share of the points that set a new high */
	uint64_t live_bytes, live_blocks; /* at the end */
	uint64_t age_median_ns, age_oldest_ns; /* of its blocks live at the end */
	bool suspect;	    /* steady growth: flagged */
} ht_growth_t;

/* Sites whose live bytes rise over the run (positive slope, something live
 * at the end), suspects first, then by slope. *out is the caller's to free.
 * Returns the count, or -ENOMEM. */
long ht_growth_rank(const ht_model_t *m, ht_growth_t **out);

#endif /* HEAPTRAIL_LEAKS_H */
