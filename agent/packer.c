/* packer.c - packing and compressing blocks on the thread that made them.
 *
 * A packer is what turns full blocks into the trace's bytes: an address-
 * coding stream (common/packed.h), a batch of up to 32 packed blocks split
 * into columns (THREAD_BATCH3), and a zstd context of its own that
 * compresses each batch into one complete zstd frame. Once a process has
 * a second thread, a thread whose block fills packs it itself, on its own
 * core (ht_block_submit), and threads compress at once instead of waiting
 * on one writer; the block then goes to the digester thread only to be
 * read into the live table (agent/flusher.c), which stays on one core. A finished frame goes
 * to the file at once when ht_writer_lock is free (ht_lock_try, once per
 * batch of about 2 MiB of events), else to a short queue of frames that
 * the next holder of the lock writes first; a frame is written whole, with
 * write(), so the file is always a run of complete frames and whole records,
 * and a SIGKILL can only cut the last one (which the reader already
 * tolerates). The writer's own records (modules, names, leaks) end their
 * zstd frame before a packer's frame goes in (ht_writer_put_frame).
 *
 * A thread always uses the packer of its tid (tid % npackers), and so do
 * the writer thread and the finish when they pack that thread's blocks: a
 * thread's blocks, and a stream's, reach the file in the order they were
 * made, which the reader's join relies on (each thread's blocks in file
 * order, merged across threads by time stamp). The packers are a few
 * (one per CPU, 2 to 16), each mapped on first use, so a program of a
 * thousand threads costs what one of sixteen does: threads that share a
 * packer wait for it (a futex) for the length of one block's split, or of
 * one batch's compression.
 *
 * Locks: ht_writer_lock, then a packer's lock, then ht_live_lock. A packer's
 * holder only tries ht_writer_lock, never waits for it; holders of
 * ht_writer_lock that need a packer (the finish, an exec, fork) wait for
 * it at most 2 s. A program thread packs with the asynchronous signals
 * blocked, so no handler of the program's (nor the agent's fatal one) runs
 * while a packer is half changed.
 */
#define ZSTD_STATIC_LINKING_ONLY
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <zstd.h>

#include "agent.h"
#include "columns.h"
#include "live.h"
#include "packed.h"

#define HT_PACKERS_MAX 16u /* at most HT_PK_STREAMS: packer i codes stream i */
_Static_assert(HT_PACKERS_MAX <= HT_PK_STREAMS, "a stream per packer");

/* The batch: 32 blocks of 64 KiB; churn's trace is 5% smaller than with
 * one record per block, sqlite3's 8%. The address, size and free code
 * columns are then split, first bytes of varints apart from the rest. */
#define HT_BATCH_BLOCKS 32u
#define HT_BATCH_REGION ((size_t)HT_BATCH_BLOCKS * HT_BUF_SIZE)
#define HT_BATCH_HEAD_MAX ((4 + HT_NCOLS) * HT_VARINT_MAX)
#define HT_BATCH_SPLIT_COLS 3
static const unsigned batch_split_col[HT_BATCH_SPLIT_COLS] = {HT_COL_ADDR, HT_COL_SIZE,
							      HT_COL_STACK /* free codes */};
/* A frame's bytes: the whole batch record, compressed or not */
#define HT_RECORD_MAX (HT_NCOLS * HT_BATCH_REGION + sizeof(((struct packer *)0)->head) + 64)

typedef struct packer {
	ht_lock_t lock;
	bool started;	   /* the stream is in step with what was written */
	ht_pk_writer_t *w; /* the stream's tables, mapped on first use */
	uint8_t *cols;	   /* HT_NCOLS regions of HT_BATCH_REGION bytes */
	uint8_t *rest;	   /* HT_BATCH_SPLIT_COLS regions: continuation bytes */
	size_t fill[HT_NCOLS];
	unsigned count;
	size_t head_len;
	uint8_t head[HT_BATCH_BLOCKS * HT_BATCH_HEAD_MAX];
	_Atomic uint64_t since; /* ht_clock_ns of the batch's first block, 0: empty */
	ZSTD_CCtx *cctx;
	void *ws;
	size_t ws_size;
	uint8_t *out; /* the frame being made */
	size_t outlen;
} packer_t;

