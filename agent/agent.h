/* agent.h - shared declarations of libheaptrail.so, the preloaded agent.
 *
 * Everything declared here runs inside the traced program. The rules every
 * agent file follows are written at the top of agent/hooks.c; the short form:
 * no malloc (memory comes from mmap), no stdio, no global lock on the
 * allocation fast path, errno preserved, the per-thread guard set while the
 * agent works so that allocations it causes pass through untracked.
 */
#ifndef HEAPTRAIL_AGENT_H
#define HEAPTRAIL_AGENT_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "trace_format.h"

#define HT_LIKELY(x) __builtin_expect(!!(x), 1)
#define HT_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define HT_NOINLINE __attribute__((noinline))
#define HT_COLD __attribute__((cold))
#define HT_HIDDEN __attribute__((visibility("hidden")))
#define HT_EXPORT __attribute__((visibility("default")))
#define HT_CACHE_ALIGN __attribute__((aligned(64)))

/* ---- process-wide state ------------------------------------------------- */

/* Agent life cycle. Hooks record only in HT_STATE_RECORDING. */
enum ht_state {
	HT_STATE_UNINIT = 0,	/* before ht_init finished */
	HT_STATE_RECORDING = 1, /* normal operation */
	HT_STATE_DISABLED = 2,	/* option, fork child untraced, or a failure */
	HT_STATE_FINISHED = 3,	/* trace closed (exit, _exit, signal, exec) */
	HT_STATE_EXEC = 4,	/* an exec's flush: allocation hooks wait it out */
};
extern _Atomic int ht_state;

/* Options (agent/options.c), read once from HEAPTRAIL_OPTIONS. */
extern char ht_opt_output[4096];
/* The trace's name when output= is not given; a directory given as output
 * gets a file of this name inside it. */
#define HT_DEFAULT_OUTPUT "heaptrail.%n.%p.ht"
extern char ht_opt_manifest[4096];
/* manifest_run=PID:SIG:DEV:INO: heaptrail run's pid, the signal it takes
 * when a trace could not be added to the manifest, and the manifest's
 * identity (device, inode), which a descriptor or the path must show
 * before the agent writes or signals; all 0 without it. */
extern uint64_t ht_opt_manifest_run[4];
extern unsigned ht_opt_depth;
extern bool ht_opt_unwind_fp;
extern bool ht_opt_follow_fork;
/* compress=: 0 raw records, 1 fast, 2 strong, or auto (agent/writer.c) */
enum { HT_COMPRESS_RAW = 0, HT_COMPRESS_FAST = 1, HT_COMPRESS_STRONG = 2, HT_COMPRESS_AUTO = 3 };
extern unsigned ht_opt_compress;
extern bool ht_opt_enabled;
extern bool ht_opt_functions;	/* record function entry/exit */
extern bool ht_opt_stacks_shadow; /* allocation stacks from the shadow stack */
extern bool ht_opt_start_off;	/* recording starts switched off */
extern int ht_opt_snapshot_signal; /* a signal that writes a snapshot, or 0 */
extern bool ht_opt_own_pack;	/* threads pack their own blocks (agent/packer.c) */
extern bool ht_opt_leak_check;	/* keep the live-block table, classify leaks */
extern bool ht_opt_free_stacks;	/* every free records its stack (FREE_STACK) */
extern bool ht_opt_mmap;	/* record mmap, munmap, mremap, madvise (agent/maps.c) */
/* Bytes the program has mapped itself (recorded maps less unmaps, whole pages). */
uint64_t ht_maps_mapped(void);
extern int ht_opt_leak_signal;	/* a signal that runs a leak check, or 0 */
extern bool ht_opt_summary;	/* per-site totals instead of events (live.c) */
extern unsigned ht_opt_summary_sites; /* rows of the summary's site table */
/* break=LIST (agent/breakalloc.c): SIGTRAP at chosen allocations and their
 * frees. The hooks test ht_break_on; the calls count and compare. */
extern bool ht_break_on;
extern bool ht_break_traced_only; /* break_traced=1: trap only under a debugger */
bool ht_break_parse(const char *v, size_t len);
extern uint64_t ht_opt_sample_rate; /* mean bytes between samples; 0 = exact */
extern uint64_t ht_opt_sample_seed; /* seeds the threads' generators if set */
extern bool ht_opt_sample_seed_set;
void ht_options_parse(void);
/* With follow_fork=0: true in an image that is not the traced process (a
 * spawned or vfork'ed child's); in the traced one, marks its environment. */
bool ht_options_untraced_child(void);

/* Recording switched on/off by the program (heaptrail_set_recording).
 * While off, allocations and function entries are not recorded. Frees
 * are (the block may be one allocated while on), but not before recording
 * was first on (start_off): no block of the trace can be freed then. */
extern _Atomic bool ht_recording_on;
extern _Atomic bool ht_recording_was_on;

/* Start of time: CLOCK_MONOTONIC at init. Event times are relative to it. */
extern uint64_t ht_start_mono_ns;
uint64_t ht_clock_ns(void); /* absolute CLOCK_MONOTONIC ns */
/* Calibrates the clock (agent/lifecycle.c); call at init and in a fork child. */
void ht_clock_init(void);

/* Nanoseconds since start. On x86-64 with the kernel itself trusting the TSC
 * (clocksource "tsc"), this reads the TSC and scales it: ~10 ns instead of
 * ~25 ns for clock_gettime, and it runs twice per alloc/free pair. The
 * scale is measured at start; every thread uses the same mapping, so times
 * from different threads compare correctly. */
extern bool ht_clock_tsc;
extern uint64_t ht_tsc0, ht_tsc_mult; /* ns = (tsc - tsc0) * mult >> 32 */
extern bool ht_tsc_rdtscp; /* the CPU has RDTSCP (else LFENCE; RDTSC) */

