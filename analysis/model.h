/* model.h - replay a loaded trace into per-site and total statistics.
 *
 * A site is one allocation stack as people read it: the stacks whose frames
 * symbolize alike (function, file, line and inline chain; module and offset
 * where the function is unknown) are one site, when the model is given a
 * symbolizer; without one (--by-address), one per distinct stack. Counting follows
 * valgrind memcheck: a REALLOC event is one free plus one allocation. Frees
 * of addresses the model never saw allocated are ignored (the agent lets
 * some allocations through untracked, e.g. inside signal handlers).
 */
#ifndef HEAPTRAIL_MODEL_H
#define HEAPTRAIL_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/reader.h"
#include "analysis/symbolize.h"
#include "analysis/util.h"

/* Estimates from a sampled trace (ht_trace_t.sample_rate != 0): each
 * recorded block of s bytes stands for 1/p blocks, p = 1 - exp(-s/R), and
 * for s/p bytes (Horvitz-Thompson). var_* are the estimates' variances,
 * sums of (1-p)/p^2 * x^2 over the samples (x = 1 for blocks, s for bytes);
 * the 95% interval is +-1.96 sqrt(var) (ht_ci95). In an exact trace the
 * estimates equal the counts and the variances are 0. */
typedef struct ht_est {
	double allocations, bytes_allocated, frees, temporary;
	double leaked_blocks, leaked_bytes, peak_bytes;
	double var_allocations, var_bytes_allocated, var_leaked_blocks, var_leaked_bytes,
		var_peak_bytes;
} ht_est_t;

/* Half width of the 95% interval of an estimate of variance var. */
double ht_ci95(double var);

typedef struct ht_site {
	uint64_t stack_id; /* its first stack's: the site's number in every output */
	const ht_stack_t *stack; /* NULL: id 0 or never defined (frames unknown) */
	uint64_t allocations;
	uint64_t bytes_allocated;
	uint64_t frees;		/* blocks of this site freed */
	uint64_t peak_bytes;	/* live bytes at the moment of the global peak */
	uint64_t leaked_blocks; /* live at the end of the trace */
	uint64_t leaked_bytes;
	uint64_t temporary;	/* freed before their thread allocated again */
	uint64_t largest;	/* largest single allocation */
	uint64_t first_time;	/* first allocation: picks modules for its frames */
	bool overflow;		/* summary mode: all sites past the agent's table */
	/* summary mode: its blocks live at exit by class (HT_LEAK_*; 0:
	 * unclassified), from the agent's SITES row */
	uint64_t sum_kind_blocks[5], sum_kind_bytes[5];
	/* sampled trace: the figures above are these estimates, rounded */
	ht_est_t est;
	/* replay scratch */
	uint64_t live_bytes, live_blocks;
	double live_w; /* blocks the live samples stand for */
} ht_site_t;

typedef struct ht_totals {
	uint64_t allocations, frees, bytes_allocated;
	uint64_t peak_heap_bytes, peak_time_ns;
	uint64_t peak_rss_bytes; /* 0 when unknown */
	/* the highest RSS sample and its time (0, 0: none); peak_rss_bytes
	 * may be higher, the kernel's high-water mark from END */
	uint64_t peak_rss_sample_bytes, peak_rss_time_ns;
	uint64_t leaked_blocks, leaked_bytes;
	uint64_t temporary;
	uint64_t duration_ns;
	double allocs_per_second;
	uint64_t ignored_frees;	 /* frees of blocks never seen allocated */
	uint64_t reused_addresses; /* allocations over a block never freed */
	uint64_t reallocs;
	/* sampled trace: allocations, frees and bytes_allocated are END's exact
	 * counts when the trace has them (est.var_* then 0), the other figures
	 * rounded estimates */
	ht_est_t est;
} ht_totals_t;

/* A pool of the program's own allocator (heaptrail_pool_*), from
 * its POOL and PALLOC events. Its blocks are ordinary allocations for the
 * totals and sites; a RESET or DESTROY frees those still live, each one
 * free (the merge makes the frees: reader.h, HT_MERGE_POOLS). A pool id
 * created again after its DESTROY starts a new row. */
