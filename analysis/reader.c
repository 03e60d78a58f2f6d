/* reader.c - parse a heaptrail trace file (common/trace_format.h).
 *
 * Three stages:
 *  1. header check, then one pass of ZSTD_decompressStream over the body
 *     that keeps nothing but its length and where it is damaged,
 *     remembering how far the compressed input had got for each chunk of
 *     output so that errors can name a file offset too; the body then gets
 *     an address range of that length, filled by a second decompression
 *     as stage 2 reaches each record (raw bodies are copied), so the pages
 *     of the records stage 2 is done with can go back to the system;
 *  2. one parse pass over the records: every length and varint is checked
 *     against the bytes that are really there; thread-block events are fully
 *     validated and STACK definitions collected, blocks are only indexed;
 *  3. ht_merge_* decodes the validated blocks again on demand and merges the
 *     threads by time with a binary heap; packed blocks past a budget are
 *     joined again by a replay of the body ("replayed blocks" below).
 * The first bad byte stops stage 2; what came before it stays usable.
 */
#include "analysis/reader.h"
#include "columns.h"
#include "packed.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_d_forceIgnoreChecksum */
#include <zstd.h>
#include <zstd_errors.h>

#include "trace_format.h"
#include "analysis/progress.h"
#include "analysis/util.h"

/* One segment of the module address index. */
typedef struct seg_ref {
	uint64_t start, end; /* [start, end) */
	uint32_t module;
} seg_ref_t;

/* Checkpoint of the decompression: out bytes had been produced once the
 * compressed input reached in_pos (a file offset). */
typedef struct zmark {
	uint64_t out, in_pos;
} zmark_t;

typedef struct trace_priv {
	ht_map_t stack_by_id;  /* stack id -> index in stacks */
	ht_map_t name_by_id;   /* name id -> index in names */
	ht_map_t thread_by_tid;
	seg_ref_t *segs;       /* sorted by start */
	uint64_t *seg_maxend;  /* prefix maximum of end, for overlapping ranges */
	size_t nsegs;
	zmark_t *marks;
	size_t nmarks, cap_marks;
	bool zdamage; /* t->error came from decompression (body cut there) */
	/* the body's lazy filling (body_fill): the stream decompressing the
	 * compressed input (NULL for a raw body), and how much of the body
	 * is there */
	ZSTD_DStream *zfill;
	ZSTD_inBuffer zfill_in;
	size_t filled;
	size_t zin_dropped; /* input_drop's progress for zfill */
	bool body_mapped; /* t->body is an mmap'd range, not malloc's */
	uint8_t *zin_owned; /* the file's bytes, kept for replays: malloc'd, */
	size_t zin_mapped;  /* or a mapping of the file of this length */
	/* replayed blocks (below): packed blocks joined so far, and the
	 * latest first time of the blocks left to the merge to join */
	uint64_t npk;
	uint64_t replay_max;
	size_t resident; /* joined bytes kept within the budget, */
	size_t resident_max; /* which is this (resident_max()) */
	size_t nreplayed;
	/* where replays start: the first packed record past the budget, and
	 * the streams' states and the packed block count there */
	bool switched;
	size_t snap_rec;
	uint64_t snap_npk;
	ht_pk_reader_t *snap[HT_PK_STREAMS];
	/* a replay's own parse (replay_open): the trace it joins blocks for,
	 * where each one goes, the next block of `of` to match, the thread
	 * it joins for (UINT32_MAX: all) and where its parse is */
	const ht_trace_t *of;
	uint8_t **rbuf;
	size_t next_bi;
	uint32_t want_thread;
	size_t resume;
	/* packed blocks (common/packed.h): the streams' states, and the
	 * joined events, in chunks that never move (blocks point into them) */
	ht_pk_reader_t *streams[HT_PK_STREAMS];
	uint8_t **chunks;
	size_t nchunks, cap_chunks, chunk_fill, chunk_size;
	bool in_joined;	      /* parsing joined events: errors name the record */
	size_t packed_record; /* the body offset of that record */
	/* follow mode (ht_reader_follow): the file and how far it was read,
	 * its decompression, the body bytes not yet parsed (pend), the body
	 * offset of the current record (fbase: messages name it) and the
	 * modules the segment index holds */
	bool follow, fhead, ffirst;
	int ffd;
	uint64_t fin, fbase;
	ZSTD_DStream *fz;
	uint8_t *pend;
	size_t npend, cap_pend, fmodules;
	/* verify_checksums on a worker thread while the body is read */
	bool verifying;
	pthread_t verifier;
	const uint8_t *v_data;
	size_t v_len, v_limit;
} trace_priv_t;

/* Outcome of decoding a field or event. */
enum { DEC_OK = 0, DEC_TRUNC = -1, DEC_CORRUPT = -2 };

/* ---- error reporting ------------------------------------------------------- */

/* File offset for a body offset: exact for raw bodies, the input position
 * reached when that output was produced for compressed ones. */
static void locate(ht_trace_t *t, uint64_t off)
{
	trace_priv_t *p = t->priv;
	t->error_file_offset = -1;
	t->error_file_offset_approx = false;
	if (!(t->file_flags & HT_FILE_ZSTD)) {
		t->error_file_offset = (int64_t)(HT_FILE_HEADER_LEN + off);
		return;
	}
	for (size_t i = 0; i < p->nmarks; i++) {
		if (p->marks[i].out > off) {
			t->error_file_offset = (int64_t)p->marks[i].in_pos;
			t->error_file_offset_approx = true;
			return;
		}
	}
}

static void fail(ht_trace_t *t, int err, uint64_t off, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Record the first problem only: later ones are consequences of it. */
static void fail(ht_trace_t *t, int err, uint64_t off, const char *fmt, ...)
{
	trace_priv_t *p = t->priv;
	/* after a decompression error, the parse ends with a truncation that is
	 * its consequence; only corruption earlier in the body is news */
	if (t->error && !(p->zdamage && err == -HT_ECORRUPT))
		return;
	p->zdamage = false;
	if (p->in_joined)
		off = p->packed_record;
	off += p->fbase;
	t->error = err;
	t->error_offset = off;
	locate(t, off);

	char what[300];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);

	const char *kind = err == -HT_ETRUNC ? "trace truncated" : "trace corrupt";
	if (t->error_file_offset < 0)
		snprintf(t->message, sizeof(t->message), "%s at body offset %" PRIu64 ": %s",
			 kind, off, what);
	else if (t->error_file_offset_approx)
		snprintf(t->message, sizeof(t->message),
			 "%s at decompressed offset %" PRIu64
			 " (compressed file offset ~%" PRId64 "): %s",
			 kind, off, t->error_file_offset, what);
	else
		snprintf(t->message, sizeof(t->message),
			 "%s at file offset %" PRId64 " (body offset %" PRIu64 "): %s", kind,
			 t->error_file_offset, off, what);
}

/* ---- primitive decoders ---------------------------------------------------- */

/* Varint at p[*pos] with p[0..end): truncated when the bytes run out while
 * continuation bits are still set, corrupt when it overflows 64 bits. */
static int get_u_long(const uint8_t *p, size_t end, size_t *pos, uint64_t *v);

/* Inline for the one-byte varints (most fields), whose decoding was a call
 * per field: 12% of a report's instructions. */
static inline int get_u(const uint8_t *p, size_t end, size_t *pos, uint64_t *v)
{
	size_t q = *pos;
	if (__builtin_expect(q < end && p[q] < 0x80, 1)) {
		*v = p[q];
		*pos = q + 1;
		return DEC_OK;
	}
	return get_u_long(p, end, pos, v);
}

static int get_u_long(const uint8_t *p, size_t end, size_t *pos, uint64_t *v)
{
	if (*pos >= end)
		return DEC_TRUNC;
	size_t n = ht_varint_get(p + *pos, end - *pos, v);
	if (n) {
		*pos += n;
		return DEC_OK;
	}
	return end - *pos < HT_VARINT_MAX ? DEC_TRUNC : DEC_CORRUPT;
}

static int get_s(const uint8_t *p, size_t end, size_t *pos, int64_t *v)
{
	uint64_t u;
	int r = get_u(p, end, pos, &u);
	if (r == DEC_OK)
		*v = ht_unzigzag(u);
	return r;
}

/* A field cursor over one record payload. The first failure sticks, so a
 * record's fields can be read in a row and checked once. */
typedef struct fields {
	const uint8_t *p;
	size_t pos, end;
	int err;       /* DEC_* */
	size_t err_at; /* body offset of the failing field */
	bool nomem;
} fields_t;

static uint64_t f_u(fields_t *f)
{
	uint64_t v = 0;
	if (f->err)
		return 0;
	size_t at = f->pos;
	int r = get_u(f->p, f->end, &f->pos, &v);
	if (r) {
		f->err = r;
		f->err_at = at;
		return 0;
	}
	return v;
}

/* String as a NUL-terminated copy (embedded NULs end it early, harmlessly).
 * Returns NULL on error (f->err or f->nomem set). */
static char *f_str(fields_t *f, size_t *len_out)
{
	size_t at = f->pos;
	uint64_t len = f_u(f);
	if (f->err)
		return NULL;
	if (len > HT_MAX_STRING) {
		f->err = DEC_CORRUPT;
		f->err_at = at;
		return NULL;
	}
	if (len > f->end - f->pos) {
		f->err = DEC_TRUNC;
		f->err_at = f->pos;
		return NULL;
	}
	char *s = malloc(len + 1);
	if (!s) {
		f->nomem = true;
		return NULL;
	}
	memcpy(s, f->p + f->pos, len);
	s[len] = '\0';
	f->pos += len;
	if (len_out)
		*len_out = len;
	return s;
}

/* ---- events ---------------------------------------------------------------- */

/* Decoder state of one thread block. ENTER's function addresses are deltas
 * on their own chain (fn), apart from the heap addresses' (addr). */
typedef struct evstate {
	uint64_t time, addr, fn;
} evstate_t;

/* A STACK or NAME definition as decoded; a STACK's ips go to caller
 * scratch, a NAME's text stays in the body at name_off. */
typedef struct stackdef {
	uint64_t id;
	uint32_t depth;
	size_t name_off, name_len;
} stackdef_t;

/* Decode one event at p[*pos] (p[0..end) is the block). Updates the block
 * state. For STACK, fills *sd and writes the frames to ips (room for
 * HT_MAX_DEPTH); for NAME, fills sd->id and the text's place. Returns
 * DEC_*; *pos only advances on success. */
static int decode_event(const uint8_t *p, size_t end, size_t *pos, evstate_t *st, ht_event_t *ev,
			stackdef_t *sd, uint64_t *ips)
{
	size_t q = *pos;
	if (q >= end)
		return DEC_TRUNC;
	uint8_t b = p[q++];
	uint8_t type = b & 0x0f;
	uint64_t dtime, v;
	int64_t d;
	int r;

	ev->type = type;
	ev->fn = b >> 4;
	ev->call_site = 0;
	ev->name_id = 0;
	ev->old_size = 0;
	ev->pooled = false;
	ev->from_pool_op = false;
	ev->pool = 0;
	switch (type) {
	case HT_EV_ALLOC:
	case HT_EV_PALLOC:
	case HT_EV_REALLOC:
	case HT_EV_FREE:
		if ((r = get_u(p, end, &q, &dtime)) || (r = get_s(p, end, &q, &d)))
			return r;
		ev->time = st->time + dtime;
		ev->addr = st->addr + (uint64_t)d;
		ev->size = 0;
		ev->stack_id = 0;
		ev->old_addr = 0;
		if (type != HT_EV_FREE) {
			if ((r = get_u(p, end, &q, &ev->size)) || (r = get_u(p, end, &q, &ev->stack_id)))
				return r;
		}
		ev->free_time = ev->time;
		if (type == HT_EV_REALLOC) {
			uint64_t lead;
			if ((r = get_s(p, end, &q, &d)) || (r = get_u(p, end, &q, &lead)))
				return r;
			ev->old_addr = ev->addr + (uint64_t)d;
			/* never before the previous event: keeps the thread's order */
			ev->free_time = lead <= dtime ? ev->time - lead : st->time;
		}
		if (type == HT_EV_PALLOC) {
			/* an ALLOC with a pool: the rest of the CLI knows only ALLOC,
			 * so the pool blocks count everywhere malloc's do */
			if ((r = get_u(p, end, &q, &ev->pool)))
				return r;
			ev->type = HT_EV_ALLOC;
			ev->fn = HT_FN_CUSTOM;
			ev->pooled = true;
		}
		st->time = ev->time;
		st->addr = ev->addr;
		break;
	case HT_EV_RSS:
		if ((r = get_u(p, end, &q, &dtime)) || (r = get_u(p, end, &q, &v)))
			return r;
		ev->time = st->time + dtime;
		ev->size = v;
		st->time = ev->time;
		break;
	case HT_EV_ENTER:
		if ((r = get_u(p, end, &q, &dtime)) || (r = get_s(p, end, &q, &d)))
			return r;
		ev->time = st->time + dtime;
		ev->addr = st->fn + (uint64_t)d;
		if ((r = get_s(p, end, &q, &d)))
			return r;
		ev->call_site = ev->addr + (uint64_t)d;
		ev->size = 0;
		ev->stack_id = 0;
		st->time = ev->time;
		st->fn = ev->addr;
		break;
	case HT_EV_EXIT:
		if ((r = get_u(p, end, &q, &dtime)))
			return r;
		ev->time = st->time + dtime;
		ev->size = 0;
		st->time = ev->time;
		break;
	case HT_EV_ENABLE:
		if ((r = get_u(p, end, &q, &dtime)) || (r = get_u(p, end, &q, &v)))
			return r;
		ev->time = st->time + dtime;
		ev->size = v != 0; /* any non-zero switches on: 1 is all the writer uses */
		st->time = ev->time;
		break;
	case HT_EV_STACK: {
		uint64_t depth, ip = 0;
		if ((r = get_u(p, end, &q, &sd->id)) || (r = get_u(p, end, &q, &depth)))
			return r;
		if (depth > HT_MAX_DEPTH)
			return DEC_CORRUPT;
		for (uint64_t i = 0; i < depth; i++) {
			if ((r = get_s(p, end, &q, &d)))
				return r;
			ip += (uint64_t)d;
			ips[i] = ip;
		}
		sd->depth = (uint32_t)depth;
		break;
	}
	case HT_EV_NAME: {
		uint64_t len;
		if ((r = get_u(p, end, &q, &sd->id)) || (r = get_u(p, end, &q, &len)))
			return r;
		if (len > HT_MAX_STRING)
			return DEC_CORRUPT;
		if (len > end - q)
			return DEC_TRUNC;
		sd->name_off = q;
		sd->name_len = (size_t)len;
		sd->depth = 0;
		q += len;
		break;
	}
	case HT_EV_TAG:
		/* the address is on the heap events' chain: the agent writes it
		 * from the same last_addr as ALLOC/FREE/REALLOC */
		if ((r = get_u(p, end, &q, &dtime)) || (r = get_s(p, end, &q, &d)) ||
		    (r = get_u(p, end, &q, &ev->name_id)))
			return r;
		ev->time = st->time + dtime;
		ev->addr = st->addr + (uint64_t)d;
		ev->size = 0;
		ev->stack_id = 0;
		st->time = ev->time;
		st->addr = ev->addr;
		break;
	case HT_EV_PHASE:
		if ((r = get_u(p, end, &q, &dtime)) || (r = get_u(p, end, &q, &ev->name_id)) ||
		    (r = get_u(p, end, &q, &v)))
			return r;
		ev->time = st->time + dtime;
		ev->size = v != 0; /* like ENABLE: any non-zero begins */
		ev->stack_id = 0;
		st->time = ev->time;
		break;
	case HT_EV_POOL:
		/* the op is kept as written: a later minor may add ops, which
		 * the merge and the model then ignore */
		if ((r = get_u(p, end, &q, &dtime)) || (r = get_u(p, end, &q, &ev->pool)) ||
		    (r = get_u(p, end, &q, &ev->size)) || (r = get_u(p, end, &q, &ev->name_id)))
			return r;
		ev->time = st->time + dtime;
		ev->stack_id = 0;
		st->time = ev->time;
		break;
	case HT_EV_SNAPSHOT:
		if ((r = get_u(p, end, &q, &dtime)) || (r = get_u(p, end, &q, &ev->name_id)))
			return r;
		ev->time = st->time + dtime;
		ev->size = 0;
		ev->stack_id = 0;
		st->time = ev->time;
		break;
	case HT_EV_EXT: {
		/* kind in the high nibble (ev->fn), a payload of len bytes:
		 * kinds this reader does not know are skipped by it, and bytes
		 * after the known fields are ignored (format 1.4) */
		uint64_t len;
		if ((r = get_u(p, end, &q, &dtime)) || (r = get_u(p, end, &q, &len)))
			return r;
		if (len > end - q)
			return DEC_TRUNC;
		size_t pend = q + (size_t)len;
		ev->time = st->time + dtime;
		ev->addr = 0;
		ev->size = 0;
		ev->stack_id = 0;
		ev->old_addr = 0;
		switch (ev->fn) {
		case HT_EXT_FD_OPEN: /* fd, stack, call */
			r = get_u(p, pend, &q, &ev->addr) || get_u(p, pend, &q, &ev->stack_id) ||
			    get_u(p, pend, &q, &ev->size);
			break;
		case HT_EXT_FD_CLOSE: /* fd */
			r = get_u(p, pend, &q, &ev->addr);
			break;
		case HT_EXT_HANDLE_ACQUIRE: /* kind, handle, stack */
			r = get_u(p, pend, &q, &ev->name_id) || get_u(p, pend, &q, &ev->addr) ||
			    get_u(p, pend, &q, &ev->stack_id);
			break;
		case HT_EXT_HANDLE_RELEASE: /* kind, handle */
			r = get_u(p, pend, &q, &ev->name_id) || get_u(p, pend, &q, &ev->addr);
			break;
		case HT_EXT_BAD_FREE: /* addr, stack, free function */
			r = get_u(p, pend, &q, &ev->addr) || get_u(p, pend, &q, &ev->stack_id) ||
			    get_u(p, pend, &q, &ev->size);
			break;
		case HT_EXT_MMAP: /* addr, len, stack, kind */
			r = get_u(p, pend, &q, &ev->addr) || get_u(p, pend, &q, &ev->size) ||
			    get_u(p, pend, &q, &ev->stack_id) || get_u(p, pend, &q, &ev->name_id);
			break;
		case HT_EXT_MUNMAP: /* addr, len */
		case HT_EXT_MADVISE_FREE:
			r = get_u(p, pend, &q, &ev->addr) || get_u(p, pend, &q, &ev->size);
			break;
		case HT_EXT_MREMAP: /* old, old len, new, new len, stack */
			r = get_u(p, pend, &q, &ev->old_addr) || get_u(p, pend, &q, &ev->old_size) ||
			    get_u(p, pend, &q, &ev->addr) || get_u(p, pend, &q, &ev->size) ||
			    get_u(p, pend, &q, &ev->stack_id);
			break;
		case HT_EXT_FREE_STACK: /* the stack of the thread's FREE before */
			r = get_u(p, pend, &q, &ev->stack_id);
			break;
		case HT_EXT_LEAK_CHECK: /* check id */
			r = get_u(p, pend, &q, &ev->name_id);
			break;
		default:
			r = 0;
		}
		if (r)
			return DEC_CORRUPT; /* the fields overrun the declared length */
		q = pend;
		st->time = ev->time;
		break;
	}
	default:
		return DEC_CORRUPT;
	}
	*pos = q;
	return DEC_OK;
}