static packer_t packers[HT_PACKERS_MAX];
static _Atomic unsigned npackers;
static _Atomic uint64_t lost_blocks; /* packers out of memory */

/* Blocks lost for memory: counted, and the trace's END says events were
 * lost (the report warns). */
static void note_lost(uint64_t n)
{
	atomic_fetch_add(&lost_blocks, n);
	atomic_fetch_or(&ht_agent_flags, HT_AGENT_OUT_OF_MEMORY);
}

static unsigned packer_count(void)
{
	unsigned n = atomic_load_explicit(&npackers, memory_order_relaxed);
	if (HT_LIKELY(n))
		return n;
	cpu_set_t set;
	unsigned cpus = 1;
	if (syscall(SYS_sched_getaffinity, 0, sizeof set, &set) > 0)
		cpus = (unsigned)CPU_COUNT(&set);
	n = cpus < 2 ? 2 : cpus > HT_PACKERS_MAX ? HT_PACKERS_MAX : cpus;
	unsigned zero = 0;
	atomic_compare_exchange_strong(&npackers, &zero, n);
	return atomic_load(&npackers);
}

static inline packer_t *packer_of(uint32_t tid)
{
	return &packers[tid % packer_count()];
}

/* ---- finished frames waiting for ht_writer_lock ---------------------------- */

typedef struct frame {
	struct frame *next;
	size_t len, cap; /* cap: of data, the mapping less this header */
	uint8_t data[];
} frame_t;

static ht_lock_t frames_lock;
static frame_t *frames_head, *frames_tail, *frames_free;
static _Atomic unsigned frames_waiting;

bool ht_packer_frames_waiting(void)
{
	return atomic_load_explicit(&frames_waiting, memory_order_relaxed) != 0;
}

/* Queues a copy of p's frame; false when out of memory. */
static bool frame_queue(const uint8_t *data, size_t len)
{
	ht_lock(&frames_lock);
	frame_t *f = frames_free, **pp = &frames_free;
	while (f && f->cap < len) {
		pp = &f->next;
		f = f->next;
	}
	if (f)
		*pp = f->next;
	ht_unlock(&frames_lock);
	if (!f) {
		size_t size = (sizeof *f + len + 65535) & ~(size_t)65535;
		f = ht_mmap(size);
		if (!f)
			return false;
		f->cap = size - sizeof *f;
	}
	memcpy(f->data, data, len);
	f->len = len;
	f->next = NULL;
	ht_lock(&frames_lock);
	if (frames_tail)
		frames_tail->next = f;
	else
		frames_head = f;
	frames_tail = f;
	atomic_fetch_add(&frames_waiting, 1);
	ht_unlock(&frames_lock);
	return true;
}

void ht_packer_frames_write_locked(void)
{
	for (;;) {
		ht_lock(&frames_lock);
		frame_t *list = frames_head;
		frames_head = frames_tail = NULL;
		atomic_store(&frames_waiting, 0);
		ht_unlock(&frames_lock);
		if (!list)
			return;
		while (list) {
			frame_t *next = list->next;
			ht_writer_put_frame(list->data, list->len);
			ht_lock(&frames_lock);
			list->next = frames_free;
			frames_free = list;
			ht_unlock(&frames_lock);
			list = next;
		}
	}
}

/* Writes p's finished frame: at once if the writer's lock is ours or
 * free, else queued for its next holder. */
static void frame_put(packer_t *p)
{
	if (!p->outlen)
		return;
	if (ht_lock_held(&ht_writer_lock)) {
		ht_packer_frames_write_locked(); /* older frames first */
		ht_writer_put_frame(p->out, p->outlen);
	} else if (ht_lock_try(&ht_writer_lock)) {
		ht_packer_frames_write_locked();
		ht_writer_put_frame(p->out, p->outlen);
		ht_unlock(&ht_writer_lock);
	} else if (!frame_queue(p->out, p->outlen)) {
		note_lost(1);
	} else {
		ht_flusher_wake();
	}
	p->outlen = 0;
}

/* ---- compression ------------------------------------------------------------ */

/* p's compression context, made on first use; false when out of memory. */
static bool cctx_ready(packer_t *p)
{
	if (!p->cctx) {
		if (!p->ws) {
			p->ws_size = ht_writer_cstream_size();
			p->ws = ht_mmap(p->ws_size);
		}
		if (p->ws)
			p->cctx = ZSTD_initStaticCCtx(p->ws, p->ws_size);
	}
	return p->cctx != NULL;
}

