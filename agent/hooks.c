/* hooks.c - the entry points heaptrail interposes with LD_PRELOAD.
 *
 * Rules for all agent code (it runs inside the program's malloc calls):
 *  1. Guard first. ht_guard (initial-exec TLS) is set while the agent works;
 *     a hook entered with it set calls the real function and records nothing.
 *     So allocations made by libc, libunwind or zstd on our behalf are never
 *     counted, and a signal handler that allocates inside a hook is safe
 *     (and, when the program installed it through our sigaction, recorded
 *     later: "signal handlers" below).
 *  2. No malloc in the agent: memory comes from mmap (ht_mmap), strings are
 *     built by hand (agent/fmt.c), options are read from environ.
 *  3. No global lock on the fast path: events go to the thread's own buffer;
 *     locks are taken per shipped buffer, per new stack, per module change.
 *  4. Order: a free is stamped and recorded before the real free (so another
 *     thread cannot get the address before our record), an allocation after
 *     the real call succeeds. realloc records both halves (see trace_format.h).
 *  5. errno is preserved: the real call's errno is what the program sees.
 *  6. Time stamps are taken after any step that may ship the buffer (ship =
 *     RSS sample with a later time), so a thread's times never go backwards.
 *  7. Bootstrap: dlsym may allocate before we know the real malloc; such
 *     requests are served from a static buffer that free() ignores.
 *  8. fork, exec, _exit and fatal signals finish or hand over the trace
 *     (lifecycle.c); nothing here may break a program that uses them.
 *  9. Sampling (sample_rate): a call that is only counted takes a fast path
 *     that reads the guard but does not set it, touches no errno and no
 *     buffer; everything that records goes through the rules above.
 *
 * Counting follows valgrind memcheck: every successful allocation call is one
 * allocation of the requested size; realloc(p, n>0) of a non-NULL p is one
 * free plus one allocation; realloc(NULL, n) one allocation; a realloc(p, 0)
 * that frees is one free; free(NULL) is nothing.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <ucontext.h>
#include <unistd.h>

#include "agent.h"
#include "unwind.h"

__thread int ht_guard;

/* ---- the real functions ----------------------------------------------------- */

static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static void *(*real_reallocarray)(void *, size_t, size_t);
static void (*real_free)(void *);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_aligned_alloc)(size_t, size_t);
static void *(*real_memalign)(size_t, size_t);
static void *(*real_valloc)(size_t);
static void *(*real_pvalloc)(size_t);
static size_t (*real_malloc_usable_size)(void *);
/* glibc's own names of the same functions (__libc_malloc, ...), which
 * programs call directly (a malloc wrapper forwards to them): ours call
 * the next ones, not the public twins, whose next definition may be such a
 * wrapper (it would call us again). */
static void *(*real_libc_malloc)(size_t);
static void (*real_libc_free)(void *);
static void *(*real_libc_calloc)(size_t, size_t);
static void *(*real_libc_realloc)(void *, size_t);
static void *(*real_libc_memalign)(size_t, size_t);
static void *(*real_libc_valloc)(size_t);
static void *(*real_libc_pvalloc)(size_t);
/* Whether our __libc_ hooks record: not when the next malloc is another
 * object's than the next __libc_malloc (a library after us defines malloc:
 * a wrapper that may forward to __libc_malloc, whose calls our malloc hook
 * saw already, and which the sampling fast paths, without the guard,
 * would count twice); they only hand the call on then. */
static bool libc_names_recorded;
static void (*real_exit)(int) __attribute__((noreturn));
static void (*real__exit)(int) __attribute__((noreturn));
static int (*real_dlclose)(void *);
static int (*real_execve)(const char *, char *const[], char *const[]);
static int (*real_execv)(const char *, char *const[]);
static int (*real_execvp)(const char *, char *const[]);
static int (*real_execvpe)(const char *, char *const[], char *const[]);
static int (*real_fexecve)(int, char *const[], char *const[]);
static int (*real_execveat)(int, const char *, char *const[], char *const[], int);
static void (*real_quick_exit)(int) __attribute__((noreturn));
static int (*real_sigaction)(int, const struct sigaction *, struct sigaction *);
static int (*real_pthread_getattr_np)(pthread_t, pthread_attr_t *);
static sighandler_t (*real_sigset)(int, sighandler_t);
static sighandler_t (*real_signal)(int, sighandler_t);

/* Bootstrap allocations, made while dlsym runs (rule 7). Each block has a
 * 16-byte header with its size, for realloc and malloc_usable_size. */
static uint8_t boot_buf[64 * 1024] __attribute__((aligned(64)));
static size_t boot_used;

static bool is_boot(const void *p)
{
	return (const uint8_t *)p >= boot_buf &&
	       (const uint8_t *)p < boot_buf + sizeof boot_buf;
}

static void *boot_alloc(size_t size, size_t align)
{
	if (align < 16)
		align = 16;
	size_t start = (boot_used + 16 + align - 1) & ~(align - 1);
	if (start + size > sizeof boot_buf)
		return NULL;
	boot_used = start + size;
	*(size_t *)(boot_buf + start - 16) = size;
	ht_sfilter_pin(boot_buf + start); /* free's fast path leaves it alone */
	return boot_buf + start; /* static memory: already zero */
}

static size_t boot_size(const void *p)
{
	return *(const size_t *)((const uint8_t *)p - 16);
}

static _Atomic int resolving;

/* Where the real functions are: the next definitions after the preloaded
 * agent; attached, the process's own (agent/attach.c, ht_attach_next): a
 * preloaded jemalloc's, or glibc's, the ones its objects' slots held. */
