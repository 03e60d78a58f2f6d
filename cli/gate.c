/* gate.c - the conditions of `heaptrail check` and `diff --fail-if`
 * (gate.h): parsed, given each trace's figures from its model and leak
 * classes, evaluated, and written as text and JUnit XML. */
#include "report/report.h"
#include "cli/gate.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/opts.h"
#include "analysis/safe.h"
#include "trace_format.h"
#include "analysis/util.h"

enum {
	M_ALLOCATIONS, M_FREES, M_BYTES_ALLOCATED, M_PEAK_HEAP, M_PEAK_BYTES, M_PEAK_RSS,
	M_LEAKED_BYTES, M_LEAKED_BLOCKS, M_TEMPORARY, M_DURATION, M_REALLOCS,
	M_CLASS0, /* <class>_bytes, <class>_blocks for definite .. reachable, unclassified, suppressed */
};

#define T true
#define F false
const ht_gate_metric_t ht_gate_metrics[] = {
	{ "allocations", HT_GATE_COUNT, T, T },
	{ "frees", HT_GATE_COUNT, T, T },
	{ "bytes_allocated", HT_GATE_SIZE, T, T },
	{ "peak_heap_bytes", HT_GATE_SIZE, T, F },
	{ "peak_bytes", HT_GATE_SIZE, F, T },
	{ "peak_rss_bytes", HT_GATE_SIZE, T, F },
	{ "leaked_bytes", HT_GATE_SIZE, T, T },
	{ "leaked_blocks", HT_GATE_COUNT, T, T },
	{ "temporary_allocations", HT_GATE_COUNT, T, T },
	{ "duration_seconds", HT_GATE_TIME, T, F },
	{ "reallocs", HT_GATE_COUNT, T, F },
	{ "definite_bytes", HT_GATE_SIZE, T, T },
	{ "definite_blocks", HT_GATE_COUNT, T, T },
	{ "indirect_bytes", HT_GATE_SIZE, T, T },
	{ "indirect_blocks", HT_GATE_COUNT, T, T },
	{ "possible_bytes", HT_GATE_SIZE, T, T },
	{ "possible_blocks", HT_GATE_COUNT, T, T },
	{ "reachable_bytes", HT_GATE_SIZE, T, T },
	{ "reachable_blocks", HT_GATE_COUNT, T, T },
	{ "unclassified_bytes", HT_GATE_SIZE, T, T },
	{ "unclassified_blocks", HT_GATE_COUNT, T, T },
	{ "suppressed_bytes", HT_GATE_SIZE, T, T },
	{ "suppressed_blocks", HT_GATE_COUNT, T, T },
	{ NULL, HT_GATE_COUNT, F, F },
};
#undef T
#undef F
_Static_assert(sizeof(ht_gate_metrics) / sizeof(ht_gate_metrics[0]) == HT_GATE_NMETRICS + 1,
	       "HT_GATE_NMETRICS");

/* The class slot of metric index i: HT_LEAK_* (0 unclassified), 5 suppressed. */
static unsigned class_of(int i)
{
	int c = (i - M_CLASS0) / 2; /* 0 definite .. 3 reachable, 4 unclassified, 5 suppressed */
	return c < 4 ? (unsigned)c + HT_LEAK_DEFINITE : c == 4 ? 0 : 5;
}

static int metric_index(const char *s, size_t n)
{
	for (int i = 0; ht_gate_metrics[i].name; i++)
		if (strlen(ht_gate_metrics[i].name) == n && !strncmp(ht_gate_metrics[i].name, s, n))
			return i;
	return -1;
}

static bool is_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

