/* functions.h - the function profile: per-thread call trees replayed from a
 * trace's ENTER/EXIT events (programs built with
 * -finstrument-functions and run with functions=1).
 *
 * Each thread's events are replayed in recorded order into a call tree whose
 * nodes are keyed by the path of function addresses from the thread's root,
 * so a function called a million times from one place is one node, and a
 * recursion is one node per depth. Per node:
 *   calls     completed or still-open activations of that path;
 *   total_ns  inclusive time: from ENTER to its EXIT;
 *   self_ns   exclusive time: while the function was on top of the stack;
 *   own_*     allocations (ALLOC, and the allocation half of REALLOC) the
 *             thread made while the function was on top;
 *   heap_*    inclusive allocations: own plus all descendants'.
 * Invariants (the tests check them): self_ns <= total_ns, and the children's
 * total_ns sum to at most their parent's.
 *
 * Bounded memory: the tree is capped at HT_FN_MAX_DEPTH levels; calls deeper
 * than that are folded into the deepest node (its folded_calls count them;
 * their time is its self time and their allocations its own), and after
 * HT_FN_MAX_NODES nodes new paths fold into their parent the same way.
 * EXITs with no open ENTER (recording switched on inside a function) are
 * ignored; calls still open at the end of the trace are closed at the
 * thread's last event time (closed_at_end counts them).
 */
#ifndef HEAPTRAIL_FUNCTIONS_H
#define HEAPTRAIL_FUNCTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/reader.h"

#define HT_FN_MAX_DEPTH 256	   /* levels of the call tree below a thread's root */
#define HT_FN_MAX_NODES (1u << 21) /* nodes of all trees together */
#define HT_FN_NONE UINT32_MAX

/* One distinct function (entry address), across threads. */
typedef struct ht_fn_func {
	uint64_t addr;	     /* entry address as recorded */
	uint64_t first_time; /* first ENTER: picks the module for symbolization */
	uint64_t calls;
	uint64_t self_ns;
	uint64_t own_bytes, own_allocs;
} ht_fn_func_t;

typedef struct ht_fn_node {
	uint32_t func;	  /* index into funcs, HT_FN_NONE for a thread's root */
	uint32_t parent;  /* HT_FN_NONE for a root */
	uint32_t first_child, next_sibling; /* HT_FN_NONE ends the lists */
	uint32_t thread;  /* index into ht_fn_profile_t.threads */
	uint32_t depth;	  /* 0 for a root */
	uint64_t calls;
	uint64_t total_ns, self_ns;
	uint64_t own_bytes, own_allocs;
	uint64_t heap_bytes, heap_allocs; /* own + descendants' */
	uint64_t closed_at_end; /* calls still open when the thread's events ended */
	uint64_t folded_calls;	/* deeper calls (past a cap) counted into this node */
	uint64_t first_time;	/* first ENTER of this path */
} ht_fn_node_t;

/* One thread that recorded function events. */
typedef struct ht_fn_thread {
	uint32_t thread; /* index into trace->threads */
	uint32_t root;	 /* its tree's root node */
	uint64_t first_time, last_time; /* of all its events */
	uint64_t enters, exits;
	uint64_t unmatched_exits; /* EXIT with no open ENTER: ignored */
	uint64_t closed_at_end;	  /* calls open at its last event */
	uint64_t folded_calls;	  /* calls past a cap */
	uint64_t switches_on, switches_off; /* ENABLE events */
	uint64_t max_depth;	  /* deepest call stack seen (may exceed the cap) */
} ht_fn_thread_t;

typedef struct ht_fn_profile {
	const ht_trace_t *trace; /* must outlive the profile */
	ht_fn_node_t *nodes;
	size_t nnodes, cap_nodes;
	ht_fn_func_t *funcs;
	size_t nfuncs, cap_funcs;
	ht_fn_thread_t *threads;
	size_t nthreads;
	uint64_t enters;	  /* ENTER events in the trace */
	uint64_t switches;	  /* ENABLE events in the trace */
	bool depth_capped;	  /* some calls were folded at HT_FN_MAX_DEPTH */
	bool nodes_capped;	  /* some paths were folded at HT_FN_MAX_NODES */
	/* lookup: (parent, func) -> node, and addr -> func */
	uint32_t *node_tab;
	size_t node_tab_cap;
	uint32_t *func_tab;
	size_t func_tab_cap;
} ht_fn_profile_t;

/* Replay every thread with function events of t into call trees. A trace
 * without ENTER events gives an empty profile (nthreads == 0), not an error.
 * Returns 0 or -ENOMEM; *out is then NULL. Free with ht_fn_free. */
int ht_fn_build(const ht_trace_t *t, ht_fn_profile_t **out);
/* The same replay as one consumer of pass ps (analysis/pass.h): *out is the
 * profile once ht_pass_run(ps) has returned 0; the caller frees it in any
 * case. */
struct ht_pass;
int ht_fn_attach(struct ht_pass *ps, const ht_trace_t *t, ht_fn_profile_t **out);
void ht_fn_free(ht_fn_profile_t *p);

/* Fill idx (room for p->nfuncs) with the indices of the functions whose
 * own_bytes (by_count false) or own_allocs (true) is non-zero, largest first
 * (ties: the other figure, then lower address). Returns how many. */
size_t ht_fn_sort_funcs(const ht_fn_profile_t *p, bool by_count, size_t *idx);

/* The flat profile, as gprof's: each function's calls (all of them,
 * recursive ones too: ht_fn_func_t.calls), self time, and its total time
 * counted once per outermost call, so that a recursive function's time is
 * not added up at every level: total[i] for funcs[i] (room for p->nfuncs).
 * idx (room for p->nfuncs) gets the functions by self time, most first
 * (ties: total, calls, lower index). Returns 0 or -ENOMEM. */
int ht_fn_flat(const ht_fn_profile_t *p, uint64_t *total, size_t *idx);

/* The children of node n, ordered by total_ns descending (ties: first
 * called first), into *kids (capacity *cap, grown as needed, owned by the
 * caller). Returns how many, or -ENOMEM. */
long ht_fn_children(const ht_fn_profile_t *p, uint32_t n, uint32_t **kids, size_t *cap);

#endif /* HEAPTRAIL_FUNCTIONS_H */
