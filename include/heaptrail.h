/* heaptrail.h - talk to the heaptrail agent from the program it profiles.
 *
 * Every function here is a static inline wrapper over a symbol that the
 * agent (libheaptrail.so, preloaded by `heaptrail run`) defines. Without the
 * agent the symbol is absent and the wrapper does nothing and returns -1:
 * a program built with this header runs unchanged, and pays one test of a
 * function pointer per call.
 *
 * Linking: nothing to link. By default the agent's symbols are weak
 * references, resolved when the program starts; that works in shared
 * libraries and position-independent executables (Debian's default). For a
 * non-PIE executable or a static link, define HEAPTRAIL_API_DLSYM before
 * including this header: the symbols are then looked up once with dlsym
 * (glibc 2.34 and later need no -ldl).
 *
 * Thread safety: every function may be called from any thread.
 * Signal handlers: heaptrail_set_recording() is async-signal-safe.
 */
#ifndef HEAPTRAIL_H
#define HEAPTRAIL_H

#define HEAPTRAIL_VERSION_MAJOR 0
#define HEAPTRAIL_VERSION_MINOR 1
#define HEAPTRAIL_VERSION_PATCH 0

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the agent's side (do not call these directly) ------------------------- */

/* Plumbing, not the program's code: kept out of -finstrument-functions. */
#define HEAPTRAIL__INLINE                                                      \
	static inline __attribute__((no_instrument_function, always_inline, unused))

/* HEAPTRAIL__SYM(ret, name, params) declares heaptrail__name(), which returns
 * the agent's heaptrail_agent_<name> function, or NULL without the agent. */