int ht_gate_parse(const char *expr, ht_gate_t *g, char *err, size_t errlen)
{
	memset(g, 0, sizeof(*g));
	g->expr = expr;
	const char *s = expr;
	while (*s == ' ' || *s == '\t')
		s++;
	const char *name = s;
	if (!strncmp(s, "site:", 5)) {
		/* FUNC may hold spaces and < > (C++): the metric is the last
		 * known name after a space that an operator follows */
		const char *found = NULL;
		for (const char *p = s + 5; *p; p++) {
			if (p[-1] != ' ' || !is_name_char(*p))
				continue;
			size_t n = 0;
			while (is_name_char(p[n]))
				n++;
			const char *q = p + n;
			while (*q == ' ')
				q++;
			if (metric_index(p, n) >= 0 && strchr("<>=!", *q) && *q)
				found = p;
		}
		if (!found) {
			snprintf(err, errlen, "'%s': site:FUNC then a space, a site figure, an operator "
					      "and a value (site:parse bytes_allocated>+1MiB)", expr);
			return -EINVAL;
		}
		const char *e = found;
		while (e > s + 5 && e[-1] == ' ')
			e--;
		if (e == s + 5) {
			snprintf(err, errlen, "'%s': site: needs a function name", expr);
			return -EINVAL;
		}
		g->site = strndup(s + 5, (size_t)(e - (s + 5)));
		if (!g->site) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		name = found;
	}
	size_t n = 0;
	while (is_name_char(name[n]))
		n++;
	g->metric = metric_index(name, n);
	if (g->metric < 0) {
		char word[64];
		snprintf(word, sizeof word, "%.*s", (int)(n < 63 ? n : 63), name);
		const char *names[HT_GATE_NMETRICS + 1];
		for (int i = 0; i <= HT_GATE_NMETRICS; i++)
			names[i] = ht_gate_metrics[i].name;
		const char *near = n ? ht_nearest_name(word, names) : NULL;
		snprintf(err, errlen, "'%s': %s%s%s%s%s%s (the JSON report's names: docs/JSON.md)", expr,
			 n ? "unknown figure '" : "no figure named", n ? word : "", n ? "'" : "",
			 near ? "; did you mean " : "", near ? near : "", near ? "?" : "");
		goto fail;
	}
	const ht_gate_metric_t *mt = &ht_gate_metrics[g->metric];
	if (g->site && !mt->site) {
		snprintf(err, errlen, "'%s': %s is a total, not a site's figure%s", expr, mt->name,
			 g->metric == M_PEAK_HEAP ? " (a site's share of the peak is peak_bytes)" : "");
		goto fail;
	}
	if (!g->site && !mt->total) {
		snprintf(err, errlen, "'%s': %s is a site's figure: site:FUNC %s... (the total is "
				      "peak_heap_bytes)", expr, mt->name, mt->name);
		goto fail;
	}
	const char *p = name + n;
	while (*p == ' ')
		p++;
	if (p[0] == '>' && p[1] == '=')
		g->op = HT_GATE_GE, p += 2;
	else if (p[0] == '<' && p[1] == '=')
		g->op = HT_GATE_LE, p += 2;
	else if (p[0] == '=' && p[1] == '=')
		g->op = HT_GATE_EQ, p += 2;
	else if (p[0] == '!' && p[1] == '=')
		g->op = HT_GATE_NE, p += 2;
	else if (p[0] == '>')
		g->op = HT_GATE_GT, p++;
	else if (p[0] == '<')
		g->op = HT_GATE_LT, p++;
	else if (p[0] == '=')
		g->op = HT_GATE_EQ, p++;
	else {
		snprintf(err, errlen, "'%s': an operator (>, >=, <, <=, ==, !=) after %s", expr,
			 mt->name);
		goto fail;
	}
	while (*p == ' ')
		p++;
	double sign = 0;
	if (*p == '+' || *p == '-')
		sign = *p++ == '-' ? -1 : 1;
	const char *end;
	if (!ht_parse_scaled(p, &g->value, &end)) {
		snprintf(err, errlen, "'%s': a number after the operator (64MiB, 0, +10%%, +1MiB)",
			 expr);
		goto fail;
	}
	g->mode = sign ? HT_GATE_CHANGE : HT_GATE_VALUE;
	if (*end == '%') {
		if (!sign) {
			snprintf(err, errlen, "'%s': a percentage is a change from BASE: give it a "
					      "sign (+10%%)", expr);
			goto fail;
		}
		g->mode = HT_GATE_PERCENT;
		end++;
	}
	if (sign)
		g->value *= sign;
	while (*end == ' ')
		end++;
	if (*end) {
		snprintf(err, errlen, "'%s': '%s' after the value", expr, end);
		goto fail;
	}
	return 0;
fail:
	free(g->site);
	g->site = NULL;
	return -EINVAL;
}

void ht_gate_free(ht_gate_t *g)
{
	free(g->site);
	g->site = NULL;
}

/* Whether a frame's function is FUNC: the name itself, or with its
 * parameter list (demangled C++: "make_widget(int)"). */
