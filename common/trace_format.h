/* trace_format.h - the one definition of heaptrail's on-disk trace format.
 *
 * The agent writes it, the CLI's reader and the fuzzers read it; docs/FORMAT.md
 * explains it in prose. Nothing here allocates or depends on anything but
 * <stdint.h>/<stddef.h>, so the agent may include it.
 *
 * File layout
 *   [file header: 16 bytes, uncompressed]
 *   [body: a zstd stream (flag HT_FILE_ZSTD) or raw, holding records]
 *
 * Record (top level):   u8 tag | varint payload_len | payload[payload_len]
 *   Unknown tags are skipped by length, so minor versions may add records.
 *
 * Integers are LEB128 varints ("varint") unless said otherwise; signed deltas
 * are zigzag-encoded ("svarint"). Strings are varint length + bytes (no NUL).
 * Times are nanoseconds of CLOCK_MONOTONIC, relative to PROCESS.start_mono_ns.
 *
 * Thread blocks carry the events. Each thread appends events to its own
 * buffer and ships it as one HT_REC_THREAD_BLOCK, so blocks of different
 * threads interleave in the file and the reader merges events by time
 * (a free is stamped before the real free runs, an allocation after the real
 * allocation returns, so address reuse across threads orders correctly; on
 * equal stamps frees go first).
 */
#ifndef HEAPTRAIL_TRACE_FORMAT_H
#define HEAPTRAIL_TRACE_FORMAT_H

#include <stddef.h>
#include <stdint.h>

/* ---- file header ---------------------------------------------------------
 * bytes 0..7   magic "HEAPTRL\x1a"
 * bytes 8..9   format major (u16 little-endian): readers reject newer majors
 * bytes 10..11 format minor (u16 LE): additions readers may ignore
 * bytes 12..15 flags (u32 LE)
 */
#define HT_FILE_MAGIC "HEAPTRL\x1a"
#define HT_FILE_MAGIC_LEN 8
#define HT_FILE_HEADER_LEN 16
#define HT_FORMAT_MAJOR 1
#define HT_FORMAT_MINOR 12
#define HT_FILE_ZSTD 0x1u /* body is one or more zstd frames */

/* ---- top-level records ---------------------------------------------------- */
enum ht_record_tag {
	/* First record. varint format_major, varint format_minor,
	 * string writer_version, varint pid, varint ppid,
	 * varint start_realtime_ns (Unix epoch), varint start_mono_ns,
	 * varint page_size, varint flags (HT_PROC_*), varint max_depth,
	 * string exe_path, varint argc, argc x string argv[i]. */
	HT_REC_PROCESS = 0x01,

	/* A loaded ELF object. varint module_id, varint time,
	 * varint load_bias, string path, string build_id (raw bytes, may be
	 * empty), varint nsegs, nsegs x { varint vaddr, varint memsz,
	 * varint p_flags } for its PT_LOAD segments (addresses = bias + vaddr).
	 * Written for every object at start and for new ones after dlopen. */
	HT_REC_MODULE = 0x02,

	/* An object left the process (dlclose). varint module_id, varint time. */
	HT_REC_MODULE_UNLOAD = 0x03,

	/* One thread's events. varint tid, varint base_time, then events
	 * (HT_EV_*) until the payload ends. Event times are deltas from the
	 * previous event of the block (the first from base_time); addresses are
	 * deltas from the previous address of the block (the first from 0). */
	HT_REC_THREAD_BLOCK = 0x04,

	/* The process is about to exec. varint time, string path. The file ends
	 * here if the exec succeeds; the new image writes its own file. */
	HT_REC_EXEC = 0x05,

	/* Last record of a complete trace. varint time, varint how (HT_END_*),
	 * varint status (exit code or signal number), varint peak_rss_bytes,
	 * varint agent_flags (HT_AGENT_*), then the agent's own counts:
	 * varint allocations, varint frees (free calls of non-NULL pointers,
	 * including blocks it never saw allocated), varint bytes_allocated.
	 * A trace without it was cut short (SIGKILL, power loss): the reader
	 * reports what it has. */
	HT_REC_END = 0x06,

	/* Thread name, when known. varint tid, string name. */
	HT_REC_THREAD_NAME = 0x07,