/* Event times are whole multiples of HT_TIME_QUANTUM_NS: the nanoseconds
 * below it are noise to every report, and as noise they cost the trace
 * about a fifth of its compressed size. The quantum stays under what one
 * thread needs to hand a block to another (a cache line crossing cores,
 * 40 ns and more), so that times still order a free on one thread and the
 * reuse of its address on another (the reader's merge, the writer's live
 * table: equal times put the free first). */
#define HT_TIME_QUANTUM_NS 16u
#if defined(__x86_64__)
#include <x86intrin.h>
static inline uint64_t ht_tsc_to_ns(uint64_t tsc)
{
	uint64_t ns = (uint64_t)(((unsigned __int128)(tsc - ht_tsc0) * ht_tsc_mult) >> 32);
	return ns & ~(uint64_t)(HT_TIME_QUANTUM_NS - 1);
}
static inline uint64_t ht_now(void)
{
	if (HT_LIKELY(ht_clock_tsc))
		return ht_tsc_to_ns(__rdtsc());
	return (ht_clock_ns() - ht_start_mono_ns) & ~(uint64_t)(HT_TIME_QUANTUM_NS - 1);
}
/* The time, read only once every load before it has completed. A plain
 * RDTSC may run ahead of them: a thread that takes a block from another
 * thread (a load) and frees it stamped the free up to ~30 ns early, inside
 * the quantum of the other thread's allocation stamp, and equal stamps put
 * the free first (3 of 10 runs of a producer/consumer handoff lost a free).
 * RDTSCP waits (LFENCE then RDTSC where a hypervisor hides RDTSCP, as
 * Linux's own ordered read does); a real handoff takes ~80 ns here, five
 * quanta. It costs ~8 ns more than RDTSC, so only events that can race
 * another thread's (a process with more than one thread) pay it. */
static inline uint64_t ht_now_ordered(void)
{
	if (HT_LIKELY(ht_clock_tsc)) {
		unsigned aux;
		if (HT_LIKELY(ht_tsc_rdtscp))
			return ht_tsc_to_ns(__rdtscp(&aux));
		_mm_lfence();
		return ht_tsc_to_ns(__rdtsc());
	}
	return (ht_clock_ns() - ht_start_mono_ns) & ~(uint64_t)(HT_TIME_QUANTUM_NS - 1);
}
#else
static inline uint64_t ht_now(void)
{
	return (ht_clock_ns() - ht_start_mono_ns) & ~(uint64_t)(HT_TIME_QUANTUM_NS - 1);
}
static inline uint64_t ht_now_ordered(void)
{
	return ht_now();
}
#endif

/* ---- a small lock for slow paths (agent/lock.c) ----------------------------
 * A futex mutex that remembers its owner, so a fatal-signal handler can tell
 * that the crashing thread itself holds it. Never taken on the fast path. */
typedef struct ht_lock {
	_Atomic int word; /* 0 free, 1 locked, 2 locked with waiters */
	_Atomic int owner;
} ht_lock_t;
void ht_lock(ht_lock_t *l);
void ht_unlock(ht_lock_t *l);
/* Tries for up to timeout_ms; false if the lock is held by this thread or the
 * time ran out (used at exit and in signal handlers). */
bool ht_lock_timed(ht_lock_t *l, int timeout_ms);
/* True if this thread holds l. */
bool ht_lock_held(ht_lock_t *l);
/* Takes l if it is free, at once; false otherwise. */
bool ht_lock_try(ht_lock_t *l);
static inline void ht_lock_reset(ht_lock_t *l)
{
	atomic_store(&l->word, 0);
	atomic_store(&l->owner, 0);
}

/* ---- event blocks and the background writer (agent/flusher.c) --------------
 * A thread fills one block; when it is full the block is queued for the
 * digester thread, which reads it into the live-block table (agent/live.c),
 * then for the writer thread, which compresses and writes it, both off the
 * program's threads; the thread continues in a fresh block from a pool. */
#define HT_BUF_SIZE (64 * 1024)

typedef struct ht_block {
	struct ht_block *next;
	uint32_t tid;
	uint32_t len;
	uint64_t base_time;
	bool digested; /* in the live table already (the digester's work) */
	bool wake;     /* the producer asked for the writer to be woken */
	bool packed;   /* written already: the digester gives it back */
	uint8_t data[HT_BUF_SIZE];
} ht_block_t;

/* A fresh block, or NULL when out of memory. */
ht_block_t *ht_block_get(void);
/* Queue a filled block for writing. Ownership passes to the writer,
 * woken if it sleeps and wake is set (else it looks within a second). */
void ht_block_submit(ht_block_t *b, bool wake);
/* Write every queued block now; the caller holds ht_writer_lock. */
void ht_blocks_drain_locked(void);
/* THREAD_NAME records for the running threads the program named (agent/
 * thread.c); with ht_writer_lock held, their events written. */
void ht_thread_write_names(void);
/* Writes one block as a THREAD_BLOCK record; caller holds ht_writer_lock. */
void ht_block_write_locked(const ht_block_t *b);
/* How the writer thread is doing, for the compression level (writer.c):
 * the time it has waited for blocks so far, and how many times producers
 * had to write or digest themselves (no helper thread, or its queue full). */
uint64_t ht_flusher_idle_ns(void);
/* The main thread ended with pthread_exit: the writer looks for the
 * process's last thread from now on (agent/flusher.c). */
void ht_flusher_main_exited(void);
/* Starts the writer thread if it is not running (flusher.c): it ships the
 * buffers of threads that record nothing for a while. From a hook or
 * main's start, never from a fork handler. */