/* ---- records --------------------------------------------------------------- */

static int thread_index(ht_trace_t *t, uint64_t tid, uint32_t *idx)
{
	trace_priv_t *p = t->priv;
	uint32_t i = ht_map_get(&p->thread_by_tid, tid);
	if (i != HT_MAP_NONE) {
		*idx = i;
		return 0;
	}
	if (t->nthreads >= UINT32_MAX - 1)
		return -ENOMEM;
	if (ht_util_grow((void **)&t->threads, &t->cap_threads, t->nthreads + 1,
			 sizeof(*t->threads)))
		return -ENOMEM;
	ht_thread_t *th = &t->threads[t->nthreads];
	memset(th, 0, sizeof(*th));
	th->tid = tid;
	th->first_block = th->last_block = UINT32_MAX;
	if (ht_map_put(&p->thread_by_tid, tid, (uint32_t)t->nthreads))
		return -ENOMEM;
	*idx = (uint32_t)t->nthreads++;
	return 0;
}

static const char *event_name(uint8_t type)
{
	switch (type) {
	case HT_EV_ALLOC: return "ALLOC";
	case HT_EV_FREE: return "FREE";
	case HT_EV_REALLOC: return "REALLOC";
	case HT_EV_STACK: return "STACK";
	case HT_EV_RSS: return "RSS";
	case HT_EV_ENTER: return "ENTER";
	case HT_EV_EXIT: return "EXIT";
	case HT_EV_ENABLE: return "ENABLE";
	case HT_EV_NAME: return "NAME";
	case HT_EV_TAG: return "TAG";
	case HT_EV_PHASE: return "PHASE";
	case HT_EV_POOL: return "POOL";
	case HT_EV_PALLOC: return "PALLOC";
	case HT_EV_SNAPSHOT: return "SNAPSHOT";
	case HT_EV_EXT: return "EXT";
	default: return "unknown";
	}
}

/* Parse a thread block's events in body[pos, end); end < the declared end
 * when the body was cut inside the block (cut = true). Valid events are kept
 * even when a later one is bad. Returns 0, -ENOMEM, or 1 to stop parsing. */
static int parse_block_events(ht_trace_t *t, const uint8_t *b, uint64_t tid, uint64_t base,
			      size_t pos, size_t end, bool cut, uint64_t *scratch);

static int parse_thread_block(ht_trace_t *t, size_t pos, size_t end, bool cut, uint64_t *scratch)
{
	const uint8_t *b = t->body;
	uint64_t tid, base;
	int r;
	if ((r = get_u(b, end, &pos, &tid)) || (r = get_u(b, end, &pos, &base))) {
		fail(t, r == DEC_TRUNC ? -HT_ETRUNC : -HT_ECORRUPT, pos,
		     "thread block header %s", r == DEC_TRUNC ? "cut off" : "has a bad varint");
		return 1;
	}
	return parse_block_events(t, t->body, tid, base, pos, end, cut, scratch);
}

/* The HT_NCOLS columns of a THREAD_COLUMNS or THREAD_PACKED record whose
 * lengths start at *pos: where each starts in b and its length, and their
 * total, which must fit before end (a record cut short is DEC_TRUNC, a
 * damaged one DEC_CORRUPT). *pos ends at the first column. */
static int get_columns(const uint8_t *b, size_t end, size_t *pos, bool cut,
		       const uint8_t *col[HT_NCOLS], size_t clen[HT_NCOLS], uint64_t *total)
{
	uint64_t len[HT_NCOLS];
	*total = 0;
	for (unsigned c = 0; c < HT_NCOLS; c++) {
		int r = get_u(b, end, pos, &len[c]);
		if (r)
			return r;
		if (len[c] > end - *pos)
			return cut ? DEC_TRUNC : DEC_CORRUPT;
		*total += len[c];
	}
	if (*total > end - *pos)
		return cut ? DEC_TRUNC : DEC_CORRUPT;
	size_t at = *pos;
	for (unsigned c = 0; c < HT_NCOLS; c++) {
		col[c] = b + at;
		clen[c] = (size_t)len[c];
		at += clen[c];
	}
	return 0;
}

/* A THREAD_COLUMNS record: its columns are joined back into the block's
 * events in place (they have the same length), which then read as a
 * THREAD_BLOCK's. A record cut short loses its events: its columns are
 * not whole. */
static int parse_thread_columns(ht_trace_t *t, size_t pos, size_t end, bool cut,
				uint64_t *scratch)
{
	size_t rec = pos;
	uint64_t tid, base, total = 0;
	const uint8_t *col[HT_NCOLS];
	size_t clen[HT_NCOLS];
	int r = get_u(t->body, end, &pos, &tid);
	if (!r)
		r = get_u(t->body, end, &pos, &base);
	if (!r)
		r = get_columns(t->body, end, &pos, cut, col, clen, &total);
	if (r) {
		fail(t, r == DEC_TRUNC ? -HT_ETRUNC : -HT_ECORRUPT, rec,
		     "thread columns %s", r == DEC_TRUNC ? "cut off" : "have bad lengths");
		return 1;
	}
	uint8_t *joined = malloc(total ? (size_t)total : 1);
	if (!joined)
		return -ENOMEM;
	bool bad;
	size_t n = ht_columns_join(col, clen, joined, &bad);
	memcpy(t->body + pos, joined, n);
	free(joined);
	r = parse_block_events(t, t->body, tid, base, pos, pos + n, false, scratch);
	if (r)
		return r;
	if (bad) {
		fail(t, -HT_ECORRUPT, pos + n,
		     "damaged columns in the block of thread %" PRIu64 " (events before kept)", tid);
		return 1;
	}
	if (!cut && pos + total != end) {
		fail(t, -HT_ECORRUPT, pos + total, "bytes after the columns of thread %" PRIu64, tid);
		return 1;
	}
	return 0;
}

/* Room for need bytes of joined events, in the current chunk or a new one. */
static uint8_t *joined_room(trace_priv_t *p, size_t need)
{
	if (!p->nchunks || p->chunk_size - p->chunk_fill < need) {
		size_t size = need > (16u << 20) ? need : (16u << 20);
		if (ht_util_grow((void **)&p->chunks, &p->cap_chunks, p->nchunks + 1, sizeof(*p->chunks)))
			return NULL;
		if (!(p->chunks[p->nchunks] = malloc(size)))
			return NULL;
		p->nchunks++;
		p->chunk_fill = 0;
		p->chunk_size = size;
	}
	return p->chunks[p->nchunks - 1] + p->chunk_fill;
}

/* Gives the whole pages inside [p, p + n) back to the system: the packed
 * records' columns, dead once joined (nothing reads them again; the body
 * stays allocated and those pages read as zeros). A report of a large
 * trace would otherwise hold its packed records and their joined events
 * both. */
