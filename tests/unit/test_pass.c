/* test_pass.c - the pass's table of live blocks against a plain model of
 * it, on a trace encoded by hand: many blocks (the index grows, deletions
 * shift probe runs), addresses that are odd, 8-aligned or above 2^48,
 * sizes around 2^24 and above 2^32, times above 2^48, allocations over live blocks and frees of
 * unknown addresses. Every block the pass hands out, finds or lists at the
 * end must be the one the model holds.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/pass.h"
#include "analysis/reader.h"
#include "analysis/util.h"
#include "test.h"
#include "trace_format.h"

#include "trace_writer.h"

#define POOL 24000
#define STEPS 160000

/* Pool entry k's address: aligned, odd, above 2^48, or anywhere. */
static uint64_t addr_of(uint32_t k)
{
	switch (k % 4) {
	case 0:
		return 0x10000 + (uint64_t)k * (k % 8 ? 48 : 40);
	case 1:
		return 0x7f0000000001 + (uint64_t)k * 7;
	case 2:
		return 0xffff800000000000 + (uint64_t)k * 16;
	default:
		return 0x555500000000 + (uint64_t)k * 33;
	}
}

static uint64_t size_of(uint32_t k, uint64_t r)
{
	if (k % 7 == 0)
		return (UINT64_C(1) << 33) + r % 1000;
	if (k % 11 == 0) /* around 2^24 */
		return (UINT64_C(1) << 24) - 2 + r % 5;
	return 1 + r % 200;
}

static uint64_t rnd(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 17;
}

/* One thread's block: steps events over the pool, from time base. */
static void gen_thread(buf_t *body, uint64_t tid, uint64_t base, uint64_t first_sid, bool *live,
		       uint64_t *seed, size_t steps)
{
	blk_t k;
	blk_begin(&k, tid, base);
	for (uint64_t s = first_sid; s < first_sid + 3; s++) {
		uint64_t ip = 0x400000 + s * 0x10;
		ev_stack(&k, s, 1, &ip);
	}
	uint64_t t = base;
	for (size_t i = 0; i < steps; i++) {
		uint64_t r = rnd(seed);
		uint32_t a = (uint32_t)(r % POOL);
		uint64_t sid = first_sid + r / POOL % 3;
		t += 1 + r % 3;
		unsigned what = (unsigned)(r / (POOL * 3) % 16);
		if (what == 0) { /* an allocation over whatever is there */
			ev_alloc(&k, t, addr_of(a), size_of(a, r), sid);
			live[a] = true;
		} else if (what == 1) { /* a free of an address never used */
			ev_free(&k, t, 0x990000000000 + r % 1000 * 8);
		} else if (live[a] && what < 5) { /* moved by realloc */
			uint32_t b = (a + 1 + (uint32_t)(r % 97)) % POOL;
			if (live[b])
				continue;
			ev_realloc(&k, t, 0, addr_of(a), addr_of(b), size_of(b, r), sid);
			live[a] = false;
			live[b] = true;
		} else if (live[a]) {
			ev_free(&k, t, addr_of(a));
			live[a] = false;
		} else {
			ev_alloc(&k, t, addr_of(a), size_of(a, r), sid);
			live[a] = true;
		}
	}
	blk_end(body, &k);
}

typedef struct check {
	ht_pass_t *p;
	ht_map_t at;	/* address -> pool index */
	ht_live_t *ref; /* per pool index: the block the model holds */
	bool *live;
	uint64_t seq[8];
	size_t nlive, events, bad;
} check_t;

static bool same(const ht_live_t *a, const ht_live_t *b)
{
	return a->addr == b->addr && a->size == b->size && a->time == b->time && a->seq == b->seq &&
	       a->site == b->site && a->thread == b->thread && a->fn == b->fn && a->id == b->id &&
	       a->w == b->w;
}

