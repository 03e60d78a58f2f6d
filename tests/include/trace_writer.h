/* trace_writer.h - encode heaptrail traces by hand for the unit tests
 * (tests/unit/): records, thread blocks and their events, as
 * common/trace_format.h defines them, and a loader for the result. Every
 * test includes what it uses; unused helpers are fine. */
#ifndef HEAPTRAIL_TEST_TRACE_WRITER_H
#define HEAPTRAIL_TEST_TRACE_WRITER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "analysis/model.h"
#include "analysis/reader.h"
#include "trace_format.h"

#define HT_TEST_UNUSED __attribute__((unused))

typedef struct buf {
	uint8_t *p;
	size_t len, cap;
} buf_t;

HT_TEST_UNUSED static void put(buf_t *b, const void *d, size_t n)
{
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2 + 64;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			abort();
	}
	memcpy(b->p + b->len, d, n);
	b->len += n;
}

HT_TEST_UNUSED static void put_u8(buf_t *b, uint8_t v)
{
	put(b, &v, 1);
}

HT_TEST_UNUSED static void put_u(buf_t *b, uint64_t v)
{
	uint8_t tmp[HT_VARINT_MAX];
	put(b, tmp, ht_varint_put(tmp, v));
}

HT_TEST_UNUSED static void put_s(buf_t *b, int64_t v)
{
	put_u(b, ht_zigzag(v));
}

HT_TEST_UNUSED static void put_str(buf_t *b, const char *s)
{
	put_u(b, strlen(s));
	put(b, s, strlen(s));
}

/* Append payload as a record of body, then empty payload. */
HT_TEST_UNUSED static void record(buf_t *body, uint8_t tag, buf_t *pl)
{
	put_u8(body, tag);
	put_u(body, pl->len);
	put(body, pl->p, pl->len);
	pl->len = 0;
}

HT_TEST_UNUSED static void rec_process(buf_t *body, int argc, const char **argv)
{
	buf_t pl = { 0 };
	put_u(&pl, 1);
	put_u(&pl, 0);
	put_str(&pl, "test");
	put_u(&pl, 4242); /* pid */
	put_u(&pl, 1);	  /* ppid */
	put_u(&pl, 1700000000000000000ULL);
	put_u(&pl, 123456789);
	put_u(&pl, 4096);
	put_u(&pl, 0);
	put_u(&pl, 64);
	put_str(&pl, "/usr/bin/prog");
	put_u(&pl, (uint64_t)argc);
	for (int i = 0; i < argc; i++)
		put_str(&pl, argv[i]);
	record(body, HT_REC_PROCESS, &pl);
	free(pl.p);
}

HT_TEST_UNUSED static void rec_module(buf_t *body, uint64_t id, uint64_t time, uint64_t bias, const char *path,
		       uint64_t vaddr, uint64_t memsz)
{
	buf_t pl = { 0 };
	put_u(&pl, id);
	put_u(&pl, time);
	put_u(&pl, bias);
	put_str(&pl, path);
	put_str(&pl, "");
	put_u(&pl, 1);
	put_u(&pl, vaddr);
	put_u(&pl, memsz);
	put_u(&pl, 5);
	record(body, HT_REC_MODULE, &pl);
	free(pl.p);
}

HT_TEST_UNUSED static void rec_end(buf_t *body, uint64_t time, uint64_t how, uint64_t status, uint64_t rss)
{
	buf_t pl = { 0 };
	put_u(&pl, time);
	put_u(&pl, how);
	put_u(&pl, status);
	put_u(&pl, rss);
	put_u(&pl, 0);
	record(body, HT_REC_END, &pl);
	free(pl.p);
}

/* A thread block under construction. fn: the previous ENTER's function
 * (ENTER addresses are deltas on their own chain). */
typedef struct blk {
	buf_t pl;
	uint64_t time, addr, fn;
} blk_t;

HT_TEST_UNUSED static void blk_begin(blk_t *k, uint64_t tid, uint64_t base)
{
	memset(k, 0, sizeof(*k));
	put_u(&k->pl, tid);
	put_u(&k->pl, base);
	k->time = base;
}

