/* thread.c - per-thread event buffers and the registry of threads.
 *
 * Each thread appends encoded events to its own buffer (no lock) and ships
 * a full buffer as one THREAD_BLOCK record under the writer lock, so the lock
 * is taken once per ~64 KiB of events, never per event.
 *
 * Invariants:
 * - A thread's state is reached through the initial-exec TLS pointer
 *   ht_tls_thread; it is created on the thread's first event, from mmap.
 * - t->len only grows by whole events: an event is encoded past t->len and
 *   then published by bumping t->len, so a fatal signal in the middle of an
 *   event leaves a consistent buffer for the final flush.
 * - The registry lists every state ever made; states of exited threads are
 *   reused. The final flush walks it, so events of a thread that is still
 *   running at exit (or that died without its key destructor) are not lost.
 */
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"

__thread ht_thread_t *ht_tls_thread;
/* Set once the thread's key destructor ran: later events of this thread
 * (from other destructors) get a fresh state that only the final flush sees. */
static __thread bool tls_thread_exited;
static bool membarrier_ok; /* MEMBARRIER_CMD_PRIVATE_EXPEDITED registered */

static ht_lock_t registry_lock;
static uint32_t next_ordinal = 2; /* under registry_lock */
_Atomic uint32_t ht_thread_states;
static ht_thread_t *registry;
static pthread_key_t thread_key;
static bool thread_key_ok;


/* The thread's stack bounds, unless the program is inside
 * pthread_getattr_np, whose lock our call would wait for (hooks.c): then
 * at a later ship of its events (ht_thread_flush). Until then the frame
 * walker allows a window above the current frame. */
static void stack_bounds(ht_thread_t *t);

static void bounds_now(ht_thread_t *t)
{
	if (ht_in_getattr)
		return;
	t->bounds_pending = false;
	/* pthread_getattr_np calls malloc (the main thread's reads
	 * /proc/self/maps). A thread's first event may come from a hook that
	 * is no malloc (open, close): a signal handler that allocates, fine
	 * there natively, must not land inside that malloc. */
	sigset_t async, saved;
	ht_async_signals(&async);
	pthread_sigmask(SIG_BLOCK, &async, &saved);
	stack_bounds(t);
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
}

static void stack_bounds(ht_thread_t *t)
{
	pthread_attr_t attr;
	void *lo;
	size_t size;
	/* pthread_getattr_np may allocate (it reads /proc/self/maps for the
	 * main thread); we run under the guard, so that is not recorded. */
	if (pthread_getattr_np(pthread_self(), &attr) == 0) {
		if (pthread_attr_getstack(&attr, &lo, &size) == 0) {
			t->stack_lo = (uintptr_t)lo;
			t->stack_hi = (uintptr_t)lo + size;
		}
		pthread_attr_destroy(&attr);
	}
}

/* Stacks of exited threads, for the leak scan (ht_thread_exclusions). */
#define HT_DEAD_STACKS 256
static uintptr_t dead_stacks[HT_DEAD_STACKS][2];
static unsigned dead_stack_count, dead_stack_next;

/* ---- thread names ------------------------------------------------------------
 * A thread named with pthread_setname_np (or prctl) gets a THREAD_NAME
 * record, so reports and exports show "worker-3" rather than a number: when
 * it exits (after its events, so that the reader numbers threads by their
 * first event still) and, for the threads still running, at the end. A
 * thread that keeps the name it inherited (the program's) gets none; the
 * main thread's name is the program's until the program renames it. */
static char process_name[16];

static void write_name(uint32_t tid, const char *name)
{
	if (!name[0] || !ht_strcmp(name, process_name))
		return;
	uint8_t rec[2 * HT_VARINT_MAX + 16];
	size_t len = ht_strlen(name);
	if (len > 15)
		len = 15;
	size_t n = ht_varint_put(rec, tid);
	n += ht_varint_put(rec + n, len);
	memcpy(rec + n, name, len);
	ht_writer_record(HT_REC_THREAD_NAME, rec, n + len);
}

