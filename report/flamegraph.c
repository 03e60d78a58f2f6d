/* flamegraph.c - a standalone flame graph SVG, written by heaptrail itself.
 *
 * The sites' stacks are merged into one tree: a node is a function (its
 * demangled name, or its address when unknown) under a given path from the
 * root, so identical frames along identical paths become one box whose width
 * is the summed cost (--cost: bytes by default). Children are ordered by
 * name, as flamegraph.pl does, so the picture is deterministic.
 *
 * The file is self-contained: inline CSS and script, no network, readable in
 * any browser. Each box is a <g class="frame"> with data-name, data-value,
 * data-depth, data-x and data-w (the layout in pixels, for the script), a
 * <title> tooltip with the exact figure, percent and file:line, a <rect>
 * and a <text> the script fits to the box. The script adds a hover line,
 * click to zoom (click the root or "Reset zoom" to go back) and a search box
 * that highlights matches and shows the share of the total they cover
 * (nested matches counted once). Boxes narrower than MIN_WIDTH pixels are
 * not drawn but stay in their parents' figures, and the subtitle says how
 * many were left out. The tests drive all of this in headless Chromium
 * (tests/e2e/test_export_tools.py); docs/EXPORTS.md documents it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/frames.h"
#include "report/export.h"
#include "analysis/util.h"


#define WIDTH 1200.0	 /* image width, px */
#define PAD 10.0	 /* left/right margin */
#define FRAME_H 16.0	 /* one stack level */
#define HEAD_H 84.0	 /* title, subtitle, search box */
#define FOOT_H 28.0	 /* hover line */
#define MIN_WIDTH 0.3	 /* narrower boxes are omitted (counted) */
#define MAX_LINES 4	 /* distinct source lines kept per box */

/* ---- the merged tree -------------------------------------------------------- */

typedef struct node {
	const char *name;   /* function, or NULL: label from address */
	const char *file;   /* of the first occurrence */
	const char *module;
	uint64_t address;
	bool has_offset;
	uint64_t offset; /* in its module: the label of a frame without a name */
	int lines[MAX_LINES];
	int nlines;
	bool more_lines;    /* more distinct lines than MAX_LINES */
	uint64_t value;	    /* inclusive cost */
	uint64_t self;	    /* cost of stacks ending here */
	uint32_t parent, first_child, next_sibling;
	uint32_t depth;
	double x, w;	    /* layout */
} node_t;

#define NO_NODE UINT32_MAX

typedef struct tree {
	node_t *n;
	size_t len, cap;
	ht_map_t index; /* hash(parent, label) probed -> node */
	uint32_t max_depth;
} tree_t;

static uint64_t label_hash(uint32_t parent, const char *name, uint64_t address)
{
	uint64_t h = ht_util_hash64(parent + 0x9e3779b97f4a7c15ULL);
	if (!name)
		return ht_util_hash64(h ^ address ^ 0x5bd1e995ULL);
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 0x100000001b3ULL;
	return ht_util_hash64(h);
}

static bool same_label(const node_t *n, const ht_frame_t *f)
{
	if (!n->name || !f->function)
		return !n->name && !f->function && n->address == f->address;
	return !strcmp(n->name, f->function);
}

static uint32_t node_new(tree_t *t, uint32_t parent)
{
	if (t->len >= NO_NODE - 1 || ht_util_grow((void **)&t->n, &t->cap, t->len + 1, sizeof(*t->n)))
		return NO_NODE;
	node_t *n = &t->n[t->len];
	memset(n, 0, sizeof(*n));
	n->parent = parent;
	n->first_child = n->next_sibling = NO_NODE;
	n->depth = parent == NO_NODE ? 0 : t->n[parent].depth + 1;
	if (n->depth > t->max_depth)
		t->max_depth = n->depth;
	if (parent != NO_NODE) {
		n->next_sibling = t->n[parent].first_child;
		t->n[parent].first_child = (uint32_t)t->len;
	}
	return (uint32_t)t->len++;
}

