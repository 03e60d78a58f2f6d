/* progress.c - a progress line on stderr (progress.h). */
#include "analysis/progress.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static bool on;
static bool shown;
static uint64_t start_ns, after_ns, next_ns;
static unsigned calls;
static pthread_t owner; /* the thread that prints it */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void ht_progress_enable(void)
{
	if (!isatty(STDERR_FILENO))
		return;
	const char *e = getenv("HEAPTRAIL_PROGRESS_AFTER_MS");
	char *end;
	unsigned long long ms = e && *e ? strtoull(e, &end, 10) : 1000;
	if (e && *e && *end)
		ms = 1000;
	if (!on)
		atexit(ht_progress_clear);
	on = true;
	owner = pthread_self();
	start_ns = now_ns();
	after_ns = ms * 1000000u;
	next_ns = start_ns + after_ns;
}

void ht_progress(const char *phase, uint64_t done, uint64_t total, int bytes)
{
	/* the clock at most every 64th call: records can be a few bytes */
	if (!on || !pthread_equal(owner, pthread_self()) || (++calls & 63))
		return;
	uint64_t t = now_ns();
	if (t < next_ns)
		return;
	next_ns = t + 200000000u; /* five lines a second */
	unsigned pct = total ? (unsigned)(done >= total ? 100 : done * 100 / total) : 0;
	if (bytes)
		fprintf(stderr, "\r\033[Kheaptrail: %s: %.1f of %.1f MB (%u%%)", phase, done / 1e6,
			total / 1e6, pct);
	else
		fprintf(stderr, "\r\033[Kheaptrail: %s: %u%% of the run", phase, pct);
	fflush(stderr);
	shown = true;
}

void ht_progress_clear(void)
{
	if (shown) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
		shown = false;
	}
}
