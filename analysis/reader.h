/* reader.h - load a heaptrail trace (common/trace_format.h) into memory and
 * iterate its events merged by time.
 *
 * Loading decompresses the body, parses every record and validates every
 * thread-block event once, collecting modules, stacks, threads and the
 * position of each block. Events are not copied: ht_merge_* decodes them
 * again from the validated body, merging the threads' blocks by time, so a
 * 10M-event trace costs its decompressed size, not 10M structs.
 *
 * The reader never trusts its input. On truncation or corruption it stops at
 * the first bad byte, records why and where (t->error, t->message), and keeps
 * everything parsed before it usable.
 */
#ifndef HEAPTRAIL_READER_H
#define HEAPTRAIL_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/symbolize.h" /* ht_segment_t */

typedef struct ht_module {
	uint64_t id;
	uint64_t load_time;   /* ns since process start */
	uint64_t unload_time; /* UINT64_MAX while still loaded at the end */
	uint64_t bias;
	char *path;	      /* never NULL; may be "" */
	uint8_t *build_id;    /* raw bytes, may be NULL */
	size_t build_id_len;
	ht_segment_t *segs;
	size_t nsegs;
} ht_module_t;

typedef struct ht_stack {
	uint64_t id;
	uint32_t depth;
	size_t first; /* index of the leaf frame in ht_trace_t.ips */
} ht_stack_t;

/* A tag or phase name (NAME event): defined for the whole trace, possibly
 * after the first TAG or PHASE that uses its id. */
typedef struct ht_name {
	uint64_t id;
	char *text; /* never NULL; may be "" */
} ht_name_t;

typedef struct ht_thread {
	uint64_t tid;
	char *name;	       /* NULL when the trace did not name it */
	uint32_t first_block;  /* UINT32_MAX when it has no events */
	uint32_t last_block;
	uint64_t nevents;      /* heap events: ALLOC, FREE, REALLOC, RSS */
	uint64_t nfn_events;   /* ENTER, EXIT, ENABLE (functions=1, start=off) */
	uint64_t nmark_events; /* TAG, PHASE (heaptrail.h) */
	uint64_t npool_events; /* POOL, SNAPSHOT (heaptrail.h); PALLOC is in nevents */
} ht_thread_t;

/* One thread block: its events span data[off, end) (validated); data is
 * the trace's body, or for a packed block the events joined from it, or
 * NULL for a packed block the merge joins again when it gets there (the
 * reader keeps only those a merge would need long before their place in
 * the file: reader.c, "replayed blocks"). */
typedef struct ht_block {
	const uint8_t *data;
	size_t off, end;
	uint64_t base_time;
	uint64_t first_time; /* its first heap or marker event's, else base_time */
	uint64_t low_time;   /* no event of it is earlier (a REALLOC's free half
			      * included): the merge joins it no sooner */
	uint64_t pk_seq;     /* packed blocks: how many were joined before it */
	uint32_t thread;
	uint32_t next; /* next block of the same thread, or UINT32_MAX */
} ht_block_t;

/* How the traced process ended. */
typedef enum ht_ending {
	HT_ENDING_EXIT,		  /* END: exit() or return from main */
	HT_ENDING_UNDERSCORE_EXIT, /* END: _exit */
	HT_ENDING_SIGNAL,	  /* END: killed by a signal */
	HT_ENDING_DETACH,	  /* END: agent stopped recording */
	HT_ENDING_EXEC,		  /* last record is EXEC: the image was replaced */
	HT_ENDING_CUT_SHORT,	  /* no END record: killed (SIGKILL) or cut */
} ht_ending_t;

/* One row of a summary-mode trace (SITES record, agent option summary=1). */
typedef struct ht_summary_row {
	bool overflow; /* the sites that did not fit in the agent's table */
	uint64_t stack_id;
	uint64_t allocations, bytes_allocated, frees;
	uint64_t live_blocks, live_bytes; /* at the end */
	uint64_t bytes_at_peak, max_live_bytes, largest;
	uint64_t kind_blocks[4], kind_bytes[4]; /* HT_LEAK_DEFINITE.. - 1 */
	uint64_t first_time; /* its first allocation's (SITE_TIMES), or 0 */
} ht_summary_row_t;
/* The classes one leak check gave the live blocks (LEAKS records, format
 * 1.4), sorted by address. */
typedef struct ht_leak_entry {
	uint64_t addr;
	uint64_t kind; /* HT_LEAK_*, as written (unknown kinds: unclassified) */
} ht_leak_entry_t;

typedef struct ht_leak_check {
	uint64_t check_id; /* 0: the check at exit; 1, 2, ...: LEAK_CHECK events */
	uint64_t time, reason;
	bool complete;	   /* its last record was read */
	ht_leak_entry_t *e;
	size_t n, cap;
} ht_leak_check_t;