void ht_flusher_start(void);
/* Ships the buffers of threads whose events have waited age_ns or more
 * and that are not in the middle of an event (thread.c; the writer
 * thread, holding no lock); the number shipped, the file flushed if any. */
unsigned ht_thread_take_idle(uint64_t age_ns);
/* Appends an RSS sample (time now, rss bytes) to a quiet thread's events,
 * the main thread's if it can (shipped with them): the writer's samples
 * while no thread records (agent/rss.c). False when every thread was busy. */
bool ht_thread_post_rss(uint64_t now, uint64_t rss);
uint64_t ht_flusher_self_writes(void);
/* Wakes the writer thread: a packer's frame waits for ht_writer_lock. */
void ht_flusher_wake(void);

/* ---- the packers (agent/packer.c) ---------------------------------------------
 * Each packs and compresses the blocks of the threads whose tid it serves
 * into complete zstd frames. */
/* Packs the calling thread's full block b on this thread; false (nothing
 * done) when its packer lacks memory and the writer thread must take b. */
bool ht_packer_pack_own(const ht_block_t *b);
/* Packs b; the caller holds ht_writer_lock. */
void ht_packer_pack_locked(const ht_block_t *b);
/* Compresses and writes the batches that wait (those whose first block is
 * older than older_than_ns, passing busy packers by; 0: all), and the
 * frames queued first; caller holds ht_writer_lock. */
void ht_packers_emit_locked(uint64_t older_than_ns);
/* Whether frames wait for ht_writer_lock, and writing them (lock held). */
bool ht_packer_frames_waiting(void);
void ht_packer_frames_write_locked(void);
/* Blocks lost by packers out of memory. */
uint64_t ht_packers_lost(void);
void ht_packers_fork_prepare(void);
void ht_packers_fork_parent(void);
void ht_packers_fork_child(void);
void ht_flusher_fork_prepare(void);
void ht_flusher_fork_parent(void);
void ht_flusher_fork_child(void);

/* ---- per-thread state (agent/thread.c) ------------------------------------ */

/* An allocation or free made by a program's signal handler that ran while
 * the agent was encoding an event on the same thread (hooks.c, "signal
 * handlers"): kept aside with a frame-pointer stack, and recorded when the
 * interrupted event is done. */
#define HT_DEFER_INLINE 64 /* in the thread's state */
#define HT_DEFER_MORE 16384 /* mapped by the handler that needs them: a
			       handler running every 100 us while its thread
			       waits a second for the writer's lock (a loaded
			       machine) */
#define HT_DEFER_MAX (HT_DEFER_INLINE + HT_DEFER_MORE)
#define HT_DEFER_DEPTH 32
/* Asynchronous signals kept for the end of an allocation hook, per thread:
 * more (real-time signals queued faster than one hook takes) run their
 * handlers at once, their events deferred as above. */
#define HT_SIG_PENDING_MAX 8
typedef struct ht_deferred {
	uint8_t op;    /* HT_EV_ALLOC | fn << 4, or HT_EV_FREE */
	uint8_t n;     /* frames */
	volatile uint8_t ready;
	uint64_t time;
	uintptr_t addr;
	uint64_t size;
	void *frames[HT_DEFER_DEPTH];
} ht_deferred_t;

typedef struct ht_thread {
	/* hot: touched by every event */
	uint32_t len;	      /* bytes of events in buf */
	uint32_t tid;
	uint64_t last_time;   /* time of the last event in buf */
	uint64_t last_addr;   /* address of the last event in buf */
	uint64_t block_base;  /* base_time of the block in buf */
	_Atomic int in_event; /* set while this thread encodes an event */
	/* HT_TAKING: the agent's writer thread ships this idle thread's
	 * buffer (ht_thread_take_idle), and the thread starts no event until
	 * it is done; HT_TAKING_START: the thread's next event starts the
	 * writer (a fork child). Read with in_event's handshake. */
	_Atomic int taking;
	/* memcheck-convention counts, summed into END and the manifest, so
	 * that `heaptrail run` can summarize a huge trace without reading it */
	uint64_t n_allocs, n_frees, n_bytes;
	/* sampling (agent/sampling.c): bytes left until the next sample, at
	 * most HT_SAMPLE_SPAN, the rest of the draw in sample_carry; and the
	 * thread's random generator */
	int64_t sample_left;
	int64_t sample_carry;
	uint64_t sample_rng;
	/* cold */
	uint32_t ordinal;   /* allocation-number prefix: 1 main thread, then 2, 3... */
	uint64_t alloc_seq; /* allocations so far, counted only with break=LIST */
	bool in_use;
	bool exited; /* its key destructor ran: its stack is dead memory */
	bool transient; /* made after that, for one event (thread.c) */
	struct ht_thread *next; /* registry link */
	uintptr_t stack_lo, stack_hi; /* bounds for the frame-pointer walker */
	bool bounds_pending; /* not read yet (thread.c, bounds_now) */
	ht_block_t *blk; /* the block being filled; buf == blk->data */
	uint8_t *buf;
	struct ht_scache *scache; /* validated stack cache (agent/scache.c) */
	struct ht_fsize_table *fsizes; /* frame sizes by return address (same) */
	uint64_t scache_hits, scache_misses, scache_walks;
	uint32_t scache_gen; /* ht_stacks_gen the cache was filled under */
	/* set while the agent unwinds this thread's stack, with signals
	 * blocked; the mask to put back after (agent/unwind.c) */
	bool unwinding;
	sigset_t unwind_saved_mask;
	/* function profiler (agent/fn_profile.c): the shadow stack */
	uint64_t last_fn;	     /* previous ENTER's function in this block */
	struct ht_shadow_frame *shadow; /* mmap'd on the first function entry */
	uint32_t shadow_depth;	     /* frames in shadow[] */
	uint32_t shadow_overflow;    /* entries beyond HT_SHADOW_MAX */
	/* tag and phase names (agent/names.c): the program's string pointer
	 * last seen in each slot, and the interned id it had */
	struct ht_name_slot {
		const char *ptr;
		const char *copy;
		uint32_t id;
	} name_cache[32];
	/* signal handlers' events while the guard was held (hooks.c): a
	 * handler takes entries at tail, the interrupted code records them
	 * from head once it is out */
	uint32_t defer_head, defer_tail;
	uint64_t defer_lost;
	ht_deferred_t deferred[HT_DEFER_INLINE];
	ht_deferred_t *_Atomic deferred_more; /* HT_DEFER_MORE more, or NULL */
	/* an alternate signal stack, kept with the state (later threads
	 * reuse it), armed while its thread runs without one of its own */
	void *alt_stack;
	bool alt_armed;
	/* asynchronous signals that found an allocation hook at work, sent
	 * again once it is done (hooks.c); taken from head, added at tail */
	uint32_t sig_head, sig_tail;
	struct ht_pending_signal {
		int sig;
		siginfo_t info;
	} sig_pending[HT_SIG_PENDING_MAX];
	void *frames[HT_MAX_DEPTH + 16];
} ht_thread_t;

