/* names.c - tag and phase names, interned once per trace.
 *
 * A program names things with string literals (heaptrail_tag(p, "node")),
 * often on every allocation, so the common case must be cheap: each thread
 * remembers, per slot hashed from the string's address, the pointer it saw
 * and the id it got, and checks the text against the interned copy (a
 * program may reuse a buffer for another name). A miss takes names_lock and
 * looks the text up in a global table; a new name gets the next id, a copy
 * in an mmap arena, and a NAME event in the calling thread's buffer (like
 * STACK: other threads may use the id before that block reaches the file).
 *
 * The table holds HT_NAMES_MAX names, the memory a program that names each
 * request anew may take. A new name after that is not kept (id 0: its tag,
 * phase or handle event is left out, consistently for that name, as the
 * name is never found), and the END record's agent flags say so. A pool or
 * a snapshot named then keeps its event under one extra name, NAMES_FULL:
 * a snapshot with id 0 would read as the snapshot signal's.
 */
#include <errno.h>
#include <string.h>

#include "agent.h"

#define HT_NAME_MAX 255
#define HT_NAME_TABLE 65536 /* slots; the table holds up to half that many */
#define HT_NAMES_MAX (HT_NAME_TABLE / 2 - 2) /* and NAMES_FULL: ids 1..HT_NAMES_MAX + 1 */

static const char NAMES_FULL[] = "(names full)";

typedef struct name_entry {
	uint64_t hash;
	const char *text;
	uint32_t id;
} name_entry_t;

static name_entry_t *table; /* HT_NAME_TABLE slots, mmap'd on first use */
static uint32_t next_id = 1;
static ht_lock_t names_lock;
static char *arena_pos, *arena_end;

static uint64_t hash_text(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return h | 1;
}

static const char *copy_text(const char *s, size_t n)
{
	if (!arena_pos || (size_t)(arena_end - arena_pos) < n + 1) {
		arena_pos = ht_mmap(64 * 1024);
		if (!arena_pos)
			return NULL;
		arena_end = arena_pos + 64 * 1024;
	}
	char *c = arena_pos;
	memcpy(c, s, n);
	c[n] = 0;
	arena_pos += n + 1;
	return c;
}

/* Writes NAME id text into t's buffer. */
static void define(ht_thread_t *t, uint32_t id, const char *text, size_t n)
{
	ht_thread_reserve(t, 1 + 3 * HT_VARINT_MAX + n);
	uint8_t *b = t->buf + t->len;
	size_t k = 0;
	b[k++] = HT_EV_NAME;
	k += ht_varint_put(b + k, id);
	k += ht_varint_put(b + k, n);
	memcpy(b + k, text, n);
	t->len += (uint32_t)(k + n);
}

/* last: the name may take the one id past HT_NAMES_MAX (NAMES_FULL's). */
HT_NOINLINE static uint32_t intern_slow(ht_thread_t *t, const char *name,
					struct ht_name_slot *slot, bool last)
{
	size_t n = 0;
	while (n < HT_NAME_MAX && name[n])
		n++;
	uint64_t h = hash_text(name, n);
	uint32_t id = 0;
	const char *text = NULL;
	bool fresh = false;
	ht_lock(&names_lock);
	if (!table)
		table = ht_mmap(HT_NAME_TABLE * sizeof *table);
	if (table) {
		for (uint64_t i = h;; i++) {
			name_entry_t *e = &table[i & (HT_NAME_TABLE - 1)];
			if (!e->hash) {
				if (next_id > HT_NAMES_MAX + (uint32_t)last) {
					atomic_fetch_or(&ht_agent_flags, HT_AGENT_NAME_TABLE_FULL);
					break; /* full: the name is dropped (id 0) */
				}
				if (!(text = copy_text(name, n))) {
					atomic_fetch_or(&ht_agent_flags, HT_AGENT_OUT_OF_MEMORY);
					break;
				}
				e->hash = h;
				e->text = text;
				e->id = id = next_id++;
				fresh = true;
				break;
			}
			if (e->hash == h && !strncmp(e->text, name, n) && !e->text[n]) {
				id = e->id;
				text = e->text;
				break;
			}
		}
	}
	ht_unlock(&names_lock);
	if (fresh)
		define(t, id, text, n);
	if (id) {
		slot->ptr = name;
		slot->copy = text;
		slot->id = id;
	}
	return id;
}

uint32_t ht_name_intern(ht_thread_t *t, const char *name)
{
	struct ht_name_slot *slot = &t->name_cache[((uintptr_t)name >> 3) & 31];
	if (slot->ptr == name && !strncmp(slot->copy, name, HT_NAME_MAX + 1))
		return slot->id;
	return intern_slow(t, name, slot, false);
}

/* The id of name, or NAMES_FULL's when the table has no room for it. */
static uint32_t intern_or_full(ht_thread_t *t, const char *name)
{
	uint32_t id = ht_name_intern(t, name);
	if (!id) {
		struct ht_name_slot *slot = &t->name_cache[((uintptr_t)NAMES_FULL >> 3) & 31];
		id = slot->ptr == NAMES_FULL ? slot->id : intern_slow(t, NAMES_FULL, slot, true);
	}
	return id;
}

