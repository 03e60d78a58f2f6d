/* leaks.c - leak groups, suppressions and growth suspects (leaks.h). */
#include "analysis/leaks.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trace_format.h"
#include "analysis/util.h"

/* ---- suppressions ---------------------------------------------------------- */

/* One-time allocations that stay live until exit by design, found by running
 * C (stdio, setlocale, getpwuid, threads, dlopen), C++ (iostream) and python3
 * programs under the agent and reading what was left. Each names the libc or
 * ld.so function that allocates once (anchored: no user function matches),
 * so a real leak elsewhere in the same library still shows; a FILE leaked by
 * fopen still shows though its buffer (_IO_file_doallocate) is suppressed.
 * leaf: the leaf frame must also be in that module (see below). */
static const struct {
	const char *pattern, *leaf;
} default_patterns[] = {
	/* ld.so: a thread's DTV (glibc caches thread stacks), dlopen's link
	 * maps, names, dependency lists and _dl_find_object's tables */
	{ "^_dl_allocate_tls$", NULL },
	{ "^_dl_map_object$", NULL },
	{ "^_dl_new_object$", NULL },
	{ "^_dl_map_object_deps$", NULL },
	{ "^_dl_find_object_update$", NULL },
	/* libc: stdio buffers, locale data, message catalogs' domains, the NSS
	 * database and modules, getpw*'s static buffers, the multibyte
	 * converters, the time zone */
	{ "^_IO_file_doallocate$", NULL },
	{ "^setlocale$", NULL },
	{ "^__bindtextdomain$", NULL },
	{ "^__textdomain$", NULL },
	{ "^__nss_database_get$", NULL },
	{ "^getpwuid$", NULL },
	{ "^getpwnam$", NULL },
	{ "^getgrgid$", NULL },
	{ "^getgrnam$", NULL },
	{ "^__wcsmbs_load_conv$", NULL },
	{ "^tzset_internal$", NULL },
	/* libstdc++'s emergency exception pool (eh_alloc.cc), made by its own
	 * initializer when ld.so loads it; Debian's libstdc++ has no symbols
	 * for it, hence the leaf module */
	{ "^_dl_init$", "libstdc++.so" },
};

static int supp_add(ht_supp_list_t *l, const char *pattern, size_t len, const char *origin)
{
	if (ht_util_grow((void **)&l->s, &l->cap, l->n + 1, sizeof(*l->s)))
		return -ENOMEM;
	char *p = strndup(pattern, len);
	if (!p)
		return -ENOMEM;
	l->s[l->n++] = (ht_supp_t){ p, origin, NULL, 0, 0, 0 };
	return 0;
}

int ht_supp_add_defaults(ht_supp_list_t *l)
{
	for (size_t i = 0; i < sizeof(default_patterns) / sizeof(default_patterns[0]); i++) {
		const char *p = default_patterns[i].pattern;
		int e = supp_add(l, p, strlen(p), default_patterns[i].leaf ? "built-in, leaf in libstdc++"
									 : "built-in");
		if (e)
			return e;
		l->s[l->n - 1].leaf_module = default_patterns[i].leaf;
	}
	return 0;
}

int ht_supp_load_file(ht_supp_list_t *l, const char *path, size_t *bad_line)
{
	/* a regular file of bounded size: /dev/zero or a FIFO would be read
	 * (or waited for) without end */
	int fd = ht_open_regular(path, HT_SUPP_FILE_MAX);
	if (fd < 0)
		return fd;
	FILE *f = fdopen(fd, "r");
	if (!f) {
		int e = -errno;
		close(fd);
		return e;
	}
	char *line = NULL;
	size_t cap = 0, no = 0;
	ssize_t len;
	int e = 0;
	while (!e && (len = getline(&line, &cap, f)) >= 0) {
		no++;
		/* trimmed like LSan's parser: leading and trailing blanks go */
		char *p = line, *end = line + len;
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		while (end > p && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' ' ||
				   end[-1] == '\t'))
			end--;
		if (p == end || *p == '#')
			continue;
		if ((size_t)(end - p) <= 5 || strncmp(p, "leak:", 5)) {
			*bad_line = no;
			e = -EINVAL;
			break;
		}
		e = supp_add(l, p + 5, (size_t)(end - p - 5), path);
	}
	free(line);
	fclose(f);
	return e;
}

void ht_supp_free(ht_supp_list_t *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->s[i].pattern);
	free(l->s);
	memset(l, 0, sizeof(*l));
}

