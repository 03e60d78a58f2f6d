/* stamp.c - the floor of a time stamp per event: each call reads the time
 * stamp counter as heaptrail does once a process has a second thread
 * (RDTSCP, which waits for the loads before it: docs/INTERNALS.md) and
 * keeps it in a per-thread word. No fields stored, no buffer: what the
 * stamp alone costs a program (bench/floor.py). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <x86intrin.h>

void *__libc_malloc(size_t size);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t size);
void __libc_free(void *p);

static __thread uint64_t last __attribute__((tls_model("initial-exec")));

static inline void stamp(void)
{
	unsigned aux;
	last = __rdtscp(&aux);
}

void *malloc(size_t size)
{
	void *p = __libc_malloc(size);
	stamp();
	return p;
}

void *calloc(size_t n, size_t size)
{
	void *p = __libc_calloc(n, size);
	stamp();
	return p;
}

void *realloc(void *old, size_t size)
{
	stamp();
	void *p = __libc_realloc(old, size);
	stamp();
	return p;
}

void free(void *p)
{
	stamp();
	__libc_free(p);
}