	/* Reachability classes of the live blocks, from the agent's leak check
	 * (format 1.4). varint time, varint check_id (0 = the check at exit;
	 * 1, 2, ... the on-demand checks, matching their LEAK_CHECK events),
	 * varint reason (HT_LEAK_AT_*), varint last (1 on the check's last
	 * record: a big check is split over several), then entries until the
	 * payload ends, sorted by address: svarint address delta (from the
	 * previous entry of this record, the first from 0), varint kind
	 * (HT_LEAK_*). Every block the agent knew live at the check is listed,
	 * still-reachable ones included. */
	HT_REC_LEAKS = 0x08,

	/* Summary mode (option summary=1, PROCESS flag HT_PROC_SUMMARY): the
	 * agent kept per-site totals instead of writing events, and writes
	 * them at the end, after one THREAD_BLOCK holding the STACK
	 * definitions. varint time, varint peak_heap_bytes, varint
	 * peak_time, varint live_blocks, varint live_bytes (at the end), then
	 * rows until the payload ends: varint flags (HT_SITE_*), varint
	 * stack_id, varint allocations, varint bytes_allocated, varint frees,
	 * varint live_blocks, varint live_bytes, varint bytes_at_peak (live
	 * bytes of the site when the whole heap peaked), varint max_live_bytes
	 * (the site's own peak), varint largest, then for the leak classes of
	 * its live blocks at exit (HT_LEAK_DEFINITE .. HT_LEAK_REACHABLE, in
	 * that order) varint blocks, varint bytes each (all 0 when no leak
	 * check ran). A site is one stack id. */
	HT_REC_SITES = 0x09,

	/* One thread's events in columns (format 1.5; common/columns.h):
	 * varint tid, varint base_time, HT_NCOLS varint column lengths, then
	 * the columns one after the other. Joined, the columns give exactly
	 * the events of a THREAD_BLOCK with that tid and base_time. */
	HT_REC_THREAD_COLUMNS = 0x0a,

	/* One thread's events in columns with coded addresses (format 1.6;
	 * common/packed.h): varint tid, varint base_time, varint stream
	 * (stream number << 1 | 1 when the stream starts afresh), HT_NCOLS
	 * varint column lengths, then the columns. Joined with the stream's
	 * state, they give exactly the events of a THREAD_BLOCK. */
	HT_REC_THREAD_PACKED = 0x0b,

	/* Several packed blocks, of any threads, in one record (format 1.7):
	 * varint count, then per block its THREAD_PACKED header (tid,
	 * base_time, stream, HT_NCOLS column lengths), then column 0 of every
	 * block in order, column 1 of every block, and so on. The blocks read
	 * as THREAD_PACKED records in that order, but with their stack ids in
	 * column 0 and 254 size classes (packed.h, ht_pk_nbins, ht_pk_column).
	 * zstd codes each kind of
	 * field better in long runs of it than in one block's short columns
	 * (a fresh Huffman table per zstd block, matches within one kind). */
	HT_REC_THREAD_BATCH = 0x0c,

	/* THREAD_BATCH with a layout flags varint in each block's header, after
	 * its stream (format 1.8): bit 0, HT_BATCH_JOINED, the block's address
	 * codes are in column 0 (packed.h, HT_PK_JOINED); bit 1 (format 1.10),
	 * HT_BATCH_SIZES, its REALLOCs' sizes may be coded against their old
	 * blocks' (packed.h, HT_PK_SIZES); bit 2 (format 1.11), HT_BATCH_RANK,
	 * its frees' REF codes are ranks among the stream's live allocations
	 * (packed.h, HT_PK_RANK); bit 3 (format 1.11), HT_BATCH_FREES, its
	 * frees' address codes are in column 4 (packed.h, HT_PK_FREES); bit 4
	 * (format 1.11), HT_BATCH_FREED, its allocations may be coded FREED
	 * (packed.h, HT_PK_FREED); other bits are 0.
	 * The writers of 1.8-1.10 wrote these instead of THREAD_BATCH. */
	HT_REC_THREAD_BATCH2 = 0x0d,