void ht_thread_write_names(void)
{
	for (ht_thread_t *t = registry; t; t = t->next) {
		if (!t->in_use || t->exited)
			continue;
		char path[64] = "/proc/self/task/", name[32];
		size_t n = ht_append_u64(path, ht_strlen(path), sizeof path, t->tid);
		ht_append_str(path, n, sizeof path, "/comm");
		long got = ht_read_file(path, name, sizeof name - 1);
		if (got <= 0)
			continue;
		name[got] = 0;
		if (name[got - 1] == '\n')
			name[got - 1] = 0;
		write_name(t->tid, name);
	}
}

/* Forgets the events signal handlers kept aside in t (a reused state, a
 * fork child's copy of the parent's). */
static void defer_forget(ht_thread_t *t)
{
	for (uint32_t i = t->defer_head; i != t->defer_tail; i++) {
		ht_deferred_t *d = ht_deferred_slot(t, i);
		if (d)
			d->ready = 0;
	}
	t->defer_head = t->defer_tail = 0;
}

static void flush_state(ht_thread_t *t, bool wake);
static bool own_begin(ht_thread_t *t);
static void own_end(ht_thread_t *t);

/* A stack overflow must still reach the agent's fatal handler, which
 * finishes the trace, and a handler needs a stack: lifecycle.c gives the
 * main thread an alternate one, this every other thread the program has
 * given none. */
void *ht_alt_stack_map(void)
{
	/* a page kept inaccessible below it: a handler of the program's that
	 * runs on it (SA_ONSTACK) and needs more faults there instead of
	 * writing over whatever lies below */
	uint8_t *m = ht_mmap(HT_ALT_STACK + 4096);
	if (!m)
		return NULL;
	mprotect(m, 4096, PROT_NONE);
	return m + 4096;
}

static void alt_stack_arm(ht_thread_t *t)
{
	stack_t cur;
	if (sigaltstack(NULL, &cur) != 0 || !(cur.ss_flags & SS_DISABLE))
		return;
	if (!t->alt_stack && !(t->alt_stack = ht_alt_stack_map()))
		return;
	stack_t ss = {.ss_sp = t->alt_stack, .ss_size = HT_ALT_STACK, .ss_flags = 0};
	t->alt_armed = sigaltstack(&ss, NULL) == 0;
}

/* At the thread's end, before another thread may take the state. */
static void alt_stack_disarm(ht_thread_t *t)
{
	if (!t->alt_armed)
		return;
	t->alt_armed = false;
	stack_t cur;
	if (sigaltstack(NULL, &cur) == 0 && cur.ss_sp == t->alt_stack &&
	    !(cur.ss_flags & (SS_DISABLE | SS_ONSTACK))) {
		stack_t off = {.ss_flags = SS_DISABLE};
		sigaltstack(&off, NULL);
	}
}

static void thread_exit(void *arg)
{
	ht_thread_t *t = arg;
	int saved_guard = ht_guard;
	ht_guard = 1;
	if (own_begin(t)) {
		flush_state(t, false);
		own_end(t);
		char name[17] = {0};
		if (prctl(PR_GET_NAME, name) == 0 && name[0] && ht_strcmp(name, process_name)) {
			ht_lock(&ht_writer_lock);
			ht_blocks_drain_locked(); /* its events first */
			if (atomic_load(&ht_state) == HT_STATE_RECORDING)
				write_name(t->tid, name);
			ht_unlock(&ht_writer_lock);
		}
	}
	alt_stack_disarm(t);
	ht_tls_thread = NULL;
	tls_thread_exited = true;
	if (t->transient) { /* a later destructor's event, its state gone */
		ht_lock(&registry_lock);
		t->exited = true;
		if (t->len == 0)
			t->in_use = false;
		ht_unlock(&registry_lock);
		ht_guard = saved_guard;
		return;
	}
	if ((pid_t)syscall(SYS_gettid) == ht_pid)
		ht_flusher_main_exited(); /* pthread_exit: the process goes on */
	ht_lock(&registry_lock);
	t->exited = true;
	if (dead_stack_count < HT_DEAD_STACKS && t->stack_hi) {
		dead_stacks[dead_stack_count][0] = t->stack_lo;
		dead_stacks[dead_stack_count][1] = t->stack_hi;
		dead_stack_count++;
	} else if (t->stack_hi) {
		dead_stacks[dead_stack_next % HT_DEAD_STACKS][0] = t->stack_lo;
		dead_stacks[dead_stack_next++ % HT_DEAD_STACKS][1] = t->stack_hi;
	}
	if (t->len == 0)
		t->in_use = false;
	ht_unlock(&registry_lock);
	ht_guard = saved_guard;
}