HT_TEST_UNUSED static void ev_alloc(blk_t *k, uint64_t time, uint64_t addr, uint64_t size, uint64_t sid)
{
	put_u8(&k->pl, HT_EV_ALLOC);
	put_u(&k->pl, time - k->time);
	put_s(&k->pl, (int64_t)(addr - k->addr));
	put_u(&k->pl, size);
	put_u(&k->pl, sid);
	k->time = time;
	k->addr = addr;
}

HT_TEST_UNUSED static void ev_free(blk_t *k, uint64_t time, uint64_t addr)
{
	put_u8(&k->pl, HT_EV_FREE);
	put_u(&k->pl, time - k->time);
	put_s(&k->pl, (int64_t)(addr - k->addr));
	k->time = time;
	k->addr = addr;
}

HT_TEST_UNUSED static void ev_realloc(blk_t *k, uint64_t time, uint64_t lead, uint64_t old, uint64_t addr,
		       uint64_t size, uint64_t sid)
{
	put_u8(&k->pl, HT_EV_REALLOC | HT_FN_REALLOC << 4);
	put_u(&k->pl, time - k->time);
	put_s(&k->pl, (int64_t)(addr - k->addr));
	put_u(&k->pl, size);
	put_u(&k->pl, sid);
	put_s(&k->pl, (int64_t)(old - addr));
	put_u(&k->pl, lead);
	k->time = time;
	k->addr = addr;
}

HT_TEST_UNUSED static void ev_stack(blk_t *k, uint64_t sid, int depth, const uint64_t *ips)
{
	put_u8(&k->pl, HT_EV_STACK);
	put_u(&k->pl, sid);
	put_u(&k->pl, (uint64_t)depth);
	uint64_t prev = 0;
	for (int i = 0; i < depth; i++) {
		put_s(&k->pl, (int64_t)(ips[i] - prev));
		prev = ips[i];
	}
}

HT_TEST_UNUSED static void ev_rss(blk_t *k, uint64_t time, uint64_t rss)
{
	put_u8(&k->pl, HT_EV_RSS);
	put_u(&k->pl, time - k->time);
	put_u(&k->pl, rss);
	k->time = time;
}

HT_TEST_UNUSED static void ev_enter(blk_t *k, uint64_t time, uint64_t fn, uint64_t call_site)
{
	put_u8(&k->pl, HT_EV_ENTER);
	put_u(&k->pl, time - k->time);
	put_s(&k->pl, (int64_t)(fn - k->fn));
	put_s(&k->pl, (int64_t)(call_site - fn));
	k->time = time;
	k->fn = fn;
}

HT_TEST_UNUSED static void ev_exit(blk_t *k, uint64_t time)
{
	put_u8(&k->pl, HT_EV_EXIT);
	put_u(&k->pl, time - k->time);
	k->time = time;
}

HT_TEST_UNUSED static void ev_enable(blk_t *k, uint64_t time, int on)
{
	put_u8(&k->pl, HT_EV_ENABLE);
	put_u(&k->pl, time - k->time);
	put_u(&k->pl, (uint64_t)on);
	k->time = time;
}

HT_TEST_UNUSED static void ev_name(blk_t *k, uint64_t id, const char *name)
{
	put_u8(&k->pl, HT_EV_NAME);
	put_u(&k->pl, id);
	put_str(&k->pl, name);
}

/* TAG's address is on the heap events' chain (k->addr), like ALLOC's. */
HT_TEST_UNUSED static void ev_tag(blk_t *k, uint64_t time, uint64_t addr, uint64_t name_id)
{
	put_u8(&k->pl, HT_EV_TAG);
	put_u(&k->pl, time - k->time);
	put_s(&k->pl, (int64_t)(addr - k->addr));
	put_u(&k->pl, name_id);
	k->time = time;
	k->addr = addr;
}

HT_TEST_UNUSED static void ev_phase(blk_t *k, uint64_t time, uint64_t name_id, int begin)
{
	put_u8(&k->pl, HT_EV_PHASE);
	put_u(&k->pl, time - k->time);
	put_u(&k->pl, name_id);
	put_u(&k->pl, (uint64_t)begin);
	k->time = time;
}