/* The child of parent for frame f, created when new; NO_NODE on -ENOMEM. */
static uint32_t child_for(tree_t *t, uint32_t parent, const ht_frame_t *f)
{
	uint64_t h = label_hash(parent, f->function, f->address);
	uint32_t k;
	while ((k = ht_map_get(&t->index, h)) != HT_MAP_NONE) {
		if (t->n[k].parent == parent && same_label(&t->n[k], f))
			break;
		h++;
	}
	if (k == HT_MAP_NONE) {
		k = node_new(t, parent);
		if (k == NO_NODE || ht_map_put(&t->index, h, k))
			return NO_NODE;
		node_t *n = &t->n[k];
		n->name = f->function;
		n->file = f->file;
		n->module = f->module;
		n->address = f->address;
		n->has_offset = f->has_offset;
		n->offset = f->offset;
	}
	node_t *n = &t->n[k];
	if (f->line > 0) {
		bool seen = false;
		for (int i = 0; i < n->nlines; i++)
			seen |= n->lines[i] == f->line;
		if (!seen && n->nlines < MAX_LINES)
			n->lines[n->nlines++] = f->line;
		else if (!seen)
			n->more_lines = true;
	}
	return k;
}

static int build_tree(const ht_model_t *m, ht_symbolizer_t *sym, ht_cost_t cost, tree_t *t)
{
	ht_frame_t *frames = NULL;
	size_t cap = 0;
	int e = 0;
	if (node_new(t, NO_NODE) == NO_NODE) /* the root: "all" */
		return -ENOMEM;
	for (size_t i = 0; i < m->nsites && !e; i++) {
		const ht_site_t *s = &m->sites[i];
		uint64_t c = ht_site_cost(s, cost);
		if (!c)
			continue;
		long nf = ht_model_frames(m, sym, s, &frames, &cap);
		if (nf < 0) {
			e = (int)nf;
			break;
		}
		uint32_t at = 0;
		t->n[0].value += c;
		if (nf == 0) { /* no frames: one box named for what it stands for */
			ht_frame_t ph = { .function = ht_site_placeholder(s) };
			if ((at = child_for(t, 0, &ph)) == NO_NODE) {
				e = -ENOMEM;
				break;
			}
			t->n[at].value += c;
		}
		/* frames are leaf first: walk them from the outermost */
		for (long k = nf; k-- > 0;) {
			at = child_for(t, at, &frames[k]);
			if (at == NO_NODE) {
				e = -ENOMEM;
				break;
			}
			t->n[at].value += c;
		}
		if (!e)
			t->n[at].self += c;
	}
	free(frames);
	return e;
}

/* ---- labels and colours ---------------------------------------------------------- */

/* A box's label: the function, else module+offset as every output has it
 * (ht_frame_label). */
static void node_label(const node_t *n, char *buf, size_t len)
{
	if (n->name) {
		snprintf(buf, len, "%s", n->name);
	} else {
		ht_frame_t f = { .module = n->module, .address = n->address,
				 .has_offset = n->has_offset, .offset = n->offset };
		ht_frame_label(&f, buf, len);
	}
}

/* The program's own frames burn red-orange, shared libraries (libc,
 * libstdc++, ld.so, ...) amber-tan, unknown ones grey: hue by origin, shade
 * by a hash of the name, so a function keeps its colour across files. */
static void node_colour(const node_t *n, const char *exe, char *buf, size_t len)
{
	uint64_t h = label_hash(0, n->name, n->address);
	unsigned a = (unsigned)(h & 0xff), b = (unsigned)((h >> 8) & 0xff), c = (unsigned)((h >> 16) & 0xff);
	if (!n->name && !n->module) {
		unsigned g = 180 + a % 40;
		snprintf(buf, len, "rgb(%u,%u,%u)", g, g, g);
	} else if (n->module && exe && strcmp(n->module, exe)) {
		snprintf(buf, len, "rgb(%u,%u,%u)", 215 + a % 35, 170 + b % 45, 80 + c % 50);
	} else {
		snprintf(buf, len, "rgb(%u,%u,%u)", 225 + a % 30, 60 + b % 120, 20 + c % 40);
	}
}