static void *next_def(const char *name)
{
	return ht_attaching ? ht_attach_next(name) : dlsym(RTLD_NEXT, name);
}
#define RESOLVE(name) *(void **)&real_##name = next_def(#name)
/* __libc_NAME, or else the public NAME (then no program can call it) */
#define RESOLVE_LIBC(name, public)                                             \
	do {                                                                   \
		*(void **)&real_libc_##name = next_def("__libc_" #name);     \
		if (!real_libc_##name)                                         \
			*(void **)&real_libc_##name = (void *)(public);        \
	} while (0)

HT_NOINLINE HT_COLD static void resolve_reals(void)
{
	int expected = 0;
	if (!atomic_compare_exchange_strong(&resolving, &expected, 1))
		return;
	ht_guard++;
	RESOLVE(calloc);
	RESOLVE(realloc);
	RESOLVE(reallocarray);
	RESOLVE(free);
	RESOLVE(posix_memalign);
	RESOLVE(aligned_alloc);
	RESOLVE(memalign);
	RESOLVE(valloc);
	RESOLVE(pvalloc);
	RESOLVE(malloc_usable_size);
	RESOLVE(exit);
	RESOLVE(_exit);
	RESOLVE(dlclose);
	RESOLVE(execve);
	RESOLVE(execv);
	RESOLVE(execvp);
	RESOLVE(execvpe);
	RESOLVE(fexecve);
	RESOLVE(execveat); /* glibc 2.34 */
	RESOLVE(quick_exit);
	RESOLVE(sigaction);
	RESOLVE(pthread_getattr_np);
	RESOLVE(sigset);
	RESOLVE(signal);
	/* malloc last: a non-NULL real_malloc means everything is resolved. */
	void *m = next_def("malloc");
	RESOLVE_LIBC(malloc, m);
	RESOLVE_LIBC(free, real_free);
	RESOLVE_LIBC(calloc, real_calloc);
	RESOLVE_LIBC(realloc, real_realloc);
	RESOLVE_LIBC(memalign, real_memalign);
	RESOLVE_LIBC(valloc, real_valloc);
	RESOLVE_LIBC(pvalloc, real_pvalloc);
	Dl_info next, libc;
	libc_names_recorded = m && dladdr(m, &next) && dladdr((void *)real_libc_malloc, &libc) &&
			      next.dli_fbase == libc.dli_fbase;
	ht_guard--;
	if (!m || !real_free || !real_calloc || !real_realloc) {
		ht_log("cannot find the real malloc; giving up", NULL);
		_exit(127);
	}
	atomic_store((_Atomic(void *) *)&real_malloc, m);
}

void ht_hooks_resolve(void)
{
	if (!real_malloc)
		resolve_reals();
}

/* Returns true if this call should be recorded. The first call of the
 * process starts the agent. */
static inline bool should_record(void)
{
	if (HT_UNLIKELY(ht_guard))
		return false;
	int s = atomic_load_explicit(&ht_state, memory_order_relaxed);
	if (HT_LIKELY(s == HT_STATE_RECORDING))
		return true;
	if (s == HT_STATE_UNINIT) {
		ht_init();
		return atomic_load(&ht_state) == HT_STATE_RECORDING && !ht_guard;
	}
	if (s == HT_STATE_EXEC) /* records after another thread's exec flush */
		return ht_exec_flush_wait() == HT_STATE_RECORDING;
	if (s == HT_STATE_FINISHED)
		ht_thread_park(); /* while the finish works (thread.c) */
	return false;
}

/* ---- signal handlers -------------------------------------------------------
 * A program's handler that allocates while the agent holds the guard on
 * the same thread (it interrupted a hook) used to pass unrecorded: its
 * blocks were unknown to the trace, and their frees matched nothing. The
 * sigaction and signal hooks (end of this file) run the program's
 * handlers through a trampoline that, when it finds the guard held, sets
 * it to HT_GUARD_DEFER. Hooks entered so keep their event aside in the
 * thread's state (defer_event: no lock, no buffer, a frame-pointer stack),
 * and the interrupted hook records them when it releases the guard
 * (GUARD_RELEASE), stamped no earlier than its own event.
 *
 * A handler may also leave by siglongjmp, and one that interrupted the
 * agent would leave its work half done: the guard held for good (the
 * thread recorded nothing more), maybe a lock. So an asynchronous standard
 * signal (a timer, kill, Ctrl-C: not a fault of the thread's own code, nor
 * abort) that finds an allocation hook at work (HT_GUARD_HOOK) does not
 * run its handler there: the trampoline keeps the signal and its siginfo
 * in the thread's state and leaves it blocked, and the hook sends it again
 * to its own thread when it releases the guard (send_pending_signals): the
 * handler runs then, microseconds late, as if the signal had come at the
 * end of the malloc. A real-time signal is kept too, but its handler is
 * called by the hook itself (run_kept_handler): sent again, it would queue
 * behind the instances the kernel queued meanwhile, out of order; called
 * while the signal is still blocked, it runs before them. Faults, abort's
 * SIGABRT, SA_RESETHAND handlers (the kernel has reset the action
 * already), real-time ones on an alternate stack (SA_ONSTACK) and signals
 * past HT_SIG_PENDING_MAX run at once, as before. */

__thread volatile int ht_deferred_pending;
__thread int ht_in_handler;

/* In a handler that interrupted the agent: keeps an allocation (op
 * HT_EV_ALLOC | fn << 4) or a free of p aside, stamped at time. */
HT_NOINLINE static void defer_event(uint8_t op, void *p, size_t size, uint64_t time)
{
	ht_thread_t *t = ht_tls_thread;
	if (HT_UNLIKELY(!t))
		return;
	/* the entries past the inline ones are mapped by the first handler
	 * that needs one (mmap is async-signal-safe; no lock, once per state) */
	if ((__atomic_load_n(&t->defer_tail, __ATOMIC_RELAXED) % HT_DEFER_MAX) >= HT_DEFER_INLINE &&
	    !atomic_load_explicit(&t->deferred_more, memory_order_acquire)) {
		/* ht_mmap: a system call and a lock-free note of the range,
		 * which the leak scan leaves out (entries hold addresses) */
		size_t len = HT_DEFER_MORE * sizeof(ht_deferred_t);
		void *m = ht_mmap(len);
		ht_deferred_t *none = NULL;
		if (m && !atomic_compare_exchange_strong(&t->deferred_more, &none, (ht_deferred_t *)m))
			ht_munmap(m, len); /* a nested handler mapped it first */
	}
	/* a nested handler may take an entry meanwhile: claim it first */
	uint32_t i = __atomic_fetch_add(&t->defer_tail, 1, __ATOMIC_RELAXED);
	ht_deferred_t *d = ht_deferred_slot(t, i);
	if (i - t->defer_head >= HT_DEFER_MAX || !d) {
		__atomic_fetch_sub(&t->defer_tail, 1, __ATOMIC_RELAXED);
		t->defer_lost++;
		atomic_fetch_or(&ht_agent_flags, HT_AGENT_HANDLER_EVENTS_LOST);
		return;
	}
	d->op = op;
	d->addr = (uintptr_t)p;
	d->size = size;
	d->time = time;
	d->n = 0;
	if ((op & 0x0f) == HT_EV_ALLOC) {
		void *f[HT_DEFER_DEPTH + HT_AGENT_FRAMES];
		unsigned n = ht_fp_walk(t, f, HT_DEFER_DEPTH + HT_AGENT_FRAMES);
		for (unsigned j = 0; j < n && d->n < HT_DEFER_DEPTH; j++)
			if (!ht_addr_in_agent((uintptr_t)f[j]))
				d->frames[d->n++] = f[j];
	}
	atomic_signal_fence(memory_order_release);
	d->ready = 1;
	ht_deferred_pending = 1;
}

static void record_deferred(ht_thread_t *t, const ht_deferred_t *d);

/* The same siginfo (si_code, si_value, the sender): the kernel takes any
 * from a thread for itself. */
static void send_to_self(pid_t pid, uint32_t tid, const struct ht_pending_signal *p)
{
	if (syscall(SYS_rt_tgsigqueueinfo, pid, (pid_t)tid, p->sig, &p->info) != 0)
		syscall(SYS_tgkill, pid, (pid_t)tid, p->sig);
}

static bool run_kept_handler(const struct ht_pending_signal *p);

/* True if a signal kept after the head is sig. */
static bool kept_later(const ht_thread_t *t, int sig)
{
	for (uint32_t i = t->sig_head; i != t->sig_tail; i++)
		if (t->sig_pending[i % HT_SIG_PENDING_MAX].sig == sig)
			return true;
	return false;
}

/* Delivers, one after the other in the order they came, the signals the
 * trampoline kept while a hook worked: a standard one is sent again to
 * this thread and its handler runs as it is unblocked; a real-time one's
 * handler is called here (run_kept_handler). The trampoline blocked them,
 * so that the kernel keeps later instances pending meanwhile (one of a
 * standard signal, every one of a real-time signal, in order): a signal
 * is unblocked once no kept instance of it is left, and those come after.
 * An entry is taken before its handler runs, so a handler that leaves by
 * siglongjmp leaves the rest for the next hook's end (ht_deferred_pending);
 * a hook's end inside one of these handlers delivers the rest there, as
 * the kernel delivers a signal the running handler does not block. Two
 * kept instances of one signal would then be out of order, but the
 * trampoline keeps the kept signals blocked (keep_for_later). */
static void send_pending_signals(ht_thread_t *t)
{
	pid_t pid = 0;
	while (t->sig_head != t->sig_tail) {
		struct ht_pending_signal p = t->sig_pending[t->sig_head % HT_SIG_PENDING_MAX];
		t->sig_head++;
		ht_deferred_pending = t->sig_head != t->sig_tail;
		if (p.sig < SIGRTMIN || !run_kept_handler(&p)) {
			if (!pid)
				pid = getpid();
			ht_guard = 1;
			send_to_self(pid, t->tid, &p);
			ht_guard = 0;
		}
		if (!kept_later(t, p.sig)) {
			sigset_t one;
			sigemptyset(&one);
			sigaddset(&one, p.sig);
			pthread_sigmask(SIG_UNBLOCK, &one, NULL);
		}
	}
}

/* Records the events handlers kept aside and sends the signals kept for
 * later; the guard is free. */
HT_NOINLINE static void deferred_flush(void)
{
	ht_thread_t *t = ht_tls_thread;
	ht_deferred_pending = 0;
	if (!t)
		return;
	int e = errno;
	if (atomic_load_explicit(&ht_state, memory_order_relaxed) == HT_STATE_RECORDING) {
		ht_guard = HT_GUARD_HOOK;
		while (t->defer_head != __atomic_load_n(&t->defer_tail, __ATOMIC_RELAXED)) {
			ht_deferred_t *d = ht_deferred_slot(t, t->defer_head);
			if (!d || !d->ready)
				break; /* claimed by a handler that a longjmp left */
			atomic_signal_fence(memory_order_acquire);
			record_deferred(t, d);
			d->addr = 0; /* no stale pointer for the leak scan to find */
			d->ready = 0;
			t->defer_head++;
		}
		ht_guard = 0;
	}
	send_pending_signals(t);
	ht_transient_end(); /* an event after the thread's key destructor */
	errno = e;
	if (HT_UNLIKELY(ht_deferred_pending)) /* a handler ran meanwhile */
		deferred_flush();
}

/* The end of a hook's work: the guard is released, and what signal
 * handlers did meanwhile is recorded. */
#define GUARD_RELEASE()                                                         \
	do {                                                                   \
		ht_guard = 0;                                                  \
		if (HT_UNLIKELY(ht_deferred_pending))                          \
			deferred_flush();                                      \
	} while (0)

/* A hook entered in a handler that interrupted the agent. */
static inline bool deferring(void)
{
	return HT_UNLIKELY(ht_guard == HT_GUARD_DEFER);
}

/* A sampled run's call that passes unrecorded because the trace is being
 * finished: counted all the same, as the sampling fast paths count every
 * call whatever the state, so that END's totals, read while other threads
 * run on, stay in step (allocations and frees counted alike). */
static inline void count_finishing(uint64_t allocs, uint64_t frees, uint64_t bytes)
{
	ht_thread_t *t;
	if (ht_opt_sample_rate && !ht_guard && (t = ht_tls_thread) != NULL) {
		t->n_allocs += allocs;
		t->n_frees += frees;
		t->n_bytes += bytes;
	}
}

/* ---- encoding events -------------------------------------------------------- */

#define HT_EVENT_MAX (1 + 7 * HT_VARINT_MAX)
#define HT_STACKDEF_MAX(depth) (1 + 2 * HT_VARINT_MAX + (size_t)(depth) * HT_VARINT_MAX)

/* A block older than this ships even if not full, so that a trace on disk
 * lags the program by at most about this much (a process killed with
 * SIGKILL loses no more than that). */
#define HT_SHIP_AFTER_NS 500000000ull

static inline void ship_if_old(ht_thread_t *t, uint64_t now)
{
	if (HT_UNLIKELY(now - t->block_base > HT_SHIP_AFTER_NS))
		ht_thread_flush(t);
}

/* Records an allocation of size bytes at p (from the program's pool when
 * pool is not 0: a PALLOC event). Called with the guard set. Inline, so
 * that the unwinder starts in the hook's frame, and the pool branch
 * disappears from the malloc hooks. */
__attribute__((always_inline)) static inline void record_alloc_in(unsigned fn, void *p, size_t size,
								 uintptr_t pool)
{
	if (HT_UNLIKELY(!atomic_load_explicit(&ht_recording_on, memory_order_relaxed)))
		return; /* switched off by the program: frees are still recorded */
	ht_thread_t *t = ht_thread_get();
	if (HT_UNLIKELY(!t) || HT_UNLIKELY(!ht_event_begin(t)))
		return;
	uint32_t sid = ht_capture(t);
	ht_thread_reserve(t, HT_EVENT_MAX);
	uint64_t now = ht_event_time(t);
	uint8_t *b = t->buf + t->len;
	size_t k = 0;
	b[k++] = (uint8_t)((pool ? HT_EV_PALLOC : HT_EV_ALLOC) | fn << 4);
	k += ht_varint_put(b + k, now - t->last_time);
	k += ht_varint_put(b + k, ht_zigzag((int64_t)((uintptr_t)p - t->last_addr)));
	k += ht_varint_put(b + k, size);
	k += ht_varint_put(b + k, sid);
	if (pool)
		k += ht_varint_put(b + k, pool);
	t->last_time = now;
	t->last_addr = (uintptr_t)p;
	t->len += (uint32_t)k;
	t->n_allocs++;
	t->n_bytes += size;
	ship_if_old(t, now);
	atomic_store_explicit(&t->in_event, 0, memory_order_relaxed);
	if (HT_UNLIKELY(ht_break_on))
		ht_break_alloc(t, p); /* after recording: the trace has the block */
}

/* The deallocating function of the free being recorded (HT_FREE_*): the
 * delete hooks set it around their free, record_free writes it. */
static __thread uint8_t free_fn_now;
/* The block whose real free is running on this thread: glibc aborts inside
 * it on a double or invalid free, and the abort's handler names it
 * (ht_bad_free_at_abort). */
static __thread void *volatile freeing_now;
/* Set with freeing_now around a realloc's real call: glibc aborts there on
 * an invalid or freed pointer ("realloc(): invalid pointer") before the
 * hook has recorded anything of it. */
enum { REALLOC_NONE, REALLOC_UNRECORDED, REALLOC_FREE_RECORDED };
static __thread volatile uint8_t realloc_now;

/* Appends the FREE of p at time now (head: HT_EV_FREE and the entry
 * point's bits) to t's buffer, whose room the caller reserved. */
__attribute__((always_inline)) static inline void put_free(ht_thread_t *t, uint8_t head, void *p,
							    uint64_t now)
{
	uint8_t *b = t->buf + t->len;
	size_t k = 0;
	b[k++] = head;
	k += ht_varint_put(b + k, now - t->last_time);
	k += ht_varint_put(b + k, ht_zigzag((int64_t)((uintptr_t)p - t->last_addr)));
	t->last_time = now;
	t->last_addr = (uintptr_t)p;
	t->len += (uint32_t)k;
	t->n_frees++;
}

/* Records the free of p, before the real free runs. */
static void record_free(void *p)
{
	if (HT_UNLIKELY(ht_break_on))
		ht_break_free(p); /* before the free: the block is still there */
	if (HT_UNLIKELY(!atomic_load_explicit(&ht_recording_was_on, memory_order_relaxed)))
		return; /* started off, never on yet: not a block of the trace */
	ht_thread_t *t = ht_thread_get();
	if (HT_UNLIKELY(!t) || HT_UNLIKELY(!ht_event_begin(t)))
		return;
	/* free_stacks=1: the free's stack, in an EXT after it (memcheck's
	 * "freed at" of a double free, the stack of a mismatched delete) */
	uint64_t sid = HT_UNLIKELY(ht_opt_free_stacks) ? ht_capture(t) : 0;
	ht_thread_reserve(t, HT_EVENT_MAX);
	uint64_t now = ht_event_time(t);
	put_free(t, (uint8_t)(HT_EV_FREE | free_fn_now << 4), p, now);
	if (HT_UNLIKELY(ht_opt_free_stacks))
		ht_put_ext(t, HT_EXT_FREE_STACK, &sid, 1);
	ship_if_old(t, now);
	atomic_store_explicit(&t->in_event, 0, memory_order_relaxed);
}

/* realloc family: old is freed at free_time, q allocated now. The buffer
 * was reserved before free_time was taken (rule 6). free_time may be
 * HT_STAMP_AFTER: both halves then take the stamp made here. */
__attribute__((always_inline)) static inline void record_realloc(unsigned fn, void *old, void *q, size_t size,
			   uint64_t free_time, bool free_only)
{
	ht_thread_t *t = ht_thread_get();
	if (HT_UNLIKELY(!t))
		return;
	if (HT_UNLIKELY(free_only || !atomic_load_explicit(&ht_recording_on, memory_order_relaxed))) {
		/* Switched off, or a sampled block became an unsampled one: only
		 * the free half, stamped before the call; none at all before
		 * recording was first on. */
		if (HT_UNLIKELY(!atomic_load_explicit(&ht_recording_was_on, memory_order_relaxed))) {
			atomic_store_explicit(&t->in_event, 0, memory_order_relaxed);
			return;
		}
		if (free_time == HT_STAMP_AFTER)
			free_time = ht_event_time(t);
		if (free_time < t->last_time)
			free_time = t->last_time;
		put_free(t, HT_EV_FREE, old, free_time);
		atomic_store_explicit(&t->in_event, 0, memory_order_relaxed);
		if (HT_UNLIKELY(ht_break_on))
			ht_break_free(old); /* freed already: the stop is in realloc */
		return;
	}
	uint32_t sid = ht_capture(t);
	ht_thread_reserve(t, HT_EVENT_MAX); /* no-op: reserved up front */
	uint64_t now = ht_event_time(t);
	if (free_time < t->last_time)
		free_time = t->last_time;
	if (free_time > now) /* HT_STAMP_AFTER among others */
		free_time = now;
	uint8_t *b = t->buf + t->len;
	size_t k = 0;
	b[k++] = (uint8_t)(HT_EV_REALLOC | fn << 4);
	k += ht_varint_put(b + k, now - t->last_time);
	k += ht_varint_put(b + k, ht_zigzag((int64_t)((uintptr_t)q - t->last_addr)));
	k += ht_varint_put(b + k, size);
	k += ht_varint_put(b + k, sid);
	k += ht_varint_put(b + k, ht_zigzag((int64_t)((uintptr_t)old - (uintptr_t)q)));
	k += ht_varint_put(b + k, now - free_time);
	t->last_time = now;
	t->last_addr = (uintptr_t)q;
	t->len += (uint32_t)k;
	t->n_allocs++;
	t->n_frees++;
	t->n_bytes += size;
	ship_if_old(t, now);
	atomic_store_explicit(&t->in_event, 0, memory_order_relaxed);
	if (HT_UNLIKELY(ht_break_on)) {
		ht_break_free(old);
		ht_break_alloc(t, q);
	}
}

/* Prepares a realloc: reserves room for the whole event (stack definition
 * included, so nothing ships in between) and sets the free time stamp.
 * False when the realloc is not to be recorded (the trace is closing). */
static bool realloc_begin(uint64_t *free_time)
{
	*free_time = 0;
	ht_thread_t *t = ht_thread_get();
	if (HT_UNLIKELY(!t))
		return true; /* record_realloc finds no state either */
	if (HT_UNLIKELY(!ht_event_begin(t)))
		return false;
	ht_thread_reserve(t, HT_EVENT_MAX + HT_STACKDEF_MAX(ht_opt_depth));
	*free_time = ht_stamp_is_coarse() ? HT_STAMP_AFTER : ht_event_time(t);
	return true;
}

static void realloc_abort(void)
{
	ht_thread_t *t = ht_thread_get();
	if (t)
		atomic_store_explicit(&t->in_event, 0, memory_order_relaxed);
}

/* ---- the malloc family ---------------------------------------------------- */

/* Wraps the real call r for an allocation of size bytes made by function fn. */
/* True when sampling leaves the allocation of size bytes unrecorded (it
 * was only counted): the fast path of a sampled run, one subtract and a
 * branch. Recording switched off by the program takes the exact path,
 * which records and counts nothing, as without sampling. */
static inline bool sample_skip(size_t size)
{
	return ht_opt_sample_rate && HT_LIKELY(atomic_load_explicit(&ht_recording_on,
								       memory_order_relaxed)) &&
	       (HT_LIKELY(ht_sample_skip(size)) || !ht_sample_slow(size));
}

/* Records an allocation that sampling did not skip. Called with the guard
 * set; errno is the caller's to keep. */
__attribute__((always_inline)) static inline void record_alloc_sampled(unsigned fn, void *p,
								      size_t size, uintptr_t pool)
{
	record_alloc_in(fn, p, size, pool);
	if (ht_opt_sample_rate && atomic_load_explicit(&ht_recording_on, memory_order_relaxed))
		ht_sampled_add(p);
}

/* With sampling, the free of a block that was not recorded is only
 * counted; true if p was recorded (its free must be written). Must run
 * before the real free, like record_free (another thread may get p back
 * and sample it). */
static bool sampled_free_counted(void *p)
{
	if (ht_sampled_maybe(p) && ht_sampled_remove(p))
		return true;
	ht_thread_t *t = ht_thread_get();
	if (t)
		t->n_frees++;
	return false;
}

/* Records what a handler kept aside (deferred_flush), with the guard held:
 * as its hook would have, sampling included, at its own time unless the
 * thread's last event is later (times never go backwards in a block). */
static void record_deferred(ht_thread_t *t, const ht_deferred_t *d)
{
	void *p = (void *)d->addr;
	if ((d->op & 0x0f) == HT_EV_FREE) {
		if (!atomic_load_explicit(&ht_recording_was_on, memory_order_relaxed))
			return;
		if (ht_opt_sample_rate && !sampled_free_counted(p))
			return;
	} else {
		if (!atomic_load_explicit(&ht_recording_on, memory_order_relaxed) ||
		    sample_skip(d->size))
			return;
	}
	if (!ht_event_begin(t))
		return;
	uint32_t sid = 0;
	if ((d->op & 0x0f) == HT_EV_ALLOC) {
		memcpy(t->frames, d->frames, d->n * sizeof *d->frames);
		sid = ht_stack_intern(t, d->n);
	}
	ht_thread_reserve(t, HT_EVENT_MAX);
	uint64_t now = d->time < t->last_time ? t->last_time : d->time;
	uint8_t *b = t->buf + t->len;
	size_t k = 0;
	b[k++] = d->op;
	k += ht_varint_put(b + k, now - t->last_time);
	k += ht_varint_put(b + k, ht_zigzag((int64_t)((uintptr_t)p - t->last_addr)));
	if ((d->op & 0x0f) == HT_EV_ALLOC) {
		k += ht_varint_put(b + k, d->size);
		k += ht_varint_put(b + k, sid);
		t->n_allocs++;
		t->n_bytes += d->size;
	} else {
		t->n_frees++;
	}
	t->last_time = now;
	t->last_addr = (uintptr_t)p;
	t->len += (uint32_t)k;
	atomic_store_explicit(&t->in_event, 0, memory_order_relaxed);
	if ((d->op & 0x0f) == HT_EV_ALLOC && ht_opt_sample_rate)
		ht_sampled_add(p);
	if (HT_UNLIKELY(ht_break_on)) { /* numbered like the trace's blocks */
		if ((d->op & 0x0f) == HT_EV_ALLOC)
			ht_break_alloc(t, p);
		else
			ht_break_free(p);
	}
}

#define ALLOC_HOOK_BODY(fn, size, call)                                        \
	do {                                                                   \
		if (HT_UNLIKELY(!should_record())) {                           \
			void *q_ = call;                                       \
			if (q_ && deferring())                                 \
				defer_event(HT_EV_ALLOC | (fn) << 4, q_, size, \
					    ht_stamp());                       \
			else if (q_)                                           \
				count_finishing(1, 0, size);                   \
			return q_;                                             \
		}                                                              \
		ht_guard = HT_GUARD_HOOK;                                      \
		void *p_ = call;                                               \
		if (HT_LIKELY(p_ != NULL) && !sample_skip(size)) {             \
			int e_ = errno;                                        \
			record_alloc_sampled(fn, p_, size, 0);                 \
			errno = e_;                                            \
		}                                                              \
		GUARD_RELEASE();                                               \
		return p_;                                                     \
	} while (0)

/* ---- sampling's fast path ---------------------------------------------------
 * With sample_rate set, nearly every call is only counted: the exported
 * hook itself calls the real function and moves the countdown, without the
 * guard, errno or the recording path's registers (those live in noinline
 * functions it tail-calls, or calls when a sample is due). A signal handler
 * that allocates meanwhile only moves the same countdown. The agent's state
 * is not checked here: once the trace is finished or the agent disabled,
 * the counts no longer matter, and the slow paths check it. */

/* The thread's state when an allocation's fast path may run: sampling and
 * switched on (ht_sample_fast), outside the agent, and the thread known
 * (its first event takes the full path, which creates the state; a thread
 * state also means the reals are resolved). NULL otherwise. */
static inline ht_thread_t *sampled_thread(void)
{
	ht_thread_t *t = ht_tls_thread;
	if (HT_UNLIKELY(!atomic_load_explicit(&ht_sample_fast, memory_order_relaxed) || !t ||
			ht_guard))
		return NULL;
	return t;
}

/* The allocation p reached its thread's sample point: record it. */
HT_NOINLINE static void *sampled_alloc_slow(unsigned fn, void *p, size_t size)
{
	if (atomic_load_explicit(&ht_state, memory_order_relaxed) != HT_STATE_RECORDING) {
		/* finishing: still counted, as frees are (END's totals are
		 * read after the state changed, while other threads run on;
		 * the countdown stays spent, so every later call comes here) */
		ht_thread_t *t = ht_tls_thread;
		if (t) {
			t->n_allocs++;
			t->n_bytes += size;
		}
		return p;
	}
	ht_guard = HT_GUARD_HOOK;
	int e = errno;
	if (ht_sample_slow(size))
		record_alloc_sampled(fn, p, size, 0);
	errno = e;
	GUARD_RELEASE();
	return p;
}

/* The body of a sampled allocation hook: `call` allocates size bytes;
 * `fallback` is the full hook, for whatever the fast path does not take;
 * `on_null` what a failed call returns. */
#define SAMPLED_ALLOC_BODY(fn, size, call, fallback, on_null)                  \
	do {                                                                   \
		ht_thread_t *t_ = sampled_thread();                            \
		if (HT_UNLIKELY(!t_))                                          \
			return fallback;                                       \
		void *p_ = call;                                               \
		if (HT_UNLIKELY(!p_))                                          \
			return on_null;                                        \
		int64_t left_ = t_->sample_left - (int64_t)(size);             \
		if (HT_UNLIKELY(left_ <= 0))                                   \
			return sampled_alloc_slow(fn, p_, size);               \
		t_->sample_left = left_;                                       \
		t_->n_allocs++;                                                \
		t_->n_bytes += (size);                                         \
		return p_;                                                     \
	} while (0)

/* The whole hook but sampling's fast path; a tail call, so its frame is
 * still the program's callee when it records. */
HT_NOINLINE static void *malloc_full(size_t size)
{
	if (HT_UNLIKELY(!real_malloc)) {
		resolve_reals();
		if (!real_malloc)
			return boot_alloc(size, 16);
	}
	ALLOC_HOOK_BODY(HT_FN_MALLOC, size, real_malloc(size));
}

/* malloc, calloc and realloc, whose failure the program sees as NULL
 * anyway, go one step further: a call that is only counted is counted
 * first and the real function is then tail-called (no frame, no register
 * saved). A failed call would be counted as an allocation (and realloc's
 * as a free too); only requests under HT_SAMPLE_SPAN (1 MiB) take this
 * path, which fail only when the machine is out of memory: the countdown
 * never holds more (agent.h), so the one unsigned comparison with it also
 * sends every larger request, and a size no malloc can serve, to the full
 * hook. A countdown is at least 1 once drawn, 0 before. */
static inline bool sample_count_first(ht_thread_t *t, size_t size)
{
	if (HT_UNLIKELY((uint64_t)size >= (uint64_t)t->sample_left))
		return false;
	t->sample_left -= (int64_t)size;
	t->n_allocs++;
	t->n_bytes += size;
	return true;
}

HT_EXPORT void *malloc(size_t size)
{
	ht_thread_t *t = sampled_thread();
	if (HT_LIKELY(t != NULL) && HT_LIKELY(sample_count_first(t, size)))
		return real_malloc(size);
	SAMPLED_ALLOC_BODY(HT_FN_MALLOC, size, real_malloc(size), malloc_full(size), NULL);
}

static void *boot_calloc(size_t n, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(n, size, &total))
		return NULL;
	return boot_alloc(total, 16);
}