HT_NOINLINE HT_COLD static ht_thread_t *thread_create(void)
{
	ht_thread_t *t = NULL;
	ht_lock(&registry_lock);
	for (ht_thread_t *it = registry; it; it = it->next) {
		if (!it->in_use) {
			t = it;
			break;
		}
	}
	if (!t) {
		t = ht_mmap(sizeof *t);
		if (!t) {
			ht_unlock(&registry_lock);
			atomic_fetch_or(&ht_agent_flags, HT_AGENT_OUT_OF_MEMORY);
			return NULL;
		}
		t->next = registry;
		registry = t;
	}
	t->in_use = true;
	t->exited = false;
	t->len = 0;
	/* allocation numbers: the main thread is 1, the others count up in
	 * the order their states are made (trace_format.h) */
	t->tid = (uint32_t)syscall(SYS_gettid);
	t->ordinal = t->tid == (uint32_t)getpid() ? 1 : next_ordinal++;
	/* before the thread stamps anything (ht_event_time) */
	atomic_fetch_add(&ht_thread_states, 1);
	t->alloc_seq = 0;
	t->last_addr = 0;
	t->last_fn = 0;
	defer_forget(t);
	ht_unlock(&registry_lock);
	if (ht_opt_sample_rate)
		ht_sample_thread_init(t);
	if (!t->blk) {
		t->blk = ht_block_get();
		if (!t->blk) {
			t->in_use = false;
			atomic_fetch_or(&ht_agent_flags, HT_AGENT_OUT_OF_MEMORY);
			return NULL;
		}
		t->buf = t->blk->data;
	}

	t->last_time = ht_now();
	t->block_base = t->last_time;
	ht_scache_forget(t); /* a reused state: the old thread's chains */
	t->scache_gen = atomic_load(&ht_stacks_gen);
	t->stack_lo = t->stack_hi = 0;
	t->bounds_pending = true;
	bounds_now(t);
	ht_tls_thread = t;
	/* After the key's destructor (the program's keys destroyed after
	 * ours, glibc freeing the thread's TLS): a state per event, let go
	 * when the hook ends (ht_thread_release_transient), not one left
	 * behind by every thread that ends so. */
	t->transient = tls_thread_exited;
	if (t->transient)
		ht_deferred_pending = 1; /* the hook's end calls back */
	if (thread_key_ok && !tls_thread_exited) {
		pthread_setspecific(thread_key, t);
		if (t->ordinal != 1)
			alt_stack_arm(t); /* disarmed by thread_exit, the key's */
	}
	return t;
}

void ht_thread_release_transient(ht_thread_t *t)
{
	int saved_guard = ht_guard;
	ht_guard = 1;
	if (own_begin(t)) {
		flush_state(t, false);
		own_end(t);
	}
	ht_tls_thread = NULL;
	ht_lock(&registry_lock);
	t->exited = true;
	t->transient = false;
	if (t->len == 0)
		t->in_use = false;
	ht_unlock(&registry_lock);
	ht_guard = saved_guard;
}

int ht_exec_flush_wait(void)
{
	int s;
	while ((s = atomic_load(&ht_state)) == HT_STATE_EXEC)
		sched_yield(); /* one read decides: the next exec may flush again */
	return s;
}

/* Parking during the finish (ht_thread_park_begin): the futex word, 1
 * once threads are to wait, and until when at most (CLOCK_MONOTONIC). */
static _Atomic int parking;
static _Atomic uint64_t park_until_ns;
static __thread bool park_exempt; /* the finishing thread: it goes on */