/* ---- XML output -------------------------------------------------------------------- */

/* Names, paths and the command go through ht_xml_put (safe.h): the file stays
 * well-formed XML whatever their bytes. */

static const char *cost_unit(ht_cost_t c)
{
	switch (c) {
	case HT_COST_ALLOCATIONS: return "allocations";
	case HT_COST_PEAK: return "bytes at peak";
	case HT_COST_LEAKED: return "bytes in use at exit";
	case HT_COST_TEMPORARY: return "temporary allocations";
	case HT_COST_BYTES:
	default: return "bytes allocated";
	}
}

/* ---- layout ------------------------------------------------------------------------ */

static int cmp_name(const node_t *a, const node_t *b)
{
	if (a->name && b->name)
		return strcmp(a->name, b->name);
	if (a->name || b->name)
		return a->name ? -1 : 1; /* named first */
	return a->address < b->address ? -1 : a->address > b->address;
}

/* Sort each child list by name (insertion into a fresh list: lists are
 * short) and give every box its x and width. Iterative: stacks can be deep. */
static int layout(tree_t *t)
{
	double scale = t->n[0].value ? (WIDTH - 2 * PAD) / (double)t->n[0].value : 0;
	uint32_t *todo = malloc((t->len + 1) * sizeof(*todo));
	if (!todo)
		return -ENOMEM;
	size_t ntodo = 0;
	t->n[0].x = PAD;
	t->n[0].w = (double)t->n[0].value * scale;
	todo[ntodo++] = 0;
	while (ntodo) {
		node_t *p = &t->n[todo[--ntodo]];
		uint32_t sorted = NO_NODE;
		for (uint32_t c = p->first_child, next; c != NO_NODE; c = next) {
			next = t->n[c].next_sibling;
			uint32_t *at = &sorted;
			while (*at != NO_NODE && cmp_name(&t->n[*at], &t->n[c]) <= 0)
				at = &t->n[*at].next_sibling;
			t->n[c].next_sibling = *at;
			*at = c;
		}
		p->first_child = sorted;
		double x = p->x;
		for (uint32_t c = p->first_child; c != NO_NODE; c = t->n[c].next_sibling) {
			t->n[c].x = x;
			t->n[c].w = (double)t->n[c].value * scale;
			x += t->n[c].w;
			todo[ntodo++] = c;
		}
	}
	free(todo);
	return 0;
}

/* ---- writing ----------------------------------------------------------------------- */

static void write_frame(FILE *out, const tree_t *t, uint32_t i, double y, const char *exe,
			ht_cost_t cost)
{
	const node_t *n = &t->n[i];
	uint64_t total = t->n[0].value;
	char label[512], colour[32], num[HT_FMT_LEN];
	if (i == 0)
		snprintf(label, sizeof(label), "all");
	else
		node_label(n, label, sizeof(label));
	node_colour(n, exe, colour, sizeof(colour));
	double pct = total ? 100.0 * (double)n->value / (double)total : 0;

	fprintf(out, "<g class=\"frame%s\" data-name=\"", i == 0 ? " root" : "");
	ht_xml_put(out, label);
	fprintf(out, "\" data-value=\"%" PRIu64 "\" data-self=\"%" PRIu64 "\" data-depth=\"%u\""
		" data-x=\"%.3f\" data-w=\"%.3f\" data-where=\"",
		n->value, n->self, n->depth, n->x, n->w);
	/* file:line for the hover line and the tooltip */
	char where[600] = "";
	if (n->file) {
		size_t len = (size_t)snprintf(where, sizeof(where), "%s", n->file);
		for (int k = 0; k < n->nlines && len < sizeof(where) - 16; k++)
			len += (size_t)snprintf(where + len, sizeof(where) - len, "%c%d", k ? ',' : ':',
						n->lines[k]);
		if (n->more_lines && len < sizeof(where) - 4)
			snprintf(where + len, sizeof(where) - len, ",...");
	} else if (n->module) {
		snprintf(where, sizeof(where), "%s", n->module);
	}
	ht_xml_put(out, where);
	fputs("\"><title>", out);
	ht_xml_put(out, label);
	fprintf(out, "\n%s %s (%.2f%%)", ht_fmt_count(num, n->value), cost_unit(cost), pct);
	if (where[0]) {
		fputc('\n', out);
		ht_xml_put(out, where);
	}
	fprintf(out, "</title><rect x=\"%.3f\" y=\"%.1f\" width=\"%.3f\" height=\"%.1f\" fill=\"%s\" rx=\"2\"/>"
		"<text x=\"%.3f\" y=\"%.1f\"></text></g>\n",
		n->x, y, n->w, FRAME_H - 1, i == 0 ? "rgb(240,140,60)" : colour, n->x + 3,
		y + FRAME_H - 5);
}