typedef struct ht_pool_stat {
	uint64_t id;
	uint64_t name_id;      /* 0: unnamed (or no CREATE seen) */
	uint64_t allocations, bytes_allocated;
	uint64_t resets;       /* RESET events */
	uint64_t freed_by_ops; /* blocks freed by its RESETs and DESTROY */
	bool destroyed;
	uint64_t live_blocks, live_bytes; /* at the end of the trace */
	uint64_t first_time;   /* CREATE, or its first event: orders the rows */
	/* sampled trace: allocations, bytes_allocated, freed_by_ops,
	 * live_blocks, live_bytes weighted (the fields above, rounded) */
	double est[5];
} ht_pool_stat_t;

/* Top sites kept per snapshot. */
#define HT_SNAPSHOT_TOP 3

/* The live heap at a SNAPSHOT event (heaptrail_snapshot, or the
 * snapshot_signal option when name_id is 0). */
typedef struct ht_snapshot {
	uint64_t name_id; /* 0: taken on the snapshot signal */
	uint64_t time;
	uint32_t thread;
	uint64_t live_bytes, live_blocks;
	size_t ntop;
	struct {
		uint32_t site; /* index into ht_model_t.sites */
		uint64_t live_bytes, live_blocks;
	} top[HT_SNAPSHOT_TOP]; /* most live bytes first (ties: more blocks) */
} ht_snapshot_t;

/* A block live at the end of the trace, with the class the exit leak check
 * (LEAKS check 0) gave it: analysis/leaks.h groups them. */
typedef struct ht_live_block {
	uint64_t addr, size;
	uint64_t time;	     /* when it was allocated */
	uint64_t seq;	     /* its allocation number on its thread (trace_format.h) */
	uint32_t thread_num; /* 1: the main thread, then 2, 3, ... */
	uint32_t site;	     /* index into ht_model_t.sites */
	unsigned kind;	     /* HT_LEAK_*, or 0: unclassified (no class known) */
	double w;	     /* blocks it stands for: 1, or 1/p when sampled */
} ht_live_block_t;

/* Leak classes, indexed by HT_LEAK_* (0: unclassified). */
#define HT_LEAK_KINDS 5

/* An on-demand leak check (EXT LEAK_CHECK): the blocks live at its event,
 * by the class its LEAKS records gave them. */
typedef struct ht_check_stat {
	uint64_t check_id, time;
	uint32_t thread;
	bool classified; /* the trace has its LEAKS records */
	uint64_t blocks[HT_LEAK_KINDS], bytes[HT_LEAK_KINDS];
	size_t ntop;
	struct {
		uint32_t site;
		unsigned kind;
		uint64_t blocks, bytes;
	} top[HT_SNAPSHOT_TOP]; /* largest lost (definite, indirect, possible) first */
} ht_check_stat_t;

/* Live bytes of every site at evenly spaced times (growth suspects):
 * point k is at time (k + 1) * span / HT_GROWTH_POINTS. */
#define HT_GROWTH_POINTS 32

struct ht_badfrees;
struct ht_mapped;

typedef struct ht_model {
	const ht_trace_t *trace;
	/* double, invalid and mismatched frees (analysis/badfree.h); NULL for
	 * sampled and summary traces */
	struct ht_badfrees *bad;
	/* the program's own memory maps (analysis/mapped.h); NULL when the
	 * trace has none */
	struct ht_mapped *mapped;
	double sample_rate; /* the trace's mean bytes between samples; 0 = exact */
	ht_site_t *sites;
	size_t nsites;
	ht_totals_t totals;
	ht_pool_stat_t *pools; /* in order of first appearance; NULL when none */
	size_t npools;
	ht_snapshot_t *snapshots; /* in time order */
	size_t nsnapshots;
	ht_live_block_t *live_end; /* blocks live at the end, by address */
	size_t nlive_end;
	bool leaks_classified;	   /* the trace has the exit check's LEAKS */
	ht_check_stat_t *checks;   /* on-demand leak checks, in time order */
	size_t nchecks;
	uint64_t *growth;	   /* [HT_GROWTH_POINTS][nsites] live bytes */
	uint64_t growth_span_ns;   /* time of the last point */
	struct ht_timeline *timelines; /* folded by ht_model_build_timed's replay */
	size_t ntimelines;
	/* descriptors and handles still open (analysis/resources.h), when the
	 * pass that built the model built them too; else NULL. Freed with
	 * the model. */
	struct ht_resources *resources;
	ht_map_t site_of; /* every allocation stack id -> its site (ht_model_site_of) */
	/* site_of, or while the model's pass runs the map it fills */
	const ht_map_t *site_map;
} ht_model_t;

