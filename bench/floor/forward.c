/* forward.c - the floor of any malloc interposer: each call goes on to
 * glibc's own entry point and nothing else happens. What it costs a
 * program is what LD_PRELOAD interposition costs before a profiler does
 * anything (bench/floor.py). */
#include <stddef.h>
#include <stdlib.h>

void *__libc_malloc(size_t size);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t size);
void __libc_free(void *p);

void *malloc(size_t size)
{
	return __libc_malloc(size);
}

void *calloc(size_t n, size_t size)
{
	return __libc_calloc(n, size);
}

void *realloc(void *p, size_t size)
{
	return __libc_realloc(p, size);
}

void free(void *p)
{
	__libc_free(p);
}
