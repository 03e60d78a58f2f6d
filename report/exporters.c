/* exporters.c - the table of `heaptrail convert` formats, and the cost
 * helpers they share. Add a format: write report/<name>.c with its
 * ht_export_<name>() and add one line here. */
#include <string.h>

#include "report/export.h"
#include "report/timeline.h" /* ht_export_chrome, ht_export_massif */

const ht_exporter_t ht_exporters[] = {
	{ "flamegraph", ht_export_flamegraph, "flame graph SVG (inline JS: tooltips, zoom, search; --cost, --icicle)", false, true, 0, 0 },
	/* written by its second pass (export.h: ht_heaptrack_attach) */
	{ "heaptrack", NULL, "heaptrack's format, for heaptrack_print and heaptrack_gui", true, false, 0, HT_COLLECT_HEAPTRACK },
	{ "pprof", ht_export_pprof, "gzipped pprof profile (go tool pprof, speedscope); all costs as sample types", false, false, 0, 0 },
	{ "folded", ht_export_folded, "folded stacks 'root;...;leaf COST' (flamegraph.pl, speedscope); --cost", false, true, 0, 0 },
	{ "events", ht_export_events, "every allocation, free and realloc as JSON lines, in time order", true, false, 0, HT_COLLECT_EVENTS },
	{ "chrome", ht_export_chrome, "Chrome Trace Event JSON: heap/RSS counters, a track per thread, the peak (Perfetto, DevTools, speedscope)", true, false, HT_CHROME_BUCKETS, HT_COLLECT_ACTIVITY },
	{ "massif", ht_export_massif, "valgrind massif.out: snapshots over time, detailed tree at the peak (ms_print, massif-visualizer)", true, false, HT_MASSIF_BUCKETS, 0 },
	{ NULL, NULL, NULL, false, false, 0, 0 },
};

uint64_t ht_site_cost(const ht_site_t *s, ht_cost_t c)
{
	switch (c) {
	case HT_COST_ALLOCATIONS:
		return s->allocations;
	case HT_COST_PEAK:
		return s->peak_bytes;
	case HT_COST_LEAKED:
		return s->leaked_bytes;
	case HT_COST_TEMPORARY:
		return s->temporary;
	case HT_COST_BYTES:
	default:
		return s->bytes_allocated;
	}
}

static const char *const cost_names[] = {
	[HT_COST_BYTES] = "bytes",	   [HT_COST_ALLOCATIONS] = "allocations",
	[HT_COST_PEAK] = "peak",	   [HT_COST_LEAKED] = "leaked",
	[HT_COST_TEMPORARY] = "temporary",
};

bool ht_cost_parse(const char *name, ht_cost_t *out)
{
	for (size_t i = 0; i < sizeof cost_names / sizeof *cost_names; i++) {
		if (!strcmp(name, cost_names[i])) {
			*out = (ht_cost_t)i;
			return true;
		}
	}
	return false;
}

const char *ht_cost_name(ht_cost_t c)
{
	return (size_t)c < sizeof cost_names / sizeof *cost_names ? cost_names[c] : "bytes";
}