/* The template's parts between wildcards are found left to right, each at
 * its first occurrence after the previous one; '^' pins the first part to
 * the start, '$' ends the template and requires the end of str unless a '*'
 * came just before it (LSan's rules, kept exactly, quirks included). A part
 * pinned to the start is compared there alone: were it anywhere, its first
 * occurrence would be there. */
bool ht_supp_match(const char *templ, const char *str)
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
		if (start) {
			if (!strncmp(str, templ, n))
				at = str;
		} else {
			for (const char *s = str; (s = strchr(s, templ[0])); s++) {
				if (!strncmp(s, templ, n)) {
					at = s;
					break;
				}
			}
		}
		if (!at)
			return false;
		str = at + n;
		templ += n;
		start = star = false;
	}
	return true;
}

/* Which patterns match one distinct string, found once: a report asks the
 * same module, file and function names again for every frame of every
 * leaking stack. Per string: nw words of patterns matching it, then nw
 * words of leaf-module patterns whose leaf module it matches. */
struct ht_supp_cache {
	const ht_supp_list_t *sl;
	size_t nw;
	uint64_t *any_leaf; /* patterns with a leaf module */
	uint64_t *leaf_ok;  /* scratch: patterns allowed for the stack at hand */
	uint64_t *acc;	    /* scratch: patterns matching the frame at hand */
	ht_map_t by_hash;   /* string hash (+ probe) -> entry */
	char **str;
	uint64_t *bits;
	size_t n, cap_str, cap_bits;
};

ht_supp_cache_t *ht_supp_cache_new(const ht_supp_list_t *sl)
{
	ht_supp_cache_t *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->sl = sl;
	c->nw = (sl->n + 63) / 64;
	size_t nw = c->nw ? c->nw : 1;
	c->any_leaf = calloc(3 * nw, sizeof(uint64_t));
	if (!c->any_leaf) {
		free(c);
		return NULL;
	}
	c->leaf_ok = c->any_leaf + nw;
	c->acc = c->leaf_ok + nw;
	for (size_t k = 0; k < sl->n; k++)
		if (sl->s[k].leaf_module)
			c->any_leaf[k / 64] |= (uint64_t)1 << (k % 64);
	return c;
}

void ht_supp_cache_free(ht_supp_cache_t *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++)
		free(c->str[i]);
	free(c->str);
	free(c->bits);
	free(c->any_leaf);
	ht_map_free(&c->by_hash);
	free(c);
}

/* The 2 * nw words of s (not NULL or ""), or NULL for no memory. */
static const uint64_t *cache_bits(ht_supp_cache_t *c, const char *s)
{
	uint64_t h = ht_util_hash64(ht_fnv1a(s));
	uint32_t j;
	while ((j = ht_map_get(&c->by_hash, h)) != HT_MAP_NONE) {
		if (!strcmp(c->str[j], s))
			return c->bits + (size_t)j * 2 * c->nw;
		h++;
	}
	if (c->n >= UINT32_MAX - 1 ||
	    ht_util_grow((void **)&c->str, &c->cap_str, c->n + 1, sizeof(*c->str)) ||
	    ht_util_grow((void **)&c->bits, &c->cap_bits, (c->n + 1) * 2 * c->nw, sizeof(*c->bits)))
		return NULL;
	char *dup = strdup(s);
	if (!dup)
		return NULL;
	if (ht_map_put(&c->by_hash, h, (uint32_t)c->n)) {
		free(dup);
		return NULL;
	}
	uint64_t *b = c->bits + c->n * 2 * c->nw;
	memset(b, 0, 2 * c->nw * sizeof(*b));
	for (size_t k = 0; k < c->sl->n; k++) {
		const ht_supp_t *p = &c->sl->s[k];
		uint64_t bit = (uint64_t)1 << (k % 64);
		if (ht_supp_match(p->pattern, s))
			b[k / 64] |= bit;
		if (p->leaf_module && ht_supp_match(p->leaf_module, s))
			b[c->nw + k / 64] |= bit;
	}
	c->str[c->n++] = dup;
	return b;
}