static void release_pages(uint8_t *p, size_t n)
{
	static uintptr_t page;
	if (!page)
		page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t lo = ((uintptr_t)p + page - 1) & ~(page - 1), hi = ((uintptr_t)p + n) & ~(page - 1);
	if (hi > lo)
		madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

/* ---- replayed blocks -------------------------------------------------------------
 * The joined events of packed blocks are most of what a loaded trace would
 * hold (churn's 24M allocations: 276 MB, against 46 MB of file). So the
 * parse keeps only some, and a merge joins the others again when its
 * cursors get to them: a replay decompresses the body once more and joins
 * its packed blocks in file order, as the parse did (the streams' states
 * need that order), into a buffer per block that the cursor frees when it
 * moves on. A block whose cursor is not there yet waits in its buffer, so
 * what a merge holds is the blocks the file has ahead of the merge's time.
 * Threads write their blocks when full, or at their next event once half
 * a second old, so blocks come in the file about in the order of their
 * first events; a block that comes later than HT_REPLAY_SLACK_NS behind
 * the latest first time before it (the first block of a main thread that
 * waits for its workers, written at exit) would make a merge hold every
 * block in between, and is kept by the parse instead. Raw bodies (no
 * compression, for debugging) are kept whole.
 *
 * A replay joins every packed block again (each merge's replay): on one
 * core the 4-thread bench's report takes 1.2-1.5x as long. So on one
 * core (ht_threads() == 1) the parse keeps blocks until it holds a budget
 * of joined events, a sixteenth of the machine's memory between 256 MiB
 * and 1 GiB, and only a larger trace is replayed: with 1 GiB, reports of
 * up to about 180 million events keep their speed, and larger ones their
 * memory. With a second core the budget is 0: the merge, and so its
 * replays, run on a worker beside the consumers (analysis/pass.c), so
 * keeping nothing costs CPU but little time (churn's report: 286 MiB ->
 * 46 MiB, the same time; the 4-thread bench's 468 -> 66 MiB, with the
 * merge's joins deferred to their turn: merge_pop). The environment's
 * HEAPTRAIL_READER_RESIDENT_MB overrides either, 0 for none. */
#define HT_REPLAY_SLACK_NS 1000000000ull
#define HT_READER_RESIDENT_MIN ((size_t)256 << 20)
#define HT_READER_RESIDENT_MAX ((size_t)1 << 30)

static size_t resident_max(void)
{
	const char *e = getenv("HEAPTRAIL_READER_RESIDENT_MB");
	char *end;
	unsigned long long mb = e && *e ? strtoull(e, &end, 10) : 0;
	if (e && *e && !*end && mb < (SIZE_MAX >> 21))
		return (size_t)mb << 20;
	if (ht_threads() > 1)
		return 0;
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
	uint64_t ram = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
	uint64_t budget = ram / 16;
	if (budget < HT_READER_RESIDENT_MIN)
		budget = HT_READER_RESIDENT_MIN;
	if (budget > HT_READER_RESIDENT_MAX)
		budget = HT_READER_RESIDENT_MAX;
	return (size_t)budget;
}

/* After the parse of a packed block whose n joined bytes end the current
 * chunk: keep them if the block is indexed (block nblocks) and late, else
 * give them back and leave the block to the merges. */
static void keep_or_replay(ht_trace_t *t, size_t nblocks, uint64_t seq, size_t n)
{
	trace_priv_t *p = t->priv;
	if (t->nblocks == nblocks) { /* no events: nothing points at them */
		p->chunk_fill -= n;
		return;
	}
	ht_block_t *b = &t->blocks[nblocks];
	b->pk_seq = seq;
	if (p->follow) {
		/* a buffer of its own, which the merge frees once past it;
		 * without memory the block reads as empty */
		uint8_t *own = malloc(n ? n : 1);
		if (own)
			memcpy(own, b->data, n);
		else
			b->off = b->end;
		b->data = own;
		p->chunk_fill -= n;
		return;
	}
	if (!p->switched) {
		p->resident += n;
		return; /* kept: within the budget */
	}
	if (b->first_time + HT_REPLAY_SLACK_NS < p->replay_max)
		return; /* kept: late */
	if (b->first_time > p->replay_max)
		p->replay_max = b->first_time;
	b->data = NULL;
	p->chunk_fill -= n;
	p->nreplayed++;
}

/* Before the packed record at rec: once the parse holds the budget's
 * bytes, later blocks are left to replays, which start here, with the
 * streams' states as they are now. 0, or -ENOMEM. */
static int replay_switch(ht_trace_t *t, size_t rec)
{
	trace_priv_t *p = t->priv;
	if (p->switched || !p->zfill || p->resident < p->resident_max)
		return 0;
	for (unsigned i = 0; i < HT_PK_STREAMS; i++) {
		if (!p->streams[i])
			continue;
		if (!(p->snap[i] = malloc(sizeof(*p->snap[i]))))
			return -ENOMEM;
		memcpy(p->snap[i], p->streams[i], sizeof(*p->snap[i]));
	}
	p->switched = true;
	p->snap_rec = rec;
	p->snap_npk = p->npk;
	return 0;
}

/* A replay's packed block: joined into a buffer of its own for the block
 * of p->of it is, if a cursor of the merge will want it; the stream's
 * state moves on either way. */
static int replay_join(ht_trace_t *t, uint64_t seq, const uint8_t *const col[HT_NCOLS],
		       const size_t clen[HT_NCOLS], unsigned layout, ht_pk_reader_t *stream)
{
	trace_priv_t *p = t->priv;
	const ht_trace_t *o = p->of;
	while (p->next_bi < o->nblocks &&
	       (o->blocks[p->next_bi].data || o->blocks[p->next_bi].pk_seq < seq))
		p->next_bi++;
	size_t bi = p->next_bi;
	bool wanted = bi < o->nblocks && o->blocks[bi].pk_seq == seq &&
		      (p->want_thread == UINT32_MAX || o->blocks[bi].thread == p->want_thread);
	size_t bound = ht_packed_join_bound(clen, layout);
	uint8_t *out = malloc(bound ? bound : 1);
	if (!out)
		return -ENOMEM;
	bool bad;
	size_t n = ht_packed_join(col, clen, out, stream, layout, &bad);
	if (wanted) {
		/* the bound is far above what most blocks join to */
		uint8_t *fit = realloc(out, n ? n : 1);
		p->rbuf[bi] = fit ? fit : out;
	} else {
		free(out);
	}
	return bad;
}

/* The events of packed block seq, joined into out (n bytes; bad: its
 * columns were damaged past what they gave), parsed as a block of thread
 * tid and kept or left to replays. */
static int parse_joined(ht_trace_t *t, size_t rec, uint64_t tid, uint64_t base, uint64_t seq,
			uint8_t *out, size_t n, bool bad, uint64_t *scratch)
{
	trace_priv_t *p = t->priv;
	p->chunk_fill += n;
	p->in_joined = true;
	p->packed_record = rec;
	size_t nblocks = t->nblocks;
	int r = parse_block_events(t, out, tid, base, 0, n, false, scratch);
	p->in_joined = false;
	if (r >= 0)
		keep_or_replay(t, nblocks, seq, n);
	if (r)
		return r;
	if (bad) {
		fail(t, -HT_ECORRUPT, rec,
		     "damaged packed block of thread %" PRIu64 " (events before kept)", tid);
		return 1;
	}
	return 0;
}

/* A packed block's events (format 1.6): like THREAD_COLUMNS, but its
 * addresses are coded against its stream's state, and joined its events
 * are longer than the columns: they go to a chunk of their own, which the
 * block index points into. rec: where its record starts, for messages. */
static int parse_packed_block(ht_trace_t *t, size_t rec, uint64_t tid, uint64_t base,
			      uint64_t stream, const uint8_t *const col[HT_NCOLS],
			      const size_t clen[HT_NCOLS], unsigned layout, uint64_t *scratch)
{
	trace_priv_t *p = t->priv;
	ht_pk_reader_t **sp = &p->streams[stream >> 1];
	if (!*sp && !(*sp = calloc(1, sizeof(**sp))))
		return -ENOMEM;
	if (stream & 1)
		ht_pk_reader_reset(*sp);
	if (!(*sp)->started) {
		fail(t, -HT_ECORRUPT, rec,
		     "packed block of thread %" PRIu64 " continues stream %" PRIu64
		     " after damage or without its start", tid, stream >> 1);
		return 1;
	}
	uint64_t seq = p->npk++;
	if (p->of)
		return replay_join(t, seq, col, clen, layout, *sp);
	uint8_t *out = joined_room(p, ht_packed_join_bound(clen, layout));
	if (!out)
		return -ENOMEM;
	bool bad;
	size_t n = ht_packed_join(col, clen, out, *sp, layout, &bad);
	return parse_joined(t, rec, tid, base, seq, out, n, bad, scratch);
}

/* A THREAD_PACKED record: one packed block. */
static int parse_thread_packed(ht_trace_t *t, size_t pos, size_t end, bool cut, uint64_t *scratch)
{
	size_t rec = pos;
	uint64_t tid, base, stream = 0, total = 0;
	const uint8_t *col[HT_NCOLS];
	size_t clen[HT_NCOLS];
	int r = get_u(t->body, end, &pos, &tid);
	if (!r)
		r = get_u(t->body, end, &pos, &base);
	if (!r)
		r = get_u(t->body, end, &pos, &stream);
	if (!r)
		r = get_columns(t->body, end, &pos, cut, col, clen, &total);
	if (!r && (stream >> 1) >= HT_PK_STREAMS)
		r = DEC_CORRUPT;
	if (r) {
		fail(t, r == DEC_TRUNC ? -HT_ETRUNC : -HT_ECORRUPT, rec,
		     "packed thread block %s", r == DEC_TRUNC ? "cut off" : "has a bad header");
		return 1;
	}
	if ((r = parse_packed_block(t, rec, tid, base, stream, col, clen, 0, scratch)))
		return r;
	if (!cut && pos + total != end) {
		fail(t, -HT_ECORRUPT, pos + total, "bytes after the columns of thread %" PRIu64, tid);
		return 1;
	}
	release_pages(t->body + pos, total);
	return 0;
}

/* ---- joins ahead of the parse -------------------------------------------------------
 * Joining a packed block's address codes is about two thirds of the
 * parse, and the rest (checking and indexing the joined events) needs
 * the joins in file order but not the streams. So with a second core, a
 * batch's blocks are joined by a helper thread up to PIPE_AHEAD blocks
 * ahead, in order, each into a buffer of its own, while this thread
 * copies each joined block where parse_packed_block would have joined it
 * and parses it there: the same blocks, bytes, messages and stream
 * states, but for the states of a parse that stops at a bad event (the
 * helper may have joined a few blocks more; nothing reads the streams
 * after a parse has stopped). */
#define PIPE_AHEAD 4u

typedef struct pipe_block {
	const uint8_t *col[HT_NCOLS];
	size_t clen[HT_NCOLS];
	uint64_t stream;
	unsigned layout;
} pipe_block_t;

enum { PIPE_OK, PIPE_NOMEM, PIPE_UNSTARTED };

typedef struct pipe {
	trace_priv_t *p;
	const pipe_block_t *blk;
	size_t count;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	size_t made, taken; /* blocks joined by the helper, parsed here */
	bool stop;	    /* this thread is done: the helper stops */
	uint8_t *buf[PIPE_AHEAD];
	size_t cap[PIPE_AHEAD];
	size_t n[PIPE_AHEAD];
	int status[PIPE_AHEAD];
	bool bad[PIPE_AHEAD];
} pipe_t;

static void *pipe_main(void *arg)
{
	pipe_t *q = arg;
	for (size_t i = 0; i < q->count; i++) {
		pthread_mutex_lock(&q->mu);
		while (q->made - q->taken == PIPE_AHEAD && !q->stop)
			pthread_cond_wait(&q->cv, &q->mu);
		bool stop = q->stop;
		pthread_mutex_unlock(&q->mu);
		if (stop)
			return NULL;
		const pipe_block_t *b = &q->blk[i];
		size_t k = i % PIPE_AHEAD;
		int status = PIPE_OK;
		bool bad = false;
		ht_pk_reader_t **sp = &q->p->streams[b->stream >> 1];
		if (!*sp && !(*sp = calloc(1, sizeof(**sp))))
			status = PIPE_NOMEM;
		if (status == PIPE_OK && (b->stream & 1))
			ht_pk_reader_reset(*sp);
		if (status == PIPE_OK && !(*sp)->started)
			status = PIPE_UNSTARTED;
		size_t bound = ht_packed_join_bound(b->clen, b->layout);
		bound = bound ? bound : 1;
		if (status == PIPE_OK && q->cap[k] < bound) {
			free(q->buf[k]);
			q->cap[k] = 0;
			if (!(q->buf[k] = malloc(bound)))
				status = PIPE_NOMEM;
			else
				q->cap[k] = bound;
		}
		if (status == PIPE_OK)
			q->n[k] = ht_packed_join(b->col, b->clen, q->buf[k], *sp, b->layout, &bad);
		q->status[k] = status;
		q->bad[k] = bad;
		pthread_mutex_lock(&q->mu);
		q->made++;
		pthread_cond_broadcast(&q->cv);
		pthread_mutex_unlock(&q->mu);
		if (status != PIPE_OK || bad)
			return NULL; /* the parse stops at this block */
	}
	return NULL;
}

/* Block i of the pipe, once joined: a parse_packed_block with the join
 * done. */
static int pipe_take(ht_trace_t *t, pipe_t *q, size_t i, size_t rec, uint64_t tid, uint64_t base,
		     uint64_t *scratch)
{
	trace_priv_t *p = t->priv;
	pthread_mutex_lock(&q->mu);
	while (q->made <= i)
		pthread_cond_wait(&q->cv, &q->mu);
	pthread_mutex_unlock(&q->mu);
	size_t k = i % PIPE_AHEAD;
	if (q->status[k] == PIPE_NOMEM)
		return -ENOMEM;
	if (q->status[k] == PIPE_UNSTARTED) {
		fail(t, -HT_ECORRUPT, rec,
		     "packed block of thread %" PRIu64 " continues stream %" PRIu64
		     " after damage or without its start", tid, q->blk[i].stream >> 1);
		return 1;
	}
	uint64_t seq = p->npk++;
	size_t n = q->n[k];
	uint8_t *out = joined_room(p, n ? n : 1);
	if (!out)
		return -ENOMEM;
	if (n)
		memcpy(out, q->buf[k], n);
	bool bad = q->bad[k];
	pthread_mutex_lock(&q->mu);
	q->taken++; /* the buffer is free again */
	pthread_cond_broadcast(&q->cv);
	pthread_mutex_unlock(&q->mu);
	return parse_joined(t, rec, tid, base, seq, out, n, bad, scratch);
}

/* Joins blk[0..count) on a helper and parses them here, tid and base
 * giving each block's thread and base time; as parse_packed_block. *ran
 * false when no helper could be had: the caller parses them itself. */
static int pipe_run(ht_trace_t *t, const pipe_block_t *blk, size_t count, size_t rec,
		    const uint64_t *tid, const uint64_t *base, uint64_t *scratch, bool *ran)
{
	pipe_t q = { .p = t->priv, .blk = blk, .count = count };
	*ran = false;
	if (pthread_mutex_init(&q.mu, NULL))
		return 0;
	pthread_cond_init(&q.cv, NULL);
	pthread_t th;
	int r = 0;
	if (pthread_create(&th, NULL, pipe_main, &q))
		goto out;
	*ran = true;
	for (size_t i = 0; i < count && !r; i++)
		r = pipe_take(t, &q, i, rec, tid[i], base[i], scratch);
	pthread_mutex_lock(&q.mu);
	q.stop = true;
	pthread_cond_broadcast(&q.cv);
	pthread_mutex_unlock(&q.mu);
	pthread_join(th, NULL);
out:
	for (unsigned k = 0; k < PIPE_AHEAD; k++)
		free(q.buf[k]);
	pthread_cond_destroy(&q.cv);
	pthread_mutex_destroy(&q.mu);
	return r;
}

/* A THREAD_BATCH record (format 1.7): count packed blocks, their headers,
 * then column 0 of each block, column 1 of each, and so on; a block's
 * stack ids are in its column 0, after each event's first byte. With
 * flags, a THREAD_BATCH2 (1.8): each header has a layout flags varint
 * after the stream, whose HT_BATCH_JOINED puts the block's address codes
 * in column 0 too (packed.h, HT_PK_JOINED), HT_BATCH_SIZES (1.10)
 * codes its REALLOCs' sizes against their old blocks' (HT_PK_SIZES);
 * format 1.11 adds HT_BATCH_RANK (its frees' REFs are ranks, HT_PK_RANK),
 * HT_BATCH_FREES (its free codes in column 4, HT_PK_FREES) and
 * HT_BATCH_FREED (FREED codes, HT_PK_FREED). A batch cut
 * short loses all its blocks (its last columns are missing); a damaged
 * block ends the reading there, the blocks before it kept. */
/* The columns a THREAD_BATCH3 splits (trace_format.h), in order. */
static const unsigned batch_split_col[] = {HT_COL_ADDR, HT_COL_SIZE, HT_COL_STACK};
#define BATCH_SPLIT_COLS (sizeof batch_split_col / sizeof batch_split_col[0])

/* THREAD_BATCH3 (format 1.11): a THREAD_BATCH2 whose address, size and
 * free code columns are split; nfirst their varint counts, from the
 * record's head. */
static int parse_thread_batch(ht_trace_t *t, size_t pos, size_t end, bool cut, bool flags,
			      bool split, uint64_t *scratch)
{
	size_t rec = pos;
	uint64_t count, nfirst[HT_NCOLS] = {0};
	pipe_block_t *pb = NULL; /* the blocks for a helper's joins */
	uint64_t *btid = NULL, *bbase = NULL;
	int r = get_u(t->body, end, &pos, &count);
	for (unsigned k = 0; split && !r && k < BATCH_SPLIT_COLS; k++)
		r = get_u(t->body, end, &pos, &nfirst[batch_split_col[k]]);
	/* each block's header takes 3 (THREAD_BATCH2: 4) + HT_NCOLS varints,
	 * a byte each at least */
	if (!r && count == 0)
		r = DEC_CORRUPT;
	if (!r && count > (end - pos) / (3u + flags + HT_NCOLS))
		r = cut ? DEC_TRUNC : DEC_CORRUPT;
	struct batch_block {
		uint64_t tid, base, stream, flags, len[HT_NCOLS];
	} *blk = NULL;
	if (!r && !(blk = malloc((size_t)count * sizeof *blk)))
		return -ENOMEM;
	uint64_t colsum[HT_NCOLS] = {0}, total = 0;
	for (uint64_t i = 0; !r && i < count; i++) {
		r = get_u(t->body, end, &pos, &blk[i].tid);
		if (!r)
			r = get_u(t->body, end, &pos, &blk[i].base);
		if (!r)
			r = get_u(t->body, end, &pos, &blk[i].stream);
		if (!r && (blk[i].stream >> 1) >= HT_PK_STREAMS)
			r = DEC_CORRUPT;
		blk[i].flags = 0;
		if (!r && flags)
			r = get_u(t->body, end, &pos, &blk[i].flags);
		if (!r && (blk[i].flags & ~(uint64_t)HT_BATCH_FLAGS_KNOWN))
			r = DEC_CORRUPT;
		for (unsigned c = 0; !r && c < HT_NCOLS; c++) {
			r = get_u(t->body, end, &pos, &blk[i].len[c]);
			if (!r && blk[i].len[c] > end - pos)
				r = cut ? DEC_TRUNC : DEC_CORRUPT;
			if (!r) {
				colsum[c] += blk[i].len[c];
				total += blk[i].len[c];
			}
			if (!r && total > end - pos)
				r = cut ? DEC_TRUNC : DEC_CORRUPT;
		}
	}
	if (r) {
		free(blk);
		fail(t, r == DEC_TRUNC ? -HT_ETRUNC : -HT_ECORRUPT, rec, "batch of packed blocks %s%s",
		     r == DEC_TRUNC ? "cut off" : "has a bad header",
		     r != DEC_TRUNC && t->minor > HT_FORMAT_MINOR
			     ? " (the trace is of a newer format: a newer heaptrail reads it)"
			     : "");
		return 1;
	}
	const uint8_t *base[HT_NCOLS]; /* each column of every block */
	size_t at[HT_NCOLS];	       /* where each column's next block starts */
	uint8_t *joined[HT_NCOLS] = {NULL};
	size_t next = pos;
	for (unsigned c = 0; c < HT_NCOLS; c++) {
		base[c] = t->body + next;
		at[c] = 0;
		next += (size_t)colsum[c];
	}
	for (unsigned k = 0; split && k < BATCH_SPLIT_COLS; k++) {
		unsigned c = batch_split_col[k];
		size_t nf = (size_t)nfirst[c];
		if (nfirst[c] > colsum[c])
			goto split_damaged;
		if (!colsum[c])
			continue;
		if (!(joined[c] = malloc((size_t)colsum[c]))) {
			r = -ENOMEM;
			goto out;
		}
		if (!ht_varints_join(base[c], nf, base[c] + nf, (size_t)colsum[c] - nf, joined[c]))
			goto split_damaged;
		base[c] = joined[c];
	}
	/* with a second core, the joins run ahead on a helper (above) */
	const trace_priv_t *tp = t->priv;
	pb = count > 1 && !tp->of && ht_threads() > 1 ? malloc((size_t)count * sizeof(*pb)) : NULL;
	btid = pb ? malloc((size_t)count * sizeof(*btid)) : NULL;
	bbase = pb ? malloc((size_t)count * sizeof(*bbase)) : NULL;
	if (pb && btid && bbase) {
		for (uint64_t i = 0; i < count; i++) {
			for (unsigned c = 0; c < HT_NCOLS; c++) {
				pb[i].col[c] = base[c] + at[c];
				pb[i].clen[c] = (size_t)blk[i].len[c];
				at[c] += pb[i].clen[c];
			}
			pb[i].stream = blk[i].stream;
			pb[i].layout = ht_pk_layout_of_flags(blk[i].flags);
			btid[i] = blk[i].tid;
			bbase[i] = blk[i].base;
		}
		bool ran;
		r = pipe_run(t, pb, (size_t)count, rec, btid, bbase, scratch, &ran);
		if (ran)
			goto piped;
		for (unsigned c = 0; c < HT_NCOLS; c++)
			at[c] = 0; /* no helper: parse them here after all */
	}
	for (uint64_t i = 0; i < count; i++) {
		const uint8_t *col[HT_NCOLS];
		size_t clen[HT_NCOLS];
		for (unsigned c = 0; c < HT_NCOLS; c++) {
			col[c] = base[c] + at[c];
			clen[c] = (size_t)blk[i].len[c];
			at[c] += clen[c];
		}
		if ((r = parse_packed_block(t, rec, blk[i].tid, blk[i].base, blk[i].stream, col,
					    clen, ht_pk_layout_of_flags(blk[i].flags), scratch)))
			goto out;
	}
piped:
	if (r)
		goto out;
	if (!cut && pos + total != end) {
		fail(t, -HT_ECORRUPT, pos + total, "bytes after the columns of a batch");
		r = 1;
		goto out;
	}
	release_pages(t->body + pos, (size_t)total);
	goto out; /* r is 0 */
split_damaged:
	fail(t, -HT_ECORRUPT, rec,
	     "batch of packed blocks has split columns that do not make whole varints");
	r = 1;
out:
	for (unsigned j = 0; j < HT_NCOLS; j++)
		free(joined[j]);
	free(blk);
	free(pb);
	free(btid);
	free(bbase);
	return r;
}

/* A record of packed blocks: THREAD_PACKED, or a THREAD_BATCH of any
 * version (tag), its payload at [pos, end). */
static int parse_packed_record(ht_trace_t *t, uint8_t tag, size_t pos, size_t end, bool cut,
			       uint64_t *scratch)
{
	if (tag == HT_REC_THREAD_PACKED)
		return parse_thread_packed(t, pos, end, cut, scratch);
	return parse_thread_batch(t, pos, end, cut, tag != HT_REC_THREAD_BATCH,
				  tag == HT_REC_THREAD_BATCH3, scratch);
}

/* An ALLOC or FREE at b[*pos] (nearly every event), checked as
 * decode_event checks it but without building the event: the block's
 * parse only needs its time (t += the delta). False for any other event,
 * or a damaged one, which decode_event then reads (and names). A report
 * reads every event here and decodes it again in the merge: decoding it
 * in full here too was 15% of a report's instructions, this is half. */
static inline bool scan_heap_event(const uint8_t *b, size_t end, size_t *pos, uint64_t *t)
{
	size_t q = *pos;
	unsigned type = b[q] & 0x0f;
	if (type != HT_EV_ALLOC && type != HT_EV_FREE)
		return false;
	q++;
	uint64_t dt, field;
	if (get_u(b, end, &q, &dt))
		return false;
	/* the address delta; an ALLOC's size and stack id too */
	for (unsigned i = type == HT_EV_ALLOC ? 3 : 1; i; i--)
		if (get_u(b, end, &q, &field))
			return false;
	*t += dt;
	*pos = q;
	return true;
}

static int parse_block_events(ht_trace_t *t, const uint8_t *b, uint64_t tid, uint64_t base,
			      size_t pos, size_t end, bool cut, uint64_t *scratch)
{
	int r;
	uint32_t th;
	if (thread_index(t, tid, &th))
		return -ENOMEM;

	evstate_t st = { base, 0, 0 };
	size_t evstart = pos;
	uint64_t n = 0, nfn = 0, nmark = 0, npool = 0, nsnap = 0, next = 0;
	uint64_t first = UINT64_MAX, low = UINT64_MAX;
	int stop = 0;
	while (pos < end) {
		/* st.addr is left behind: nothing here reads an address */
		if (scan_heap_event(b, end, &pos, &st.time)) {
			if (first == UINT64_MAX)
				first = st.time;
			if (st.time < low)
				low = st.time;
			n++;
			if (st.time > t->last_time)
				t->last_time = st.time;
			continue;
		}
		ht_event_t ev;
		stackdef_t sd;
		size_t at = pos;
		r = decode_event(b, end, &pos, &st, &ev, &sd, scratch);
		if (r) {
			if (r == DEC_TRUNC && cut)
				fail(t, -HT_ETRUNC, at, "body ends inside an event of thread %" PRIu64,
				     tid);
			else if (!strcmp(event_name(b[at] & 0x0f), "unknown"))
				fail(t, -HT_ECORRUPT, at,
				     "unknown event type (byte 0x%02x) in the block of thread %" PRIu64,
				     b[at], tid);
			else
				fail(t, -HT_ECORRUPT, at,
				     "bad %s event (a varint overflows, a stack is deeper than %d or"
				     " a name longer than %u bytes) in the block of thread %" PRIu64,
				     event_name(b[at] & 0x0f), HT_MAX_DEPTH, HT_MAX_STRING, tid);
			stop = 1;
			break;
		}
		if (ev.type == HT_EV_STACK) {
			/* id 0 is "unknown" and never defined; first definition wins */
			if (sd.id == 0 || ht_trace_stack(t, sd.id))
				continue;
			trace_priv_t *p = t->priv;
			if (t->nstacks >= UINT32_MAX - 1 ||
			    ht_util_grow((void **)&t->stacks, &t->cap_stacks, t->nstacks + 1,
					 sizeof(*t->stacks)) ||
			    ht_util_grow((void **)&t->ips, &t->cap_ips, t->nips + sd.depth,
					 sizeof(*t->ips)) ||
			    ht_map_put(&p->stack_by_id, sd.id, (uint32_t)t->nstacks))
				return -ENOMEM;
			t->stacks[t->nstacks++] = (ht_stack_t){ sd.id, sd.depth, t->nips };
			if (sd.depth) /* t->ips may still be NULL */
				memcpy(t->ips + t->nips, scratch, sd.depth * sizeof(*scratch));
			t->nips += sd.depth;
			continue;
		}
		if (ev.type == HT_EV_NAME) {
			/* like STACK: first definition wins, for the whole trace */
			if (ht_trace_name(t, sd.id))
				continue;
			trace_priv_t *p = t->priv;
			char *text = malloc(sd.name_len + 1);
			if (!text)
				return -ENOMEM;
			memcpy(text, b + sd.name_off, sd.name_len);
			text[sd.name_len] = '\0';
			if (t->nnames >= UINT32_MAX - 1 ||
			    ht_util_grow((void **)&t->names, &t->cap_names, t->nnames + 1,
					 sizeof(*t->names)) ||
			    ht_map_put(&p->name_by_id, sd.id, (uint32_t)t->nnames)) {
				free(text);
				return -ENOMEM;
			}
			t->names[t->nnames++] = (ht_name_t){ sd.id, text };
			continue;
		}
		if (first == UINT64_MAX)
			first = ev.time;
		/* a damaged time may wrap: the least of all, not the first */
		if (ev.time < low)
			low = ev.time;
		if (ev.type == HT_EV_REALLOC && ev.free_time < low)
			low = ev.free_time;
		if (ev.type == HT_EV_ENTER || ev.type == HT_EV_EXIT || ev.type == HT_EV_ENABLE)
			nfn++; /* kept apart: nevents stays the heap events' count */
		else if (ev.type == HT_EV_TAG || ev.type == HT_EV_PHASE)
			nmark++; /* likewise */
		else if (ev.type == HT_EV_POOL)
			npool++; /* likewise: its frees are made by the merge */
		else if (ev.type == HT_EV_SNAPSHOT)
			nsnap++;
		else if (ev.type == HT_EV_EXT)
			next++; /* descriptors, handles, leak checks: in no other count */
		else
			n++;
		if (ev.time > t->last_time)
			t->last_time = ev.time;
		if (ev.type == HT_EV_RSS && ev.size > t->max_rss)
			t->max_rss = ev.size;
	}
	if (!stop && cut) {
		fail(t, -HT_ETRUNC, end, "body ends inside the block of thread %" PRIu64, tid);
		stop = 1;
	}

	/* Index the block (its valid prefix) even when empty of events: cheap. */
	if (n + nfn + nmark + npool + nsnap + next > 0) {
		if (t->nblocks >= UINT32_MAX - 1 ||
		    ht_util_grow((void **)&t->blocks, &t->cap_blocks, t->nblocks + 1,
				 sizeof(*t->blocks)))
			return -ENOMEM;
		uint32_t bi = (uint32_t)t->nblocks++;
		t->blocks[bi] = (ht_block_t){ b, evstart, pos, base,
					      first == UINT64_MAX ? base : first,
					      low == UINT64_MAX ? base : low, UINT64_MAX,
					      th, UINT32_MAX };
		ht_thread_t *thr = &t->threads[th];
		if (thr->first_block == UINT32_MAX)
			thr->first_block = bi;
		else
			t->blocks[thr->last_block].next = bi;
		thr->last_block = bi;
		thr->nevents += n;
		t->nevents += n;
		thr->nfn_events += nfn;
		t->nfn_events += nfn;
		thr->nmark_events += nmark;
		t->nmark_events += nmark;
		thr->npool_events += npool + nsnap;
		t->npool_events += npool;
		t->nsnapshot_events += nsnap;
		t->next_events += next;
	}
	return stop;
}

/* Report a field error of a non-block record. Returns 1 (stop). */
static int field_fail(ht_trace_t *t, fields_t *f, const char *rec)
{
	if (f->nomem)
		return -ENOMEM;
	if (f->err == DEC_TRUNC)
		fail(t, -HT_ECORRUPT, f->err_at, "%s record fields overrun its length", rec);
	else
		fail(t, -HT_ECORRUPT, f->err_at, "bad field in %s record", rec);
	return 1;
}

static int parse_process(ht_trace_t *t, fields_t *f)
{
	f_u(f); /* format major/minor repeat the header's */
	f_u(f);
	t->writer_version = f_str(f, NULL);
	t->pid = f_u(f);
	t->ppid = f_u(f);
	t->start_realtime_ns = f_u(f);
	t->start_mono_ns = f_u(f);
	t->page_size = f_u(f);
	t->proc_flags = f_u(f);
	t->max_depth = f_u(f);
	t->exe_path = f_str(f, NULL);
	uint64_t argc = f_u(f);
	if (f->err || f->nomem)
		return field_fail(t, f, "PROCESS");
	/* each string takes at least one byte: bounds argc before allocating */
	if (argc > f->end - f->pos) {
		f->err = DEC_CORRUPT;
		f->err_at = f->pos;
		return field_fail(t, f, "PROCESS");
	}
	t->argv = calloc(argc + 1, sizeof(*t->argv));
	if (!t->argv)
		return -ENOMEM;
	for (uint64_t i = 0; i < argc; i++) {
		t->argv[i] = f_str(f, NULL);
		if (!t->argv[i])
			return field_fail(t, f, "PROCESS");
		t->argc++;
	}
	/* format 1.4: a sampled trace ends the record with its rate; a record
	 * without it reads as unsampled */
	if ((t->proc_flags & HT_PROC_SAMPLED) && f->pos < f->end) {
		uint64_t rate = f_u(f);
		if (f->err)
			return field_fail(t, f, "PROCESS");
		t->sample_rate = rate;
	}
	t->have_process = true;
	return 0;
}

static int parse_module(ht_trace_t *t, fields_t *f)
{
	ht_module_t m;
	memset(&m, 0, sizeof(m));
	m.unload_time = UINT64_MAX;
	m.id = f_u(f);
	m.load_time = f_u(f);
	m.bias = f_u(f);
	m.path = f_str(f, NULL);
	char *bid = f_str(f, &m.build_id_len);
	m.build_id = (uint8_t *)bid;
	uint64_t nsegs = f_u(f);
	int r = 0;
	if (f->err || f->nomem) {
		r = field_fail(t, f, "MODULE");
		goto out;
	}
	if (nsegs > (f->end - f->pos) / 3) { /* three varints each */
		f->err = DEC_CORRUPT;
		f->err_at = f->pos;
		r = field_fail(t, f, "MODULE");
		goto out;
	}
	m.segs = calloc(nsegs ? nsegs : 1, sizeof(*m.segs));
	if (!m.segs) {
		r = -ENOMEM;
		goto out;
	}
	for (uint64_t i = 0; i < nsegs; i++) {
		m.segs[i].vaddr = f_u(f);
		m.segs[i].memsz = f_u(f);
		m.segs[i].flags = f_u(f);
	}
	m.nsegs = nsegs;
	if (f->err) {
		r = field_fail(t, f, "MODULE");
		goto out;
	}
	if (m.build_id_len == 0) {
		free(m.build_id);
		m.build_id = NULL;
	}
	if (ht_util_grow((void **)&t->modules, &t->cap_modules, t->nmodules + 1,
			 sizeof(*t->modules))) {
		r = -ENOMEM;
		goto out;
	}
	if (t->last_time < m.load_time)
		t->last_time = m.load_time;
	t->modules[t->nmodules++] = m;
	return 0;
out:
	free(m.path);
	free(m.build_id);
	free(m.segs);
	return r;
}

/* A LEAKS record: its entries join those of its check (a big check spans
 * several records). Returns 0, -ENOMEM or 1 (stop). */
static int parse_leaks(ht_trace_t *t, fields_t *f)
{
	uint64_t when = f_u(f), id = f_u(f), reason = f_u(f), last = f_u(f);
	if (f->err)
		return field_fail(t, f, "LEAKS");
	ht_leak_check_t *c = NULL;
	for (size_t i = 0; i < t->nleak_checks && !c; i++)
		if (t->leak_checks[i].check_id == id)
			c = &t->leak_checks[i];
	if (!c) {
		if (ht_util_grow((void **)&t->leak_checks, &t->cap_leak_checks, t->nleak_checks + 1,
				 sizeof(*t->leak_checks)))
			return -ENOMEM;
		c = &t->leak_checks[t->nleak_checks++];
		memset(c, 0, sizeof(*c));
		c->check_id = id;
		c->time = when;
		c->reason = reason;
	}
	uint64_t addr = 0;
	while (f->pos < f->end) {
		int64_t d;
		uint64_t kind;
		size_t at = f->pos;
		int r = get_s(f->p, f->end, &f->pos, &d);
		if (!r)
			r = get_u(f->p, f->end, &f->pos, &kind);
		if (r) {
			f->err = r;
			f->err_at = at;
			return field_fail(t, f, "LEAKS");
		}
		addr += (uint64_t)d;
		if (ht_util_grow((void **)&c->e, &c->cap, c->n + 1, sizeof(*c->e)))
			return -ENOMEM;
		c->e[c->n++] = (ht_leak_entry_t){ addr, kind };
	}
	if (last)
		c->complete = true;
	return 0;
}

static int leak_entry_cmp(const void *a, const void *b)
{
	uint64_t x = ((const ht_leak_entry_t *)a)->addr, y = ((const ht_leak_entry_t *)b)->addr;
	return x < y ? -1 : x > y;
}

/* Records are each sorted, but a check's records need not come in order. */
static void sort_leak_checks(ht_trace_t *t)
{
	for (size_t i = 0; i < t->nleak_checks; i++) {
		ht_leak_check_t *c = &t->leak_checks[i];
		for (size_t k = 1; k < c->n; k++) {
			if (c->e[k].addr < c->e[k - 1].addr) {
				qsort(c->e, c->n, sizeof(*c->e), leak_entry_cmp);
				break;
			}
		}
	}
}

const ht_leak_check_t *ht_trace_leak_check(const ht_trace_t *t, uint64_t check_id)
{
	for (size_t i = 0; i < t->nleak_checks; i++)
		if (t->leak_checks[i].check_id == check_id)
			return &t->leak_checks[i];
	return NULL;
}

unsigned ht_leak_kind_of(const ht_leak_check_t *c, uint64_t addr)
{
	if (!c)
		return 0;
	size_t lo = 0, hi = c->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (c->e[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < c->n && c->e[lo].addr == addr && c->e[lo].kind >= HT_LEAK_DEFINITE &&
	    c->e[lo].kind <= HT_LEAK_REACHABLE)
		return (unsigned)c->e[lo].kind;
	return 0;
}

/* Parse the body. Returns 0 or -ENOMEM; damage goes to t->error. */
static void body_fill_on(ht_trace_t *t, size_t upto);

/* body_fill_on's test inline: the fill runs a megabyte ahead, so most
 * records are there already (a body of small records was a call each). */
static inline void body_fill(ht_trace_t *t, size_t upto)
{
	if (upto > ((trace_priv_t *)t->priv)->filled)
		body_fill_on(t, upto);
}

/* One record's payload at body[pos, end) (tag; rec where its header
 * starts; cut: the body ends inside it, for the thread records only;
 * first: it is the first record). 0, 1 to stop (t->error says why), or
 * -ENOMEM. */
static int parse_record(ht_trace_t *t, uint8_t tag, size_t rec, size_t pos, size_t end, bool cut,
			bool first, uint64_t *scratch)
{
	const uint8_t *b = t->body;
	fields_t f = { b, pos, end, 0, 0, false };
	int r = 0;
	switch (tag) {
	case HT_REC_PROCESS:
		if (first)
			r = parse_process(t, &f);
		break;
	case HT_REC_MODULE:
		r = parse_module(t, &f);
		break;
	case HT_REC_MODULE_UNLOAD: {
		uint64_t id = f_u(&f), when = f_u(&f);
		if (f.err) {
			r = field_fail(t, &f, "MODULE_UNLOAD");
			break;
		}
		/* the latest still-loaded module with this id left */
		for (size_t i = t->nmodules; i-- > 0;) {
			if (t->modules[i].id == id && t->modules[i].unload_time == UINT64_MAX) {
				t->modules[i].unload_time = when;
				break;
			}
		}
		break;
	}
	case HT_REC_THREAD_BLOCK:
		r = parse_thread_block(t, pos, end, cut, scratch);
		break;
	case HT_REC_THREAD_COLUMNS:
		r = parse_thread_columns(t, pos, end, cut, scratch);
		break;
	case HT_REC_THREAD_PACKED:
	case HT_REC_THREAD_BATCH:
	case HT_REC_THREAD_BATCH2:
	case HT_REC_THREAD_BATCH3:
		if (!(r = replay_switch(t, rec)))
			r = parse_packed_record(t, tag, pos, end, cut, scratch);
		break;
	case HT_REC_EXEC: {
		uint64_t when = f_u(&f);
		char *path = f_str(&f, NULL);
		if (!path) {
			r = field_fail(t, &f, "EXEC");
			break;
		}
		free(t->exec_path);
		t->exec_path = path;
		t->exec_time = when;
		t->ending = HT_ENDING_EXEC;
		t->summary_after_exec = t->nsummary_rows > 0;
		break;
	}
	case HT_REC_END: {
		uint64_t when = f_u(&f), how = f_u(&f), status = f_u(&f);
		uint64_t rss = f_u(&f), flags = f_u(&f);
		if (f.err) {
			r = field_fail(t, &f, "END");
			break;
		}
		t->end_time = when;
		t->end_how_raw = how;
		t->end_status = status;
		t->end_peak_rss = rss;
		t->agent_flags = flags;
		/* the agent's exact counts (a sampled trace has no other) */
		uint64_t na = f_u(&f), nf = f_u(&f), nb = f_u(&f);
		if (!f.err) {
			t->end_allocs = na;
			t->end_frees = nf;
			t->end_bytes = nb;
			t->have_end_counts = true;
		}
		switch (how) {
		case HT_END_EXIT: t->ending = HT_ENDING_EXIT; break;
		case HT_END_UNDERSCORE_EXIT: t->ending = HT_ENDING_UNDERSCORE_EXIT; break;
		case HT_END_SIGNAL: t->ending = HT_ENDING_SIGNAL; break;
		default: t->ending = HT_ENDING_DETACH; break;
		}
		if (when > t->last_time)
			t->last_time = when;
		break;
	}
	case HT_REC_SITES: {
		if (t->summary_after_exec) {
			t->nsummary_rows = 0;
			t->summary_after_exec = false;
		}
		uint64_t when = f_u(&f);
		t->summary_peak_bytes = f_u(&f);
		t->summary_peak_time = f_u(&f);
		t->summary_live_blocks = f_u(&f);
		t->summary_live_bytes = f_u(&f);
		while (!f.err && f.pos < f.end) {
			ht_summary_row_t row;
			row.first_time = 0;
			row.overflow = f_u(&f) & HT_SITE_OVERFLOW;
			row.stack_id = f_u(&f);
			row.allocations = f_u(&f);
			row.bytes_allocated = f_u(&f);
			row.frees = f_u(&f);
			row.live_blocks = f_u(&f);
			row.live_bytes = f_u(&f);
			row.bytes_at_peak = f_u(&f);
			row.max_live_bytes = f_u(&f);
			row.largest = f_u(&f);
			for (int k = 0; k < 4; k++) {
				row.kind_blocks[k] = f_u(&f);
				row.kind_bytes[k] = f_u(&f);
			}
			if (f.err)
				break;
			if (t->nsummary_rows == t->cap_summary_rows) {
				size_t cap = t->cap_summary_rows ? t->cap_summary_rows * 2 : 64;
				void *np = realloc(t->summary_rows, cap * sizeof *t->summary_rows);
				if (!np) {
					r = -ENOMEM;
					break;
				}
				t->summary_rows = np;
				t->cap_summary_rows = cap;
			}
			t->summary_rows[t->nsummary_rows++] = row;
		}
		if (r < 0)
			break;
		if (f.err) {
			r = field_fail(t, &f, "SITES");
			break;
		}
		t->have_summary = true;
		if (when > t->last_time)
			t->last_time = when;
		break;
	}
	case HT_REC_SITE_TIMES: {
		/* rows by stack id: the SITES records just before */
		ht_map_t by_stack = {0};
		for (size_t i = 0; i < t->nsummary_rows && r >= 0; i++)
			if (!t->summary_rows[i].overflow &&
			    ht_map_put(&by_stack, t->summary_rows[i].stack_id, (uint32_t)i))
				r = -ENOMEM;
		while (r >= 0 && !f.err && f.pos < f.end) {
			uint64_t id = f_u(&f), when = f_u(&f);
			uint32_t i = f.err ? HT_MAP_NONE : ht_map_get(&by_stack, id);
			if (i != HT_MAP_NONE)
				t->summary_rows[i].first_time = when;
		}
		ht_map_free(&by_stack);
		if (r >= 0 && f.err)
			r = field_fail(t, &f, "SITE_TIMES");
		break;
	}
	case HT_REC_THREAD_NAME: {
		uint64_t tid = f_u(&f);
		char *name = f_str(&f, NULL);
		uint32_t th;
		if (!name) {
			r = field_fail(t, &f, "THREAD_NAME");
			break;
		}
		if (thread_index(t, tid, &th)) {
			free(name);
			r = -ENOMEM;
			break;
		}
		free(t->threads[th].name);
		t->threads[th].name = name;
		break;
	}
	case HT_REC_LEAKS:
		r = parse_leaks(t, &f);
		break;
	default:
		t->skipped_records++; /* a newer minor's record: skip by length */
		break;
	}
	return r;
}

static int parse_body(ht_trace_t *t)
{
	const uint8_t *b = t->body;
	size_t len = t->body_len, pos = 0;
	uint64_t *scratch = malloc(HT_MAX_DEPTH * sizeof(*scratch));
	if (!scratch)
		return -ENOMEM;
	int ret = 0;
	bool first = true;
	/* Nothing points into a record once parsed but an indexed
	 * THREAD_BLOCK or THREAD_COLUMNS, whose events are read where they
	 * are: the pages of the others go back to the system, a megabyte at
	 * a time (records are small), so that a body of unknown or empty
	 * records costs no memory however long. dead: where the run of such
	 * records starts. */
	size_t dead = 0;
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);

	const trace_priv_t *tp = t->priv;
	while (pos < len) {
		size_t rec = pos;
		size_t nblocks = t->nblocks;
		if (tp->zfill)
			ht_progress("reading", HT_FILE_HEADER_LEN + tp->zfill_in.pos,
				    HT_FILE_HEADER_LEN + tp->zfill_in.size, 1);
		else
			ht_progress("reading", pos, len, 1);
		body_fill(t, pos + 1 + HT_VARINT_MAX); /* the record's header */
		uint8_t tag = b[pos++];
		uint64_t plen;
		int r = get_u(b, len, &pos, &plen);
		if (r == DEC_TRUNC) {
			fail(t, -HT_ETRUNC, rec, "body ends inside a record header");
			break;
		}
		if (r || plen > HT_MAX_RECORD) {
			fail(t, -HT_ECORRUPT, rec, "bad record length (tag 0x%02x)", tag);
			break;
		}
		bool cut = plen > len - pos;
		size_t end = cut ? len : pos + plen;
		body_fill(t, end);
		if (first && tag != HT_REC_PROCESS) {
			fail(t, -HT_ECORRUPT, rec, "first record has tag 0x%02x, not PROCESS", tag);
			break;
		}
		if (cut && tag != HT_REC_THREAD_BLOCK && tag != HT_REC_THREAD_COLUMNS &&
		    tag != HT_REC_THREAD_PACKED && tag != HT_REC_THREAD_BATCH &&
		    tag != HT_REC_THREAD_BATCH2 && tag != HT_REC_THREAD_BATCH3) {
			fail(t, -HT_ETRUNC, rec, "body ends inside a record (tag 0x%02x, %" PRIu64
			     " bytes declared, %zu present)", tag, plen, len - pos);
			break;
		}
		r = parse_record(t, tag, rec, pos, end, cut, first, scratch);
		if (r < 0) {
			ret = r;
			break;
		}
		if (r > 0)
			break;
		/* records after EXEC mean the exec failed and the process went on */
		if (tag != HT_REC_EXEC && tag != HT_REC_END && t->ending == HT_ENDING_EXEC)
			t->ending = HT_ENDING_CUT_SHORT;
		first = false;
		pos = end;
		if ((tag == HT_REC_THREAD_BLOCK || tag == HT_REC_THREAD_COLUMNS) &&
		    t->nblocks != nblocks) {
			release_pages(t->body + dead, rec - dead);
			dead = end;
		} else if (end - dead >= ((size_t)1 << 20)) {
			release_pages(t->body + dead, end - dead);
			/* the page end is in still holds only dead bytes */
			size_t in_page = (uintptr_t)(t->body + end) & (page - 1);
			if (end - in_page > dead)
				dead = end - in_page;
		}
	}
	free(scratch);
	sort_leak_checks(t);
	return ret;
}

/* ---- module address index ---------------------------------------------------- */

static int seg_cmp(const void *a, const void *b)
{
	const seg_ref_t *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->module < y->module ? -1 : x->module > y->module;
}

static int build_segment_index(ht_trace_t *t)
{
	trace_priv_t *p = t->priv;
	size_t n = 0, cap = 0;
	for (size_t i = 0; i < t->nmodules; i++) {
		const ht_module_t *m = &t->modules[i];
		for (size_t j = 0; j < m->nsegs; j++) {
			uint64_t start = m->bias + m->segs[j].vaddr;
			uint64_t end = start + m->segs[j].memsz;
			/* skip empty and wrapping segments: no IP can be inside */
			if (m->segs[j].memsz == 0 || end < start)
				continue;
			if (ht_util_grow((void **)&p->segs, &cap, n + 1, sizeof(*p->segs)))
				return -ENOMEM;
			p->segs[n++] = (seg_ref_t){ start, end, (uint32_t)i };
		}
	}
	p->nsegs = n;
	if (!n)
		return 0;
	qsort(p->segs, n, sizeof(*p->segs), seg_cmp);
	p->seg_maxend = malloc(n * sizeof(*p->seg_maxend));
	if (!p->seg_maxend)
		return -ENOMEM;
	uint64_t mx = 0;
	for (size_t i = 0; i < n; i++) {
		if (p->segs[i].end > mx)
			mx = p->segs[i].end;
		p->seg_maxend[i] = mx;
	}
	return 0;
}

/* How many segments start at or before ip (segs are sorted by start). */
static size_t segs_upto(const trace_priv_t *p, uint64_t ip)
{
	size_t lo = 0, hi = p->nsegs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p->segs[mid].start <= ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

long ht_trace_module_for(const ht_trace_t *t, uint64_t ip, uint64_t when)
{
	const trace_priv_t *p = t->priv;
	if (!p || !p->nsegs)
		return -1;
	size_t lo = segs_upto(p, ip);
	long before = -1, after = -1;
	for (size_t i = lo; i-- > 0 && p->seg_maxend[i] > ip;) {
		if (ip >= p->segs[i].end)
			continue;
		uint32_t mi = p->segs[i].module;
		uint64_t lt = t->modules[mi].load_time;
		if (lt <= when) {
			/* the latest loaded; of equal times (coarse stamps), the
			 * later record */
			if (before < 0 || lt > t->modules[before].load_time ||
			    (lt == t->modules[before].load_time && (long)mi > before))
				before = mi;
		} else if (after < 0 || lt < t->modules[after].load_time) {
			after = mi;
		}
	}
	return before >= 0 ? before : after;
}

long ht_trace_module_only(const ht_trace_t *t, uint64_t ip)
{
	const trace_priv_t *p = t->priv;
	if (!p || !p->nsegs)
		return -1;
	size_t lo = segs_upto(p, ip);
	long found = -1;
	for (size_t i = lo; i-- > 0 && p->seg_maxend[i] > ip;) {
		if (ip >= p->segs[i].end)
			continue;
		if (found >= 0 && found != (long)p->segs[i].module)
			return -2;
		found = p->segs[i].module;
	}
	return found;
}

const char *ht_trace_name(const ht_trace_t *t, uint64_t id)
{
	const trace_priv_t *p = t->priv;
	uint32_t i = p ? ht_map_get(&p->name_by_id, id) : HT_MAP_NONE;
	return i == HT_MAP_NONE ? NULL : t->names[i].text;
}

const ht_stack_t *ht_trace_stack(const ht_trace_t *t, uint64_t id)
{
	const trace_priv_t *p = t->priv;
	uint32_t i = ht_map_get(&p->stack_by_id, id);
	return i == HT_MAP_NONE ? NULL : &t->stacks[i];
}

/* ---- loading ---------------------------------------------------------------- */

static ht_trace_t *trace_new(void)
{
	ht_trace_t *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->priv = calloc(1, sizeof(trace_priv_t));
	if (!t->priv) {
		free(t);
		return NULL;
	}
	t->ending = HT_ENDING_CUT_SHORT;
	t->error_file_offset = -1;
	return t;
}

static int add_mark(trace_priv_t *p, uint64_t out, uint64_t in_pos)
{
	if (p->nmarks && p->marks[p->nmarks - 1].out == out) {
		p->marks[p->nmarks - 1].in_pos = in_pos;
		return 0;
	}
	if (ht_util_grow((void **)&p->marks, &p->cap_marks, p->nmarks + 1, sizeof(*p->marks)))
		return -ENOMEM;
	p->marks[p->nmarks++] = (zmark_t){ out, in_pos };
	return 0;
}

/* A stream over the file's bytes read up to in->pos: with the file
 * mapped (owner's), the pages wholly before that go back to the system
 * every 8 MiB; whatever reads them again gets them from the page cache.
 * *done: how far this stream gave them back. */
static void input_drop(const trace_priv_t *owner, const ZSTD_inBuffer *in, size_t *done)
{
	if (!owner->zin_mapped || in->pos < *done + ((size_t)8 << 20))
		return;
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	/* from the page the last call kept (it held bytes still to read) */
	uintptr_t lo = ((uintptr_t)in->src + *done) & ~(page - 1);
	uintptr_t hi = ((uintptr_t)in->src + in->pos) & ~(page - 1);
	if (lo < (uintptr_t)owner->zin_owned)
		lo = (uintptr_t)owner->zin_owned;
	if (hi > lo)
		madvise((void *)lo, hi - lo, MADV_DONTNEED);
	*done = in->pos;
}

/* The most a compressed body of len bytes may expand to. The agent's
 * traces expand 4-10x, and up to ~420x for a loop that allocates the same
 * few sizes from one stack (churn, its packed columns nearly constant);
 * zstd's format allows ~32000x (RLE blocks), which a crafted file uses to
 * make a 131 KB file a 4 GiB body: seconds of decompression and parse per
 * GiB. Past the bound the body is cut there, as max_body does. */
#define HT_BODY_RATIO 4096u
#define HT_BODY_FLOOR ((size_t)64 << 20)

static size_t body_bound(size_t len)
{
	if (len > (SIZE_MAX - HT_BODY_FLOOR) / HT_BODY_RATIO)
		return SIZE_MAX;
	return HT_BODY_FLOOR + len * HT_BODY_RATIO;
}

/* The frames' checksums (the agent writes one per zstd frame), checked by
 * decompressing data[0..len) again into a scratch buffer: the first frame
 * that fails is noted in t. A frame cut short has no checksum to check.
 * decompress() itself ignores them, so that a changed byte costs a warning
 * and not the whole frame (most traces are one frame). */
static void verify_checksums(ht_trace_t *t, const uint8_t *data, size_t len, size_t limit)
{
	ZSTD_DStream *zd = ZSTD_createDStream();
	size_t cap = (size_t)1 << 20;
	uint8_t *scratch = malloc(cap);
	ZSTD_inBuffer in = { data, len, 0 };
	size_t frame_in = 0, dropped = 0;
	uint64_t frame_out = 0, total = 0;
	while (zd && scratch && in.pos < in.size && total < limit) {
		ZSTD_outBuffer out = { scratch, cap, 0 };
		size_t r = ZSTD_decompressStream(zd, &out, &in);
		input_drop(t->priv, &in, &dropped);
		if (ZSTD_isError(r)) {
			if (ZSTD_getErrorCode(r) == ZSTD_error_checksum_wrong) {
				t->checksum_bad = true;
				t->checksum_file_offset = HT_FILE_HEADER_LEN + frame_in;
				t->checksum_body_offset = frame_out;
			}
			break; /* other damage: decompress() reported it */
		}
		total += out.pos;
		if (r == 0) { /* a frame ended: the next one starts here */
			frame_in = in.pos;
			frame_out = total;
		} else if (out.pos == 0 && in.pos == in.size) {
			break; /* cut short */
		}
	}
	free(scratch);
	ZSTD_freeDStream(zd);
}

static void *verify_main(void *arg)
{
	ht_trace_t *t = arg;
	trace_priv_t *p = t->priv;
	verify_checksums(t, p->v_data, p->v_len, p->v_limit);
	return NULL;
}

/* verify_checksums, on a thread of its own when there is a second core:
 * it is a decompression of the whole body that nothing else waits for
 * (its findings are read once the trace is loaded, after verify_join). */
static void verify_start(ht_trace_t *t, const uint8_t *data, size_t len, size_t limit)
{
	trace_priv_t *p = t->priv;
	p->v_data = data;
	p->v_len = len;
	p->v_limit = limit;
	if (ht_threads() > 1 && !pthread_create(&p->verifier, NULL, verify_main, t)) {
		p->verifying = true;
		return;
	}
	verify_checksums(t, data, len, limit);
}

static void verify_join(ht_trace_t *t)
{
	trace_priv_t *p = t->priv;
	if (p->verifying) {
		pthread_join(p->verifier, NULL);
		p->verifying = false;
	}
}

/* Gives t a body of t->body_len bytes that body_fill fills by decompressing
 * src[0..len): an anonymous range whose pages are only made when written,
 * so the parse can give back those of the records it is done with (a
 * malloc'd one, where the range cannot be had). 0 or -ENOMEM. */
static int body_reserve(ht_trace_t *t, const uint8_t *src, size_t len)
{
	trace_priv_t *p = t->priv;
	size_t n = t->body_len ? t->body_len : 1;
	void *m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		       -1, 0);
	if (m != MAP_FAILED) {
		t->body = m;
		p->body_mapped = true;
	} else if (!(t->body = malloc(n))) {
		return -ENOMEM;
	}
	if (!(p->zfill = ZSTD_createDStream()))
		return -ENOMEM;
	ZSTD_DCtx_setParameter(p->zfill, ZSTD_d_forceIgnoreChecksum, ZSTD_d_ignoreChecksum);
	p->zfill_in = (ZSTD_inBuffer){ src, len, 0 };
	p->filled = 0;
	return 0;
}

/* Measures the body data[0..len) decompresses to (the body is at file
 * offset HT_FILE_HEADER_LEN), keeping none of it: sets t->body_len, the
 * input marks, and t->error for stream damage, which ends the body there.
 * Then gives the body an address range of that length, which body_fill
 * fills as the parse reaches each record. Returns 0 or -ENOMEM. */
static int decompress(ht_trace_t *t, const uint8_t *data, size_t len, size_t max_body)
{
	trace_priv_t *p = t->priv;
	if (len == 0)
		return 0;
	size_t bound = body_bound(len);
	bool hostile_cap = !max_body || bound < max_body;
	if (hostile_cap)
		max_body = bound;
	verify_start(t, data, len, max_body);
	ZSTD_DStream *zd = ZSTD_createDStream();
	size_t chunk = ZSTD_DStreamOutSize();
	uint8_t *scratch = malloc(chunk);
	if (!zd || !scratch) {
		ZSTD_freeDStream(zd);
		free(scratch);
		return -ENOMEM;
	}
	ZSTD_DCtx_setParameter(zd, ZSTD_d_forceIgnoreChecksum, ZSTD_d_ignoreChecksum);
	ZSTD_inBuffer in = { data, len, 0 };
	size_t zr = 0, total = 0, dropped = 0;
	int ret = 0;
	for (;;) {
		if (max_body && total >= max_body) {
			t->error = -HT_ETOOBIG;
			t->error_offset = total;
			t->error_file_offset = (int64_t)(HT_FILE_HEADER_LEN + in.pos);
			t->error_file_offset_approx = true;
			if (hostile_cap)
				snprintf(t->message, sizeof(t->message),
					 "trace body expands beyond %zu bytes (%u times its %zu"
					 " compressed bytes): corrupt or hostile; read up to"
					 " decompressed offset %zu (compressed file offset ~%zu)",
					 max_body, HT_BODY_RATIO, len, total,
					 HT_FILE_HEADER_LEN + in.pos);
			else
				snprintf(t->message, sizeof(t->message),
					 "trace body larger than the %zu-byte limit; read up to"
					 " decompressed offset %zu (compressed file offset ~%zu)",
					 max_body, total, HT_FILE_HEADER_LEN + in.pos);
			break;
		}
		/* never past max_body: the body holds exactly what was measured */
		size_t room = max_body && max_body - total < chunk ? max_body - total : chunk;
		ZSTD_outBuffer out = { scratch, room, 0 };
		size_t before = in.pos;
		zr = ZSTD_decompressStream(zd, &out, &in);
		input_drop(p, &in, &dropped);
		ht_progress("decompressing", HT_FILE_HEADER_LEN + in.pos, HT_FILE_HEADER_LEN + len, 1);
		if (ZSTD_isError(zr)) {
			t->error = -HT_EZSTD;
			t->error_offset = total + out.pos;
			t->error_file_offset = (int64_t)(HT_FILE_HEADER_LEN + before);
			t->error_file_offset_approx = true;
			snprintf(t->message, sizeof(t->message),
				 "trace corrupt: zstd error \"%s\" in the compressed data after file"
				 " offset %zu (decompressed offset %zu); the rest is unreadable",
				 ZSTD_getErrorName(zr), HT_FILE_HEADER_LEN + before, total + out.pos);
			total += out.pos;
			break;
		}
		total += out.pos;
		if ((ret = add_mark(p, total, HT_FILE_HEADER_LEN + in.pos)))
			break;
		/* all input consumed and room left over, or a frame just
		 * ended (a call past its end would ask for the next): nothing
		 * is pending */
		if (in.pos == in.size && (out.pos < out.size || zr == 0))
			break;
	}
	t->body_len = total;
	if (!ret && !t->error && zr != 0) {
		/* the file ends inside a zstd frame: the writer was cut off */
		t->error = -HT_ETRUNC;
		t->error_offset = t->body_len;
		t->error_file_offset = (int64_t)(HT_FILE_HEADER_LEN + len);
		snprintf(t->message, sizeof(t->message),
			 "trace truncated: the file ends inside a zstd frame at file offset %zu"
			 " (decompressed offset %zu)",
			 HT_FILE_HEADER_LEN + len, t->body_len);
	}
	free(scratch);
	ZSTD_freeDStream(zd);
	if (ret || (ret = body_reserve(t, data, len)))
		return ret;
	p->resident_max = resident_max();
	return 0;
}

/* Makes t->body[0..upto) readable (no further than body_len), decompressing
 * on from where the last call stopped, a megabyte at least at a time. The
 * stream is the one decompress() measured: it yields the same bytes, so
 * this cannot fail but for a change of the input under it; the bytes past
 * what it got are then zeros, which the parse reports as damage. */
static void body_fill_on(ht_trace_t *t, size_t upto)
{
	trace_priv_t *p = t->priv;
	if (upto > t->body_len)
		upto = t->body_len;
	if (!p->zfill || upto <= p->filled)
		return;
	size_t want = upto + ((size_t)1 << 20);
	if (want > t->body_len)
		want = t->body_len;
	while (p->filled < upto) {
		ZSTD_outBuffer out = { t->body, want, p->filled };
		size_t zr = ZSTD_decompressStream(p->zfill, &out, &p->zfill_in);
		input_drop(p->of ? p->of->priv : p, &p->zfill_in, &p->zin_dropped);
		size_t got = out.pos - p->filled;
		p->filled = out.pos;
		if (ZSTD_isError(zr) || (!got && p->zfill_in.pos == p->zfill_in.size)) {
			p->filled = t->body_len; /* the rest stays zeros */
			break;
		}
	}
}

/* A replay for the merges of t (see "replayed blocks"): a trace of its
 * own over t's compressed body, parsed one record at a time, that joins
 * t's replayed blocks of thread want (UINT32_MAX: all) into rbuf. */
static ht_trace_t *replay_open(const ht_trace_t *t, uint8_t **rbuf, uint32_t want)
{
	const trace_priv_t *tp = t->priv;
	ht_trace_t *r = trace_new();
	if (!r)
		return NULL;
	trace_priv_t *p = r->priv;
	r->major = t->major;
	r->minor = t->minor;
	r->file_flags = t->file_flags;
	r->body_len = t->body_len;
	p->of = t;
	p->rbuf = rbuf;
	p->want_thread = want;
	if (body_reserve(r, tp->zfill_in.src, tp->zfill_in.size)) {
		ht_trace_free(r);
		return NULL;
	}
	for (unsigned i = 0; i < HT_PK_STREAMS; i++) {
		if (!tp->snap[i])
			continue;
		if (!(p->streams[i] = malloc(sizeof(*p->streams[i])))) {
			ht_trace_free(r);
			return NULL;
		}
		memcpy(p->streams[i], tp->snap[i], sizeof(*p->streams[i]));
	}
	p->npk = tp->snap_npk;
	/* the body before the first replayed record: decompressed (the
	 * stream has no other way there), a few megabytes at a time, and
	 * given back as it goes */
	while (p->filled < tp->snap_rec) {
		size_t step = tp->snap_rec - p->filled;
		body_fill(r, p->filled + (step < ((size_t)16 << 20) ? step : ((size_t)16 << 20)));
		/* pages wholly before the record only: the fill runs ahead */
		release_pages(r->body, p->filled < tp->snap_rec ? p->filled : tp->snap_rec);
	}
	p->resume = tp->snap_rec;
	return r;
}

/* The replay's next record; false at the end of what t's parse read, or
 * when the record cannot be read again as it was (out of memory). Only
 * packed records matter: the others are stepped over, and every page of
 * a record goes back to the system once it is read. */
static bool replay_step(ht_trace_t *r, uint64_t *scratch)
{
	trace_priv_t *p = r->priv;
	const uint8_t *b = r->body;
	size_t len = r->body_len, pos = p->resume;
	if (pos >= len || p->next_bi >= p->of->nblocks)
		return false;
	size_t rec = pos;
	body_fill(r, pos + 1 + HT_VARINT_MAX); /* the record's header */
	uint8_t tag = b[pos++];
	uint64_t plen;
	if (get_u(b, len, &pos, &plen) || plen > HT_MAX_RECORD)
		return false;
	bool cut = plen > len - pos;
	size_t end = cut ? len : pos + plen;
	body_fill(r, end);
	int e = 0;
	if (tag == HT_REC_THREAD_PACKED || tag == HT_REC_THREAD_BATCH ||
	    tag == HT_REC_THREAD_BATCH2 || tag == HT_REC_THREAD_BATCH3)
		e = parse_packed_record(r, tag, pos, end, cut, scratch);
	release_pages(r->body + rec, end - rec);
	p->resume = end;
	return e == 0;
}

/* ht_reader_load_mem of data, which the trace takes (a compressed body
 * stays for the merges' replays): malloc'd, or when mapped is not 0 a
 * read-only mapping of that length. */
static int load(uint8_t *data, size_t mapped, size_t len, const ht_reader_opts_t *opts,
		ht_trace_t **out)
{
	ht_trace_t *t = trace_new();
	if (t) {
		((trace_priv_t *)t->priv)->zin_owned = data;
		((trace_priv_t *)t->priv)->zin_mapped = mapped;
	} else if (mapped) {
		munmap(data, mapped);
	} else {
		free(data);
	}
	*out = t;
	if (!t)
		return -ENOMEM;
	size_t max_body = opts ? opts->max_body : 0;

	if (len < HT_FILE_HEADER_LEN || memcmp(data, HT_FILE_MAGIC, HT_FILE_MAGIC_LEN) != 0) {
		/* an agent that could not write (a full disk) leaves this */
		if (len == 0)
			snprintf(t->message, sizeof(t->message),
				 "the trace is empty (0 bytes): nothing was written to it (a full "
				 "disk when the program started?)");
		else if (len < HT_FILE_HEADER_LEN &&
			 memcmp(data, HT_FILE_MAGIC, len < HT_FILE_MAGIC_LEN ? len : HT_FILE_MAGIC_LEN) == 0)
			snprintf(t->message, sizeof(t->message),
				 "the trace is empty: the file is %zu bytes, shorter than the %d-byte "
				 "header (a full disk when the program started?)",
				 len, HT_FILE_HEADER_LEN);
		else
			snprintf(t->message, sizeof(t->message),
				 "not a heaptrail trace (bad magic at file offset 0)");
		t->error = -HT_EMAGIC;
		return t->error;
	}
	t->major = data[8] | (unsigned)data[9] << 8;
	t->minor = data[10] | (unsigned)data[11] << 8;
	t->file_flags = data[12] | (uint32_t)data[13] << 8 | (uint32_t)data[14] << 16 |
			(uint32_t)data[15] << 24;
	if (t->major != HT_FORMAT_MAJOR) {
		snprintf(t->message, sizeof(t->message),
			 "trace format %u.%u is %s than this heaptrail reads (%d.x)%s", t->major,
			 t->minor, t->major > HT_FORMAT_MAJOR ? "newer" : "older", HT_FORMAT_MAJOR,
			 t->major > HT_FORMAT_MAJOR ? "; upgrade heaptrail to read it" : "");
		t->error = -HT_EVERSION;
		return t->error;
	}

	const uint8_t *body = data + HT_FILE_HEADER_LEN;
	size_t blen = len - HT_FILE_HEADER_LEN;
	int r;
	if (t->file_flags & HT_FILE_ZSTD) {
		if ((r = decompress(t, body, blen, max_body)))
			return r;
		((trace_priv_t *)t->priv)->zdamage = t->error != 0;
	} else {
		if (max_body && blen > max_body)
			blen = max_body; /* the parse then reports the cut */
		t->body = malloc(blen ? blen : 1);
		if (!t->body)
			return -ENOMEM;
		memcpy(t->body, body, blen);
		t->body_len = blen;
	}
	r = parse_body(t);
	verify_join(t);
	ht_progress_clear();
	if (r)
		return r;
	if (getenv("HEAPTRAIL_READER_STATS")) { /* for the tests: the replays' share */
		const trace_priv_t *p = t->priv;
		fprintf(stderr,
			"heaptrail: reader: %zu of %zu blocks left to replays, %zu bytes of"
			" joined events kept\n",
			p->nreplayed, t->nblocks, p->resident);
	}
	if ((r = build_segment_index(t)))
		return r;
	if (!t->have_process) {
		if (!t->error) {
			t->error = -HT_EEMPTY;
			snprintf(t->message, sizeof(t->message),
				 "trace holds no records (the program ended before the agent wrote any)");
		}
		return t->error;
	}
	return 0;
}

int ht_reader_load_mem(const uint8_t *data, size_t len, const ht_reader_opts_t *opts,
		       ht_trace_t **out)
{
	uint8_t *copy = malloc(len ? len : 1);
	if (!copy) {
		*out = NULL;
		return -ENOMEM;
	}
	memcpy(copy, data, len);
	return load(copy, 0, len, opts, out);
}

/* path opened for reading if it is a regular file (*sb its status), or
 * -errno: a directory is -EISDIR, anything else not regular -HT_ENOTREG.
 * O_NONBLOCK: a FIFO with no writer would block the open itself, before
 * the check could refuse it. */
static int open_regular(const char *path, struct stat *sb)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, sb) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	if (!S_ISREG(sb->st_mode)) {
		close(fd);
		return S_ISDIR(sb->st_mode) ? -EISDIR : -HT_ENOTREG;
	}
	return fd;
}

