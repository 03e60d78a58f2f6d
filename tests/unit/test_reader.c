/* test_reader.c - the trace reader and the model on traces encoded by hand.
 *
 * Each trace is built with the trace_format.h helpers, as raw (flags 0) and
 * zstd bodies, and the model's numbers are checked against counts known by
 * construction; then truncated and corrupted copies check that the reader
 * names the right offset and keeps what came before it.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include <zstd.h>

#include "analysis/functions.h"
#include "analysis/leaks.h"
#include "analysis/marks.h"
#include "report/marks_section.h" /* by path: analysis/marks.h has the same name */
#include "analysis/model.h"
#include "analysis/reader.h"
#include "report/report.h"
#include "analysis/resources.h"
#include "analysis/watch.h"
#include "test.h"
#include "trace_format.h"
#include "analysis/util.h"

#include "columns.h"
#include "packed.h"
#include "trace_writer.h"

/* A report as the command writes it: the leaks built first. */
static int report_with_leaks(int (*w)(FILE *, const ht_model_t *, ht_symbolizer_t *,
				      const ht_report_opts_t *, const ht_leaks_t *),
			     FILE *out, const ht_model_t *m, const ht_report_opts_t *o)
{
	ht_leaks_t lk;
	int r = ht_leaks_build(m, NULL, NULL, &lk);
	if (!r)
		r = w(out, m, NULL, o, &lk);
	ht_leaks_free(&lk);
	return r;
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
		bad.p[off] = 0x00; /* no event has type 0 (1.4 defines all others) */
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

/* ---- hostile bodies: zstd bombs --------------------------------------------------- */

static long peak_rss_kb(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

/* A complete trace, then a frame of zeros: records of tag 0 (unknown,
 * skipped by length) and length 0, two bytes each. Run first, while the
 * process's peak RSS is still small: the body's pages of such records go
 * back as the parse passes them, and a body past its bound (64 MiB plus
 * 4096 times the compressed size) is cut with an error naming it. */
static void test_bomb(void)
{
	buf_t body = basic_body(NULL, true);
	ht_trace_t *t;
	ht_model_t *m;
	int rc;

	/* 48 MiB of empty records, under the bound: read whole, and the
	 * peak RSS grows by much less than the body */
	{
		long before = peak_rss_kb();
		buf_t file = make_file(&body, true, HT_FORMAT_MAJOR);
		zstd_rle_frame(&file, 0, (uint64_t)48 << 20);
		m = load(&file, &t, &rc);
		CHECK_EQ(rc, 0);
		CHECK_EQ(t->error, 0);
		CHECK_EQ(t->skipped_records, (uint64_t)24 << 20);
		CHECK_EQ(t->ending, HT_ENDING_EXIT);
		if (m)
			check_basic_model(m);
		long grew = peak_rss_kb() - before;
		CHECK(grew < 16 << 10);
		if (grew >= 16 << 10)
			fprintf(stderr, "  bomb: peak RSS grew by %ld KiB for a 48 MiB body\n", grew);
		ht_model_free(m);
		ht_trace_free(t);
		free(file.p);
	}

	/* past the bound: cut there, the trace before it kept */
	{
		buf_t file = make_file(&body, true, HT_FORMAT_MAJOR);
		zstd_rle_frame(&file, 0, (uint64_t)1 << 30);
		size_t bound = ((size_t)64 << 20) + 4096 * (file.len - HT_FILE_HEADER_LEN);
		m = load(&file, &t, &rc);
		CHECK_EQ(rc, 0);
		CHECK_EQ(t->error, -HT_ETOOBIG);
		CHECK_EQ(t->body_len, bound);
		CHECK_STR(t->message, "corrupt or hostile");
		CHECK_EQ(t->ending, HT_ENDING_EXIT);
		if (m)
			check_basic_model(m);
		ht_model_free(m);
		ht_trace_free(t);
		free(file.p);
	}

	/* a caller's smaller max_body still wins, with its own message */
	{
		buf_t file = make_file(&body, true, HT_FORMAT_MAJOR);
		zstd_rle_frame(&file, 0, (uint64_t)1 << 30);
		ht_reader_opts_t opts = { .max_body = 1 << 20 };
		rc = ht_reader_load_mem(file.p, file.len, &opts, &t);
		CHECK_EQ(rc, 0);
		CHECK_EQ(t->error, -HT_ETOOBIG);
		CHECK_EQ(t->body_len, 1 << 20);
		CHECK_STR(t->message, "1048576-byte limit");
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

/* Sites fold by frames: a library (its file gone, so frames are module and
 * offset) loaded at two addresses in turn, one call site reached from both
 * loads and another from the first: two sites by frames, three by address. */
static void test_fold_sites(void)
{
	buf_t body = { 0 };
	const char *argv[] = { "prog" };
	const uint64_t b1 = 0x7f0000000000, b2 = 0x7f1000000000;
	uint64_t s1[] = { b1 + 0x1100, 0x401100 }, s2[] = { b2 + 0x1100, 0x401100 };
	uint64_t s3[] = { b1 + 0x1200, 0x401100 };
	rec_process(&body, 1, argv);
	rec_module(&body, 1, 0, 0, "/nonexistent/prog", 0x400000, 0x10000);
	rec_module(&body, 2, 10, b1, "/nonexistent/libplug.so", 0x1000, 0x2000);
	blk_t k;
	blk_begin(&k, 100, 100);
	ev_stack(&k, 1, 2, s1);
	ev_alloc(&k, 100, 0x10000, 10, 1);
	ev_stack(&k, 3, 2, s3);
	ev_alloc(&k, 110, 0x20000, 30, 3);
	blk_end(&body, &k);
	buf_t pl = { 0 };
	put_u(&pl, 2);
	put_u(&pl, 200);
	record(&body, HT_REC_MODULE_UNLOAD, &pl);
	free(pl.p);
	rec_module(&body, 3, 300, b2, "/nonexistent/libplug.so", 0x1000, 0x2000);
	blk_begin(&k, 100, 400);
	ev_stack(&k, 2, 2, s2);
	ev_alloc(&k, 400, 0x30000, 20, 2);
	ev_free(&k, 410, 0x10000);
	blk_end(&body, &k);
	buf_t file = make_file(&body, false, HT_FORMAT_MAJOR);
	ht_trace_t *t;
	int rc = ht_reader_load_mem(file.p, file.len, NULL, &t);
	CHECK_EQ(rc, 0);
	if (rc == 0) {
		ht_model_t *m = NULL;
		CHECK_EQ(ht_model_build(t, &m), 0);
		if (m)
			CHECK_EQ(m->nsites, 3);
		ht_model_free(m);
		ht_symbolizer_t *sym = ht_symbolizer_new();
		ht_trace_add_modules(t, sym);
		m = NULL;
		CHECK_EQ(ht_model_build_sym(t, sym, &m), 0);
		if (m && m->nsites == 2) {
			const ht_site_t *a = &m->sites[0], *c = &m->sites[1];
			CHECK_EQ(a->stack_id, 1);
			CHECK_EQ(a->allocations, 2);
			CHECK_EQ(a->bytes_allocated, 30);
			CHECK_EQ(a->frees, 1);
			CHECK_EQ(a->leaked_bytes, 20);
			CHECK_EQ(a->largest, 20);
			CHECK_EQ(a->first_time, 100);
			CHECK_EQ(c->allocations, 1);
			CHECK_EQ(ht_model_site_of(m, 1), 0);
			CHECK_EQ(ht_model_site_of(m, 2), 0);
			CHECK_EQ(ht_model_site_of(m, 3), 1);
			CHECK_EQ(m->nlive_end, 2);
			for (size_t i = 0; i < m->nlive_end; i++)
				CHECK_EQ(m->live_end[i].site, m->live_end[i].addr == 0x30000 ? 0 : 1);
		} else {
			CHECK_EQ(m ? m->nsites : 0, 2);
		}
		ht_model_free(m);
		ht_symbolizer_free(sym);
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
		CHECK_EQ(report_with_leaks(ht_report_json, f, m, NULL), 0);
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
		CHECK_EQ(report_with_leaks(ht_report_text, f, m, NULL), 0);
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

/* ---- test 6: function events ------------------------------------------- */

#define FN_A 0x401000
#define FN_B 0x402000
#define FN_C 0x403000

/* One thread: A calls B twice (B allocates), an EXIT with nothing open,
 * recording off and on, then C calls A and neither returns. Times in ns:
 *   0 ENTER A, 10 ALLOC 100, 20 ENTER B, 30 ALLOC 50, 40 EXIT B,
 *   50 ENTER B, 60 REALLOC ->70, 80 EXIT B, 100 EXIT A, 110 EXIT (unmatched),
 *   120 ENABLE 0, 130 ENABLE 1, 140 ENTER C, 150 ALLOC 8, 160 ENTER A,
 *   200 RSS (the thread's last event), END at 300. */
static buf_t fn_body(void)
{
	buf_t body = { 0 };
	const char *argv[] = { "prog" };
	rec_process(&body, 1, argv);
	rec_module(&body, 1, 0, 0, "/usr/bin/prog", 0x400000, 0x10000);
	blk_t k;
	blk_begin(&k, 4242, 0);
	ev_enter(&k, 0, FN_A, 0x400500);
	ev_alloc(&k, 10, 0x10000, 100, 0);
	ev_enter(&k, 20, FN_B, FN_A + 0x20);
	ev_alloc(&k, 30, 0x20000, 50, 0);
	ev_exit(&k, 40);
	blk_end(&body, &k);
	/* a second block of the same thread: every chain restarts from 0 */
	blk_begin(&k, 4242, 50);
	ev_enter(&k, 50, FN_B, FN_A + 0x30);
	ev_realloc(&k, 60, 5, 0x20000, 0x30000, 70, 0);
	ev_exit(&k, 80);
	ev_exit(&k, 100);
	ev_exit(&k, 110);
	ev_enable(&k, 120, 0);
	ev_enable(&k, 130, 1);
	ev_enter(&k, 140, FN_C, 0x400600);
	ev_alloc(&k, 150, 0x40000, 8, 0);
	ev_enter(&k, 160, FN_A, FN_C + 0x10);
	ev_rss(&k, 200, 1 << 20);
	blk_end(&body, &k);
	rec_end(&body, 300, HT_END_EXIT, 0, 0);
	return body;
}

static const ht_fn_node_t *fn_child(const ht_fn_profile_t *p, uint32_t parent, uint64_t addr)
{
	for (uint32_t c = p->nodes[parent].first_child; c != HT_FN_NONE; c = p->nodes[c].next_sibling)
		if (p->funcs[p->nodes[c].func].addr == addr)
			return &p->nodes[c];
	return NULL;
}

static void test_function_events(void)
{
	buf_t body = fn_body();
	buf_t file = make_file(&body, true, HT_FORMAT_MAJOR);
	ht_trace_t *t;
	int rc;
	ht_model_t *m = load(&file, &t, &rc);
	CHECK_EQ(rc, 0);
	CHECK_EQ(t->error, 0);
	CHECK_EQ(t->nevents, 5);     /* heap events only: 3 ALLOC, 1 REALLOC, 1 RSS */
	CHECK_EQ(t->nfn_events, 11); /* 5 ENTER, 4 EXIT, 2 ENABLE */
	CHECK_EQ(t->threads[0].nfn_events, 11);
	CHECK_EQ(t->last_time, 300);
	if (m) {
		/* the heap model does not see function events */
		CHECK_EQ(m->totals.allocations, 4);
		CHECK_EQ(m->totals.bytes_allocated, 228);
	}

	/* the default merge skips them; HT_MERGE_FUNCTIONS returns them decoded */
	ht_merge_t *mg;
	ht_event_t ev;
	CHECK_EQ(ht_merge_new(t, &mg), 0);
	int n = 0, bad = 0;
	while (ht_merge_next(mg, &ev)) {
		n++;
		bad += ev.type >= HT_EV_ENTER;
	}
	ht_merge_free(mg);
	CHECK_EQ(n, 6); /* the REALLOC splits in two */
	CHECK_EQ(bad, 0);
	CHECK_EQ(ht_merge_new_ex(t, HT_MERGE_FUNCTIONS, 0, &mg), 0);
	int enters = 0, exits = 0, on = 0, off = 0;
	uint64_t prev = 0, fns[5] = { 0 }, sites[5] = { 0 };
	n = 0;
	while (ht_merge_next(mg, &ev)) {
		n++;
		bad += ev.time < prev;
		prev = ev.time;
		if (ev.type == HT_EV_ENTER && enters < 5) {
			fns[enters] = ev.addr;
			sites[enters++] = ev.call_site;
		}
		exits += ev.type == HT_EV_EXIT;
		on += ev.type == HT_EV_ENABLE && ev.size == 1;
		off += ev.type == HT_EV_ENABLE && ev.size == 0;
	}
	ht_merge_free(mg);
	CHECK_EQ(n, 17);
	CHECK_EQ(bad, 0);
	CHECK_EQ(enters, 5);
	CHECK_EQ(exits, 4);
	CHECK_EQ(on, 1);
	CHECK_EQ(off, 1);
	CHECK_EQ(fns[0], FN_A);
	CHECK_EQ(fns[1], FN_B);
	CHECK_EQ(fns[2], FN_B); /* second block: delta from 0 again */
	CHECK_EQ(fns[3], FN_C);
	CHECK_EQ(fns[4], FN_A);
	CHECK_EQ(sites[1], FN_A + 0x20);
	CHECK_EQ(sites[4], FN_C + 0x10);
	/* a thread index that does not exist walks nothing */
	CHECK_EQ(ht_merge_new_ex(t, HT_MERGE_FUNCTIONS, 7, &mg), 0);
	CHECK(!ht_merge_next(mg, &ev));
	ht_merge_free(mg);

	/* the function model */
	ht_fn_profile_t *p = NULL;
	CHECK_EQ(ht_fn_build(t, &p), 0);
	if (p && p->nthreads == 1) {
		const ht_fn_thread_t *th = &p->threads[0];
		CHECK_EQ(p->nfuncs, 3);
		CHECK_EQ(p->enters, 5);
		CHECK_EQ(th->enters, 5);
		CHECK_EQ(th->unmatched_exits, 1);
		CHECK_EQ(th->closed_at_end, 2);
		CHECK_EQ(th->switches_on, 1);
		CHECK_EQ(th->switches_off, 1);
		CHECK_EQ(th->last_time, 200);
		const ht_fn_node_t *a = fn_child(p, th->root, FN_A);
		const ht_fn_node_t *c = fn_child(p, th->root, FN_C);
		CHECK(a && c);
		if (a && c) {
			const ht_fn_node_t *b = fn_child(p, (uint32_t)(a - p->nodes), FN_B);
			const ht_fn_node_t *ca = fn_child(p, (uint32_t)(c - p->nodes), FN_A);
			CHECK(b && ca);
			CHECK_EQ(a->calls, 1);
			CHECK_EQ(a->total_ns, 100);
			CHECK_EQ(a->self_ns, 50);
			CHECK_EQ(a->own_bytes, 100);
			CHECK_EQ(a->own_allocs, 1);
			CHECK_EQ(a->heap_bytes, 220);
			CHECK_EQ(a->heap_allocs, 3);
			CHECK_EQ(a->closed_at_end, 0);
			if (b) {
				CHECK_EQ(b->calls, 2);
				CHECK_EQ(b->total_ns, 50);
				CHECK_EQ(b->self_ns, 50);
				CHECK_EQ(b->own_bytes, 120);
				CHECK_EQ(b->own_allocs, 2);
				CHECK_EQ(b->depth, 2);
			}
			CHECK_EQ(c->calls, 1);
			CHECK_EQ(c->total_ns, 60); /* closed at the thread's last event */
			CHECK_EQ(c->self_ns, 20);
			CHECK_EQ(c->own_bytes, 8);
			CHECK_EQ(c->closed_at_end, 1);
			if (ca) {
				CHECK_EQ(ca->total_ns, 40);
				CHECK_EQ(ca->self_ns, 40);
				CHECK_EQ(ca->closed_at_end, 1);
			}
		}
		/* by function, across the tree: A twice */
		size_t idx[3];
		size_t k = ht_fn_sort_funcs(p, false, idx);
		CHECK_EQ(k, 3);
		if (k == 3) {
			CHECK_EQ(p->funcs[idx[0]].addr, FN_B);
			CHECK_EQ(p->funcs[idx[1]].addr, FN_A);
			CHECK_EQ(p->funcs[idx[1]].calls, 2);
			CHECK_EQ(p->funcs[idx[1]].self_ns, 90);
			CHECK_EQ(p->funcs[idx[2]].own_bytes, 8);
		}
	}
	ht_fn_free(p);
	ht_model_free(m);
	ht_trace_free(t);
	free(file.p);

	/* an ENTER cut short inside a block: truncated, what came before kept */
	{
		buf_t b2 = { 0 };
		const char *argv[] = { "prog" };
		rec_process(&b2, 1, argv);
		blk_t k;
		blk_begin(&k, 1, 0);
		ev_enter(&k, 5, FN_A, FN_A);
		ev_enter(&k, 6, FN_A + 0x123456, FN_A);
		record(&b2, HT_REC_THREAD_BLOCK, &k.pl);
		free(k.pl.p);
		buf_t f2 = make_file(&b2, false, HT_FORMAT_MAJOR);
		f2.len -= 2; /* the file ends inside the second ENTER */
		int r2 = ht_reader_load_mem(f2.p, f2.len, NULL, &t);
		CHECK_EQ(r2, 0);
		CHECK_EQ(t->error, -HT_ETRUNC);
		CHECK_EQ(t->nfn_events, 1);
		p = NULL;
		CHECK_EQ(ht_fn_build(t, &p), 0);
		if (p) {
			CHECK_EQ(p->nthreads, 1);
			CHECK_EQ(p->enters, 1);
			CHECK_EQ(p->threads[0].closed_at_end, 1);
		}
		ht_fn_free(p);
		ht_trace_free(t);
		free(f2.p);
		free(b2.p);
	}

	/* a trace without function events: an empty profile, not an error */
	{
		buf_t b3 = basic_body(NULL, true);
		buf_t f3 = make_file(&b3, false, HT_FORMAT_MAJOR);
		CHECK_EQ(ht_reader_load_mem(f3.p, f3.len, NULL, &t), 0);
		p = NULL;
		CHECK_EQ(ht_fn_build(t, &p), 0);
		if (p)
			CHECK_EQ(p->nthreads, 0);
		ht_fn_free(p);
		ht_trace_free(t);
		free(f3.p);
		free(b3.p);
	}
	free(body.p);
}

/* A recursion 300 deep: the tree stops at HT_FN_MAX_DEPTH levels and folds
 * the rest into its deepest node, keeping every invariant. */
static void test_function_depth_cap(void)
{
	enum { DEEP = 300 };
	buf_t body = { 0 };
	const char *argv[] = { "prog" };
	rec_process(&body, 1, argv);
	blk_t k;
	blk_begin(&k, 9, 0);
	for (int i = 0; i < DEEP; i++)
		ev_enter(&k, (uint64_t)i * 10, FN_A, FN_A + 0x10);
	for (int i = 0; i < DEEP; i++)
		ev_exit(&k, (uint64_t)(DEEP + i) * 10);
	blk_end(&body, &k);
	buf_t file = make_file(&body, true, HT_FORMAT_MAJOR);
	ht_trace_t *t;
	CHECK_EQ(ht_reader_load_mem(file.p, file.len, NULL, &t), 0);
	ht_fn_profile_t *p = NULL;
	CHECK_EQ(ht_fn_build(t, &p), 0);
	if (p && p->nthreads == 1) {
		CHECK_EQ(p->nnodes, 1 + HT_FN_MAX_DEPTH); /* root + one node per level */
		CHECK(p->depth_capped);
		CHECK_EQ(p->threads[0].folded_calls, DEEP - HT_FN_MAX_DEPTH);
		CHECK_EQ(p->threads[0].max_depth, DEEP);
		CHECK_EQ(p->funcs[0].calls, DEEP);
		uint64_t calls = 0, folded = 0;
		int broken = 0;
		for (size_t i = 1; i < p->nnodes; i++) {
			const ht_fn_node_t *n = &p->nodes[i];
			calls += n->calls;
			folded += n->folded_calls;
			broken += n->self_ns > n->total_ns;
			if (n->parent != p->threads[0].root)
				broken += n->total_ns > p->nodes[n->parent].total_ns;
		}
		CHECK_EQ(calls + folded, DEEP);
		CHECK_EQ(broken, 0);
		/* the outermost call: from 0 to the last EXIT */
		CHECK_EQ(p->nodes[1].total_ns, (2 * DEEP - 1) * 10);
	}
	ht_fn_free(p);
	ht_trace_free(t);
	free(file.p);
	free(body.p);
}

/* ---- tags and phases (NAME, TAG, PHASE) ------------------------------------------- */

#define N_NODE 1
#define N_EDGE 2
#define N_OUTER 3
#define N_INNER 4

/* Thread 10 tags, retags and nests phases; thread 20 raises the heap while
 * they are open and defines every name, after thread 10's block used them.
 *   10 ALLOC 0x1000 100 (stack 1), 11 TAG node, 20 ALLOC 0x2000 50, 21 TAG
 *   edge, 22 TAG node (retag), 23 TAG 0x9999 (no block: ignored),
 *   30 begin outer (heap 150), 31 ALLOC 0x3000 10, 32 begin inner,
 *   33 begin inner (recursion; heap 160), 34 ALLOC 0x4000 20 (heap 180),
 *   35 FREE 0x1000 (80), 36 end inner (the inner one: net -80, peak +20),
 *   37 end of name 5 (never begun: ignored), 40 REALLOC 0x2000 -> 0x5000
 *   70 B (stack 2; free half at 39; heap 100, the tag carries over),
 *   [thread 20: 45 ALLOC 0x6000 1000 (heap 1100), 46 FREE it],
 *   50 end inner (net -60, peak 1100 - 160 = 940); outer open at the end
 *   (net 100 - 150 = -50, peak 950). END at 100. */
static buf_t marks_body(void)
{
	buf_t body = { 0 };
	const char *argv[] = { "prog" };
	uint64_t ips1[] = { 0x401010, 0x401100 }, ips2[] = { 0x401010, 0x401200 };
	rec_process(&body, 1, argv);
	rec_module(&body, 1, 0, 0, "/usr/bin/prog", 0x400000, 0x10000);
	blk_t k;
	blk_begin(&k, 10, 0);
	ev_stack(&k, 1, 2, ips1);
	ev_alloc(&k, 10, 0x1000, 100, 1);
	ev_tag(&k, 11, 0x1000, N_NODE);
	ev_alloc(&k, 20, 0x2000, 50, 0);
	ev_tag(&k, 21, 0x2000, N_EDGE);
	ev_tag(&k, 22, 0x2000, N_NODE);
	ev_tag(&k, 23, 0x9999, N_EDGE);
	ev_phase(&k, 30, N_OUTER, 1);
	ev_alloc(&k, 31, 0x3000, 10, 0);
	ev_phase(&k, 32, N_INNER, 1);
	ev_phase(&k, 33, N_INNER, 1);
	ev_alloc(&k, 34, 0x4000, 20, 0);
	ev_free(&k, 35, 0x1000);
	ev_phase(&k, 36, N_INNER, 0);
	ev_phase(&k, 37, 5, 0);
	ev_stack(&k, 2, 2, ips2);
	ev_realloc(&k, 40, 1, 0x2000, 0x5000, 70, 2);
	ev_phase(&k, 50, N_INNER, 0);
	blk_end(&body, &k);
	blk_begin(&k, 20, 0);
	ev_name(&k, N_NODE, "node");
	ev_name(&k, N_EDGE, "edge");
	ev_name(&k, N_OUTER, "outer");
	ev_name(&k, N_INNER, "inner");
	ev_name(&k, N_NODE, "not the first definition");
	ev_alloc(&k, 45, 0x6000, 1000, 0);
	ev_free(&k, 46, 0x6000);
	blk_end(&body, &k);
	rec_end(&body, 100, HT_END_EXIT, 0, 0);
	return body;
}

static const ht_phase_stat_t *phase_named(const ht_marks_t *mk, const char *name)
{
	for (size_t i = 0; i < mk->nphases; i++)
		if (!strcmp(mk->phases[i].name, name))
			return &mk->phases[i];
	return NULL;
}

/* Writes f(out, ...) to memory; returns the text (caller frees). */
#define CAPTURE(var, call)                                   \
	do {                                                 \
		size_t len_;                                 \
		FILE *out = open_memstream(&(var), &len_);   \
		CHECK_EQ((call), 0);                         \
		fclose(out);                                 \
	} while (0)

/* A section written with an emitter of the given kind to out. */
static int section_to(FILE *out, ht_emit_kind_t kind,
		      int (*section)(ht_emitter_t *, const ht_marks_t *), const ht_marks_t *mk)
{
	ht_emitter_t e;
	ht_emit_init(&e, out, kind);
	return section(&e, mk);
}

static void test_marks(void)
{
	for (int z = 0; z < 2; z++) {
		buf_t body = marks_body();
		buf_t file = make_file(&body, z, HT_FORMAT_MAJOR);
		ht_trace_t *t;
		int rc;
		ht_model_t *m = load(&file, &t, &rc);
		CHECK_EQ(rc, 0);
		CHECK_EQ(t->error, 0);
		CHECK(m != NULL);
		/* the reader: names resolve though defined after their use */
		CHECK_EQ(t->nevents, 8); /* 5 ALLOC, 2 FREE, 1 REALLOC: marks apart */
		CHECK_EQ(t->nmark_events, 10);
		CHECK_EQ(t->threads[0].nmark_events, 10);
		CHECK_EQ(t->nnames, 4);
		CHECK_STR(ht_trace_name(t, N_NODE), "node");
		CHECK(ht_trace_name(t, N_NODE) && !strcmp(ht_trace_name(t, N_NODE), "node"));
		CHECK_STR(ht_trace_name(t, N_INNER), "inner");
		CHECK(ht_trace_name(t, 5) == NULL);
		if (m) { /* the heap model is unchanged by the marks */
			CHECK_EQ(m->totals.allocations, 6);
			CHECK_EQ(m->totals.bytes_allocated, 1250);
			CHECK_EQ(m->totals.peak_heap_bytes, 1100);
			CHECK_EQ(m->totals.leaked_bytes, 100);
		}

		/* the merge: skipped by default, decoded with HT_MERGE_MARKS */
		ht_merge_t *mg;
		ht_event_t ev;
		int n = 0, marks = 0, bad = 0;
		CHECK_EQ(ht_merge_new(t, &mg), 0);
		while (ht_merge_next(mg, &ev))
			n++, marks += ev.type == HT_EV_TAG || ev.type == HT_EV_PHASE;
		ht_merge_free(mg);
		CHECK_EQ(n, 9); /* the REALLOC splits */
		CHECK_EQ(marks, 0);
		CHECK_EQ(ht_merge_new_ex(t, HT_MERGE_MARKS, UINT32_MAX, &mg), 0);
		uint64_t tags[4] = { 0 }, tag_names[4] = { 0 }, prev = 0, after_tag = 0;
		int ntags = 0, begins = 0, ends = 0, fn_events = 0;
		n = 0;
		while (ht_merge_next(mg, &ev)) {
			n++;
			bad += ev.time < prev;
			prev = ev.time;
			fn_events += ev.type == HT_EV_ENTER;
			if (ev.type == HT_EV_TAG && ntags < 4) {
				tag_names[ntags] = ev.name_id;
				tags[ntags++] = ev.addr;
			}
			if (ev.type == HT_EV_ALLOC && ev.time == 31)
				after_tag = ev.addr; /* its delta is from the TAG's address */
			if (ev.type == HT_EV_PHASE) {
				begins += ev.size == 1;
				ends += ev.size == 0;
			}
		}
		ht_merge_free(mg);
		CHECK_EQ(n, 19);
		CHECK_EQ(bad, 0);
		CHECK_EQ(fn_events, 0);
		CHECK_EQ(ntags, 4);
		CHECK_EQ(tags[0], 0x1000);
		CHECK_EQ(tags[3], 0x9999);
		CHECK_EQ(tag_names[1], N_EDGE);
		CHECK_EQ(tag_names[2], N_NODE);
		CHECK_EQ(after_tag, 0x3000);
		CHECK_EQ(begins, 3);
		CHECK_EQ(ends, 3);

		/* the model */
		ht_marks_t *mk = NULL;
		CHECK_EQ(ht_marks_build(t, &mk), 0);
		if (!mk || !m) {
			ht_marks_free(mk);
			ht_model_free(m);
			ht_trace_free(t);
			free(file.p);
			free(body.p);
			continue;
		}
		CHECK_EQ(mk->tag_events, 4);
		CHECK_EQ(mk->phase_events, 6);
		CHECK_EQ(mk->tags_ignored, 1);
		CHECK_EQ(mk->retagged, 1);
		CHECK_EQ(mk->unmatched_ends, 1);
		CHECK_EQ(mk->allocations, m->totals.allocations);
		CHECK_EQ(mk->bytes_allocated, m->totals.bytes_allocated);
		const ht_tag_stat_t *node = ht_marks_find_tag(mk, "node");
		const ht_tag_stat_t *edge = ht_marks_find_tag(mk, "edge");
		const ht_tag_stat_t *untagged = ht_marks_find_tag(mk, "untagged");
		CHECK(node && edge && untagged);
		CHECK(ht_marks_find_tag(mk, "nope") == NULL);
		if (node && edge && untagged) {
			/* 0x1000 freed, 0x2000 retagged then realloc'd, 0x5000 inherits */
			CHECK_EQ(node->allocations, 3);
			CHECK_EQ(node->bytes_allocated, 220);
			CHECK_EQ(node->live_blocks, 1);
			CHECK_EQ(node->live_bytes, 70);
			CHECK_EQ(node->nstacks, 3); /* ids 1, 0 and 2 */
			CHECK_EQ(edge->allocations, 0); /* its only block was retagged */
			CHECK_EQ(untagged->allocations, 3);
			CHECK_EQ(untagged->bytes_allocated, 1030);
			CHECK_EQ(untagged->live_blocks, 2);
			CHECK_EQ(untagged->live_bytes, 30);
		}
		size_t idx[8];
		size_t k = ht_marks_sort_tags(mk, idx);
		CHECK_EQ(k, 2); /* edge has nothing: left out; untagged last */
		if (k == 2) {
			CHECK(!strcmp(mk->tags[idx[0]].name, "node"));
			CHECK_EQ(idx[1], HT_MARKS_UNTAGGED);
		}
		const ht_phase_stat_t *outer = phase_named(mk, "outer");
		const ht_phase_stat_t *inner = phase_named(mk, "inner");
		CHECK_EQ(mk->nphases, 2);
		CHECK(outer && inner);
		if (outer && inner) {
			CHECK_EQ(outer->entered, 1);
			CHECK_EQ(outer->allocations, 3); /* 10, 20, 70: thread 20's is not inside */
			CHECK_EQ(outer->bytes_allocated, 100);
			CHECK_EQ(outer->net_live_bytes, -50);
			CHECK_EQ(outer->peak_inside, 950);
			CHECK_EQ(outer->open_at_end, 1);
			CHECK_EQ(inner->entered, 2);
			CHECK_EQ(inner->allocations, 2); /* once per name, however deep */
			CHECK_EQ(inner->bytes_allocated, 90);
			CHECK_EQ(inner->net_live_bytes, -140);
			CHECK_EQ(inner->peak_inside, 940);
			CHECK_EQ(inner->open_at_end, 0);
		}

		/* the writers */
		char *txt = NULL;
		CAPTURE(txt, ht_report_by_tag_text(out, mk, "x.ht"));
		CHECK_STR(txt, "  node                 3              220             1               70\n");
		CHECK_STR(txt, "  untagged             3            1,030             2               30\n");
		CHECK_STR(txt, "  total                6            1,250             3              100\n");
		CHECK_STR(txt, "1 block was tagged again");
		CHECK(txt && !strstr(txt, "edge")); /* nothing left under it */
		free(txt);
		CAPTURE(txt, section_to(out, HT_EMIT_TEXT, ht_section_phases, mk));
		CHECK_STR(txt, "PHASES (2)");
		CHECK_STR(txt, "  outer            1             3              100                -50              950  *\n");
		CHECK_STR(txt, "  inner            2             2               90               -140              940\n");
		CHECK_STR(txt, "1 entry was still open");
		CHECK_STR(txt, "1 phase end had no open phase");
		free(txt);
		CAPTURE(txt, section_to(out, HT_EMIT_JSON, ht_section_phases, mk));
		CHECK_STR(txt, "{\"phase\": \"outer\", \"entered\": 1, \"allocations\": 3, "
			       "\"bytes_allocated\": 100, \"net_live_bytes\": -50, "
			       "\"peak_inside_bytes\": 950, \"open_at_end\": 1}");
		free(txt);
		CAPTURE(txt, section_to(out, HT_EMIT_JSON, ht_section_tags, mk));
		CHECK_STR(txt, "{\"tag\": \"node\", \"untagged\": false, \"allocations\": 3, "
			       "\"bytes_allocated\": 220, \"live_blocks\": 1, \"live_bytes\": 70,");
		CHECK_STR(txt, "{\"stack_id\": 2, \"allocations\": 1, \"bytes_allocated\": 70, "
			       "\"live_blocks\": 1, \"live_bytes\": 70}");
		free(txt);
		/* --tag: stacks 1 and 2 share their leaf; cut to 1 frame they are one */
		ht_tag_report_opts_t to = { "x.ht", "node", 0, 1, 0 };
		CAPTURE(txt, ht_report_tag_text(out, m, mk, NULL, &to));
		CHECK_STR(txt, "CALL STACKS (3 of 3 distinct, all frames, at least 1 allocation)");
		CHECK_STR(txt, "prog+0x401100");
		CHECK_STR(txt, "(stack unknown)");
		free(txt);
		to.depth = 1;
		CAPTURE(txt, ht_report_tag_text(out, m, mk, NULL, &to));
		CHECK_STR(txt, "CALL STACKS (2 of 2 distinct, 1 frame, at least 1 allocation)");
		CHECK_STR(txt, "#1           2 allocations, 170 B, 1 live at the end\n"
			       "     prog+0x401010\n");
		CHECK(txt && !strstr(txt, "+0x401100"));
		free(txt);
		to.min_count = 2;
		CAPTURE(txt, ht_report_tag_text(out, m, mk, NULL, &to));
		CHECK_STR(txt, "CALL STACKS (1 of 2 distinct, 1 frame, at least 2 allocations)");
		CHECK_STR(txt, "1 stack with fewer than 2 allocations left out");
		free(txt);
		to.name = "edge";
		{
			size_t len_;
			FILE *out = open_memstream(&txt, &len_);
			CHECK_EQ(ht_report_tag_text(out, m, mk, NULL, &to), -ENOENT);
			fclose(out);
		}
		CHECK_STR(txt, "no allocations carry the tag 'edge'; the tags are: node");
		free(txt);

		ht_marks_free(mk);
		ht_model_free(m);
		ht_trace_free(t);
		free(file.p);
		free(body.p);
	}

	/* a trace without marks: every block untagged, no phases */
	{
		buf_t b = basic_body(NULL, true);
		buf_t f = make_file(&b, false, HT_FORMAT_MAJOR);
		ht_trace_t *t;
		ht_marks_t *mk = NULL;
		CHECK_EQ(ht_reader_load_mem(f.p, f.len, NULL, &t), 0);
		CHECK_EQ(ht_marks_build(t, &mk), 0);
		if (mk) {
			CHECK_EQ(mk->tag_events, 0);
			CHECK_EQ(mk->nphases, 0);
			CHECK_EQ(mk->tags[HT_MARKS_UNTAGGED].allocations, 4);
			CHECK_EQ(mk->tags[HT_MARKS_UNTAGGED].live_bytes, 110);
			char *txt = NULL;
			CAPTURE(txt, section_to(out, HT_EMIT_TEXT, ht_section_phases, mk));
			CHECK(txt && !*txt); /* no section at all */
			free(txt);
		}
		ht_marks_free(mk);
		ht_trace_free(t);
		free(f.p);
		free(b.p);
	}
}

/* Damage in the new events: the reader stops at the bad byte and keeps the
 * events before it, as for every other event. */
static void test_marks_damage(void)
{
	for (int which = 0; which < 4; which++) {
		buf_t body = { 0 };
		const char *argv[] = { "prog" };
		rec_process(&body, 1, argv);
		blk_t k;
		blk_begin(&k, 1, 0);
		ev_alloc(&k, 5, 0x1000, 10, 0);
		ev_name(&k, 1, "ok");
		ev_tag(&k, 6, 0x1000, 1);
		switch (which) {
		case 0: /* a NAME whose text runs past its block */
			put_u8(&k.pl, HT_EV_NAME);
			put_u(&k.pl, 2);
			put_u(&k.pl, 50);
			put(&k.pl, "short", 5);
			break;
		case 1: /* a NAME longer than any string may be */
			put_u8(&k.pl, HT_EV_NAME);
			put_u(&k.pl, 2);
			put_u(&k.pl, HT_MAX_STRING + 1);
			break;
		case 2: /* a PHASE with an overflowing varint */
			put_u8(&k.pl, HT_EV_PHASE);
			put(&k.pl, "\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f\x01", 12);
			break;
		case 3: /* an event type no minor defines yet (0xf is EXT since 1.4) */
			put_u8(&k.pl, 0x00);
			put_u(&k.pl, 1);
			break;
		}
		blk_end(&body, &k);
		buf_t f = make_file(&body, false, HT_FORMAT_MAJOR);
		ht_trace_t *t;
		CHECK_EQ(ht_reader_load_mem(f.p, f.len, NULL, &t), 0);
		CHECK_EQ(t->error, -HT_ECORRUPT);
		CHECK_STR(t->message, which == 3 ? "unknown event type (byte 0x00)"
				      : which == 2 ? "bad PHASE event" : "bad NAME event");
		CHECK_EQ(t->nevents, 1); /* the ALLOC before it */
		CHECK_EQ(t->nmark_events, 1);
		CHECK_STR(ht_trace_name(t, 1), "ok");
		ht_marks_t *mk = NULL;
		CHECK_EQ(ht_marks_build(t, &mk), 0);
		if (mk) {
			const ht_tag_stat_t *g = ht_marks_find_tag(mk, "ok");
			CHECK(g && g->live_bytes == 10);
		}
		ht_marks_free(mk);
		ht_trace_free(t);
		free(f.p);
		free(body.p);
	}
	/* cut inside a TAG: truncated; an undefined name shows as #ID */
	{
		buf_t body = { 0 };
		const char *argv[] = { "prog" };
		rec_process(&body, 1, argv);
		blk_t k;
		blk_begin(&k, 1, 0);
		ev_alloc(&k, 5, 0x1000, 10, 0);
		ev_tag(&k, 6, 0x1000, 7);
		ev_phase(&k, 7, 8, 1);
		ev_tag(&k, 8, 0x1000, 300);
		blk_end(&body, &k);
		buf_t f = make_file(&body, false, HT_FORMAT_MAJOR);
		f.len -= 1; /* the last TAG loses its name id's last byte */
		ht_trace_t *t;
		CHECK_EQ(ht_reader_load_mem(f.p, f.len, NULL, &t), 0);
		CHECK_EQ(t->error, -HT_ETRUNC);
		CHECK_EQ(t->nmark_events, 2);
		ht_marks_t *mk = NULL;
		CHECK_EQ(ht_marks_build(t, &mk), 0);
		if (mk) {
			CHECK(ht_marks_find_tag(mk, "#7") != NULL);
			CHECK_EQ(mk->nphases, 1);
			CHECK(mk->nphases == 1 && !strcmp(mk->phases[0].name, "#8"));
			CHECK(mk->nphases == 1 && mk->phases[0].open_at_end == 1);
		}
		ht_marks_free(mk);
		ht_trace_free(t);
		free(f.p);
		free(body.p);
	}
}

/* ---- pools and snapshots -------------------------------------------- */

#define P_A 0xa0 /* pool ids: the address of the program's pool object */
#define P_B 0xb0

/* Two threads. Stack 1 makes the pool blocks, stack 2 the malloc'd one.
 *   thread 10: CREATE A "arena" @1; PALLOC A 0x1000/32 @2, 0x1020/32 @3,
 *     0x1040/16 @4; free 0x1020 on its own @5; malloc 0x5000/100 @6;
 *     SNAPSHOT "snap" @7 (148 B in 3 blocks: stack 2 100 B, stack 1 48 B);
 *     RESET A @10 (frees 0x1000 and 0x1040); PALLOC A 0x1000/8 @11 (the
 *     reset address again: no reuse); PALLOC B 0x2000/64 @12 (B never
 *     created: an unnamed row); SNAPSHOT on the signal @13 (172 B in 3
 *     blocks: stack 2 100 B, stack 1 72 B)
 *   thread 20: DESTROY A @15 (frees 0x1000, made on the other thread); an
 *     unknown op 7 on A @16 (ignored); CREATE A again @17 (a new row);
 *     PALLOC A 0x3000/4 @18
 * Totals: 7 allocations, 256 B, 4 frees, peak 172 B at 12, leaked 0x5000,
 * 0x2000 and 0x3000: 3 blocks, 168 B. */
static buf_t pools_body(void)
{
	buf_t body = { 0 };
	const char *argv[] = { "prog" };
	uint64_t ips1[] = { 0x401010 }, ips2[] = { 0x401020 };
	rec_process(&body, 1, argv);
	blk_t k;
	blk_begin(&k, 10, 0);
	ev_name(&k, 1, "arena");
	ev_name(&k, 2, "snap");
	ev_stack(&k, 1, 1, ips1);
	ev_stack(&k, 2, 1, ips2);
	ev_pool(&k, 1, P_A, HT_POOL_CREATE, 1);
	ev_palloc(&k, 2, 0x1000, 32, 1, P_A);
	ev_palloc(&k, 3, 0x1020, 32, 1, P_A);
	ev_palloc(&k, 4, 0x1040, 16, 1, P_A);
	ev_free(&k, 5, 0x1020);
	ev_alloc(&k, 6, 0x5000, 100, 2);
	ev_snapshot(&k, 7, 2);
	ev_pool(&k, 10, P_A, HT_POOL_RESET, 0);
	ev_palloc(&k, 11, 0x1000, 8, 1, P_A);
	ev_palloc(&k, 12, 0x2000, 64, 1, P_B);
	ev_snapshot(&k, 13, 0);
	blk_end(&body, &k);
	blk_begin(&k, 20, 14);
	ev_pool(&k, 15, P_A, HT_POOL_DESTROY, 0);
	ev_pool(&k, 16, P_A, 7, 0);
	ev_pool(&k, 17, P_A, HT_POOL_CREATE, 0);
	ev_palloc(&k, 18, 0x3000, 4, 1, P_A);
	blk_end(&body, &k);
	rec_end(&body, 30, HT_END_EXIT, 0, 0);
	return body;
}

static void test_pools(void)
{
	for (int z = 0; z < 2; z++) {
		buf_t body = pools_body();
		buf_t file = make_file(&body, z, HT_FORMAT_MAJOR);
		ht_trace_t *t;
		int rc;
		ht_model_t *m = load(&file, &t, &rc);
		CHECK_EQ(rc, 0);
		CHECK_EQ(t->error, 0);
		CHECK(m != NULL);
		/* the reader: PALLOC counts as a heap event, POOL and SNAPSHOT apart */
		CHECK_EQ(t->nevents, 8); /* 6 PALLOC, 1 ALLOC, 1 FREE */
		CHECK_EQ(t->npool_events, 5);
		CHECK_EQ(t->nsnapshot_events, 2);
		CHECK_EQ(t->nmark_events, 0);

		/* the plain merge: PALLOC as ALLOC, the pool ops' frees, no POOL */
		ht_merge_t *mg;
		ht_event_t ev;
		int n = 0, allocs = 0, pooled_allocs = 0, frees = 0, op_frees = 0, other = 0;
		uint64_t op_free_addr[4] = { 0 }, op_free_time[4] = { 0 };
		uint32_t op_free_thread[4] = { 0 };
		CHECK_EQ(ht_merge_new(t, &mg), 0);
		while (ht_merge_next(mg, &ev)) {
			n++;
			if (ev.type == HT_EV_ALLOC) {
				allocs++;
				if (ev.pooled) {
					pooled_allocs++;
					CHECK_EQ(ev.fn, HT_FN_CUSTOM);
					CHECK(ev.pool == P_A || ev.pool == P_B);
				}
			} else if (ev.type == HT_EV_FREE) {
				frees++;
				/* 0x1020 was a pool block freed on its own */
				if (ev.addr == 0x1020)
					CHECK(ev.pooled && !ev.from_pool_op && ev.pool == P_A);
				if (ev.from_pool_op && op_frees < 4) {
					op_free_addr[op_frees] = ev.addr;
					op_free_time[op_frees] = ev.time;
					op_free_thread[op_frees] = ev.thread;
					op_frees++;
				}
			} else {
				other++;
			}
		}
		ht_merge_free(mg);
		CHECK_EQ(n, 11);
		CHECK_EQ(allocs, 7);
		CHECK_EQ(pooled_allocs, 6);
		CHECK_EQ(frees, 4);
		CHECK_EQ(op_frees, 3);
		CHECK_EQ(other, 0);
		/* RESET frees in allocation order at its stamp; DESTROY's free is
		 * on the destroying thread (index 1) */
		CHECK_EQ(op_free_addr[0], 0x1000);
		CHECK_EQ(op_free_addr[1], 0x1040);
		CHECK_EQ(op_free_addr[2], 0x1000);
		CHECK_EQ(op_free_time[0], 10);
		CHECK_EQ(op_free_time[1], 10);
		CHECK_EQ(op_free_time[2], 15);
		CHECK_EQ(op_free_thread[1], 0);
		CHECK_EQ(op_free_thread[2], 1);

		/* with the flags: POOL before its frees, SNAPSHOTs in time order */
		CHECK_EQ(ht_merge_new_ex(t, HT_MERGE_POOLS | HT_MERGE_SNAPSHOTS, UINT32_MAX, &mg), 0);
		int pools = 0, snaps = 0;
		uint8_t prev_type = 0;
		uint64_t prev_op = 99, snap_names[2] = { 9, 9 };
		n = 0;
		while (ht_merge_next(mg, &ev)) {
			n++;
			if (ev.type == HT_EV_POOL)
				pools++;
			if (ev.type == HT_EV_SNAPSHOT && snaps < 2)
				snap_names[snaps++] = ev.name_id;
			if (ev.type == HT_EV_FREE && ev.from_pool_op)
				CHECK(prev_type == HT_EV_FREE ||
				      (prev_type == HT_EV_POOL && prev_op != HT_POOL_CREATE));
			prev_type = ev.type;
			prev_op = ev.type == HT_EV_POOL ? ev.size : 99;
		}
		ht_merge_free(mg);
		CHECK_EQ(n, 18);
		CHECK_EQ(pools, 5);
		CHECK_EQ(snaps, 2);
		CHECK_EQ(snap_names[0], 2);
		CHECK_EQ(snap_names[1], 0);

		if (m) {
			const ht_totals_t *tt = &m->totals;
			CHECK_EQ(tt->allocations, 7);
			CHECK_EQ(tt->bytes_allocated, 256);
			CHECK_EQ(tt->frees, 4);
			CHECK_EQ(tt->ignored_frees, 0);
			CHECK_EQ(tt->reused_addresses, 0);
			CHECK_EQ(tt->peak_heap_bytes, 172);
			CHECK_EQ(tt->peak_time_ns, 12);
			CHECK_EQ(tt->leaked_blocks, 3);
			CHECK_EQ(tt->leaked_bytes, 168);

			/* pools: A, B, then A created again after its DESTROY */
			CHECK_EQ(m->npools, 3);
			if (m->npools == 3) {
				const ht_pool_stat_t *a = &m->pools[0], *b = &m->pools[1], *a2 = &m->pools[2];
				CHECK_EQ(a->id, P_A);
				CHECK_EQ(a->name_id, 1);
				CHECK_EQ(a->allocations, 4);
				CHECK_EQ(a->bytes_allocated, 88);
				CHECK_EQ(a->resets, 1);
				CHECK_EQ(a->freed_by_ops, 3);
				CHECK(a->destroyed);
				CHECK_EQ(a->live_blocks, 0);
				CHECK_EQ(a->live_bytes, 0);
				CHECK_EQ(b->id, P_B);
				CHECK_EQ(b->name_id, 0);
				CHECK_EQ(b->allocations, 1);
				CHECK_EQ(b->live_blocks, 1);
				CHECK_EQ(b->live_bytes, 64);
				CHECK(!b->destroyed);
				CHECK_EQ(a2->id, P_A);
				CHECK_EQ(a2->allocations, 1);
				CHECK_EQ(a2->live_bytes, 4);
				CHECK_EQ(a2->resets, 0);
				CHECK(!a2->destroyed);
			}

			/* snapshots: live figures and top sites by live bytes */
			CHECK_EQ(m->nsnapshots, 2);
			if (m->nsnapshots == 2) {
				const ht_snapshot_t *s0 = &m->snapshots[0], *s1 = &m->snapshots[1];
				CHECK_EQ(s0->name_id, 2);
				CHECK_EQ(s0->time, 7);
				CHECK_EQ(s0->live_bytes, 148);
				CHECK_EQ(s0->live_blocks, 3);
				CHECK_EQ(s0->ntop, 2);
				CHECK_EQ(m->sites[s0->top[0].site].stack_id, 2);
				CHECK_EQ(s0->top[0].live_bytes, 100);
				CHECK_EQ(m->sites[s0->top[1].site].stack_id, 1);
				CHECK_EQ(s0->top[1].live_bytes, 48);
				CHECK_EQ(s0->top[1].live_blocks, 2);
				CHECK_EQ(s1->name_id, 0);
				CHECK_EQ(s1->live_bytes, 172);
				CHECK_EQ(s1->live_blocks, 3);
				CHECK_EQ(s1->ntop, 2);
				CHECK_EQ(s1->top[1].live_bytes, 72);
			}

			/* the writers: sections and members only when present */
			char *txt = NULL, *js = NULL;
			ht_report_opts_t ro = { "x", 0 };
			CAPTURE(txt, report_with_leaks(ht_report_text, out, m, &ro));
			CAPTURE(js, report_with_leaks(ht_report_json, out, m, NULL));
			CHECK_STR(txt, "\nPOOLS ---");
			CHECK_STR(txt, "  arena                           4             88       1        yes            0              0\n");
			CHECK_STR(txt, "  #176                            1             64       0         no            1             64\n");
			CHECK_STR(txt, "\nSNAPSHOTS ---");
			CHECK_STR(txt, "  snap ");
			CHECK_STR(txt, "  signal ");
			CHECK_STR(js, "\"pools\": [");
			CHECK_STR(js, "\"name\": \"arena\", \"allocations\": 4, \"bytes_allocated\": 88, \"resets\": 1, \"freed_by_reset_or_destroy\": 3, \"destroyed\": true, \"live_blocks\": 0, \"live_bytes\": 0}");
			CHECK_STR(js, "\"snapshots\": [");
			CHECK_STR(js, "\"name\": null, \"name_id\": 0, \"signal\": true");
			free(txt);
			free(js);
		}
		ht_model_free(m);
		ht_trace_free(t);
		free(file.p);
		free(body.p);
	}

	/* no pools, no snapshots: neither section nor member */
	{
		buf_t body = marks_body();
		buf_t file = make_file(&body, false, HT_FORMAT_MAJOR);
		ht_trace_t *t;
		int rc;
		ht_model_t *m = load(&file, &t, &rc);
		CHECK(m != NULL);
		if (m) {
			char *txt = NULL, *js = NULL;
			CAPTURE(txt, report_with_leaks(ht_report_text, out, m, NULL));
			CAPTURE(js, report_with_leaks(ht_report_json, out, m, NULL));
			CHECK(!strstr(txt, "POOLS") && !strstr(txt, "SNAPSHOTS"));
			CHECK(!strstr(js, "\"pools\"") && !strstr(js, "\"snapshots\""));
			CHECK_EQ(m->npools, 0);
			CHECK_EQ(m->nsnapshots, 0);
			free(txt);
			free(js);
		}
		ht_model_free(m);
		ht_trace_free(t);
		free(file.p);
		free(body.p);
	}

	/* damage in the new events: the reader keeps what came before */
	for (int which = 0; which < 3; which++) {
		buf_t body = { 0 };
		const char *argv[] = { "prog" };
		rec_process(&body, 1, argv);
		blk_t k;
		blk_begin(&k, 1, 0);
		ev_palloc(&k, 5, 0x1000, 10, 0, P_A);
		switch (which) {
		case 0: /* a PALLOC cut before its pool id */
			put_u8(&k.pl, HT_EV_PALLOC);
			put_u(&k.pl, 1);
			put_s(&k.pl, 0x10);
			put_u(&k.pl, 8);
			put_u(&k.pl, 0);
			break;
		case 1: /* a POOL with an overflowing varint */
			put_u8(&k.pl, HT_EV_POOL);
			put(&k.pl, "\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f\x01", 12);
			break;
		case 2: /* a SNAPSHOT without its name */
			put_u8(&k.pl, HT_EV_SNAPSHOT);
			put_u(&k.pl, 1);
			break;
		}
		blk_end(&body, &k);
		buf_t f = make_file(&body, false, HT_FORMAT_MAJOR);
		ht_trace_t *t;
		CHECK_EQ(ht_reader_load_mem(f.p, f.len, NULL, &t), 0);
		CHECK_EQ(t->error, -HT_ECORRUPT);
		CHECK_STR(t->message, which == 0 ? "bad PALLOC event" : which == 1 ? "bad POOL event"
										 : "bad SNAPSHOT event");
		CHECK_EQ(t->nevents, 1); /* the PALLOC before it */
		ht_model_t *m = NULL;
		CHECK_EQ(ht_model_build(t, &m), 0);
		if (m) {
			CHECK_EQ(m->totals.leaked_bytes, 10);
			CHECK_EQ(m->npools, 1);
		}
		ht_model_free(m);
		ht_trace_free(t);
		free(f.p);
		free(body.p);
	}
}

/* ---- EXT events: descriptors and handles ------------------------------- */

/* EXT kind, time, then the payload's varint fields (plus extra bytes). */
static void ev_ext(blk_t *k, unsigned kind, uint64_t time, const uint64_t *f, int n,
		   const char *extra, size_t nextra)
{
	buf_t pay = { 0 };
	for (int i = 0; i < n; i++)
		put_u(&pay, f[i]);
	if (nextra)
		put(&pay, extra, nextra);
	put_u8(&k->pl, (uint8_t)(HT_EV_EXT | kind << 4));
	put_u(&k->pl, time - k->time);
	put_u(&k->pl, pay.len);
	if (pay.len)
		put(&k->pl, pay.p, pay.len);
	k->time = time;
	free(pay.p);
}

static void test_ext(void)
{
	buf_t body = { 0 };
	const char *argv[] = { "prog" };
	uint64_t ips1[] = { 0x401010 }, ips2[] = { 0x401020 };
	rec_process(&body, 1, argv);
	blk_t k;
	blk_begin(&k, 10, 0);
	ev_name(&k, 1, "job");
	ev_stack(&k, 1, 1, ips1);
	ev_stack(&k, 2, 1, ips2);
	uint64_t o5[] = { 5, 1, HT_FDCALL_OPEN }, o6[] = { 6, 1, HT_FDCALL_OPEN };
	uint64_t o7[] = { 7, 2, HT_FDCALL_PIPE }, o1[] = { 1, 2, HT_FDCALL_DUP };
	uint64_t c5[] = { 5 }, c9[] = { 9 };
	ev_ext(&k, HT_EXT_FD_OPEN, 1, o5, 3, NULL, 0);
	ev_alloc(&k, 2, 0x1000, 10, 1);
	ev_ext(&k, HT_EXT_FD_OPEN, 3, o6, 3, NULL, 0);
	ev_ext(&k, 14, 4, o5, 3, NULL, 0);	   /* a kind of a later minor: skipped */
	ev_ext(&k, HT_EXT_FD_CLOSE, 5, c5, 1, "\x07\x07", 2); /* extra fields ignored */
	ev_ext(&k, HT_EXT_FD_CLOSE, 6, c9, 1, NULL, 0); /* never opened: nothing */
	ev_ext(&k, HT_EXT_FD_OPEN, 7, o7, 3, NULL, 0);
	ev_ext(&k, HT_EXT_FD_OPEN, 8, o1, 3, NULL, 0); /* a standard one: never a leak */
	uint64_t a[][3] = { { 1, 100, 1 }, { 1, 101, 1 }, { 1, 102, 2 }, { 1, 101, 2 } };
	for (int i = 0; i < 4; i++) /* 101 acquired again: it moves to stack 2 */
		ev_ext(&k, HT_EXT_HANDLE_ACQUIRE, 10 + (uint64_t)i, a[i], 3, NULL, 0);
	uint64_t r100[] = { 1, 100 }, r555[] = { 1, 555 };
	ev_ext(&k, HT_EXT_HANDLE_RELEASE, 20, r100, 2, NULL, 0);
	ev_ext(&k, HT_EXT_HANDLE_RELEASE, 21, r555, 2, NULL, 0); /* never acquired */
	blk_end(&body, &k);
	rec_end(&body, 30, HT_END_EXIT, 0, 0);
	buf_t file = make_file(&body, false, HT_FORMAT_MAJOR);
	ht_trace_t *t;
	int rc;
	ht_model_t *m = load(&file, &t, &rc);
	CHECK_EQ(rc, 0);
	CHECK(m != NULL);
	if (!m)
		return;
	CHECK_EQ(t->error, 0);
	CHECK_EQ(t->nevents, 1);
	CHECK_EQ(t->next_events, 13);
	CHECK_EQ(m->totals.allocations, 1);

	/* the plain merge never returns them; HT_MERGE_EXT does, decoded */
	ht_merge_t *mg;
	ht_event_t ev;
	int n = 0, next = 0;
	CHECK_EQ(ht_merge_new(t, &mg), 0);
	while (ht_merge_next(mg, &ev))
		n++;
	ht_merge_free(mg);
	CHECK_EQ(n, 1);
	CHECK_EQ(ht_merge_new_ex(t, HT_MERGE_EXT, UINT32_MAX, &mg), 0);
	while (ht_merge_next(mg, &ev)) {
		if (ev.type != HT_EV_EXT)
			continue;
		if (next == 0) {
			CHECK_EQ(ev.fn, HT_EXT_FD_OPEN);
			CHECK_EQ(ev.addr, 5);
			CHECK_EQ(ev.stack_id, 1);
			CHECK_EQ(ev.size, HT_FDCALL_OPEN);
			CHECK_EQ(ev.time, 1);
		} else if (next == 2) {
			CHECK_EQ(ev.fn, 14);
		} else if (next == 8) {
			CHECK_EQ(ev.fn, HT_EXT_HANDLE_ACQUIRE);
			CHECK_EQ(ev.name_id, 1);
			CHECK_EQ(ev.addr, 101);
			CHECK_EQ(ev.stack_id, 1);
		}
		next++;
	}
	ht_merge_free(mg);
	CHECK_EQ(next, 13);

	/* the replay: fds 6 (stack 1, open) and 7 (stack 2, pipe) leaked */
	ht_resources_t *r;
	CHECK_EQ(ht_resources_build(t, &r), 0);
	if (r) {
		CHECK_EQ(r->fds_leaked, 2);
		CHECK_EQ(r->fds_opened, 4);
		CHECK_EQ(r->fds_closed, 1);
		CHECK_EQ(r->nfd_leaks, 2);
		if (r->nfd_leaks == 2) {
			CHECK_EQ(r->fd_leaks[0].fds[0], 6); /* equal counts: earliest first */
			CHECK_EQ(r->fd_leaks[0].call, HT_FDCALL_OPEN);
			CHECK_EQ(r->fd_leaks[0].stack_id, 1);
			CHECK_EQ(r->fd_leaks[1].fds[0], 7);
			CHECK_STR(ht_fdcall_name(r->fd_leaks[1].call), "pipe");
		}
		CHECK_EQ(r->nkinds, 1);
		CHECK_EQ(r->handles_held, 2);
		if (r->nkinds == 1) {
			const ht_handle_kind_t *hk = &r->kinds[0];
			CHECK_STR(hk->name, "job");
			CHECK_EQ(hk->acquired, 4);
			CHECK_EQ(hk->released, 1);
			CHECK_EQ(hk->held, 2);
			CHECK_EQ(hk->nsites, 1); /* 101 and 102, both now from stack 2 */
			if (hk->nsites == 1) {
				CHECK_EQ(hk->sites[0].stack_id, 2);
				CHECK_EQ(hk->sites[0].count, 2);
			}
		}
		ht_resources_free(r);
	}
	ht_model_free(m);
	ht_trace_free(t);
	free(file.p);

	/* fields running past the payload's declared length: corrupt */
	buf_t body2 = { 0 };
	rec_process(&body2, 1, argv);
	blk_begin(&k, 10, 0);
	ev_alloc(&k, 1, 0x1000, 10, 0);
	put_u8(&k.pl, HT_EV_EXT | HT_EXT_FD_OPEN << 4);
	put_u(&k.pl, 1);
	put_u(&k.pl, 1); /* one byte: fd only, no stack or call */
	put_u8(&k.pl, 5);
	blk_end(&body2, &k);
	buf_t f2 = make_file(&body2, false, HT_FORMAT_MAJOR);
	CHECK_EQ(ht_reader_load_mem(f2.p, f2.len, NULL, &t), 0);
	CHECK_EQ(t->error, -HT_ECORRUPT);
	CHECK_STR(t->message, "bad EXT event");
	CHECK_EQ(t->nevents, 1);
	ht_trace_free(t);
	free(f2.p);
	free(body2.p);
	free(body.p);
}

/* ---- sampled traces (format 1.4) ------------------------------------------------- */

/* PROCESS of a sampled run: flags HT_PROC_SAMPLED, then the rate unless
 * rate is 0 (a record without it must read as unsampled). */
static void rec_process_sampled(buf_t *body, uint64_t rate)
{
	buf_t pl = { 0 };
	put_u(&pl, 1);
	put_u(&pl, 4);
	put_str(&pl, "test");
	put_u(&pl, 4242);
	put_u(&pl, 1);
	put_u(&pl, 1700000000000000000ULL);
	put_u(&pl, 123456789);
	put_u(&pl, 4096);
	put_u(&pl, HT_PROC_SAMPLED);
	put_u(&pl, 64);
	put_str(&pl, "/usr/bin/prog");
	put_u(&pl, 0);
	if (rate)
		put_u(&pl, rate);
	record(body, HT_REC_PROCESS, &pl);
	free(pl.p);
}

static bool near(double a, double b)
{
	return fabs(a - b) <= 1e-9 * (fabs(b) + 1);
}

static void test_sampled(void)
{
	for (int with_rate = 0; with_rate < 2; with_rate++) {
		buf_t body = { 0 };
		rec_process_sampled(&body, with_rate ? 1000 : 0);
		blk_t k;
		blk_begin(&k, 4242, 0);
		uint64_t ip1[] = { 0x1000 }, ip2[] = { 0x2000 };
		ev_stack(&k, 1, 1, ip1);
		ev_stack(&k, 2, 1, ip2);
		ev_alloc(&k, 10, 0x10000, 1000, 1); /* p = 1-e^-1: leaked */
		ev_alloc(&k, 20, 0x20000, 4000, 2); /* p = 1-e^-4: freed */
		ev_free(&k, 30, 0x20000);
		blk_end(&body, &k);
		buf_t pl = { 0 }; /* END with the agent's counts */
		put_u(&pl, 40);
		put_u(&pl, HT_END_EXIT);
		put_u(&pl, 0);
		put_u(&pl, 0);
		put_u(&pl, 0);
		put_u(&pl, 10);
		put_u(&pl, 7);
		put_u(&pl, 12345);
		record(&body, HT_REC_END, &pl);
		free(pl.p);
		buf_t file = make_file(&body, false, HT_FORMAT_MAJOR);
		ht_trace_t *t;
		int rc;
		ht_model_t *m = load(&file, &t, &rc);
		CHECK_EQ(rc, 0);
		CHECK(m != NULL);
		if (m) {
			CHECK_EQ(t->error, 0);
			CHECK_EQ(t->sample_rate, with_rate ? 1000 : 0);
			CHECK(t->have_end_counts);
			const ht_site_t *a = site_of(m, 1), *b = site_of(m, 2);
			CHECK(a && b);
			if (with_rate && a && b) {
				double pa = 1 - exp(-1.0), pb = 1 - exp(-4.0);
				CHECK(near(a->est.allocations, 1 / pa));
				CHECK(near(a->est.bytes_allocated, 1000 / pa));
				CHECK(near(a->est.var_allocations, (1 - pa) / (pa * pa)));
				CHECK(near(a->est.var_bytes_allocated, 1e6 * (1 - pa) / (pa * pa)));
				CHECK(near(a->est.leaked_blocks, 1 / pa));
				CHECK_EQ(a->allocations, 2); /* 1.58 rounded */
				CHECK_EQ(a->bytes_allocated, 1582);
				CHECK_EQ(a->leaked_bytes, 1582);
				CHECK_EQ(b->allocations, 1); /* 1.019 */
				CHECK_EQ(b->bytes_allocated, 4075);
				CHECK_EQ(b->frees, 1);
				CHECK_EQ(b->leaked_blocks, 0);
				/* totals: END's exact counts; the rest estimates */
				CHECK_EQ(m->totals.allocations, 10);
				CHECK_EQ(m->totals.frees, 7);
				CHECK_EQ(m->totals.bytes_allocated, 12345);
				CHECK_EQ(m->totals.leaked_bytes, 1582);
				CHECK_EQ(m->totals.peak_heap_bytes, 1582 + 4075);
				CHECK_EQ(m->totals.temporary, 0);
				CHECK(near(m->totals.est.var_peak_bytes,
					   1e6 * (1 - pa) / (pa * pa) + 16e6 * (1 - pb) / (pb * pb)));
			} else if (a && b) { /* no rate: every block counts once */
				CHECK_EQ(a->allocations, 1);
				CHECK_EQ(m->totals.allocations, 2);
				CHECK_EQ(m->totals.leaked_bytes, 1000);
			}
		}
		ht_model_free(m);
		ht_trace_free(t);
		free(file.p);
		free(body.p);
	}
}


/* ---- THREAD_COLUMNS: the same events as THREAD_BLOCKs (format 1.5) ----------------- */

/* body with every THREAD_BLOCK record rewritten as THREAD_COLUMNS, the way
 * the agent wrote them in format 1.5 (common/columns.h), or as
 * THREAD_PACKED (packed: common/packed.h) with nstreams coding streams given
 * out like the agent does: a thread keeps its stream, a new one takes a
 * free stream or the least recently used; with batch, as the blocks of
 * a THREAD_BATCH (format 1.7): stack ids in column 0, 254 size classes. */
/* as_layout's layout: each block joined when its stream's previous block
 * had no DELTA code, as the agent chooses (flusher.c) */
#define LAYOUT_AGENT 0x100u
#define MAX_BLOCKS 4096

/* body with its THREAD_BLOCKs as THREAD_COLUMNS or, packed, THREAD_PACKED
 * records split with layout (HT_PK_*, or LAYOUT_AGENT); joined[i], when
 * given, gets the i-th block's batch header flags (HT_BATCH_JOINED when
 * its address codes went to column 0, HT_BATCH_SIZES). */
static buf_t as_layout_flags(const buf_t *body, bool packed, unsigned nstreams, unsigned layout,
			     uint8_t *joined)
{
	size_t nblocks = 0;
	buf_t out = { 0 };
	struct {
		ht_pk_writer_t *w;
		uint64_t tid, last_use;
	} st[HT_PK_STREAMS] = { { 0 } };
	uint64_t clock = 0;
	size_t pos = 0;
	while (pos < body->len) {
		uint8_t tag = body->p[pos++];
		uint64_t len = 0;
		unsigned shift = 0;
		for (;;) {
			uint8_t c = body->p[pos++];
			len |= (uint64_t)(c & 0x7f) << shift;
			shift += 7;
			if (!(c & 0x80))
				break;
		}
		const uint8_t *pl = body->p + pos;
		pos += len;
		if (tag != HT_REC_THREAD_BLOCK) {
			buf_t r = { 0 };
			put(&r, pl, len);
			record(&out, tag, &r);
			free(r.p);
			continue;
		}
		size_t q = 0, n;
		uint64_t tid = 0, base = 0;
		CHECK((n = ht_varint_get(pl, len, &tid)) > 0);
		q += n;
		CHECK((n = ht_varint_get(pl + q, len - q, &base)) > 0);
		q += n;
		uint8_t *col[HT_NCOLS];
		size_t clen[HT_NCOLS];
		for (unsigned c = 0; c < HT_NCOLS; c++)
			col[c] = malloc(2 * len + 64); /* address codes may outgrow len */
		buf_t r = { 0 };
		put_u(&r, tid);
		put_u(&r, base);
		if (packed) {
			unsigned s = 0;
			bool fresh = true;
			for (unsigned i = 0; i < nstreams; i++)
				if (st[i].w && st[i].tid == tid) {
					s = i;
					fresh = false;
				}
			if (fresh) {
				for (unsigned i = 0; i < nstreams; i++) {
					if (!st[i].w) {
						s = i;
						break;
					}
					if (st[i].last_use < st[s].last_use)
						s = i;
				}
				free(st[s].w);
				st[s].w = calloc(1, sizeof(*st[s].w));
				st[s].tid = tid;
			}
			st[s].last_use = ++clock;
			unsigned lay = layout;
			if (layout == LAYOUT_AGENT)
				lay = HT_PK_BATCH | HT_PK_SIZES | HT_PK_RANK | HT_PK_FREED |
				      (st[s].w->join_next ? HT_PK_JOINED : HT_PK_FREES);
			CHECK(nblocks < MAX_BLOCKS);
			if (joined)
				joined[nblocks] = (uint8_t)ht_pk_flags_of_layout(lay);
			nblocks++;
			CHECK(ht_packed_split(pl + q, len - q, col, clen, 2 * len + 64, st[s].w, lay));
			put_u(&r, (uint64_t)s << 1 | fresh);
		} else {
			CHECK(ht_columns_split(pl + q, len - q, col, clen));
		}
		for (unsigned c = 0; c < HT_NCOLS; c++)
			put_u(&r, clen[c]);
		for (unsigned c = 0; c < HT_NCOLS; c++) {
			put(&r, col[c], clen[c]);
			free(col[c]);
		}
		record(&out, packed ? HT_REC_THREAD_PACKED : HT_REC_THREAD_COLUMNS, &r);
		free(r.p);
	}
	for (unsigned i = 0; i < HT_PK_STREAMS; i++)
		free(st[i].w);
	return out;
}

static buf_t as_layout(const buf_t *body, bool packed, unsigned nstreams, unsigned layout)
{
	return as_layout_flags(body, packed, nstreams, layout, NULL);
}

static buf_t as_columns(const buf_t *body)
{
	return as_layout(body, false, 0, 0);
}

static char *json_of(const buf_t *body, int *err)
{
	buf_t file = make_file(body, true, HT_FORMAT_MAJOR);
	ht_trace_t *t;
	int rc;
	ht_model_t *m = load(&file, &t, &rc);
	char *out = NULL;
	size_t len = 0;
	*err = t ? t->error : -1;
	if (m) {
		FILE *f = open_memstream(&out, &len);
		CHECK_EQ(report_with_leaks(ht_report_json, f, m, NULL), 0);
		fclose(f);
	}
	ht_model_free(m);
	ht_trace_free(t);
	free(file.p);
	return out;
}

static void test_columns(void)
{
	/* every kind of event: heap, functions, tags and phases, pools */
	buf_t bodies[] = { basic_body(NULL, true), fn_body(), marks_body(), pools_body() };
	for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
		buf_t cols = as_columns(&bodies[i]);
		int e1, e2;
		char *a = json_of(&bodies[i], &e1), *b = json_of(&cols, &e2);
		CHECK_EQ(e1, e2);
		CHECK(a && b && !strcmp(a, b)); /* the same report, to the byte */
		free(a);
		free(b);

		/* cut inside the last columns record: an error with its offset,
		 * the records before it kept */
		buf_t cut = { 0 };
		put(&cut, cols.p, cols.len - 3);
		buf_t file = make_file(&cut, false, HT_FORMAT_MAJOR);
		ht_trace_t *t;
		int rc;
		ht_model_t *m = load(&file, &t, &rc);
		CHECK(t != NULL && t->error != 0);
		ht_model_free(m);
		ht_trace_free(t);
		free(file.p);
		free(cut.p);
		free(cols.p);
		free(bodies[i].p);
	}

	/* damaged columns: an event byte no format defines (0 is none) */
	buf_t body = { 0 };
	const char *argv[] = { "prog" };
	rec_process(&body, 1, argv);
	blk_t k;
	blk_begin(&k, 1, 0);
	ev_alloc(&k, 5, 0x1000, 10, 0);
	ev_alloc(&k, 6, 0x2000, 20, 0);
	size_t rec = body.len; /* the block's record starts here, in both forms */
	blk_end(&body, &k);
	buf_t cols = as_columns(&body);
	CHECK_EQ(cols.p[rec], HT_REC_THREAD_COLUMNS);
	/* the event column follows the tag, the length and the header's 8
	 * varints, each one byte here: turn the second event byte into 0 */
	size_t ev0 = rec + 2 + 8;
	cols.p[ev0 + 1] = 0;
	buf_t file = make_file(&cols, false, HT_FORMAT_MAJOR);
	ht_trace_t *t;
	int rc;
	ht_model_t *m = load(&file, &t, &rc);
	CHECK(t != NULL && t->error != 0);
	if (m)
		CHECK_EQ(m->totals.allocations, 1); /* the event before the damage */
	ht_model_free(m);
	ht_trace_free(t);
	free(file.p);
	free(cols.p);
	free(body.p);
}

/* ---- THREAD_PACKED: coded addresses (format 1.6) ---------------------------------- */

static uint64_t lcg(uint64_t *r)
{
	*r = *r * 6364136223846793005ull + 1442695040888963407ull;
	return *r >> 33;
}

/* Two threads allocating, freeing (now and then each other's blocks) and
 * reallocating through a simulated allocator that reuses freed chunks of a
 * size class last-in first-out, like glibc's: the addresses packed blocks
 * code as BIN and REF; and some blocks far away, coded as escapes. */
static buf_t churn_body(void)
{
	buf_t body = { 0 };
	const char *argv[] = { "prog" };
	rec_process(&body, 1, argv);
	uint64_t rng = 42, now = 1000, bump = 0x100000;
	static uint64_t freed[80][64], live[2][256], lsize[2][256];
	unsigned nfreed[80] = { 0 }, nlive[2] = { 0 };
#define CHUNK(sz) (((sz) + 8 + 15) & ~(uint64_t)15)
#define CLASS(sz) ((unsigned)(CHUNK(sz) / 16) % 80)
	for (int b = 0; b < 8; b++) {
		unsigned th = (unsigned)b % 2;
		blk_t k;
		blk_begin(&k, th ? 101 : 100, now);
		for (int i = 0; i < 400; i++) {
			now += lcg(&rng) % 3;
			unsigned op = (unsigned)(lcg(&rng) % 20);
			uint64_t size = 1 + lcg(&rng) % (op < 2 ? 3000 : 400);
			unsigned c = CLASS(size);
			if (op < 9 && nlive[th] < 256) {
				uint64_t a = nfreed[c] ? freed[c][--nfreed[c]] : (bump += CHUNK(size) + 4096);
				ev_alloc(&k, now, a, size, 0);
				live[th][nlive[th]] = a;
				lsize[th][nlive[th]++] = size;
			} else if (op < 17 && nlive[th ^ (op == 16)]) {
				unsigned o = th ^ (op == 16); /* 16: the other thread's */
				unsigned j = (unsigned)(lcg(&rng) % nlive[o]);
				ev_free(&k, now, live[o][j]);
				unsigned fc = CLASS(lsize[o][j]);
				if (nfreed[fc] < 64)
					freed[fc][nfreed[fc]++] = live[o][j];
				live[o][j] = live[o][--nlive[o]];
				lsize[o][j] = lsize[o][nlive[o]];
			} else if (op < 19 && nlive[th]) {
				unsigned j = (unsigned)(lcg(&rng) % nlive[th]);
				uint64_t old = live[th][j], a = old;
				if (op == 18) /* a buffer that doubles */
					size = 2 * lsize[th][j];
				c = CLASS(size);
				if (CLASS(size) != CLASS(lsize[th][j])) {
					unsigned fc = CLASS(lsize[th][j]);
					a = nfreed[c] ? freed[c][--nfreed[c]] : (bump += CHUNK(size) + 4096);
					if (nfreed[fc] < 64)
						freed[fc][nfreed[fc]++] = old;
				}
				ev_realloc(&k, now, 0, old, a, size, 0);
				live[th][j] = a;
				lsize[th][j] = size;
			} else { /* far away: an escape each way */
				uint64_t far = 0xfff0000000000000ull + lcg(&rng) * 16;
				ev_alloc(&k, now, far, size, 0);
				ev_free(&k, now, far);
			}
		}
		blk_end(&body, &k);
	}
#undef CHUNK
#undef CLASS
	rec_end(&body, now + 10, HT_END_EXIT, 0, 1 << 20);
	return body;
}

/* A steady program: after its first allocations, every address is a code
 * of a few values (a temporary's REF 0, a class's BIN 0, a realloc in
 * place), so the agent joins the blocks after the second (HT_PK_JOINED). */
static buf_t steady_body(void)
{
	buf_t body = { 0 };
	const char *argv[] = { "prog" };
	rec_process(&body, 1, argv);
	uint64_t now = 1000;
	for (int b = 0; b < 4; b++) {
		blk_t k;
		blk_begin(&k, 100, now);
		for (int i = 0; i < 100; i++) {
			ev_alloc(&k, now += 3, 0x10000, 32, (uint64_t)(i % 3));
			ev_free(&k, now += 2, 0x10000);
			ev_alloc(&k, now += 3, 0x20000, 64, 1);
			ev_realloc(&k, now += 5, 1, 0x20000, 0x20000, 60, 2);
			ev_free(&k, now += 2, 0x20000);
		}
		blk_end(&body, &k);
	}
	rec_end(&body, now + 10, HT_END_EXIT, 0, 1 << 20);
	return body;
}

/* One thread freeing blocks it never allocated and allocating next to
 * them, in two regions far apart by turns: each allocation's code counts
 * from the chunk after the previous allocation, in the other region, so
 * the address codes take more bytes than the events themselves. */
static buf_t far_body(void)
{
	buf_t body = { 0 };
	const char *argv[] = { "prog" };
	rec_process(&body, 1, argv);
	blk_t k;
	blk_begin(&k, 100, 1000);
	uint64_t now = 1000;
	for (uint64_t i = 0; i < 400; i++) {
		uint64_t region = (i & 1) ? 0x7f0000000000ull : 0x10000000ull;
		uint64_t f = region + i * 4096;
		ev_free(&k, ++now, f);
		ev_alloc(&k, ++now, f + 16, 24, 0);
	}
	blk_end(&body, &k);
	rec_end(&body, now + 10, HT_END_EXIT, 0, 1 << 20);
	return body;
}

static void test_packed_room(void)
{
	buf_t body = far_body();
	/* the block's events: after the record's tag and length, the tid and
	 * base time */
	size_t pos = 0, start = 0, n = 0;
	while (pos < body.len) {
		uint64_t len = 0;
		size_t k = ht_varint_get(body.p + pos + 1, body.len - pos - 1, &len);
		if (body.p[pos] == HT_REC_THREAD_BLOCK) {
			uint64_t v;
			start = pos + 1 + k;
			start += ht_varint_get(body.p + start, body.len - start, &v);
			start += ht_varint_get(body.p + start, body.len - start, &v);
			n = pos + 1 + k + len - start;
		}
		pos += 1 + k + len;
	}
	CHECK(n > 0);
	uint8_t *col[HT_NCOLS];
	size_t clen[HT_NCOLS], room = n;
	for (unsigned c = 0; c < HT_NCOLS; c++) {
		col[c] = malloc(room + 64);
		memset(col[c], 0xa5, room + 64);
	}
	/* with room for just the events: refused, nothing written past room */
	ht_pk_writer_t *w = calloc(1, sizeof *w);
	CHECK(!ht_packed_split(body.p + start, n, col, clen, room, w, false));
	for (unsigned c = 0; c < HT_NCOLS; c++) {
		CHECK(clen[c] <= room);
		size_t spoiled = 0;
		for (size_t i = room; i < room + 64; i++)
			spoiled += col[c][i] != 0xa5;
		CHECK_EQ(spoiled, 0);
	}
	/* with more room it splits, the address column longer than the events */
	for (unsigned c = 0; c < HT_NCOLS; c++)
		col[c] = realloc(col[c], 2 * room + 64);
	memset(w, 0, sizeof *w);
	CHECK(ht_packed_split(body.p + start, n, col, clen, 2 * room + 64, w, false));
	CHECK(clen[HT_COL_ADDR] > n);
	/* and such a body reads back as it was */
	int e0, e1;
	char *plain = json_of(&body, &e0);
	buf_t pk = as_layout(&body, true, 16, 0);
	char *j = json_of(&pk, &e1);
	CHECK_EQ(e0, e1);
	CHECK(plain && j && !strcmp(plain, j));
	free(plain);
	free(j);
	free(pk.p);
	free(w);
	for (unsigned c = 0; c < HT_NCOLS; c++)
		free(col[c]);
	free(body.p);
}

static void test_packed(void)
{
	buf_t bodies[] = { churn_body(), steady_body(), basic_body(NULL, true), fn_body(),
			   marks_body(), pools_body() };
	for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
		int e0;
		char *plain = json_of(&bodies[i], &e0);
		CHECK(plain != NULL);
		/* 16 streams: one per thread; 1 stream: reset at every switch */
		for (unsigned nstreams = 16; nstreams >= 1; nstreams /= 16) {
			buf_t pk = as_layout(&bodies[i], true, nstreams, 0);
			int e;
			char *j = json_of(&pk, &e);
			CHECK_EQ(e0, e);
			CHECK(j && plain && !strcmp(plain, j)); /* the same report, to the byte */
			free(j);
			if (i == 0 && nstreams == 16) {
				/* the codes are used: smaller than plain columns,
				 * which they would exceed by 2 bits an address */
				buf_t cols = as_columns(&bodies[i]);
				CHECK(pk.len * 10 < cols.len * 9);
				free(cols.p);
			}
			free(pk.p);
		}
		free(plain);
	}

	/* a packed block whose codes are damaged: the events before are kept,
	 * and the stream's later blocks are refused, not decoded wrongly */
	buf_t pk = as_layout(&bodies[0], true, 16, 0);
	size_t pos = 0, nrec = 0, rec2 = 0;
	while (pos < pk.len) { /* find the packed records */
		uint8_t tag = pk.p[pos];
		uint64_t len = 0;
		size_t n = ht_varint_get(pk.p + pos + 1, pk.len - pos - 1, &len);
		if (tag == HT_REC_THREAD_PACKED && ++nrec == 3)
			rec2 = pos; /* thread 100's second block */
		pos += 1 + n + len;
	}
	CHECK(rec2 > 0);
	/* header: tag, length (2 bytes), tid, base, stream, 6 lengths */
	size_t q = rec2 + 3, n;
	uint64_t v, elen, tlen;
	for (int f = 0; f < 3; f++) {
		n = ht_varint_get(pk.p + q, pk.len - q, &v);
		q += n;
	}
	n = ht_varint_get(pk.p + q, pk.len - q, &elen);
	q += n;
	n = ht_varint_get(pk.p + q, pk.len - q, &tlen);
	q += n;
	for (int f = 0; f < 4; f++) {
		n = ht_varint_get(pk.p + q, pk.len - q, &v);
		q += n;
	}
	size_t addr_col = q + elen + tlen;
	pk.p[addr_col] = 0x7d; /* BIN 31: deeper than any class's stack */
	buf_t file = make_file(&pk, false, HT_FORMAT_MAJOR);
	ht_trace_t *t;
	int rc;
	ht_model_t *m = load(&file, &t, &rc);
	CHECK(t != NULL && t->error == -HT_ECORRUPT);
	if (t)
		CHECK(t->error_offset == rec2 + 3); /* names the damaged record */
	ht_model_free(m);
	ht_trace_free(t);
	free(file.p);

	/* cut inside the last packed record: an error, the records before kept */
	buf_t cut = { 0 };
	put(&cut, pk.p, pk.len - 40);
	file = make_file(&cut, false, HT_FORMAT_MAJOR);
	m = load(&file, &t, &rc);
	CHECK(t != NULL && t->error != 0);
	ht_model_free(m);
	ht_trace_free(t);
	free(file.p);
	free(cut.p);
	free(pk.p);
	for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++)
		free(bodies[i].p);
}

/* FOLLOW codes: a container's elements freed in the order they were made
 * (every other allocation, the rest temporaries), and backwards. Each free
 * after the first is one byte naming "the last freed allocation + k", and
 * the reader gets every address back; a FOLLOW with no free before it, or
 * reaching past the allocations made, is refused. */
/* A class's stack against a plain list, newest first: pushes (the oldest
 * falls out of a full one), and takes of the k-th newest at every depth,
 * as the ring wraps around its array (ht_pk_bin_take moves the newer
 * addresses down in one run or around the wrap; ht_pk_bin_find looks in
 * both runs). */
static void test_packed_bin_ring(void)
{
	ht_pk_bins_t *bs = calloc(1, sizeof *bs);
	uint64_t model[HT_PK_BIN_DEPTH];
	unsigned n = 0, b = 5;
	uint64_t rng = 11, next = 1;
	for (unsigned i = 0; i < 30000; i++) {
		uint64_t r = lcg(&rng);
		if (!n || r % 5 < 3) {
			ht_pk_bin_push(bs, b, next);
			if (n == HT_PK_BIN_DEPTH)
				n--;
			memmove(model + 1, model, n * sizeof model[0]);
			model[0] = next++;
			n++;
		} else {
			unsigned k = (unsigned)(lcg(&rng) % n);
			CHECK_EQ(ht_pk_bin_find(bs, b, model[k]), (int)k);
			CHECK_EQ(ht_pk_bin_take(bs, b, k), model[k]);
			memmove(model + k, model + k + 1, (n - k - 1) * sizeof model[0]);
			n--;
		}
		CHECK_EQ(bs->count[b], n);
		if (i % 97 == 0) {
			for (unsigned k = 0; k < n; k++)
				CHECK_EQ(HT_PK_AT(bs, b, k), model[k]);
			CHECK_EQ(ht_pk_bin_find(bs, b, next + 1), -1);
		}
	}
	free(bs);
}

/* The writer's filter of what its class stacks hold (packed.h,
 * in_bins): its counts add up to the stacks' addresses through pushes,
 * takes and evictions, and a freed address still in its stack, however
 * deep, is found (BIN k), one that fell out is not. */
static void test_packed_filter(void)
{
	ht_pk_writer_t *w = calloc(1, sizeof *w);
	uint8_t code[HT_PK_CODE_MAX];
	uint64_t rng = 7;
	/* 300 blocks of 48 bytes allocated, then freed oldest first: the
	 * class keeps the last 128 freed */
	for (unsigned i = 0; i < 300; i++)
		ht_pk_put_alloc(w, code, 0x100000 + 0x40 * (uint64_t)i, 48, w->next, HT_PK_BINS);
	for (unsigned i = 0; i < 300; i++) {
		size_t n = ht_pk_put_free(w, code, 0x100000 + 0x40 * (uint64_t)i, 0);
		CHECK(n > 0);
	}
	unsigned b = ht_pk_bin(48, HT_PK_BINS);
	CHECK_EQ(w->bins.count[b], HT_PK_BIN_DEPTH);
	/* block 250 is the 50th newest: BIN 49; block 100 fell out: not BIN */
	uint64_t v;
	ht_pk_put_alloc(w, code, 0x100000 + 0x40 * 250, 48, w->next, HT_PK_BINS);
	CHECK(ht_varint_get(code, sizeof code, &v) > 0 && v == (49u << 2 | HT_PK_BIN));
	ht_pk_put_alloc(w, code, 0x100000 + 0x40 * 100, 48, w->next, HT_PK_BINS);
	CHECK(ht_varint_get(code, sizeof code, &v) > 0 && (v & 3) != HT_PK_BIN);
	/* random frees and reallocations over a few classes */
	uint64_t live[512];
	unsigned nlive = 0;
	for (unsigned i = 0; i < 200000; i++) {
		uint64_t r = lcg(&rng);
		if (nlive < 512 && (r % 3 || !nlive)) {
			uint64_t a = 0x200000 + 0x40 * (lcg(&rng) % 4096);
			ht_pk_put_alloc(w, code, a, 16 + 16 * (r % 5), w->next, HT_PK_BINS);
			live[nlive++] = a;
		} else {
			unsigned j = (unsigned)(lcg(&rng) % nlive);
			ht_pk_put_free(w, code, live[j], 0);
			live[j] = live[--nlive];
		}
	}
	uint64_t held = 0, counted = 0;
	for (unsigned c = 0; c < HT_PK_BINS; c++)
		held += w->bins.count[c];
	for (size_t i = 0; i < sizeof w->in_bins / sizeof w->in_bins[0]; i++)
		counted += w->in_bins[i];
	CHECK(held > 0);
	CHECK_EQ(counted, held);
	free(w);
}

static void test_packed_follow(void)
{
	ht_pk_writer_t *w = calloc(1, sizeof *w);
	ht_pk_reader_t *r = calloc(1, sizeof *r);
	ht_pk_reader_reset(r);
	uint8_t code[64 * HT_PK_CODE_MAX];
	size_t len = 0;
	uint64_t kept[32], next = 0x10000, prev = 0;
	for (unsigned i = 0; i < 64; i++) { /* 32 kept, 32 temporaries between */
		uint64_t a = next;
		next += 0x40;
		len += ht_pk_put_alloc(w, code + len, a, 40, w->next, HT_PK_BINS);
		if (i % 2 == 0)
			kept[i / 2] = a;
		else
			len += ht_pk_put_free(w, code + len, a, prev); /* REF 0 */
		prev = a;
	}
	size_t frees_at = len;
	for (unsigned i = 0; i < 32; i++) { /* forwards, then backwards */
		uint64_t a = kept[i < 16 ? i : 47 - i];
		len += ht_pk_put_free(w, code + len, a, prev);
		prev = a;
	}
	/* the first free is a REF (f is the last temporary: 63 - 0 - 1 > 4
	 * back), the forward ones FOLLOW +2 (the temporaries between), the
	 * jump to kept[31] a REF, then FOLLOW -2 */
	CHECK_EQ(code[frees_at] & 3, HT_PK_REF);
	size_t follows = 0, q = frees_at;
	for (unsigned i = 0; i < 32; i++) {
		uint64_t c = 0;
		q += ht_varint_get(code + q, len - q, &c);
		follows += (c & 3) == HT_PK_FOLLOW && c < 0x80;
	}
	CHECK_EQ(q, len);
	CHECK_EQ(follows, 30);

	ht_col_in_t in = { code, 0, len };
	uint64_t a, p = 0;
	for (unsigned i = 0; i < 64; i++) {
		CHECK(ht_pk_decode(r, &in, true, true, 40, r->next, &a));
		if (i % 2)
			CHECK(ht_pk_decode(r, &in, true, false, 0, a, &a));
		p = a;
	}
	for (unsigned i = 0; i < 32; i++) {
		CHECK(ht_pk_decode(r, &in, true, false, 0, p, &a));
		CHECK_EQ(a, kept[i < 16 ? i : 47 - i]);
		p = a;
	}
	CHECK_EQ(in.pos, len);

	/* refused: FOLLOW before any free, and past the last allocation */
	ht_pk_reader_reset(r);
	uint8_t bad[1] = { (uint8_t)(ht_zigzag(1) << 2 | HT_PK_FOLLOW) };
	in = (ht_col_in_t){ bad, 0, 1 };
	CHECK(!ht_pk_decode(r, &in, true, false, 0, 0, &a)); /* no free yet */
	ht_pk_reader_reset(r);
	uint8_t seq[3] = { HT_PK_DELTA, HT_PK_REF, (uint8_t)(ht_zigzag(1) << 2 | HT_PK_FOLLOW) };
	in = (ht_col_in_t){ seq, 0, 3 };
	CHECK(ht_pk_decode(r, &in, true, true, 40, 0x5000, &a)); /* allocation 1 */
	CHECK(ht_pk_decode(r, &in, true, false, 0, a, &a));	  /* its free: f = 1 */
	CHECK(!ht_pk_decode(r, &in, true, false, 0, a, &a));	  /* 2 was never made */
	free(w);
	free(r);
}

/* Splits block k's events in layout with a fresh stream and joins them
 * back with a fresh reader: every byte back, within the join's bound (a
 * joined block's codes are in column 0). Returns the size column's length. */
static size_t packed_roundtrip(const blk_t *k, unsigned layout)
{
	size_t q = 0, n;
	uint64_t v;
	q += ht_varint_get(k->pl.p, k->pl.len, &v); /* tid, base */
	q += ht_varint_get(k->pl.p + q, k->pl.len - q, &v);
	n = k->pl.len - q;
	uint8_t *col[HT_NCOLS];
	size_t clen[HT_NCOLS];
	for (unsigned c = 0; c < HT_NCOLS; c++)
		col[c] = malloc(2 * n + 64);
	ht_pk_writer_t *w = calloc(1, sizeof *w);
	CHECK(ht_packed_split(k->pl.p + q, n, col, clen, 2 * n + 64, w, layout));
	ht_pk_reader_t *r = calloc(1, sizeof *r);
	ht_pk_reader_reset(r);
	uint8_t *out = malloc(ht_packed_join_bound(clen, layout));
	bool bad;
	size_t m = ht_packed_join((const uint8_t *const *)col, clen, out, r, layout, &bad);
	CHECK(!bad);
	CHECK(m <= ht_packed_join_bound(clen, layout));
	CHECK_EQ(m, n);
	CHECK(m == n && !memcmp(out, k->pl.p + q, n)); /* every address back */
	free(out);
	free(r);
	free(w);
	for (unsigned c = 0; c < HT_NCOLS; c++)
		free(col[c]);
	return clen[HT_COL_SIZE];
}

/* The size classes of the two packed layouts: a THREAD_PACKED record (1.6)
 * has 64 (sizes up to 1,024), a batch's block 254. A 1,030-byte block's
 * chunk is class 63's, like a 1,020-byte one's, but in a 1.6 record it has
 * no class: its free must not push it on class 63, or a later BIN 0 of
 * class 63 names it instead of the 1,020-byte block freed before it. */
static void test_packed_classes(void)
{
	for (unsigned batch = 0; batch <= (HT_PK_BATCH | HT_PK_JOINED); batch++) {
		blk_t k;
		blk_begin(&k, 7, 1000);
		ev_alloc(&k, 1001, 0x10000, 1020, 0);
		ev_alloc(&k, 1002, 0x20000, 1030, 0);
		ev_alloc(&k, 1003, 0x30000, 16, 0); /* the two go to the table */
		ev_free(&k, 1004, 0x10000);
		ev_free(&k, 1005, 0x20000);
		ev_alloc(&k, 1006, 0x10000, 1020, 0); /* BIN 0 of class 63 */
		ev_alloc(&k, 1007, 0x20000, 1030, 0);
		packed_roundtrip(&k, batch);
		free(k.pl.p);
	}
}

/* A REALLOC's size coded against its old block's (HT_PK_SIZES, format
 * 1.10): a buffer growing by a few bytes, one that doubles, one that
 * shrinks, and one whose old block the stream never saw allocated (its
 * code is a DELTA, its size is written as it is). Each layout gives the
 * events back to the byte; the coded size column is the shorter. */
static void test_packed_sizes(void)
{
	blk_t k;
	blk_begin(&k, 7, 1000);
	uint64_t now = 1000, a = 0x10000, b = 0x900000, size = 40, dsize = 64;
	ev_alloc(&k, ++now, a, size, 0);
	ev_alloc(&k, ++now, b, dsize, 0);
	for (int i = 0; i < 200; i++) {
		uint64_t grown = size + 1 + (uint64_t)(i * 7 % 60);
		ev_realloc(&k, ++now, 0, a, a + (i % 3 ? 0 : 0x40), grown, 1);
		a += i % 3 ? 0 : 0x40;
		size = grown;
		if (i % 40 == 39) {
			ev_realloc(&k, ++now, 0, b, b + 0x100000, 2 * dsize, 2);
			b += 0x100000;
			dsize *= 2;
		}
	}
	ev_realloc(&k, ++now, 0, a, a, 8, 1);			    /* shrinks */
	ev_realloc(&k, ++now, 0, 0x7f0000000000ull, 0x50000, 100000, 3); /* old never seen */
	size_t size_col[2] = { 0, 0 };
	for (unsigned l = 0; l < 4; l++) {
		unsigned layout = HT_PK_BATCH | (l & 1 ? HT_PK_SIZES : 0) | (l & 2 ? HT_PK_JOINED : 0);
		size_t len = packed_roundtrip(&k, layout);
		if (!(l & 2))
			size_col[l & 1] = len;
	}
	CHECK(size_col[1] < size_col[0]);
	free(k.pl.p);
}

/* ---- THREAD_BATCH: packed blocks k at a time (format 1.7) -------------------------- */

/* Set: batch_record writes THREAD_BATCH3 records (format 1.11) where it
 * would write THREAD_BATCH2, with columns 2, 3 and 4 split. */
static bool batch_split;

/* A THREAD_BATCH record of the THREAD_PACKED payloads pl[0..n); with
 * flags, a THREAD_BATCH2 with flags[i] in block i's header (with
 * batch_split, a THREAD_BATCH3). */
static void batch_record(buf_t *out, const uint8_t *const *pl, const size_t *plen, size_t n,
			 const uint8_t *flags)
{
	buf_t r = { 0 };
	size_t at[64];
	uint64_t lens[64][HT_NCOLS];
	bool split = flags && batch_split;
	buf_t whole[HT_NCOLS] = { { 0 } };
	size_t nfirst[HT_NCOLS] = { 0 }, nrest[HT_NCOLS] = { 0 };
	put_u(&r, n);
	if (split) { /* the split columns' varint counts come first */
		for (size_t i = 0; i < n; i++) {
			size_t q = 0;
			for (int f = 0; f < 3 + HT_NCOLS; f++) {
				uint64_t v = 0;
				q += ht_varint_get(pl[i] + q, plen[i] - q, &v);
				if (f >= 3)
					lens[i][f - 3] = v;
			}
			for (unsigned c = 0; c < HT_NCOLS; c++) {
				put(&whole[c], pl[i] + q, lens[i][c]);
				q += lens[i][c];
			}
		}
		for (unsigned c = HT_COL_ADDR; c <= HT_COL_STACK; c++) {
			uint8_t *rest = malloc(whole[c].len + 1);
			CHECK(rest != NULL);
			nfirst[c] = ht_varints_split(whole[c].p, whole[c].len, rest, &nrest[c]);
			memcpy(whole[c].p + nfirst[c], rest, nrest[c]);
			free(rest);
			put_u(&r, nfirst[c]);
		}
	}
	for (size_t i = 0; i < n; i++) { /* the headers: tid, base, stream, lengths */
		size_t q = 0;
		for (int f = 0; f < 3 + HT_NCOLS; f++) {
			uint64_t v = 0;
			size_t k = ht_varint_get(pl[i] + q, plen[i] - q, &v);
			CHECK(k > 0);
			put(&r, pl[i] + q, k);
			if (f >= 3)
				lens[i][f - 3] = v;
			if (f == 2 && flags)
				put_u(&r, flags[i]);
			q += k;
		}
		at[i] = q;
	}
	for (unsigned c = 0; c < HT_NCOLS; c++) /* column c of every block */
		for (size_t i = 0; i < n; i++) {
			if (!split)
				put(&r, pl[i] + at[i], lens[i][c]);
			at[i] += lens[i][c];
		}
	for (unsigned c = 0; split && c < HT_NCOLS; c++) {
		put(&r, whole[c].p, whole[c].len);
		free(whole[c].p);
	}
	record(out, split ? HT_REC_THREAD_BATCH3 : flags ? HT_REC_THREAD_BATCH2 : HT_REC_THREAD_BATCH,
	       &r);
	free(r.p);
}

/* body (packed, stack ids in column 0) with its THREAD_PACKED records
 * grouped k at a time into THREAD_BATCH records, the way the agent writes
 * them: a batch ends when full and before any other record. */
static buf_t as_batches_flags(const buf_t *body, size_t k, const uint8_t *joined)
{
	buf_t out = { 0 };
	const uint8_t *pl[64];
	uint8_t fl[64];
	size_t plen[64], n = 0, pos = 0, blocks = 0;
	CHECK(k <= 64);
	while (pos < body->len) {
		uint8_t tag = body->p[pos];
		uint64_t len = 0;
		size_t h = 1 + ht_varint_get(body->p + pos + 1, body->len - pos - 1, &len);
		if (tag == HT_REC_THREAD_PACKED) {
			fl[n] = joined ? joined[blocks++] : 0;
			pl[n] = body->p + pos + h;
			plen[n++] = len;
			if (n == k) {
				batch_record(&out, pl, plen, n, joined ? fl : NULL);
				n = 0;
			}
		} else {
			if (n)
				batch_record(&out, pl, plen, n, joined ? fl : NULL);
			n = 0;
			put(&out, body->p + pos, h + len);
		}
		pos += h + len;
	}
	if (n)
		batch_record(&out, pl, plen, n, joined ? fl : NULL);
	return out;
}

static buf_t as_batches(const buf_t *body, size_t k)
{
	return as_batches_flags(body, k, NULL);
}

/* HT_SEED_DIR=dir: the body as a raw trace file, a seed for the reader's
 * fuzz corpus (tests/fuzz/corpus) that reaches a new record's paths. */
static void write_seed(const buf_t *body, const char *what, size_t i, size_t k)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s-%zu-%zu", getenv("HT_SEED_DIR"), what, i, k);
	buf_t file = make_file(body, false, HT_FORMAT_MAJOR);
	FILE *f = fopen(path, "wb");
	CHECK(f != NULL);
	if (f) {
		fwrite(file.p, 1, file.len, f);
		fclose(f);
	}
	free(file.p);
}

/* The live set behind rank-coded frees (packed.h, format 1.11): rank and
 * select against a plain count, across word and window edges. */
static void test_live_rank(void)
{
	static ht_pk_live_t l;
	static uint8_t live[3 * HT_PK_WINDOW];
	uint64_t rng = 12345;
	for (uint64_t n = 1; n < 3 * HT_PK_WINDOW; n++) {
		ht_pk_live_set(&l, n); /* allocation n; n - HT_PK_WINDOW falls out */
		live[n] = 1;
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		uint64_t back = (rng >> 33) % (n < HT_PK_WINDOW ? n : HT_PK_WINDOW);
		uint64_t m = n - back; /* one of the window's allocations */
		if (!live[m] || (rng >> 20) % 3 == 0)
			continue;
		uint64_t want = 0;
		for (uint64_t k = m + 1; k <= n; k++)
			want += live[k];
		uint64_t r = ht_pk_live_rank(&l, m, n);
		CHECK_EQ(want, r);
		CHECK_EQ(m, ht_pk_live_select(&l, r, n));
		ht_pk_live_clear(&l, m); /* freed */
		live[m] = 0;
		CHECK(!ht_pk_live_has(&l, m));
	}
	/* a rank past the live ones names nothing */
	uint64_t n = 3 * HT_PK_WINDOW - 1, count = 0;
	for (uint64_t k = n - HT_PK_WINDOW + 1; k <= n; k++)
		count += live[k];
	CHECK_EQ(0, ht_pk_live_select(&l, count, n));
	CHECK(ht_pk_live_select(&l, count - 1, n) != 0);
}

/* The offset of b's last record of tag; 0 if none (a PROCESS comes first). */
static size_t last_record(const buf_t *b, uint8_t tag)
{
	size_t pos = 0, rec = 0;
	while (pos < b->len) {
		uint64_t len = 0;
		size_t h = 1 + ht_varint_get(b->p + pos + 1, b->len - pos - 1, &len);
		if (b->p[pos] == tag)
			rec = pos;
		pos += h + len;
	}
	return rec;
}

/* Reads body as a trace: its error is error (0 or -HT_E*), found at
 * offset at unless at is SIZE_MAX, and with model a model is made. */
static void check_read(const buf_t *body, int error, size_t at, bool model)
{
	ht_trace_t *t;
	int rc;
	buf_t file = make_file(body, false, HT_FORMAT_MAJOR);
	ht_model_t *m = load(&file, &t, &rc);
	CHECK(t != NULL && t->error == error);
	if (t && at != SIZE_MAX)
		CHECK(t->error_offset == at);
	if (model)
		CHECK(m != NULL);
	ht_model_free(m);
	ht_trace_free(t);
	free(file.p);
}

static void test_batches(void)
{
	buf_t bodies[] = { churn_body(), steady_body(), basic_body(NULL, true), fn_body(),
			   marks_body(), pools_body() };
	for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
		int e0;
		char *plain = json_of(&bodies[i], &e0);
		/* format 1.7's batches (stack ids in column 0); 1.8's with every
		 * block's addresses in column 0; 1.10's realloc sizes, alone and
		 * joined, and as the agent joins them */
		static const unsigned layouts[] = { HT_PK_BATCH, HT_PK_BATCH | HT_PK_JOINED,
						    HT_PK_BATCH | HT_PK_SIZES,
						    HT_PK_BATCH | HT_PK_JOINED | HT_PK_SIZES,
						    HT_PK_BATCH | HT_PK_RANK,
						    HT_PK_BATCH | HT_PK_JOINED | HT_PK_RANK,
						    HT_PK_BATCH | HT_PK_FREES,
						    HT_PK_BATCH | HT_PK_FREED,
						    HT_PK_BATCH | HT_PK_JOINED | HT_PK_FREED,
						    HT_PK_BATCH | HT_PK_SIZES | HT_PK_RANK | HT_PK_FREES,
						    LAYOUT_AGENT };
		for (size_t l = 0; l < sizeof layouts / sizeof layouts[0]; l++) {
			static uint8_t joined[MAX_BLOCKS];
			memset(joined, 0, sizeof joined);
			buf_t pk = as_layout_flags(&bodies[i], true, 16, layouts[l], joined);
			if (i == 1 && layouts[l] == LAYOUT_AGENT) {
				/* steady: block 0 has the first addresses' DELTAs, so
				 * block 1 is not joined; blocks 2 and 3 are */
				size_t nj = 0;
				for (size_t b = 0; b < MAX_BLOCKS; b++)
					nj += (joined[b] & HT_BATCH_JOINED) != 0;
				CHECK(nj == 2 && joined[2] && joined[3]);
			}
			/* and as the agent of 1.11 writes them: split (THREAD_BATCH3) */
			for (size_t k = 1; k <= 5 + 6 * (layouts[l] == LAYOUT_AGENT); k += 2) {
				batch_split = k > 5;
				buf_t bt = as_batches_flags(&pk, k - 6 * batch_split,
							    layouts[l] == HT_PK_BATCH ? NULL : joined);
				batch_split = false;
				if (getenv("HT_SEED_DIR") && layouts[l] == LAYOUT_AGENT)
					write_seed(&bt, k > 5 ? "batch3" : "batch2", i, k);
				int e;
				char *j = json_of(&bt, &e);
				CHECK_EQ(e0, e);
				CHECK(j && plain && !strcmp(plain, j)); /* the same report, to the byte */
				free(j);
				free(bt.p);
			}
			free(pk.p);
		}
		free(plain);
	}

	/* churn's 8 blocks in one batch, and the ways it can be wrong */
	buf_t pk = as_layout(&bodies[0], true, 16, HT_PK_BATCH);
	buf_t bt = as_batches(&pk, 8);
	size_t rec = last_record(&bt, HT_REC_THREAD_BATCH);
	CHECK(rec > 0 && bt.p[rec] == HT_REC_THREAD_BATCH);
	uint64_t len = 0;
	size_t h = 1 + ht_varint_get(bt.p + rec + 1, bt.len - rec - 1, &len);
	CHECK_EQ(bt.p[rec + h], 8); /* count */

	/* cut inside the batch: an error naming it, the records before kept */
	buf_t cut = { 0 };
	put(&cut, bt.p, bt.len - 40);
	check_read(&cut, -HT_ETRUNC, rec + h, true);
	free(cut.p);

	/* a count larger than the headers there: columns read as headers
	 * do not add up */
	bt.p[rec + h] = 9;
	check_read(&bt, -HT_ECORRUPT, SIZE_MAX, false);

	/* a count of 0 */
	bt.p[rec + h] = 0;
	check_read(&bt, -HT_ECORRUPT, rec + h, false);
	free(bt.p);
	free(pk.p);

	/* THREAD_BATCH2: a flag bit the reader does not know is damage, the
	 * same batch with known flags reads */
	for (uint8_t bad = 0; bad <= 1; bad++) {
		static uint8_t flags[MAX_BLOCKS];
		memset(flags, 0, sizeof flags);
		pk = as_layout_flags(&bodies[0], true, 16, HT_PK_BATCH, flags);
		flags[2] = bad ? 2 : 0;
		bt = as_batches_flags(&pk, 8, flags);
		check_read(&bt, bad ? -HT_ECORRUPT : 0, SIZE_MAX, true);
		free(bt.p);
		free(pk.p);
	}

	/* THREAD_BATCH3: split columns whose varint count is wrong (none, or
	 * one short: the rest then does not make whole varints) are damage,
	 * named at the record */
	for (int bad = 0; bad <= 2; bad++) {
		static uint8_t flags[MAX_BLOCKS];
		memset(flags, 0, sizeof flags);
		pk = as_layout_flags(&bodies[0], true, 16, HT_PK_BATCH, flags);
		batch_split = true;
		bt = as_batches_flags(&pk, 8, flags);
		batch_split = false;
		size_t b3 = last_record(&bt, HT_REC_THREAD_BATCH3); /* the only one */
		CHECK(b3 > 0);
		uint64_t blen = 0, nf2 = 0;
		size_t bh = b3 + 1 + ht_varint_get(bt.p + b3 + 1, bt.len - b3 - 1, &blen);
		size_t at2 = bh + 1; /* after the count, 8: one byte */
		size_t w = ht_varint_get(bt.p + at2, bt.len - at2, &nf2);
		CHECK(nf2 > 0);
		if (bad) { /* written in the same width */
			uint64_t v = bad == 1 ? 0 : nf2 - 1;
			for (size_t b = 0; b < w; b++)
				bt.p[at2 + b] = (uint8_t)((v >> (7 * b)) & 0x7f) | (b + 1 < w ? 0x80 : 0);
		}
		check_read(&bt, bad ? -HT_ECORRUPT : 0, bad ? bh : SIZE_MAX, true);
		free(bt.p);
		free(pk.p);
	}
	for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++)
		free(bodies[i].p);
}