void ht_thread_park_begin(int timeout_ms)
{
	park_exempt = true;
	atomic_store(&park_until_ns, ht_clock_ns() + (uint64_t)timeout_ms * 1000000u);
	atomic_store(&parking, 1);
}

/* A program's thread that comes into a hook while the trace is finished
 * waits here, its mark (in_event) down, so that the finish's own work is
 * not left a sliver of the CPUs. Nothing wakes it: the process ends with
 * the finish (exit, _exit, a fatal signal), and a thread woken then took
 * the CPU from the exit's last steps. The bound keeps a finish, or an
 * exit's last steps, that need what such a thread holds (a lock of the
 * program's, taken around a malloc) from waiting for it any longer. */
void ht_thread_park(void)
{
	/* not in a child forked or vforked meanwhile: the finish is not its */
	if (!atomic_load(&parking) || park_exempt || getpid() != ht_pid)
		return;
	while (atomic_load(&parking)) {
		uint64_t now = ht_clock_ns(), until = atomic_load(&park_until_ns);
		if (now >= until)
			return;
		uint64_t left = until - now;
		struct timespec ts = {(time_t)(left / 1000000000u), (long)(left % 1000000000u)};
		syscall(SYS_futex, &parking, FUTEX_WAIT_PRIVATE, 1, &ts, NULL, 0);
	}
}

/* Waits while the writer ships t's buffer (ht_thread_take_idle: a copy
 * into its batch, microseconds); starts the writer when asked. */
static void taking_wait(ht_thread_t *t)
{
	int k;
	while ((k = atomic_load_explicit(&t->taking, memory_order_acquire)) != 0) {
		if (k == HT_TAKING_START) {
			int expected = HT_TAKING_START;
			if (atomic_compare_exchange_strong(&t->taking, &expected, 0))
				ht_flusher_start();
			continue;
		}
		sched_yield();
	}
}

bool ht_event_begin_slow(ht_thread_t *t)
{
	for (;;) {
		atomic_store_explicit(&t->in_event, 0, memory_order_relaxed);
		taking_wait(t);
		int s = ht_exec_flush_wait();
		if (s == HT_STATE_FINISHED)
			ht_thread_park();
		if (s != HT_STATE_RECORDING)
			return false;
		atomic_store_explicit(&t->in_event, 1, memory_order_relaxed);
		atomic_signal_fence(memory_order_seq_cst);
		if (atomic_load(&ht_state) == HT_STATE_RECORDING &&
		    !atomic_load_explicit(&t->taking, memory_order_relaxed))
			return true;
	}
}

/* Holds t's buffer for the thread's own ship outside an event (its end),
 * with the handshake of ht_event_begin: against the writer's taking it
 * (ht_thread_take_idle), and against an exec's flush or the finish, which
 * ship every buffer of a thread out of an event (ht_thread_flush_all). A
 * thread that marked itself after their look and shipped anyway moved
 * the buffer they were shipping: the block went into the trace twice, or
 * a stale length with the fresh block. An exec's flush is waited out;
 * false once the trace is finished (the finish ships the buffer). */
static bool own_begin(ht_thread_t *t)
{
	for (;;) {
		atomic_store_explicit(&t->in_event, 1, memory_order_relaxed);
		atomic_signal_fence(memory_order_seq_cst);
		if (atomic_load_explicit(&ht_state, memory_order_relaxed) == HT_STATE_RECORDING &&
		    !atomic_load_explicit(&t->taking, memory_order_relaxed))
			return true;
		atomic_store_explicit(&t->in_event, 0, memory_order_relaxed);
		taking_wait(t);
		if (ht_exec_flush_wait() != HT_STATE_RECORDING)
			return false;
	}
}

static void own_end(ht_thread_t *t)
{
	atomic_store_explicit(&t->in_event, 0, memory_order_release);
}

ht_thread_t *ht_thread_peek(void)
{
	return ht_tls_thread;
}

ht_thread_t *ht_thread_get(void)
{
	ht_thread_t *t = ht_tls_thread;
	if (HT_LIKELY(t != NULL))
		return t;
	return thread_create();
}

