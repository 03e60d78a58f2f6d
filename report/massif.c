/* massif.c - heaptrail convert --format massif: valgrind massif's
 * massif.out, for ms_print and massif-visualizer.
 *
 * Layout (valgrind's docs/massif format, as both readers parse it: fixed
 * "key: " header lines, "#-----------" separators, one space of indent per
 * tree level):
 *   desc/cmd/time_unit header (time_unit: ms, times in milliseconds with
 *   the nanoseconds as decimals, which both readers take);
 *   snapshots: the points of the time series (timeline.h): time 0, the
 *   end of each of HT_MASSIF_BUCKETS equal slices of the run (evenly spread,
 *   like massif's) and the highest moment within each, so the exact peak is
 *   one of them; repeated values are dropped;
 *   heap_tree=peak at the peak: the live bytes of every site at that moment
 *   (site peak_bytes) as massif's inverted call tree, allocation point at
 *   the top, callers below; heap_tree=detailed at the end: what was still
 *   live (the leaks); the others empty.
 *
 * Tree invariants (ms_print dies when a child exceeds its snapshot): a
 * node's bytes are exactly the sum of its children's; a stack that ends
 * where others go on (depth limit, unknown callers) gets an explicit child
 * for its bytes; children below MASSIF_THRESHOLD of the snapshot fold into
 * one "below massif's threshold" node, as massif does.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/frames.h"
#include "report/timeline.h"
#include "analysis/util.h"

#define MASSIF_THRESHOLD_PCT 1 /* massif's default --threshold=1.0 */

/* ---- the tree --------------------------------------------------------------------- */

enum node_kind { NODE_ROOT, NODE_FRAME, NODE_ENDS, NODE_UNKNOWN };

typedef struct node {
	uint64_t bytes;	  /* live bytes under this node */
	uint64_t self;	  /* bytes of stacks that end at this node */
	uint32_t parent, first_child, next_sibling, nchildren;
	enum node_kind kind;
	ht_frame_t f;	  /* NODE_FRAME; strings live in the symbolizer */
} node_t;

#define NONE UINT32_MAX

typedef struct tree {
	node_t *n;
	size_t len, cap;
	ht_map_t index; /* hash of (parent, frame) -> node, probing on collision */
	uint32_t unknown; /* the root's "stack unknown" child, or NONE */
} tree_t;

static uint64_t hash_str(uint64_t h, const char *s)
{
	if (!s)
		return ht_util_hash64(h ^ 0x51);
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return ht_util_hash64(h);
}

