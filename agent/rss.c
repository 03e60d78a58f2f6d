/* rss.c - the resident set sampled over time.
 *
 * RSS events go into the threads' own streams: a thread that ships its
 * events adds one first (at most every HT_RSS_SHIP_NS in the process), and
 * the writer thread, every HT_RSS_TICK_NS in which no thread did (a
 * program that waits, or touches pages of a big map without allocating),
 * appends one to a quiet thread's buffer (ht_thread_post_rss), shipped with its
 * events (shipping it at once cut a slow program's blocks short). Reading
 * /proc/self/statm costs a few microseconds: 10 a second is nothing. The
 * highest sample and its time are kept for summary mode, which writes no
 * events. */
#include "agent.h"

static _Atomic uint64_t last_sample; /* time of the latest sample, 0: none */
static _Atomic uint64_t peak_bytes, peak_time;

bool ht_rss_claim(uint64_t now, uint64_t interval_ns)
{
	uint64_t last = atomic_load_explicit(&last_sample, memory_order_relaxed);
	if (last != 0 && now - last < interval_ns)
		return false;
	return atomic_compare_exchange_strong(&last_sample, &last, now);
}

uint64_t ht_rss_read_noted(uint64_t now)
{
	uint64_t rss = ht_read_rss();
	uint64_t peak = atomic_load_explicit(&peak_bytes, memory_order_relaxed);
	while (rss > peak) {
		if (atomic_compare_exchange_weak(&peak_bytes, &peak, rss)) {
			/* racing samplers may leave the time of a close second */
			atomic_store_explicit(&peak_time, now, memory_order_relaxed);
			break;
		}
	}
	return rss;
}

void ht_rss_tick(void)
{
	if (atomic_load(&ht_state) != HT_STATE_RECORDING)
		return;
	uint64_t now = ht_now();
	if (!ht_rss_claim(now, HT_RSS_TICK_NS))
		return;
	uint64_t rss = ht_rss_read_noted(now);
	if (!ht_opt_summary)
		ht_thread_post_rss(now, rss);
}

void ht_rss_peak(uint64_t *bytes, uint64_t *time)
{
	*bytes = atomic_load_explicit(&peak_bytes, memory_order_relaxed);
	*time = atomic_load_explicit(&peak_time, memory_order_relaxed);
}