int ht_reader_load_file(const char *path, const ht_reader_opts_t *opts, ht_trace_t **out)
{
	*out = NULL;
	struct stat sb;
	int fd = open_regular(path, &sb);
	if (fd < 0)
		return fd;
	/* Mapped, so that the reader can drop the pages it has read (a
	 * replay reads them again from the page cache): a report's memory
	 * does not grow with the file. The file is taken as long as it is
	 * now. Read when it cannot be mapped (empty, or not a mappable
	 * file): then until EOF, as it may still grow if the program runs on. */
	if (sb.st_size > 0 && (uint64_t)sb.st_size <= SIZE_MAX) {
		void *m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (m != MAP_FAILED) {
			close(fd);
			madvise(m, (size_t)sb.st_size, MADV_SEQUENTIAL);
			return load(m, (size_t)sb.st_size, (size_t)sb.st_size, opts, out);
		}
	}
	size_t cap = (size_t)sb.st_size + 1, len = 0;
	uint8_t *data = malloc(cap);
	if (!data) {
		close(fd);
		return -ENOMEM;
	}
	/* read until EOF: the file may still grow if the program runs on */
	for (;;) {
		if (len == cap && ht_util_grow((void **)&data, &cap, cap + 65536, 1)) {
			free(data);
			close(fd);
			return -ENOMEM;
		}
		ssize_t n = read(fd, data + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			free(data);
			close(fd);
			return -e;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	return load(data, 0, len, opts, out);
}

void ht_trace_free(ht_trace_t *t)
{
	if (!t)
		return;
	trace_priv_t *p = t->priv;
	bool body_mapped = p && p->body_mapped;
	if (p) {
		verify_join(t); /* it reads the file's bytes */
		ht_map_free(&p->stack_by_id);
		ht_map_free(&p->name_by_id);
		ht_map_free(&p->thread_by_tid);
		free(p->segs);
		free(p->seg_maxend);
		free(p->marks);
		ZSTD_freeDStream(p->zfill);
		if (p->follow) {
			ZSTD_freeDStream(p->fz);
			free(p->pend);
			close(p->ffd);
			for (size_t i = 0; i < t->nblocks; i++)
				free((void *)t->blocks[i].data);
		}
		if (p->zin_mapped)
			munmap(p->zin_owned, p->zin_mapped);
		else
			free(p->zin_owned);
		for (unsigned i = 0; i < HT_PK_STREAMS; i++) {
			free(p->streams[i]);
			free(p->snap[i]);
		}
		for (size_t i = 0; i < p->nchunks; i++)
			free(p->chunks[i]);
		free(p->chunks);
		free(p);
	}
	free(t->writer_version);
	free(t->exe_path);
	for (size_t i = 0; i < t->argc; i++)
		free(t->argv[i]);
	free(t->argv);
	free(t->exec_path);
	for (size_t i = 0; i < t->nmodules; i++) {
		free(t->modules[i].path);
		free(t->modules[i].build_id);
		free(t->modules[i].segs);
	}
	free(t->modules);
	free(t->stacks);
	free(t->ips);
	for (size_t i = 0; i < t->nthreads; i++)
		free(t->threads[i].name);
	for (size_t i = 0; i < t->nnames; i++)
		free(t->names[i].text);
	free(t->names);
	free(t->summary_rows);
	for (size_t i = 0; i < t->nleak_checks; i++)
		free(t->leak_checks[i].e);
	free(t->leak_checks);
	free(t->threads);
	free(t->blocks);
	if (body_mapped)
		munmap(t->body, t->body_len ? t->body_len : 1);
	else
		free(t->body);
	free(t);
}

/* ---- following a growing trace ------------------------------------------------ */

int ht_reader_follow(const char *path, ht_trace_t **out)
{
	*out = NULL;
	struct stat sb;
	int fd = open_regular(path, &sb);
	if (fd < 0)
		return fd;
	ht_trace_t *t = trace_new();
	if (!t) {
		close(fd);
		return -ENOMEM;
	}
	trace_priv_t *p = t->priv;
	p->follow = p->ffirst = true;
	p->ffd = fd;
	p->filled = SIZE_MAX; /* body_fill: every record is there whole */
	*out = t;
	return 0;
}

/* Room for n more bytes at the end of pend. */
static int pend_room(trace_priv_t *p, size_t n)
{
	return ht_util_grow((void **)&p->pend, &p->cap_pend, p->npend + n, 1);
}

/* Parse the whole records at the start of pend, each from a buffer of
 * its own: a THREAD_BLOCK's or THREAD_COLUMNS' becomes its block's data
 * (the merge frees it), the others go once parsed. A record not whole
 * yet waits for more of the file. */
static int follow_parse(ht_trace_t *t, uint64_t *scratch)
{
	trace_priv_t *p = t->priv;
	size_t pos = 0;
	int r = 0;
	while (!t->error && pos < p->npend) {
		size_t at = pos + 1;
		uint64_t plen;
		int d = get_u(p->pend, p->npend, &at, &plen);
		if (d == DEC_TRUNC)
			break;
		uint8_t tag = p->pend[pos];
		if (d || plen > HT_MAX_RECORD) {
			fail(t, -HT_ECORRUPT, 0, "bad record length (tag 0x%02x)", tag);
			r = 1;
			break;
		}
		if (plen > p->npend - at)
			break;
		size_t hlen = at - pos, len = hlen + (size_t)plen;
		uint8_t *rb = malloc(len);
		if (!rb)
			return -ENOMEM;
		memcpy(rb, p->pend + pos, len);
		t->body = rb;
		t->body_len = len;
		size_t nblocks = t->nblocks;
		if (p->ffirst && tag != HT_REC_PROCESS) {
			fail(t, -HT_ECORRUPT, 0, "first record has tag 0x%02x, not PROCESS", tag);
			r = 1;
		} else {
			r = parse_record(t, tag, 0, hlen, len, false, p->ffirst, scratch);
		}
		bool kept = t->nblocks != nblocks && t->blocks[nblocks].data == rb;
		t->body = NULL;
		t->body_len = 0;
		if (!kept)
			free(rb);
		if (r)
			break;
		if (tag != HT_REC_EXEC && tag != HT_REC_END && t->ending == HT_ENDING_EXEC)
			t->ending = HT_ENDING_CUT_SHORT;
		p->ffirst = false;
		pos += len;
		p->fbase += len;
	}
	memmove(p->pend, p->pend + pos, p->npend - pos);
	p->npend -= pos;
	return r < 0 ? r : 0;
}

int ht_reader_follow_poll(ht_trace_t *t, bool *grew)
{
	trace_priv_t *p = t->priv;
	*grew = false;
	if (!p->follow)
		return -EINVAL;
	uint64_t *scratch = malloc(HT_MAX_DEPTH * sizeof(*scratch));
	uint8_t *in = malloc(1 << 16);
	int r = scratch && in ? 0 : -ENOMEM;
	/* a bounded read per poll: the merge frees each block's events once
	 * past them, so a caller that advances between polls holds 2 MiB of
	 * the file's events at a time, not a long trace's */
	for (uint64_t start = p->fin; !r && !t->error && p->fin - start < ((uint64_t)2 << 20);) {
		size_t want = 1 << 16;
		if (!p->fhead)
			want = HT_FILE_HEADER_LEN - (size_t)p->fin;
		ssize_t n = pread(p->ffd, in, want, (off_t)p->fin);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			break;
		}
		if (n == 0)
			break;
		*grew = true;
		p->fin += (uint64_t)n;
		if (!p->fhead) {
			/* the header, kept whole in pend until it is */
			if ((r = pend_room(p, (size_t)n)))
				break;
			memcpy(p->pend + p->npend, in, (size_t)n);
			p->npend += (size_t)n;
			const uint8_t *h = p->pend;
			size_t have = p->npend < HT_FILE_MAGIC_LEN ? p->npend : HT_FILE_MAGIC_LEN;
			if (p->fin < HT_FILE_HEADER_LEN && !memcmp(h, HT_FILE_MAGIC, have))
				continue; /* a header still being written */
			if (memcmp(h, HT_FILE_MAGIC, have) || p->fin < HT_FILE_HEADER_LEN) {
				t->error = -HT_EMAGIC;
				snprintf(t->message, sizeof(t->message),
					 "not a heaptrail trace (bad magic at file offset 0)");
				break;
			}
			t->major = h[8] | (unsigned)h[9] << 8;
			t->minor = h[10] | (unsigned)h[11] << 8;
			t->file_flags = h[12] | (uint32_t)h[13] << 8 | (uint32_t)h[14] << 16 |
					(uint32_t)h[15] << 24;
			if (t->major != HT_FORMAT_MAJOR) {
				t->error = -HT_EVERSION;
				snprintf(t->message, sizeof(t->message),
					 "trace format %u.%u is not the one this heaptrail reads (%d.x)",
					 t->major, t->minor, HT_FORMAT_MAJOR);
				break;
			}
			p->npend = 0;
			p->fhead = true;
			if ((t->file_flags & HT_FILE_ZSTD) && !(p->fz = ZSTD_createDStream())) {
				r = -ENOMEM;
				break;
			}
			continue;
		}
		if (!p->fz) {
			if ((r = pend_room(p, (size_t)n)))
				break;
			memcpy(p->pend + p->npend, in, (size_t)n);
			p->npend += (size_t)n;
		} else {
			ZSTD_inBuffer zin = { in, (size_t)n, 0 };
			while (!r && zin.pos < zin.size) {
				if ((r = pend_room(p, 1 << 17)))
					break;
				ZSTD_outBuffer zo = { p->pend, p->cap_pend, p->npend };
				size_t zr = ZSTD_decompressStream(p->fz, &zo, &zin);
				p->npend = zo.pos;
				if (ZSTD_isError(zr)) {
					fail(t, -HT_ECORRUPT, p->npend, "compressed body is damaged: %s",
					     ZSTD_getErrorName(zr));
					break;
				}
			}
		}
		if (!r && !t->error)
			r = follow_parse(t, scratch);
	}
	free(in);
	free(scratch);
	if (!r && t->nmodules != p->fmodules) {
		free(p->segs);
		free(p->seg_maxend);
		p->segs = NULL;
		p->seg_maxend = NULL;
		p->nsegs = 0;
		r = build_segment_index(t);
		p->fmodules = t->nmodules;
	}
	return r;
}

uint64_t ht_reader_follow_offset(const ht_trace_t *t)
{
	return ((const trace_priv_t *)t->priv)->fin;
}

bool ht_reader_follow_pending(const ht_trace_t *t)
{
	const trace_priv_t *p = t->priv;
	return p->follow && p->npend > 0;
}

/* ---- merging -------------------------------------------------------------------- */

/* One cursor per thread with events: walks its blocks in file order. */
typedef struct cursor {
	uint32_t thread;
	uint32_t block;
	const uint8_t *data; /* the block's events: its data, or the replay's */
	size_t pos;
	evstate_t st;
	ht_event_t head;    /* next event of this thread */
	ht_event_t pending; /* the allocation half of a split REALLOC */
	bool has_pending;
	bool deferred; /* block not joined yet: head.time is its low_time */
} cursor_t;

/* A pool as the merge sees it: the addresses allocated into it since its
 * last RESET. Stale entries (blocks freed on their own, or allocated again
 * into it) stay in the list; block_pool says which are still members. */
typedef struct mpool {
	uint64_t id;
	uint64_t *addrs;
	size_t naddrs, cap_addrs;
} mpool_t;

/* block_pool value of an address that left its pool (ht_map has no
 * deletion) */
#define POOL_GONE (HT_MAP_NONE - 1)

struct ht_merge {
	const ht_trace_t *t;
	unsigned flags; /* HT_MERGE_* */
	cursor_t *cur;
	uint32_t *heap; /* cursor indices, min-heap by (time, kind, block) */
	size_t nheap;
	/* pools: see HT_MERGE_POOLS */
	mpool_t *pools;
	size_t npools, cap_pools;
	ht_map_t pool_idx;   /* pool id -> index in pools */
	ht_map_t block_pool; /* address of a pool block -> index in pools, or POOL_GONE */
	uint64_t *outq;	     /* FREEs owed by a RESET/DESTROY: addresses */
	size_t nout, iout, cap_out;
	ht_event_t pool_ev;  /* the POOL event the queued FREEs come from */
	cursor_t *popped;    /* the cursor of the event merge_pop returned last */
	bool nomem;	     /* pool bookkeeping failed: pool frees are lost */
	/* replayed blocks: the replay joining them, and their buffers by
	 * block index (NULL until joined, and again once passed) */
	ht_trace_t *replay;
	uint8_t **rbuf;
	uint32_t thread;     /* the one thread merged, or UINT32_MAX */
	bool replay_lost;    /* a replay failed: the blocks left are missing */
	/* HT_MERGE_FOLLOW: each thread's cursor (UINT32_MAX: none yet), the
	 * cursors' room, and the latest time ht_merge_next goes to */
	uint32_t *thread_cur;
	size_t ncur, cap_cur;
	uint64_t limit;
	uint64_t span0, span1; /* the events' times, for the progress line */
	unsigned nprog;
	uint64_t scratch[HT_MAX_DEPTH];
};

/* Frees (and RSS samples, function, phase and pool events) sort before
 * allocations on equal stamps, and tags and snapshots after them: a block
 * is tagged once it exists, so another thread's TAG stamped with its
 * allocation must not come first; a snapshot likewise sees it. */
static inline int ev_kind(const ht_event_t *e)
{
	if (e->type == HT_EV_TAG || e->type == HT_EV_SNAPSHOT ||
	    (e->type == HT_EV_EXT && e->fn == HT_EXT_LEAK_CHECK))
		return 2;
	if (e->type == HT_EV_EXT) /* an open is an allocation, a close a free */
		return e->fn == HT_EXT_FD_OPEN || e->fn == HT_EXT_HANDLE_ACQUIRE ||
		       e->fn == HT_EXT_MMAP || e->fn == HT_EXT_MREMAP;
	return e->type == HT_EV_ALLOC || e->type == HT_EV_REALLOC;
}

static inline bool cur_less(const ht_merge_t *m, uint32_t a, uint32_t b)
{
	const cursor_t *x = &m->cur[a], *y = &m->cur[b];
	if (x->head.time != y->head.time)
		return x->head.time < y->head.time;
	/* a deferred cursor's key is below any event it may give */
	int kx = x->deferred ? -1 : ev_kind(&x->head), ky = y->deferred ? -1 : ev_kind(&y->head);
	if (kx != ky)
		return kx < ky;
	return x->block < y->block;
}

/* The joined events of replayed block bi, joining on until they are
 * there; NULL if the replay cannot get that far (out of memory, or a
 * file that changed since the parse). */
static const uint8_t *replay_get(ht_merge_t *m, uint32_t bi)
{
	if (!m->replay && !m->replay_lost) {
		m->replay = replay_open(m->t, m->rbuf, m->thread);
		m->replay_lost = !m->replay;
	}
	while (!m->rbuf[bi] && !m->replay_lost)
		m->replay_lost = !replay_step(m->replay, m->scratch);
	if (!m->rbuf[bi] && m->replay_lost) {
		static bool told;
		if (!told)
			fprintf(stderr, "heaptrail: cannot read the trace again (out of memory, or"
					" the file changed): the figures miss the events from"
					" there on\n");
		told = true;
	}
	return m->rbuf[bi];
}

/* Points c at the start of block bi. A replayed block the replay cannot
 * give is passed over, empty. */
static void cursor_enter(ht_merge_t *m, cursor_t *c, uint32_t bi)
{
	const ht_block_t *b = &m->t->blocks[bi];
	c->block = bi;
	c->pos = b->off;
	c->st = (evstate_t){ b->base_time, 0, 0 };
	c->data = b->data || (m->flags & HT_MERGE_FOLLOW) ? b->data : replay_get(m, bi);
	if (!c->data)
		c->pos = b->end;
}

/* Points c at block bi, a replayed one, without joining it (see "deferred
 * cursors" at merge_pop). */
static void cursor_defer(ht_merge_t *m, cursor_t *c, uint32_t bi)
{
	c->block = bi;
	c->data = NULL;
	c->deferred = true;
	/* only the time: the fields an event does not set stay as a join
	 * at once would leave them */
	c->head.time = m->t->blocks[bi].low_time;
}

/* Whether c waits for its turn before joining block bi: a replayed block
 * of a merge that is not following a growing trace. */
static inline bool defers(const ht_merge_t *m, uint32_t bi)
{
	return !(m->flags & HT_MERGE_FOLLOW) && !m->t->blocks[bi].data;
}

/* The cursor is done with its block: a replayed block's buffer goes. */
static void cursor_leave(ht_merge_t *m, cursor_t *c)
{
	if (m->flags & HT_MERGE_FOLLOW) { /* read once: its events go */
		ht_block_t *b = &m->t->blocks[c->block];
		free((void *)b->data);
		b->data = NULL;
		b->off = b->end;
		return;
	}
	if (m->rbuf && m->rbuf[c->block]) {
		free(m->rbuf[c->block]);
		m->rbuf[c->block] = NULL;
	}
}

/* Load the cursor's next non-STACK event into head. False when exhausted. */
static bool cursor_advance(ht_merge_t *m, cursor_t *c)
{
	const ht_trace_t *t = m->t;
	if (c->has_pending) {
		c->head = c->pending;
		c->has_pending = false;
		return true;
	}
	if (c->deferred) { /* its turn: join the block now */
		c->deferred = false;
		cursor_enter(m, c, c->block);
	}
	for (;;) {
		const ht_block_t *b = &t->blocks[c->block];
		while (c->pos < b->end) {
			stackdef_t sd;
			if (decode_event(c->data, b->end, &c->pos, &c->st, &c->head, &sd, m->scratch))
				break; /* cannot happen: validated; end the block */
			if (c->head.type == HT_EV_STACK || c->head.type == HT_EV_NAME)
				continue;
			/* function events only for callers that asked: the others
			 * count and index the heap events they get (2 * nevents) */
			if (!(m->flags & HT_MERGE_FUNCTIONS) &&
			    (c->head.type == HT_EV_ENTER || c->head.type == HT_EV_EXIT ||
			     c->head.type == HT_EV_ENABLE))
				continue;
			if (!(m->flags & HT_MERGE_MARKS) &&
			    (c->head.type == HT_EV_TAG || c->head.type == HT_EV_PHASE))
				continue;
			/* POOL events always reach ht_merge_next: it makes their
			 * frees, and returns them only with HT_MERGE_POOLS */
			if (!(m->flags & HT_MERGE_SNAPSHOTS) && c->head.type == HT_EV_SNAPSHOT)
				continue;
			if (!(m->flags & HT_MERGE_EXT) && c->head.type == HT_EV_EXT)
				continue;
			c->head.thread = c->thread;
			c->head.from_realloc = false;
			if (c->head.type == HT_EV_REALLOC) {
				/* split: the free half goes first, at its own stamp */
				c->pending = c->head;
				c->has_pending = true;
				c->head.type = HT_EV_FREE;
				c->head.time = c->pending.free_time;
				c->head.addr = c->pending.old_addr;
				c->head.size = 0;
				c->head.from_realloc = true;
			}
			return true;
		}
		if (c->data)
			cursor_leave(m, c);
		c->data = NULL;
		if (b->next == UINT32_MAX)
			return false; /* following: parked until its thread's next block */
		if (defers(m, b->next)) {
			cursor_defer(m, c, b->next);
			return true;
		}
		cursor_enter(m, c, b->next);
	}
}

static void sift_down(ht_merge_t *m, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, s = i;
		if (l < m->nheap && cur_less(m, m->heap[l], m->heap[s]))
			s = l;
		if (r < m->nheap && cur_less(m, m->heap[r], m->heap[s]))
			s = r;
		if (s == i)
			return;
		uint32_t tmp = m->heap[i];
		m->heap[i] = m->heap[s];
		m->heap[s] = tmp;
		i = s;
	}
}