typedef struct ht_trace {
	/* file header */
	unsigned major, minor;
	uint32_t file_flags;

	/* PROCESS record */
	bool have_process;
	char *writer_version;
	uint64_t pid, ppid, start_realtime_ns, start_mono_ns, page_size;
	uint64_t proc_flags, max_depth;
	uint64_t sample_rate; /* mean bytes between samples; 0: every allocation */
	char *exe_path;
	char **argv;
	size_t argc;

	/* END / EXEC records */
	ht_ending_t ending;
	uint64_t end_time, end_status, end_peak_rss, agent_flags;
	uint64_t end_how_raw; /* END.how as written (may be unknown) */
	bool have_end_counts; /* END carried the agent's own counts: */
	uint64_t end_allocs, end_frees, end_bytes; /* memcheck's convention */
	char *exec_path;      /* EXEC target, when the trace ends with one */
	uint64_t exec_time;

	/* everything the body defined */
	ht_module_t *modules;
	size_t nmodules, cap_modules;
	ht_stack_t *stacks;
	size_t nstacks, cap_stacks;
	uint64_t *ips; /* frames of all stacks, leaf first per stack */
	size_t nips, cap_ips;
	ht_thread_t *threads;
	size_t nthreads, cap_threads;
	ht_block_t *blocks;
	size_t nblocks, cap_blocks;
	ht_name_t *names; /* NAME definitions, in file order (first one per id wins) */
	size_t nnames, cap_names;

	/* summary mode (PROCESS flag HT_PROC_SUMMARY): SITES records */
	bool have_summary;
	uint64_t summary_peak_bytes, summary_peak_time;
	uint64_t summary_live_blocks, summary_live_bytes;
	ht_summary_row_t *summary_rows;
	size_t nsummary_rows, cap_summary_rows;
	bool summary_after_exec; /* SITES written before an exec that failed:
				    the next SITES (at the end) replace them */

	uint64_t nevents;     /* ALLOC/FREE/REALLOC/RSS events parsed */
	uint64_t nfn_events;  /* ENTER/EXIT/ENABLE events parsed (not in nevents) */
	uint64_t nmark_events; /* TAG/PHASE events parsed (in neither count) */
	uint64_t npool_events; /* POOL events parsed (in no other count); PALLOC
				* counts in nevents, as the ALLOC it becomes */
	uint64_t nsnapshot_events; /* SNAPSHOT events parsed (in no other count) */
	uint64_t next_events; /* EXT events parsed, known kinds or not (in no other count) */
	ht_leak_check_t *leak_checks; /* LEAKS records, one entry per check id */
	size_t nleak_checks, cap_leak_checks;
	uint64_t last_time;   /* latest time stamp seen anywhere */
	uint64_t max_rss;     /* largest RSS event */
	uint64_t skipped_records; /* unknown tags, skipped by length */

	/* decompressed body */
	uint8_t *body;
	size_t body_len;

	/* damage: error is 0, or negative (-HT_ETRUNC, -HT_ECORRUPT, ...) */
	int error;
	uint64_t error_offset;	  /* decompressed body offset of the bad byte */
	int64_t error_file_offset; /* file offset, -1 when unknown */
	bool error_file_offset_approx; /* compressed: nearest known input position */
	char message[512];	  /* human readable, names the offsets */
	/* a zstd frame whose checksum fails: a byte changed after the agent
	 * wrote it; the body is kept, the figures from there on may be wrong */
	bool checksum_bad;
	uint64_t checksum_file_offset; /* where that frame starts in the file */
	uint64_t checksum_body_offset; /* and in the decompressed body */

	/* internal lookup tables */
	void *priv;
} ht_trace_t;

typedef struct ht_reader_opts {
	size_t max_body; /* refuse to decompress past this many bytes; 0 = no limit */
} ht_reader_opts_t;

/* Load a trace from memory or from a file. opts may be NULL.
 * Returns 0 when *out is usable (check (*out)->error for a partial trace:
 * the message then says what was lost), or a negative code when nothing is
 * usable; *out then still holds the message unless it is NULL (-ENOMEM, or
 * the file could not be read: see errno). The caller frees *out. */
int ht_reader_load_mem(const uint8_t *data, size_t len, const ht_reader_opts_t *opts,
		       ht_trace_t **out);
int ht_reader_load_file(const char *path, const ht_reader_opts_t *opts, ht_trace_t **out);
void ht_trace_free(ht_trace_t *t);