	/* Summary mode (format 1.9), after the SITES records: when each site's
	 * first block was allocated, so that its frames are read in the
	 * modules loaded then (a library loaded where an unloaded one was
	 * has the same addresses): pairs of varint stack_id, varint time until
	 * the payload ends. A site without a pair reads at time 0. */
	HT_REC_SITE_TIMES = 0x0e,

	/* THREAD_BATCH2 with its address, size and free code columns split
	 * (format 1.11): varint count, then for columns 2, 3 and 4 the number
	 * of varints the column holds over all the blocks, then the block
	 * headers and columns as THREAD_BATCH2, but for columns 2, 3 and 4:
	 * each is the first byte of every varint, in order, then the bytes
	 * that follow first bytes with their top bit set, in order (columns.h,
	 * ht_varints_split). A varint's first byte and its rest follow
	 * different statistics; apart, zstd's literal tables fit each (the
	 * bench's traces 1-9% smaller). The writer of 1.11 writes these. */
	HT_REC_THREAD_BATCH3 = 0x0f,
};
#define HT_BATCH_JOINED 0x1u
#define HT_BATCH_SIZES 0x2u
#define HT_BATCH_RANK 0x4u /* format 1.11: frees' REFs are ranks (packed.h, HT_PK_RANK) */
#define HT_BATCH_FREES 0x8u /* format 1.11: frees' codes in column 4 (packed.h, HT_PK_FREES) */
#define HT_BATCH_FREED 0x10u /* format 1.11: FREED codes for allocations (packed.h, HT_PK_FREED) */

/* SITES row flags */
#define HT_SITE_OVERFLOW 0x1u /* every site that did not fit in the table */

/* LEAKS.reason */
enum ht_leak_reason {
	HT_LEAK_AT_EXIT = 0,   /* exit, _exit, return from main */
	HT_LEAK_AT_SIGNAL = 1, /* the leak-check signal */
	HT_LEAK_AT_CALL = 2,   /* heaptrail_leak_check() */
};

/* LEAKS entry kind: valgrind memcheck's leak classes. */
enum ht_leak_kind {
	HT_LEAK_DEFINITE = 1,  /* no pointer to it anywhere */
	HT_LEAK_INDIRECT = 2,  /* pointed to only from lost blocks */
	HT_LEAK_POSSIBLE = 3,  /* only interior pointers to it */
	HT_LEAK_REACHABLE = 4, /* a pointer to its start from the roots */
};

/* PROCESS.flags */
#define HT_PROC_FORKED 0x1u /* this process is a fork child of ppid */
#define HT_PROC_EXECED 0x2u /* the image was exec'd by a traced process */
#define HT_PROC_UNWIND_FP 0x4u /* stacks come from the frame-pointer walker */
#define HT_PROC_FUNCTIONS 0x8u /* function entry/exit recorded (functions=1) */
#define HT_PROC_STACKS_SHADOW 0x10u /* allocation stacks come from the function shadow stack */
#define HT_PROC_START_OFF 0x20u /* recording started switched off (start=off) */
#define HT_PROC_SUMMARY 0x80u /* summary mode: SITES records instead of events */
#define HT_PROC_SAMPLED 0x40u /* allocations are sampled (PROCESS ends with varint sample_rate) */
#define HT_PROC_ATTACHED 0x100u /* heaptrail attach started the agent in a running
				   process: frees of blocks allocated before are expected */

/* END.how */
enum ht_end_how {
	HT_END_EXIT = 0,   /* exit() or return from main: status = exit code */
	HT_END_UNDERSCORE_EXIT = 1, /* _exit/_Exit: status = exit code */
	HT_END_SIGNAL = 2, /* killed by a signal: status = signal number */
	HT_END_DETACH = 3, /* agent stopped recording (library unloaded) */
};

/* END.agent_flags */
#define HT_AGENT_OUT_OF_MEMORY 0x1u /* agent ran out of its own memory: events lost */
#define HT_AGENT_STACK_TABLE_FULL 0x2u /* new stacks were recorded as id 0 */
#define HT_AGENT_EXIT_CODE_UNKNOWN 0x4u /* status is not the real exit code */
#define HT_AGENT_SUMMARY_PEAK_ORDER 0x10u /* summary mode with several threads:
					     the peak follows the order the
					     writer got their events in */