int ht_merge_new(const ht_trace_t *t, ht_merge_t **out)
{
	return ht_merge_new_ex(t, 0, UINT32_MAX, out);
}

/* Merges made in this process, printed at exit when HEAPTRAIL_MERGE_STATS
 * is set: how many times a command read the events (docs/INTERNALS.md). */
static unsigned long merges_made;

static void print_merges(void)
{
	fprintf(stderr, "heaptrail: merges: %lu\n", merges_made);
}

int ht_merge_new_ex(const ht_trace_t *t, unsigned flags, uint32_t thread, ht_merge_t **out)
{
	if (!merges_made++ && getenv("HEAPTRAIL_MERGE_STATS"))
		atexit(print_merges);
	ht_merge_t *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->t = t;
	m->flags = flags;
	m->thread = thread;
	m->limit = UINT64_MAX;
	if (flags & HT_MERGE_FOLLOW) { /* cursors come with ht_merge_follow */
		*out = m;
		return 0;
	}
	size_t n = t->nthreads ? t->nthreads : 1;
	m->cur = calloc(n, sizeof(*m->cur));
	m->heap = calloc(n, sizeof(*m->heap));
	const trace_priv_t *tp = t->priv;
	if (tp->nreplayed && !(m->rbuf = calloc(t->nblocks, sizeof(*m->rbuf))))
		m->replay_lost = true;
	if (!m->cur || !m->heap || m->replay_lost) {
		ht_merge_free(m);
		return -ENOMEM;
	}
	for (size_t i = 0; i < t->nthreads; i++) {
		const ht_thread_t *th = &t->threads[i];
		if (th->first_block == UINT32_MAX || (thread != UINT32_MAX && thread != i))
			continue;
		cursor_t *c = &m->cur[m->nheap];
		c->thread = (uint32_t)i;
		if (defers(m, th->first_block))
			cursor_defer(m, c, th->first_block);
		else
			cursor_enter(m, c, th->first_block);
		if (c->deferred || cursor_advance(m, c)) {
			m->heap[m->nheap] = (uint32_t)m->nheap;
			m->nheap++;
		}
	}
	for (size_t i = m->nheap / 2; i-- > 0;)
		sift_down(m, i);
	m->span0 = UINT64_MAX;
	m->span1 = t->end_time;
	for (size_t i = 0; i < t->nblocks; i++) {
		if (t->blocks[i].first_time < m->span0)
			m->span0 = t->blocks[i].first_time;
		if (t->blocks[i].first_time > m->span1)
			m->span1 = t->blocks[i].first_time;
	}
	*out = m;
	return 0;
}