/* Entry i of t's ring of events kept aside by signal handlers: the first
 * HT_DEFER_INLINE in t, the others in deferred_more (NULL until mapped). */
static inline ht_deferred_t *ht_deferred_slot(ht_thread_t *t, uint32_t i)
{
	uint32_t k = i % HT_DEFER_MAX;
	if (k < HT_DEFER_INLINE)
		return &t->deferred[k];
	ht_deferred_t *more = atomic_load_explicit(&t->deferred_more, memory_order_acquire);
	return more ? &more[k - HT_DEFER_INLINE] : NULL;
}

#define HT_TAKING 1
#define HT_TAKING_START 2
bool ht_event_begin_slow(ht_thread_t *t);
/* Waits while another thread flushes the trace before an exec (every
 * thread's buffer is taken then: tens of microseconds); the state after. */
int ht_exec_flush_wait(void);

/* Marks t as in the middle of an event (its buffer is not to be shipped
 * by another thread: ht_thread_flush_all and ht_thread_take_idle, which
 * have the other half of this handshake, a membarrier). False, the mark
 * undone, when the trace is being closed meanwhile; an exec's flush
 * (HT_STATE_EXEC), and the writer taking this thread's buffer, are waited
 * out. The second check costs a load of the line in_event is on. */
static inline bool ht_event_begin(ht_thread_t *t)
{
	atomic_store_explicit(&t->in_event, 1, memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst);
	if (HT_LIKELY(atomic_load_explicit(&ht_state, memory_order_relaxed) ==
		      HT_STATE_RECORDING) &&
	    HT_LIKELY(!atomic_load_explicit(&t->taking, memory_order_relaxed)))
		return true;
	return ht_event_begin_slow(t);
}

/* The current thread's state, or NULL before its first event. Read directly
 * only by the sampling fast path, which must not pay for a call. */
extern __thread ht_thread_t *ht_tls_thread;

/* The current thread's state, created on first need. NULL if the agent
 * cannot record on this thread (out of memory, thread being torn down). */
ht_thread_t *ht_thread_get(void);
/* The current thread's state if it has one; never creates it. */
ht_thread_t *ht_thread_peek(void);
/* Ship t's events to the writer and give t an empty block. */
void ht_thread_flush(ht_thread_t *t);
/* An alternate signal stack of HT_ALT_STACK bytes for a thread (thread.c):
 * the agent's fatal handler must run after a stack overflow, which needs
 * one; a program's handlers set SA_ONSTACK run on it too, as on any. */
#define HT_ALT_STACK (256 * 1024)
void *ht_alt_stack_map(void);
/* Lets a transient state go once its event is recorded (thread.c). */
void ht_thread_release_transient(ht_thread_t *t);

/* The end of a hook that may have made a transient state (an event after
 * the thread's key destructor, thread.c): it is let go. The allocation
 * hooks do this in their GUARD_RELEASE. */
static inline void ht_transient_end(void)
{
	ht_thread_t *t = ht_tls_thread;
	if (HT_UNLIKELY(t != NULL && t->transient))
		ht_thread_release_transient(t);
}
/* The time stamp of t's next event: now, but never before t's previous
 * event (the varint deltas of a block are unsigned). Take it after any
 * ht_thread_reserve, which may ship the block and sample RSS (rule 6). */
/* While one thread has made every event so far, times only place events
 * for the reports (peak time, timelines) and the order of the thread's own
 * events is the buffer's: their times are rounded down to HT_COARSE_NS
 * (16 us: finer than a timeline needs, far finer than heaptrack's 10 ms
 * ticks), which halves what single-threaded traces take (the noise in the
 * low bits is most of their compressed bytes). A second thread's state is counted
 * before its first event is stamped; on x86 (TSO) a thread that sees a
 * block another thread freed or published also sees that thread counted,
 * so an event that follows another thread's event is never stamped coarse,
 * and rounding down keeps the rest in order. Not with functions=1: the
 * function profile measures short calls. */
