/* heaptrack.c - write a trace in heaptrack's interpreted format (file
 * version 3, plain text), so that heaptrack_print and heaptrack_gui open it.
 *
 * The format (what heaptrack_interpret writes; all numbers hex):
 *   v 10400 3              heaptrack version, file version
 *   X cmd args             the debuggee
 *   I pagesize pages       system info
 *   s LEN string           string table, 1-based, LEN = byte length (v3)
 *   i ip module [fn file line]...   instruction pointers, 1-based; the
 *                          first frame is the innermost (inlined) one
 *   t ip parent            trace nodes, 1-based; parent 0 is the root
 *   a size trace           allocation infos, 0-based
 *   + info / - info        an allocation / a free of a block of that info
 *   c ms                   time stamp; R pages: RSS
 *
 * heaptrack's analyzer has no addresses: it keeps counts per allocation
 * info and decides "temporary" by adjacency. Making its figures equal ours
 * therefore rests on how the lines are ordered and indexed. The invariants:
 *
 *  1. Every `a` line is written right before the first `+` that uses it.
 *     heaptrack_gui's size histogram appends an entry when a `+` uses the
 *     next unseen index and indexes the vector otherwise, so an index used
 *     out of order writes past its end (the 1.4 crash of issue #4).
 *  2. heaptrack counts a `-` as temporary iff the previous +/- line was a
 *     `+` of the same info index, or a `-` when the index is 0 (its
 *     "last allocation" variable is reset to 0 by every free). Ours: a block
 *     freed before its thread allocated again (analysis/model.c). So:
 *     - a temporary block is written as the pair `+ k` `- k` at its
 *       allocation, and its later free is dropped ("pulled" free);
 *     - a `+` line is held back until the next +/- line is known and then
 *       given an info index that differs from that line's (a second `a` line
 *       of the same size and trace when needed), so that no free follows an
 *       allocation of the same index by accident;
 *     - index 0 is used by the first `+` only; when its free would follow
 *       a `-`, it goes out under another index of the same size and trace;
 *       when there is none, it moves earlier, past frees and pairs, to
 *       right after the last plain `+` (the lines since are held in memory
 *       while that block lives); failing that (no such `+`, or the peak's
 *       pair in between), later, past frees only, to right after the next
 *       plain `+` whose heap stays below the peak; failing that too, to the
 *       end, under a new info index of its size and trace (an `a` line no
 *       `+` uses is harmless there: invariant 1 concerns `+` lines only).
 *  3. Heap at every `+` line is what it was at that event, except where a
 *     pulled free lowers it, which is harmless everywhere but at the event
 *     that first reached the global peak. A temporary whose lifetime spans
 *     that event (another thread allocated meanwhile) cannot be pulled to
 *     its allocation: the first such block is instead written as a pair
 *     right after the peak's `+` (the heap then reaches the peak at its
 *     `+`, with the same blocks live); any further ones stay a plain `+`
 *     ... `-`, and heaptrack counts them as not temporary; so do all of
 *     them when the peak's own block is a temporary (its pair is the one
 *     at the peak). With T threads at most one temporary per thread is in
 *     flight there: heaptrack counts up to T - 1 fewer. The peak and what
 *     each site held at it stay exact. With one thread this never
 *     happens: no allocation lies between a temporary's malloc and free.
 *  4. A block we drop because its address was allocated again without a
 *     recorded free (analysis/model.c: neither a free nor a leak) gets a `-`, so
 *     heaptrack's leaked bytes equal ours. When that is the very next
 *     event, the `-` names another index of its size and trace than the
 *     `+`; the first block of its size and trace has none, and heaptrack
 *     counts it temporary (one more than ours: only a trace that lost a
 *     free does this).
 *
 * Invariants 2 and 3 need to know at an allocation what later events
 * decide (its free, the peak): the command's first pass makes that plan
 * (analysis/heaptrack_plan.h) beside the model, and this writer is the one
 * consumer of a second pass, on whose table of live blocks it keeps each
 * block's info index.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/export.h"
#include "trace_format.h"
#include "analysis/util.h"

#define NONE UINT32_MAX

/* ---- interned strings (string table and `i` lines) ------------------------ */

typedef struct strtab {
	char **s; /* s[k] has index k + 1 */
	size_t n, cap;
	ht_map_t map; /* hash (probed on collision) -> k */
} strtab_t;