/* Makes p->out one record (tag, parts): a complete zstd frame, or the raw
 * record when the trace is not compressed. False when out of memory. */
static bool frame_make(packer_t *p, uint8_t tag, const void *const *part, const size_t *len,
		       size_t nparts)
{
	size_t total = 0;
	for (size_t i = 0; i < nparts; i++)
		total += len[i];
	uint8_t hdr[1 + HT_VARINT_MAX];
	size_t hn = 0;
	hdr[hn++] = tag;
	hn += ht_varint_put(hdr + hn, total);
	size_t outcap = ZSTD_compressBound(HT_RECORD_MAX);
	if (!p->out && !(p->out = ht_mmap(outcap)))
		return false;
	p->outlen = 0;
	unsigned level;
	if (!ht_writer_frame_level(&level)) {
		memcpy(p->out, hdr, hn);
		p->outlen = hn;
		for (size_t i = 0; i < nparts; i++) {
			memcpy(p->out + p->outlen, part[i], len[i]);
			p->outlen += len[i];
		}
		return true;
	}
	if (!cctx_ready(p))
		return false;
	uint64_t t0 = ht_clock_ns();
	ZSTD_CCtx_reset(p->cctx, ZSTD_reset_session_only);
	ht_writer_zstd_configure(p->cctx, level);
	/* the size known: zstd sizes its tables to the frame's */
	ZSTD_CCtx_setPledgedSrcSize(p->cctx, hn + total);
	ZSTD_outBuffer out = {p->out, outcap, 0};
	for (size_t i = 0; i <= nparts; i++) {
		ZSTD_inBuffer in = i == 0 ? (ZSTD_inBuffer){hdr, hn, 0}
					  : (ZSTD_inBuffer){part[i - 1], len[i - 1], 0};
		while (in.pos < in.size) {
			size_t r = ZSTD_compressStream2(p->cctx, &out, &in, ZSTD_e_continue);
			if (ZSTD_isError(r))
				return false;
		}
	}
	ZSTD_inBuffer none = {NULL, 0, 0};
	size_t left;
	do {
		left = ZSTD_compressStream2(p->cctx, &out, &none, ZSTD_e_end);
		if (ZSTD_isError(left))
			return false;
	} while (left);
	p->outlen = out.pos;
	ht_writer_frame_done(hn + total, ht_clock_ns() - t0);
	return true;
}

/* The holder of ht_writer_lock (the writer thread, a single-threaded
 * program's blocks) writes a record into the writer's own zstd stream, as
 * one writer always did: its window spans the batches, where a frame per
 * batch made deep's and sqlite3's traces 5-7% larger. False: not held. */
static bool record_locked(uint8_t tag, const void *const *part, const size_t *len, size_t nparts)
{
	if (!ht_lock_held(&ht_writer_lock))
		return false;
	ht_packer_frames_write_locked(); /* older frames first */
	ht_writer_recordv(tag, part, len, nparts);
	return true;
}

/* ---- the batch ---------------------------------------------------------------- */

static void batch_clear(packer_t *p)
{
	p->count = 0;
	p->head_len = 0;
	memset(p->fill, 0, sizeof p->fill);
	atomic_store_explicit(&p->since, 0, memory_order_relaxed);
}

/* Compresses and writes p's batch as one THREAD_BATCH3 record. */
static void batch_emit(packer_t *p)
{
	if (!p->count)
		return;
	enum { NPARTS = 2 + HT_NCOLS + HT_BATCH_SPLIT_COLS };
	uint8_t count[(1 + HT_BATCH_SPLIT_COLS) * HT_VARINT_MAX];
	const void *part[NPARTS] = {count, p->head};
	size_t plen[NPARTS] = {ht_varint_put(count, p->count), p->head_len};
	size_t np = 2;
	size_t nrest[HT_NCOLS] = {0};
	const uint8_t *rest[HT_NCOLS] = {NULL};
	for (unsigned k = 0; k < HT_BATCH_SPLIT_COLS; k++) {
		unsigned c = batch_split_col[k];
		uint8_t *r = p->rest + k * HT_BATCH_REGION;
		size_t nfirst = ht_varints_split(p->cols + c * HT_BATCH_REGION, p->fill[c], r,
						 &nrest[c]);
		plen[0] += ht_varint_put(count + plen[0], nfirst);
		rest[c] = r;
	}
	for (unsigned c = 0; c < HT_NCOLS; c++) {
		part[np] = p->cols + c * HT_BATCH_REGION;
		plen[np++] = p->fill[c] - nrest[c];
		if (rest[c]) {
			part[np] = rest[c];
			plen[np++] = nrest[c];
		}
	}
	unsigned n = p->count;
	batch_clear(p);
	if (record_locked(HT_REC_THREAD_BATCH3, part, plen, np))
		return;
	if (frame_make(p, HT_REC_THREAD_BATCH3, part, plen, np)) {
		frame_put(p);
	} else {
		/* out of memory: the stream's codes name blocks never written */
		p->started = false;
		note_lost(n);
	}
}