#define HT_COARSE_NS 16384u
extern _Atomic uint32_t ht_thread_states; /* states made in this process */
/* One thread has made events so far, where that orders them (above). */
static inline bool ht_stamp_one_thread(void)
{
#if defined(__x86_64__) /* the argument above needs TSO */
	return atomic_load_explicit(&ht_thread_states, memory_order_acquire) == 1;
#else
	return false;
#endif
}
static inline bool ht_stamp_is_coarse(void)
{
	return ht_stamp_one_thread() && !ht_opt_functions;
}
static inline uint64_t ht_stamp(void)
{
	if (ht_stamp_one_thread())
		return ht_opt_functions ? ht_now() : ht_now() & ~(uint64_t)(HT_COARSE_NS - 1);
	return ht_now_ordered();
}
/* A realloc's free half stamped with its allocation half, after the real
 * call, while stamps are coarse: one clock read instead of two (on this
 * kind of virtual machine a read costs ~20 ns, a sixth of the hook), and a
 * 16 us quantum cannot tell the two reads apart unless the call copies
 * megabytes. With threads, the free half must be stamped before the call:
 * another thread may get the old address at once. */
#define HT_STAMP_AFTER UINT64_MAX
static inline uint64_t ht_event_time(const ht_thread_t *t)
{
	uint64_t now = ht_stamp();
	return now < t->last_time ? t->last_time : now;
}

/* Make room for need more bytes in t's buffer, flushing it if necessary. */
static inline void ht_thread_reserve(ht_thread_t *t, size_t need)
{
	if (HT_UNLIKELY(t->len + need > HT_BUF_SIZE))
		ht_thread_flush(t);
}

/* Room for a marker event of n fields (ht_put_marker). A caller whose
 * fields are deltas against state a shipped block resets (last_addr,
 * last_fn) reserves first, then computes them. */
#define HT_MARKER_MAX(n) (1 + (1 + (n)) * HT_VARINT_MAX)

/* Appends a marker event: op, the time delta, then n varint fields. The
 * events that carry no stack (ENTER, EXIT, ENABLE, TAG, PHASE, POOL,
 * SNAPSHOT) all have this shape. The caller holds the guard. */
static inline void ht_put_marker(ht_thread_t *t, uint8_t op, const uint64_t *fields, unsigned n)
{
	ht_thread_reserve(t, HT_MARKER_MAX(n));
	uint64_t now = ht_event_time(t);
	uint8_t *b = t->buf + t->len;
	size_t k = 0;
	b[k++] = op;
	k += ht_varint_put(b + k, now - t->last_time);
	for (unsigned i = 0; i < n; i++)
		k += ht_varint_put(b + k, fields[i]);
	t->last_time = now;
	t->len += (uint32_t)k;
}
/* Appends an EXT event (format 1.4): op HT_EV_EXT | kind << 4, the time
 * delta, the payload's length, then the payload: n varint fields (at most
 * 6). The caller holds the guard and has captured any stack first (a STACK
 * definition may ship the buffer, rule 6 of hooks.c). */
static inline void ht_put_ext(ht_thread_t *t, unsigned kind, const uint64_t *fields, unsigned n)
{
	uint8_t pay[6 * HT_VARINT_MAX];
	size_t len = 0;
	for (unsigned i = 0; i < n; i++)
		len += ht_varint_put(pay + len, fields[i]);
	ht_thread_reserve(t, HT_MARKER_MAX(1) + len);
	uint64_t now = ht_event_time(t);
	uint8_t *b = t->buf + t->len;
	size_t k = 0;
	b[k++] = (uint8_t)(HT_EV_EXT | kind << 4);
	k += ht_varint_put(b + k, now - t->last_time);
	k += ht_varint_put(b + k, len);
	for (size_t i = 0; i < len; i++)
		b[k + i] = pay[i];
	t->last_time = now;
	t->len += (uint32_t)(k + len);
}
void ht_thread_init_process(void);
/* Flush every thread's buffer (exit, exec, fatal signal), the state out of
 * RECORDING; the caller holds ht_writer_lock. Waits first for the threads
 * in the middle of an event (ht_thread_quiesce). */
void ht_thread_flush_all(void);
/* With the state out of RECORDING: waits until no other thread is in the
 * middle of an event, all of them at once, for at most timeout_ms in all;
 * false if one still was. Called by ht_finish before it takes the writer's
 * lock, which such a thread may be waiting for (a module record). */
bool ht_thread_quiesce(int timeout_ms);
/* Once the trace is being finished (exit, _exit, a fatal signal: the
 * process ends with it), the program's threads other than the caller that
 * come into a hook wait there, for timeout_ms at most: the finish's work
 * then has the CPUs, not busy threads that record nothing more
 * (bench/RESULTS.md, exit with busy threads). */
void ht_thread_park_begin(int timeout_ms);
/* Waits there, if the finish asks it (the state FINISHED). */
HT_COLD HT_NOINLINE void ht_thread_park(void);
/* fork: lock the registry in the parent; in the child drop other threads. */
void ht_thread_fork_prepare(void);
void ht_thread_fork_parent(void);
void ht_thread_fork_child(void);
/* Calls add(lo, hi) for memory the leak scan must not take for roots (the
 * writer's and the digester's stacks) and add_dead_stack(lo, hi) for the
 * stacks of exited threads that no running thread took over (glibc keeps
 * them mapped, with stale pointers, or unmaps them: add_dead_stack tells). */
void ht_thread_exclusions(void (*add)(uintptr_t lo, uintptr_t hi),
			  void (*add_dead_stack)(uintptr_t lo, uintptr_t hi));
extern uintptr_t ht_writer_stack_lo, ht_writer_stack_hi;
extern uintptr_t ht_digester_stack_lo, ht_digester_stack_hi;
/* Sums of every thread's counts (exit, no lock: threads may still run). */
void ht_thread_totals(uint64_t *allocs, uint64_t *frees, uint64_t *bytes);

