/* countdown.c - the floor of a sampling interposer that counts exactly:
 * per call what any such sampler must do and nothing more. An allocation
 * adds to the thread's exact counts and moves its countdown of bytes to
 * the next sample (one subtract and a branch); a free counts and tests
 * one bit of a filter of sampled addresses. A sample only resets the
 * countdown (fixed spacing, no random draw) and sets its filter bit: no
 * stack, no set, no trace. Compare heaptrail's sample_rate=524288 with
 * this (bench/floor.py). */
#include <stddef.h>
#include <stdlib.h>
#include <stdint.h>

void *__libc_malloc(size_t size);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t size);
void __libc_free(void *p);

#define RATE 524288
#define FILTER_BITS 16

struct counts {
	int64_t left; /* bytes to the next sample */
	uint64_t allocs, frees, bytes;
};

static __thread struct counts tls __attribute__((tls_model("initial-exec")));
static uint64_t filter[(1u << FILTER_BITS) / 64];

static inline size_t slot(const void *p)
{
	return ((uintptr_t)p >> 4) & ((1u << FILTER_BITS) - 1);
}

/* Counts an allocation of size bytes; false when it is a sample. */
static inline int counted(size_t size)
{
	struct counts *t = &tls;
	int64_t left = t->left - (int64_t)size;
	if (__builtin_expect(left <= 0, 0))
		return 0;
	t->left = left;
	t->allocs++;
	t->bytes += size;
	return 1;
}

__attribute__((noinline)) static void *sampled(void *p, size_t size)
{
	tls.left = RATE;
	tls.allocs++;
	tls.bytes += size;
	if (p)
		__atomic_fetch_or(&filter[slot(p) / 64], 1ull << (slot(p) % 64), __ATOMIC_RELAXED);
	return p;
}

/* False when p may be sampled (its bit is set): forget clears it. */
static inline int unsampled(const void *p)
{
	size_t i = slot(p);
	return !((__atomic_load_n(&filter[i / 64], __ATOMIC_RELAXED) >> (i % 64)) & 1);
}

__attribute__((noinline)) static void forget(const void *p)
{
	size_t i = slot(p);
	__atomic_fetch_and(&filter[i / 64], ~(1ull << (i % 64)), __ATOMIC_RELAXED);
}

void *malloc(size_t size)
{
	if (__builtin_expect(counted(size), 1))
		return __libc_malloc(size);
	return sampled(__libc_malloc(size), size);
}

void *calloc(size_t n, size_t size)
{
	if (__builtin_expect(counted(n * size), 1))
		return __libc_calloc(n, size);
	return sampled(__libc_calloc(n, size), n * size);
}

void *realloc(void *p, size_t size)
{
	if (p) {
		if (__builtin_expect(!unsampled(p), 0))
			forget(p);
		tls.frees++;
	}
	if (__builtin_expect(counted(size), 1))
		return __libc_realloc(p, size);
	return sampled(__libc_realloc(p, size), size);
}

void free(void *p)
{
	if (__builtin_expect(p == NULL, 0))
		return;
	if (__builtin_expect(!unsampled(p), 0))
		forget(p);
	tls.frees++;
	__libc_free(p);
}
