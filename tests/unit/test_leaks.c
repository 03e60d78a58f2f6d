/* test_leaks.c - leak classes, allocation numbers, on-demand checks,
 * suppression patterns and growth suspects, on traces encoded by
 * hand with LEAKS records and EXT events, counts known by construction.
 */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "analysis/leaks.h"
#include "analysis/model.h"
#include "analysis/reader.h"
#include "test.h"
#include "trace_format.h"
#include "analysis/util.h"

#include "trace_writer.h"

/* PROCESS of pid 4242 (thread 4242 is the main thread), no argv. */
static void rec_process_main(buf_t *body)
{
	rec_process(body, 0, NULL);
}

/* Stacks 1..3, one distinct frame each (undefined ids would fold into one
 * unknown site). */
static void ev_stacks(blk_t *k)
{
	for (uint64_t sid = 1; sid <= 3; sid++) {
		uint64_t ip = 0x400000 + sid * 0x10;
		ev_stack(k, sid, 1, &ip);
	}
}

/* EXT event of a kind with its payload. */
static void ev_ext(blk_t *k, uint64_t time, unsigned kind, const buf_t *payload)
{
	put_u8(&k->pl, (uint8_t)(HT_EV_EXT | kind << 4));
	put_u(&k->pl, time - k->time);
	put_u(&k->pl, payload->len);
	put(&k->pl, payload->p, payload->len);
	k->time = time;
}

static void ev_leak_check(blk_t *k, uint64_t time, uint64_t check_id)
{
	buf_t pl = { 0 };
	put_u(&pl, check_id);
	ev_ext(k, time, HT_EXT_LEAK_CHECK, &pl);
	free(pl.p);
}

/* A LEAKS record: n entries (addr, kind), written in the given order. */
static void rec_leaks(buf_t *body, uint64_t time, uint64_t id, int last, const uint64_t (*e)[2],
		      size_t n)
{
	buf_t pl = { 0 };
	put_u(&pl, time);
	put_u(&pl, id);
	put_u(&pl, id ? HT_LEAK_AT_CALL : HT_LEAK_AT_EXIT);
	put_u(&pl, (uint64_t)last);
	uint64_t prev = 0;
	for (size_t i = 0; i < n; i++) {
		put_s(&pl, (int64_t)(e[i][0] - prev));
		put_u(&pl, e[i][1]);
		prev = e[i][0];
	}
	record(body, HT_REC_LEAKS, &pl);
	free(pl.p);
}

static const ht_leak_group_t *group_of(const ht_model_t *m, const ht_leaks_t *l, uint64_t sid,
				       unsigned kind)
{
	for (size_t i = 0; i < l->n; i++)
		if (m->sites[l->g[i].site].stack_id == sid && l->g[i].kind == kind)
			return &l->g[i];
	return NULL;
}

/* ---- the trace of the classes -------------------------------------------------
 * main thread (4242):  t=10 A 0x1000 10 B (s1)   t=11 A 0x2000 20 B (s1)
 *                      t=12 A 0x3000 30 B (s2)   t=20 LEAK_CHECK 1
 *                      t=21 an EXT of an unknown kind (skipped by length)
 *                      t=40 A 0x5000 50 B (s3)   t=41 A 0x6000 60 B (s3)
 * thread 7 (second):   t=15 A 0x4000 40 B (s2)   t=16 A 0x7000 70 B (s2), F t=17
 * check 1 (two records, the second first): 0x1000 definite, 0x2000 reachable,
 *   0x3000 possible, 0x4000 definite
 * check 0 (exit): 0x1000 definite, 0x2000 indirect, 0x3000 reachable,
 *   0x4000 definite, 0x5000 an unknown kind 9; 0x6000 not listed.
 * Allocation numbers: 0x1000 "1", 0x2000 "2", 0x3000 "3", 0x5000 "4",
 * 0x6000 "5" on the main thread; 0x4000 "2.1", 0x7000 "2.2". */