/* One frame of the function profiler's shadow stack. */
#define HT_SHADOW_MAX 4096
typedef struct ht_shadow_frame {
	uintptr_t fn, call_site;
	bool recorded; /* its ENTER was written: its EXIT must be too */
} ht_shadow_frame_t;

void ht_functions_fork_child(ht_thread_t *self);

/* Tag and phase names (agent/names.c): the id of name, defined in t's
 * buffer (NAME event) the first time the process sees it; 0 on failure. */
uint32_t ht_name_intern(ht_thread_t *t, const char *name);
void ht_names_fork_child(ht_thread_t *self);
/* Handler of the snapshot signal (option snapshot_signal=N). */
void ht_snapshot_signal_handler(int sig);

/* Every signal but the synchronous faults, which must stay open: a fault
 * while blocked kills the process without its handler (the one that
 * finishes the trace). For agent work a handler must not land in. */
static inline void ht_async_signals(sigset_t *set)
{
	static const int faults[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS };
	sigfillset(set);
	for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++)
		sigdelset(set, faults[i]);
}

/* ---- sampling (agent/sampling.c, option sample_rate) ----------------------
 * A Poisson process over allocated bytes: each thread counts down bytes to
 * its next sample point; an allocation that reaches it is recorded with its
 * stack, the others are only counted. The addresses of recorded blocks live
 * in a set, so that only their frees are written; a counting filter in
 * front of it answers "not sampled" for most frees with one load. */

/* sample_rate is set and recording switched on: the allocation hooks' one
 * test before their fast path. Follows ht_recording_on (ht_sample_fast_update
 * after each store); two threads switching at once may leave it set while
 * recording is off, which only counts some allocations that exact mode
 * would not (nothing is recorded: the slow path checks the switch). */
extern _Atomic bool ht_sample_fast;
static inline void ht_sample_fast_update(void)
{
	atomic_store_explicit(&ht_sample_fast,
			      ht_opt_sample_rate && atomic_load(&ht_recording_on),
			      memory_order_relaxed);
}

/* The most a thread's countdown holds at once (the rest of a longer draw
 * waits in sample_carry): an allocation that the fast path counts is then
 * smaller than this, without a test of its own (hooks.c, sample_count_first). */
#define HT_SAMPLE_SPAN ((int64_t)1 << 20)

/* Counts an allocation of size bytes on the fast path. True when it is not
 * sampled (nothing more to do); false when the caller must take the slow
 * path (ht_sample_slow). */
static inline bool ht_sample_skip(size_t size)
{
	ht_thread_t *t = ht_tls_thread;
	if (HT_LIKELY(t != NULL)) {
		int64_t left = t->sample_left - (int64_t)size;
		if (HT_LIKELY(left > 0)) {
			t->sample_left = left;
			t->n_allocs++;
			t->n_bytes += size;
			return true;
		}
	}
	return false;
}
/* The slow path of ht_sample_skip: true if the allocation is a sample (the
 * caller records it and calls ht_sampled_add), false if it was counted. */
bool ht_sample_slow(size_t size);
/* A new thread's generator and first countdown. */
void ht_sample_thread_init(ht_thread_t *t);

#define HT_SFILTER_BITS 16
/* Per bucket the number of set members (sampling.c, under the bucket's
 * shard lock), and one bit per bucket, set while that number is not 0:
 * the bits (8 KiB) stay in the L1 cache where the counts (64 KiB) would
 * not, and every free reads one. */
extern uint8_t ht_sfilter[1u << HT_SFILTER_BITS];
extern uint64_t ht_sfilter_bits[(1u << HT_SFILTER_BITS) / 64];
/* The address's 16-byte granule modulo the filter size: sampled blocks are
 * sparse, so plain low bits spread them well enough, without a multiply. */
static inline size_t ht_sfilter_index(const void *p)
{
	return (size_t)((uintptr_t)p >> 4) & ((1u << HT_SFILTER_BITS) - 1);
}
/* False when p is surely not a sampled block (the common free). */
static inline bool ht_sampled_maybe(const void *p)
{
	size_t i = ht_sfilter_index(p);
	return (__atomic_load_n(&ht_sfilter_bits[i / 64], __ATOMIC_RELAXED) >> (i % 64)) & 1;
}
/* Makes the filter answer "maybe" for p's bucket for good, so that free's
 * fast path leaves p to the full hook: NULL and the bootstrap blocks,
 * which must not reach the real free. */
void ht_sfilter_pin(const void *p);
/* Before recording starts: pins NULL, and without sampling every bucket
 * (each free then takes the full hook, which records it). */
void ht_sfilter_init(void);
/* Adds p to the sampled set; removes it, true if it was there. */
void ht_sampled_add(const void *p);
bool ht_sampled_remove(const void *p);
/* True if p is in the set (TAG events of unsampled blocks are dropped). */
bool ht_sampled_has(const void *p);
void ht_sampling_fork_prepare(void);
void ht_sampling_fork_parent(void);
void ht_sampling_fork_child(void);

/* Per-thread reentrancy guard (agent/hooks.c). Set while the agent works. */
extern __thread int ht_guard;
/* Set while the program is in pthread_getattr_np, which holds the thread's
 * lock that the agent's own call of it would wait for (hooks.c). */
extern __thread int ht_in_getattr;
/* ht_guard's value while a program's signal handler runs that interrupted
 * the agent: its allocations and frees are deferred (hooks.c). */
#define HT_GUARD_DEFER 0x40000000
/* ht_guard's value while an allocation hook works (hooks.c): short work,
 * which an asynchronous signal's handler waits for (hooks.c, "signal
 * handlers"). Other agent code sets 1 or counts up. */
#define HT_GUARD_HOOK 2
/* Set by such a handler when it deferred an event: the interrupted hook
 * records them when it releases the guard. */