/* PALLOC: an ALLOC on the same address chain, then the pool id. */
HT_TEST_UNUSED static void ev_palloc(blk_t *k, uint64_t time, uint64_t addr, uint64_t size, uint64_t sid,
		      uint64_t pool)
{
	put_u8(&k->pl, HT_EV_PALLOC | (uint8_t)(HT_FN_CUSTOM << 4));
	put_u(&k->pl, time - k->time);
	put_s(&k->pl, (int64_t)(addr - k->addr));
	put_u(&k->pl, size);
	put_u(&k->pl, sid);
	put_u(&k->pl, pool);
	k->time = time;
	k->addr = addr;
}

HT_TEST_UNUSED static void ev_pool(blk_t *k, uint64_t time, uint64_t pool, uint64_t op, uint64_t name_id)
{
	put_u8(&k->pl, HT_EV_POOL);
	put_u(&k->pl, time - k->time);
	put_u(&k->pl, pool);
	put_u(&k->pl, op);
	put_u(&k->pl, name_id);
	k->time = time;
}

HT_TEST_UNUSED static void ev_snapshot(blk_t *k, uint64_t time, uint64_t name_id)
{
	put_u8(&k->pl, HT_EV_SNAPSHOT);
	put_u(&k->pl, time - k->time);
	put_u(&k->pl, name_id);
	k->time = time;
}

HT_TEST_UNUSED static void blk_end(buf_t *body, blk_t *k)
{
	record(body, HT_REC_THREAD_BLOCK, &k->pl);
	free(k->pl.p);
}

/* Header + body, compressed if asked. */
HT_TEST_UNUSED static buf_t make_file(const buf_t *body, bool zstd, unsigned major)
{
	buf_t f = { 0 };
	uint8_t hdr[HT_FILE_HEADER_LEN] = { 0 };
	memcpy(hdr, HT_FILE_MAGIC, HT_FILE_MAGIC_LEN);
	hdr[8] = (uint8_t)major;
	hdr[10] = HT_FORMAT_MINOR;
	hdr[12] = zstd ? HT_FILE_ZSTD : 0;
	put(&f, hdr, sizeof(hdr));
	if (zstd) {
		size_t cap = ZSTD_compressBound(body->len);
		uint8_t *z = malloc(cap);
		size_t n = ZSTD_compress(z, cap, body->p, body->len, 3);
		if (ZSTD_isError(n))
			abort();
		put(&f, z, n);
		free(z);
	} else {
		put(&f, body->p, body->len);
	}
	return f;
}

/* Append to f a zstd frame, written by hand, of n bytes all equal to
 * byte: RLE blocks of 128 KiB, 4 bytes each, no checksum. The format's
 * highest ratio (~32000x): what a zstd bomb is made of. */
HT_TEST_UNUSED static void zstd_rle_frame(buf_t *f, uint8_t byte, uint64_t n)
{
	/* magic; frame header descriptor 0 (no content size, not single
	 * segment, no checksum); window descriptor 0x38 (2^17 bytes) */
	static const uint8_t head[] = { 0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38 };
	put(f, head, sizeof(head));
	while (n > 0) {
		uint32_t size = n < (1u << 17) ? (uint32_t)n : 1u << 17;
		n -= size;
		uint32_t h = size << 3 | 1u << 1 | (n == 0); /* RLE; last */
		uint8_t blk[4] = { (uint8_t)h, (uint8_t)(h >> 8), (uint8_t)(h >> 16), byte };
		put(f, blk, sizeof(blk));
	}
}

HT_TEST_UNUSED static ht_model_t *load(const buf_t *file, ht_trace_t **t, int *rc)
{
	ht_model_t *m = NULL;
	*rc = ht_reader_load_mem(file->p, file->len, NULL, t);
	if (*rc == 0 && ht_model_build(*t, &m) != 0)
		m = NULL;
	return m;
}

#endif /* HEAPTRAIL_TEST_TRACE_WRITER_H */