static uint64_t str_hash(const char *s)
{
	return ht_util_hash64(ht_fnv1a(s));
}

/* Index (1-based) of s in t, adding it if new (*added set). 0 on -ENOMEM. */
static uint32_t strtab_get(strtab_t *t, const char *s, bool *added)
{
	uint64_t h = str_hash(s);
	uint32_t k;
	*added = false;
	while ((k = ht_map_get(&t->map, h)) != HT_MAP_NONE) {
		if (!strcmp(t->s[k], s))
			return k + 1;
		h++;
	}
	char *copy = strdup(s);
	if (!copy || t->n >= NONE - 1 ||
	    ht_util_grow((void **)&t->s, &t->cap, t->n + 1, sizeof(*t->s)) ||
	    ht_map_put(&t->map, h, (uint32_t)t->n)) {
		free(copy);
		return 0;
	}
	t->s[t->n++] = copy;
	*added = true;
	return (uint32_t)t->n;
}

static void strtab_free(strtab_t *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->s[i]);
	free(t->s);
	ht_map_free(&t->map);
}

/* ---- blocks ------------------------------------------------------------------------
 * The live blocks are the second pass's table (analysis/pass.h); a block's
 * `tag` is its info index, NONE while its `+` is held, PULLED when its `-`
 * was written with its `+` (info indices stay below both). */

#define PULLED (UINT32_MAX - 1)

/* ---- the writer ------------------------------------------------------------------ */

typedef struct infokey {
	uint64_t size;
	uint32_t trace;
	uint32_t primary, secondary; /* info indices of this key, or NONE */
} infokey_t;

struct ht_heaptrack_writer {
	FILE *out;
	const ht_model_t *m;
	ht_symbolizer_t *sym;
	strtab_t strings, iplines;
	ht_map_t nodes;	     /* (parent << 32 | ip) -> trace index */
	uint32_t ntraces;
	ht_map_t stack_trace; /* stack id -> trace index */
	infokey_t *keys;      /* distinct (size, trace) */
	size_t nkeys, cap_keys;
	ht_map_t key_map;     /* hash(size, trace) probed -> keys index */
	uint32_t *info_key;   /* info index -> keys index */
	size_t ninfos, cap_infos;
	ht_frame_t *frames;
	size_t cap_frames;
	char *line;	      /* `i` line scratch */
	size_t cap_line;
	ht_pass_t *pass;      /* the second pass: its live blocks */
	ht_live_t *gone;      /* the block the current event freed or dropped (a copy) */
	const ht_hk_plan_t *plan;
	uint64_t ord;	      /* the event's number (heaptrack_plan.h) */
	/* the held `+` line (invariant 2) */
	bool held;
	uint64_t held_addr;
	uint32_t held_key;
	/* what heaptrack will remember as the last allocation: the index of
	 * the last `+`, or NONE after a `-` (heaptrack's 0) */
	uint32_t last_plus;
	uint64_t last_ms, pending_ms;
	uint64_t page;
	uint64_t max_rss_pages, pending_rss;
	uint32_t rescue_key;
	bool rescue_live;
	uint64_t heap;	   /* heap as heaptrack sees it after the lines so far */
	bool b0_deferred; /* the `- 0` waits (invariant 2) */
	/* while the block of info 0 is live, the lines since the last plain
	 * `+` are held in memory, so that its `- 0` can go in right after it */
	FILE *real;	  /* the output; out is real or seg */
	FILE *seg;
	char *seg_buf;
	size_t seg_len;
	bool seg_on, seg_peak, last_plain_is_b0;
	int err;
};

typedef struct ht_heaptrack_writer hk_t;

/* The word of the live block at addr: of the one the current event took
 * out of the table, if it was there; NULL when no block is there. */
static uint32_t *tag_at(hk_t *h, uint64_t addr)
{
	if (h->gone && h->gone->addr == addr)
		return &h->gone->tag;
	ht_live_t b;
	return ht_pass_find(h->pass, addr, &b) ? ht_pass_tag(h->pass, b.id) : NULL;
}