static bool str_eq(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static bool frame_eq(const ht_frame_t *a, const ht_frame_t *b)
{
	return a->address == b->address && a->line == b->line && a->inlined == b->inlined &&
	       str_eq(a->function, b->function) && str_eq(a->file, b->file);
}

static int add_node(tree_t *t, uint32_t parent, enum node_kind kind, const ht_frame_t *f,
		    uint32_t *out)
{
	if (t->len >= NONE - 1 || ht_util_grow((void **)&t->n, &t->cap, t->len + 1, sizeof(*t->n)))
		return -ENOMEM;
	node_t *n = &t->n[t->len];
	memset(n, 0, sizeof(*n));
	n->parent = parent;
	n->first_child = NONE;
	n->next_sibling = NONE;
	n->kind = kind;
	if (f)
		n->f = *f;
	if (parent != NONE) {
		/* prepend: order does not matter, children are sorted on output */
		n->next_sibling = t->n[parent].first_child;
		t->n[parent].first_child = (uint32_t)t->len;
		t->n[parent].nchildren++;
	}
	*out = (uint32_t)t->len++;
	return 0;
}

/* The child of parent for frame f, created on first use. */
static int child_for(tree_t *t, uint32_t parent, const ht_frame_t *f, uint32_t *out)
{
	uint64_t h = ht_util_hash64(parent ^ ht_util_hash64(f->address));
	h = hash_str(hash_str(h ^ (uint64_t)f->line ^ ((uint64_t)f->inlined << 40), f->function), f->file);
	for (;; h++) { /* equal hashes of different frames: probe h+1 */
		uint32_t i = ht_map_get(&t->index, h);
		if (i == HT_MAP_NONE)
			break;
		if (t->n[i].parent == parent && frame_eq(&t->n[i].f, f)) {
			*out = i;
			return 0;
		}
	}
	int e = add_node(t, parent, NODE_FRAME, f, out);
	if (!e)
		e = ht_map_put(&t->index, h, *out);
	return e;
}

/* Build the tree of the live bytes given per site by cost (peak_bytes or
 * leaked_bytes). Returns 0 or a negative error; the root is node 0. */
static int build_tree(tree_t *t, const ht_model_t *m, ht_symbolizer_t *sym, bool at_peak)
{
	ht_frame_t *frames = NULL;
	size_t cap = 0;
	uint32_t root;
	int e = add_node(t, NONE, NODE_ROOT, NULL, &root);
	t->unknown = NONE;
	for (size_t i = 0; i < m->nsites && !e; i++) {
		const ht_site_t *s = &m->sites[i];
		uint64_t cost = at_peak ? s->peak_bytes : s->leaked_bytes;
		if (!cost)
			continue;
		long nf = ht_model_frames(m, sym, s, &frames, &cap);
		if (nf < 0) {
			e = (int)nf;
			break;
		}
		t->n[root].bytes += cost;
		if (nf == 0) { /* no frames at all: one shared "unknown" node */
			if (t->unknown == NONE && (e = add_node(t, root, NODE_UNKNOWN, NULL, &t->unknown)))
				break;
			t->n[t->unknown].bytes += cost;
			t->n[t->unknown].self += cost;
			continue;
		}
		/* leaf first: the allocation point hangs off the root */
		uint32_t cur = root;
		for (long k = 0; k < nf && !e; k++) {
			uint32_t c;
			if (!(e = child_for(t, cur, &frames[k], &c))) {
				t->n[c].bytes += cost;
				cur = c;
			}
		}
		t->n[cur].self += cost;
	}
	/* stacks that end where others go on: an explicit child keeps the
	 * node's bytes equal to its children's sum */
	size_t len = t->len;
	for (size_t i = 1; i < len && !e; i++) {
		uint32_t c;
		if (t->n[i].self && t->n[i].nchildren && !(e = add_node(t, (uint32_t)i, NODE_ENDS, NULL, &c)))
			t->n[c].bytes = t->n[c].self = t->n[i].self;
	}
	free(frames);
	return e;
}

static void tree_free(tree_t *t)
{
	free(t->n);
	ht_map_free(&t->index);
	memset(t, 0, sizeof(*t));
}

/* ---- writing ------------------------------------------------------------------------ */

/* A frame as massif labels it: "0xADDR: function (file:line)". Names are
 * escaped (safe.h): the format is line based, and ms_print shows them. */
static void put_label(FILE *out, const node_t *n)
{
	switch (n->kind) {
	case NODE_ROOT:
		fputs("(heap allocation functions) malloc/new/new[], --alloc-fns, etc.", out);
		return;
	case NODE_ENDS:
		fputs("(the recorded stack ends here: callers unknown)", out);
		return;
	case NODE_UNKNOWN:
		fputs("??? (stack unknown)", out);
		return;
	case NODE_FRAME:
		break;
	}
	const ht_frame_t *f = &n->f;
	fprintf(out, "0x%" PRIX64 ": ", f->address);
	char lab[HT_FRAME_LABEL_LEN];
	ht_text_put(out, f->function ? f->function : ht_frame_label(f, lab, sizeof lab));
	if (f->file) {
		fputs(" (", out);
		ht_text_put(out, f->file);
		if (f->line > 0)
			fprintf(out, ":%d", f->line);
		fputc(')', out);
	} else if (f->module) {
		fputs(" (in ", out);
		ht_text_put(out, f->module);
		fputc(')', out);
	}
}

typedef struct writer {
	FILE *out;
	tree_t *t;
	uint64_t total; /* the snapshot's mem_heap_B: the threshold's base */
	int err;
} writer_t;

static int by_bytes(const void *a, const void *b, void *arg)
{
	const node_t *n = arg;
	const node_t *x = &n[*(const uint32_t *)a], *y = &n[*(const uint32_t *)b];
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	if (x->kind == NODE_FRAME && y->kind == NODE_FRAME && x->f.address != y->f.address)
		return x->f.address < y->f.address ? -1 : 1; /* stable output */
	return (int)x->kind - (int)y->kind;
}

static bool significant(const writer_t *w, uint64_t bytes)
{
	return (unsigned __int128)bytes * 100 >= (unsigned __int128)w->total * MASSIF_THRESHOLD_PCT;
}

static void write_node(writer_t *w, uint32_t i, unsigned depth)
{
	const node_t *n = &w->t->n[i];
	uint32_t *kids = NULL;
	size_t nk = 0, nsig = 0;
	uint64_t insig = 0;
	if (n->nchildren) {
		kids = malloc(n->nchildren * sizeof(*kids));
		if (!kids) {
			w->err = -ENOMEM;
			return;
		}
		for (uint32_t c = n->first_child; c != NONE; c = w->t->n[c].next_sibling)
			kids[nk++] = c;
		qsort_r(kids, nk, sizeof(*kids), by_bytes, w->t->n);
		while (nsig < nk && significant(w, w->t->n[kids[nsig]].bytes))
			nsig++;
		for (size_t k = nsig; k < nk; k++)
			insig += w->t->n[kids[k]].bytes;
	}
	fprintf(w->out, "%*sn%zu: %" PRIu64 " ", (int)depth, "", nsig + (nk > nsig), n->bytes);
	put_label(w->out, n);
	fputc('\n', w->out);
	for (size_t k = 0; k < nsig && !w->err; k++)
		write_node(w, kids[k], depth + 1);
	if (nk > nsig)
		fprintf(w->out, "%*sn0: %" PRIu64 " in %zu place%s, %sbelow massif's threshold (%d.00%%)\n",
			(int)depth + 1, "", insig, nk - nsig, nk - nsig == 1 ? "" : "s",
			nk - nsig == 1 ? "" : "all ", MASSIF_THRESHOLD_PCT);
	free(kids);
}

/* Milliseconds with the nanoseconds as decimals: exact, and both readers
 * parse a decimal time (ms_print as text, massif-visualizer toDouble). */
static void put_ms(FILE *out, uint64_t ns)
{
	fprintf(out, "%" PRIu64 ".%06u", ns / 1000000, (unsigned)(ns % 1000000));
}

typedef enum snap_kind { SNAP_EMPTY, SNAP_PEAK, SNAP_DETAILED } snap_kind_t;

static int write_snapshot(FILE *out, unsigned num, uint64_t time_ns, uint64_t bytes,
			  snap_kind_t kind, const ht_model_t *m, ht_symbolizer_t *sym)
{
	tree_t t = { 0 };
	int e = kind == SNAP_EMPTY ? 0 : build_tree(&t, m, sym, kind == SNAP_PEAK);
	/* A tree's top must equal mem_heap_B (ms_print dies otherwise). In a
	 * sampled trace each site's estimate is rounded on its own, so their
	 * sum can miss the rounded total by a few bytes: the tree's sum wins. */
	if (kind != SNAP_EMPTY && !e)
		bytes = t.n[0].bytes;
	fprintf(out, "#-----------\nsnapshot=%u\n#-----------\ntime=", num);
	put_ms(out, time_ns);
	fprintf(out, "\nmem_heap_B=%" PRIu64 "\nmem_heap_extra_B=0\nmem_stacks_B=0\nheap_tree=%s\n",
		bytes, kind == SNAP_PEAK ? "peak" : kind == SNAP_DETAILED ? "detailed" : "empty");
	if (kind != SNAP_EMPTY && !e) {
		writer_t w = { out, &t, bytes, 0 };
		write_node(&w, 0, 0);
		e = w.err;
	}
	tree_free(&t);
	return e;
}

int ht_export_massif(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym,
		     const ht_export_opts_t *o, const ht_export_data_t *d)
{
	const ht_trace_t *t = m->trace;
	(void)o;
	int e;

	fputs("desc: heaptrail " HT_VERSION " convert --format massif\ncmd: ", out);
	if (t->argc) {
		for (size_t i = 0; i < t->argc; i++) {
			if (i)
				fputc(' ', out);
			ht_text_put(out, t->argv[i]);
		}
	} else {
		ht_text_put(out, t->exe_path && t->exe_path[0] ? t->exe_path : "(unknown)");
	}
	fputs("\ntime_unit: ms\n", out);

	/* the series' points: evenly spread bucket ends plus each bucket's
	 * highest moment, repeats dropped (ms_print and massif-visualizer draw
	 * a value until the next snapshot, so nothing is lost) */
	ht_tl_point_t *p;
	size_t n;
	if ((e = ht_timeline_points(d->timeline, &p, &n)))
		return e;
	for (size_t i = 0; i < n && !e; i++) {
		snap_kind_t kind = SNAP_EMPTY;
		if (p[i].peak)
			kind = SNAP_PEAK;
		else if (i + 1 == n && p[i].heap_bytes)
			kind = SNAP_DETAILED; /* what is still live at the end: the leaks */
		e = write_snapshot(out, (unsigned)i, p[i].time_ns, p[i].heap_bytes, kind, m, sym);
	}
	free(p);
	if (e)
		return e;
	return ferror(out) ? -EIO : 0;
}