/* Appends an RSS sample at now (no earlier than t's events) to t's buffer. */
static void put_rss(ht_thread_t *t, uint64_t now, uint64_t rss)
{
	if (t->len + 1 + 2 * HT_VARINT_MAX > HT_BUF_SIZE)
		return;
	if (now < t->last_time)
		now = t->last_time;
	uint8_t *p = t->buf + t->len;
	size_t n = 0;
	p[n++] = HT_EV_RSS;
	n += ht_varint_put(p + n, now - t->last_time);
	n += ht_varint_put(p + n, rss);
	t->last_time = now;
	t->len += (uint32_t)n;
}

/* Appends an RSS sample to t's buffer if none was taken recently. */
static void maybe_sample_rss(ht_thread_t *t)
{
	uint64_t now = ht_now();
	if (!ht_rss_claim(now, HT_RSS_SHIP_NS))
		return;
	put_rss(t, now, ht_rss_read_noted(now));
}

/* Writes t's events directly; the caller holds the writer lock. */
static void ship_locked(ht_thread_t *t)
{
	if (t->len == 0)
		return;
	t->blk->tid = t->tid;
	t->blk->len = t->len;
	t->blk->base_time = t->block_base;
	ht_block_write_locked(t->blk);
	t->len = 0;
	t->last_addr = 0;
	t->last_fn = 0;
	t->block_base = t->last_time;
}

/* Ships t's events. wake: wake the writer if it sleeps; a thread at its
 * end does not (the writer looks within a second, or when woken for
 * another block): a program that starts and joins threads one after the
 * other otherwise handed the core to the writer at every thread's end
 * (2,000 threads: 2.3 s, plain 0.06 s). */
static void flush_state(ht_thread_t *t, bool wake)
{
	if (HT_UNLIKELY(t->bounds_pending) && t == ht_tls_thread)
		bounds_now(t);
	maybe_sample_rss(t);
	if (t->len == 0)
		return;
	ht_block_t *fresh = ht_block_get();
	if (!fresh) {
		/* No memory for a new block: write this one in place. */
		ht_lock(&ht_writer_lock);
		ship_locked(t);
		ht_unlock(&ht_writer_lock);
		return;
	}
	ht_block_t *full = t->blk;
	full->tid = t->tid;
	full->len = t->len;
	full->base_time = t->block_base;
	t->blk = fresh;
	t->buf = fresh->data;
	t->len = 0;
	t->last_addr = 0;
	t->last_fn = 0;
	t->block_base = t->last_time;
	ht_block_submit(full, wake);
}

void ht_thread_flush(ht_thread_t *t)
{
	flush_state(t, true);
}

bool ht_thread_quiesce(int timeout_ms)
{
	/* Called with the state already moved out of RECORDING, so threads
	 * start no new event (ht_event_begin); wait for the ones in the middle
	 * of one. A thread marks itself, then reads the state; this side
	 * wrote the state, and reads the marks once every thread has passed a
	 * barrier: either the thread sees the new state, or this side sees
	 * its mark (without the barrier, both could read the old values, and
	 * a thread append to a buffer being shipped). One deadline for all of
	 * them: a wait per thread, each to its end, took minutes when the
	 * threads waited for a lock of the waiter's. */
	if (!membarrier_ok ||
	    syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0) {
		struct timespec settle = {0, 100000};
		syscall(SYS_nanosleep, &settle, NULL);
	}
	ht_thread_t *self = ht_tls_thread;
	uint64_t until = ht_clock_ns() + (uint64_t)timeout_ms * 1000000u;
	for (;;) {
		bool busy = false;
		for (ht_thread_t *t = registry; t && !busy; t = t->next)
			busy = t != self && atomic_load(&t->in_event);
		if (!busy)
			return true;
		if (ht_clock_ns() >= until)
			return false;
		struct timespec us = {0, 100000};
		syscall(SYS_nanosleep, &us, NULL);
	}
}