/* A string's index, writing its `s` line when new; 0 for NULL or "". */
static uint32_t str_index(hk_t *h, const char *s)
{
	if (!s || !*s)
		return 0;
	/* escaped (safe.h): one line per string, as heaptrack reads lines, and
	 * nothing heaptrack_print would pass to a terminal */
	char buf[4096];
	const char *use = ht_text_is_safe(s) ? s : ht_text_safe(buf, sizeof(buf), s);
	bool added;
	uint32_t k = strtab_get(&h->strings, use, &added);
	if (!k)
		h->err = -ENOMEM;
	else if (added)
		fprintf(h->out, "s %zx %s\n", strlen(use), use);
	return k;
}

/* Append three hex numbers to the `i` line being built. */
static int line_add(hk_t *h, size_t *len, uint64_t a, uint64_t b, uint64_t c)
{
	if (ht_util_grow((void **)&h->line, &h->cap_line, *len + 64, 1))
		return -ENOMEM;
	*len += (size_t)snprintf(h->line + *len, 64, " %" PRIx64 " %" PRIx64 " %" PRIx64, a, b, c);
	return 0;
}

/* Trace index of a stack: its `s`, `i` and `t` lines are written on first
 * use. 0 (no trace) on error, with h->err set. */
static uint32_t trace_for(hk_t *h, uint64_t stack_id, uint64_t when)
{
	uint32_t ti = ht_map_get(&h->stack_trace, stack_id);
	if (ti != HT_MAP_NONE)
		return ti;
	const ht_model_t *m = h->m;
	/* frames as the JSON report shows them: the model's site when there is
	 * one (its first allocation picks the modules), else this stack */
	ht_site_t tmp = { 0 };
	uint32_t si = ht_model_site_of(m, stack_id);
	if (si != HT_MAP_NONE) {
		tmp = m->sites[si];
	} else {
		tmp.stack_id = stack_id;
		tmp.stack = stack_id ? ht_trace_stack(m->trace, stack_id) : NULL;
		tmp.first_time = when;
	}
	long nf = ht_model_frames(m, h->sym, &tmp, &h->frames, &h->cap_frames);
	if (nf < 0) {
		h->err = (int)nf;
		return 0;
	}
	/* group the frames into return addresses: inlined frames then the
	 * real one; one `i` line each, leaf first in ips[] */
	uint32_t *ips = malloc(((size_t)nf + 1) * sizeof(*ips));
	size_t nips = 0;
	if (!ips) {
		h->err = -ENOMEM;
		return 0;
	}
	for (long f = 0; f < nf;) {
		long g = f;
		while (g < nf - 1 && h->frames[g].inlined && h->frames[g + 1].address == h->frames[f].address)
			g++;
		uint32_t mod = str_index(h, h->frames[f].module);
		if (ht_util_grow((void **)&h->line, &h->cap_line, 64, 1)) {
			h->err = -ENOMEM;
			break;
		}
		size_t len = (size_t)snprintf(h->line, 64, "i %" PRIx64 " %" PRIx32, h->frames[f].address, mod);
		for (long k = f; k <= g; k++) {
			uint32_t fn = str_index(h, h->frames[k].function);
			uint32_t file = str_index(h, h->frames[k].file);
			if (line_add(h, &len, fn, file, (uint64_t)(h->frames[k].line > 0 ? h->frames[k].line : 0))) {
				h->err = -ENOMEM;
				break;
			}
		}
		if (h->err)
			break;
		bool added;
		uint32_t ipi = strtab_get(&h->iplines, h->line, &added);
		if (!ipi) {
			h->err = -ENOMEM;
			break;
		}
		if (added)
			fprintf(h->out, "%s\n", h->line);
		ips[nips++] = ipi;
		f = g + 1;
	}
	if (!h->err && nips == 0) {
		/* no frames known: one unresolved frame, so the allocation still
		 * has a trace of its own */
		bool added;
		uint32_t ipi = strtab_get(&h->iplines, "i 0 0", &added);
		if (!ipi)
			h->err = -ENOMEM;
		else if (added)
			fputs("i 0 0\n", h->out);
		ips[nips++] = ipi;
	}
	uint32_t parent = 0;
	for (size_t k = nips; k-- > 0 && !h->err;) {
		uint64_t key = (uint64_t)parent << 32 | ips[k];
		uint32_t node = ht_map_get(&h->nodes, key);
		if (node == HT_MAP_NONE) {
			node = ++h->ntraces;
			if (ht_map_put(&h->nodes, key, node)) {
				h->err = -ENOMEM;
				break;
			}
			fprintf(h->out, "t %" PRIx32 " %" PRIx32 "\n", ips[k], parent);
		}
		parent = node;
	}
	free(ips);
	if (h->err)
		return 0;
	if (ht_map_put(&h->stack_trace, stack_id, parent))
		h->err = -ENOMEM;
	return parent;
}