/* Where the next block's columns go (room bytes each); false when out of
 * memory. Emits the batch first when a column has no room left. */
static bool batch_room(packer_t *p, uint8_t **col)
{
	if (!p->cols && !(p->cols = ht_mmap(HT_NCOLS * HT_BATCH_REGION)))
		return false;
	if (!p->rest && !(p->rest = ht_mmap(HT_BATCH_SPLIT_COLS * HT_BATCH_REGION)))
		return false;
	for (unsigned c = 0; c < HT_NCOLS; c++)
		if (HT_BATCH_REGION - p->fill[c] < HT_BUF_SIZE)
			batch_emit(p);
	for (unsigned c = 0; c < HT_NCOLS; c++)
		col[c] = p->cols + c * HT_BATCH_REGION + p->fill[c];
	return true;
}

static void batch_add(packer_t *p, const uint8_t *head, size_t head_len, const size_t *len)
{
	uint8_t *h = p->head + p->head_len;
	memcpy(h, head, head_len);
	size_t n = head_len;
	for (unsigned c = 0; c < HT_NCOLS; c++) {
		n += ht_varint_put(h + n, len[c]);
		p->fill[c] += len[c];
	}
	p->head_len += n;
	if (p->count++ == 0)
		atomic_store_explicit(&p->since, ht_clock_ns(), memory_order_relaxed);
	if (p->count == HT_BATCH_BLOCKS)
		batch_emit(p);
}

/* Packs b into p's batch (p held). */
static void pack_locked(packer_t *p, const ht_block_t *b)
{
	if ((ht_opt_leak_check || ht_opt_summary) && !b->digested &&
	    !ht_lock_held(&ht_live_lock) /* see ht_blocks_drain_locked */) {
		ht_lock(&ht_live_lock);
		ht_live_digest(b);
		ht_unlock(&ht_live_lock);
	}
	if (ht_opt_summary)
		return; /* the digest is all that is kept */
	uint8_t head[4 * HT_VARINT_MAX];
	size_t n = ht_varint_put(head, b->tid);
	n += ht_varint_put(head + n, b->base_time);
	bool fresh = !p->started;
	if (fresh) {
		/* zeroed by the kernel, page by page as they are used (a memset
		 * of its ~900 KB copied every page of the parent's in each fork
		 * child) */
		if (!p->w)
			p->w = ht_mmap(sizeof(ht_pk_writer_t));
		else if (madvise(p->w, sizeof(ht_pk_writer_t), MADV_DONTNEED) != 0)
			memset(p->w, 0, sizeof(ht_pk_writer_t));
		p->started = p->w != NULL;
	}
	uint8_t *col[HT_NCOLS];
	size_t len[HT_NCOLS];
	bool joined = !fresh && p->w->join_next;
	unsigned layout = HT_PK_BATCH | HT_PK_SIZES | HT_PK_RANK | HT_PK_FREED |
			  (joined ? HT_PK_JOINED : HT_PK_FREES);
	if (!p->started || b->len > HT_BUF_SIZE || !batch_room(p, col) ||
	    !ht_packed_split(b->data, b->len, col, len, HT_BUF_SIZE, p->w, layout)) {
		/* out of memory, or bytes the split does not know: as they are,
		 * after the batch, and the stream, now out of step, starts
		 * afresh next time */
		p->started = false;
		batch_emit(p);
		const void *part[2] = {head, b->data};
		const size_t plen[2] = {n, b->len};
		if (record_locked(HT_REC_THREAD_BLOCK, part, plen, 2))
			return;
		if (frame_make(p, HT_REC_THREAD_BLOCK, part, plen, 2))
			frame_put(p);
		else
			note_lost(1);
		return;
	}
	unsigned s = (unsigned)(p - packers);
	n += ht_varint_put(head + n, (uint64_t)s << 1 | fresh);
	n += ht_varint_put(head + n, ht_pk_flags_of_layout(layout));
	batch_add(p, head, n, len);
}