#ifdef HEAPTRAIL_API_DLSYM
#include <dlfcn.h>
#define HEAPTRAIL__SYM(ret, name, params)                                      \
	typedef ret(*heaptrail__##name##_fn) params;                           \
	HEAPTRAIL__INLINE heaptrail__##name##_fn heaptrail__##name(void)       \
	{                                                                      \
		static heaptrail__##name##_fn f;                               \
		static int looked;                                             \
		if (!looked) {                                                 \
			*(void **)&f = dlsym(RTLD_DEFAULT, "heaptrail_agent_" #name); \
			looked = 1;                                            \
		}                                                              \
		return f;                                                      \
	}
#else
#define HEAPTRAIL__SYM(ret, name, params)                                      \
	typedef ret(*heaptrail__##name##_fn) params;                           \
	extern ret heaptrail_agent_##name params __attribute__((weak));        \
	HEAPTRAIL__INLINE heaptrail__##name##_fn heaptrail__##name(void)       \
	{                                                                      \
		return heaptrail_agent_##name;                                 \
	}
#endif

HEAPTRAIL__SYM(int, set_recording, (int on))
HEAPTRAIL__SYM(int, alloc, (void *p, size_t size))
HEAPTRAIL__SYM(int, free, (void *p))
HEAPTRAIL__SYM(int, realloc, (void *old_p, void *new_p, size_t size))
HEAPTRAIL__SYM(int, tag, (const void *p, const char *name))
HEAPTRAIL__SYM(int, phase, (const char *name, int begin))
HEAPTRAIL__SYM(int, pool, (const void *pool, int op, const char *name))
HEAPTRAIL__SYM(int, pool_alloc, (const void *pool, void *p, size_t size))
HEAPTRAIL__SYM(int, snapshot, (const char *name))
HEAPTRAIL__SYM(int, leak_check, (void))
struct heaptrail_stats;
HEAPTRAIL__SYM(int, stats, (struct heaptrail_stats *out))
HEAPTRAIL__SYM(int, handle_acquire, (const char *kind, uintptr_t handle))
HEAPTRAIL__SYM(int, handle_release, (const char *kind, uintptr_t handle))

/* ---- recording on and off ------------------------------------------------------
 * Switch recording off and on around regions of the program. While off, new
 * allocations and function entries are not recorded; frees of blocks that
 * were recorded still are, so the report never shows them as leaked. Start
 * a program with recording off with `heaptrail run --start-off` (agent
 * option start=off) and switch it on around the region to study.
 *
 * on: 1 to record, 0 to stop.
 * @return 0 on success, -1 when the agent is not loaded. */
HEAPTRAIL__INLINE int heaptrail_set_recording(int on)
{
	heaptrail__set_recording_fn f = heaptrail__set_recording();
	return f ? f(on) : -1;
}

/* ---- the program's own allocators ------------------------------------------
 * A program with its own allocator (an arena, a pool, blocks carved out of
 * mmap'd chunks, a GC heap) reports its blocks, so that they appear in every
 * report, leak list and export like malloc's, with the stack of the call.
 * Counting is memcheck's: one allocation per heaptrail_alloc, one free per
 * heaptrail_free, a realloc of a block is one free plus one allocation.
 * Report a block after it exists and its free before it is reused.
 * Blocks must not overlap blocks from malloc that are still live.
 * Not async-signal-safe (they may write the trace); thread-safe. */

/* p: start of a block of size bytes that the program just handed out.
 * @return 0, or -1 when the agent is not loaded. */
HEAPTRAIL__INLINE int heaptrail_alloc(void *p, size_t size)
{
	heaptrail__alloc_fn f = heaptrail__alloc();
	return f ? f(p, size) : -1;
}

/* p: a block reported with heaptrail_alloc that the program takes back.
 * @return 0, or -1 when the agent is not loaded. */
HEAPTRAIL__INLINE int heaptrail_free(void *p)
{
	heaptrail__free_fn f = heaptrail__free();
	return f ? f(p) : -1;
}

/* The block old_p became new_p (perhaps the same address) of size bytes.
 * old_p NULL: an allocation; new_p NULL: a free.
 * @return 0, or -1 when the agent is not loaded. */
HEAPTRAIL__INLINE int heaptrail_realloc(void *old_p, void *new_p, size_t size)
{
	heaptrail__realloc_fn f = heaptrail__realloc();
	return f ? f(old_p, new_p, size) : -1;
}

/* ---- tags (types) --------------------------------------------------------------
 * Label a live block (from malloc, new or heaptrail_alloc) with a type or tag
 * name, right after allocating it or later; a second tag replaces the first.
 * `heaptrail report --by-tag` lists count and bytes per tag, and
 * `heaptrail report --tag NAME` the call stacks that allocated that tag.
 * name: any NUL-terminated string (the first 255 bytes count); string
 * literals are fastest (the agent remembers their addresses).
 * Not async-signal-safe; thread-safe. Nothing is recorded while recording
 * is switched off.
 * @return 0, or -1 when the agent is not loaded. */
HEAPTRAIL__INLINE int heaptrail_tag(const void *p, const char *name)
{
	heaptrail__tag_fn f = heaptrail__tag();
	return f ? f(p, name) : -1;
}

/* ---- phases ----------------------------------------------------------------------
 * Bracket a named phase of the program (parsing, code generation, a request):
 * the report gets a table per phase name with the times entered, the
 * allocations and bytes made inside, the net change of live bytes, and the
 * peak reached inside. Phases nest; they belong to the calling thread.
 * Not async-signal-safe; thread-safe.
 * @return 0, or -1 when the agent is not loaded. */
HEAPTRAIL__INLINE int heaptrail_phase_begin(const char *name)
{
	heaptrail__phase_fn f = heaptrail__phase();
	return f ? f(name, 1) : -1;
}

HEAPTRAIL__INLINE int heaptrail_phase_end(const char *name)
{
	heaptrail__phase_fn f = heaptrail__phase();
	return f ? f(name, 0) : -1;
}

/* ---- pools ----------------------------------------------------------------------
 * A pool (arena, region, zone) of the program's own allocator: its blocks die
 * together. A pool is named by the address of the program's pool object.
 * Blocks come from heaptrail_pool_alloc instead of heaptrail_alloc; reset and
 * destroy free every block of the pool still live (each counts as a free).
 * The report gets a POOLS table. Not async-signal-safe; thread-safe.
 * @return 0, or -1 when the agent is not loaded. */
HEAPTRAIL__INLINE int heaptrail_pool_create(const void *pool, const char *name)
{
	heaptrail__pool_fn f = heaptrail__pool();
	return f ? f(pool, 0, name) : -1;
}

HEAPTRAIL__INLINE int heaptrail_pool_alloc(const void *pool, void *p, size_t size)
{
	heaptrail__pool_alloc_fn f = heaptrail__pool_alloc();
	return f ? f(pool, p, size) : -1;
}

HEAPTRAIL__INLINE int heaptrail_pool_reset(const void *pool)
{
	heaptrail__pool_fn f = heaptrail__pool();
	return f ? f(pool, 1, (const char *)0) : -1;
}

HEAPTRAIL__INLINE int heaptrail_pool_destroy(const void *pool)
{
	heaptrail__pool_fn f = heaptrail__pool();
	return f ? f(pool, 2, (const char *)0) : -1;
}

/* ---- snapshots ----------------------------------------------------------------
 * Mark the trace here: the report shows the live blocks at this moment, by
 * site (a program that never exits can ask for one now and then). Also on a
 * signal: run with the agent option snapshot_signal=N (e.g. 12 for SIGUSR2),
 * which replaces that signal's default action.
 * name: a label (NULL: none). Not async-signal-safe; thread-safe.
 * @return 0, or -1 when the agent is not loaded. */
HEAPTRAIL__INLINE int heaptrail_snapshot(const char *name)
{
	heaptrail__snapshot_fn f = heaptrail__snapshot();
	return f ? f(name) : -1;
}

/* ---- queries -----------------------------------------------------------------------
 * The heap as the agent sees it now. Counts follow valgrind memcheck (a
 * realloc is a free plus an allocation) and are exact. live_* and
 * peak_live_bytes include every event of the calling thread; in a program
 * with several threads, the last ~0.5 s of the other threads' events may
 * not be in them yet, and the peak is taken in the order the agent
 * received the events (exact for one thread). Set out->size to
 * sizeof(struct heaptrail_stats) first: fields added later are then never
 * written past your struct.
 * @return 0; -1 when the agent is not loaded, or does not keep live blocks
 * (agent options leak_check=0 without summary=1): live fields are then 0. */
struct heaptrail_stats {
	uint64_t size; /* sizeof(struct heaptrail_stats), set by the caller */
	uint64_t allocations, frees, bytes_allocated;
	uint64_t live_bytes, live_blocks, peak_live_bytes;
	/* bytes the program mapped itself (mmap, mremap, less munmap; whole
	 * pages; not malloc's own maps) and the process's resident set now */
	uint64_t mapped_bytes, resident_bytes;
};

HEAPTRAIL__INLINE int heaptrail_stats(struct heaptrail_stats *out)
{
	heaptrail__stats_fn f = heaptrail__stats();
	return f ? f(out) : -1;
}

/* Shorthands; each returns 0 when the agent is not loaded. */
HEAPTRAIL__INLINE uint64_t heaptrail_live_bytes(void)
{
	struct heaptrail_stats s = {sizeof s, 0, 0, 0, 0, 0, 0, 0, 0};
	heaptrail_stats(&s);
	return s.live_bytes;
}

HEAPTRAIL__INLINE uint64_t heaptrail_peak_live_bytes(void)
{
	struct heaptrail_stats s = {sizeof s, 0, 0, 0, 0, 0, 0, 0, 0};
	heaptrail_stats(&s);
	return s.peak_live_bytes;
}

HEAPTRAIL__INLINE uint64_t heaptrail_allocation_count(void)
{
	struct heaptrail_stats s = {sizeof s, 0, 0, 0, 0, 0, 0, 0, 0};
	heaptrail_stats(&s);
	return s.allocations;
}

/* ---- leak checks -----------------------------------------------------------------
 * Classify the blocks live now as memcheck does (definitely, indirectly,
 * possibly lost, still reachable) and write the result into the trace,
 * without stopping the program: the report lists each check. The agent
 * does it at exit anyway; this is for programs that never exit. Also on a
 * signal: SIGUSR2 when the program leaves it at SIG_DFL, or the agent
 * option leak_signal=N. Not async-signal-safe; thread-safe. Costs a scan
 * of the program's memory (docs/AGENT_OPTIONS.md, bench/RESULTS.md).
 * @return 0, or -1 when the agent is not loaded or leak checks are off. */
HEAPTRAIL__INLINE int heaptrail_leak_check(void)
{
	heaptrail__leak_check_fn f = heaptrail__leak_check();
	return f ? f() : -1;
}

/* ---- handles -----------------------------------------------------------------
 * The program's own resources that must be given back (jobs, channels,
 * connections from a pool, GPU buffers, locks held across calls): report
 * each one acquired and released, and the report lists those still held
 * at exit, per kind, with counts and the stacks that acquired them (the
 * "Resource leaks" section; "handle_leaks" in the JSON). A handle is any
 * number that names one resource of its kind (a pointer, an index);
 * acquiring a held handle again moves it to the new stack, releasing one
 * not held does nothing. File descriptors are tracked without this.
 * kind: a name, like a tag's (string literals are fastest).
 * Not async-signal-safe; thread-safe. Acquires are not recorded while
 * recording is switched off; releases always are.
 * @return 0, or -1 when the agent is not loaded. */
HEAPTRAIL__INLINE int heaptrail_handle_acquire(const char *kind, uintptr_t handle)
{
	heaptrail__handle_acquire_fn f = heaptrail__handle_acquire();
	return f ? f(kind, handle) : -1;
}

HEAPTRAIL__INLINE int heaptrail_handle_release(const char *kind, uintptr_t handle)
{
	heaptrail__handle_release_fn f = heaptrail__handle_release();
	return f ? f(kind, handle) : -1;
}

#ifdef __cplusplus
}
#endif

#endif /* HEAPTRAIL_H */