/* The writer thread ships the buffers of threads that have recorded
 * nothing for a while: a thread ships its own only when it records again,
 * and a program killed (SIGKILL, the OOM killer) after a quiet spell lost
 * everything since. The owner is kept out by the handshake of
 * ht_event_begin: this side sets taking, then a membarrier makes every
 * thread pass a full barrier, then it reads in_event: either the owner
 * sees taking (and waits in ht_event_begin_slow), or this side sees its
 * in_event (and leaves the buffer alone this time). The owner's fast path
 * pays one load, no lock and no atomic read-modify-write. Locks: the
 * registry's (a state reused meanwhile is reset under it), then the
 * writer's (the finish and an exec's flush ship buffers under it). */
#define HT_TAKE_MAX 64 /* states taken per round; the rest next round */
unsigned ht_thread_take_idle(uint64_t age_ns)
{
	if (!membarrier_ok || atomic_load(&ht_state) != HT_STATE_RECORDING)
		return 0;
	ht_thread_t *cand[HT_TAKE_MAX];
	unsigned n = 0, taken = 0;
	uint64_t now = ht_now();
	ht_lock(&registry_lock);
	for (ht_thread_t *t = registry; t && n < HT_TAKE_MAX; t = t->next) {
		/* racy reads of the owner's fields: only whether to try */
		uint32_t len = *(volatile uint32_t *)&t->len;
		uint64_t base = *(volatile uint64_t *)&t->block_base;
		if (!t->in_use || !t->blk || len == 0 || now < base || now - base < age_ns ||
		    atomic_load_explicit(&t->in_event, memory_order_relaxed) ||
		    atomic_load_explicit(&t->taking, memory_order_relaxed))
			continue;
		atomic_store(&t->taking, HT_TAKING);
		cand[n++] = t;
	}
	if (n == 0) {
		ht_unlock(&registry_lock);
		return 0;
	}
	bool fenced = syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0;
	ht_lock(&ht_writer_lock);
	bool recording = atomic_load(&ht_state) == HT_STATE_RECORDING;
	/* Those seen out of an event now stay out until released: they
	 * queue nothing more, so the blocks they queued before, written
	 * first, are all their older events. */
	unsigned kept = 0;
	for (unsigned i = 0; i < n; i++) {
		ht_thread_t *t = cand[i];
		if (fenced && recording && !atomic_load(&t->in_event) && t->in_use && t->len)
			cand[kept++] = t;
		else
			atomic_store_explicit(&t->taking, 0, memory_order_release);
	}
	if (kept)
		ht_blocks_drain_locked();
	for (unsigned i = 0; i < kept; i++) {
		ship_locked(cand[i]);
		taken++;
		atomic_store_explicit(&cand[i]->taking, 0, memory_order_release);
	}
	if (taken && ht_writer_dirty())
		ht_writer_flush(false);
	ht_unlock(&ht_writer_lock);
	ht_unlock(&registry_lock);
	return taken;
}

bool ht_thread_post_rss(uint64_t now, uint64_t rss)
{
	if (!membarrier_ok || atomic_load(&ht_state) != HT_STATE_RECORDING)
		return false;
	/* the main thread's state if it is out of an event, else another's:
	 * the sample goes into that thread's stream, as its own do */
	ht_thread_t *c = NULL;
	ht_lock(&registry_lock);
	for (ht_thread_t *t = registry; t; t = t->next) {
		if (!t->in_use || t->exited || !t->blk ||
		    atomic_load_explicit(&t->in_event, memory_order_relaxed) ||
		    atomic_load_explicit(&t->taking, memory_order_relaxed))
			continue;
		if (!c || t->tid == (uint32_t)ht_pid)
			c = t;
	}
	if (!c) {
		ht_unlock(&registry_lock);
		return false;
	}
	atomic_store(&c->taking, HT_TAKING);
	bool fenced = syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0;
	ht_lock(&ht_writer_lock);
	bool done = false;
	if (fenced && atomic_load(&ht_state) == HT_STATE_RECORDING && !atomic_load(&c->in_event) &&
	    c->in_use) {
		/* as ht_thread_take_idle: out of an event now, it stays out
		 * until released. The sample waits in its buffer like its
		 * events (ht_thread_take_idle ships it within its age): shipping
		 * here would cut a slow program's blocks short every tick. The
		 * writer's lock keeps the exit's flush of every buffer away. */
		put_rss(c, now, rss);
		done = true;
	}
	atomic_store_explicit(&c->taking, 0, memory_order_release);
	ht_unlock(&ht_writer_lock);
	ht_unlock(&registry_lock);
	return done;
}