void ht_names_fork_child(ht_thread_t *self)
{
	/* The child's trace must define its names again. */
	ht_lock_reset(&names_lock);
	if (table)
		memset(table, 0, HT_NAME_TABLE * sizeof *table);
	next_id = 1;
	if (self)
		memset(self->name_cache, 0, sizeof self->name_cache);
}

/* ---- heaptrail_tag and heaptrail_phase_begin/end (heaptrail.h) ------------ */


/* Common entry: the thread to write to, guard taken; NULL to do nothing. */
static ht_thread_t *api_enter(void)
{
	if (ht_guard || atomic_load_explicit(&ht_state, memory_order_relaxed) != HT_STATE_RECORDING)
		return NULL;
	ht_guard = 1;
	ht_thread_t *t = ht_thread_get();
	if (!t || !ht_event_begin(t)) {
		ht_guard = 0;
		ht_transient_end();
		return NULL;
	}
	return t;
}

static void api_leave(ht_thread_t *t)
{
	atomic_store_explicit(&t->in_event, 0, memory_order_relaxed);
	ht_guard = 0;
	ht_transient_end();
}

HT_EXPORT int heaptrail_agent_tag(const void *p, const char *name);
int heaptrail_agent_tag(const void *p, const char *name)
{
	if (!p || !name || !atomic_load_explicit(&ht_recording_on, memory_order_relaxed))
		return 0;
	/* sampled run: a block that was not recorded has no type to record */
	if (ht_opt_sample_rate && !ht_guard && !ht_sampled_has(p))
		return 0;
	ht_thread_t *t = api_enter();
	if (!t)
		return 0;
	uint32_t id = ht_name_intern(t, name);
	if (id) {
		ht_thread_reserve(t, HT_MARKER_MAX(2)); /* before last_addr is read */
		uint64_t fields[2] = {ht_zigzag((int64_t)((uintptr_t)p - t->last_addr)), id};
		ht_put_marker(t, HT_EV_TAG, fields, 2);
		t->last_addr = (uintptr_t)p;
	}
	api_leave(t);
	return 0;
}

HT_EXPORT int heaptrail_agent_phase(const char *name, int begin);
int heaptrail_agent_phase(const char *name, int begin)
{
	if (!name)
		return 0;
	ht_thread_t *t = api_enter();
	if (!t)
		return 0;
	uint32_t id = ht_name_intern(t, name);
	if (id) {
		uint64_t fields[2] = {id, begin ? 1 : 0};
		ht_put_marker(t, HT_EV_PHASE, fields, 2);
	}
	api_leave(t);
	return 0;
}

HT_EXPORT int heaptrail_agent_pool(const void *pool, int op, const char *name);
int heaptrail_agent_pool(const void *pool, int op, const char *name)
{
	if (!pool || op < HT_POOL_CREATE || op > HT_POOL_DESTROY)
		return 0;
	ht_thread_t *t = api_enter();
	if (!t)
		return 0;
	uint32_t id = op == HT_POOL_CREATE && name ? intern_or_full(t, name) : 0;
	uint64_t fields[3] = {(uintptr_t)pool, (unsigned)op, id};
	ht_put_marker(t, HT_EV_POOL, fields, 3);
	api_leave(t);
	return 0;
}

/* Writes SNAPSHOT name_id into t's buffer (guard held by the caller). */
static void write_snapshot(ht_thread_t *t, uint32_t id)
{
	uint64_t field = id;
	ht_put_marker(t, HT_EV_SNAPSHOT, &field, 1);
}

HT_EXPORT int heaptrail_agent_snapshot(const char *name);
int heaptrail_agent_snapshot(const char *name)
{
	ht_thread_t *t = api_enter();
	if (!t)
		return 0;
	/* name id 0 is the snapshot signal's: a snapshot without a name from
	 * code gets the empty name */
	uint32_t id = intern_or_full(t, name ? name : "");
	if (id)
		write_snapshot(t, id); /* 0: out of memory, flagged */
	api_leave(t);
	return 0;
}

/* The snapshot signal (option snapshot_signal=N). Async-signal-safe: it
 * only appends to this thread's buffer, and does nothing when the signal
 * interrupted the agent itself (guard set) or the thread has no state yet
 * (creating one is not async-signal-safe). */
void ht_snapshot_signal_handler(int sig)
{
	(void)sig;
	if (ht_guard || atomic_load_explicit(&ht_state, memory_order_relaxed) != HT_STATE_RECORDING)
		return;
	ht_thread_t *t = ht_thread_peek();
	if (!t)
		return;
	int saved = errno;
	ht_guard = 1;
	if (ht_event_begin(t)) {
		write_snapshot(t, 0);
		atomic_store_explicit(&t->in_event, 0, memory_order_relaxed);
	}
	ht_guard = 0;
	errno = saved;
}