/* Following a trace as it grows (heaptrail top): ht_reader_follow opens
 * path and reads nothing yet; each ht_reader_follow_poll reads what was
 * appended since (up to 2 MiB of the file: poll again while *grew),
 * decompresses it and parses the records that are whole,
 * adding to *t as a load would (modules, stacks, threads, blocks, the
 * END). A record not whole yet waits for the next poll. Events are read
 * once, by one merge made with HT_MERGE_FOLLOW, which frees each block's
 * events once past them. *grew says whether the file grew. Damage stops
 * the parse as a load's does (t->error, t->message); a poll returns
 * 0, -ENOMEM, or -errno when the file cannot be read. */
int ht_reader_follow(const char *path, ht_trace_t **out);
int ht_reader_follow_poll(ht_trace_t *t, bool *grew);
/* Bytes of a record not whole yet are waiting (a trace cut there). */
bool ht_reader_follow_pending(const ht_trace_t *t);
/* Bytes of the file read so far. */
uint64_t ht_reader_follow_offset(const ht_trace_t *t);

/* Stack by id, or NULL when the trace never defined it (id 0 never is). */
const ht_stack_t *ht_trace_stack(const ht_trace_t *t, uint64_t id);

/* Text of a tag or phase name by id, or NULL when the trace never defined
 * it (a damaged trace may lose the NAME event; callers show the id). */
const char *ht_trace_name(const ht_trace_t *t, uint64_t id);

/* The leak check of that id (LEAKS records), or NULL when the trace has
 * none (older traces, crashes). */
const ht_leak_check_t *ht_trace_leak_check(const ht_trace_t *t, uint64_t check_id);

/* The class c gave the block at addr (HT_LEAK_*), or 0 when c is NULL or
 * does not list it (or lists an unknown kind). */
unsigned ht_leak_kind_of(const ht_leak_check_t *c, uint64_t addr);

/* Index of the module holding ip: among those with a PT_LOAD segment
 * containing it, the latest loaded at or before `when` (address ranges get
 * reused after dlclose), else the earliest loaded after it. -1 if none. */
long ht_trace_module_for(const ht_trace_t *t, uint64_t ip, uint64_t when);
/* The module holding ip whenever it was loaded: its index when one module
 * alone has a PT_LOAD segment containing it (ht_trace_module_for then gives
 * it at any time), -2 when several have, -1 when none has. */
long ht_trace_module_only(const ht_trace_t *t, uint64_t ip);

/* ---- merged event iteration ------------------------------------------------ */

typedef struct ht_merged_event {
	/* HT_EV_ALLOC, HT_EV_FREE, HT_EV_REALLOC or HT_EV_RSS; with
	 * HT_MERGE_FUNCTIONS also HT_EV_ENTER, HT_EV_EXIT and HT_EV_ENABLE;
	 * with HT_MERGE_MARKS also HT_EV_TAG and HT_EV_PHASE; with
	 * HT_MERGE_POOLS also HT_EV_POOL; with HT_MERGE_SNAPSHOTS also
	 * HT_EV_SNAPSHOT; with HT_MERGE_EXT also HT_EV_EXT. A PALLOC comes out as an HT_EV_ALLOC (pooled set). */
	uint8_t type;
	uint8_t fn;	 /* HT_FN_* for ALLOC/REALLOC (HT_FN_CUSTOM for a PALLOC) */
	bool from_realloc; /* FREE: the free half of a REALLOC */
	bool pooled;	   /* ALLOC: made by a PALLOC into pool `pool`; FREE: of
			    * such a block (by its pool's RESET/DESTROY when
			    * from_pool_op, else freed on its own) */
	bool from_pool_op; /* FREE: made by a POOL RESET or DESTROY */
	uint64_t pool;	   /* pool id: ALLOC/FREE when pooled, POOL */
	uint32_t thread; /* index into ht_trace_t.threads */
	uint64_t time;
	uint64_t addr;	   /* the block (new block for REALLOC); ENTER: the function's
			    * entry address (look it up as is, not minus 1); TAG: the
			    * block tagged */
	uint64_t size;	   /* requested size; RSS bytes for HT_EV_RSS; ENABLE: 1 on, 0 off;
			    * PHASE: 1 begin, 0 end; POOL: the op (HT_POOL_*, as
			    * written: callers ignore ops they do not know) */
	uint64_t stack_id;
	uint64_t old_addr; /* REALLOC: the block that was freed; EXT MREMAP: the old map */
	uint64_t old_size; /* EXT MREMAP: the old map's length; else 0 */
	uint64_t free_time; /* REALLOC: when the old block was freed (t - lead) */
	uint64_t call_site; /* ENTER: the return address in the caller; else 0 */
	uint64_t name_id;   /* TAG, PHASE, POOL (CREATE), SNAPSHOT: the name
			     * (ht_trace_name; 0 = none, or the signal for
			     * SNAPSHOT); else 0 */
} ht_event_t;

