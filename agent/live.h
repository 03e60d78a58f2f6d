/* live.h - the live-block table the agent keeps (agent/live.c) and the
 * leak check that scans for what points to its blocks (agent/leakcheck.c).
 * Everything here runs with ht_live_lock held. */
#ifndef HEAPTRAIL_LIVE_H
#define HEAPTRAIL_LIVE_H

#include "agent.h"

/* Guards the table. Taken after ht_writer_lock when both are held, and
 * before the flusher's queue lock: the digester (agent/flusher.c) holds it
 * alone while it digests a block, so a holder of ht_writer_lock that reads
 * the table (the leak check, the END record) takes it too. */
extern ht_lock_t ht_live_lock;

/* A live block as the leak check reads it: 16 bytes, the size the
 * table's slots have, so that the check at exit can lay the blocks out in
 * the table's own memory (ht_live_take). info: the size (39 bits, larger
 * ones cut to it), the custom bit (a block of the program's own allocator,
 * heaptrail.h) and, in summary mode, the block's row in the site table. */
typedef struct {
	uintptr_t addr;
	uint64_t info;
} ht_scan_block_t;
#define HT_SCAN_SIZE_MASK ((1ull << 39) - 1)
#define HT_SCAN_CUSTOM (1ull << 39)
#define HT_SCAN_SITE_SHIFT 40

/* Totals of the table, in the order blocks were digested (exact for one
 * thread; with several, the peak may be off by what was in flight). */
typedef struct {
	uint64_t bytes, blocks, peak_bytes;
	uint64_t pool_frees; /* blocks freed by pool resets and destroys */
} ht_live_stats_t;
extern ht_live_stats_t ht_live_stats;

/* Summary mode: leak class kind (HT_LEAK_*) of a live block of site,
 * counted into the site's row by the leak check. */
void ht_summary_leak(uint32_t site, unsigned kind, uint64_t size);
/* Summary mode: writes the STACK definitions and the SITES record. */
void ht_summary_write(void);

/* Ships the events of t (the calling thread's state, or NULL) and takes
 * ht_writer_lock with every shipped block digested: the table is up to
 * date for this thread (read it under ht_live_lock: the digester goes on
 * with other threads' blocks). The caller holds the guard and unlocks.
 * False, lock not taken, after waiting 10 s for it. */
bool ht_live_sync(ht_thread_t *t);

/* Applies the allocations and frees of one shipped block of events. */
void ht_live_digest(const ht_block_t *b);
/* Copies the live blocks, in the table's order, into out (room for cap);
 * returns how many. */
size_t ht_live_copy(ht_scan_block_t *out, size_t cap);
/* The check at exit: the live blocks laid out in the table's own memory
 * (*bytes of ht_mmap, the caller's to unmap), *n of them. The table is
 * gone: later events are not digested (the process ends; the counts stay
 * for the END record). NULL when there is no table. */
ht_scan_block_t *ht_live_take(size_t *n, size_t *bytes);
size_t ht_live_count(void); /* live blocks */

/* The figures heaptrail run prints, as the reader's replay of the trace
 * would compute them (analysis/model.c): allocations, frees and bytes of the
 * recorded events, peak heap, blocks and bytes live at the end, temporary
 * allocations. False when the digest cannot promise equality: more than one
 * thread made heap events (blocks arrive out of time order), pool or custom
 * blocks, a table inherited from the parent (fork), or the table not kept. */
typedef struct {
	uint64_t allocs, frees, bytes, peak_bytes, live_bytes, live_blocks, temporary;
} ht_live_summary_t;
bool ht_live_summary(ht_live_summary_t *out);
/* In a fork child: the inherited table is the parent's history. */
void ht_live_fork_child(void);

/* Classifies every live block by reachability and writes LEAKS records
 * (reason HT_LEAK_AT_*, check_id). sp: the lowest live address of the
 * calling thread's stack. Caller holds the writer lock, all threads'
 * events digested. */
void ht_leak_check(unsigned reason, uint64_t check_id, uintptr_t sp);

#endif /* HEAPTRAIL_LIVE_H */