/* Replay t (which must outlive the model), one site per stack id. Returns
 * 0 or -ENOMEM. */
int ht_model_build(const ht_trace_t *t, ht_model_t **out);
/* The same with sites folded by their frames as sym gives them (sym, with
 * the trace's modules declared, ht_trace_add_modules; NULL: by stack id).
 * Each distinct stack is symbolized once, at its first allocation. */
int ht_model_build_sym(const ht_trace_t *t, ht_symbolizer_t *sym, ht_model_t **out);
/* The same, also folding the events into timelines of tl_sizes[0..n_tl)
 * buckets on the way: ht_model_timeline then hands out copies of them
 * instead of replaying the trace again. */
int ht_model_build_timed(const ht_trace_t *t, const size_t *tl_sizes, size_t n_tl,
			 ht_symbolizer_t *sym, ht_model_t **out);
void ht_model_free(ht_model_t *m);

/* The same replay as one consumer of pass p (analysis/pass.h): *out is the
 * model once ht_pass_run(p) has returned 0; the caller frees it in any
 * case, after the run or instead of it. Returns 0 or -ENOMEM. */
struct ht_pass;
int ht_model_attach(struct ht_pass *p, const ht_trace_t *t, const size_t *tl_sizes, size_t n_tl,
		    ht_symbolizer_t *sym, ht_model_t **out);

/* The site of an allocation stack id (the events' stack_id), or
 * HT_MAP_NONE when no allocation had it. */
uint32_t ht_model_site_of(const ht_model_t *m, uint64_t stack_id);
/* The stack id that names stack_id's site (its first stack), or stack_id
 * when no site has it: valid for an event's stack while the model's pass
 * runs (once the model has seen the event), for writers that stream. */
uint64_t ht_model_site_stack(const ht_model_t *m, uint64_t stack_id);

/* Orders for ht_model_sort. */
typedef enum ht_site_order {
	HT_BY_BYTES,	 /* bytes_allocated */
	HT_BY_COUNT,	 /* allocations */
	HT_BY_PEAK,	 /* peak_bytes */
	HT_BY_LEAKED,	 /* leaked_bytes */
	HT_BY_TEMPORARY, /* temporary */
} ht_site_order_t;

/* Fill idx (room for m->nsites) with the indices of sites whose key is
 * non-zero, largest first (ties: more bytes, then lower stack id). Returns
 * how many. */
size_t ht_model_sort(const ht_model_t *m, ht_site_order_t order, size_t *idx);

/* Expand a site's stack into source frames, leaf first, inlined frames
 * before their caller. sym may be NULL: frames then carry only module and
 * address. *frames (capacity *cap) grows as needed and belongs to the
 * caller. Returns the number of frames, or -ENOMEM. */
long ht_model_frames(const ht_model_t *m, ht_symbolizer_t *sym, const ht_site_t *site,
		     ht_frame_t **frames, size_t *cap);

/* What the exports call a site with no frames (ht_model_frames gives 0):
 * the summary's overflow row, or a stack the trace does not define. */
static inline const char *ht_site_placeholder(const ht_site_t *s)
{
	return s->overflow ? "[all other sites: the summary's site table was full]" : "[unknown stack]";
}

/* A trace recorded with the frame-pointer walker (HT_PROC_UNWIND_FP) from
 * code built without frame pointers. A complete walk ends where the thread
 * started: in libc (__libc_start_call_main, start_thread) or the dynamic
 * linker (constructors), or at the depth limit; a walk through a frame
 * without a frame pointer stops in that frame's module (the register
 * holds something else) or follows garbage to a "return address" in no
 * module. Counts the sites whose stack ends so: *bad of *total. Returns
 * the module of the first such stack ("no module" for none), when at
 * least 2 sites and 10% of them are cut; else NULL. */
const char *ht_model_fp_broken(const ht_model_t *m, size_t *bad, size_t *total);