static buf_t classes_body(void)
{
	buf_t body = { 0 };
	rec_process_main(&body);
	blk_t k;
	blk_begin(&k, 4242, 0);
	ev_stacks(&k);
	ev_alloc(&k, 10, 0x1000, 10, 1);
	ev_alloc(&k, 11, 0x2000, 20, 1);
	ev_alloc(&k, 12, 0x3000, 30, 2);
	ev_leak_check(&k, 20, 1);
	buf_t odd = { 0 };
	put(&odd, "\x05\x06\x07", 3);
	ev_ext(&k, 21, 14, &odd);
	free(odd.p);
	ev_alloc(&k, 40, 0x5000, 50, 3);
	ev_alloc(&k, 41, 0x6000, 60, 3);
	blk_end(&body, &k);
	blk_begin(&k, 7, 15);
	ev_alloc(&k, 15, 0x4000, 40, 2);
	ev_alloc(&k, 16, 0x7000, 70, 2);
	ev_free(&k, 17, 0x7000);
	blk_end(&body, &k);
	const uint64_t c1b[][2] = { { 0x3000, HT_LEAK_POSSIBLE }, { 0x4000, HT_LEAK_DEFINITE } };
	const uint64_t c1a[][2] = { { 0x1000, HT_LEAK_DEFINITE }, { 0x2000, HT_LEAK_REACHABLE } };
	rec_leaks(&body, 20, 1, 0, c1b, 2);
	rec_leaks(&body, 20, 1, 1, c1a, 2);
	const uint64_t c0[][2] = { { 0x1000, HT_LEAK_DEFINITE }, { 0x2000, HT_LEAK_INDIRECT },
				   { 0x3000, HT_LEAK_REACHABLE }, { 0x4000, HT_LEAK_DEFINITE },
				   { 0x5000, 9 } };
	rec_leaks(&body, 50, 0, 1, c0, 5);
	rec_end(&body, 50, HT_END_EXIT, 0, 0);
	return body;
}

static void test_classes(void)
{
	buf_t body = classes_body();
	for (int z = 0; z < 2; z++) {
		buf_t file = make_file(&body, z, HT_FORMAT_MAJOR);
		ht_trace_t *t;
		int rc;
		ht_model_t *m = load(&file, &t, &rc);
		CHECK_EQ(rc, 0);
		CHECK_EQ(t->error, 0);
		CHECK_EQ(t->skipped_records, 0);
		CHECK_EQ(t->next_events, 2);
		CHECK_EQ(t->nleak_checks, 2);
		const ht_leak_check_t *c1 = ht_trace_leak_check(t, 1);
		CHECK(c1 && c1->complete && c1->n == 4);
		CHECK_EQ(ht_leak_kind_of(c1, 0x3000), HT_LEAK_POSSIBLE);
		CHECK_EQ(ht_leak_kind_of(c1, 0x2000), HT_LEAK_REACHABLE);
		CHECK_EQ(ht_leak_kind_of(c1, 0x2500), 0);
		CHECK(m != NULL);
		if (!m) {
			ht_trace_free(t);
			free(file.p);
			continue;
		}
		CHECK_EQ(m->totals.allocations, 7);
		CHECK_EQ(m->totals.leaked_blocks, 6);
		CHECK(m->leaks_classified);
		ht_leaks_t l;
		CHECK_EQ(ht_leaks_build(m, NULL, NULL, &l), 0);
		CHECK(l.classified);
		CHECK_EQ(l.n, 5);
		CHECK_EQ(l.nshown, 5);
		CHECK_EQ(l.blocks[HT_LEAK_DEFINITE], 2);
		CHECK_EQ(l.bytes[HT_LEAK_DEFINITE], 50);
		CHECK_EQ(l.bytes[HT_LEAK_INDIRECT], 20);
		CHECK_EQ(l.bytes[HT_LEAK_POSSIBLE], 0);
		CHECK_EQ(l.bytes[HT_LEAK_REACHABLE], 30);
		CHECK_EQ(l.blocks[0], 2); /* 0x5000's unknown kind, 0x6000 unlisted */
		CHECK_EQ(l.bytes[0], 110);
		CHECK(ht_leaks_fail(&l));
		/* order: definite (largest first), indirect, unclassified, reachable */
		static const unsigned order[] = { HT_LEAK_DEFINITE, HT_LEAK_DEFINITE,
						  HT_LEAK_INDIRECT, 0, HT_LEAK_REACHABLE };
		for (size_t i = 0; i < l.n && i < 5; i++)
			CHECK_EQ(l.g[i].kind, order[i]);
		CHECK_EQ(l.g[0].bytes, 40); /* s2's definite block beats s1's 10 */
		char num[48];
		const ht_leak_group_t *g = group_of(m, &l, 2, HT_LEAK_DEFINITE);
		CHECK(g && !strcmp(ht_alloc_number(num, g->ex_thread, g->ex_seq), "2.1"));
		g = group_of(m, &l, 1, HT_LEAK_INDIRECT);
		CHECK(g && !strcmp(ht_alloc_number(num, g->ex_thread, g->ex_seq), "2"));
		g = group_of(m, &l, 3, 0);
		/* the lowest number of the group's blocks: 0x5000 is "4", 0x6000 "5" */
		CHECK(g && g->blocks == 2 && !strcmp(ht_alloc_number(num, g->ex_thread, g->ex_seq), "4"));
		CHECK(g && g->ex_addr == 0x5000);
		ht_leaks_free(&l);

		/* the on-demand check: what was live at its event, by its classes */
		CHECK_EQ(m->nchecks, 1);
		if (m->nchecks == 1) {
			const ht_check_stat_t *c = &m->checks[0];
			CHECK_EQ(c->check_id, 1);
			CHECK_EQ(c->time, 20);
			CHECK(c->classified);
			CHECK_EQ(c->bytes[HT_LEAK_DEFINITE], 50);
			CHECK_EQ(c->blocks[HT_LEAK_DEFINITE], 2);
			CHECK_EQ(c->bytes[HT_LEAK_REACHABLE], 20);
			CHECK_EQ(c->bytes[HT_LEAK_POSSIBLE], 30);
			CHECK_EQ(c->blocks[0], 0);
			/* top lost stacks: s2 definite 40, s2 possible 30, s1 definite 10 */
			CHECK_EQ(c->ntop, 3);
			CHECK_EQ(c->top[0].bytes, 40);
			CHECK_EQ(c->top[0].kind, HT_LEAK_DEFINITE);
			CHECK_EQ(c->top[1].kind, HT_LEAK_POSSIBLE);
			CHECK_EQ(c->top[2].bytes, 10);
		}
		ht_model_free(m);
		ht_trace_free(t);
		free(file.p);
	}
	free(body.p);
}