/* keys index of (size, trace), adding it; NONE on -ENOMEM. */
static uint32_t key_for(hk_t *h, uint64_t size, uint32_t trace)
{
	uint64_t hh = ht_util_hash64(size ^ ht_util_hash64(trace));
	uint32_t k;
	while ((k = ht_map_get(&h->key_map, hh)) != HT_MAP_NONE) {
		if (h->keys[k].size == size && h->keys[k].trace == trace)
			return k;
		hh++;
	}
	if (h->nkeys >= NONE - 1 ||
	    ht_util_grow((void **)&h->keys, &h->cap_keys, h->nkeys + 1, sizeof(*h->keys)) ||
	    ht_map_put(&h->key_map, hh, (uint32_t)h->nkeys)) {
		h->err = -ENOMEM;
		return NONE;
	}
	h->keys[h->nkeys] = (infokey_t){ size, trace, NONE, NONE };
	return (uint32_t)h->nkeys++;
}

/* Timestamp and RSS lines wait for the next +/- line, so that they never
 * separate a held `+` from the line that decides its index. */
static void write_pending(hk_t *h)
{
	if (h->pending_ms > h->last_ms) {
		fprintf(h->out, "c %" PRIx64 "\n", h->pending_ms);
		h->last_ms = h->pending_ms;
	}
	if (h->pending_rss) {
		fprintf(h->out, "R %" PRIx64 "\n", h->pending_rss);
		h->pending_rss = 0;
	}
}

/* Move the held segment to the output and, while seg_on, start a new one. */
static void seg_restart(hk_t *h)
{
	if (h->seg) {
		if (fclose(h->seg) == 0 && h->seg_len)
			fwrite(h->seg_buf, 1, h->seg_len, h->real);
		free(h->seg_buf);
		h->seg = NULL;
		h->seg_buf = NULL;
		h->seg_len = 0;
	}
	h->out = h->real;
	h->seg_peak = false;
	if (!h->seg_on || h->err)
		return;
	h->seg = open_memstream(&h->seg_buf, &h->seg_len);
	if (!h->seg) {
		h->err = -ENOMEM;
		return;
	}
	h->out = h->seg;
}

/* Write `- idx` (the only place a `-` line is written). */
static void put_minus(hk_t *h, uint32_t idx)
{
	fprintf(h->out, "- %" PRIx32 "\n", idx);
	h->last_plus = NONE;
	h->heap -= h->keys[h->info_key[idx]].size;
}

/* Write the `a` line of a new info index for key k. NONE on -ENOMEM. */
static uint32_t new_info(hk_t *h, uint32_t k)
{
	if (h->ninfos >= NONE - 1 ||
	    ht_util_grow((void **)&h->info_key, &h->cap_infos, h->ninfos + 1, sizeof(*h->info_key))) {
		h->err = -ENOMEM;
		return NONE;
	}
	h->info_key[h->ninfos] = k;
	fprintf(h->out, "a %" PRIx64 " %" PRIx32 "\n", h->keys[k].size, h->keys[k].trace);
	return (uint32_t)h->ninfos++;
}

/* Write `+` for key k, avoiding info index `avoid` (the index of the `-`
 * that follows, or NONE). Returns the info index used. */
static uint32_t write_plus(hk_t *h, uint32_t k, uint32_t avoid)
{
	infokey_t *key = &h->keys[k];
	uint32_t idx = key->primary != avoid ? key->primary : key->secondary;
	if (idx == NONE || idx == avoid) {
		/* a new info for this key: `a` line right before its first use */
		idx = new_info(h, k);
		if (idx == NONE)
			return 0;
		/* index 0 serves one block only (invariant 2) */
		if (idx != 0) {
			if (key->primary == NONE)
				key->primary = idx;
			else if (key->secondary == NONE)
				key->secondary = idx;
		}
	}
	fprintf(h->out, "+ %" PRIx32 "\n", idx);
	h->last_plus = idx;
	h->heap += key->size;
	return idx;
}