long ht_supp_cache_frames(ht_supp_cache_t *c, const ht_frame_t *f, size_t n)
{
	size_t nw = c->nw;
	if (!n || !nw)
		return -1;
	/* a pattern with a leaf module counts only when the leaf frame's
	 * module matches it */
	const uint64_t *leaf = f[0].module && f[0].module[0] ? cache_bits(c, f[0].module) : NULL;
	if (f[0].module && f[0].module[0] && !leaf)
		return -2;
	for (size_t w = 0; w < nw; w++)
		c->leaf_ok[w] = ~c->any_leaf[w] | (leaf ? leaf[nw + w] : 0);
	for (size_t i = 0; i < n; i++) {
		const char *s[3] = { f[i].module, f[i].function, f[i].file };
		memset(c->acc, 0, nw * sizeof(*c->acc));
		for (int j = 0; j < 3; j++) {
			if (!s[j] || !s[j][0])
				continue;
			const uint64_t *b = cache_bits(c, s[j]);
			if (!b)
				return -2;
			for (size_t w = 0; w < nw; w++)
				c->acc[w] |= b[w];
		}
		for (size_t w = 0; w < nw; w++) {
			uint64_t hit = c->acc[w] & c->leaf_ok[w];
			if (hit)
				return (long)(w * 64 + (size_t)__builtin_ctzll(hit));
		}
	}
	return -1;
}

/* ---- groups ------------------------------------------------------------------- */

const char *ht_leak_kind_name(unsigned kind)
{
	switch (kind) {
	case HT_LEAK_DEFINITE: return "definite";
	case HT_LEAK_INDIRECT: return "indirect";
	case HT_LEAK_POSSIBLE: return "possible";
	case HT_LEAK_REACHABLE: return "reachable";
	}
	return NULL;
}

char *ht_alloc_number(char *buf, uint32_t thread_num, uint64_t seq)
{
	if (thread_num == 1)
		snprintf(buf, 48, "%" PRIu64, seq);
	else
		snprintf(buf, 48, "%" PRIu32 ".%" PRIu64, thread_num, seq);
	return buf;
}

/* Report order of the classes: lost first, unclassified (today's "leaks")
 * after them, still reachable last. */
static int kind_rank(unsigned kind)
{
	static const int rank[HT_LEAK_KINDS] = { 3, 0, 1, 2, 4 };
	return kind < HT_LEAK_KINDS ? rank[kind] : 4;
}

static int group_cmp(const void *a, const void *b, void *arg)
{
	const ht_leak_group_t *x = a, *y = b;
	const ht_model_t *m = arg;
	if ((x->supp >= 0) != (y->supp >= 0))
		return x->supp >= 0 ? 1 : -1;
	if (x->supp < 0 && kind_rank(x->kind) != kind_rank(y->kind))
		return kind_rank(x->kind) - kind_rank(y->kind);
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	if (x->blocks != y->blocks)
		return x->blocks > y->blocks ? -1 : 1;
	uint64_t sx = m->sites[x->site].stack_id, sy = m->sites[y->site].stack_id;
	if (sx != sy)
		return sx < sy ? -1 : 1;
	return (int)x->kind - (int)y->kind;
}

/* The suppression matching a site's stack: the leaf-most frame that any
 * pattern matches decides, and the first such pattern (LSan's order).
 * Returns its index, -1 for none, or < -1 for an error. */
static long site_supp(const ht_model_t *m, ht_symbolizer_t *sym, ht_supp_cache_t *c,
		      uint32_t site, ht_frame_t **frames, size_t *cap)
{
	long n = ht_model_frames(m, sym, &m->sites[site], frames, cap);
	if (n < 0)
		return -2;
	return ht_supp_cache_frames(c, *frames, (size_t)n);
}