/* Without LEAKS records every live block is unclassified and counts for
 * the exit code; with only reachable and possibly lost ones it does not. */
static void test_unclassified_and_exit(void)
{
	buf_t body = { 0 };
	rec_process_main(&body);
	blk_t k;
	blk_begin(&k, 4242, 0);
	ev_alloc(&k, 1, 0x1000, 8, 1);
	ev_alloc(&k, 2, 0x2000, 16, 2);
	blk_end(&body, &k);
	size_t plain = body.len;
	rec_end(&body, 3, HT_END_EXIT, 0, 0);
	buf_t file = make_file(&body, false, HT_FORMAT_MAJOR);
	ht_trace_t *t;
	int rc;
	ht_model_t *m = load(&file, &t, &rc);
	ht_leaks_t l;
	CHECK(m && !m->leaks_classified);
	if (m && ht_leaks_build(m, NULL, NULL, &l) == 0) {
		CHECK_EQ(l.blocks[0], 2);
		CHECK(ht_leaks_fail(&l));
		ht_leaks_free(&l);
	}
	ht_model_free(m);
	ht_trace_free(t);
	free(file.p);

	body.len = plain;
	const uint64_t c0[][2] = { { 0x1000, HT_LEAK_REACHABLE }, { 0x2000, HT_LEAK_POSSIBLE } };
	rec_leaks(&body, 3, 0, 1, c0, 2);
	rec_end(&body, 3, HT_END_EXIT, 0, 0);
	file = make_file(&body, false, HT_FORMAT_MAJOR);
	m = load(&file, &t, &rc);
	CHECK(m && m->leaks_classified);
	if (m && ht_leaks_build(m, NULL, NULL, &l) == 0) {
		CHECK_EQ(l.blocks[0], 0);
		CHECK_EQ(l.blocks[HT_LEAK_POSSIBLE], 1);
		CHECK(!ht_leaks_fail(&l));
		ht_leaks_free(&l);
	}
	ht_model_free(m);
	ht_trace_free(t);
	free(file.p);

	/* a LEAKS record cut short: the reader says so and keeps the rest */
	body.len = plain;
	rec_leaks(&body, 3, 0, 1, c0, 2);
	body.len -= 1;
	file = make_file(&body, false, HT_FORMAT_MAJOR);
	CHECK_EQ(ht_reader_load_mem(file.p, file.len, NULL, &t), 0);
	CHECK_EQ(t->error, -HT_ETRUNC);
	CHECK_EQ(t->nevents, 2);
	ht_trace_free(t);
	free(file.p);
	free(body.p);
}