static bool function_is(const char *fn, const char *want)
{
	if (!fn)
		return false;
	size_t n = strlen(want);
	return !strncmp(fn, want, n) && (fn[n] == 0 || (fn[n] == '(' && want[n - 1] != '('));
}

static void add_site(ht_gate_figs_t *f, const ht_site_t *s)
{
	f->v[M_ALLOCATIONS] += (double)s->allocations;
	f->v[M_FREES] += (double)s->frees;
	f->v[M_BYTES_ALLOCATED] += (double)s->bytes_allocated;
	f->v[M_PEAK_BYTES] += (double)s->peak_bytes;
	f->v[M_LEAKED_BYTES] += (double)s->leaked_bytes;
	f->v[M_LEAKED_BLOCKS] += (double)s->leaked_blocks;
	f->v[M_TEMPORARY] += (double)s->temporary;
}

int ht_gate_figs(const ht_gate_t *g, const ht_model_t *m, ht_symbolizer_t *sym,
		 const ht_leaks_t *lk, bool temporary_known, ht_gate_figs_t *f)
{
	memset(f, 0, sizeof(*f));
	bool have_summary = m->trace && m->trace->have_summary;
	for (int i = 0; i < HT_GATE_NMETRICS; i++)
		f->known[i] = true;
	f->known[M_TEMPORARY] = temporary_known;
	f->known[M_REALLOCS] = !have_summary;
	for (int i = M_CLASS0; i < HT_GATE_NMETRICS; i++) {
		unsigned c = class_of(i);
		f->known[i] = lk && (c == 0 || c == 5 || lk->classified);
	}
	if (!g->site) {
		const ht_totals_t *tt = &m->totals;
		f->v[M_ALLOCATIONS] = (double)tt->allocations;
		f->v[M_FREES] = (double)tt->frees;
		f->v[M_BYTES_ALLOCATED] = (double)tt->bytes_allocated;
		f->v[M_PEAK_HEAP] = (double)tt->peak_heap_bytes;
		f->v[M_PEAK_RSS] = (double)tt->peak_rss_bytes;
		f->known[M_PEAK_RSS] = tt->peak_rss_bytes != 0; /* 0: never sampled */
		f->v[M_LEAKED_BYTES] = (double)tt->leaked_bytes;
		f->v[M_LEAKED_BLOCKS] = (double)tt->leaked_blocks;
		f->v[M_TEMPORARY] = (double)tt->temporary;
		f->v[M_DURATION] = (double)tt->duration_ns / 1e9;
		f->v[M_REALLOCS] = (double)tt->reallocs;
		for (int i = M_CLASS0; lk && i < HT_GATE_NMETRICS; i += 2) {
			unsigned c = class_of(i);
			f->v[i] = (double)(c == 5 ? lk->supp_bytes : lk->bytes[c]);
			f->v[i + 1] = (double)(c == 5 ? lk->supp_blocks : lk->blocks[c]);
		}
		return 0;
	}
	/* the sites whose stack passes through the function, each once */
	ht_frame_t *frames = NULL;
	size_t cap = 0;
	bool *in = calloc(m->nsites ? m->nsites : 1, sizeof(bool));
	if (!in)
		return -ENOMEM;
	for (size_t i = 0; i < m->nsites; i++) {
		const ht_site_t *s = &m->sites[i];
		if (s->overflow || !s->stack)
			continue;
		long nf = ht_model_frames(m, sym, s, &frames, &cap);
		if (nf < 0) {
			free(frames);
			free(in);
			return (int)nf;
		}
		for (long k = 0; k < nf && !in[i]; k++)
			in[i] = function_is(frames[k].function, g->site);
		if (in[i]) {
			add_site(f, s);
			f->sites++;
		}
	}
	for (size_t i = 0; lk && i < lk->n; i++) {
		const ht_leak_group_t *lg = &lk->g[i];
		if (lg->site >= m->nsites || !in[lg->site])
			continue;
		unsigned c = i >= lk->nshown ? 5 : lg->kind;
		int slot = M_CLASS0 + 2 * (int)(c == 5 ? 5 : c == 0 ? 4 : c - HT_LEAK_DEFINITE);
		f->v[slot] += (double)lg->bytes;
		f->v[slot + 1] += (double)lg->blocks;
	}
	free(frames);
	free(in);
	return 0;
}