/* Resolve and write the held `+`, knowing the next line frees `next_info`
 * (NONE: the next line is a `+`). */
static void flush_held(hk_t *h, uint32_t next_info)
{
	if (!h->held)
		return;
	h->held = false;
	uint32_t idx = write_plus(h, h->held_key, next_info);
	uint32_t *b = tag_at(h, h->held_addr);
	if (b)
		*b = idx;
	if (idx == 0 && b) {
		/* the block of info 0: hold what follows (invariant 2) */
		h->seg_on = true;
		h->last_plain_is_b0 = true;
		seg_restart(h);
	} else if (h->seg_on) {
		h->last_plain_is_b0 = false;
		seg_restart(h);
	}
	/* a deferred `- 0` goes right after this `+` if the heap there stays
	 * below the peak (then neither the peak nor any temporary changes) */
	if (h->b0_deferred && h->heap < h->m->totals.peak_heap_bytes) {
		put_minus(h, 0);
		h->b0_deferred = false;
	}
}

/* Write the `-` of a block that is not a pulled temporary. */
static void write_minus(hk_t *h, ht_live_t *b)
{
	uint32_t next = b->tag;
	if (next == NONE) {
		/* the held block itself, dropped by the next allocation at its
		 * address (invariant 4): its `+` avoids the key's first index,
		 * which its `-` then names (the guard below), so that heaptrack
		 * does not take the two lines for a temporary. A block that is
		 * its key's first has no other index to name. */
		next = h->keys[h->held_key].primary;
	}
	flush_held(h, next);
	if (b->tag == NONE) /* impossible: a held block is resolved above */
		b->tag = 0;
	uint32_t idx = b->tag;
	if (idx == 0 && h->last_plus == NONE) {
		/* heaptrack would take `- 0` after a free for a temporary: use
		 * another index of the same size and trace if one exists */
		infokey_t *key = &h->keys[h->info_key[0]];
		if (key->primary != NONE) {
			idx = key->primary;
		} else if (key->secondary != NONE) {
			idx = key->secondary;
		} else if (h->seg_on && !h->last_plain_is_b0 && !h->seg_peak) {
			/* no alias: move the free earlier, past frees and pairs
			 * (neither at the peak), to right after the last plain `+` */
			h->out = h->real;
			put_minus(h, 0);
			h->seg_on = false;
			seg_restart(h);
			return;
		} else {
			/* else later, past frees only, to just after the next
			 * plain `+` (flush_held) */
			h->b0_deferred = true;
			h->seg_on = false;
			seg_restart(h);
			return;
		}
	} else if (h->last_plus == idx) {
		/* the held block dropped at once (above) */
		infokey_t *key = &h->keys[h->info_key[idx]];
		uint32_t alt = key->primary != idx ? key->primary : key->secondary;
		if (alt != NONE && alt != idx)
			idx = alt;
	}
	write_pending(h);
	put_minus(h, idx);
}

static void write_header(hk_t *h)
{
	const ht_trace_t *t = h->m->trace;
	fputs("v 10400 3\nX ", h->out);
	/* the debuggee's command line, on one line */
	size_t n = t->argc;
	for (size_t i = 0; i < n; i++) {
		if (i)
			fputc(' ', h->out);
		ht_text_put(h->out, t->argv[i]);
	}
	if (!n)
		ht_text_put(h->out, t->exe_path && t->exe_path[0] ? t->exe_path : "?");
	/* heaptrail does not record the machine's memory size: 0 pages */
	fprintf(h->out, "\nI %" PRIx64 " 0\n", h->page);
}

static void note_time(hk_t *h, uint64_t ns)
{
	uint64_t ms = ns / 1000000;
	if (ms > h->pending_ms)
		h->pending_ms = ms;
}

static void note_rss(hk_t *h, uint64_t bytes)
{
	uint64_t pages = (bytes + h->page - 1) / h->page;
	if (pages > h->max_rss_pages) {
		h->max_rss_pages = pages;
		h->pending_rss = pages;
	}
}

