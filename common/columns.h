/* columns.h - the column layout of a thread block (HT_REC_THREAD_COLUMNS).
 *
 * A thread block's events interleave fields of different kinds: time
 * deltas, address deltas, sizes, stack ids. zstd compresses each kind far
 * better on its own (a third smaller on sqlite3's trace, a fifth on the
 * churn workload), so the writer splits a block's bytes into columns, one
 * per kind, and the reader joins them back into the very same bytes before
 * decoding. Every field keeps its encoding; only the order of the bytes
 * changes, so a block's columns add up to the block's length.
 *
 * Header only: the agent splits (without malloc, into the caller's
 * buffers), the reader joins.
 */
#ifndef HEAPTRAIL_COLUMNS_H
#define HEAPTRAIL_COLUMNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "trace_format.h"

enum {
	HT_COL_EVENT, /* each event's first byte */
	HT_COL_TIME,  /* time deltas */
	HT_COL_ADDR,  /* address deltas */
	HT_COL_SIZE,  /* sizes */
	HT_COL_STACK, /* stack ids */
	HT_COL_OTHER, /* every other field, in event order */
	HT_NCOLS
};

/* The fields after an event's first byte, in order: T time delta, A address
 * delta, S size, K stack id, R another varint, L a varint length and as
 * many bytes, D a varint count and as many varints. NULL: not an event. */
static inline const char *ht_event_fields(unsigned ev)
{
	switch (ev) {
	case HT_EV_ALLOC: return "TASK";
	case HT_EV_FREE: return "TA";
	case HT_EV_REALLOC: return "TASKRR";
	case HT_EV_STACK: return "RD";
	case HT_EV_RSS: return "TR";
	case HT_EV_ENTER: return "TRR";
	case HT_EV_EXIT: return "T";
	case HT_EV_ENABLE: return "TR";
	case HT_EV_NAME: return "RL";
	case HT_EV_TAG: return "TAR";
	case HT_EV_PHASE: return "TRR";
	case HT_EV_POOL: return "TRRR";
	case HT_EV_PALLOC: return "TASKR";
	case HT_EV_SNAPSHOT: return "TR";
	case HT_EV_EXT: return "TL";
	default: return NULL;
	}
}

static inline unsigned ht_field_column(char f)
{
	switch (f) {
	case 'T': return HT_COL_TIME;
	case 'A': return HT_COL_ADDR;
	case 'S': return HT_COL_SIZE;
	case 'K': return HT_COL_STACK;
	default: return HT_COL_OTHER;
	}
}

/* A cursor over one column (or the interleaved bytes). */
typedef struct {
	const uint8_t *p;
	size_t pos, len;
} ht_col_in_t;

/* Copies one varint from in to out[*o]; false if it runs past in's end
 * or is longer than 10 bytes. The value, when v is not NULL. */
static inline bool ht_col_copy_varint(ht_col_in_t *in, uint8_t *out, size_t *o, uint64_t *v)
{
	uint64_t r = 0;
	for (unsigned k = 0; k < 10; k++) {
		if (in->pos >= in->len)
			return false;
		uint8_t b = in->p[in->pos++];
		out[(*o)++] = b;
		r |= (uint64_t)(b & 0x7f) << (7 * k);
		if (!(b & 0x80)) {
			if (v)
				*v = r;
			return true;
		}
	}
	return false;
}

/* Copies one field of kind f from in to out[*o]. */
static inline bool ht_col_copy_field(char f, ht_col_in_t *in, uint8_t *out, size_t *o)
{
	uint64_t n;
	if (!ht_col_copy_varint(in, out, o, &n))
		return false;
	if (f == 'L') {
		if (n > in->len - in->pos)
			return false;
		for (uint64_t i = 0; i < n; i++)
			out[(*o)++] = in->p[in->pos++];
	} else if (f == 'D') {
		for (uint64_t i = 0; i < n; i++)
			if (!ht_col_copy_varint(in, out, o, NULL))
				return false;
	}
	return true;
}