/* A figure as the text report writes it, with the exact number. */
static char *fig_text(char *buf, size_t len, ht_gate_kind_t kind, double v)
{
	char a[HT_FMT_LEN];
	bool neg = v < 0;
	double m = fabs(v);
	if (kind == HT_GATE_TIME)
		snprintf(buf, len, "%s%.3f s", neg ? "-" : "", m);
	else if (kind == HT_GATE_SIZE && m >= 1024)
		snprintf(buf, len, "%s%s (%s%.0f B)", neg ? "-" : "", ht_fmt_size(a, (uint64_t)m),
			 neg ? "-" : "", m);
	else if (kind == HT_GATE_SIZE)
		snprintf(buf, len, "%s%.0f B", neg ? "-" : "", m);
	else
		snprintf(buf, len, "%s%s", neg ? "-" : "", ht_fmt_count(a, (uint64_t)m));
	return buf;
}

static bool compare(double l, ht_gate_op_t op, double r)
{
	switch (op) {
	case HT_GATE_GT: return l > r;
	case HT_GATE_GE: return l >= r;
	case HT_GATE_LT: return l < r;
	case HT_GATE_LE: return l <= r;
	case HT_GATE_EQ: return l == r;
	default: return l != r;
	}
}

void ht_gate_eval(const ht_gate_t *g, const ht_gate_figs_t *base, const ht_gate_figs_t *nw,
		  ht_gate_result_t *r)
{
	const ht_gate_metric_t *mt = &ht_gate_metrics[g->metric];
	char a[96], b[96], c[96];
	int i = g->metric;
	r->outcome = HT_GATE_UNKNOWN;
	if (g->site && !nw->sites && (!base || !base->sites)) {
		snprintf(r->detail, sizeof r->detail, "unknown: no allocation's stack passes through %s",
			 HT_TEXT(g->site));
		return;
	}
	bool need_base = g->mode != HT_GATE_VALUE;
	if (need_base && !base) { /* the parser's caller refuses this; no guess here */
		snprintf(r->detail, sizeof r->detail, "unknown: a change needs BASE (heaptrail diff)");
		return;
	}
	if (!nw->known[i] || (need_base && !base->known[i])) {
		snprintf(r->detail, sizeof r->detail, "unknown: %s%s does not record %s",
			 base && !base->known[i] ? "BASE" : base ? "NEW" : "the trace",
			 base && !base->known[i] && !nw->known[i] ? " and NEW" : "", mt->name);
		return;
	}
	double nv = nw->v[i], lhs = nv;
	char sites[64] = "";
	if (g->site && base)
		snprintf(sites, sizeof sites, " (sites: %zu in BASE, %zu in NEW)", base->sites,
			 nw->sites);
	else if (g->site)
		snprintf(sites, sizeof sites, " (%zu site%s)", nw->sites, nw->sites == 1 ? "" : "s");
	if (!base) {
		snprintf(r->detail, sizeof r->detail, "%s %s%s", mt->name,
			 fig_text(a, sizeof a, mt->kind, nv), sites);
	} else {
		double bv = base->v[i], d = nv - bv;
		double pct = bv != 0 ? 100.0 * d / bv : d == 0 ? 0 : INFINITY;
		lhs = g->mode == HT_GATE_PERCENT ? pct : g->mode == HT_GATE_CHANGE ? d : nv;
		char p[32];
		if (isinf(pct))
			snprintf(p, sizeof p, "BASE 0");
		else
			snprintf(p, sizeof p, "%+.1f%%", pct);
		fig_text(c, sizeof c, mt->kind, d);
		snprintf(r->detail, sizeof r->detail, "%s %s -> %s, %s%s, %s%s", mt->name,
			 fig_text(a, sizeof a, mt->kind, bv), fig_text(b, sizeof b, mt->kind, nv),
			 d > 0 ? "+" : "", c, p, sites);
	}
	r->outcome = compare(lhs, g->op, g->value) ? HT_GATE_FAIL : HT_GATE_PASS;
}

bool ht_gate_any_failed(const ht_gate_result_t *r, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (r[i].outcome != HT_GATE_PASS)
			return true;
	return false;
}