extern __thread volatile int ht_deferred_pending;
/* Set while a program's signal handler runs on this thread (through the
 * trampoline, hooks.c): what it interrupted may be half done (a library
 * half unmapped by dlclose). */
extern __thread int ht_in_handler;

/* ---- stacks (agent/stacks.c, agent/unwind.c) ------------------------------ */
/* Stack capture: ht_unwind and ht_capture in agent/unwind.h (inline, for
 * the hooks); the cache behind ht_capture in agent/scache.c. */
void ht_unwind_init(void);
void ht_scache_forget(ht_thread_t *t);
/* Id of the stack t->frames[0..n), defining it in t's buffer the first time
 * it is seen. Returns 0 if the table is full. */
uint32_t ht_stack_intern(ht_thread_t *t, unsigned n);
void ht_stacks_init(void);
void ht_stacks_fork_prepare(void);
void ht_stacks_fork_parent(void);
void ht_stacks_fork_child(void); /* forget all: the child's trace redefines */
/* A library left [lo, hi): stacks holding an address in it are forgotten,
 * so that a library loaded there next gets stacks (and symbols) of its own
 * instead of the same return addresses' old ids. Bumps ht_stacks_gen,
 * which tells every thread to drop its stack cache (ht_capture). */
void ht_stacks_forget_range(uintptr_t lo, uintptr_t hi);
extern _Atomic uint32_t ht_stacks_gen;
extern _Atomic unsigned ht_agent_flags;

/* ---- modules (agent/modules.c) -------------------------------------------- */
/* Write MODULE records for objects loaded since the last call and
 * MODULE_UNLOAD records for the ones gone. Takes the module lock. */
void ht_modules_refresh(void);
/* Names in the manifest each library whose malloc or free is bound past
 * the agent (RTLD_DEEPBIND, dlmopen): all of them, or only the one of a
 * dlopen handle. Under the guard; not in a signal handler. */
void ht_modules_check_bypass(void *handle);
/* Forget what was written (a new trace file starts) and write all again. */
void ht_modules_rewrite_all(void);
/* The PT_GNU_RELRO ranges of the loaded modules (read-only after start-up,
 * roots of the leak scan all the same): fills out, returns how many. */
unsigned ht_modules_relro(uintptr_t (*out)[2], unsigned cap);
/* True if addr lies in a module already written to the trace. */
bool ht_modules_known(uintptr_t addr);
/* Address range of libheaptrail.so, to drop our own frames. */
extern uintptr_t ht_agent_lo, ht_agent_hi;
/* Address ranges of the libraries loaded for the agent (libunwind, zstd). */
#define HT_AGENT_DEPS_MAX 8
extern uintptr_t ht_agent_deps[HT_AGENT_DEPS_MAX][2];
extern unsigned ht_agent_ndeps;
/* libc's writable segment: glibc's main arena lives there. */
extern uintptr_t ht_libc_data_lo, ht_libc_data_hi;
static inline bool ht_addr_in_agent(uintptr_t addr)
{
	return addr - ht_agent_lo < ht_agent_hi - ht_agent_lo;
}
/* Address range of libunwind (its sigprocmask calls, agent/unwind.c). */
extern uintptr_t ht_libunwind_lo, ht_libunwind_hi;
void ht_modules_init(void);
void ht_modules_fork_prepare(void);
void ht_modules_fork_parent(void);
void ht_modules_fork_child(void);

/* ---- the trace file (agent/writer.c) --------------------------------------
 * The writer owns the output file and the compressor. Callers hold
 * ht_writer_lock around ht_writer_record calls. */
extern ht_lock_t ht_writer_lock;
/* Open a new trace file and write the header and PROCESS record. */
int ht_writer_open(bool forked);
/* Append one top-level record (tag, payload). Compresses as needed. */
void ht_writer_record(uint8_t tag, const void *payload, size_t len);
/* Same, but the payload comes in two parts (a header and a body). */
void ht_writer_record2(uint8_t tag, const void *head, size_t head_len,
		       const void *body, size_t body_len);
/* One record made of nparts pieces, written one after the other. */
void ht_writer_recordv(uint8_t tag, const void *const *part, const size_t *len, size_t nparts);
/* A packer's finished frame (agent/packer.c), whole records only, written
 * after the writer's own frame is ended; caller holds ht_writer_lock. */
void ht_writer_put_frame(const uint8_t *data, size_t n);
/* The level of a packer's next frame; false: the trace is not compressed. */
bool ht_writer_frame_level(unsigned *level);
/* A packer compressed in bytes in zstd_ns (for compress=auto's choice when
 * the writer's lock holder did it). */
void ht_writer_frame_done(uint64_t in, uint64_t zstd_ns);
/* The workspace a packer's zstd context needs, and its settings. */
size_t ht_writer_cstream_size(void);
struct ZSTD_CCtx_s;
void ht_writer_zstd_configure(struct ZSTD_CCtx_s *c, unsigned level);
/* True when bytes wait in the compressor: a flush has work to do. */
bool ht_writer_dirty(void);
/* Push everything buffered to the file, the packers' batches too.
 * end_frame: close the zstd frame. */
void ht_writer_flush(bool end_frame);
/* Close the file: write END, end the frame, close. */
void ht_writer_finish(unsigned how, unsigned status);
void ht_writer_fork_child_close(void);
/* Tells heaptrail run (the manifest) that the process execs target: if no
 * trace of the new image follows, the image was not traced. */
void ht_writer_note_exec(const char *target);
/* Notes in the manifest that object (the executable, a library loaded
 * before the agent) defines malloc: the program's calls reach it, not the
 * agent (heaptrail run says so). */