/* LeakSanitizer's TemplateMatch, case by case. */
static void test_match(void)
{
	CHECK(ht_supp_match("foo", "xfooy"));
	CHECK(!ht_supp_match("foo", "fo"));
	CHECK(ht_supp_match("^foo", "foobar"));
	CHECK(!ht_supp_match("^foo", "xfoo"));
	CHECK(ht_supp_match("foo$", "xfoo"));
	CHECK(!ht_supp_match("foo$", "foox"));
	CHECK(ht_supp_match("^foo$", "foo"));
	CHECK(!ht_supp_match("^foo$", "foo2"));
	CHECK(ht_supp_match("f*o", "fxxo"));
	CHECK(ht_supp_match("a*b*c", "a1b2c3"));
	CHECK(!ht_supp_match("a*b*c", "a1c2b"));
	CHECK(ht_supp_match("^lib*.so$", "libfoo.so"));
	CHECK(ht_supp_match("*", "anything"));
	CHECK(ht_supp_match("foo*$", "foox")); /* LSan: '*' before '$' matches */
	CHECK(!ht_supp_match("foo", NULL));
	CHECK(!ht_supp_match("foo", ""));
	CHECK(ht_supp_match("std::vector<*>::push_back", "std::vector<int>::push_back(int)"));
}

/* The matcher as LSan's TemplateMatch reads: every part searched from each
 * position in turn, the reference for the faster paths. */