typedef struct ht_merge ht_merge_t;

/* Iterate all events in time order: per thread in recorded order, across
 * threads by time stamp, frees before allocations on equal stamps, then file
 * order. STACK and NAME events are not returned (see ht_trace_stack and
 * ht_trace_name). A REALLOC comes out as two events:
 * a FREE of old_addr (from_realloc set) at its free time, later the REALLOC
 * itself, which then only allocates addr. Returns 0 or -ENOMEM. */
int ht_merge_new(const ht_trace_t *t, ht_merge_t **out);

/* The same with options. flags: HT_MERGE_FUNCTIONS also returns ENTER,
 * EXIT and ENABLE events (in their thread's recorded order; they sort like
 * frees on equal stamps); without it they are skipped, so the heap events
 * and their count (t->nevents) are what ht_merge_new gives. thread: an index
 * into t->threads to walk that thread alone, or UINT32_MAX for all. */
#define HT_MERGE_FUNCTIONS 0x1u
/* HT_MERGE_MARKS also returns TAG and PHASE events (heaptrail.h's tags and
 * phases), in their thread's recorded order. On equal stamps a PHASE sorts
 * like a free and a TAG after allocations (a block is tagged after it
 * exists, maybe by another thread). Without it they are skipped. */
#define HT_MERGE_MARKS 0x2u
/* Pools (POOL/PALLOC). Every merge, whatever its flags, turns a PALLOC into
 * an ALLOC (pooled) and a POOL RESET or DESTROY into one FREE per block of
 * that pool still live (from_pool_op, pooled, stamped with the POOL's time
 * and thread, in allocation order), so that every consumer of heap events
 * (the model, the exporters that keep their own live blocks) frees them
 * alike: memcheck counts each as one free. The merge remembers which live
 * blocks belong to which pool for this: a pool block freed on its own, or
 * replaced by an allocation at its address, leaves its pool. With a
 * `thread` filter only that thread's POOL events are seen.
 * HT_MERGE_POOLS also returns the POOL events themselves (CREATE, RESET,
 * DESTROY, unknown ops as written), each before the FREEs it causes; they
 * sort like frees on equal stamps. HT_MERGE_SNAPSHOTS returns SNAPSHOT
 * events, which sort after allocations on equal stamps (a snapshot sees
 * what its stamp's allocations made live). Without the flags neither is
 * returned, so a merge yields at most 2 * t->nevents events. */
#define HT_MERGE_POOLS 0x4u
#define HT_MERGE_SNAPSHOTS 0x8u
/* HT_MERGE_EXT returns EXT events (format 1.4): type HT_EV_EXT, fn the
 * kind (HT_EXT_*, unknown kinds as written). FD_OPEN: addr the fd,
 * stack_id, size the call (HT_FDCALL_*); FD_CLOSE: addr the fd;
 * HANDLE_ACQUIRE: name_id the kind's name, addr the handle, stack_id;
 * HANDLE_RELEASE: name_id, addr; LEAK_CHECK: name_id the check id;
 * BAD_FREE: addr, stack_id, size the free function (HT_FREE_*);
 * FREE_STACK: stack_id; MMAP: addr, size the length, stack_id, name_id
 * the kind (HT_MAP_*); MUNMAP and MADVISE_FREE: addr, size; MREMAP:
 * old_addr, old_size, addr, size, stack_id. Opens
 * and acquires sort like allocations on equal stamps, a LEAK_CHECK after
 * allocations (like a snapshot), the rest like frees. */
#define HT_MERGE_EXT 0x10u
/* HT_MERGE_FOLLOW merges a trace that ht_reader_follow_poll adds to: the
 * merge starts empty; each ht_merge_follow takes in the blocks and
 * threads added since and sets the time ht_merge_next stops before
 * (events later than limit wait: another thread's earlier events may
 * still be on their way). A thread read to the end of its last block
 * waits for its next one. Blocks added behind the limit come out late
 * but in their thread's order. */
#define HT_MERGE_FOLLOW 0x20u
int ht_merge_new_ex(const ht_trace_t *t, unsigned flags, uint32_t thread, ht_merge_t **out);
int ht_merge_follow(ht_merge_t *m, uint64_t limit);
/* Next event, or false at the end. */
bool ht_merge_next(ht_merge_t *m, ht_event_t *ev);
/* The progress line (analysis/progress.h) at an event of time `time` of
 * m's (ht_merge_next says it for the thread that enabled the line). */
void ht_merge_progress(const ht_merge_t *m, uint64_t time);
void ht_merge_free(ht_merge_t *m);

#endif /* HEAPTRAIL_READER_H */