void ht_writer_note_own_malloc(const char *object);
void ht_writer_note_bypass(const char *object);
/* fd moved to a high number, close-on-exec: above the soft RLIMIT_NOFILE
 * (raised for the moment) when it is at most 1024, else just below it (or
 * below 1024 for a huge one): the agent's descriptors stay out of the
 * program's way. fd itself when that cannot be done (agent/descriptors.c). */
int ht_fd_move_high(int fd);
/* The trace's descriptor, -1 when none (read by the descriptor hooks). */
extern _Atomic int ht_trace_fd;
/* The program is about to dup2 onto fd, the trace's number: the trace
 * moves to another number first. */
void ht_writer_move_fd(int fd);
/* fd names the trace's file (not a number the program closed by a raw
 * system call and has reused since). */
bool ht_writer_fd_is_trace(int fd);
uint64_t ht_read_rss(void);

/* ---- the resident set over time (agent/rss.c) ------------------------------
 * Threads sample it when they ship their events (at most every
 * HT_RSS_SHIP_NS); the writer thread every HT_RSS_TICK_NS when none did, so
 * that a program that touches memory without allocating shows it too. */
#define HT_RSS_SHIP_NS 10000000ull  /* 10 ms */
#define HT_RSS_TICK_NS 100000000ull /* 100 ms */
/* Whether a sample is due at now (none for interval_ns): if so, claims it. */
bool ht_rss_claim(uint64_t now, uint64_t interval_ns);
/* Reads the resident set, noting the peak and its time. */
uint64_t ht_rss_read_noted(uint64_t now);
/* The writer thread's tick: a sample if none was taken for HT_RSS_TICK_NS. */
void ht_rss_tick(void);
/* The highest sample so far, and when (0, 0: none). */
void ht_rss_peak(uint64_t *bytes, uint64_t *time);

/* ---- heaptrail attach (agent/attach.c) ------------------------------------- */
/* Set when the agent was started by heaptrail attach: no preload, no
 * signal handlers of its own, the PROCESS record says so. */
extern bool ht_attaching;
/* The options heaptrail attach gave, read instead of HEAPTRAIL_OPTIONS. */
extern const char *ht_attach_options;
/* True when the library was loaded after the process started (dlopen). */
bool ht_attach_loaded_late(void);
/* The process's own definition of name, which its objects bound to: in
 * the global scope, which a late-loaded agent is not in, but never a
 * non-PIE executable's PLT entry standing for it (attach.c). */
void *ht_attach_next(const char *name);
/* Resolves the real allocation functions (hooks.c). */
void ht_hooks_resolve(void);

/* ---- life cycle (agent/lifecycle.c) --------------------------------------- */
void ht_init(void);
/* Flush all, write END and close the trace. Idempotent. */
void ht_finish(unsigned how, unsigned status);
/* Flush all and mark the trace with an EXEC record before exec; true if it
 * did, holding the writer's lock until ht_after_failed_exec(true). */
bool ht_before_exec(const char *path);
void ht_after_failed_exec(bool flushed);
/* Where the exiting thread's live stack begins (exit, _exit, return from
 * main): the leak scan at the end reads that thread's stack from sp up. */
void ht_note_exit_sp(uintptr_t sp);
/* Our handler for fatal signals; hooks.c hides it from the program. */
void ht_fatal_signal_handler(int sig);
/* In SIGABRT's handler: a BAD_FREE event when the abort came from inside a
 * recorded free (hooks.c). */
void ht_bad_free_at_abort(void);
bool ht_is_fatal_signal(int sig);
/* In a fatal-signal handler: if the leak scan faulted reading memory that
 * vanished, resumes the scan (does not return); else returns false. */
bool ht_leak_scan_fault(void);
/* Handler of the leak-check signal (option leak_signal, SIGUSR2 by default
 * when the program leaves it at SIG_DFL). */
void ht_leak_signal_handler(int sig);
struct sigaction;
void ht_fatal_sigaction(struct sigaction *sa);
extern _Atomic int ht_exit_code;	/* from main's return or exit() */
extern _Atomic bool ht_exit_code_known;
extern pid_t ht_pid;

struct ht_thread;
void ht_break_alloc(struct ht_thread *t, void *p);
void ht_break_free(void *p);

/* ---- small helpers without malloc (agent/fmt.c) ---------------------------- */
size_t ht_strlen(const char *s);
int ht_strcmp(const char *a, const char *b);
int ht_strncmp(const char *a, const char *b, size_t n);
size_t ht_strlcpy(char *dst, const char *src, size_t cap);
/* Append decimal v to dst (capacity cap); returns new length. */
size_t ht_append_u64(char *dst, size_t len, size_t cap, uint64_t v);
size_t ht_append_str(char *dst, size_t len, size_t cap, const char *s);
/* Write "heaptrail: <msg>\n" to stderr with one write(2). Rate-limited. */
void ht_log(const char *msg, const char *arg);
/* Memory for the agent itself, from mmap. Zeroed. NULL on failure. */
void *ht_mmap(size_t size);
void ht_munmap(void *p, size_t size);
/* The ranges mapped with ht_mmap and not unmapped: fills out[i] = {lo, hi}
 * and returns how many (the leak scan excludes them from the roots). */
unsigned ht_agent_maps(uintptr_t (*out)[2], unsigned cap);
/* Read a whole small file into buf (NUL-terminated); returns bytes or -1. */
long ht_read_file(const char *path, char *buf, size_t cap);
/* /proc/thread-self/NAME, else /proc/self/NAME: once the main thread has
 * called pthread_exit, /proc/self (the thread group's leader, a zombie)
 * shows no memory map, no statm, no VmHWM. */
long ht_read_proc(const char *name, char *buf, size_t cap);

#endif /* HEAPTRAIL_AGENT_H */