HT_NOINLINE static void *calloc_full(size_t n, size_t size)
{
	if (HT_UNLIKELY(!real_malloc)) {
		resolve_reals();
		if (!real_malloc)
			return boot_calloc(n, size);
	}
	ALLOC_HOOK_BODY(HT_FN_CALLOC, n * size, real_calloc(n, size));
}

HT_EXPORT void *calloc(size_t n, size_t size)
{
	size_t total;
	ht_thread_t *t = sampled_thread();
	if (HT_LIKELY(t != NULL) && HT_LIKELY(!__builtin_mul_overflow(n, size, &total)) &&
	    HT_LIKELY(sample_count_first(t, total)))
		return real_calloc(n, size);
	SAMPLED_ALLOC_BODY(HT_FN_CALLOC, n * size, real_calloc(n, size), calloc_full(n, size), NULL);
}

/* Where the free hooks' real function is: real_free, or real_libc_free
 * (read when called: a free may come first, and start the agent). */
typedef void (*const *real_free_at)(void *);

/* A sampled run's free that the filter could not clear. */
HT_NOINLINE static void free_sampled_slow(void *p, real_free_at real)
{
	if (HT_UNLIKELY(!should_record())) {
		if (deferring())
			defer_event(HT_EV_FREE, p, 0, ht_stamp());
		else
			count_finishing(0, 1, 0);
		(*real)(p);
		return;
	}
	ht_guard = HT_GUARD_HOOK;
	int e = errno;
	if (sampled_free_counted(p))
		record_free(p);
	errno = e;
	freeing_now = p;
	(*real)(p);
	freeing_now = NULL;
	GUARD_RELEASE();
}

