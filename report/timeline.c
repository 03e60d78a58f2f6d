/* timeline.c - memory over time in the report: the text chart and the JSON
 * series, plus the point view of the time series that the chrome and massif
 * exports share.
 *
 * Everything here reads ht_model_timeline's buckets, never the events, so
 * the cost is one replay and O(buckets) memory for any trace. A chart column
 * is one bucket and shows the highest heap reached within it (an envelope:
 * a spike shorter than a column still shows at full height), so the peak
 * column reaches the top row exactly.
 */
#include "report/timeline.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/mapped.h"
#include "analysis/util.h"
#include "report/report.h"

#define TL_MAX_COLS 76	   /* chart columns: 12 + 76 + 12 = a 100-column line */
/* narrower to fit --width or the terminal (ht_text_style) */
#define TL_COLS tl_cols()
#define TL_ROWS 12	   /* chart rows */
#define TL_JSON_BUCKETS 200 /* JSON series: at most 401 points */

/* ---- points --------------------------------------------------------------------- */

static bool same_values(const ht_tl_point_t *a, const ht_tl_point_t *b)
{
	return a->heap_bytes == b->heap_bytes && a->heap_blocks == b->heap_blocks &&
	       a->rss_bytes == b->rss_bytes;
}

int ht_timeline_points(const ht_timeline_t *tl, ht_tl_point_t **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	ht_tl_point_t *p = malloc((2 * tl->n + 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	size_t k = 0;
	p[k++] = (ht_tl_point_t){ 0, 0, 0, 0, false };
	for (size_t i = 0; i < tl->n; i++) {
		const ht_tl_bucket_t *b = &tl->b[i];
		bool last = i + 1 == tl->n;
		ht_tl_point_t mx = { b->max_time_ns, b->max_bytes, b->max_blocks, b->rss_at_max,
				     i == tl->peak && tl->peak_bytes > 0 };
		/* the peak is higher than anything before it: never a repeat */
		if (mx.peak || !same_values(&mx, &p[k - 1]))
			p[k++] = mx;
		/* the end state, stamped inside the bucket (its end_ns belongs
		 * to the next one); the last bucket is closed at span_ns */
		uint64_t t = last || b->end_ns == b->start_ns ? b->end_ns : b->end_ns - 1;
		if (t < p[k - 1].time_ns)
			t = p[k - 1].time_ns;
		ht_tl_point_t end = { t, b->heap_bytes, b->heap_blocks, b->rss_bytes, false };
		/* the last point always comes: the series spans the whole run */
		if (last || !same_values(&end, &p[k - 1]))
			p[k++] = end;
	}
	*out = p;
	*n = k;
	return 0;
}

/* ---- text chart ------------------------------------------------------------------- */

/* Rows a value fills out of TL_ROWS when max fills them all: rounded, and
 * at least one for any non-zero value so that activity always shows. */
static unsigned rows_for(uint64_t v, uint64_t max)
{
	if (!v || !max)
		return 0;
	unsigned __int128 r = ((unsigned __int128)v * TL_ROWS * 2 + max) / (2 * (unsigned __int128)max);
	return r < 1 ? 1 : r > TL_ROWS ? TL_ROWS : (unsigned)r;
}

/* Put s into line at column col (clipped at the line's end). */
static void place(char *line, size_t len, size_t col, const char *s)
{
	for (size_t i = 0; s[i] && col + i < len; i++)
		line[col + i] = s[i];
}

static void rstrip_print(ht_emitter_t *e, char *line, size_t len)
{
	while (len && line[len - 1] == ' ')
		len--;
	ht_emit_printf(e, "%.*s\n", (int)len, line);
}

static size_t tl_cols(void)
{
	size_t w = ht_text_style.width;
	return w && w < 100 ? (w > 24 + 20 ? w - 24 : 20) : TL_MAX_COLS;
}

static const char *time_label(char *buf, uint64_t ns)
{
	if (!ns)
		return strcpy(buf, "0");
	return ht_fmt_duration(buf, ns);
}

size_t ht_report_timeline_buckets(bool json)
{
	return json ? TL_JSON_BUCKETS : TL_COLS;
}

/* The text chart (the JSON back end writes nothing here). */
static int timeline_chart(ht_emitter_t *e, const ht_model_t *m)
{
	const ht_totals_t *tt = &m->totals;
	char a[HT_FMT_LEN], b[HT_FMT_LEN], c[HT_FMT_LEN], d[HT_FMT_LEN], f[HT_FMT_LEN];
	ht_emit_rule(e, "MEMORY OVER TIME");
	if (!tt->allocations) {
		ht_emit_printf(e, "  no allocations: nothing to chart\n");
		return 0;
	}

	ht_timeline_t tl;
	int err = ht_model_timeline(m, TL_COLS, &tl);
	if (err)
		return err;
	uint64_t ymax = tl.peak_bytes, rmax = tl.rss_max;
	/* the program's own maps share the heap's axis: bytes beside bytes */
	const ht_mapped_t *mp = m->mapped && m->mapped->nsteps ? m->mapped : NULL;
	uint64_t mcol[TL_MAX_COLS] = {0};
	if (mp) {
		size_t k = 0;
		for (size_t x = 0; x < TL_COLS; x++) {
			/* the highest of the level carried in and the slice's steps */
			uint64_t v = ht_mapped_at(mp, tl.b[x].start_ns);
			for (; k < mp->nsteps && mp->step_time[k] < tl.b[x].end_ns; k++)
				if (mp->step_time[k] >= tl.b[x].start_ns && mp->step_live[k] > v)
					v = mp->step_live[k];
			mcol[x] = v;
		}
		if (mp->peak > ymax)
			ymax = mp->peak;
	}
	ht_emit_printf(e, "  # heap (left axis, highest in each %s)", time_label(a, tl.span_ns / TL_COLS));
	if (mp)
		ht_emit_printf(e, "   m mapped (left axis)");
	if (rmax)
		ht_emit_printf(e, "   . RSS (right axis, sampled)");
	ht_emit_printf(e, "   v peak\n");

	char grid[TL_ROWS][TL_MAX_COLS];
	memset(grid, ' ', sizeof(grid));
	for (size_t x = 0; x < TL_COLS; x++) {
		/* the slice's highest: its events' or the level carried in */
		uint64_t v = tl.b[x].max_bytes;
		if (x && tl.b[x - 1].heap_bytes > v)
			v = tl.b[x - 1].heap_bytes;
		unsigned h = rows_for(v, ymax);
		for (unsigned r = 0; r < h; r++)
			grid[TL_ROWS - 1 - r][x] = '#';
		unsigned hm = rows_for(mcol[x], ymax);
		if (hm && grid[TL_ROWS - hm][x] == ' ')
			grid[TL_ROWS - hm][x] = 'm';
		unsigned hr = rows_for(tl.b[x].rss_bytes, rmax);
		/* RSS is drawn where it is not hidden by the heap's bar */
		if (hr && grid[TL_ROWS - hr][x] == ' ')
			grid[TL_ROWS - hr][x] = '.';
	}

	/* the peak marker above its column, its figures beside it */
	char line[12 + TL_MAX_COLS + 40];
	size_t len = sizeof(line) - 1;
	memset(line, ' ', len);
	size_t px = 12 + tl.peak;
	char lbl[128];
	snprintf(lbl, sizeof(lbl), "peak %s (%s B) at %s", ht_fmt_size(a, tl.peak_bytes),
		 ht_fmt_count(b, tl.peak_bytes), time_label(c, tl.peak_time_ns));
	line[px] = 'v';
	if (px + 2 + strlen(lbl) <= 12 + TL_COLS + 10)
		place(line, len, px + 2, lbl);
	else if (px >= strlen(lbl) + 1)
		place(line, len, px - 1 - strlen(lbl), lbl);
	rstrip_print(e, line, len);

	for (unsigned r = 0; r < TL_ROWS; r++) {
		unsigned level = TL_ROWS - r; /* rows from the bottom */
		const char *left = "", *right = "";
		if (level == TL_ROWS) {
			left = ht_fmt_size(a, ymax);
			right = rmax ? ht_fmt_size(b, rmax) : "";
		} else if (level == TL_ROWS / 2) {
			left = ht_fmt_size(a, ymax / 2);
			right = rmax ? ht_fmt_size(b, rmax / 2) : "";
		}
		memset(line, ' ', len);
		snprintf(line, 13, "%10s |", left);
		memcpy(line + 12, grid[r], TL_COLS);
		line[12 + TL_COLS] = '|';
		if (right[0])
			place(line, len, 12 + TL_COLS + 2, right);
		rstrip_print(e, line, len);
	}

	/* time axis: ticks at the quarters, labelled with the column's start */
	memset(line, ' ', len);
	snprintf(line, 13, "%10s +", "0 B");
	memset(line + 12, '-', TL_COLS);
	line[12 + TL_COLS] = '+';
	if (rmax)
		place(line, len, 12 + TL_COLS + 2, "0 B");
	char axis[sizeof(line)];
	memcpy(axis, line, sizeof(line));
	memset(line, ' ', len);
	size_t free_from = 0;
	for (int q = 0; q <= 4; q++) {
		size_t x = q == 4 ? TL_COLS : (size_t)q * TL_COLS / 4;
		uint64_t t = q == 4 ? tl.span_ns : tl.b[x].start_ns;
		const char *s = time_label(a, t);
		size_t l = strlen(s);
		size_t col = q == 4 ? 12 + x - l + 1 : 12 + x;
		if (col < free_from)
			continue;
		if (q > 0 && q < 4) /* the axis ends are corners already */
			axis[12 + x] = '+';
		place(line, len, col, s);
		free_from = col + l + 1;
	}
	rstrip_print(e, axis, len);
	rstrip_print(e, line, len);

	ht_emit_printf(e, "  heap   peak %s at %s (%s %s), %s in %s %s at the end\n",
		ht_fmt_size(a, tl.peak_bytes), time_label(b, tl.peak_time_ns),
		ht_fmt_count(c, tl.peak_blocks), ht_blocks_word(tl.peak_blocks),
		ht_fmt_size(d, tt->leaked_bytes), ht_fmt_count(f, tt->leaked_blocks),
		ht_blocks_word(tt->leaked_blocks));
	if (mp)
		ht_emit_printf(e, "  mapped peak %s at %s, %s at the end (the program's own maps)\n",
			ht_fmt_size(a, mp->peak), time_label(b, mp->peak_time), ht_fmt_size(c, mp->live));
	if (tl.rss_samples)
		ht_emit_printf(e, "  RSS    %s sample%s, highest %s at %s; peak RSS %s (the kernel's high-water mark)\n",
			ht_fmt_count(a, tl.rss_samples), tl.rss_samples == 1 ? "" : "s",
			ht_fmt_size(b, rmax), time_label(d, tt->peak_rss_time_ns),
			ht_fmt_size(c, tt->peak_rss_bytes));
	else if (tt->peak_rss_bytes)
		ht_emit_printf(e, "  RSS    not sampled during the run; peak RSS %s (the kernel's high-water mark)\n",
			ht_fmt_size(a, tt->peak_rss_bytes));
	else
		ht_emit_printf(e, "  RSS    unknown: no samples in this trace\n");
	ht_timeline_free(&tl);
	return 0;
}

/* ---- JSON series -------------------------------------------------------------------- */

/* The series (the text back end writes nothing here). */
static int timeline_series(ht_emitter_t *e, const ht_model_t *m)
{
	ht_timeline_t tl;
	ht_tl_point_t *p;
	size_t n;
	int err = ht_model_timeline(m, TL_JSON_BUCKETS, &tl);
	if (err)
		return err;
	err = ht_timeline_points(&tl, &p, &n);
	ht_timeline_free(&tl);
	if (err)
		return err;
	ht_emit_arr_begin(e, "timeline");
	for (size_t i = 0; i < n; i++) {
		ht_emit_nl(e, 2);
		ht_emit_obj_begin(e, NULL);
		ht_emit_dbl(e, "time_seconds", 9, (double)p[i].time_ns / 1e9);
		ht_emit_u64(e, "heap_bytes", p[i].heap_bytes);
		ht_emit_u64(e, "heap_blocks", p[i].heap_blocks);
		ht_emit_u64_or_null(e, "rss_bytes", p[i].rss_bytes != 0, p[i].rss_bytes);
		/* the program's own maps, when the trace has any */
		if (m->mapped)
			ht_emit_u64(e, "mapped_bytes", ht_mapped_at(m->mapped, p[i].time_ns));
		if (p[i].peak)
			ht_emit_bool(e, "peak", true);
		ht_emit_obj_end(e);
	}
	ht_emit_arr_end(e);
	free(p);
	return 0;
}

int ht_section_timeline(ht_emitter_t *e, const ht_model_t *m)
{
	int err = ht_emit_json(e) ? timeline_series(e, m) : timeline_chart(e, m);
	return err ? err : ferror(e->out) ? -EIO : 0;
}
