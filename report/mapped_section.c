/* mapped_section.c - MAPPED MEMORY: the program's own maps (mmap, mremap)
 * by call site, live at the end and at the peak of mapped memory
 * (analysis/mapped.h). */
#include "report/mapped_section.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "analysis/mapped.h"
#include "analysis/util.h"
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

int ht_report_mapped_text(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym, size_t top)
{
	const ht_mapped_t *mp = m->mapped;
	if (!mp)
		return 0;
	char a[HT_FMT_LEN], b[HT_FMT_LEN], d[HT_FMT_LEN], c[HT_FMT_LEN], e2[HT_FMT_LEN];
	ht_report_rule(out, "MAPPED MEMORY");
	fprintf(out, "  the program's own maps (mmap, mremap, brk, sbrk; not malloc's, which glibc maps itself)\n");
	fprintf(out, "  mapped at exit     %14s   %s B\n", ht_fmt_size(a, mp->live),
		ht_fmt_count(b, mp->live));
	fprintf(out, "  peak mapped        %14s   %s B at %s\n", ht_fmt_size(a, mp->peak),
		ht_fmt_count(b, mp->peak), ht_fmt_duration(d, mp->peak_time));
	fprintf(out, "  calls              %s mmap, %s mremap, %s munmap", ht_fmt_count(a, mp->maps),
		ht_fmt_count(b, mp->remaps), ht_fmt_count(c, mp->unmaps));
	if (mp->advised_free)
		fprintf(out, "; %s given back by madvise", ht_fmt_size(d, mp->advised_free));
	fputc('\n', out);
	size_t *idx = order(mp);
	if (!idx)
		return -ENOMEM;
	size_t n = top ? top : 10;
	if (n > mp->nsites)
		n = mp->nsites;
	int e = 0;
	for (size_t k = 0; k < n && !e; k++) {
		const ht_map_site_t *s = &mp->sites[idx[k]];
		fprintf(out, "\n#%-3zu %10s at exit (%s B), %s at the peak, %s mapped in %s %s (%s)\n",
			k + 1, ht_fmt_size(a, s->live), ht_fmt_count(b, s->live),
			ht_fmt_size(c, s->at_peak), ht_fmt_size(d, s->bytes_mapped), ht_fmt_count(e2, s->maps),
			s->maps == 1 ? "call" : "calls", kind_name(s->kind));
		ht_site_t site = { 0 };
		site.stack_id = s->stack_id;
		site.stack = s->stack_id ? ht_trace_stack(m->trace, s->stack_id) : NULL;
		site.first_time = s->first_time;
		e = ht_report_stack_text(out, m, sym, &site, false);
	}
	if (!e && mp->nsites > n)
		fprintf(out, "\n  ... %zu more sites (--format json lists them all)\n", mp->nsites - n);
	free(idx);
	return e;
}

int ht_report_mapped_json(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym)
{
	const ht_mapped_t *mp = m->mapped;
	if (!mp) {
		fputs("null", out);
		return 0;
	}
	fprintf(out,
		"{\"live_bytes\": %" PRIu64 ", \"peak_bytes\": %" PRIu64 ", \"peak_time_ns\": %" PRIu64
		", \"mmap_calls\": %" PRIu64 ", \"mremap_calls\": %" PRIu64 ", \"munmap_calls\": %" PRIu64
		", \"madvise_free_bytes\": %" PRIu64 ", \"unmapped_unknown_bytes\": %" PRIu64
		",\n  \"sites\": [",
		mp->live, mp->peak, mp->peak_time, mp->maps, mp->remaps, mp->unmaps, mp->advised_free,
		mp->unknown_unmapped);
	size_t *idx = order(mp);
	if (!idx)
		return -ENOMEM;
	ht_frame_t *frames = NULL;
	size_t cap = 0;
	int e = 0;
	for (size_t k = 0; k < mp->nsites && !e; k++) {
		const ht_map_site_t *s = &mp->sites[idx[k]];
		fprintf(out,
			"%s\n  {\"kind\": \"%s\", \"live_bytes\": %" PRIu64 ", \"peak_bytes\": %" PRIu64
			", \"max_live_bytes\": %" PRIu64 ", \"bytes_mapped\": %" PRIu64 ", \"calls\": %" PRIu64
			", \"stack_id\": %" PRIu64 ", \"stack\": ",
			k ? "," : "", kind_name(s->kind), s->live, s->at_peak, s->max_live, s->bytes_mapped,
			s->maps, s->stack_id);
		ht_site_t site = { 0 };
		site.stack_id = s->stack_id;
		site.stack = s->stack_id ? ht_trace_stack(m->trace, s->stack_id) : NULL;
		site.first_time = s->first_time;
		long nf = ht_model_frames(m, sym, &site, &frames, &cap);
		if (nf < 0) {
			e = (int)nf;
			break;
		}
		ht_json_frames(out, frames, nf);
		fputc('}', out);
	}
	fputs("]}", out);
	free(frames);
	free(idx);
	return e;
}