/* Splits the events ev[0..n) into columns: column c goes to col[c] (room
 * for n bytes each), its length to len[c]. False on bytes that are not
 * whole events (the caller then writes the block as it is). */
static inline bool ht_columns_split(const uint8_t *ev, size_t n, uint8_t *col[HT_NCOLS],
				    size_t len[HT_NCOLS])
{
	ht_col_in_t in = {ev, 0, n};
	for (unsigned c = 0; c < HT_NCOLS; c++)
		len[c] = 0;
	while (in.pos < n) {
		uint8_t op = ev[in.pos++];
		const char *f = ht_event_fields(op & 0x0f);
		if (!f)
			return false;
		col[HT_COL_EVENT][len[HT_COL_EVENT]++] = op;
		for (; *f; f++) {
			unsigned c = ht_field_column(*f);
			if (!ht_col_copy_field(*f, &in, col[c], &len[c]))
				return false;
		}
	}
	return true;
}

/* Joins columns back into the interleaved events, written to out (room for
 * the columns' total length). Returns the bytes written, which equal that
 * total for well-formed columns; on damage (*bad set) the bytes of the
 * whole events before it. */
static inline size_t ht_columns_join(const uint8_t *const col[HT_NCOLS],
				     const size_t len[HT_NCOLS], uint8_t *out, bool *bad)
{
	ht_col_in_t in[HT_NCOLS];
	for (unsigned c = 0; c < HT_NCOLS; c++)
		in[c] = (ht_col_in_t){col[c], 0, len[c]};
	size_t o = 0, whole = 0;
	*bad = false;
	while (in[HT_COL_EVENT].pos < len[HT_COL_EVENT]) {
		uint8_t op = col[HT_COL_EVENT][in[HT_COL_EVENT].pos++];
		const char *f = ht_event_fields(op & 0x0f);
		if (!f) {
			*bad = true;
			return whole;
		}
		out[o++] = op;
		for (; *f; f++) {
			if (!ht_col_copy_field(*f, &in[ht_field_column(*f)], out, &o)) {
				*bad = true;
				return whole;
			}
		}
		whole = o;
	}
	for (unsigned c = 0; c < HT_NCOLS; c++)
		if (in[c].pos != in[c].len)
			*bad = true; /* bytes no event used */
	return whole;
}

/* ---- split varints (THREAD_BATCH3) -------------------------------------------
 * A column of varints, rearranged as the first byte of each, then the
 * bytes after those (the continuation bytes), each group in order. */

/* Splits the varints col[0..len) in place: their first bytes move to the
 * front of col, the rest go to rest (room for len bytes). Returns the
 * number of first bytes (of varints); *nrest gets the rest's length.
 * The column must hold whole varints. */
static inline size_t ht_varints_split(uint8_t *col, size_t len, uint8_t *rest, size_t *nrest)
{
	/* without a branch per byte: varint lengths vary at random, and a
	 * mispredicted branch a varint cost more than the copying */
	size_t nfirst = 0, r = 0;
	unsigned cont = 0; /* the previous byte continues its varint */
	for (size_t i = 0; i < len; i++) {
		uint8_t b = col[i];
		col[nfirst] = b; /* nfirst <= i: b is read first */
		rest[r] = b;
		nfirst += !cont;
		r += cont;
		cont = b >> 7;
	}
	*nrest = r;
	return nfirst;
}

/* Joins nfirst first bytes and the rest (nrest bytes) back into varints
 * at out (room for nfirst + nrest bytes). False if they do not make
 * whole varints of at most HT_VARINT_MAX bytes that use every byte. */
static inline bool ht_varints_join(const uint8_t *first, size_t nfirst, const uint8_t *rest,
				   size_t nrest, uint8_t *out)
{
	size_t o = 0, r = 0;
	for (size_t i = 0; i < nfirst; i++) {
		uint8_t b = first[i];
		out[o++] = b;
		for (unsigned k = 1; b & 0x80; k++) {
			if (r == nrest || k == HT_VARINT_MAX)
				return false;
			b = rest[r++];
			out[o++] = b;
		}
	}
	return r == nrest;
}

#endif /* HEAPTRAIL_COLUMNS_H */