void ht_thread_flush_all(void)
{
	ht_thread_quiesce(1000);
	/* Queued blocks hold older events than the threads' current ones. */
	ht_blocks_drain_locked();
	for (ht_thread_t *t = registry; t; t = t->next) {
		if (t->in_use && t->len)
			ship_locked(t);
	}
}

void ht_thread_exclusions(void (*add)(uintptr_t lo, uintptr_t hi),
			  void (*add_dead_stack)(uintptr_t lo, uintptr_t hi))
{
	for (unsigned i = 0; i < dead_stack_count; i++) {
		bool reused = false; /* glibc gave the stack to a running thread */
		for (ht_thread_t *t = registry; t; t = t->next)
			reused |= t->in_use && !t->exited && t->stack_lo < dead_stacks[i][1] &&
				  dead_stacks[i][0] < t->stack_hi;
		if (!reused)
			add_dead_stack(dead_stacks[i][0], dead_stacks[i][1]);
	}
	if (ht_writer_stack_hi)
		add(ht_writer_stack_lo, ht_writer_stack_hi);
	if (ht_digester_stack_hi)
		add(ht_digester_stack_lo, ht_digester_stack_hi);
}

void ht_thread_totals(uint64_t *allocs, uint64_t *frees, uint64_t *bytes)
{
	*allocs = *frees = *bytes = 0;
	for (ht_thread_t *t = registry; t; t = t->next) {
		*allocs += t->n_allocs;
		*frees += t->n_frees;
		*bytes += t->n_bytes;
	}
}

void ht_thread_init_process(void)
{
	prctl(PR_GET_NAME, process_name); /* at start-up: the main thread's */
	thread_key_ok = pthread_key_create(&thread_key, thread_exit) == 0;
	membarrier_ok = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}

void ht_thread_fork_prepare(void)
{
	ht_lock(&registry_lock);
}

void ht_thread_fork_parent(void)
{
	ht_unlock(&registry_lock);
}


void ht_thread_fork_child(void)
{
	/* Only the forking thread survives. Other states hold the parent's
	 * unflushed events: the parent ships those, the child drops them. */
	ht_lock_reset(&registry_lock);
	next_ordinal = 2;
	atomic_store(&ht_thread_states, ht_tls_thread ? 1 : 0);
	ht_thread_t *self = ht_tls_thread;
	/* the child's name is the forking thread's: its main thread's name
	 * until the child renames it */
	prctl(PR_GET_NAME, process_name);
	ht_names_fork_child(self);
	for (ht_thread_t *t = registry; t; t = t->next) {
		t->n_allocs = t->n_frees = t->n_bytes = 0; /* the child counts its own */
		defer_forget(t);
		atomic_store(&t->taking, 0);
		if (t != self) {
			t->in_use = false;
			t->len = 0;
			atomic_store(&t->in_event, 0);
		}
	}
	/* the helpers did not survive the fork: this thread's next event
	 * starts the writer, which ships its buffer if it goes quiet (not
	 * here: no thread is made in a fork handler, lifecycle.c) */
	if (self && ht_opt_follow_fork)
		atomic_store(&self->taking, HT_TAKING_START);
	if (self) {
		ht_scache_forget(self); /* cached stack ids belong to the parent's trace */
		ht_functions_fork_child(self);
		self->tid = (uint32_t)syscall(SYS_gettid);
		self->ordinal = 1; /* the child's trace numbers its own allocations */
		self->alloc_seq = 0;
		self->len = 0;
		self->last_addr = 0;
		self->last_fn = 0;
		self->last_time = ht_now();
		self->block_base = self->last_time;
	}
}