/* ---- the interface ---------------------------------------------------------- */

/* Whether p has the memory a block's packing needs, allocating what it
 * lacks: a packer that cannot get it leaves the block to the writer
 * thread, whose buffers exist already, rather than lose it. */
static bool packer_memory(packer_t *p)
{
	unsigned level;
	if (!p->w && !(p->w = ht_mmap(sizeof(ht_pk_writer_t))))
		return false;
	if (!p->out && !(p->out = ht_mmap(ZSTD_compressBound(HT_RECORD_MAX))))
		return false;
	if (!p->cols && !(p->cols = ht_mmap(HT_NCOLS * HT_BATCH_REGION)))
		return false;
	if (!p->rest && !(p->rest = ht_mmap(HT_BATCH_SPLIT_COLS * HT_BATCH_REGION)))
		return false;
	return !ht_writer_frame_level(&level) || cctx_ready(p);
}

bool ht_packer_pack_own(const ht_block_t *b)
{
	sigset_t async, old;
	ht_async_signals(&async);
	pthread_sigmask(SIG_BLOCK, &async, &old);
	packer_t *p = packer_of(b->tid);
	ht_lock(&p->lock);
	bool ok = packer_memory(p);
	if (ok)
		pack_locked(p, b);
	ht_unlock(&p->lock);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return ok;
}

void ht_packer_pack_locked(const ht_block_t *b)
{
	packer_t *p = packer_of(b->tid);
	/* a fatal fault of this thread's own packing finds its packer held:
	 * the block is lost rather than the batch broken */
	if (!ht_lock_timed(&p->lock, 2000)) {
		note_lost(1);
		return;
	}
	pack_locked(p, b);
	ht_unlock(&p->lock);
}

void ht_packers_emit_locked(uint64_t older_than_ns)
{
	ht_packer_frames_write_locked();
	unsigned n = packer_count();
	uint64_t now = older_than_ns ? ht_clock_ns() : 0;
	for (unsigned i = 0; i < n; i++) {
		packer_t *p = &packers[i];
		uint64_t since = atomic_load_explicit(&p->since, memory_order_relaxed);
		if (!since || (older_than_ns && now - since < older_than_ns))
			continue;
		/* the writer thread's look for held batches passes a busy
		 * packer by: its holder writes soon */
		if (older_than_ns ? !ht_lock_try(&p->lock) : !ht_lock_timed(&p->lock, 2000))
			continue;
		batch_emit(p);
		ht_unlock(&p->lock);
	}
}

uint64_t ht_packers_lost(void)
{
	return atomic_load(&lost_blocks);
}

void ht_packers_fork_prepare(void)
{
	/* the packers first: their holders may queue a frame */
	unsigned n = packer_count();
	for (unsigned i = 0; i < n; i++)
		ht_lock(&packers[i].lock);
	ht_lock(&frames_lock);
}

void ht_packers_fork_parent(void)
{
	ht_unlock(&frames_lock);
	unsigned n = packer_count();
	for (unsigned i = n; i-- > 0;)
		ht_unlock(&packers[i].lock);
}

void ht_packers_fork_child(void)
{
	/* The batches and queued frames are the parent's (it writes them);
	 * the child's trace is a new file, whose streams start afresh. */
	ht_lock_reset(&frames_lock);
	for (frame_t *f = frames_head, *next; f; f = next) {
		next = f->next;
		f->next = frames_free;
		frames_free = f;
	}
	frames_head = frames_tail = NULL;
	atomic_store(&frames_waiting, 0);
	for (unsigned i = 0; i < HT_PACKERS_MAX; i++) {
		ht_lock_reset(&packers[i].lock);
		batch_clear(&packers[i]);
		packers[i].started = false;
		packers[i].outlen = 0;
	}
}