static const char script[] =
	"<script type=\"text/ecmascript\"><![CDATA[\n"
	"'use strict';\n"
	"(function () {\n"
	"  const svg = document.documentElement;\n"
	"  const W = +svg.getAttribute('data-width'), PAD = +svg.getAttribute('data-pad');\n"
	"  const total = +svg.getAttribute('data-total'), unit = svg.getAttribute('data-unit');\n"
	"  const frames = Array.from(document.querySelectorAll('g.frame'));\n"
	"  const details = document.getElementById('details');\n"
	"  const matched = document.getElementById('matched');\n"
	"  const input = document.getElementById('search');\n"
	"  const fmt = (v) => v.toLocaleString('en-US');\n"
	"  const pct = (v) => (total ? 100 * v / total : 0).toFixed(2) + '%';\n"
	"  let zoomed = null;\n"
	"  /* fit the label into its box, cut with '..': measured, since a\n"
	"     character's width depends on the font the browser picked */\n"
	"  function fit(g) {\n"
	"    const r = g.querySelector('rect'), t = g.querySelector('text');\n"
	"    const w = +r.getAttribute('width') - 6, name = g.getAttribute('data-name');\n"
	"    t.setAttribute('x', +r.getAttribute('x') + 3);\n"
	"    const fits = (s) => { t.textContent = s; return t.getComputedTextLength() <= w; };\n"
	"    if (w < 18 || fits(name)) { if (w < 18) t.textContent = ''; return; }\n"
	"    let lo = 0, hi = name.length - 1; /* the longest cut that fits */\n"
	"    while (lo < hi) {\n"
	"      const mid = (lo + hi + 1) >> 1;\n"
	"      if (fits(name.slice(0, mid) + '..')) lo = mid; else hi = mid - 1;\n"
	"    }\n"
	"    t.textContent = lo ? name.slice(0, lo) + '..' : '';\n"
	"  }\n"
	"  function place(g, x, w) {\n"
	"    const r = g.querySelector('rect');\n"
	"    r.setAttribute('x', x.toFixed(3));\n"
	"    r.setAttribute('width', w.toFixed(3));\n"
	"    fit(g);\n"
	"  }\n"
	"  /* zoom: g's box spans the width, its descendants scale with it, its\n"
	"     ancestors span the width faded, everything else hides */\n"
	"  function zoom(g) {\n"
	"    const x0 = +g.getAttribute('data-x'), w0 = +g.getAttribute('data-w');\n"
	"    const d0 = +g.getAttribute('data-depth'), scale = (W - 2 * PAD) / w0;\n"
	"    const eps = 1e-6;\n"
	"    for (const f of frames) {\n"
	"      const x = +f.getAttribute('data-x'), w = +f.getAttribute('data-w');\n"
	"      const d = +f.getAttribute('data-depth');\n"
	"      f.classList.remove('parent', 'hide');\n"
	"      if (d >= d0 && x >= x0 - eps && x + w <= x0 + w0 + eps) {\n"
	"        place(f, PAD + (x - x0) * scale, w * scale);\n"
	"      } else if (d < d0 && x <= x0 + eps && x + w >= x0 + w0 - eps) {\n"
	"        place(f, PAD, W - 2 * PAD);\n"
	"        f.classList.add('parent');\n"
	"      } else {\n"
	"        f.classList.add('hide');\n"
	"      }\n"
	"    }\n"
	"    zoomed = g;\n"
	"    document.getElementById('unzoom').classList.toggle('hide', d0 === 0);\n"
	"  }\n"
	"  function unzoom() {\n"
	"    zoom(frames.find((f) => f.classList.contains('root')));\n"
	"    zoomed = null;\n"
	"  }\n"
	"  function describe(g) {\n"
	"    const v = +g.getAttribute('data-value'), where = g.getAttribute('data-where');\n"
	"    return g.getAttribute('data-name') + ': ' + fmt(v) + ' ' + unit + ' (' + pct(v) + ')' +\n"
	"      (where ? '  ' + where : '');\n"
	"  }\n"
	"  function search(term) {\n"
	"    let re = null;\n"
	"    if (term) { try { re = new RegExp(term); } catch (e) { re = null; } }\n"
	"    let sum = 0;\n"
	"    const covered = [];\n"
	"    /* frames come in depth-first order: a match inside a counted one\n"
	"       adds nothing */\n"
	"    for (const f of frames) {\n"
	"      const name = f.getAttribute('data-name');\n"
	"      const hit = !!term && (re ? re.test(name) : name.includes(term));\n"
	"      f.classList.toggle('match', hit);\n"
	"      if (!hit) continue;\n"
	"      const x = +f.getAttribute('data-x'), w = +f.getAttribute('data-w');\n"
	"      if (covered.some(([cx, cw]) => x >= cx - 1e-6 && x + w <= cx + cw + 1e-6)) continue;\n"
	"      covered.push([x, w]);\n"
	"      sum += +f.getAttribute('data-value');\n"
	"    }\n"
	"    matched.textContent = term ? 'Matched: ' + pct(sum) + ' (' + fmt(sum) + ' ' + unit + ')' : '';\n"
	"    matched.setAttribute('data-value', term ? sum : '');\n"
	"  }\n"
	"  for (const g of frames) {\n"
	"    fit(g);\n"
	"    g.addEventListener('mouseover', () => { details.textContent = describe(g); });\n"
	"    g.addEventListener('mouseout', () => { details.textContent = ' '; });\n"
	"    g.addEventListener('click', () => {\n"
	"      if (g.classList.contains('root') || g === zoomed) unzoom(); else zoom(g);\n"
	"    });\n"
	"  }\n"
	"  document.getElementById('unzoom').addEventListener('click', unzoom);\n"
	"  input.addEventListener('input', () => search(input.value));\n"
	"  document.getElementById('clear').addEventListener('click', () => { input.value = ''; search(''); });\n"
	"  window.heaptrailFlame = { zoom, unzoom, search };\n"
	"})();\n"
	"]]></script>\n";