/* ---- following a trace as it grows ------------------------------------------------ */

/* file written to a growing file chunk bytes at a time, followed: after
 * each chunk a poll, and the pass advances to just before the latest
 * block's base time (blocks of churn_body come in time order, so nothing
 * later can be earlier); the figures at the end must be the full load's. */
static void follow_once(const buf_t *file, size_t chunk, const ht_model_t *m)
{
	char path[] = "/tmp/heaptrail-follow.XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	if (fd < 0)
		return;
	ht_trace_t *t = NULL;
	CHECK_EQ(ht_reader_follow(path, &t), 0);
	ht_pass_t *p = NULL;
	ht_watch_t w;
	memset(&w, 0, sizeof w);
	bool started = false;
	for (size_t at = 0; t && at < file->len;) {
		size_t n = file->len - at < chunk ? file->len - at : chunk;
		CHECK_EQ(write(fd, file->p + at, n), (ssize_t)n);
		at += n;
		bool grew;
		CHECK_EQ(ht_reader_follow_poll(t, &grew), 0);
		CHECK(grew);
		CHECK_EQ(t->error, 0);
		if (t->error) {
			fprintf(stderr, "follow, chunk %zu at %zu: %s\n", chunk, at, t->message);
			break;
		}
		if (!started && t->have_process) {
			CHECK_EQ(ht_pass_new(t, &p), 0);
			CHECK_EQ(ht_watch_attach(p, &w), 0);
			CHECK_EQ(ht_pass_follow(p), 0);
			started = true;
		}
		uint64_t limit = 0;
		for (size_t i = 0; i < t->nblocks; i++)
			if (t->blocks[i].base_time > limit + 1)
				limit = t->blocks[i].base_time - 1;
		if (started)
			CHECK_EQ(ht_pass_advance(p, at == file->len ? UINT64_MAX : limit), 0);
	}
	CHECK(started);
	if (started) {
		CHECK_EQ(ht_pass_finish(p), 0);
		CHECK(!ht_reader_follow_pending(t));
		CHECK_EQ(w.heap, m->totals.leaked_bytes);
		CHECK_EQ(w.blocks, m->totals.leaked_blocks);
		CHECK_EQ(w.peak, m->totals.peak_heap_bytes);
		CHECK_EQ(ht_reader_follow_offset(t), file->len);
		CHECK_EQ(t->ending, HT_ENDING_EXIT);
	}
	ht_pass_free(p);
	ht_watch_free(&w);
	ht_trace_free(t);
	close(fd);
	unlink(path);
}

