/* folded.c - `heaptrail convert --format folded`: Brendan Gregg's folded
 * stacks, the input of flamegraph.pl and speedscope.
 *
 * One line per distinct symbolized stack: "root;caller;...;leaf COST", frames
 * root first, inlined functions as frames of their own (below their caller).
 * COST is the site's --cost figure (bytes allocated by default); lines that
 * cost 0 are left out, so the lines sum to the JSON report's total for that
 * cost. Sites whose stacks differ only in return addresses but symbolize to
 * the same names are merged into one line, as the readers would sum them
 * anyway and duplicate lines only make files bigger.
 *
 * Names: the function; a frame the symbolizer could not name becomes
 * "module+0xoffset" (module basename, file-relative address), or "0xADDR"
 * with no module. The format has no escaping, so ';' (the separator) becomes
 * ':', and names are escaped as the text report's are (safe.h: a newline
 * would end the line, an ESC reach the terminal of whoever reads the file).
 * Lines are sorted by cost, largest first, then by text: deterministic.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/frames.h"
#include "report/export.h"
#include "analysis/util.h"

/* A growable string. */
typedef struct sbuf {
	char *p;
	size_t len, cap;
} sbuf_t;

static int sb_add(sbuf_t *b, const char *s, size_t n)
{
	if (ht_util_grow((void **)&b->p, &b->cap, b->len + n + 1, 1))
		return -ENOMEM;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

/* Append one frame name, escaped, with the separator replaced. */
static int sb_name(sbuf_t *b, const char *s)
{
	size_t start = b->len, need = ht_text_len(s) + 1;
	bool safe = ht_text_is_safe(s);
	char *tmp = safe ? NULL : malloc(need);
	if (!safe && !tmp)
		return -ENOMEM;
	int e = sb_add(b, safe ? s : ht_text_safe(tmp, need, s), need - 1);
	free(tmp);
	if (e)
		return -ENOMEM;
	for (char *c = b->p + start; *c; c++)
		if (*c == ';')
			*c = ':';
	return 0;
}

typedef struct line {
	char *text; /* the stack, owned */
	uint64_t cost;
} line_t;

static int line_cmp(const void *a, const void *b)
{
	const line_t *x = a, *y = b;
	if (x->cost != y->cost)
		return x->cost > y->cost ? -1 : 1;
	return strcmp(x->text, y->text);
}

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

/* The name of frame f of site s (into buf when made up). */
static const char *frame_name(const ht_model_t *m, const ht_site_t *s, const ht_frame_t *f,
			      char *buf, size_t size)
{
	if (f->function && f->function[0])
		return f->function;
	if (f->has_offset && f->module)
		return ht_frame_label(f, buf, size);
	const ht_trace_t *t = m->trace;
	long mi = s->stack ? ht_trace_module_for(t, f->address, s->first_time) : -1;
	if (mi < 0) {
		snprintf(buf, size, "0x%" PRIx64, f->address);
		return buf;
	}
	const ht_module_t *mod = &t->modules[mi];
	const char *path = mod->path[0] ? mod->path : t->exe_path ? t->exe_path : "";
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	snprintf(buf, size, "%s+0x%" PRIx64, base[0] ? base : "[unknown]", f->address - mod->bias);
	return buf;
}

int ht_export_folded(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym, const ht_export_opts_t *o,
			    const ht_export_data_t *d)
{
	(void)d;
	ht_cost_t cost = o ? o->cost : HT_COST_BYTES;
	line_t *lines = NULL;
	size_t nlines = 0, cap_lines = 0;
	ht_map_t by_hash = { 0 }; /* hash of the text (+probe) -> index in lines */
	ht_frame_t *frames = NULL;
	size_t cap = 0;
	sbuf_t sb = { 0 };
	int e = 0;

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
		sb.len = 0;
		const char *ph = ht_site_placeholder(s);
		if (nf == 0)
			e = sb_add(&sb, ph, strlen(ph));
		/* frames come leaf first, inlined before their caller: reversed,
		 * that is root first with each inlined function above its caller */
		for (long k = nf - 1; k >= 0 && !e; k--) {
			char buf[320];
			e = sb_name(&sb, frame_name(m, s, &frames[k], buf, sizeof buf));
			if (!e && k > 0)
				e = sb_add(&sb, ";", 1);
		}
		if (e)
			break;
		uint64_t h = fnv1a(sb.p);
		uint32_t j;
		while ((j = ht_map_get(&by_hash, h)) != HT_MAP_NONE && strcmp(lines[j].text, sb.p))
			h++; /* a different stack with an equal hash: probe on */
		if (j != HT_MAP_NONE) {
			lines[j].cost += c;
			continue;
		}
		char *text = strdup(sb.p);
		if (!text || nlines >= UINT32_MAX - 1 ||
		    ht_util_grow((void **)&lines, &cap_lines, nlines + 1, sizeof(*lines)) ||
		    ht_map_put(&by_hash, h, (uint32_t)nlines)) {
			free(text);
			e = -ENOMEM;
			break;
		}
		lines[nlines++] = (line_t){ text, c };
	}
	if (!e && nlines) { /* lines is NULL when no stack has a cost */
		qsort(lines, nlines, sizeof(*lines), line_cmp);
		for (size_t i = 0; i < nlines; i++)
			fprintf(out, "%s %" PRIu64 "\n", lines[i].text, lines[i].cost);
	}
	for (size_t i = 0; i < nlines; i++)
		free(lines[i].text);
	free(lines);
	ht_map_free(&by_hash);
	free(frames);
	free(sb.p);
	if (e)
		return e;
	return ferror(out) ? -EIO : 0;
}