static const char style[] =
	"<style type=\"text/css\"><![CDATA[\n"
	"  text { font-family: 'DejaVu Sans Mono', Menlo, Consolas, monospace; font-size: 12px; fill: #000; }\n"
	"  .title { font-family: 'DejaVu Sans', Verdana, sans-serif; font-size: 17px; font-weight: bold; }\n"
	"  .sub { font-family: 'DejaVu Sans', Verdana, sans-serif; font-size: 12px; fill: #333; }\n"
	"  g.frame { cursor: pointer; }\n"
	"  g.frame text { pointer-events: none; }\n"
	"  g.frame:hover rect { stroke: #000; stroke-width: 0.8; }\n"
	"  g.frame.match rect { fill: rgb(230,0,230); }\n"
	"  g.frame.parent rect { opacity: 0.55; }\n"
	"  .hide { display: none; }\n"
	"  .button { cursor: pointer; fill: #1a5fb4; text-decoration: underline; }\n"
	"  input { font: 12px 'DejaVu Sans Mono', monospace; width: 210px; }\n"
	"]]></style>\n";

int ht_export_flamegraph(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym,
			 const ht_export_opts_t *o, const ht_export_data_t *data)
{
	(void)data;
	ht_cost_t cost = o ? o->cost : HT_COST_BYTES;
	bool icicle = o && o->icicle;
	const ht_trace_t *tr = m->trace;
	const ht_totals_t *tt = &m->totals;
	tree_t t = { 0 };
	int e = build_tree(m, sym, cost, &t);
	if (!e)
		e = layout(&t);
	if (e) {
		free(t.n);
		ht_map_free(&t.index);
		return e;
	}

	/* the main program's path, to tell its frames from libraries' */
	const char *exe = tr->exe_path && tr->exe_path[0] ? tr->exe_path : NULL;
	size_t omitted = 0;
	for (size_t i = 1; i < t.len; i++)
		omitted += t.n[i].w < MIN_WIDTH;
	double height = HEAD_H + (t.max_depth + 1) * FRAME_H + FOOT_H;
	char a[HT_FMT_LEN], b[HT_FMT_LEN], c[HT_FMT_LEN], d[HT_FMT_LEN], f[HT_FMT_LEN];

	fprintf(out,
		"<?xml version=\"1.0\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\""
		" xmlns=\"http://www.w3.org/2000/svg\" xmlns:xlink=\"http://www.w3.org/1999/xlink\""
		" data-width=\"%.0f\" data-pad=\"%.0f\" data-total=\"%" PRIu64 "\" data-unit=\"%s\""
		" data-cost=\"%s\" data-orientation=\"%s\" data-omitted=\"%zu\">\n",
		WIDTH, height, WIDTH, height, WIDTH, PAD, t.n[0].value, cost_unit(cost),
		ht_cost_name(cost), icicle ? "icicle" : "flame", omitted);
	fputs(style, out);
	fprintf(out, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"#fdf6ee\"/>\n", WIDTH,
		height);

	/* title: the cost and the program; subtitle: the trace's totals */
	fputs("<text class=\"title\" id=\"title\" x=\"600\" y=\"24\" text-anchor=\"middle\">"
	      "heaptrail flame graph: ", out);
	ht_xml_put(out, cost_unit(cost));
	fputs(" \xe2\x80\x94 ", out);
	ht_xml_put(out, tr->argc ? tr->argv[0] : exe ? exe : "?");
	fputs("</text>\n<text class=\"sub\" id=\"subtitle\" x=\"600\" y=\"44\" text-anchor=\"middle\">", out);
	char g[HT_FMT_LEN];
	/* samples and summaries cannot tell temporaries: "?" as in the report */
	bool tmp_known = !m->sample_rate && !tr->have_summary;
	if (m->sample_rate) {
		/* the boxes are the sites' estimates: show their sums, which the
		 * root is, and the agent's exact counts labelled as such */
		ht_site_t sum = { 0 };
		for (size_t i = 0; i < m->nsites; i++) {
			sum.allocations += m->sites[i].allocations;
			sum.bytes_allocated += m->sites[i].bytes_allocated;
			sum.peak_bytes += m->sites[i].peak_bytes;
			sum.leaked_bytes += m->sites[i].leaked_bytes;
			sum.leaked_blocks += m->sites[i].leaked_blocks;
		}
		fprintf(out,
			"~%s allocations \xc2\xb7 ~%s bytes allocated \xc2\xb7 peak ~%s bytes \xc2\xb7 in use at exit"
			" ~%s bytes in ~%s blocks \xc2\xb7 ? temporary",
			ht_fmt_count(a, sum.allocations), ht_fmt_count(b, sum.bytes_allocated),
			ht_fmt_count(c, sum.peak_bytes), ht_fmt_count(d, sum.leaked_bytes),
			ht_fmt_count(f, sum.leaked_blocks));
		fprintf(out, " (estimates; counted exactly: %s allocations, %s bytes)",
			ht_fmt_count(a, tt->allocations), ht_fmt_count(b, tt->bytes_allocated));
	} else {
		fprintf(out,
			"%s allocations \xc2\xb7 %s bytes allocated \xc2\xb7 peak %s bytes \xc2\xb7 in use at exit %s"
			" bytes in %s blocks \xc2\xb7 %s temporary",
			ht_fmt_count(a, tt->allocations), ht_fmt_count(b, tt->bytes_allocated),
			ht_fmt_count(c, tt->peak_heap_bytes), ht_fmt_count(d, tt->leaked_bytes),
			ht_fmt_count(f, tt->leaked_blocks), tmp_known ? ht_fmt_count(g, tt->temporary) : "?");
	}
	if (omitted)
		fprintf(out, "; %zu frame%s under %.1f px not drawn", omitted, omitted == 1 ? "" : "s",
			MIN_WIDTH);
	if (o && o->trace_path) {
		fputs(" \xe2\x80\x94 ", out);
		ht_xml_put(out, o->trace_path);
	}
	fputs("</text>\n", out);

	/* search box, legend, zoom reset */
	fputs("<foreignObject x=\"10\" y=\"54\" width=\"300\" height=\"24\">"
	      "<input xmlns=\"http://www.w3.org/1999/xhtml\" id=\"search\" type=\"search\""
	      " placeholder=\"Search (regex)\"/></foreignObject>\n"
	      "<text class=\"button\" id=\"clear\" x=\"240\" y=\"70\">clear</text>\n"
	      "<text id=\"matched\" x=\"290\" y=\"70\"></text>\n"
	      "<text class=\"button hide\" id=\"unzoom\" x=\"1100\" y=\"70\">Reset zoom</text>\n"
	      "<rect x=\"700\" y=\"60\" width=\"12\" height=\"12\" fill=\"rgb(240,110,30)\"/>"
	      "<text class=\"sub\" x=\"716\" y=\"70\">program</text>\n"
	      "<rect x=\"790\" y=\"60\" width=\"12\" height=\"12\" fill=\"rgb(230,190,105)\"/>"
	      "<text class=\"sub\" x=\"806\" y=\"70\">libraries</text>\n",
	      out);

	/* frames, depth first (the search relies on this order) */
	fputs("<g id=\"frames\">\n", out);
	uint32_t *todo = malloc((t.len + 1) * sizeof(*todo));
	if (!todo) {
		e = -ENOMEM;
	} else {
		size_t ntodo = 0;
		todo[ntodo++] = 0;
		while (ntodo) {
			uint32_t i = todo[--ntodo];
			const node_t *n = &t.n[i];
			if (i != 0 && n->w < MIN_WIDTH)
				continue; /* and its children, narrower still */
			double y = icicle ? HEAD_H + n->depth * FRAME_H
					  : HEAD_H + (t.max_depth - n->depth) * FRAME_H;
			write_frame(out, &t, i, y, exe, cost);
			/* push children in reverse so they come out in name order */
			size_t first = ntodo;
			for (uint32_t k = n->first_child; k != NO_NODE; k = t.n[k].next_sibling)
				todo[ntodo++] = k;
			for (size_t l = first, r = ntodo; l + 1 < r; l++, r--) {
				uint32_t tmp = todo[l];
				todo[l] = todo[r - 1];
				todo[r - 1] = tmp;
			}
		}
		free(todo);
	}
	fputs("</g>\n", out);
	fprintf(out, "<text id=\"details\" x=\"10\" y=\"%.0f\"> </text>\n", height - 10);
	fputs(script, out);
	fputs("</svg>\n", out);

	free(t.n);
	ht_map_free(&t.index);
	if (e)
		return e;
	return ferror(out) ? -EIO : 0;
}