/* Sift cursor index i up from the heap's end. */
static void sift_up(ht_merge_t *m, size_t i)
{
	while (i > 0) {
		size_t up = (i - 1) / 2;
		if (!cur_less(m, m->heap[i], m->heap[up]))
			return;
		uint32_t tmp = m->heap[i];
		m->heap[i] = m->heap[up];
		m->heap[up] = tmp;
		i = up;
	}
}

int ht_merge_follow(ht_merge_t *m, uint64_t limit)
{
	const ht_trace_t *t = m->t;
	if (!(m->flags & HT_MERGE_FOLLOW))
		return -EINVAL;
	m->limit = limit;
	if (t->nthreads > m->cap_cur) {
		size_t cap = m->cap_cur, cap2 = m->cap_cur, cap3 = m->cap_cur;
		if (ht_util_grow((void **)&m->cur, &cap, t->nthreads, sizeof(*m->cur)) ||
		    ht_util_grow((void **)&m->heap, &cap2, t->nthreads, sizeof(*m->heap)) ||
		    ht_util_grow((void **)&m->thread_cur, &cap3, t->nthreads, sizeof(*m->thread_cur)))
			return -ENOMEM;
		for (size_t i = m->cap_cur; i < cap3; i++)
			m->thread_cur[i] = UINT32_MAX;
		m->cap_cur = t->nthreads;
	}
	/* a cursor is in the heap while it has a head; else parked at its
	 * thread's last block, read to its end */
	bool *in_heap = calloc(m->ncur + t->nthreads + 1, sizeof(*in_heap));
	if (!in_heap)
		return -ENOMEM;
	for (size_t i = 0; i < m->nheap; i++)
		in_heap[m->heap[i]] = true;
	for (size_t i = 0; i < t->nthreads; i++) {
		const ht_thread_t *th = &t->threads[i];
		if (th->first_block == UINT32_MAX || (m->thread != UINT32_MAX && m->thread != i))
			continue;
		uint32_t ci = m->thread_cur[i];
		cursor_t *c;
		if (ci == UINT32_MAX) {
			ci = m->thread_cur[i] = (uint32_t)m->ncur++;
			c = &m->cur[ci];
			memset(c, 0, sizeof(*c));
			c->thread = (uint32_t)i;
			cursor_enter(m, c, th->first_block);
		} else {
			c = &m->cur[ci];
			if (in_heap[ci] || c->has_pending)
				continue;
			const ht_block_t *b = &t->blocks[c->block];
			if (b->next == UINT32_MAX)
				continue;
			cursor_enter(m, c, b->next);
		}
		if (cursor_advance(m, c)) {
			m->heap[m->nheap++] = ci;
			sift_up(m, m->nheap - 1);
		}
	}
	free(in_heap);
	return 0;
}