void ht_gate_print(FILE *out, const ht_gate_t *g, const ht_gate_result_t *r, size_t n)
{
	size_t failed = 0;
	for (size_t i = 0; i < n; i++) {
		/* a figure not known fails too: its detail says why */
		const char *word = r[i].outcome == HT_GATE_PASS ? "pass" : "FAIL";
		failed += r[i].outcome != HT_GATE_PASS;
		/* coloured where the text is (standard output on a terminal) */
		bool col = out == stdout && ht_text_style.color;
		fprintf(out, "  %s%s%s  ",
			col ? (r[i].outcome == HT_GATE_PASS ? HT_GREEN : HT_RED) : "", word,
			col ? HT_RESET : "");
		ht_text_put(out, g[i].expr);
		fputs(": ", out);
		ht_text_put(out, r[i].detail);
		fputc('\n', out);
	}
	if (failed)
		fprintf(out, "heaptrail: conditions that hold: %zu of %zu: exit status %d\n", failed,
			n, HT_EXIT_GATE);
	else
		fprintf(out, "heaptrail: conditions that hold: none of %zu\n", n);
}

int ht_gate_junit(FILE *out, const char *suite, const ht_gate_t *g, const ht_gate_result_t *r,
		  size_t n)
{
	size_t failures = 0, errors = 0;
	for (size_t i = 0; i < n; i++) {
		failures += r[i].outcome == HT_GATE_FAIL;
		errors += r[i].outcome == HT_GATE_UNKNOWN;
	}
	fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		     "<testsuites tests=\"%zu\" failures=\"%zu\" errors=\"%zu\">\n"
		     "  <testsuite name=\"", n, failures, errors);
	ht_xml_put(out, suite);
	fprintf(out, "\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\">\n", n, failures, errors);
	for (size_t i = 0; i < n; i++) {
		fputs("    <testcase classname=\"heaptrail.gate\" name=\"", out);
		ht_xml_put(out, g[i].expr);
		fputs("\"", out);
		if (r[i].outcome == HT_GATE_PASS) {
			fputs(">\n      <system-out>", out);
			ht_xml_put(out, r[i].detail);
			fputs("</system-out>\n    </testcase>\n", out);
			continue;
		}
		const char *el = r[i].outcome == HT_GATE_FAIL ? "failure" : "error";
		fprintf(out, ">\n      <%s type=\"heaptrail.gate\" message=\"", el);
		ht_xml_put(out, r[i].detail);
		fputs("\">", out);
		ht_xml_put(out, g[i].expr);
		fputs(" holds: ", out);
		ht_xml_put(out, r[i].detail);
		fprintf(out, "</%s>\n    </testcase>\n", el);
	}
	fputs("  </testsuite>\n</testsuites>\n", out);
	return ferror(out) ? -EIO : 0;
}

int ht_gates_run(const ht_gate_t *g, size_t n, const ht_gate_side_t *base,
		 const ht_gate_side_t *nw, FILE *out, const char *suite, const char *junit)
{
	ht_gate_result_t *res = calloc(n ? n : 1, sizeof(*res));
	if (!res) {
		fprintf(stderr, "heaptrail: out of memory\n");
		return 1;
	}
	int r = 0;
	for (size_t i = 0; i < n && !r; i++) {
		ht_gate_figs_t fb, fn;
		r = ht_gate_figs(&g[i], nw->m, nw->sym, nw->lk, nw->temporary_known, &fn);
		if (!r && base)
			r = ht_gate_figs(&g[i], base->m, base->sym, base->lk, base->temporary_known, &fb);
		if (!r)
			ht_gate_eval(&g[i], base ? &fb : NULL, &fn, &res[i]);
	}
	if (r) {
		fprintf(stderr, "heaptrail: the figures of the conditions: %s\n", ht_strerror(r));
		free(res);
		return 1;
	}
	ht_gate_print(out, g, res, n);
	fflush(out);
	int ret = ht_gate_any_failed(res, n) ? HT_EXIT_GATE : 0;
	if (junit) {
		int err = 0;
		FILE *f = ht_open_output(junit, true, 0666, NULL, &err);
		if (f) {
			err = ht_gate_junit(f, suite, g, res, n);
			if (fclose(f) && !err)
				err = -errno;
		}
		if (err) {
			/* the conditions were tested: their status stands, but a
			 * CI that reads the file must not find it passing */
			fprintf(stderr, "heaptrail: cannot write %s: %s\n", HT_TEXT(junit),
				ht_strerror(err));
			if (!ret)
				ret = 1;
		}
	}
	free(res);
	return ret;
}
