/* mapped_section.c - MAPPED MEMORY: the program's own maps (mmap, mremap)
 * by call site, live at the end and at the peak of mapped memory
 * (analysis/mapped.h). Written once against the emitter: the text's top
 * sites and the JSON's "mapped" member with every site. */
#include "report/mapped_section.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "analysis/mapped.h"
#include "analysis/util.h"
#include "report/emitter.h"
#include "report/report.h"
#include "trace_format.h"

static const char *kind_name(unsigned k)
{
	return k == HT_MAP_FILE ? "file" : k == HT_MAP_SHARED ? "shared" : k == HT_MAP_BRK ? "brk" : "anonymous";
}

static const ht_map_site_t *g_sites;

/* live at the end, then at the peak, then first mapped */
static int by_live(const void *a, const void *b)
{
	const ht_map_site_t *x = &g_sites[*(const size_t *)a], *y = &g_sites[*(const size_t *)b];
	if (x->live != y->live)
		return x->live < y->live ? 1 : -1;
	if (x->at_peak != y->at_peak)
		return x->at_peak < y->at_peak ? 1 : -1;
	return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

static size_t *order(const ht_mapped_t *mp)
{
	size_t *idx = malloc((mp->nsites ? mp->nsites : 1) * sizeof(*idx));
	if (!idx)
		return NULL;
	for (size_t i = 0; i < mp->nsites; i++)
		idx[i] = i;
	g_sites = mp->sites;
	qsort(idx, mp->nsites, sizeof(*idx), by_live);
	return idx;
}

/* A site's stack: printed as the report's in text, its frames in JSON. */
static int site_stack(ht_emitter_t *e, const ht_model_t *m, ht_symbolizer_t *sym,
		      const ht_map_site_t *s, ht_frame_t **frames, size_t *cap)
{
	ht_site_t site = { 0 };
	site.stack_id = s->stack_id;
	site.stack = s->stack_id ? ht_trace_stack(m->trace, s->stack_id) : NULL;
	site.first_time = s->first_time;
	if (!ht_emit_json(e))
		return ht_report_stack_text(e->out, m, sym, &site, false);
	long nf = ht_model_frames(m, sym, &site, frames, cap);
	if (nf < 0)
		return (int)nf;
	ht_emit_frames(e, "stack", *frames, nf);
	return 0;
}

int ht_section_mapped(ht_emitter_t *e, const ht_model_t *m, ht_symbolizer_t *sym, size_t top)
{
	const ht_mapped_t *mp = m->mapped;
	if (!mp) {
		ht_emit_null(e, "mapped");
		return 0;
	}
	char a[HT_FMT_LEN], b[HT_FMT_LEN], d[HT_FMT_LEN], c[HT_FMT_LEN], e2[HT_FMT_LEN];
	ht_emit_rule(e, "MAPPED MEMORY");
	ht_emit_printf(e, "  the program's own maps (mmap, mremap, brk, sbrk; not malloc's, which "
			  "glibc maps itself)\n");
	ht_emit_printf(e, "  mapped at exit     %14s   %s B\n", ht_fmt_size(a, mp->live),
		       ht_fmt_count(b, mp->live));
	ht_emit_printf(e, "  peak mapped        %14s   %s B at %s\n", ht_fmt_size(a, mp->peak),
		       ht_fmt_count(b, mp->peak), ht_fmt_duration(d, mp->peak_time));
	ht_emit_printf(e, "  calls              %s mmap, %s mremap, %s munmap",
		       ht_fmt_count(a, mp->maps), ht_fmt_count(b, mp->remaps),
		       ht_fmt_count(c, mp->unmaps));
	if (mp->advised_free)
		ht_emit_printf(e, "; %s given back by madvise", ht_fmt_size(d, mp->advised_free));
	ht_emit_printf(e, "\n");
	ht_emit_obj_begin(e, "mapped");
	ht_emit_u64(e, "live_bytes", mp->live);
	ht_emit_u64(e, "peak_bytes", mp->peak);
	ht_emit_u64(e, "peak_time_ns", mp->peak_time);
	ht_emit_u64(e, "mmap_calls", mp->maps);
	ht_emit_u64(e, "mremap_calls", mp->remaps);
	ht_emit_u64(e, "munmap_calls", mp->unmaps);
	ht_emit_u64(e, "madvise_free_bytes", mp->advised_free);
	ht_emit_u64(e, "unmapped_unknown_bytes", mp->unknown_unmapped);
	ht_emit_nl(e, 2);
	ht_emit_arr_begin(e, "sites");
	size_t *idx = order(mp);
	if (!idx)
		return -ENOMEM;
	/* the text lists the top rows, the JSON every site */
	size_t n = ht_emit_json(e) ? mp->nsites : top ? top : 10;
	if (n > mp->nsites)
		n = mp->nsites;
	ht_frame_t *frames = NULL;
	size_t cap = 0;
	int err = 0;
	for (size_t k = 0; k < n && !err; k++) {
		const ht_map_site_t *s = &mp->sites[idx[k]];
		ht_emit_printf(e, "\n#%-3zu %10s at exit (%s B), %s at the peak, %s mapped in %s %s (%s)\n",
			       k + 1, ht_fmt_size(a, s->live), ht_fmt_count(b, s->live),
			       ht_fmt_size(c, s->at_peak), ht_fmt_size(d, s->bytes_mapped),
			       ht_fmt_count(e2, s->maps), s->maps == 1 ? "call" : "calls",
			       kind_name(s->kind));
		ht_emit_nl(e, 2);
		ht_emit_obj_begin(e, NULL);
		ht_emit_str(e, "kind", kind_name(s->kind));
		ht_emit_u64(e, "live_bytes", s->live);
		ht_emit_u64(e, "peak_bytes", s->at_peak);
		ht_emit_u64(e, "max_live_bytes", s->max_live);
		ht_emit_u64(e, "bytes_mapped", s->bytes_mapped);
		ht_emit_u64(e, "calls", s->maps);
		ht_emit_u64(e, "stack_id", s->stack_id);
		err = site_stack(e, m, sym, s, &frames, &cap);
		ht_emit_obj_end(e);
	}
	if (!err && mp->nsites > n)
		ht_emit_printf(e, "\n  ... %zu more sites (--format json lists them all)\n",
			       mp->nsites - n);
	ht_emit_arr_end(e);
	ht_emit_obj_end(e);
	free(frames);
	free(idx);
	return err;
}