void ht_merge_progress(const ht_merge_t *m, uint64_t time)
{
	uint64_t t0 = m->span0, t1 = m->span1;
	ht_progress("analysing", time > t0 ? time - t0 : 0, t1 > t0 ? t1 - t0 : 0, 0);
}

/* ---- pools: PALLOC membership and the frees of RESET/DESTROY ---------------- */

/* Index of pool id in m->pools, added when new; UINT32_MAX on ENOMEM. */
static uint32_t pool_index(ht_merge_t *m, uint64_t id)
{
	uint32_t i = ht_map_get(&m->pool_idx, id);
	if (i != HT_MAP_NONE)
		return i;
	if (m->npools >= POOL_GONE - 1 ||
	    ht_util_grow((void **)&m->pools, &m->cap_pools, m->npools + 1, sizeof(*m->pools)) ||
	    ht_map_put(&m->pool_idx, id, (uint32_t)m->npools))
		return UINT32_MAX;
	m->pools[m->npools] = (mpool_t){ id, NULL, 0, 0 };
	return (uint32_t)m->npools++;
}

/* Follow pool membership through one heap event (ev is what the caller
 * gets: a FREE of a pool block is marked pooled). The lookups only run
 * once a trace has had a PALLOC, so traces without pools pay one branch. */