#define HT_AGENT_HANDLER_EVENTS_LOST 0x8u /* a signal handler's allocations or
					      frees, made while the agent was
					      busy, did not fit aside */
#define HT_AGENT_NAME_TABLE_FULL 0x20u /* names past the table's room were not
					   kept: their tags, phases and handle
					   events are left out; pools and
					   snapshots are named "(names full)" */
#define HT_AGENT_SIZE_REFUSED 0x40u /* heaptrail_alloc, _realloc or _pool_alloc
					of a size above PTRDIFF_MAX: not
					recorded */
#define HT_AGENT_LIVE_TABLE_FULL 0x80u /* the agent's table of live blocks could
					  not grow: leak classes (summary mode:
					  the rows) are partial; the events
					  are complete */
#define HT_AGENT_FREES_FORGOTTEN 0x100u /* the agent forgot old frees to bound
					   its memory, and an allocation came
					   late from another thread: its block
					   may have been freed, yet counts live
					   in summary mode and the leak check */
#define HT_AGENT_SUMMARY_MAPS_FULL 0x400u /* summary mode kept its first
					     MAPS_MAX map events only: the
					     mapped memory figures are partial */
#define HT_AGENT_MALLOC_ELSEWHERE 0x200u /* the program's malloc is not the
					    agent's: an object found before it
					    in the lookup order (a library
					    preloaded ahead of the agent, an
					    executable with its own) defines
					    malloc, and the program's calls go
					    there unrecorded */