HT_NOINLINE static void free_full(void *p, real_free_at real)
{
	if (HT_UNLIKELY(!should_record())) {
		if (deferring())
			defer_event(HT_EV_FREE, p, 0, ht_stamp());
		(*real)(p);
		return;
	}
	ht_guard = HT_GUARD_HOOK;
	int e = errno;
	record_free(p);
	errno = e;
	freeing_now = p;
	(*real)(p);
	freeing_now = NULL;
	GUARD_RELEASE();
}

/* In the handler of SIGABRT (agent/lifecycle.c), before the trace is
 * finished: when the abort came from inside a recorded free (glibc's
 * "double free detected", "free(): invalid pointer"), records BAD_FREE
 * with the free's stack, so that the report names where. The unwind
 * starts in the handler: its frames are ours, then the signal frame,
 * abort and the allocator's, then the free hook's (ours again), then the
 * program's, which are kept. */
void ht_bad_free_at_abort(void)
{
	void *p = freeing_now;
	ht_thread_t *t = ht_tls_thread;
	if (!p || !t)
		return;
	freeing_now = NULL;
	unsigned in_realloc = realloc_now;
	realloc_now = REALLOC_NONE;
	if (!ht_event_begin(t))
		return;
	if (in_realloc == REALLOC_UNRECORDED) {
		/* the realloc's free half, as a free's is before its call: the
		 * report pairs it with what was at p (a double or invalid
		 * free). The call reserved room for its events. */
		uint64_t now = ht_event_time(t);
		put_free(t, HT_EV_FREE, p, now);
	}
	void **f = t->frames;
	unsigned max = ht_opt_depth + 64 < HT_MAX_DEPTH + 16 ? ht_opt_depth + 64 : HT_MAX_DEPTH + 16;
	unsigned n = ht_unwind_walk(t, max);
	unsigned i = 0;
	while (i < n && ht_addr_in_agent((uintptr_t)f[i]))
		i++; /* the handler */
	while (i < n && !ht_addr_in_agent((uintptr_t)f[i]))
		i++; /* the signal frame, abort, the allocator */
	while (i < n && ht_addr_in_agent((uintptr_t)f[i]))
		i++; /* the free hook */
	unsigned out = 0;
	for (; i < n && out < ht_opt_depth; i++)
		if (!ht_addr_in_agent((uintptr_t)f[i]))
			f[out++] = f[i];
	uint64_t v[3] = {(uintptr_t)p, out ? ht_stack_intern(t, out) : 0,
			 in_realloc ? HT_FREE_REALLOC_ABORT : free_fn_now};
	ht_put_ext(t, HT_EXT_BAD_FREE, v, 3);
	atomic_store_explicit(&t->in_event, 0, memory_order_relaxed);
}

HT_NOINLINE static void free_entry(void *p, real_free_at real)
{
	if (HT_UNLIKELY(p == NULL))
		return;
	if (HT_UNLIKELY(is_boot(p)))
		return;
	if (ht_opt_sample_rate)
		free_sampled_slow(p, real);
	else
		free_full(p, real);
}

/* free's body, inline in free, __libc_free and operator delete (a call of
 * free from delete would go through the PLT). */
__attribute__((always_inline)) static inline void free_body(void *p, real_free_at real)
{
	/* sampling's common case: one filter load says p was not sampled (a
	 * free is counted whether recording is switched on or not, as in an
	 * exact run). The filter says "maybe" for NULL, the bootstrap blocks
	 * and, without sampling, every address (ht_sfilter_init): those take
	 * free_entry. */
	ht_thread_t *t;
	if (HT_LIKELY(!ht_sampled_maybe(p)) && HT_LIKELY((t = ht_tls_thread) != NULL) &&
	    HT_LIKELY(!ht_guard)) {
		t->n_frees++;
		(*real)(p);
		return;
	}
	free_entry(p, real);
}

HT_EXPORT void free(void *p)
{
	free_body(p, &real_free);
}

HT_EXPORT void __libc_free(void *p);
void __libc_free(void *p)
{
	if (HT_UNLIKELY(!libc_names_recorded) && real_malloc && !is_boot(p)) {
		real_libc_free(p);
		return;
	}
	free_body(p, &real_libc_free);
}

/* Common body of realloc, reallocarray and __libc_realloc (libc_name). */
static void *realloc_common(unsigned fn, void *old, size_t size, size_t nmemb,
			    size_t elem, bool libc_name)
{
	bool is_array = fn == HT_FN_REALLOCARRAY;
	if (HT_UNLIKELY(is_boot(old))) {
		/* A bootstrap block moves to the real heap; its old copy is
		 * never freed (it was never counted). */
		size_t want = size;
		if (is_array && __builtin_mul_overflow(nmemb, elem, &want)) {
			errno = ENOMEM;
			return NULL;
		}
		void *q = malloc(want);
		if (q)
			memcpy(q, old, boot_size(old) < want ? boot_size(old) : want);
		return q;
	}
	if (HT_UNLIKELY(!real_malloc))
		resolve_reals();
	void *(*real)(void *, size_t) = libc_name ? real_libc_realloc : real_realloc;
#define REAL_CALL() (is_array ? real_reallocarray(old, nmemb, elem) : real(old, size))
	if (HT_UNLIKELY(!should_record())) {
		uint64_t free_time = ht_stamp();
		void *q = REAL_CALL();
		bool freed = old && (q || (size == 0 && !is_array));
		if (!deferring()) {
			count_finishing(q != NULL, freed, q ? size : 0);
			return q;
		}
		if (freed)
			defer_event(HT_EV_FREE, old, 0, free_time);
		if (q)
			defer_event((uint8_t)(HT_EV_ALLOC | fn << 4), q, size, ht_stamp());
		return q;
	}
	ht_guard = HT_GUARD_HOOK;
	if (old == NULL) {
		void *q = REAL_CALL();
		if (q && !sample_skip(size)) {
			int e = errno;
			record_alloc_sampled(fn, q, size, 0);
			errno = e;
		}
		GUARD_RELEASE();
		return q;
	}
	bool sampling = ht_opt_sample_rate != 0;
	if (size == 0 && !is_array) {
		/* glibc frees the block and returns NULL: one free. */
		int e = errno;
		if (!sampling || sampled_free_counted(old))
			record_free(old);
		errno = e;
		freeing_now = old;
		realloc_now = REALLOC_FREE_RECORDED; /* record_free wrote it */
		void *q = real(old, 0);
		freeing_now = NULL;
		realloc_now = REALLOC_NONE;
		if (q && !sample_skip(0)) { /* an allocator that returns a minimal block */
			e = errno;
			record_alloc_sampled(fn, q, 0, 0);
			errno = e;
		}
		GUARD_RELEASE();
		return q;
	}
	int e = errno;
	/* Sampling: the old block leaves the set before the real call (another
	 * thread may get its address back at once). If it was not recorded,
	 * the free half is only counted and the new block is sampled like any
	 * allocation. */
	if (sampling && !(ht_sampled_maybe(old) && ht_sampled_remove(old))) {
		errno = e;
		void *q = REAL_CALL();
		e = errno; /* a failure's ENOMEM included */
		if (q) {
			ht_thread_t *t = ht_thread_get();
			if (t)
				t->n_frees++;
			if (!sample_skip(size))
				record_alloc_sampled(fn, q, size, 0);
		}
		errno = e;
		GUARD_RELEASE();
		return q;
	}
	uint64_t free_time;
	bool recording = realloc_begin(&free_time);
	errno = e;
	if (recording && old) {
		freeing_now = old;
		realloc_now = REALLOC_UNRECORDED;
	}
	void *q = REAL_CALL();
	e = errno;
	freeing_now = NULL;
	realloc_now = REALLOC_NONE;
	if (!recording) { /* the trace closed meanwhile: only counted */
		count_finishing(q != NULL, q != NULL, q ? size : 0);
	} else if (q) {
		/* a recorded old block: its free half is written; the new block is
		 * a sample or only counted */
		bool free_only = sampling && sample_skip(size);
		record_realloc(fn, old, q, size, free_time, free_only);
		if (sampling && !free_only &&
		    atomic_load_explicit(&ht_recording_on, memory_order_relaxed))
			ht_sampled_add(q);
	} else {
		realloc_abort(); /* failed: the old block is untouched */
		if (sampling)
			ht_sampled_add(old);
	}
	errno = e;
	GUARD_RELEASE();
	return q;
#undef REAL_CALL
}

/* Sampling's fast path for realloc: an old block that was not sampled (or
 * none) and a new one that is not either only count. realloc(p, 0), boot
 * blocks and sampled old blocks take realloc_common. */
HT_NOINLINE static void *realloc_sampled(void *old, size_t size)
{
	ht_thread_t *t = sampled_thread();
	if (HT_UNLIKELY(!t) ||
	    (old && (HT_UNLIKELY(!size) || ht_sampled_maybe(old)))) /* boot blocks: "maybe" */
		return realloc_common(HT_FN_REALLOC, old, size, 0, 0, false);
	void *q = real_realloc(old, size);
	if (HT_UNLIKELY(!q))
		return q; /* failed: the old block is untouched */
	if (old)
		t->n_frees++;
	int64_t left = t->sample_left - (int64_t)size;
	if (HT_UNLIKELY(left <= 0))
		return sampled_alloc_slow(HT_FN_REALLOC, q, size);
	t->sample_left = left;
	t->n_allocs++;
	t->n_bytes += size;
	return q;
}

HT_EXPORT void *realloc(void *old, size_t size)
{
	if (ht_opt_sample_rate) {
		/* counted first, as malloc (above): an old block that was not
		 * sampled (or none), and a new one that is not either */
		ht_thread_t *t = sampled_thread();
		if (HT_LIKELY(t != NULL) && HT_LIKELY(size != 0) &&
		    (!old || HT_LIKELY(!ht_sampled_maybe(old))) &&
		    HT_LIKELY(sample_count_first(t, size))) {
			if (old)
				t->n_frees++;
			return real_realloc(old, size);
		}
		return realloc_sampled(old, size); /* a thread state: reals resolved */
	}
	return realloc_common(HT_FN_REALLOC, old, size, 0, 0, false);
}