static void pool_track(ht_merge_t *m, ht_event_t *ev)
{
	if (ev->type == HT_EV_FREE || ev->type == HT_EV_ALLOC || ev->type == HT_EV_REALLOC) {
		if (m->block_pool.len) {
			uint32_t pi = ht_map_get(&m->block_pool, ev->addr);
			if (pi != HT_MAP_NONE && pi != POOL_GONE) {
				/* freed on its own, or its free went unrecorded and the
				 * address was reused: either way not the pool's now */
				if (ht_map_put(&m->block_pool, ev->addr, POOL_GONE))
					m->nomem = true;
				if (ev->type == HT_EV_FREE) {
					ev->pooled = true;
					ev->pool = m->pools[pi].id;
					/* realloc'd: the new block, the same cursor's
					 * next event, stays in the pool */
					cursor_t *c = m->popped;
					if (ev->from_realloc && c && !c->deferred &&
					    c->head.type == HT_EV_REALLOC &&
					    c->head.old_addr == ev->addr) {
						c->head.pooled = true;
						c->head.pool = ev->pool;
					}
				}
			}
		}
		if ((ev->type == HT_EV_ALLOC || ev->type == HT_EV_REALLOC) && ev->pooled) {
			uint32_t pi = pool_index(m, ev->pool);
			if (pi == UINT32_MAX) {
				m->nomem = true;
				return;
			}
			mpool_t *pl = &m->pools[pi];
			if (ht_util_grow((void **)&pl->addrs, &pl->cap_addrs, pl->naddrs + 1,
					 sizeof(*pl->addrs)) ||
			    ht_map_put(&m->block_pool, ev->addr, pi)) {
				m->nomem = true;
				return;
			}
			pl->addrs[pl->naddrs++] = ev->addr;
		}
		return;
	}
	if (ev->type != HT_EV_POOL || (ev->size != HT_POOL_RESET && ev->size != HT_POOL_DESTROY))
		return;
	uint32_t pi = ht_map_get(&m->pool_idx, ev->pool);
	if (pi == HT_MAP_NONE)
		return; /* nothing was ever allocated into it */
	mpool_t *pl = &m->pools[pi];
	m->nout = m->iout = 0;
	for (size_t i = 0; i < pl->naddrs; i++) {
		uint64_t a = pl->addrs[i];
		/* a stale entry (left the pool, or listed twice) is skipped */
		if (ht_map_get(&m->block_pool, a) != pi)
			continue;
		if (ht_util_grow((void **)&m->outq, &m->cap_out, m->nout + 1, sizeof(*m->outq)) ||
		    ht_map_put(&m->block_pool, a, POOL_GONE)) {
			m->nomem = true;
			break;
		}
		m->outq[m->nout++] = a;
	}
	pl->naddrs = 0;
	m->pool_ev = *ev;
}

/* Pop the earliest event of all threads. False when none is left.
 *
 * Deferred cursors: a cursor that reaches a replayed block does not join
 * it yet but sorts at the block's low_time, below every event the block
 * holds; only once it is the least of all is its block joined, its true
 * head read and the heap put right. The order is the same (each key in
 * the heap is at most its cursor's next event's), but a replay joins a
 * block when the merge's time gets to it, not when its thread's previous
 * block ends: a thread idle for most of a run (a main thread waiting for
 * its workers) would otherwise have its next block, at the end of the
 * file, joined at once, and with it every block before it, which then
 * wait in memory for their turn (the 4-thread bench: 450 MB). */
static bool merge_pop(ht_merge_t *m, ht_event_t *ev)
{
	while (m->nheap && m->cur[m->heap[0]].deferred) {
		if (!cursor_advance(m, &m->cur[m->heap[0]]))
			m->heap[0] = m->heap[--m->nheap];
		sift_down(m, 0);
	}
	if (!m->nheap || m->cur[m->heap[0]].head.time > m->limit)
		return false;
	cursor_t *c = &m->cur[m->heap[0]];
	*ev = c->head;
	m->popped = c;
	if (!cursor_advance(m, c)) {
		m->heap[0] = m->heap[--m->nheap];
		m->popped = NULL;
	}
	sift_down(m, 0);
	return true;
}

bool ht_merge_next(ht_merge_t *m, ht_event_t *ev)
{
	for (;;) {
		if (m->iout < m->nout) {
			/* a FREE owed by the last RESET/DESTROY */
			const ht_event_t *p = &m->pool_ev;
			memset(ev, 0, sizeof(*ev));
			ev->type = HT_EV_FREE;
			ev->thread = p->thread;
			ev->time = ev->free_time = p->time;
			ev->addr = m->outq[m->iout++];
			ev->pooled = ev->from_pool_op = true;
			ev->pool = p->pool;
			return true;
		}
		if (!merge_pop(m, ev))
			return false;
		if (!(++m->nprog & 255))
			ht_merge_progress(m, ev->time);
		pool_track(m, ev);
		if (ev->type == HT_EV_POOL && !(m->flags & HT_MERGE_POOLS))
			continue; /* its frees, if any, come next */
		return true;
	}
}

void ht_merge_free(ht_merge_t *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->npools; i++)
		free(m->pools[i].addrs);
	free(m->pools);
	ht_map_free(&m->pool_idx);
	ht_map_free(&m->block_pool);
	free(m->outq);
	free(m->cur);
	free(m->heap);
	free(m->thread_cur);
	if (m->rbuf)
		for (size_t i = 0; i < m->t->nblocks; i++)
			free(m->rbuf[i]);
	free(m->rbuf);
	ht_trace_free(m->replay);
	free(m);
}