/* ---- events inside a thread block -----------------------------------------
 * Each event starts with one byte: low nibble = event (HT_EV_*), high nibble
 * = allocation function (HT_FN_*, for ALLOC/REALLOC), deallocating function
 * (HT_FREE_*, for FREE, format 1.12; 0 before), 0 otherwise.
 *
 * ALLOC   varint dtime, svarint daddr, varint size, varint stack_id
 * FREE    varint dtime, svarint daddr
 * REALLOC varint dtime, svarint daddr (new block), varint size,
 *         varint stack_id, svarint old_addr - new_addr, varint lead.
 *         Means: free(old) at time (t - lead), then alloc(new) at time t
 *         (memcheck's convention: one free plus one allocation). The free
 *         part is stamped before the real realloc runs and the allocation
 *         after it returns, like FREE and ALLOC, so the merge by time stays
 *         right when another thread reuses the old address. t - lead is
 *         never earlier than the thread's previous event.
 * STACK   varint stack_id, varint depth, depth x svarint ip delta
 *         (first from 0, each next from the previous ip). Frames are return
 *         addresses, leaf (the allocation's caller) first. Defines the id for
 *         the whole trace; a stack is defined once, in the block of the thread
 *         that first used it, not necessarily before other threads use it.
 * RSS     varint dtime, varint rss_bytes (resident set, sampled on flushes).
 * ENTER   varint dtime, svarint dfn (function address minus the previous
 *         ENTER's function address in this block, the first from 0),
 *         svarint call_site - fn. A function compiled with
 *         -finstrument-functions was entered (option functions=1).
 * EXIT    varint dtime. The innermost function entered (and not yet
 *         exited) on this thread returned. An EXIT with no open ENTER is
 *         ignored (recording was switched on inside the function).
 * ENABLE  varint dtime, varint on (1/0): recording switched on or off from
 *         the program (heaptrail.h); while off, ALLOC, REALLOC and ENTER
 *         are not written (FREE and EXIT still are, for blocks and calls
 *         that began while on).
 * NAME    varint name_id, string name. Defines a tag or phase name for the
 *         whole trace (like STACK: once, in the block of the thread that
 *         first used it; other threads may use the id earlier in the file).
 * TAG     varint dtime, svarint daddr (same address chain as ALLOC),
 *         varint name_id. The live block at addr has type/tag name_id
 *         (heaptrail_tag); a later TAG of the same block replaces it.
 * PHASE   varint dtime, varint name_id, varint begin (1) or end (0): this
 *         thread entered or left the named phase (heaptrail_phase_begin/
 *         end). Phases nest per thread; an end closes the innermost open
 *         phase of that name.
 * POOL    varint dtime, varint pool_id, varint op (HT_POOL_*), varint
 *         name_id (CREATE only; 0 = unnamed). A pool of the program's own
 *         allocator (heaptrail_pool_*): RESET and DESTROY free, at this
 *         time, every block of the pool still live (each one free).
 * PALLOC  like ALLOC (dtime, daddr, size, stack_id), then varint pool_id:
 *         an allocation from that pool (function HT_FN_CUSTOM).
 * SNAPSHOT varint dtime, varint name_id (0 = taken on the snapshot signal;
 *         heaptrail_snapshot(NULL) names the empty string): the program
 *         asked for a snapshot of its live blocks here (heaptrail_snapshot);
 *         the reader computes it.
 * EXT     varint dtime, varint len, payload[len]; the high nibble of the
 *         op byte is the kind (HT_EXT_*). A reader skips kinds it does not
 *         know by len (format 1.4). Payloads:
 *         FD_OPEN        varint fd, varint stack_id, varint call (HT_FDCALL_*)
 *         FD_CLOSE       varint fd
 *         HANDLE_ACQUIRE varint kind_name_id, varint handle, varint stack_id
 *         HANDLE_RELEASE varint kind_name_id, varint handle
 *         LEAK_CHECK     varint check_id: an on-demand leak check ran here;
 *                        its classes are in the LEAKS records of that id.
 *         BAD_FREE       varint addr, varint stack_id, varint free_fn
 *                        (HT_FREE_*; format 1.12): the allocator aborted
 *                        the program inside the free of addr (recorded as
 *                        a FREE just before): a double or invalid free;
 *                        free_fn 3: inside a realloc of addr (its FREE
 *                        half written by the abort's handler, just before);
 *                        stack_id is the free's call stack.
 *         FREE_STACK     varint stack_id (format 1.12, option free_stacks=1):
 *                        the call stack of the thread's FREE just before.
 *         MMAP           varint addr, varint len, varint stack_id, varint
 *                        kind (HT_MAP_*; format 1.12): the program mapped
 *                        [addr, addr+len) (after the call succeeded). Maps
 *                        made inside libc (malloc's arenas and big blocks,
 *                        thread stacks, ld.so's) do not pass through the
 *                        hook and are not recorded.
 *         MUNMAP         varint addr, varint len: unmapped (before the call)
 *         MREMAP         varint old_addr, varint old_len, varint new_addr,
 *                        varint new_len, varint stack_id: moved or resized
 *         MADVISE_FREE   varint addr, varint len: madvise DONTNEED or FREE
 *                        gave the pages back (the mapping stays)
 * Stack id 0 means "unknown stack" (never defined).
 *
 * Allocation numbers (leak reports, the agent's break option): the n-th
 * ALLOC, REALLOC or PALLOC event of a thread is its allocation n, counted
 * from 1. Threads are numbered 1 for the main thread (tid == pid), then 2,
 * 3, ... in the order of their first event; a block is named "n" on thread
 * 1 and "T.n" on thread T. A deterministic single-threaded program gets the
 * same numbers run to run.
 */
enum ht_event {
	HT_EV_ALLOC = 0x1,
	HT_EV_FREE = 0x2,
	HT_EV_REALLOC = 0x3,
	HT_EV_STACK = 0x4,
	HT_EV_RSS = 0x5,
	HT_EV_ENTER = 0x6,
	HT_EV_EXIT = 0x7,
	HT_EV_ENABLE = 0x8,
	HT_EV_NAME = 0x9,
	HT_EV_TAG = 0xa,
	HT_EV_PHASE = 0xb,
	HT_EV_POOL = 0xc,
	HT_EV_PALLOC = 0xd,
	HT_EV_SNAPSHOT = 0xe,
	HT_EV_EXT = 0xf,
};

/* EXT kinds (high nibble of an EXT event's op byte). */
enum ht_ext_kind {
	HT_EXT_FD_OPEN = 0,
	HT_EXT_FD_CLOSE = 1,
	HT_EXT_HANDLE_ACQUIRE = 2,
	HT_EXT_HANDLE_RELEASE = 3,
	HT_EXT_LEAK_CHECK = 4,
	HT_EXT_BAD_FREE = 5,
	HT_EXT_FREE_STACK = 6,
	HT_EXT_MMAP = 7,
	HT_EXT_MUNMAP = 8,
	HT_EXT_MREMAP = 9,
	HT_EXT_MADVISE_FREE = 10,
};