HT_EXPORT void *reallocarray(void *old, size_t nmemb, size_t elem)
{
	size_t size;
	if (__builtin_mul_overflow(nmemb, elem, &size))
		size = SIZE_MAX; /* the real call fails with ENOMEM */
	if (size == 0 && old != NULL) {
		/* reallocarray(p, 0, x) behaves as realloc(p, 0) */
		return realloc_common(HT_FN_REALLOC, old, 0, 0, 0, false);
	}
	return realloc_common(HT_FN_REALLOCARRAY, old, size, nmemb, elem, false);
}

HT_EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
	if (HT_UNLIKELY(!real_malloc)) {
		resolve_reals();
		if (!real_malloc) {
			*out = boot_alloc(size, align);
			return *out ? 0 : ENOMEM;
		}
	}
	if (HT_UNLIKELY(!should_record())) {
		int r = real_posix_memalign(out, align, size);
		if (r == 0 && deferring())
			defer_event(HT_EV_ALLOC | HT_FN_POSIX_MEMALIGN << 4, *out, size, ht_stamp());
		else if (r == 0)
			count_finishing(1, 0, size);
		return r;
	}
	ht_guard = HT_GUARD_HOOK;
	int r = real_posix_memalign(out, align, size);
	if (r == 0 && !sample_skip(size)) {
		int e = errno;
		record_alloc_sampled(HT_FN_POSIX_MEMALIGN, *out, size, 0);
		errno = e;
	}
	GUARD_RELEASE();
	return r;
}

HT_EXPORT void *aligned_alloc(size_t align, size_t size)
{
	if (HT_UNLIKELY(!real_malloc)) {
		resolve_reals();
		if (!real_malloc)
			return boot_alloc(size, align);
	}
	ALLOC_HOOK_BODY(HT_FN_ALIGNED_ALLOC, size, real_aligned_alloc(align, size));
}

HT_EXPORT void *memalign(size_t align, size_t size)
{
	if (HT_UNLIKELY(!real_malloc)) {
		resolve_reals();
		if (!real_malloc)
			return boot_alloc(size, align);
	}
	ALLOC_HOOK_BODY(HT_FN_MEMALIGN, size, real_memalign(align, size));
}

HT_EXPORT void *valloc(size_t size)
{
	if (HT_UNLIKELY(!real_malloc))
		resolve_reals();
	ALLOC_HOOK_BODY(HT_FN_VALLOC, size, real_valloc(size));
}

HT_EXPORT void *pvalloc(size_t size)
{
	if (HT_UNLIKELY(!real_malloc))
		resolve_reals();
	ALLOC_HOOK_BODY(HT_FN_PVALLOC, size, real_pvalloc(size));
}

HT_EXPORT size_t malloc_usable_size(void *p)
{
	if (p && is_boot(p))
		return boot_size(p);
	if (HT_UNLIKELY(!real_malloc))
		resolve_reals();
	return real_malloc_usable_size(p);
}

/* ---- glibc's own names: __libc_malloc and the others -----------------------
 * Counted as their public twins, as memcheck counts them; without the
 * sampling fast paths (ALLOC_HOOK_BODY samples). __libc_free is with free. */

/* Resolves the reals if needed; true if the call is only handed on. */
static inline bool libc_names_passed(void)
{
	if (HT_UNLIKELY(!real_malloc))
		resolve_reals();
	return HT_UNLIKELY(!libc_names_recorded) && real_malloc;
}

HT_EXPORT void *__libc_malloc(size_t size);
void *__libc_malloc(size_t size)
{
	if (libc_names_passed())
		return real_libc_malloc(size);
	if (HT_UNLIKELY(!real_malloc))
		return boot_alloc(size, 16);
	ALLOC_HOOK_BODY(HT_FN_MALLOC, size, real_libc_malloc(size));
}

HT_EXPORT void *__libc_calloc(size_t n, size_t size);
void *__libc_calloc(size_t n, size_t size)
{
	if (libc_names_passed())
		return real_libc_calloc(n, size);
	if (HT_UNLIKELY(!real_malloc))
		return boot_calloc(n, size);
	ALLOC_HOOK_BODY(HT_FN_CALLOC, n * size, real_libc_calloc(n, size));
}

HT_EXPORT void *__libc_realloc(void *old, size_t size);
void *__libc_realloc(void *old, size_t size)
{
	if (libc_names_passed() && !is_boot(old))
		return real_libc_realloc(old, size);
	return realloc_common(HT_FN_REALLOC, old, size, 0, 0, true);
}

HT_EXPORT void *__libc_memalign(size_t align, size_t size);
void *__libc_memalign(size_t align, size_t size)
{
	if (libc_names_passed())
		return real_libc_memalign(align, size);
	if (HT_UNLIKELY(!real_malloc))
		return boot_alloc(size, align);
	ALLOC_HOOK_BODY(HT_FN_MEMALIGN, size, real_libc_memalign(align, size));
}

HT_EXPORT void *__libc_valloc(size_t size);
void *__libc_valloc(size_t size)
{
	if (libc_names_passed())
		return real_libc_valloc(size);
	ALLOC_HOOK_BODY(HT_FN_VALLOC, size, real_libc_valloc(size));
}

HT_EXPORT void *__libc_pvalloc(size_t size);
void *__libc_pvalloc(size_t size)
{
	if (libc_names_passed())
		return real_libc_pvalloc(size);
	ALLOC_HOOK_BODY(HT_FN_PVALLOC, size, real_libc_pvalloc(size));
}

/* ---- C++ operator new and delete -------------------------------------------
 * The common case is served here, from the real malloc, exactly as
 * libstdc++ does it (its operator new is malloc with size 0 taken as 1, its
 * delete is free), so a new costs one call and is counted once. When the
 * real allocation fails, the guard is released and the next definition
 * (libstdc++) takes over: it runs the new_handler, throws bad_alloc, or
 * returns NULL for nothrow, and what it allocates on the way (the exception
 * object) is counted like any program allocation. */

static void *next_symbol(const char *name)
{
	ht_guard++;
	void *f = next_def(name);
	ht_guard--;
	if (!f) {
		ht_log("no next definition of ", name);
		abort();
	}
	return f;
}

#define NEXT(var, name)                                                        \
	if (HT_UNLIKELY(!var))                                                 \
	*(void **)&var = next_symbol(name)

/* libstdc++ raises a power of two below a pointer's to a pointer's
 * (posix_memalign refuses it); a bad one (0, or not a power of two) fails
 * here, and the next definition throws as the program expects. */
static inline void *real_aligned(size_t align, size_t n)
{
	void *p = NULL;
	if (align < sizeof(void *) && align && !(align & (align - 1)))
		align = sizeof(void *);
	return real_posix_memalign(&p, align, n ? n : 1) == 0 ? p : NULL;
}

/* ---- replaced operators --------------------------------------------------
 * A program may replace any of these functions, and may replace only some:
 * libstdc++'s new[], nothrow new, sized and array deletes call the plain
 * ones, so replacing operator new and operator delete(void *) is enough
 * for all of them to reach the program's. Ours go straight to malloc and
 * free, so each variant whose libstdc++ version would call a replaced
 * function hands the call to that version (the next definition) instead,
 * recording nothing itself: the program's operator reaches malloc, or
 * not, on its own. A replacement in the executable takes every call of
 * its name before ours; one in a library loaded after us is found as the
 * next definition of a name that is not libstdc++'s (or libc++'s). An
 * allocator library that replaces malloc and operator new alike (jemalloc,
 * tcmalloc) is the exception: its operators call its malloc directly, and
 * would never reach ours, but ours calling its malloc and free is what its
 * own do; they are treated as the C++ runtime's. */
enum {
	CXX_NEW = 1 << 0, CXX_NEW_ARRAY = 1 << 1, CXX_NEW_NT = 1 << 2, CXX_NEW_ARRAY_NT = 1 << 3,
	CXX_NEW_AL = 1 << 4, CXX_NEW_ARRAY_AL = 1 << 5, CXX_NEW_AL_NT = 1 << 6,
	CXX_NEW_ARRAY_AL_NT = 1 << 7, CXX_DEL = 1 << 8, CXX_DEL_ARRAY = 1 << 9,
	CXX_DEL_SIZED = 1 << 10, CXX_DEL_ARRAY_SIZED = 1 << 11, CXX_DEL_NT = 1 << 12,
	CXX_DEL_ARRAY_NT = 1 << 13, CXX_DEL_AL = 1 << 14, CXX_DEL_ARRAY_AL = 1 << 15,
	CXX_DEL_SIZED_AL = 1 << 16, CXX_DEL_ARRAY_SIZED_AL = 1 << 17, CXX_DEL_AL_NT = 1 << 18,
	CXX_DEL_ARRAY_AL_NT = 1 << 19, CXX_NOPS = 20
};

static const char *const cxx_names[CXX_NOPS] = {
	"_Znwm", "_Znam", "_ZnwmRKSt9nothrow_t", "_ZnamRKSt9nothrow_t",
	"_ZnwmSt11align_val_t", "_ZnamSt11align_val_t", "_ZnwmSt11align_val_tRKSt9nothrow_t",
	"_ZnamSt11align_val_tRKSt9nothrow_t", "_ZdlPv", "_ZdaPv", "_ZdlPvm", "_ZdaPvm",
	"_ZdlPvRKSt9nothrow_t", "_ZdaPvRKSt9nothrow_t", "_ZdlPvSt11align_val_t",
	"_ZdaPvSt11align_val_t", "_ZdlPvmSt11align_val_t", "_ZdaPvmSt11align_val_t",
	"_ZdlPvSt11align_val_tRKSt9nothrow_t", "_ZdaPvSt11align_val_tRKSt9nothrow_t",
};

/* Each variant with what its libstdc++ version calls, transitively. */
#define CXX_CHAIN_NEW CXX_NEW
#define CXX_CHAIN_NEW_ARRAY (CXX_NEW_ARRAY | CXX_NEW)
#define CXX_CHAIN_NEW_NT (CXX_NEW_NT | CXX_NEW)
#define CXX_CHAIN_NEW_ARRAY_NT (CXX_NEW_ARRAY_NT | CXX_NEW_ARRAY | CXX_NEW)
#define CXX_CHAIN_NEW_AL CXX_NEW_AL
#define CXX_CHAIN_NEW_ARRAY_AL (CXX_NEW_ARRAY_AL | CXX_NEW_AL)
#define CXX_CHAIN_NEW_AL_NT (CXX_NEW_AL_NT | CXX_NEW_AL)
#define CXX_CHAIN_NEW_ARRAY_AL_NT (CXX_NEW_ARRAY_AL_NT | CXX_NEW_ARRAY_AL | CXX_NEW_AL)
#define CXX_CHAIN_DEL CXX_DEL
#define CXX_CHAIN_DEL_ARRAY (CXX_DEL_ARRAY | CXX_DEL)
#define CXX_CHAIN_DEL_SIZED (CXX_DEL_SIZED | CXX_DEL)
#define CXX_CHAIN_DEL_ARRAY_SIZED (CXX_DEL_ARRAY_SIZED | CXX_DEL_ARRAY | CXX_DEL)
#define CXX_CHAIN_DEL_NT (CXX_DEL_NT | CXX_DEL)
#define CXX_CHAIN_DEL_ARRAY_NT (CXX_DEL_ARRAY_NT | CXX_DEL_ARRAY | CXX_DEL)
#define CXX_CHAIN_DEL_AL CXX_DEL_AL
#define CXX_CHAIN_DEL_ARRAY_AL (CXX_DEL_ARRAY_AL | CXX_DEL_AL)
#define CXX_CHAIN_DEL_SIZED_AL (CXX_DEL_SIZED_AL | CXX_DEL_AL)
#define CXX_CHAIN_DEL_ARRAY_SIZED_AL (CXX_DEL_ARRAY_SIZED_AL | CXX_DEL_ARRAY_AL | CXX_DEL_AL)
#define CXX_CHAIN_DEL_AL_NT (CXX_DEL_AL_NT | CXX_DEL_AL)
#define CXX_CHAIN_DEL_ARRAY_AL_NT (CXX_DEL_ARRAY_AL_NT | CXX_DEL_ARRAY_AL | CXX_DEL_AL)

