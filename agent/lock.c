/* lock.c - a futex mutex for the agent's slow paths.
 *
 * pthread mutexes would do for most uses, but the fatal-signal handler must
 * know whether the crashing thread itself holds the writer lock (then it must
 * not wait for it), and it must be able to give up after a timeout. The
 * algorithm is Drepper's "Futexes Are Tricky" mutex #2 plus an owner field.
 */
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"

static int self_tid(void)
{
	static __thread int tid;
	if (!tid)
		tid = (int)syscall(SYS_gettid);
	return tid;
}

static void futex_wait(_Atomic int *w, int val, const struct timespec *ts)
{
	syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, val, ts, NULL, 0);
}

static void futex_wake(_Atomic int *w)
{
	syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

void ht_lock(ht_lock_t *l)
{
	int c = 0;
	if (!atomic_compare_exchange_strong(&l->word, &c, 1)) {
		if (c != 2)
			c = atomic_exchange(&l->word, 2);
		while (c != 0) {
			futex_wait(&l->word, 2, NULL);
			c = atomic_exchange(&l->word, 2);
		}
	}
	atomic_store_explicit(&l->owner, self_tid(), memory_order_relaxed);
}

void ht_unlock(ht_lock_t *l)
{
	atomic_store_explicit(&l->owner, 0, memory_order_relaxed);
	if (atomic_fetch_sub(&l->word, 1) != 1) {
		atomic_store(&l->word, 0);
		futex_wake(&l->word);
	}
}

bool ht_lock_held(ht_lock_t *l)
{
	return atomic_load_explicit(&l->owner, memory_order_relaxed) == self_tid();
}

bool ht_lock_timed(ht_lock_t *l, int timeout_ms)
{
	if (atomic_load_explicit(&l->owner, memory_order_relaxed) == self_tid())
		return false;
	for (int waited = 0; waited <= timeout_ms; waited++) {
		int c = 0;
		if (atomic_compare_exchange_strong(&l->word, &c, 1)) {
			atomic_store_explicit(&l->owner, self_tid(),
					      memory_order_relaxed);
			return true;
		}
		struct timespec ms = {0, 1000000};
		syscall(SYS_nanosleep, &ms, NULL); /* not glibc's: a cancellation point */
	}
	return false;
}

bool ht_lock_try(ht_lock_t *l)
{
	int c = 0;
	if (!atomic_compare_exchange_strong(&l->word, &c, 1))
		return false;
	atomic_store_explicit(&l->owner, self_tid(), memory_order_relaxed);
	return true;
}