/* MMAP.kind */
enum ht_map_kind {
	HT_MAP_ANON = 0,   /* private anonymous memory */
	HT_MAP_SHARED = 1, /* shared anonymous memory */
	HT_MAP_FILE = 2,   /* a file */
	HT_MAP_BRK = 3,	   /* the program's own brk or sbrk growth (format 1.12);
			    * a shrink is a MUNMAP of the bytes given back */
};

/* Which function freed a block (high nibble of FREE, format 1.12). The
 * free half of a REALLOC is realloc's. */
enum ht_free_fn {
	HT_FREE_FREE = 0,	  /* free, cfree, __libc_free, heaptrail_free */
	HT_FREE_DELETE = 1,	  /* operator delete, every form */
	HT_FREE_DELETE_ARRAY = 2, /* operator delete[], every form */
	HT_FREE_REALLOC_ABORT = 3, /* BAD_FREE only: inside realloc (format 1.12) */
};

/* FD_OPEN.call: which function created the descriptor. */
enum ht_fd_call {
	HT_FDCALL_OPEN = 0, /* open, open64, openat, openat64, creat, creat64 */
	HT_FDCALL_SOCKET = 1, /* socket, socketpair */
	HT_FDCALL_ACCEPT = 2, /* accept, accept4 */
	HT_FDCALL_PIPE = 3, /* pipe, pipe2 */
	HT_FDCALL_DUP = 4, /* dup, dup2, dup3, fcntl F_DUPFD* */
	HT_FDCALL_FOPEN = 5, /* fopen, fopen64, freopen, fdopen */
	HT_FDCALL_OTHER = 6,
};

/* POOL.op */
enum ht_pool_op {
	HT_POOL_CREATE = 0,
	HT_POOL_RESET = 1,   /* every block freed, the pool stays */
	HT_POOL_DESTROY = 2, /* every block freed, the pool is gone */
};

/* Which function made an allocation (high nibble of ALLOC/REALLOC). */
enum ht_alloc_fn {
	HT_FN_MALLOC = 0,
	HT_FN_CALLOC = 1,
	HT_FN_REALLOC = 2,
	HT_FN_REALLOCARRAY = 3,
	HT_FN_POSIX_MEMALIGN = 4,
	HT_FN_ALIGNED_ALLOC = 5,
	HT_FN_MEMALIGN = 6,
	HT_FN_VALLOC = 7,
	HT_FN_PVALLOC = 8,
	HT_FN_NEW = 9,
	HT_FN_NEW_ARRAY = 10,
	HT_FN_CUSTOM = 11, /* the program's own allocator, via heaptrail.h */
	HT_FN_COUNT
};

/* Limits a reader may rely on (the writer never exceeds them). */
#define HT_MAX_DEPTH 1024	 /* frames per stack */
#define HT_MAX_RECORD (1u << 24) /* bytes of one record payload */
#define HT_MAX_STRING (1u << 16) /* bytes of one string */

/* ---- varints: shared by writer and reader ---------------------------------
 * ht_varint_put writes at most 10 bytes and returns the count.
 * ht_varint_get returns bytes consumed, or 0 if the input is truncated or the
 * value overflows 64 bits. */
#define HT_VARINT_MAX 10

static inline size_t ht_varint_put(uint8_t *out, uint64_t v)
{
	size_t n = 0;
	while (v >= 0x80) {
		out[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	out[n++] = (uint8_t)v;
	return n;
}

static inline size_t ht_varint_get(const uint8_t *in, size_t avail, uint64_t *v)
{
	uint64_t r = 0;
	for (size_t i = 0; i < avail && i < HT_VARINT_MAX; i++) {
		uint64_t b = in[i];
		if (i == 9 && b > 1)
			return 0; /* more than 64 bits */
		r |= (b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			*v = r;
			return i + 1;
		}
	}
	return 0;
}

static inline uint64_t ht_zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t ht_unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

#endif /* HEAPTRAIL_TRACE_FORMAT_H */