/* The replaced variants (CXX_* bits); -1 until looked up. */
static _Atomic int cxx_replaced = -1;

/* True if f is a C++ runtime's own definition, or the allocator's whose
 * malloc we call (in the object at malloc_base). */
static bool cxx_runtime(void *f, void *malloc_base)
{
	Dl_info info;
	if (!dladdr(f, &info) || !info.dli_fname)
		return false;
	if (malloc_base && info.dli_fbase == malloc_base)
		return true;
	const char *base = info.dli_fname;
	for (const char *c = base; *c; c++)
		if (*c == '/')
			base = c + 1;
	return !ht_strncmp(base, "libstdc++.so", 12) || !ht_strncmp(base, "libc++.so", 9) ||
	       !ht_strncmp(base, "libc++abi.so", 12);
}

HT_NOINLINE HT_COLD static int cxx_lookup(void)
{
	int e = errno;
	ht_guard++;
	Dl_info info;
	void *m = next_def("malloc"); /* real_malloc, resolved or not */
	void *malloc_base = m && dladdr(m, &info) ? info.dli_fbase : NULL;
	int mask = 0;
	for (int i = 0; i < CXX_NOPS; i++) {
		/* attached, the process's own definition (not a PLT entry of a
		 * non-PIE executable's standing for it) */
		void *f = ht_attaching ? next_def(cxx_names[i]) : dlsym(RTLD_DEFAULT, cxx_names[i]);
		if (f && !ht_addr_in_agent((uintptr_t)f) &&
		    !(ht_attaching && cxx_runtime(f, malloc_base)))
			mask |= 1 << i; /* the executable's, or a library's before us */
		else if ((f = next_def(cxx_names[i])) && !cxx_runtime(f, malloc_base))
			mask |= 1 << i; /* a library's after us */
	}
	ht_guard--;
	errno = e;
	atomic_store_explicit(&cxx_replaced, mask, memory_order_relaxed);
	return mask;
}

/* True when the variant whose chain is `chain` must hand the call on. */
static inline bool cxx_pass(int chain)
{
	int m = atomic_load_explicit(&cxx_replaced, memory_order_relaxed);
	if (HT_LIKELY(!(m & chain)))
		return false;
	return m == -1 ? (cxx_lookup() & chain) != 0 : true;
}

/* sym: the mangled name; alloc: the real allocation expression; args: the
 * call of the next definition when it fails. */
#define NEW_HOOK(sym, fn, chain, params, alloc, args, size)                    \
	HT_EXPORT void *sym params;                                            \
	HT_NOINLINE static void *sym##_full params;                            \
	static void *(*sym##_next) params;                                     \
	/* sampling: a failure takes the full path, which calls next */       \
	void *sym params                                                       \
	{                                                                      \
		if (HT_UNLIKELY(cxx_pass(chain))) {                            \
			NEXT(sym##_next, #sym);                                \
			return sym##_next args;                                \
		}                                                              \
		SAMPLED_ALLOC_BODY(fn, size, alloc, sym##_full args,           \
				   sym##_full args);                           \
	}                                                                      \
	static void *sym##_full params                                         \
	{                                                                      \
		if (HT_UNLIKELY(!real_malloc))                                 \
			resolve_reals();                                       \
		if (HT_LIKELY(should_record())) {                              \
			ht_guard = HT_GUARD_HOOK;                              \
			void *p = alloc;                                       \
			if (HT_LIKELY(p != NULL)) {                            \
				if (!sample_skip(size)) {                      \
					int e = errno;                         \
					record_alloc_sampled(fn, p, size, 0);  \
					errno = e;                             \
				}                                              \
				GUARD_RELEASE();                               \
				return p;                                      \
			}                                                      \
			GUARD_RELEASE();                                       \
		}                                                              \
		NEXT(sym##_next, #sym);                                        \
		return sym##_next args;                                        \
	}

#define DELETE_HOOK(sym, kind, chain, params, ptr, args)                       \
	HT_EXPORT void sym params;                                             \
	static void (*sym##_next) params;                                      \
	void sym params                                                        \
	{                                                                      \
		if (HT_UNLIKELY(cxx_pass(chain))) {                            \
			NEXT(sym##_next, #sym);                                \
			sym##_next args;                                       \
			return;                                                \
		}                                                              \
		if (HT_UNLIKELY(ptr == NULL))                                  \
			return;                                                \
		free_fn_now = kind;                                            \
		free_body(ptr, &real_free);                                    \
		free_fn_now = HT_FREE_FREE;                                    \
	}

typedef struct nothrow_s nothrow_t; /* std::nothrow_t, passed by reference */

/* operator new(size_t), new[](size_t), and their nothrow / aligned forms */
NEW_HOOK(_Znwm, HT_FN_NEW, CXX_CHAIN_NEW, (size_t n), real_malloc(n ? n : 1), (n), n)
NEW_HOOK(_Znam, HT_FN_NEW_ARRAY, CXX_CHAIN_NEW_ARRAY, (size_t n), real_malloc(n ? n : 1), (n), n)
NEW_HOOK(_ZnwmRKSt9nothrow_t, HT_FN_NEW, CXX_CHAIN_NEW_NT, (size_t n, const nothrow_t *t),
	 real_malloc(n ? n : 1), (n, t), n)
NEW_HOOK(_ZnamRKSt9nothrow_t, HT_FN_NEW_ARRAY, CXX_CHAIN_NEW_ARRAY_NT,
	 (size_t n, const nothrow_t *t), real_malloc(n ? n : 1), (n, t), n)
NEW_HOOK(_ZnwmSt11align_val_t, HT_FN_NEW, CXX_CHAIN_NEW_AL, (size_t n, size_t a),
	 real_aligned(a, n), (n, a), n)
NEW_HOOK(_ZnamSt11align_val_t, HT_FN_NEW_ARRAY, CXX_CHAIN_NEW_ARRAY_AL, (size_t n, size_t a),
	 real_aligned(a, n), (n, a), n)
NEW_HOOK(_ZnwmSt11align_val_tRKSt9nothrow_t, HT_FN_NEW, CXX_CHAIN_NEW_AL_NT,
	 (size_t n, size_t a, const nothrow_t *t), real_aligned(a, n), (n, a, t), n)
NEW_HOOK(_ZnamSt11align_val_tRKSt9nothrow_t, HT_FN_NEW_ARRAY, CXX_CHAIN_NEW_ARRAY_AL_NT,
	 (size_t n, size_t a, const nothrow_t *t), real_aligned(a, n), (n, a, t), n)

/* operator delete / delete[]: plain, sized, nothrow, aligned, combinations.
 * All are free() in libstdc++ on glibc; ours records and frees (unless a
 * replaced one is in the chain). The size, alignment and nothrow tag are
 * not needed for that. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
DELETE_HOOK(_ZdlPv, HT_FREE_DELETE, CXX_CHAIN_DEL, (void *p), p, (p))
DELETE_HOOK(_ZdaPv, HT_FREE_DELETE_ARRAY, CXX_CHAIN_DEL_ARRAY, (void *p), p, (p))
DELETE_HOOK(_ZdlPvm, HT_FREE_DELETE, CXX_CHAIN_DEL_SIZED, (void *p, size_t n), p, (p, n))
DELETE_HOOK(_ZdaPvm, HT_FREE_DELETE_ARRAY, CXX_CHAIN_DEL_ARRAY_SIZED, (void *p, size_t n), p, (p, n))
DELETE_HOOK(_ZdlPvRKSt9nothrow_t, HT_FREE_DELETE, CXX_CHAIN_DEL_NT, (void *p, const nothrow_t *t), p, (p, t))
DELETE_HOOK(_ZdaPvRKSt9nothrow_t, HT_FREE_DELETE_ARRAY, CXX_CHAIN_DEL_ARRAY_NT, (void *p, const nothrow_t *t), p,
	    (p, t))
DELETE_HOOK(_ZdlPvSt11align_val_t, HT_FREE_DELETE, CXX_CHAIN_DEL_AL, (void *p, size_t a), p, (p, a))
DELETE_HOOK(_ZdaPvSt11align_val_t, HT_FREE_DELETE_ARRAY, CXX_CHAIN_DEL_ARRAY_AL, (void *p, size_t a), p, (p, a))
DELETE_HOOK(_ZdlPvmSt11align_val_t, HT_FREE_DELETE, CXX_CHAIN_DEL_SIZED_AL, (void *p, size_t n, size_t a), p,
	    (p, n, a))
DELETE_HOOK(_ZdaPvmSt11align_val_t, HT_FREE_DELETE_ARRAY, CXX_CHAIN_DEL_ARRAY_SIZED_AL,
	    (void *p, size_t n, size_t a), p, (p, n, a))
DELETE_HOOK(_ZdlPvSt11align_val_tRKSt9nothrow_t, HT_FREE_DELETE, CXX_CHAIN_DEL_AL_NT,
	    (void *p, size_t a, const nothrow_t *t), p, (p, a, t))
DELETE_HOOK(_ZdaPvSt11align_val_tRKSt9nothrow_t, HT_FREE_DELETE_ARRAY, CXX_CHAIN_DEL_ARRAY_AL_NT,
	    (void *p, size_t a, const nothrow_t *t), p, (p, a, t))
#pragma GCC diagnostic pop

/* ---- the program's own allocators (heaptrail.h) -------------------------------
 * A program that manages memory itself (arenas, pools, mmap'd chunks, GC
 * heaps) reports its blocks here; they become ordinary ALLOC/FREE/REALLOC
 * events (function HT_FN_CUSTOM) and appear in every report and export, as
 * valgrind's MALLOCLIKE_BLOCK requests do in memcheck's. The stack is the
 * program's call of the heaptrail.h wrapper (always inlined into it). */

/* No block is larger than PTRDIFF_MAX (malloc refuses such sizes): a size
 * above it is a bug of the caller (a size of -1), and summed into the
 * totals it would wrap them. Such a block is not recorded; the END record
 * says some were refused. */
static inline bool size_refused(size_t size)
{
	if (HT_LIKELY(size <= PTRDIFF_MAX))
		return false;
	atomic_fetch_or(&ht_agent_flags, HT_AGENT_SIZE_REFUSED);
	return true;
}

HT_EXPORT int heaptrail_agent_alloc(void *p, size_t size);
int heaptrail_agent_alloc(void *p, size_t size)
{
	if (!p || !should_record() || size_refused(size))
		return 0;
	ht_guard = HT_GUARD_HOOK;
	int e = errno;
	if (!sample_skip(size))
		record_alloc_sampled(HT_FN_CUSTOM, p, size, 0);
	errno = e;
	GUARD_RELEASE();
	return 0;
}

HT_EXPORT int heaptrail_agent_free(void *p);
int heaptrail_agent_free(void *p)
{
	if (!p || !should_record())
		return 0;
	ht_guard = HT_GUARD_HOOK;
	int e = errno;
	if (!ht_opt_sample_rate || sampled_free_counted(p))
		record_free(p);
	errno = e;
	GUARD_RELEASE();
	return 0;
}

HT_EXPORT int heaptrail_agent_realloc(void *old, void *p, size_t size);
int heaptrail_agent_realloc(void *old, void *p, size_t size)
{
	if (!old)
		return heaptrail_agent_alloc(p, size);
	if (!p || size > PTRDIFF_MAX) {
		heaptrail_agent_free(old);
		return heaptrail_agent_alloc(p, size); /* none, or refused */
	}
	if (!should_record())
		return 0;
	if (ht_opt_sample_rate) {
		/* both halves happen now, each sampled on its own */
		heaptrail_agent_free(old);
		return heaptrail_agent_alloc(p, size);
	}
	ht_guard = HT_GUARD_HOOK;
	int e = errno;
	/* The program moved the block already: both halves happen now. */
	uint64_t free_time;
	if (realloc_begin(&free_time))
		record_realloc(HT_FN_CUSTOM, old, p, size, free_time, false);
	errno = e;
	GUARD_RELEASE();
	return 0;
}

/* Pools of the program's own allocator: blocks allocated from a pool die
 * together when it is reset or destroyed (the reader frees them). A pool is
 * named by the address of the program's pool object. */
HT_EXPORT int heaptrail_agent_pool_alloc(const void *pool, void *p, size_t size);
int heaptrail_agent_pool_alloc(const void *pool, void *p, size_t size)
{
	if (!p || !pool || !should_record() || size_refused(size))
		return 0;
	ht_guard = HT_GUARD_HOOK;
	int e = errno;
	if (!sample_skip(size))
		record_alloc_sampled(HT_FN_CUSTOM, p, size, (uintptr_t)pool);
	errno = e;
	GUARD_RELEASE();
	return 0;
}

/* ---- process events: exit, _exit, exec, dlclose ----------------------------
 * dlopen is not interposed: glibc resolves a dlopen'ed name against the
 * caller's RUNPATH, and a wrapper would become the caller. New objects are
 * noticed instead when a new stack holds an address in none of the known
 * modules (agent/stacks.c). */

/* A vfork child (our memory under another pid) that calls exit() runs
 * the process's exit handlers, the agent's among them, and uses them up:
 * the parent's own exit then runs none, and finishes the trace itself. */
static bool exit_handlers_used;

HT_EXPORT void exit(int status)
{
	/* The leak scan at the end reads this thread's stack from here up:
	 * the exit machinery's frames below hold stale copies of pointers the
	 * program dropped. The program's callee-saved registers are spilled
	 * into this frame first, so that a pointer held only there counts. */
	__builtin_unwind_init();
	ht_note_exit_sp((uintptr_t)__builtin_frame_address(0) - 64);
	if (HT_UNLIKELY(!real_malloc))
		resolve_reals();
	if (getpid() != ht_pid) {
		exit_handlers_used = true;
		real_exit(status);
	}
	atomic_store(&ht_exit_code, status & 0xff);
	atomic_store(&ht_exit_code_known, true);
	if (exit_handlers_used)
		ht_finish(HT_END_EXIT, (unsigned)status & 0xff);
	real_exit(status);
}

/* quick_exit runs the at_quick_exit handlers, the agent's (registered at
 * start, so run last) finishes the trace. */
HT_EXPORT void quick_exit(int status)
{
	__builtin_unwind_init(); /* as in exit() */
	ht_note_exit_sp((uintptr_t)__builtin_frame_address(0) - 64);
	if (HT_UNLIKELY(!real_malloc))
		resolve_reals();
	if (getpid() == ht_pid) {
		atomic_store(&ht_exit_code, status & 0xff);
		atomic_store(&ht_exit_code_known, true);
	}
	real_quick_exit(status);
}

HT_EXPORT void _exit(int status)
{
	__builtin_unwind_init(); /* as in exit() */
	ht_note_exit_sp((uintptr_t)__builtin_frame_address(0) - 64);
	if (HT_UNLIKELY(!real_malloc))
		resolve_reals();
	ht_finish(HT_END_UNDERSCORE_EXIT, (unsigned)status & 0xff);
	real__exit(status);
}

HT_EXPORT void _Exit(int status)
{
	_exit(status);
}

/* daemon(3) as glibc has it, but for its parent's end: glibc's leaves by
 * an _exit inside libc, which no hook sees, so the parent's trace lost
 * everything not yet written (all it did before, for a short program).
 * Here the parent leaves by the _exit above. */
HT_EXPORT int daemon(int nochdir, int noclose)
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid > 0)
		_exit(0);
	if (setsid() < 0)
		return -1;
	if (!nochdir)
		(void)chdir("/");
	if (!noclose) {
		int fd = open("/dev/null", O_RDWR);
		if (fd < 0)
			return -1;
		struct stat st;
		if (fstat(fd, &st) != 0 || !S_ISCHR(st.st_mode) || st.st_rdev != makedev(1, 3)) {
			close(fd);
			errno = ENODEV; /* not the null device: glibc's refusal */
			return -1;
		}
		(void)dup2(fd, STDIN_FILENO);
		(void)dup2(fd, STDOUT_FILENO);
		(void)dup2(fd, STDERR_FILENO);
		if (fd > 2)
			close(fd);
	}
	return 0;
}

HT_EXPORT int dlclose(void *handle)
{
	if (HT_UNLIKELY(!real_malloc))
		resolve_reals();
	if (atomic_load(&ht_state) == HT_STATE_RECORDING && !ht_guard) {
		/* while the library is there to look at */
		int e = errno;
		ht_guard++;
		ht_modules_check_bypass(handle);
		ht_guard--;
		errno = e;
	}
	int r = real_dlclose(handle);
	if (r == 0 && atomic_load(&ht_state) == HT_STATE_RECORDING && !ht_guard) {
		int e = errno;
		ht_guard++;
		ht_modules_refresh();
		ht_guard--;
		errno = e;
	}
	return r;
}

/* Runs exec_call with the trace marked and flushed; resumes recording if the
 * exec fails (errno is kept from the failed call). */
#define EXEC_WRAP(path, exec_call)                                             \
	do {                                                                   \
		if (HT_UNLIKELY(!real_malloc))                                 \
			resolve_reals();                                       \
		bool flushed_ = ht_before_exec(path);                          \
		int r_ = exec_call;                                            \
		int e_ = errno;                                                \
		ht_after_failed_exec(flushed_);                                \
		errno = e_;                                                    \
		return r_;                                                     \
	} while (0)

HT_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	EXEC_WRAP(path, real_execve(path, argv, envp));
}

HT_EXPORT int execv(const char *path, char *const argv[])
{
	EXEC_WRAP(path, real_execv(path, argv));
}

HT_EXPORT int execvp(const char *file, char *const argv[])
{
	EXEC_WRAP(file, real_execvp(file, argv));
}

HT_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	EXEC_WRAP(file, real_execvpe(file, argv, envp));
}

HT_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	EXEC_WRAP("(fexecve)", real_fexecve(fd, argv, envp));
}

HT_EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
		       int flags)
{
	if (HT_UNLIKELY(!real_malloc))
		resolve_reals();
	if (!real_execveat) {
		errno = ENOSYS;
		return -1;
	}
	EXEC_WRAP(*path ? path : "(execveat)", real_execveat(dirfd, path, argv, envp, flags));
}