static int on_event(void *ctx, const ht_event_t *ev, const ht_heap_step_t *st)
{
	check_t *c = ctx;
	if (ev->type != HT_EV_ALLOC && ev->type != HT_EV_REALLOC && ev->type != HT_EV_FREE)
		return 0;
	c->events++;
	uint32_t k = ht_map_get(&c->at, ev->addr);
	bool was = k != HT_MAP_NONE && c->live[k];
	if (was != (st->gone != NULL) || (was && !same(st->gone, &c->ref[k]))) {
		if (c->bad++ < 5)
			fprintf(stderr, "event %zu at %#" PRIx64 ": gone differs\n", c->events, ev->addr);
		return 0;
	}
	if (was) {
		c->live[k] = false;
		c->nlive--;
	}
	if (ev->type == HT_EV_FREE) {
		if (ht_pass_find(c->p, ev->addr, NULL))
			c->bad++;
		return 0;
	}
	const ht_live_t *b = st->block;
	ht_live_t f;
	if (k == HT_MAP_NONE || !b || b->addr != ev->addr || b->size != ev->size ||
	    b->time != ev->time || b->thread != ev->thread || b->fn != ev->fn ||
	    b->seq != ++c->seq[ev->thread % 8] || ht_pass_site_stack(c->p, b->site) != ev->stack_id ||
	    b->w != 1 || !ht_pass_find(c->p, ev->addr, &f) || !same(&f, b)) {
		if (c->bad++ < 5)
			fprintf(stderr, "event %zu at %#" PRIx64 ": block differs\n", c->events, ev->addr);
		return 0;
	}
	c->ref[k] = *b;
	c->live[k] = true;
	c->nlive++;
	return 0;
}

static int on_end(void *ctx)
{
	check_t *c = ctx;
	size_t n = 0, ids = ht_pass_live_ids(c->p);
	CHECK(ids <= POOL);
	for (size_t id = 0; id < ids; id++) {
		ht_live_t b;
		if (!ht_pass_live_get(c->p, id, &b))
			continue;
		n++;
		uint32_t k = ht_map_get(&c->at, b.addr);
		CHECK(k != HT_MAP_NONE && c->live[k] && same(&b, &c->ref[k]));
	}
	CHECK_EQ(n, c->nlive);
	CHECK_EQ(ht_pass_nlive(c->p), c->nlive);
	CHECK(!ht_pass_live_get(c->p, ids, &(ht_live_t){ 0 }));
	return 0;
}

static void test_table(void)
{
	bool *live = calloc(POOL, sizeof(*live));
	buf_t body = { 0 };
	rec_process(&body, 0, NULL);
	uint64_t seed = 7;
	/* the second thread's times pass 2^48 */
	gen_thread(&body, 4242, 1000, 1, live, &seed, STEPS / 2);
	gen_thread(&body, 4243, (UINT64_C(1) << 48) - 100000, 4, live, &seed, STEPS / 2);
	rec_end(&body, (UINT64_C(1) << 48) + 10 * STEPS, HT_END_EXIT, 0, 0);
	buf_t file = make_file(&body, true, HT_FORMAT_MAJOR);
	ht_trace_t *t = NULL;
	CHECK_EQ(ht_reader_load_mem(file.p, file.len, NULL, &t), 0);
	check_t c = { 0 };
	c.ref = calloc(POOL, sizeof(*c.ref));
	c.live = calloc(POOL, sizeof(*c.live));
	for (uint32_t k = 0; k < POOL; k++)
		CHECK_EQ(ht_map_put(&c.at, addr_of(k), k), 0);
	if (t) {
		CHECK_EQ(ht_pass_new(t, &c.p), 0);
		ht_pass_consumer_t cs = { 0, true, true, on_event, on_end, NULL, &c, false };
		CHECK_EQ(ht_pass_add(c.p, &cs), 0);
		CHECK_EQ(ht_pass_run(c.p), 0);
		CHECK_EQ(c.bad, 0);
		CHECK(c.events > STEPS * 9 / 10);
		CHECK(c.nlive > 5000); /* the index grew several times */
	}
	ht_pass_free(c.p);
	ht_trace_free(t);
	ht_map_free(&c.at);
	free(c.ref);
	free(c.live);
	free(live);
	free(file.p);
	free(body.p);
}

int main(void)
{
	test_table();
	return TEST_DONE();
}