/* Declare every module of the trace to the symbolizer. */
void ht_model_add_modules(const ht_model_t *m, ht_symbolizer_t *sym);
void ht_trace_add_modules(const ht_trace_t *t, ht_symbolizer_t *sym);

/* ---- time series ------------------------------------------------------------
 * The model keeps no per-event data, so anything over time (the report's
 * memory-over-time section, the chrome and massif exports) replays the
 * events again, through the same live-block rules as ht_model_build: a
 * callback sees the heap after every event, and ht_model_timeline folds
 * that into a bounded number of buckets. A timeline whose size was given
 * to ht_model_build_timed was folded by the model's own replay instead. */

/* The heap right after one event. */
typedef struct ht_replay_step {
	uint64_t heap_bytes, heap_blocks; /* live after the event */
	uint64_t freed_bytes; /* FREE: size of the block freed; 0 if ignored */
	/* ALLOC/REALLOC: the blocks and bytes the event stands for (1 and its
	 * size, unless the trace is sampled); FREE: those of the block freed */
	double weight, weight_bytes;
	bool ignored;	      /* FREE of a block never seen allocated: no effect */
} ht_replay_step_t;

/* Return non-zero to stop the replay; ht_model_replay then returns it. */
typedef int (*ht_replay_fn)(void *ctx, const ht_event_t *ev, const ht_replay_step_t *st);

/* Call fn for every merged event (ht_merge_next order, RSS included) with
 * the heap after it. The heap follows ht_model_build exactly, so its highest
 * value is totals.peak_heap_bytes, first reached at totals.peak_time_ns.
 * Returns 0, -ENOMEM, or fn's non-zero value. */
int ht_model_replay(const ht_model_t *m, ht_replay_fn fn, void *ctx);
/* The same replay as a consumer of pass p, beside the model and others:
 * fn for every heap event, then on_end (may be NULL) after the last;
 * fini(ctx) (may be NULL) when the pass is freed, or now if this fails.
 * Returns 0 or -ENOMEM. */
int ht_model_replay_attach(struct ht_pass *p, const ht_trace_t *t, ht_replay_fn fn,
			   int (*on_end)(void *ctx), void (*fini)(void *ctx), void *ctx);

/* One slice of time: [start_ns, end_ns), the last one closed at its end. */
typedef struct ht_tl_bucket {
	uint64_t start_ns, end_ns;
	uint64_t heap_bytes, heap_blocks; /* live at the end of the slice */
	/* the highest heap after a heap event of the slice, first reached at
	 * max_time_ns, with max_blocks blocks and RSS rss_at_max; a slice
	 * without heap events holds the state carried in (at start_ns). The
	 * highest heap during the slice is max(this, previous heap_bytes). */
	uint64_t max_bytes, max_blocks, max_time_ns, rss_at_max;
	uint64_t rss_bytes; /* latest RSS sample at the end; 0 = none yet */
	uint64_t allocations, frees, bytes_allocated; /* events in the slice */
} ht_tl_bucket_t;

typedef struct ht_timeline {
	ht_tl_bucket_t *b; /* n buckets of equal width covering [0, span_ns] */
	size_t n;
	uint64_t span_ns;     /* max(duration, 1) */
	size_t peak;	      /* bucket holding the global peak */
	uint64_t peak_bytes, peak_blocks, peak_time_ns; /* = totals' peak */
	uint64_t rss_samples, rss_max; /* RSS events in the trace; largest */
} ht_timeline_t;

/* Sample the heap and RSS over time into nbuckets (>= 1) slices: memory is
 * O(nbuckets) whatever the trace size, and the exact peak is kept (bucket
 * `peak` has max_bytes == peak_bytes at max_time_ns == peak_time_ns).
 * Returns 0 or -ENOMEM (*out then holds nothing). Free with
 * ht_timeline_free. */
int ht_model_timeline(const ht_model_t *m, size_t nbuckets, ht_timeline_t *out);
/* The same, also calling fn (may be NULL) for every event of its replay, so
 * that a writer needing its own per-event figures pays for one replay, not
 * two. fn's non-zero return stops it and is returned. */
int ht_model_timeline_replay(const ht_model_t *m, size_t nbuckets, ht_replay_fn fn, void *ctx,
			     ht_timeline_t *out);
void ht_timeline_free(ht_timeline_t *tl);

#endif /* HEAPTRAIL_MODEL_H */