int ht_leaks_build(const ht_model_t *m, ht_symbolizer_t *sym, ht_supp_list_t *sl, ht_leaks_t *out)
{
	memset(out, 0, sizeof(*out));
	out->classified = m->leaks_classified;
	out->supps = sl;
	/* group index per (site, kind): sites * HT_LEAK_KINDS slots */
	size_t nslots = (m->nsites ? m->nsites : 1) * HT_LEAK_KINDS;
	uint32_t *slot = malloc(nslots * sizeof(*slot));
	long *supp = malloc((m->nsites ? m->nsites : 1) * sizeof(*supp));
	ht_frame_t *frames = NULL;
	size_t cap = 0, gcap = 0;
	int e = -ENOMEM;
	ht_supp_cache_t *sc = sl && sl->n ? ht_supp_cache_new(sl) : NULL;
	if (!slot || !supp || (sl && sl->n && !sc))
		goto out;
	memset(slot, 0xff, nslots * sizeof(*slot));
	for (size_t i = 0; i < m->nsites; i++)
		supp[i] = -3; /* not looked up yet */
	for (size_t i = 0; i < m->nlive_end; i++) {
		const ht_live_block_t *b = &m->live_end[i];
		unsigned k = b->kind < HT_LEAK_KINDS ? b->kind : 0;
		uint32_t *gi = &slot[(size_t)b->site * HT_LEAK_KINDS + k];
		if (*gi == UINT32_MAX) {
			if (ht_util_grow((void **)&out->g, &gcap, out->n + 1, sizeof(*out->g)))
				goto out;
			if (supp[b->site] == -3)
				supp[b->site] = sl && sl->n ? site_supp(m, sym, sc, b->site, &frames, &cap)
							    : -1;
			if (supp[b->site] < -1)
				goto out;
			*gi = (uint32_t)out->n;
			out->g[out->n++] = (ht_leak_group_t){ b->site, k, 0, 0, b->thread_num, b->seq,
							      b->addr, supp[b->site], 0, 0, 0, 0 };
		}
		ht_leak_group_t *g = &out->g[*gi];
		g->blocks++;
		g->bytes += b->size;
		/* Horvitz-Thompson, as the model's leaked totals: var (1-p)/p^2 = w(w-1) */
		double sz = (double)b->size, v = b->w * (b->w - 1);
		g->est_blocks += b->w;
		g->est_bytes += sz * b->w;
		g->var_blocks += v;
		g->var_bytes += sz * sz * v;
		if (b->thread_num < g->ex_thread ||
		    (b->thread_num == g->ex_thread && b->seq < g->ex_seq)) {
			g->ex_thread = b->thread_num;
			g->ex_seq = b->seq;
			g->ex_addr = b->addr;
		}
	}
	/* summary mode: no blocks, the agent's per-site classes */
	for (size_t i = 0; m->trace->have_summary && i < m->nsites; i++) {
		const ht_site_t *s = &m->sites[i];
		for (unsigned k = 0; k < HT_LEAK_KINDS; k++) {
			if (!s->sum_kind_blocks[k])
				continue;
			if (ht_util_grow((void **)&out->g, &gcap, out->n + 1, sizeof(*out->g)))
				goto out;
			if (supp[i] == -3)
				supp[i] = sl && sl->n && !s->overflow
						  ? site_supp(m, sym, sc, (uint32_t)i, &frames, &cap) : -1;
			if (supp[i] < -1)
				goto out;
			out->g[out->n++] = (ht_leak_group_t){ (uint32_t)i, k, s->sum_kind_blocks[k],
							      s->sum_kind_bytes[k], 0, 0, 0, supp[i],
							      0, 0, 0, 0 };
		}
	}
	/* a sampled trace: the estimates, as the summary's leaked figures */
	bool sampled = m->sample_rate != 0;
	double cls_blocks[HT_LEAK_KINDS] = { 0 }, cls_bytes[HT_LEAK_KINDS] = { 0 };
	double sup_blocks = 0, sup_bytes = 0;
	for (size_t i = 0; i < out->n; i++) {
		ht_leak_group_t *g = &out->g[i];
		if (sampled) {
			g->blocks = (uint64_t)llround(g->est_blocks);
			g->bytes = (uint64_t)llround(g->est_bytes);
			if (g->supp >= 0) {
				sup_blocks += g->est_blocks;
				sup_bytes += g->est_bytes;
			} else {
				cls_blocks[g->kind] += g->est_blocks;
				cls_bytes[g->kind] += g->est_bytes;
			}
		}
		if (g->supp >= 0) {
			out->supp_blocks += g->blocks;
			out->supp_bytes += g->bytes;
			sl->s[g->supp].blocks += g->blocks;
			sl->s[g->supp].bytes += g->bytes;
			sl->s[g->supp].groups++;
		} else {
			out->blocks[g->kind] += g->blocks;
			out->bytes[g->kind] += g->bytes;
			out->nshown++;
		}
	}
	if (sampled) { /* one rounding per figure, not a sum of rounded groups */
		for (unsigned k = 0; k < HT_LEAK_KINDS; k++) {
			out->blocks[k] = (uint64_t)llround(cls_blocks[k]);
			out->bytes[k] = (uint64_t)llround(cls_bytes[k]);
		}
		out->supp_blocks = (uint64_t)llround(sup_blocks);
		out->supp_bytes = (uint64_t)llround(sup_bytes);
	}
	if (out->n)
		qsort_r(out->g, out->n, sizeof(*out->g), group_cmp, (void *)m);
	e = 0;
out:
	free(slot);
	free(supp);
	free(frames);
	ht_supp_cache_free(sc);
	if (e)
		ht_leaks_free(out);
	return e;
}

