/* test_gate.c - cli/gate.c and cli/opts.c: conditions parsed and evaluated
 * on figures known by construction, their JUnit XML, sizes with suffixes,
 * option suggestions and options read from a help text. */
#include <math.h>
#include <stdlib.h>

#include "cli/gate.h"
#include "cli/opts.h"
#include "test.h"

static int metric(const char *name)
{
	for (int i = 0; ht_gate_metrics[i].name; i++)
		if (!strcmp(ht_gate_metrics[i].name, name))
			return i;
	return -1;
}

static bool parses(const char *e, ht_gate_t *g)
{
	char err[512];
	int r = ht_gate_parse(e, g, err, sizeof err);
	return r == 0;
}

static const char *parse_error(const char *e)
{
	static char err[512];
	ht_gate_t g;
	err[0] = 0;
	if (ht_gate_parse(e, &g, err, sizeof err) == 0) {
		ht_gate_free(&g);
		return "(parsed)";
	}
	return err;
}

static void test_parse(void)
{
	ht_gate_t g;
	CHECK(parses("peak_heap_bytes>64MiB", &g));
	CHECK_EQ(g.metric, metric("peak_heap_bytes"));
	CHECK_EQ(g.op, HT_GATE_GT);
	CHECK_EQ(g.mode, HT_GATE_VALUE);
	CHECK_EQ(g.value, 64 * 1048576.0);
	CHECK(g.site == NULL);
	ht_gate_free(&g);

	CHECK(parses(" peak_heap_bytes > +10% ", &g));
	CHECK_EQ(g.mode, HT_GATE_PERCENT);
	CHECK_EQ(g.value, 10);
	ht_gate_free(&g);

	CHECK(parses("allocations<=-5%", &g));
	CHECK_EQ(g.op, HT_GATE_LE);
	CHECK_EQ(g.mode, HT_GATE_PERCENT);
	CHECK_EQ(g.value, -5);
	ht_gate_free(&g);

	CHECK(parses("definite_bytes>0", &g));
	CHECK_EQ(g.metric, metric("definite_bytes"));
	CHECK_EQ(g.value, 0);
	ht_gate_free(&g);

	CHECK(parses("leaked_blocks!=+1.5K", &g));
	CHECK_EQ(g.op, HT_GATE_NE);
	CHECK_EQ(g.mode, HT_GATE_CHANGE);
	CHECK_EQ(g.value, 1536);
	ht_gate_free(&g);

	CHECK(parses("site:parse_config bytes_allocated>+1MiB", &g));
	CHECK(g.site && !strcmp(g.site, "parse_config"));
	CHECK_EQ(g.metric, metric("bytes_allocated"));
	CHECK_EQ(g.mode, HT_GATE_CHANGE);
	CHECK_EQ(g.value, 1048576);
	ht_gate_free(&g);

	/* a C++ name with spaces and angle brackets stays whole */
	CHECK(parses("site:std::vector<int, std::allocator<int> >::push_back peak_bytes >= 4K", &g));
	CHECK(g.site && !strcmp(g.site, "std::vector<int, std::allocator<int> >::push_back"));
	CHECK_EQ(g.metric, metric("peak_bytes"));
	CHECK_EQ(g.op, HT_GATE_GE);
	ht_gate_free(&g);

	CHECK(parses("duration_seconds>2.5", &g));
	CHECK(fabs(g.value - 2.5) < 1e-9);
	ht_gate_free(&g);

	CHECK_STR(parse_error("peak_heap_byte>1"), "did you mean peak_heap_bytes?");
	CHECK_STR(parse_error("peak_heap_bytes>10%"), "give it a sign");
	CHECK_STR(parse_error("peak_heap_bytes 10"), "an operator");
	CHECK_STR(parse_error("peak_heap_bytes>"), "a number");
	CHECK_STR(parse_error("peak_heap_bytes>1Q"), "'Q' after the value");
	CHECK_STR(parse_error("peak_bytes>1"), "site's figure");
	CHECK_STR(parse_error("site:f peak_heap_bytes>1"), "peak_bytes");
	CHECK_STR(parse_error("site: allocations>1"), "function name");
	CHECK_STR(parse_error(">5"), "no figure named");
	CHECK_STR(parse_error("peak_heap_bytes>0x10"), "a number after the operator");
}

static ht_gate_figs_t figs(const char *name, double v)
{
	ht_gate_figs_t f;
	memset(&f, 0, sizeof(f));
	for (int i = 0; i < HT_GATE_NMETRICS; i++)
		f.known[i] = true;
	f.v[metric(name)] = v;
	f.sites = 1;
	return f;
}

static ht_gate_outcome_t eval(const char *e, const ht_gate_figs_t *b, const ht_gate_figs_t *n,
			      char *detail)
{
	ht_gate_t g;
	ht_gate_result_t r;
	if (!parses(e, &g))
		return (ht_gate_outcome_t)-1;
	ht_gate_eval(&g, b, n, &r);
	if (detail)
		strcpy(detail, r.detail);
	ht_gate_free(&g);
	return r.outcome;
}

