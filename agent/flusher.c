/* flusher.c - the block pool, the queues and the helper threads.
 *
 * Compressing costs about as much as recording, and keeping the table of
 * live blocks for the leak check (agent/live.c) as much again where threads
 * free each other's blocks; two helper threads move that work off the
 * program's threads, onto idle cores when there are some. A full block
 * goes through two queues:
 *   producer -> digest queue -> digester (live table) -> write queue -> writer
 * and the two stages run at once: on the 4-thread bench, where one thread
 * doing both was the bottleneck, the process ends ~20% sooner. Without a
 * table to keep (leak_check=0), or in summary mode (where the table is all
 * that is kept and the writer digests), blocks go straight to the writer.
 * Once a process has a second thread, each thread packs and compresses
 * its own blocks (agent/packer.c) and only the digest queue is used: the
 * writer thread keeps what is shared (idle threads' buffers, the packers'
 * batches held too long, module maps, the end).
 * The digester is started on the first full block, so short programs
 * never get one; the writer is started at main's start (ht_flusher_start):
 * it also ships the buffers of threads that have gone quiet
 * (ht_thread_take_idle, which takes the registry's lock before
 * ht_writer_lock), and a program killed later needs those on disk.
 *
 * Locks: ht_writer_lock, then a packer's (agent/packer.c), then
 * ht_live_lock, then queue_lock (never the other way round). The writer pops and writes under ht_writer_lock, and
 * the digester pops, digests and passes on under ht_live_lock, so whoever
 * holds both (exit, exec, a fatal signal) can drain both queues itself and
 * know that no block is in flight elsewhere; digesting under the lock also
 * keeps each thread's blocks in their order. When a stage falls behind by
 * HT_MAX_QUEUED blocks, producers do its work synchronously: memory stays
 * bounded.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent.h"
#include "live.h"
#include "packed.h"

#define HT_MAX_QUEUED 32
#define HT_LINGER_NS 200000000L /* 200 ms: how long an idle writer keeps a batch */
#define HT_HOLD_NS 200000000L	/* 200 ms: how long a busy one does */
/* Every HT_TAKE_TICK_NS the writer ships the buffers of threads whose
 * events have waited HT_TAKE_AGE_NS (ht_thread_take_idle) and flushes the
 * file: an event is on disk within about 0.3 s of being recorded, 0.5 s
 * at most (a block shipped full waits HT_HOLD_NS in a busy writer). */
#define HT_TAKE_TICK_NS 100000000L
#define HT_TAKE_AGE_NS 200000000ull

static ht_lock_t queue_lock;
static ht_block_t *queue_head, *queue_tail; /* the write queue */
static _Atomic unsigned queued; /* also the futex word the writer sleeps on */
static ht_block_t *digest_head, *digest_tail;
static _Atomic unsigned to_digest; /* the digester's futex word */
static ht_block_t *pool;
static _Atomic uint64_t idle_ns;     /* the writer thread's waits, summed */
static _Atomic uint64_t self_writes; /* producers that wrote or digested themselves */
static _Atomic bool writer_started, digester_started;
/* Blocks submitted to the queues and not yet packed: while there are
 * some, a thread's next block follows them there (its order). */
static _Atomic unsigned in_queues;
static _Atomic int digester_tid;
uintptr_t ht_writer_stack_lo, ht_writer_stack_hi;
uintptr_t ht_digester_stack_lo, ht_digester_stack_hi;

ht_block_t *ht_block_get(void)
{
	ht_lock(&queue_lock);
	ht_block_t *b = pool;
	if (b)
		pool = b->next;
	ht_unlock(&queue_lock);
	if (!b)
		b = ht_mmap(sizeof *b);
	if (b) {
		b->next = NULL;
		b->len = 0;
		b->digested = false;
		b->packed = false;
	}
	return b;
}

static void block_put_locked(ht_block_t *b)
{
	b->next = pool;
	pool = b;
}

/* Gives a block back to the pool. */
static void block_put(ht_block_t *b)
{
	ht_lock(&queue_lock);
	block_put_locked(b);
	ht_unlock(&queue_lock);
}


void ht_block_write_locked(const ht_block_t *b)
{
	ht_packer_pack_locked(b);
}

/* Whether full blocks go to the digester first. */
static inline bool digest_stage(void)
{
	return ht_opt_leak_check && !ht_opt_summary;
}

