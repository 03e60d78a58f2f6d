/* watch.h - the figures of heaptrail top: a pass consumer (analysis/pass.h)
 * that keeps, as the events come, the heap in use and its peak, the
 * allocations, a per-second history of the last minutes, and per site
 * (the pass's sites: one per stack id) the live bytes and blocks, the
 * allocations, and each of the last HT_WATCH_WINDOW seconds' values of
 * both, from which the view reads allocation rates and growth.
 *
 * Seconds are the trace's (event times): a trace read long after it was
 * written shows the rates it had when it ran.
 */
#ifndef HEAPTRAIL_WATCH_H
#define HEAPTRAIL_WATCH_H

#include <stdint.h>

#include "analysis/pass.h"

#define HT_WATCH_HISTORY 600 /* seconds of history kept: 10 minutes */
#define HT_WATCH_WINDOW 61   /* seconds of per-site values kept */

typedef struct ht_watch_site {
	uint64_t live_bytes, live_blocks; /* weighted (sampled traces) */
	uint64_t allocs, bytes;		  /* allocations made, bytes allocated */
	/* at the start of second s: [s % HT_WATCH_WINDOW] */
	uint64_t ring_allocs[HT_WATCH_WINDOW];
	uint64_t ring_live[HT_WATCH_WINDOW];
} ht_watch_site_t;

typedef struct ht_watch {
	ht_pass_t *pass;
	double rate; /* the trace's sample rate */
	uint64_t heap, blocks;	 /* in use now */
	uint64_t peak, peak_time; /* the largest heap in use, first reached at */
	uint64_t allocs, frees, bytes;
	uint64_t last_time; /* the latest event's */
	uint64_t now;	    /* the latest time ht_watch_tick was given */
	/* seconds: the first one seen, and the current one (by ht_watch_tick) */
	uint64_t sec0, sec;
	bool started;
	/* per second s, at [s % HT_WATCH_HISTORY]: the most heap in use and the
	 * allocations made in it */
	uint64_t hist_max[HT_WATCH_HISTORY], hist_allocs[HT_WATCH_HISTORY];
	ht_watch_site_t *sites; /* by the pass's site number */
	size_t nsites, cap_sites;
} ht_watch_t;

/* Register w (zeroed by the caller) on pass p, with the heap's table. */
int ht_watch_attach(ht_pass_t *p, ht_watch_t *w);
/* The trace's time is now `time` (ns): seconds before it are closed (their
 * per-site values kept), even with no event in them. */
void ht_watch_tick(ht_watch_t *w, uint64_t time);
/* Site i's allocations per second and live-byte growth over the last n
 * seconds (n < HT_WATCH_WINDOW; fewer when the trace has fewer). */
double ht_watch_site_rate(const ht_watch_t *w, size_t i, unsigned n);
int64_t ht_watch_site_growth(const ht_watch_t *w, size_t i, unsigned n);
/* Allocations per second over the last n whole seconds (with none, over
 * the part of a second there is). */
double ht_watch_rate(const ht_watch_t *w, unsigned n);
void ht_watch_free(ht_watch_t *w);

#endif /* HEAPTRAIL_WATCH_H */