void ht_leaks_free(ht_leaks_t *l)
{
	free(l->g);
	l->g = NULL;
	l->n = l->nshown = 0;
}

bool ht_leaks_fail(const ht_leaks_t *l)
{
	return l->blocks[0] || l->blocks[HT_LEAK_DEFINITE] || l->blocks[HT_LEAK_INDIRECT];
}

/* ---- growth suspects -------------------------------------------------------------- */

/* Thresholds of a suspect: a line explains most of the variation, and
 * the site keeps setting new highs rather than having reached a plateau. */
#define SUSPECT_R2 0.8
#define SUSPECT_NEW_HIGHS 0.5

static int growth_cmp(const void *a, const void *b)
{
	const ht_growth_t *x = a, *y = b;
	if (x->suspect != y->suspect)
		return x->suspect ? -1 : 1;
	if (x->slope != y->slope)
		return x->slope > y->slope ? -1 : 1;
	return x->site < y->site ? -1 : x->site > y->site;
}

/* Ages of a site's live blocks: live_end indices sorted by (site, time). */
static int by_site_time(const void *a, const void *b, void *arg)
{
	const ht_live_block_t *lb = arg;
	const ht_live_block_t *x = &lb[*(const size_t *)a], *y = &lb[*(const size_t *)b];
	if (x->site != y->site)
		return x->site < y->site ? -1 : 1;
	return x->time < y->time ? -1 : x->time > y->time;
}

long ht_growth_rank(const ht_model_t *m, ht_growth_t **out)
{
	*out = NULL;
	size_t ns = m->nsites, n = 0;
	ht_growth_t *g = calloc(ns ? ns : 1, sizeof(*g));
	size_t *ord = malloc((m->nlive_end ? m->nlive_end : 1) * sizeof(*ord));
	if (!g || !ord) {
		free(g);
		free(ord);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->nlive_end; i++)
		ord[i] = i;
	if (m->nlive_end)
		qsort_r(ord, m->nlive_end, sizeof(*ord), by_site_time, m->live_end);
	uint64_t end = m->growth_span_ns;
	size_t li = 0;
	const double K = HT_GROWTH_POINTS;
	for (size_t s = 0; s < ns; s++) {
		/* the site's live blocks at the end: ord[first, li) */
		size_t first = li;
		while (li < m->nlive_end && m->live_end[ord[li]].site < s)
			first = ++li;
		uint64_t bytes = 0;
		while (li < m->nlive_end && m->live_end[ord[li]].site == s)
			bytes += m->live_end[ord[li++]].size;
		if (li == first)
			continue;
		double sx = 0, sy = 0, sxx = 0, sxy = 0, syy = 0, high = 0;
		size_t highs = 0;
		for (size_t k = 0; k < HT_GROWTH_POINTS; k++) {
			double x = (double)(k + 1) * (double)end / K / 1e9;
			double y = (double)m->growth[k * ns + s];
			sx += x;
			sy += y;
			sxx += x * x;
			sxy += x * y;
			syy += y * y;
			if (y > high) {
				high = y;
				highs++;
			}
		}
		double vx = sxx - sx * sx / K, vy = syy - sy * sy / K, cxy = sxy - sx * sy / K;
		if (vx <= 0 || cxy <= 0)
			continue; /* no time span, or not rising */
		ht_growth_t *r = &g[n++];
		r->site = (uint32_t)s;
		r->slope = cxy / vx;
		r->r2 = vy > 0 ? cxy * cxy / (vx * vy) : 0;
		r->new_highs = (double)highs / K;
		r->live_bytes = bytes;
		r->live_blocks = li - first;
		const ht_live_block_t *oldest = &m->live_end[ord[first]];
		const ht_live_block_t *median = &m->live_end[ord[first + (li - first - 1) / 2]];
		/* the median age is the age of the median allocation time */
		r->age_oldest_ns = end > oldest->time ? end - oldest->time : 0;
		r->age_median_ns = end > median->time ? end - median->time : 0;
		r->suspect = r->r2 >= SUSPECT_R2 && r->new_highs >= SUSPECT_NEW_HIGHS;
	}
	free(ord);
	if (n)
		qsort(g, n, sizeof(*g), growth_cmp);
	*out = g;
	return (long)n;
}