static void test_eval(void)
{
	char d[256];
	ht_gate_figs_t b = figs("peak_heap_bytes", 1000), n = figs("peak_heap_bytes", 1200);
	/* +20%: over 10, not over 20 */
	CHECK_EQ(eval("peak_heap_bytes>+10%", &b, &n, d), HT_GATE_FAIL);
	CHECK_STR(d, "+20.0%");
	CHECK_STR(d, "1000 B -> 1.17 KiB (1200 B)");
	CHECK_EQ(eval("peak_heap_bytes>+20%", &b, &n, NULL), HT_GATE_PASS);
	CHECK_EQ(eval("peak_heap_bytes>=+20%", &b, &n, NULL), HT_GATE_FAIL);
	/* the change in units, and NEW's own figure */
	CHECK_EQ(eval("peak_heap_bytes>+199", &b, &n, NULL), HT_GATE_FAIL);
	CHECK_EQ(eval("peak_heap_bytes>+200", &b, &n, NULL), HT_GATE_PASS);
	CHECK_EQ(eval("peak_heap_bytes>1100", &b, &n, NULL), HT_GATE_FAIL);
	CHECK_EQ(eval("peak_heap_bytes>1200", &b, &n, NULL), HT_GATE_PASS);
	/* a fall */
	CHECK_EQ(eval("peak_heap_bytes<-10%", &n, &b, NULL), HT_GATE_FAIL);
	CHECK_EQ(eval("peak_heap_bytes<-20%", &n, &b, NULL), HT_GATE_PASS);
	/* from 0: any growth is more than any percentage, none is 0% */
	ht_gate_figs_t z = figs("definite_bytes", 0), one = figs("definite_bytes", 1);
	CHECK_EQ(eval("definite_bytes>+1000%", &z, &one, d), HT_GATE_FAIL);
	CHECK_STR(d, "BASE 0");
	CHECK_EQ(eval("definite_bytes>+0%", &z, &z, NULL), HT_GATE_PASS);
	/* check: one trace */
	CHECK_EQ(eval("definite_bytes>0", NULL, &one, d), HT_GATE_FAIL);
	CHECK_STR(d, "definite_bytes 1 B");
	CHECK_EQ(eval("definite_bytes>0", NULL, &z, NULL), HT_GATE_PASS);
	CHECK_EQ(eval("definite_bytes==0", NULL, &z, NULL), HT_GATE_FAIL);
	/* a figure not known fails, saying so */
	ht_gate_figs_t u = figs("temporary_allocations", 5);
	u.known[metric("temporary_allocations")] = false;
	CHECK_EQ(eval("temporary_allocations>100", NULL, &u, d), HT_GATE_UNKNOWN);
	CHECK_STR(d, "does not record temporary_allocations");
	CHECK_EQ(eval("temporary_allocations>+1", &u, &n, d), HT_GATE_UNKNOWN);
	CHECK_STR(d, "BASE does not record");
	/* a change without BASE */
	CHECK_EQ(eval("allocations>+1", NULL, &n, NULL), HT_GATE_UNKNOWN);
	/* a site no stack passes through, on either side */
	ht_gate_figs_t none = figs("allocations", 0);
	none.sites = 0;
	CHECK_EQ(eval("site:f allocations>+1", &none, &none, d), HT_GATE_UNKNOWN);
	CHECK_STR(d, "passes through f");
	ht_gate_figs_t some = figs("allocations", 3);
	CHECK_EQ(eval("site:f allocations>+1", &none, &some, d), HT_GATE_FAIL);
	CHECK_STR(d, "sites: 0 in BASE, 1 in NEW");
	/* time in seconds */
	ht_gate_figs_t t1 = figs("duration_seconds", 1.5), t2 = figs("duration_seconds", 3.25);
	CHECK_EQ(eval("duration_seconds>3", &t1, &t2, d), HT_GATE_FAIL);
	CHECK_STR(d, "1.500 s -> 3.250 s");
}