static bool ref_match(const char *templ, const char *str)
{
	if (!str || !str[0])
		return false;
	bool start = false, star = false;
	if (templ[0] == '^') {
		start = true;
		templ++;
	}
	while (templ[0]) {
		if (templ[0] == '*') {
			templ++;
			start = false;
			star = true;
			continue;
		}
		if (templ[0] == '$')
			return !str[0] || star;
		if (!str[0])
			return false;
		size_t n = strcspn(templ, "*$");
		const char *at = NULL;
		for (const char *s = str; *s; s++) {
			if (!strncmp(s, templ, n)) {
				at = s;
				break;
			}
		}
		if (!at || (start && at != str))
			return false;
		str = at + n;
		templ += n;
		start = star = false;
	}
	return true;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static unsigned rnd(unsigned n)
{
	rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
	return (unsigned)(rng_state >> 33) % n;
}

/* A short string over a small alphabet, so parts repeat and overlap. */
static void rnd_str(char *out, size_t max, const char *alpha)
{
	size_t n = rnd((unsigned)max), na = strlen(alpha);
	for (size_t i = 0; i < n; i++)
		out[i] = alpha[rnd((unsigned)na)];
	out[n] = 0;
}

/* The anchored fast path and the cache of matches per distinct string
 * against the plain matcher and the plain frame-by-frame search: patterns
 * with '*', '?' (literal), '^', '$', literal and empty ones, more than 64 of
 * them (several words of bits), some with a leaf module. */
static void test_match_cache(void)
{
	char t[16], str[16];
	unsigned bad = 0;
	for (int i = 0; i < 200000; i++) {
		rnd_str(t, 10, "ab*$^?");
		rnd_str(str, 12, "ab?$^*");
		if (ht_supp_match(t, str) != ref_match(t, str) && bad++ < 5)
			fprintf(stderr, "match(\"%s\", \"%s\") differs\n", t, str);
	}
	CHECK_EQ(bad, 0);

	static const char *fixed[] = { "", "*", "^", "$", "^$", "a", "^a", "a$", "^a$", "a*b",
				       "^lib*.so$", "?", "a?b", "*$", "ab*$" };
	char pool[40][16]; /* the distinct strings frames are made of */
	for (int i = 0; i < 40; i++)
		rnd_str(pool[i], 12, i < 20 ? "ab" : "ab?./l");
	strcpy(pool[0], "libx.so");
	for (int round = 0; round < 20; round++) {
		ht_supp_list_t sl = { 0 };
		size_t np = 1 + rnd(round < 10 ? 20 : 150);
		sl.s = calloc(np, sizeof(*sl.s));
		CHECK(sl.s != NULL);
		if (!sl.s)
			return;
		for (size_t k = 0; k < np; k++) {
			rnd_str(t, 8, "ab*$^?");
			sl.s[k].pattern = strdup(rnd(4) ? t : fixed[rnd(sizeof(fixed) / sizeof(*fixed))]);
			sl.s[k].leaf_module = rnd(5) ? NULL : rnd(2) ? "lib" : "b$";
		}
		sl.n = sl.cap = np;
		ht_supp_cache_t *c = ht_supp_cache_new(&sl);
		CHECK(c != NULL);
		for (int st = 0; c && st < 2000; st++) {
			ht_frame_t f[6] = { 0 };
			size_t n = rnd(7);
			for (size_t i = 0; i < n; i++) {
				/* NULL, "" or a pool string: each pool string is met again */
				const char **s[3] = { &f[i].module, &f[i].function, &f[i].file };
				for (int j = 0; j < 3; j++) {
					unsigned r = rnd(44);
					*s[j] = r < 40 ? pool[r] : r < 42 ? "" : NULL;
				}
			}
			long want = -1;
			for (size_t i = 0; want < 0 && i < n; i++)
				for (size_t k = 0; k < np; k++) {
					if (sl.s[k].leaf_module && !ref_match(sl.s[k].leaf_module, f[0].module))
						continue;
					if (ref_match(sl.s[k].pattern, f[i].module) ||
					    ref_match(sl.s[k].pattern, f[i].function) ||
					    ref_match(sl.s[k].pattern, f[i].file)) {
						want = (long)k;
						break;
					}
				}
			long got = ht_supp_cache_frames(c, f, n);
			if (got != want && bad++ < 5)
				fprintf(stderr, "round %d stack %d: pattern %ld, want %ld\n", round, st,
					got, want);
		}
		ht_supp_cache_free(c);
		ht_supp_free(&sl);
	}
	CHECK_EQ(bad, 0);
}

/* The parser of suppression files: comments, blanks, `leak:` lines only. */
static void test_supp_file(void)
{
	char path[] = "/tmp/heaptrail-supp-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	if (fd < 0)
		return;
	const char *text = "# a comment\n\n  leak:^leak_big$  \nleak:libfoo.so\r\n";
	CHECK_EQ(write(fd, text, strlen(text)), (long)strlen(text));
	close(fd);
	ht_supp_list_t l = { 0 };
	size_t bad = 0;
	CHECK_EQ(ht_supp_load_file(&l, path, &bad), 0);
	CHECK_EQ(l.n, 2);
	if (l.n == 2) {
		CHECK(!strcmp(l.s[0].pattern, "^leak_big$"));
		CHECK(!strcmp(l.s[1].pattern, "libfoo.so"));
	}
	ht_supp_free(&l);
	FILE *f = fopen(path, "w");
	fputs("leak:ok\nrace:foo\n", f);
	fclose(f);
	CHECK_EQ(ht_supp_load_file(&l, path, &bad), -EINVAL);
	CHECK_EQ(bad, 2);
	ht_supp_free(&l);
	unlink(path);
	CHECK(ht_supp_add_defaults(&l) == 0 && l.n > 5);
	ht_supp_free(&l);
}

/* Growth: s1 grows by 100 B every 10 ms for 1 s (a leaky cache), s2 churns
 * (one 100 B block replaced each 10 ms), s3 grows for 0.2 s then stays. */
static void test_growth(void)
{
	buf_t body = { 0 };
	rec_process_main(&body);
	blk_t k;
	blk_begin(&k, 4242, 0);
	ev_stacks(&k);
	uint64_t prev_churn = 0;
	for (uint64_t i = 0; i < 100; i++) {
		uint64_t t = (i + 1) * 10000000ull;
		ev_alloc(&k, t, 0x100000 + i * 0x100, 100, 1);
		if (prev_churn)
			ev_free(&k, t, prev_churn);
		prev_churn = 0x900000 + i * 0x100;
		ev_alloc(&k, t, prev_churn, 100, 2);
		if (i < 20)
			ev_alloc(&k, t, 0x500000 + i * 0x100, 100, 3);
	}
	blk_end(&body, &k);
	rec_end(&body, 1000000000ull, HT_END_EXIT, 0, 0);
	buf_t file = make_file(&body, false, HT_FORMAT_MAJOR);
	ht_trace_t *t;
	int rc;
	ht_model_t *m = load(&file, &t, &rc);
	CHECK(m != NULL);
	ht_growth_t *g = NULL;
	long n = m ? ht_growth_rank(m, &g) : -1;
	CHECK(n >= 1);
	if (n >= 1) {
		CHECK_EQ(m->sites[g[0].site].stack_id, 1);
		CHECK(g[0].suspect);
		CHECK(g[0].r2 > 0.99);
		CHECK(g[0].slope > 9000 && g[0].slope < 11000); /* 10,000 B/s */
		CHECK_EQ(g[0].live_blocks, 100);
		CHECK(g[0].age_oldest_ns >= 990000000ull);
		CHECK(g[0].age_median_ns > 400000000ull && g[0].age_median_ns < 600000000ull);
		for (long i = 1; i < n; i++)
			CHECK(!g[i].suspect);
	}
	free(g);
	ht_model_free(m);
	ht_trace_free(t);
	free(file.p);
	free(body.p);
}

int main(void)
{
	test_classes();
	test_unclassified_and_exit();
	test_match();
	test_match_cache();
	test_supp_file();
	test_growth();
	return TEST_DONE();
}
