/* test_reader.c - the trace reader and the model on traces encoded by hand.
 *
 * Each trace is built with the trace_format.h helpers, as raw (flags 0) and
 * zstd bodies, and the model's numbers are checked against counts known by
 * construction; then truncated and corrupted copies check that the reader
 * names the right offset and keeps what came before it.
 */
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "model.h"
#include "reader.h"
#include "report.h"
#include "test.h"
#include "trace_format.h"
#include "util.h"

/* ---- a tiny trace writer ---------------------------------------------------- */

typedef struct buf {
	uint8_t *p;
	size_t len, cap;
} buf_t;

static void put(buf_t *b, const void *d, size_t n)
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

static void put_u8(buf_t *b, uint8_t v)
{
	put(b, &v, 1);
}

static void put_u(buf_t *b, uint64_t v)
{
	uint8_t tmp[HT_VARINT_MAX];
	put(b, tmp, ht_varint_put(tmp, v));
}

static void put_s(buf_t *b, int64_t v)
{
	put_u(b, ht_zigzag(v));
}

static void put_str(buf_t *b, const char *s)
{
	put_u(b, strlen(s));
	put(b, s, strlen(s));
}

/* Append payload as a record of body, then empty payload. */
static void record(buf_t *body, uint8_t tag, buf_t *pl)
{
	put_u8(body, tag);
	put_u(body, pl->len);
	put(body, pl->p, pl->len);
	pl->len = 0;
}

static void rec_process(buf_t *body, int argc, const char **argv)
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