/* Appends b to a queue (its head, tail, and length, the futex word its
 * helper sleeps on) and wakes the helper when b is alone there and wake is
 * set; returns the queue's length. */
static unsigned enqueue(ht_block_t **head, ht_block_t **tail, _Atomic unsigned *count,
			ht_block_t *b, bool wake)
{
	ht_lock(&queue_lock);
	b->next = NULL;
	if (*tail)
		(*tail)->next = b;
	else
		*head = b;
	*tail = b;
	unsigned n = atomic_fetch_add(count, 1) + 1;
	ht_unlock(&queue_lock);
	if (n == 1 && wake)
		syscall(SYS_futex, count, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	return n;
}

static void write_enqueue(ht_block_t *b, bool wake)
{
	enqueue(&queue_head, &queue_tail, &queued, b, wake);
}

/* Digests the oldest block of the digest queue (unless !digest) and passes
 * it to the write queue, waking the writer as its producer asked, or
 * anyway with wake; false when none waits. The caller holds ht_live_lock:
 * pop and digest under it keep each thread's blocks digested in their
 * order. */
static bool digest_one_live_locked(bool digest, bool wake)
{
	ht_lock(&queue_lock);
	ht_block_t *b = digest_head;
	if (b) {
		digest_head = b->next;
		if (!digest_head)
			digest_tail = NULL;
		atomic_fetch_sub(&to_digest, 1);
	}
	ht_unlock(&queue_lock);
	if (!b)
		return false;
	if (digest)
		ht_live_digest(b);
	if (b->packed) {
		block_put(b);
		return true;
	}
	b->digested = digest; /* else the writer skips it too: the lock is ours */
	write_enqueue(b, b->wake || wake);
	return true;
}

/* Writes the write queue's blocks; the caller holds ht_writer_lock. */
static void write_queue_drain_locked(void)
{
	for (;;) {
		ht_lock(&queue_lock);
		ht_block_t *list = queue_head;
		queue_head = queue_tail = NULL;
		atomic_store(&queued, 0);
		ht_unlock(&queue_lock);
		if (!list)
			return;
		while (list) {
			ht_block_t *next = list->next;
			ht_block_write_locked(list);
			atomic_fetch_sub(&in_queues, 1);
			block_put(list);
			list = next;
		}
	}
}

void ht_blocks_drain_locked(void)
{
	/* Taken even with the digest queue empty: the digester may hold a
	 * block it popped, which must be written before anything newer. A
	 * handler that ends the process from inside this thread's own digest
	 * (the lock is its: the table is half changed) writes the blocks
	 * without digesting them. */
	ht_packer_frames_write_locked();
	bool mine = ht_lock_held(&ht_live_lock);
	if (!mine)
		ht_lock(&ht_live_lock);
	while (digest_one_live_locked(!mine, false))
		;
	if (!mine)
		ht_unlock(&ht_live_lock);
	write_queue_drain_locked();
}

/* State letter of /proc/self/stat or a task's stat (after the command,
 * which may hold spaces and parentheses: the last ')'), or 0. */
static char stat_state(const char *path)
{
	char buf[1024];
	long n = ht_read_file(path, buf, sizeof buf - 1);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	char *p = NULL;
	for (char *c = buf; *c; c++)
		if (*c == ')')
			p = c;
	return p && p[1] == ' ' ? p[2] : 0;
}

/* Set when the main thread ends with pthread_exit (its state's key
 * destructor): from then on the idle writer looks for the last thread
 * every 100 ms, not every second. */
static _Atomic bool main_exited;

void ht_flusher_main_exited(void)
{
	atomic_store(&main_exited, true);
	syscall(SYS_futex, &queued, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* The writer and the digester are the process's last threads: the
 * program's have all ended (main's with pthread_exit), and glibc, which
 * exits the process when its last thread ends, counts ours. Checked only
 * when idle, and the tasks only once the main thread is gone (a zombie
 * until the process ends). */
static bool only_thread_left(void)
{
	if (stat_state("/proc/self/stat") != 'Z')
		return false;
	int dfd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return false;
	char buf[4096] __attribute__((aligned(8)));
	long n;
	bool alive = false; /* another thread: the first one found ends the look */
	pid_t self = (pid_t)syscall(SYS_gettid);
	while (!alive && (n = syscall(SYS_getdents64, dfd, buf, sizeof buf)) > 0) {
		for (long off = 0; off < n && !alive;) {
			unsigned short reclen;
			memcpy(&reclen, buf + off + 16, sizeof reclen);
			const char *name = buf + off + 19; /* linux_dirent64's d_name */
			off += reclen;
			long tid = 0;
			for (const char *c = name; *c >= '0' && *c <= '9'; c++)
				tid = tid * 10 + (*c - '0');
			if (!tid || tid == self || tid == atomic_load(&digester_tid))
				continue; /* the agent's own helpers */
			char path[64];
			size_t k = ht_append_str(path, 0, sizeof path, "/proc/self/task/");
			k = ht_append_u64(path, k, sizeof path, (uint64_t)tid);
			ht_append_str(path, k, sizeof path, "/stat");
			char st = stat_state(path);
			alive = st && st != 'Z' && st != 'X';
		}
	}
	close(dfd);
	return !alive;
}

/* Ends the process as glibc does when its last thread ends: exit(0), run
 * here with the program's view of the world (no guard, no blocked
 * signals), so its exit handlers and destructors are recorded and the
 * trace is finished as after any exit. */
static void exit_as_last_thread(void)
{
	sigset_t none;
	sigemptyset(&none);
	pthread_sigmask(SIG_SETMASK, &none, NULL);
	ht_guard = 0;
	exit(0);
}

/* The calling thread's stack, which the leak scan must not take for roots. */
static void own_stack(uintptr_t *lo_out, uintptr_t *hi_out)
{
	pthread_attr_t attr;
	if (pthread_getattr_np(pthread_self(), &attr) == 0) {
		void *lo;
		size_t size;
		if (pthread_attr_getstack(&attr, &lo, &size) == 0) {
			*lo_out = (uintptr_t)lo;
			*hi_out = (uintptr_t)lo + size;
		}
		pthread_attr_destroy(&attr);
	}
}

static void *digester_main(void *arg)
{
	(void)arg;
	ht_guard = 1; /* whatever this thread allocates is ours, not the program's */
	own_stack(&ht_digester_stack_lo, &ht_digester_stack_hi);
	atomic_store(&digester_tid, (int)syscall(SYS_gettid));
	bool looked = false; /* found blocks by looking, not woken for them */
	for (;;) {
		if (ht_attaching && atomic_load(&ht_state) == HT_STATE_FINISHED &&
		    !atomic_load(&to_digest))
			return NULL; /* detached: as the writer */
		if (atomic_load(&to_digest) == 0) {
			/* A block queued without a wake (a thread at its end)
			 * waits at most this long, as in the idle writer; the
			 * writer is then woken for it, once a look, not at
			 * every thread's end. */
			const struct timespec idle = {1, 0};
			long r = syscall(SYS_futex, &to_digest, FUTEX_WAIT_PRIVATE, 0, &idle, NULL, 0);
			looked = r < 0 && errno == ETIMEDOUT;
			continue;
		}
		ht_lock(&ht_live_lock);
		digest_one_live_locked(true, looked);
		ht_unlock(&ht_live_lock);
	}
	return NULL;
}

static void *writer_main(void *arg)
{
	(void)arg;
	ht_guard = 1; /* whatever this thread allocates is ours, not the program's */
	own_stack(&ht_writer_stack_lo, &ht_writer_stack_hi);
	uint64_t held_since = 0; /* when unwritten data was first seen held */
	uint64_t last_take = 0, last_look = 0;
	for (;;) {
		/* detached (agent/attach.c): the process runs on, the agent idle */
		if (ht_attaching && atomic_load(&ht_state) == HT_STATE_FINISHED && !atomic_load(&queued))
			return NULL;
		uint64_t tick = ht_clock_ns();
		if (tick - last_take >= (uint64_t)HT_TAKE_TICK_NS) {
			last_take = tick;
			ht_thread_take_idle(HT_TAKE_AGE_NS);
			ht_rss_tick();
			/* the packers' batches go out once they have waited
			 * HT_HOLD_NS, as the writer's own do */
			ht_lock(&ht_writer_lock);
			ht_packers_emit_locked(HT_HOLD_NS);
			ht_unlock(&ht_writer_lock);
		}
		if (ht_packer_frames_waiting()) {
			ht_lock(&ht_writer_lock);
			ht_packer_frames_write_locked();
			ht_unlock(&ht_writer_lock);
		}
		if (atomic_load(&queued) == 0) {
			/* Idle. Blocks waiting in the batch (or bytes in the
			 * compressor) wait HT_LINGER_NS for more, then go to the
			 * file decodable: a trace cut later (SIGKILL, a full
			 * disk) keeps them. With nothing waiting, the writer
			 * still looks again every second: a producer that wrote
			 * a batch itself (the queue full) between the look and
			 * the wait cannot wake it. */
			ht_lock(&ht_writer_lock);
			bool dirty = ht_writer_dirty();
			ht_unlock(&ht_writer_lock);
			const struct timespec linger = {0, HT_LINGER_NS}, idle = {0, HT_TAKE_TICK_NS},
					      /* main has called pthread_exit: look
					       * for the last thread more often */
					      orphaned = {0, 100000000};
			bool main_gone = atomic_load(&main_exited);
			uint64_t t0 = ht_clock_ns();
			long r = syscall(SYS_futex, &queued, FUTEX_WAIT_PRIVATE, 0,
					 dirty ? &linger : main_gone ? &orphaned : &idle, NULL, 0);
			atomic_fetch_add_explicit(&idle_ns, ht_clock_ns() - t0, memory_order_relaxed);
			if (r < 0 && errno == ETIMEDOUT && atomic_load(&queued) == 0) {
				ht_lock(&ht_writer_lock);
				if (ht_writer_dirty())
					ht_writer_flush(false);
				held_since = 0;
				ht_unlock(&ht_writer_lock);
				/* every second, or every tick once main is gone */
				uint64_t now = ht_clock_ns();
				if (!dirty && atomic_load(&ht_state) == HT_STATE_RECORDING &&
				    (main_gone || now - last_look >= 1000000000u)) {
					last_look = now;
					if (only_thread_left())
						exit_as_last_thread();
				}
			}
			continue;
		}
		/* A program that ships a block more often than every 200 ms
		 * never leaves the writer idle: what it holds goes to the file
		 * once it has held it for HT_HOLD_NS, so that a SIGKILL loses
		 * no more than that beyond the threads' own half second. (Not
		 * sooner: a batch that fills in less keeps its 32 blocks, which
		 * compress better together.) */
		ht_lock(&ht_writer_lock);
		write_queue_drain_locked();
		if (!ht_writer_dirty()) {
			held_since = 0;
		} else {
			uint64_t now = ht_clock_ns();
			if (!held_since) {
				held_since = now;
			} else if (now - held_since >= (uint64_t)HT_HOLD_NS) {
				ht_writer_flush(false);
				held_since = 0;
			}
		}
		ht_unlock(&ht_writer_lock);
	}
	return NULL;
}

/* Starts a helper thread once; *started stays false if it cannot be
 * (producers then do its work). */
static void start_helper(_Atomic bool *started, void *(*main)(void *))
{
	bool expected = false;
	if (!atomic_compare_exchange_strong(started, &expected, true))
		return;
	/* A helper must never take the program's signals (rule: helper
	 * threads block all signals), so it is born with all of them blocked. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	pthread_t th;
	if (pthread_create(&th, &attr, main, NULL) != 0)
		atomic_store(started, false);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void ht_flusher_start(void)
{
	if (atomic_load_explicit(&writer_started, memory_order_relaxed) ||
	    getpid() != ht_pid || atomic_load(&ht_state) != HT_STATE_RECORDING)
		return;
	int saved_guard = ht_guard;
	ht_guard = 1; /* pthread_create's allocations are ours */
	start_helper(&writer_started, writer_main);
	ht_guard = saved_guard;
}

/* Queues b for the digester; when it is behind (or absent), digests the
 * blocks waiting on this thread, unless queue_only. */
static void digest_enqueue(ht_block_t *b, bool wake, bool queue_only)
{
	if (!atomic_load_explicit(&digester_started, memory_order_relaxed) && !queue_only)
		start_helper(&digester_started, digester_main);
	b->wake = wake;
	unsigned n = enqueue(&digest_head, &digest_tail, &to_digest, b, wake);
	if (queue_only || (n <= HT_MAX_QUEUED && atomic_load(&digester_started)))
		return;
	atomic_fetch_add_explicit(&self_writes, 1, memory_order_relaxed);
	ht_lock(&ht_live_lock);
	for (unsigned i = 0; i < n && digest_one_live_locked(true, false); i++)
		;
	ht_unlock(&ht_live_lock);
}

void ht_block_submit(ht_block_t *b, bool wake)
{
	/* A child made by a raw clone(CLONE_VM) is another process in our
	 * memory: a helper started there would live in its thread group
	 * (and end that with exit when left alone), and its writes are
	 * refused (writer.c). It only queues; our helpers do the rest. */
	bool clone_child = getpid() != ht_pid;
	/* A thread that ends its event while the trace is being finished (or
	 * flushed for an exec) only queues: the finish, which waits for it,
	 * writes the queues once it holds the locks a write here would wait
	 * for, and starts no helper. */
	bool queue_only = clone_child || atomic_load(&ht_state) != HT_STATE_RECORDING;
	if (!atomic_load_explicit(&writer_started, memory_order_relaxed) && !queue_only)
		start_helper(&writer_started, writer_main);
	/* With a second thread, each thread packs and compresses its own
	 * blocks (agent/packer.c): the helpers would be the bottleneck, and
	 * the events would cross cores twice. A single-threaded program
	 * leaves the work to the helpers, on the other core. Blocks already
	 * queued go first: a thread's blocks stay in their order. */
	if (!queue_only && ht_opt_own_pack &&
	    atomic_load_explicit(&ht_thread_states, memory_order_relaxed) > 1 &&
	    atomic_load(&in_queues) == 0) {
		/* The live table stays with the digester thread: digesting
		 * on each thread under ht_live_lock cost the mailbox bench
		 * 20% more CPU (the lock and the table's lines moving between
		 * cores). Packed here, the block goes there to be read. */
		bool digest = digest_stage();
		b->digested = digest; /* not in pack_own */
		bool packed = ht_packer_pack_own(b);
		b->digested = false;
		if (packed) {
			if (digest) {
				b->packed = true;
				digest_enqueue(b, wake, false);
			} else {
				block_put(b);
			}
			return;
		}
		/* out of memory for the packer: the writer thread's way */
	}
	atomic_fetch_add(&in_queues, 1);
	if (digest_stage())
		digest_enqueue(b, wake, queue_only);
	else
		write_enqueue(b, wake);
	if (queue_only)
		return;
	if (atomic_load(&queued) > HT_MAX_QUEUED || !atomic_load(&writer_started)) {
		/* The writer is behind (or absent): write now, on this thread;
		 * with no writer to write the batch later, write it too. */
		atomic_fetch_add_explicit(&self_writes, 1, memory_order_relaxed);
		ht_lock(&ht_writer_lock);
		write_queue_drain_locked();
		if (!atomic_load(&writer_started))
			ht_writer_flush(false);
		ht_unlock(&ht_writer_lock);
	}
}

void ht_flusher_wake(void)
{
	syscall(SYS_futex, &queued, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

uint64_t ht_flusher_idle_ns(void)
{
	return atomic_load_explicit(&idle_ns, memory_order_relaxed);
}

uint64_t ht_flusher_self_writes(void)
{
	return atomic_load_explicit(&self_writes, memory_order_relaxed);
}

void ht_flusher_fork_prepare(void)
{
	ht_packers_fork_prepare(); /* before ht_live_lock, which their holders take */
	ht_lock(&ht_live_lock); /* the digester between blocks */
	ht_lock(&queue_lock);
}

void ht_flusher_fork_parent(void)
{
	ht_unlock(&queue_lock);
	ht_unlock(&ht_live_lock);
	ht_packers_fork_parent();
}

/* Gives every block of a queue back to the pool; queue_lock held. */
static void pool_put_list_locked(ht_block_t *list)
{
	while (list) {
		ht_block_t *next = list->next;
		block_put_locked(list);
		list = next;
	}
}

void ht_flusher_fork_child(void)
{
	/* Queued blocks are the parent's (it writes them); the helper threads
	 * did not survive the fork. Recycle the blocks, restart lazily. */
	ht_lock_reset(&ht_live_lock);
	ht_lock_reset(&queue_lock);
	pool_put_list_locked(queue_head);
	pool_put_list_locked(digest_head);
	queue_head = queue_tail = digest_head = digest_tail = NULL;
	atomic_store(&queued, 0);
	atomic_store(&to_digest, 0);
	atomic_store(&writer_started, false);
	atomic_store(&digester_started, false);
	atomic_store(&digester_tid, 0);
	atomic_store(&in_queues, 0);
	ht_packers_fork_child();
}