static void test_follow(void)
{
	buf_t body = churn_body();
	buf_t pk = as_layout(&body, true, 16, 0);
	buf_t pkb = as_layout(&body, true, 16, HT_PK_BATCH);
	buf_t bt = as_batches(&pkb, 3);
	const buf_t *bodies[] = { &body, &pk, &bt };
	for (size_t b = 0; b < 3; b++) {
		for (int z = 0; z < 2; z++) {
			buf_t file = make_file(bodies[b], z, HT_FORMAT_MAJOR);
			ht_trace_t *t;
			int rc;
			ht_model_t *m = load(&file, &t, &rc);
			CHECK(m != NULL && !t->error);
			if (m) {
				CHECK(m->totals.leaked_blocks > 0 && m->totals.peak_heap_bytes > 0);
				static const size_t chunks[] = { 1, 7, 333, 4096, 1 << 20 };
				for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++)
					if (chunks[c] > 1 || file.len < 40000)
						follow_once(&file, chunks[c], m);
			}
			ht_model_free(m);
			ht_trace_free(t);
			free(file.p);
		}
	}
	free(bt.p);
	free(pkb.p);
	free(pk.p);
	free(body.p);

	/* threads out of order in the file (test_threads' trace: thread 2's
	 * block, first, frees a block thread 1's allocates before): taken
	 * as they come, the free finds nothing and the block stays live;
	 * held back behind a limit (top's clock), the merge orders them */
	for (int held = 0; held < 2; held++) {
		buf_t b2 = { 0 };
		const char *argv[] = { "prog" };
		uint64_t ips[] = { 0x401050 };
		rec_process(&b2, 1, argv);
		blk_t k;
		blk_begin(&k, 2, 20);
		ev_free(&k, 20, 0x5000);
		blk_end(&b2, &k);
		blk_begin(&k, 1, 10);
		ev_stack(&k, 5, 1, ips);
		ev_alloc(&k, 10, 0x5000, 16, 5);
		blk_end(&b2, &k);
		rec_end(&b2, 40, HT_END_EXIT, 0, 0);
		buf_t f2 = make_file(&b2, false, HT_FORMAT_MAJOR);
		char p2[] = "/tmp/heaptrail-follow.XXXXXX";
		int fd2 = mkstemp(p2);
		ht_trace_t *t2 = NULL;
		ht_pass_t *pp = NULL;
		ht_watch_t w2;
		memset(&w2, 0, sizeof w2);
		bool g;
		CHECK_EQ(ht_reader_follow(p2, &t2), 0);
		/* written in three steps: PROCESS and thread 2's block, thread
		 * 1's block, the END */
		size_t steps[3];
		size_t at = 0, pos = 0, nrec = 0;
		while (pos < b2.len && nrec < 3) {
			size_t q = pos + 1;
			uint64_t len = 0;
			unsigned shift = 0;
			while (b2.p[q] & 0x80) {
				len |= (uint64_t)(b2.p[q++] & 0x7f) << shift;
				shift += 7;
			}
			len |= (uint64_t)b2.p[q++] << shift;
			pos = q + len;
			if (nrec++ == 0)
				continue; /* PROCESS goes with the first block */
			steps[nrec - 2] = HT_FILE_HEADER_LEN + pos;
		}
		steps[2] = f2.len;
		for (int s = 0; s < 3; s++) {
			CHECK_EQ(write(fd2, f2.p + at, steps[s] - at), (ssize_t)(steps[s] - at));
			at = steps[s];
			CHECK_EQ(ht_reader_follow_poll(t2, &g), 0);
			if (!pp) {
				CHECK_EQ(ht_pass_new(t2, &pp), 0);
				CHECK_EQ(ht_watch_attach(pp, &w2), 0);
				CHECK_EQ(ht_pass_follow(pp), 0);
			}
			/* held: nothing past time 5 until the end; else all */
			CHECK_EQ(ht_pass_advance(pp, held && s < 2 ? 5 : UINT64_MAX), 0);
		}
		CHECK_EQ(t2->nblocks, 2);
		CHECK_EQ(w2.heap, held ? 0 : 16);
		CHECK_EQ(w2.blocks, held ? 0 : 1);
		ht_pass_free(pp);
		ht_watch_free(&w2);
		ht_trace_free(t2);
		close(fd2);
		unlink(p2);
		free(f2.p);
		free(b2.p);
	}

	/* not a trace: said once the first bytes are there, not waited for */
	char path[] = "/tmp/heaptrail-follow.XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0 && write(fd, "hello", 5) == 5);
	ht_trace_t *t;
	CHECK_EQ(ht_reader_follow(path, &t), 0);
	bool grew;
	CHECK_EQ(ht_reader_follow_poll(t, &grew), 0);
	CHECK_EQ(t->error, -HT_EMAGIC);
	ht_trace_free(t);
	close(fd);
	unlink(path);
}

int main(void)
{
	test_bomb(); /* first: it measures the peak RSS */
	test_live_rank();
	test_basic();
	test_threads();
	test_realloc_order();
	test_damage();
	test_modules();
	test_fold_sites();
	test_json();
	test_function_events();
	test_function_depth_cap();
	test_marks();
	test_marks_damage();
	test_pools();
	test_ext();
	test_sampled();
	test_columns();
	test_packed();
	test_batches();
	test_packed_room();
	test_packed_follow();
	test_packed_classes();
	test_packed_sizes();
	test_packed_bin_ring();
	test_packed_filter();
	test_follow();
	return TEST_DONE();
}