static void test_junit(void)
{
	ht_gate_t g[3];
	ht_gate_result_t r[3];
	CHECK(parses("peak_heap_bytes>+10%", &g[0]));
	CHECK(parses("site:a<b>&\"c\" allocations>0", &g[1]));
	CHECK(parses("temporary_allocations>0", &g[2]));
	r[0] = (ht_gate_result_t){ HT_GATE_FAIL, "peak_heap_bytes 1 -> 2 <up>" };
	r[1] = (ht_gate_result_t){ HT_GATE_PASS, "allocations 0" };
	r[2] = (ht_gate_result_t){ HT_GATE_UNKNOWN, "unknown" };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	CHECK_EQ(ht_gate_junit(f, "suite \x01 & <x>", g, r, 3), 0);
	fclose(f);
	CHECK_STR(buf, "<testsuites tests=\"3\" failures=\"1\" errors=\"1\">");
	CHECK_STR(buf, "name=\"peak_heap_bytes&gt;+10%\"");
	CHECK_STR(buf, "name=\"site:a&lt;b&gt;&amp;&quot;c&quot; allocations&gt;0\"");
	CHECK_STR(buf, "<failure type=\"heaptrail.gate\" message=\"peak_heap_bytes 1 -&gt; 2 &lt;up&gt;\"");
	CHECK_STR(buf, "<error type=\"heaptrail.gate\"");
	CHECK(strchr(buf, '\x01') == NULL); /* XML 1.0 has no place for it */
	CHECK(!ht_gate_any_failed(&r[1], 1));
	CHECK(ht_gate_any_failed(r, 3));
	free(buf);
	for (int i = 0; i < 3; i++)
		ht_gate_free(&g[i]);
}

static void test_sizes(void)
{
	unsigned long long v = 0;
	double d = 0;
	CHECK(ht_parse_size("512K", 1ULL << 40, &v));
	CHECK_EQ(v, 524288);
	CHECK(ht_parse_size("512KiB", 1ULL << 40, &v) && v == 524288);
	CHECK(ht_parse_size("512kb", 1ULL << 40, &v) && v == 524288);
	CHECK(ht_parse_size("3M", 1ULL << 40, &v) && v == 3145728);
	CHECK(ht_parse_size("2GiB", 1ULL << 40, &v) && v == 2147483648ULL);
	CHECK(ht_parse_size("1T", 1ULL << 40, &v) && v == 1ULL << 40);
	CHECK(ht_parse_size("4096", 1ULL << 40, &v) && v == 4096);
	CHECK(ht_parse_size("100B", 1ULL << 40, &v) && v == 100);
	CHECK(ht_parse_size("1.5K", 1ULL << 40, &v) && v == 1536);
	CHECK(!ht_parse_size("0.3", 1ULL << 40, &v)); /* no fraction of a byte */
	CHECK(!ht_parse_size("2T", 1ULL << 40, &v));  /* over the maximum */
	CHECK(!ht_parse_size("-1K", 1ULL << 40, &v));
	CHECK(!ht_parse_size("+1K", 1ULL << 40, &v));
	CHECK(!ht_parse_size("1X", 1ULL << 40, &v));
	CHECK(!ht_parse_size("K", 1ULL << 40, &v));
	CHECK(!ht_parse_size("", 1ULL << 40, &v));
	CHECK(!ht_parse_size("1e3", 1ULL << 40, &v));
	CHECK(!ht_parse_size("0x10", 1ULL << 40, &v));
	CHECK(!ht_parse_size("inf", 1ULL << 40, &v));
	CHECK(ht_parse_scaled(".5M", &d, NULL) && d == 524288);
}

static void test_names(void)
{
	const char *const names[] = { "--format", "--top", "--show-reachable", "-f", "-n", NULL };
	CHECK_EQ(ht_edit_distance("--formt", "--format"), 1);
	CHECK_EQ(ht_edit_distance("", "abc"), 3);
	CHECK_EQ(ht_edit_distance("kitten", "sitting"), 3);
	const char *n = ht_nearest_name("--formt", names);
	CHECK(n && !strcmp(n, "--format"));
	n = ht_nearest_name("--fromat=json", names);
	CHECK(n && !strcmp(n, "--format"));
	n = ht_nearest_name("--tpo", names);
	CHECK(n && !strcmp(n, "--top"));
	CHECK(ht_nearest_name("--verbose", names) == NULL);
	CHECK(ht_nearest_name("-x", names) == NULL); /* one letter off a short one is no hint */

	static const char help[] =
		"heaptrail x [options] FILE\n"
		"  what it does, with -finstrument-functions in the prose\n"
		"    -f, --format text|json  output format\n"
		"    -o OUT                  output file\n"
		"                            -not an option: a continuation line\n"
		"    --cost bytes|peak\n"
		"    --show-reachable        a flag\n";
	ht_help_opt_t o[8];
	size_t k = ht_help_options(help, o, 8);
	CHECK_EQ(k, 4);
	CHECK(!strcmp(o[0].short_name, "-f") && !strcmp(o[0].long_name, "--format") &&
	      !strcmp(o[0].arg, "text|json"));
	CHECK(!strcmp(o[1].short_name, "-o") && !*o[1].long_name && !strcmp(o[1].arg, "OUT"));
	CHECK(!strcmp(o[2].long_name, "--cost") && !strcmp(o[2].arg, "bytes|peak"));
	CHECK(!strcmp(o[3].long_name, "--show-reachable") && !*o[3].arg);
}

int main(void)
{
	test_parse();
	test_eval();
	test_junit();
	test_sizes();
	test_names();
	return TEST_DONE();
}
