/* record.c - the floor of a recorder that keeps every event: each call
 * reads the time stamp counter and stores the event's fields into the
 * thread's buffer. The buffer wraps around: no stack, no encoding, no
 * compression, nothing written. What a program pays for this is below
 * anything a profiler that records each event with its time can reach
 * (bench/floor.py). */
#include <stddef.h>
#include <stdlib.h>
#include <stdint.h>
#include <x86intrin.h>

void *__libc_malloc(size_t size);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t size);
void __libc_free(void *p);

#define WORDS 8192 /* a power of 2 */

static __thread uint64_t buf[WORDS] __attribute__((tls_model("initial-exec")));
static __thread unsigned pos __attribute__((tls_model("initial-exec")));

static inline void put(uint64_t addr, uint64_t size)
{
	unsigned i = pos;
	buf[i] = __rdtsc();
	buf[i + 1] = addr;
	buf[i + 2] = size;
	pos = (i + 4) & (WORDS - 1);
}

void *malloc(size_t size)
{
	void *p = __libc_malloc(size);
	put((uintptr_t)p, size);
	return p;
}

void *calloc(size_t n, size_t size)
{
	void *p = __libc_calloc(n, size);
	put((uintptr_t)p, n * size);
	return p;
}

void *realloc(void *old, size_t size)
{
	void *p = __libc_realloc(old, size);
	put((uintptr_t)old, 0);
	put((uintptr_t)p, size);
	return p;
}

void free(void *p)
{
	put((uintptr_t)p, 0);
	__libc_free(p);
}