/* The execl family is variadic: collect the arguments on the stack and call
 * the matching execv form (what glibc itself does). */
#define COLLECT_ARGS(first, ap, argv)                                          \
	size_t argc_ = 1;                                                      \
	va_start(ap, first);                                                   \
	while (va_arg(ap, const char *))                                       \
		argc_++;                                                       \
	va_end(ap);                                                            \
	const char *argv[argc_ + 1];                                           \
	argv[0] = first;                                                       \
	va_start(ap, first);                                                   \
	for (size_t i_ = 1; i_ <= argc_; i_++)                                 \
		argv[i_] = va_arg(ap, const char *)

HT_EXPORT int execl(const char *path, const char *arg, ...)
{
	va_list ap;
	COLLECT_ARGS(arg, ap, argv);
	va_end(ap);
	EXEC_WRAP(path, real_execv(path, (char *const *)argv));
}

HT_EXPORT int execlp(const char *file, const char *arg, ...)
{
	va_list ap;
	COLLECT_ARGS(arg, ap, argv);
	va_end(ap);
	EXEC_WRAP(file, real_execvp(file, (char *const *)argv));
}

HT_EXPORT int execle(const char *path, const char *arg, ...)
{
	va_list ap;
	COLLECT_ARGS(arg, ap, argv);
	char *const *envp = va_arg(ap, char *const *);
	va_end(ap);
	EXEC_WRAP(path, real_execve(path, (char *const *)argv, envp));
}

/* ---- pthread_getattr_np ------------------------------------------------------
 * glibc holds the thread's own lock while it allocates in there (the cpu
 * set; for the main thread, fopen of /proc/self/maps). A thread whose first
 * heap call is that one (Rust's runtime on the main thread, the JVM's on
 * each of its threads) gets its state made inside it, and the state wants
 * the thread's stack bounds from pthread_getattr_np: the same lock, a
 * deadlock. While the program is in here the agent leaves the bounds for
 * later (ht_in_getattr, agent/thread.c). */
__thread int ht_in_getattr;

HT_EXPORT int pthread_getattr_np(pthread_t th, pthread_attr_t *attr)
{
	if (HT_UNLIKELY(!real_pthread_getattr_np))
		resolve_reals();
	ht_in_getattr++;
	int r = real_pthread_getattr_np(th, attr);
	ht_in_getattr--;
	return r;
}

/* ---- signal dispositions ----------------------------------------------------
 * The agent catches fatal signals the program left at SIG_DFL (lifecycle.c).
 * The program must not see that: Python, for one, installs its SIGINT
 * handler only if it finds SIG_DFL. So a disposition that is our handler
 * reads back as SIG_DFL; a handler the program installs replaces ours. */

/* While recording, a program that sets SIG_DFL for a fatal signal gets our
 * handler instead, which finishes the trace and then dies by SIG_DFL: the
 * same end, with the trace complete (Python resets SIGINT to SIG_DFL and
 * kills itself after an uncaught KeyboardInterrupt). */
static bool keep_ours(int sig, sighandler_t handler, int flags)
{
	return handler == SIG_DFL && !(flags & SA_SIGINFO) && ht_is_fatal_signal(sig) &&
	       atomic_load(&ht_state) == HT_STATE_RECORDING;
}

/* The program's handlers, run through signal_trampoline while recording
 * ("signal handlers" above): per signal, the handler and the sigaction the
 * program gave, which is what it reads back; and the SIG_DFL the program
 * set that keep_ours replaced. Updated without a lock (a handler may call
 * sigaction): racing sigaction calls on one signal are the program's race
 * already. */
#define HT_NSIG 65
static struct sigaction prog_act[HT_NSIG];
static void *_Atomic prog_handler[HT_NSIG];
static _Atomic bool prog_siginfo[HT_NSIG];
static bool prog_dfl[HT_NSIG]; /* prog_act holds a SIG_DFL that keep_ours replaced */

/* Signals whose handlers must run at once: those the thread's own code
 * raises where it runs (a fault, or abort, which goes on to SIG_DFL if the
 * handler returns); and a real-time signal whose handler wants the
 * alternate stack, which run_kept_handler would not give it. */
static bool run_at_once(int sig)
{
	return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE ||
	       sig == SIGTRAP || sig == SIGSYS || sig == SIGABRT ||
	       (sig >= SIGRTMIN && (prog_act[sig].sa_flags & SA_ONSTACK));
}

/* Keeps sig for the end of the interrupted hook ("signal handlers"
 * above); false when it must run now. */
static bool keep_for_later(int sig, const siginfo_t *si, void *uc)
{
	ht_thread_t *t = ht_tls_thread;
	if (!t || !si || !uc || run_at_once(sig) ||
	    (prog_act[sig].sa_flags & SA_RESETHAND) ||
	    t->sig_tail - t->sig_head >= HT_SIG_PENDING_MAX)
		return false;
	struct ht_pending_signal *p = &t->sig_pending[t->sig_tail % HT_SIG_PENDING_MAX];
	p->sig = sig;
	p->info = *si;
	t->sig_tail++;
	/* blocked when the hook goes on, until send_pending_signals; and so
	 * is every signal kept before: this handler may have interrupted
	 * another's (signals delivered together stack their frames), whose
	 * blocking of its signal this context's mask, from before, would undo */
	for (uint32_t i = t->sig_head; i != t->sig_tail; i++)
		sigaddset(&((ucontext_t *)uc)->uc_sigmask, t->sig_pending[i % HT_SIG_PENDING_MAX].sig);
	ht_deferred_pending = 1;
	return true;
}