static void rec_module(buf_t *body, uint64_t id, uint64_t time, uint64_t bias, const char *path,
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

static void rec_end(buf_t *body, uint64_t time, uint64_t how, uint64_t status, uint64_t rss)
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

/* A thread block under construction. */
typedef struct blk {
	buf_t pl;
	uint64_t time, addr;
} blk_t;

static void blk_begin(blk_t *k, uint64_t tid, uint64_t base)
{
	memset(k, 0, sizeof(*k));
	put_u(&k->pl, tid);
	put_u(&k->pl, base);
	k->time = base;
}

static void ev_alloc(blk_t *k, uint64_t time, uint64_t addr, uint64_t size, uint64_t sid)
{
	put_u8(&k->pl, HT_EV_ALLOC);
	put_u(&k->pl, time - k->time);
	put_s(&k->pl, (int64_t)(addr - k->addr));
	put_u(&k->pl, size);
	put_u(&k->pl, sid);
	k->time = time;
	k->addr = addr;
}

static void ev_free(blk_t *k, uint64_t time, uint64_t addr)
{
	put_u8(&k->pl, HT_EV_FREE);
	put_u(&k->pl, time - k->time);
	put_s(&k->pl, (int64_t)(addr - k->addr));
	k->time = time;
	k->addr = addr;
}

static void ev_realloc(blk_t *k, uint64_t time, uint64_t lead, uint64_t old, uint64_t addr,
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

static void ev_stack(blk_t *k, uint64_t sid, int depth, const uint64_t *ips)
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

static void ev_rss(blk_t *k, uint64_t time, uint64_t rss)
{
	put_u8(&k->pl, HT_EV_RSS);
	put_u(&k->pl, time - k->time);
	put_u(&k->pl, rss);
	k->time = time;
}

static void blk_end(buf_t *body, blk_t *k)
{
	record(body, HT_REC_THREAD_BLOCK, &k->pl);
	free(k->pl.p);
}

/* Header + body, compressed if asked. */
static buf_t make_file(const buf_t *body, bool zstd, unsigned major)
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

static ht_model_t *load(const buf_t *file, ht_trace_t **t, int *rc)
{
	ht_model_t *m = NULL;
	*rc = ht_reader_load_mem(file->p, file->len, NULL, t);
	if (*rc == 0 && ht_model_build(*t, &m) != 0)
		m = NULL;
	return m;
}

static const ht_site_t *site_of(const ht_model_t *m, uint64_t sid)
{
	for (size_t i = 0; i < m->nsites; i++)
		if (m->sites[i].stack_id == sid)
			return &m->sites[i];
	return NULL;
}

/* ---- test 1: one thread, every event kind ---------------------------------- */

/* Body of a one-thread trace; *block_at receives the body offset of its
 * thread block's first event (after the record header). */
static buf_t basic_body(size_t *ev_at, bool with_end)
{
	buf_t body = { 0 };
	const char *argv[] = { "prog", "arg" };
	uint64_t ips1[] = { 0x401010, 0x401100 }, ips2[] = { 0x401020, 0x401100 };
	uint64_t ips3[] = { 0x401030 };
	rec_process(&body, 2, argv);
	rec_module(&body, 1, 0, 0, "/usr/bin/prog", 0x400000, 0x10000);
	blk_t k;
	blk_begin(&k, 100, 1000);
	ev_stack(&k, 1, 2, ips1);
	ev_alloc(&k, 1000, 0x10000, 100, 1); /* A */
	ev_stack(&k, 2, 2, ips2);
	ev_alloc(&k, 1100, 0x20000, 50, 2); /* B: peak 150 here */
	ev_free(&k, 1200, 0x10000);	    /* A: not temporary (B came after) */
	ev_alloc(&k, 1300, 0x30000, 30, 1); /* C */
	ev_stack(&k, 3, 1, ips3);
	ev_realloc(&k, 1400, 50, 0x30000, 0x40000, 60, 3); /* C->D, C temporary */
	ev_rss(&k, 1500, 5 << 20);
	ev_free(&k, 1600, 0xdead0000); /* unknown: ignored */
	if (ev_at)
		*ev_at = body.len + 1 + 1 + 3; /* tag, len (1 byte), tid, base (2 bytes) */
	blk_end(&body, &k);
	if (with_end)
		rec_end(&body, 2000, HT_END_EXIT, 3, 7 << 20);
	return body;
}

static void check_basic_model(const ht_model_t *m)
{
	const ht_totals_t *tt = &m->totals;
	CHECK_EQ(tt->allocations, 4);
	CHECK_EQ(tt->frees, 2);
	CHECK_EQ(tt->bytes_allocated, 240);
	CHECK_EQ(tt->peak_heap_bytes, 150);
	CHECK_EQ(tt->peak_time_ns, 1100);
	CHECK_EQ(tt->leaked_blocks, 2);
	CHECK_EQ(tt->leaked_bytes, 110);
	CHECK_EQ(tt->temporary, 1);
	CHECK_EQ(tt->ignored_frees, 1);
	CHECK_EQ(tt->reallocs, 1);
	CHECK_EQ(m->nsites, 3);
	const ht_site_t *s1 = site_of(m, 1), *s2 = site_of(m, 2), *s3 = site_of(m, 3);
	CHECK(s1 && s2 && s3);
	if (!s1 || !s2 || !s3)
		return;
	CHECK_EQ(s1->allocations, 2);
	CHECK_EQ(s1->bytes_allocated, 130);
	CHECK_EQ(s1->peak_bytes, 100);
	CHECK_EQ(s1->temporary, 1);
	CHECK_EQ(s1->leaked_blocks, 0);
	CHECK_EQ(s2->peak_bytes, 50);
	CHECK_EQ(s2->leaked_bytes, 50);
	CHECK_EQ(s3->leaked_bytes, 60);
	CHECK_EQ(s3->peak_bytes, 0);
	CHECK(s1->stack && s1->stack->depth == 2);
	if (s1->stack)
		CHECK_EQ(m->trace->ips[s1->stack->first + 1], 0x401100);
}

static void test_basic(void)
{
	for (int z = 0; z < 2; z++) {
		buf_t body = basic_body(NULL, true);
		buf_t file = make_file(&body, z, HT_FORMAT_MAJOR);
		ht_trace_t *t;
		int rc;
		ht_model_t *m = load(&file, &t, &rc);
		CHECK_EQ(rc, 0);
		CHECK(m != NULL);
		if (m) {
			CHECK_EQ(t->error, 0);
			CHECK_EQ(t->ending, HT_ENDING_EXIT);
			CHECK_EQ(t->end_status, 3);
			CHECK_EQ(t->argc, 2);
			CHECK_EQ(t->pid, 4242);
			CHECK_EQ(m->totals.peak_rss_bytes, 7 << 20);
			CHECK_EQ(m->totals.duration_ns, 2000);
			check_basic_model(m);
		}
		ht_model_free(m);
		ht_trace_free(t);
		free(file.p);
		free(body.p);
	}
}

/* ---- test 2: two threads, blocks out of order ---------------------------------- */

static void test_threads(void)
{
	buf_t body = { 0 };
	const char *argv[] = { "prog" };
	uint64_t ips[] = { 0x401050 };
	rec_process(&body, 1, argv);
	blk_t k;
	/* thread 2's block comes first in the file but uses stack 5, defined
	 * later by thread 1, and frees X, allocated earlier by thread 1 */
	blk_begin(&k, 2, 20);
	ev_free(&k, 20, 0x5000);	   /* X, allocated by thread 1 at t=10 */
	ev_alloc(&k, 30, 0x6000, 8, 5);	   /* Y reuses thread 1's freed block at equal time */
	blk_end(&body, &k);
	blk_begin(&k, 1, 10);
	ev_stack(&k, 5, 1, ips);
	ev_alloc(&k, 10, 0x5000, 16, 5); /* X */
	ev_alloc(&k, 25, 0x6000, 4, 5);	 /* Z */
	ev_free(&k, 30, 0x6000);	 /* Z, freed at the same stamp Y reuses it */
	blk_end(&body, &k);
	rec_end(&body, 40, HT_END_EXIT, 0, 0);
	buf_t file = make_file(&body, true, HT_FORMAT_MAJOR);
	ht_trace_t *t;
	int rc;
	ht_model_t *m = load(&file, &t, &rc);
	CHECK_EQ(rc, 0);
	if (m) {
		CHECK_EQ(t->nthreads, 2);
		CHECK_EQ(m->totals.allocations, 3);
		CHECK_EQ(m->totals.frees, 2);
		CHECK_EQ(m->totals.ignored_frees, 0);
		CHECK_EQ(m->totals.reused_addresses, 0);
		CHECK_EQ(m->totals.leaked_blocks, 1); /* Y */
		CHECK_EQ(m->totals.leaked_bytes, 8);
		CHECK_EQ(m->totals.peak_heap_bytes, 16); /* X alone: freed before Z */
		CHECK_EQ(m->nsites, 1);
		CHECK(m->sites[0].stack != NULL); /* resolved after reading */
		/* X and Z: each freed before thread 1 allocated again */
		CHECK_EQ(m->totals.temporary, 2);
		CHECK_EQ(m->totals.peak_rss_bytes, 0);
	}
	ht_model_free(m);
	ht_trace_free(t);
	free(file.p);
	free(body.p);
}

/* ---- test 2b: realloc's free half, duplicate stacks -------------------------- */

static void test_realloc_order(void)
{
	buf_t body = { 0 };
	const char *argv[] = { "prog" };
	uint64_t ips[] = { 0x401050, 0x401060 };
	rec_process(&body, 1, argv);
	blk_t k;
	/* thread 1: A at 0x7000, then realloc A -> 0x8000 at t=50, its free
	 * half stamped at t=30; thread 2 gets 0x7000 from malloc at t=40 */
	blk_begin(&k, 1, 10);
	ev_stack(&k, 1, 2, ips);
	ev_stack(&k, 2, 2, ips); /* same frames, another id: one site */
	ev_alloc(&k, 10, 0x7000, 100, 1);
	ev_realloc(&k, 50, 20, 0x7000, 0x8000, 200, 2);
	blk_end(&body, &k);
	blk_begin(&k, 2, 40);
	ev_alloc(&k, 40, 0x7000, 10, 1);
	blk_end(&body, &k);
	rec_end(&body, 60, HT_END_EXIT, 0, 0);
	buf_t file = make_file(&body, false, HT_FORMAT_MAJOR);
	ht_trace_t *t;
	int rc;
	ht_model_t *m = load(&file, &t, &rc);
	CHECK_EQ(rc, 0);
	if (m) {
		CHECK_EQ(m->totals.allocations, 3);
		CHECK_EQ(m->totals.frees, 1);
		CHECK_EQ(m->totals.reused_addresses, 0);
		CHECK_EQ(m->totals.ignored_frees, 0);
		CHECK_EQ(m->totals.leaked_blocks, 2);
		CHECK_EQ(m->totals.leaked_bytes, 210);
		CHECK_EQ(m->totals.peak_heap_bytes, 210);
		CHECK_EQ(m->totals.peak_time_ns, 50);
		CHECK_EQ(m->nsites, 1);
		if (m->nsites == 1) {
			CHECK_EQ(m->sites[0].allocations, 3);
			CHECK_EQ(m->sites[0].peak_bytes, 210);
		}
		/* A was freed (by the realloc) before thread 1 allocated again */
		CHECK_EQ(m->totals.temporary, 1);
	}
	ht_model_free(m);
	ht_trace_free(t);
	free(file.p);
	free(body.p);
}

/* ---- test 3: truncation, corruption, versions ----------------------------------- */

static void test_damage(void)
{
	size_t ev_at;
	buf_t body = basic_body(&ev_at, true);
	ht_trace_t *t;
	ht_model_t *m;
	int rc;

	/* raw body cut inside the thread block, after the first two events */
	{
		buf_t file = make_file(&body, false, HT_FORMAT_MAJOR);
		/* STACK(1): 1+1+1+3+2 = 8 bytes (ips delta 0x401010 takes 4...)
		 * find the cut by decoding: keep the block header and 3 events */
		size_t cut = HT_FILE_HEADER_LEN + ev_at;
		{
			const uint8_t *p = body.p + ev_at;
			/* skip STACK, ALLOC, STACK, ALLOC by walking varints */
			size_t q = 0;
			for (int e = 0; e < 4; e++) {
				uint8_t type = p[q++] & 0xf;
				uint64_t v;
				int nv = type == HT_EV_ALLOC ? 4 : 0;
				if (type == HT_EV_STACK) {
					q += ht_varint_get(p + q, 10, &v);
					q += ht_varint_get(p + q, 10, &v);
					nv = (int)v;
				}
				for (int j = 0; j < nv; j++)
					q += ht_varint_get(p + q, 10, &v);
			}
			cut += q + 2; /* two bytes into the FREE event */
		}
		file.len = cut;
		m = load(&file, &t, &rc);
		CHECK_EQ(rc, 0);
		CHECK_EQ(t->error, -HT_ETRUNC);
		CHECK_EQ(t->error_offset, cut - HT_FILE_HEADER_LEN - 2);
		CHECK_EQ(t->error_file_offset, (int64_t)cut - 2);
		CHECK_STR(t->message, "truncated");
		CHECK_EQ(t->ending, HT_ENDING_CUT_SHORT);
		if (m) {
			CHECK_EQ(m->totals.allocations, 2);
			CHECK_EQ(m->totals.bytes_allocated, 150);
			CHECK_EQ(m->totals.leaked_bytes, 150);
		}
		char w[8][HT_WARN_LEN];
		if (m)
			CHECK(ht_report_warnings(m, w, 8) >= 1);
		ht_model_free(m);
		ht_trace_free(t);
		free(file.p);
	}

	/* corrupt event type at a known offset */
	{
		buf_t bad = { 0 };
		put(&bad, body.p, body.len);
		size_t off = ev_at; /* the first event: STACK */
		bad.p[off] = 0x0f;
		buf_t file = make_file(&bad, false, HT_FORMAT_MAJOR);
		m = load(&file, &t, &rc);
		CHECK_EQ(rc, 0);
		CHECK_EQ(t->error, -HT_ECORRUPT);
		CHECK_EQ(t->error_offset, off);
		CHECK_EQ(t->error_file_offset, (int64_t)(HT_FILE_HEADER_LEN + off));
		CHECK_STR(t->message, "corrupt");
		if (m)
			CHECK_EQ(m->totals.allocations, 0);
		ht_model_free(m);
		ht_trace_free(t);
		free(file.p);

		/* the same in a zstd body: decompressed offset, approximate file offset */
		file = make_file(&bad, true, HT_FORMAT_MAJOR);
		m = load(&file, &t, &rc);
		CHECK_EQ(t->error, -HT_ECORRUPT);
		CHECK_EQ(t->error_offset, off);
		CHECK(t->error_file_offset > 0 && t->error_file_offset <= (int64_t)file.len);
		CHECK_STR(t->message, "decompressed offset");
		ht_model_free(m);
		ht_trace_free(t);
		free(file.p);
		free(bad.p);
	}

	/* zstd body cut in half: truncated, what decompressed is kept */
	{
		buf_t file = make_file(&body, true, HT_FORMAT_MAJOR);
		file.len = HT_FILE_HEADER_LEN + (file.len - HT_FILE_HEADER_LEN) / 2;
		m = load(&file, &t, &rc);
		CHECK(t != NULL);
		CHECK(t->error != 0);
		CHECK(rc == 0 || rc == -HT_EEMPTY || rc == -HT_ETRUNC);
		CHECK(t->message[0] != '\0');
		ht_model_free(m);
		ht_trace_free(t);
		/* every prefix: never crashes, always says something */
		buf_t full = make_file(&body, true, HT_FORMAT_MAJOR);
		int bad_prefix = 0;
		for (size_t n = 0; n < full.len; n++) {
			rc = ht_reader_load_mem(full.p, n, NULL, &t);
			if (!t || !t->error || !t->message[0])
				bad_prefix++;
			if (rc == 0 && ht_model_build(t, &m) == 0)
				ht_model_free(m);
			ht_trace_free(t);
		}
		CHECK_EQ(bad_prefix, 0);
		free(full.p);
		free(file.p);
	}

	/* no END record: cut short, but no error */
	{
		buf_t b2 = basic_body(NULL, false);
		buf_t file = make_file(&b2, true, HT_FORMAT_MAJOR);
		m = load(&file, &t, &rc);
		CHECK_EQ(rc, 0);
		CHECK_EQ(t->error, 0);
		CHECK_EQ(t->ending, HT_ENDING_CUT_SHORT);
		if (m) {
			check_basic_model(m);
			CHECK_EQ(m->totals.peak_rss_bytes, 5 << 20); /* from the RSS event */
		}
		ht_model_free(m);
		ht_trace_free(t);
		free(file.p);
		free(b2.p);
	}

	/* newer major version, bad magic */
	{
		buf_t file = make_file(&body, true, HT_FORMAT_MAJOR + 1);
		rc = ht_reader_load_mem(file.p, file.len, NULL, &t);
		CHECK_EQ(rc, -HT_EVERSION);
		CHECK_STR(t->message, "newer");
		ht_trace_free(t);
		file.p[0] = 'X';
		rc = ht_reader_load_mem(file.p, file.len, NULL, &t);
		CHECK_EQ(rc, -HT_EMAGIC);
		ht_trace_free(t);
		free(file.p);
	}
	free(body.p);
}

/* ---- test 4: module lookup with a reused range ------------------------------------ */

static void test_modules(void)
{
	buf_t body = { 0 };
	const char *argv[] = { "prog" };
	rec_process(&body, 1, argv);
	rec_module(&body, 1, 0, 0, "/usr/bin/prog", 0x400000, 0x1000);
	rec_module(&body, 2, 100, 0x7f0000000000, "/tmp/libone.so", 0x1000, 0x2000);
	buf_t pl = { 0 };
	put_u(&pl, 2);
	put_u(&pl, 200);
	record(&body, HT_REC_MODULE_UNLOAD, &pl);
	free(pl.p);
	rec_module(&body, 3, 300, 0x7f0000000000, "/tmp/libtwo.so", 0x0, 0x4000);
	buf_t file = make_file(&body, false, HT_FORMAT_MAJOR);
	ht_trace_t *t;
	int rc = ht_reader_load_mem(file.p, file.len, NULL, &t);
	CHECK_EQ(rc, 0);
	if (rc == 0) {
		CHECK_EQ(t->nmodules, 3);
		CHECK_EQ(t->modules[1].unload_time, 200);
		CHECK_EQ(ht_trace_module_for(t, 0x400500, 50), 0);
		CHECK_EQ(ht_trace_module_for(t, 0x7f0000001500, 150), 1); /* libone */
		CHECK_EQ(ht_trace_module_for(t, 0x7f0000001500, 350), 2); /* libtwo */
		CHECK_EQ(ht_trace_module_for(t, 0x7f0000000500, 150), 2); /* only libtwo */
		CHECK_EQ(ht_trace_module_for(t, 0x7f0000009000, 150), -1);
		CHECK_EQ(ht_trace_module_for(t, 0x401000, 0), -1); /* end is exclusive */
	}
	ht_trace_free(t);
	free(file.p);
	free(body.p);
}

/* ---- test 5: JSON escaping and the contract's fields ------------------------------- */

static void test_json(void)
{
	buf_t body = { 0 };
	const char *argv[] = { "prog", "q\"b\\s\n\x01", "bad\xff\xc3(", "ok\xc3\xa9" };
	rec_process(&body, 4, argv);
	blk_t k;
	blk_begin(&k, 1, 0);
	ev_alloc(&k, 5, 0x1000, 10, 0); /* unknown stack */
	blk_end(&body, &k);
	buf_t file = make_file(&body, false, HT_FORMAT_MAJOR);
	ht_trace_t *t;
	int rc;
	ht_model_t *m = load(&file, &t, &rc);
	CHECK_EQ(rc, 0);
	if (m) {
		char *out = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&out, &len);
		CHECK_EQ(ht_report_json(f, m, NULL, NULL), 0);
		fclose(f);
		CHECK_STR(out, "\"heaptrail_report\": 1");
		CHECK_STR(out, "\"q\\\"b\\\\s\\n\\u0001\"");
		CHECK_STR(out, "\"bad\\ufffd\\ufffd(\"");
		CHECK_STR(out, "\"ok\xc3\xa9\"");
		CHECK_STR(out, "\"exit_code\": null");
		CHECK_STR(out, "\"leaked_bytes\": 10");
		CHECK_STR(out, "\"stack\": []");
		CHECK_STR(out, "\"truncated\": false");
		free(out);

		out = NULL;
		f = open_memstream(&out, &len);
		CHECK_EQ(ht_report_text(f, m, NULL, NULL), 0);
		fclose(f);
		CHECK_STR(out, "no END record");
		CHECK_STR(out, "stack unknown");
		free(out);
	}
	ht_model_free(m);
	ht_trace_free(t);
	free(file.p);
	free(body.p);
}

int main(void)
{
	test_basic();
	test_threads();
	test_realloc_order();
	test_damage();
	test_modules();
	test_json();
	return TEST_DONE();
}