/* One event of the second pass. */
static int hk_event(void *ctx, const ht_event_t *ev, const ht_heap_step_t *st)
{
	hk_t *h = ctx;
	const ht_hk_plan_t *pl = h->plan;
	if (h->err || h->ord >= pl->nevents)
		return h->err;
	uint64_t ord = h->ord++;
	note_time(h, ev->time);
	if (ev->type == HT_EV_RSS) {
		note_rss(h, ev->size);
		return 0;
	}
	ht_live_t gone;
	if (st->gone) { /* a copy: the pass has taken it out of its table */
		gone = *st->gone;
		h->gone = &gone;
	}
	if (ev->type == HT_EV_FREE) {
		/* never seen allocated: ignored, as the model does */
		if (st->gone && gone.tag != PULLED)
			write_minus(h, &gone);
		h->gone = NULL;
		return h->err;
	}
	if (ev->type != HT_EV_ALLOC && ev->type != HT_EV_REALLOC) {
		h->gone = NULL;
		return 0;
	}
	if (st->gone && gone.tag != PULLED) /* invariant 4 */
		write_minus(h, &gone);
	h->gone = NULL;
	uint32_t trace = h->err ? 0 : trace_for(h, ev->stack_id, ev->time);
	uint32_t k = h->err ? NONE : key_for(h, ev->size, trace);
	if (h->err)
		return h->err;
	uint32_t *v = ht_pass_tag(h->pass, st->block->id);
	*v = NONE;
	if (ord == pl->rescue_ord) {
		/* written at the peak (invariant 3); no line now, so a
		 * held `+` stays held: the next line decides its index */
		*v = PULLED;
		h->rescue_live = true;
		h->rescue_key = k;
	} else if (pl->pull[ord / 8] & (1u << (ord % 8))) {
		flush_held(h, NONE);
		write_pending(h);
		put_minus(h, write_plus(h, k, NONE));
		*v = PULLED;
		if (ord == pl->peak_ord)
			h->seg_peak = true;
	} else {
		flush_held(h, NONE);
		write_pending(h);
		h->held = true;
		h->held_addr = ev->addr;
		h->held_key = k;
	}
	if (ord == pl->peak_ord && h->rescue_live) {
		flush_held(h, NONE);
		put_minus(h, write_plus(h, h->rescue_key, NONE));
		h->seg_peak = true;
		h->rescue_live = false;
	}
	return h->err;
}

static void hk_free(hk_t *h)
{
	h->seg_on = false;
	seg_restart(h); /* on error: release the segment */
	free(h->frames);
	free(h->line);
	free(h->keys);
	free(h->info_key);
	strtab_free(&h->strings);
	strtab_free(&h->iplines);
	ht_map_free(&h->nodes);
	ht_map_free(&h->stack_trace);
	ht_map_free(&h->key_map);
	free(h);
}

void ht_heaptrack_writer_free(hk_t *h)
{
	if (h)
		hk_free(h);
}

int ht_heaptrack_attach(ht_pass_t *p, FILE *out, const ht_model_t *m, ht_symbolizer_t *sym,
			const ht_hk_plan_t *plan, hk_t **hp)
{
	const ht_trace_t *t = m->trace;
	hk_t *h = *hp = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->out = h->real = out;
	h->m = m;
	h->sym = sym;
	h->pass = p;
	h->plan = plan;
	h->last_plus = NONE;
	h->page = t->page_size ? t->page_size : 4096;
	if (h->err)
		return h->err;
	write_header(h);
	/* the writer is freed by its owner, not by the pass */
	ht_pass_consumer_t c = { 0, true, true, hk_event, NULL, NULL, h, true };
	return ht_pass_add(p, &c);
}

int ht_heaptrack_finish(hk_t *h)
{
	const ht_model_t *m = h->m;
	FILE *out = h->real;
	if (!h->err) {
		flush_held(h, NONE);
		h->seg_on = false;
		seg_restart(h);
		if (h->b0_deferred) {
			/* no room before the end: `- 0` after a free would be
			 * temporary, so free it under a new info of its size and
			 * trace; after the last `+` no histogram entry needs it */
			uint32_t alias = new_info(h, h->info_key[0]);
			if (alias != NONE)
				put_minus(h, alias);
		}
		/* the run's end and the kernel's high-water mark, as the model has them */
		note_time(h, m->totals.duration_ns);
		note_rss(h, m->totals.peak_rss_bytes);
		write_pending(h);
		fprintf(out, "# strings: %zu\n# ips: %zu\n", h->strings.n, h->iplines.n);
	}
	h->seg_on = false;
	seg_restart(h);
	if (h->err)
		return h->err;
	return ferror(out) ? -EIO : 0;
}