static void signal_trampoline(int sig, siginfo_t *si, void *uc);

/* Calls the handler of the real-time signal p that the trampoline kept, as
 * the kernel would have, but at the end of the hook: with the handler's
 * mask added (and the signal, unless SA_NODEFER), the signal's siginfo,
 * and a context of this point. False if the program changed the action
 * meanwhile (the signal is then sent again, to meet the new one). */
static bool run_kept_handler(const struct ht_pending_signal *p)
{
	int sig = p->sig;
	void *h = atomic_load_explicit(&prog_handler[sig], memory_order_acquire);
	struct sigaction cur;
	if (!h || real_sigaction(sig, NULL, &cur) != 0 || !(cur.sa_flags & SA_SIGINFO) ||
	    cur.sa_sigaction != signal_trampoline)
		return false;
	sigset_t mask = prog_act[sig].sa_mask, old;
	if (!(prog_act[sig].sa_flags & SA_NODEFER))
		sigaddset(&mask, sig);
	pthread_sigmask(SIG_BLOCK, &mask, &old);
	ucontext_t uc;
	getcontext(&uc);
	siginfo_t info = p->info;
	ht_in_handler++;
	if (atomic_load_explicit(&prog_siginfo[sig], memory_order_relaxed))
		((void (*)(int, siginfo_t *, void *))h)(sig, &info, &uc);
	else
		((void (*)(int))h)(sig);
	ht_in_handler--;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return true;
}

static void signal_trampoline(int sig, siginfo_t *si, void *uc)
{
	int saved = ht_guard;
	if (saved == HT_GUARD_HOOK && keep_for_later(sig, si, uc))
		return;
	if (saved)
		ht_guard = HT_GUARD_DEFER; /* it interrupted the agent */
	void *h = atomic_load_explicit(&prog_handler[sig], memory_order_acquire);
	ht_in_handler++; /* left up by a handler that jumps out: harmless */
	if (atomic_load_explicit(&prog_siginfo[sig], memory_order_relaxed))
		((void (*)(int, siginfo_t *, void *))h)(sig, si, uc);
	else
		((void (*)(int))h)(sig);
	ht_in_handler--;
	/* SA_RESETHAND: the kernel put SIG_DFL back before the handler ran.
	 * A crash handler that returns then dies of the fault again, by
	 * SIG_DFL: ours takes it instead, finishes the trace, and dies the
	 * same way (as keep_ours does for a SIG_DFL the program sets). */
	if ((prog_act[sig].sa_flags & SA_RESETHAND) && ht_is_fatal_signal(sig) &&
	    atomic_load_explicit(&ht_state, memory_order_relaxed) == HT_STATE_RECORDING) {
		struct sigaction cur, ours;
		/* (the kernel leaves SA_SIGINFO set: the handler alone says) */
		if (real_sigaction(sig, NULL, &cur) == 0 && cur.sa_handler == SIG_DFL) {
			prog_dfl[sig] = false;
			ht_fatal_sigaction(&ours);
			real_sigaction(sig, &ours, NULL);
		}
	}
	ht_guard = saved;
}

/* The handler act installs, if the trampoline should run it: a function
 * of the program's, while recording. */
static void *wrappable(int sig, const struct sigaction *act)
{
	if (!act || sig <= 0 || sig >= HT_NSIG ||
	    atomic_load_explicit(&ht_state, memory_order_relaxed) != HT_STATE_RECORDING)
		return NULL;
	void *h = act->sa_flags & SA_SIGINFO ? (void *)act->sa_sigaction : (void *)act->sa_handler;
	if (h == (void *)SIG_DFL || h == (void *)SIG_IGN || h == (void *)SIG_HOLD ||
	    ht_addr_in_agent((uintptr_t)h))
		return NULL;
	return h;
}

/* A disposition read from the kernel (old), as the program set it: the
 * trampoline reads back as the program's handler and flags, our fatal
 * handler as the SIG_DFL the program set (or never changed), the default
 * leak signal's as SIG_DFL. The kernel's own additions stay (glibc's
 * SA_RESTORER, the mask without SIGKILL and SIGSTOP). prev: prog_act[sig]
 * and prog_dfl[sig] before the call that returned old (sig's). */
#ifndef SA_RESTORER
#define SA_RESTORER 0x04000000 /* the kernel's: glibc sets it, headers do not show it */
#endif

static void as_program_set(struct sigaction *old, const struct sigaction *prev, bool prev_dfl)
{
	bool info = old->sa_flags & SA_SIGINFO;
	if (info && old->sa_sigaction == signal_trampoline) {
		int keep = old->sa_flags & ~SA_SIGINFO;
		if (prev->sa_flags & SA_SIGINFO)
			old->sa_sigaction = prev->sa_sigaction;
		else
			old->sa_handler = prev->sa_handler;
		old->sa_flags = keep | (prev->sa_flags & SA_SIGINFO);
	} else if (!info && (old->sa_handler == ht_fatal_signal_handler ||
			     (old->sa_handler == ht_leak_signal_handler && ht_opt_leak_signal < 0))) {
		int restorer = old->sa_flags & SA_RESTORER;
		if (prev_dfl && old->sa_handler == ht_fatal_signal_handler) {
			*old = *prev;
			old->sa_flags |= restorer;
			sigdelset(&old->sa_mask, SIGKILL);
			sigdelset(&old->sa_mask, SIGSTOP);
		} else {
			old->sa_handler = SIG_DFL;
			old->sa_flags = 0;
			sigemptyset(&old->sa_mask);
		}
	}
}

/* The handler a signal() style call returns, from the disposition before. */
static sighandler_t handler_of(const struct sigaction *old)
{
	return old->sa_flags & SA_SIGINFO ? (sighandler_t)(void *)old->sa_sigaction : old->sa_handler;
}

HT_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (HT_UNLIKELY(!real_sigaction))
		resolve_reals();
	bool in_range = sig > 0 && sig < HT_NSIG;
	struct sigaction prev, ours;
	bool prev_dfl = false;
	if (in_range) {
		prev = prog_act[sig];
		prev_dfl = prog_dfl[sig];
	} else {
		memset(&prev, 0, sizeof prev);
	}
	const struct sigaction *given = act;
	bool kept = act && keep_ours(sig, act->sa_handler, act->sa_flags);
	if (kept) {
		ht_fatal_sigaction(&ours);
		act = &ours;
	}
	void *h = wrappable(sig, act);
	int r;
	if (h) {
		atomic_store_explicit(&prog_siginfo[sig], (act->sa_flags & SA_SIGINFO) != 0,
				      memory_order_relaxed);
		atomic_store_explicit(&prog_handler[sig], h, memory_order_release);
		prog_act[sig] = *act;
		prog_dfl[sig] = false;
		ours = *act;
		ours.sa_sigaction = signal_trampoline;
		ours.sa_flags |= SA_SIGINFO;
		r = real_sigaction(sig, &ours, old);
	} else {
		r = real_sigaction(sig, act, old);
		if (r == 0 && in_range && act) {
			prog_dfl[sig] = kept;
			if (kept)
				prog_act[sig] = *given;
		}
	}
	if (r != 0 && in_range) {
		prog_act[sig] = prev;
		prog_dfl[sig] = prev_dfl;
	}
	if (r == 0 && old && in_range)
		as_program_set(old, &prev, prev_dfl);
	return r;
}

/* signal() and its older names: glibc's own sets the flags (SA_RESTART
 * unless siginterrupt said otherwise, a set only glibc knows) and the mask;
 * what it installed then goes through our sigaction, which wraps it or
 * keeps our fatal handler for SIG_DFL, as for any disposition. */
HT_EXPORT sighandler_t signal(int sig, sighandler_t handler)
{
	if (HT_UNLIKELY(!real_sigaction))
		resolve_reals();
	if (sig <= 0 || sig >= HT_NSIG)
		return real_signal(sig, handler); /* its error */
	struct sigaction prev = prog_act[sig], old, cur;
	bool prev_dfl = prog_dfl[sig];
	if (real_sigaction(sig, NULL, &old) != 0)
		return SIG_ERR;
	if (real_signal(sig, handler) == SIG_ERR)
		return SIG_ERR;
	if (real_sigaction(sig, NULL, &cur) == 0 &&
	    (keep_ours(sig, cur.sa_handler, cur.sa_flags) || wrappable(sig, &cur)))
		sigaction(sig, &cur, NULL);
	as_program_set(&old, &prev, prev_dfl);
	return handler_of(&old);
}

HT_EXPORT sighandler_t bsd_signal(int sig, sighandler_t handler);
sighandler_t bsd_signal(int sig, sighandler_t handler)
{
	return signal(sig, handler);
}

HT_EXPORT sighandler_t ssignal(int sig, sighandler_t handler);
sighandler_t ssignal(int sig, sighandler_t handler)
{
	return signal(sig, handler);
}

/* System V semantics: the handler is reset to SIG_DFL when it runs, and
 * the signal is not blocked in it. */
HT_EXPORT sighandler_t sysv_signal(int sig, sighandler_t handler);
sighandler_t sysv_signal(int sig, sighandler_t handler)
{
	if (HT_UNLIKELY(!real_sigaction))
		resolve_reals();
	struct sigaction sa, old;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = handler;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESETHAND | SA_NODEFER;
	if (sigaction(sig, &sa, &old) != 0)
		return SIG_ERR;
	return handler_of(&old);
}

/* sigset: glibc's sets the disposition through its internal sigaction;
 * only what it returns needs our reading. */
HT_EXPORT sighandler_t sigset(int sig, sighandler_t disp);
sighandler_t sigset(int sig, sighandler_t disp)
{
	if (HT_UNLIKELY(!real_sigaction))
		resolve_reals();
	struct sigaction before;
	bool known = sig > 0 && sig < HT_NSIG && real_sigaction(sig, NULL, &before) == 0;
	struct sigaction prev;
	bool prev_dfl = false;
	if (known) {
		prev = prog_act[sig];
		prev_dfl = prog_dfl[sig];
	}
	sighandler_t r = real_sigset(sig, disp);
	if (r == SIG_ERR || r == SIG_HOLD || !known)
		return r;
	as_program_set(&before, &prev, prev_dfl);
	return handler_of(&before);
}

/* ---- main's return value ----------------------------------------------------
 * A return from main reaches exit() inside libc, where no hook sees it. We
 * wrap main through __libc_start_main to learn the exit code. */
typedef int (*main_fn)(int, char **, char **);
static main_fn real_main;

static int main_wrapper(int argc, char **argv, char **envp)
{
	ht_flusher_start(); /* ships what quiet threads hold (flusher.c) */
	int r = real_main(argc, argv, envp);
	/* main's frames are dead now: the leak scan starts above them */
	ht_note_exit_sp((uintptr_t)__builtin_frame_address(0));
	atomic_store(&ht_exit_code, r & 0xff);
	atomic_store(&ht_exit_code_known, true);
	if (exit_handlers_used)
		ht_finish(HT_END_EXIT, (unsigned)r & 0xff);
	return r;
}

HT_EXPORT int __libc_start_main(main_fn main, int argc, char **argv,
				void (*init)(void), void (*fini)(void),
				void (*rtld_fini)(void), void *stack_end);
int __libc_start_main(main_fn main, int argc, char **argv, void (*init)(void),
		      void (*fini)(void), void (*rtld_fini)(void), void *stack_end)
{
	typedef int (*start_fn)(main_fn, int, char **, void (*)(void),
				void (*)(void), void (*)(void), void *);
	start_fn next = (start_fn)next_symbol("__libc_start_main");
	real_main = main;
	return next(main_wrapper, argc, argv, init, fini, rtld_fini, stack_end);
}
