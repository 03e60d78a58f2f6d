/* libc_direct.c - glibc's own names of the malloc family, called directly
 * (__libc_malloc and the others: programs that wrap malloc forward to
 * them), mixed with the public ones. Each counts as its public twin, as
 * memcheck counts them.
 *
 *   function         calls                                  allocs frees bytes
 *   libc_then_free   __libc_malloc(100), free, x10              10    10  1000
 *   malloc_then_libc malloc(60), __libc_free, x10               10    10   600
 *   libc_realloc     malloc(50), __libc_realloc(p, 500), free    2     2   550
 *   realloc_of_libc  __libc_malloc(40), realloc(p, 400), free    2     2   440
 *   libc_calloc      __libc_calloc(2, 10), __libc_free           1     1    20
 *   libc_memalign    __libc_memalign(64, 96), free               1     1    96
 *   libc_valloc      __libc_valloc(1000), __libc_free            1     1  1000
 *   leak_libc        __libc_malloc(33), never freed              1     0    33
 *   total                                                       28    27  3739
 *   leaked: 1 block, 33 bytes (leaf leak_libc). peak heap: 1000.
 *   Exit status 0.
 */
#include <stdint.h>
#include <stdlib.h>

void *__libc_malloc(size_t);
void __libc_free(void *);
void *__libc_calloc(size_t, size_t);
void *__libc_realloc(void *, size_t);
void *__libc_memalign(size_t, size_t);
void *__libc_valloc(size_t);

static int failures;

static void libc_then_free(void)
{
	for (int i = 0; i < 10; i++)
		free(__libc_malloc(100));
}

static void malloc_then_libc(void)
{
	for (int i = 0; i < 10; i++)
		__libc_free(malloc(60));
}

static void libc_realloc(void)
{
	char *p = malloc(50);
	p = __libc_realloc(p, 500);
	free(p);
}

static void realloc_of_libc(void)
{
	char *p = __libc_malloc(40);
	p = realloc(p, 400);
	free(p);
}

static void libc_calloc(void)
{
	char *p = __libc_calloc(2, 10);
	if (!p || p[19])
		failures++;
	__libc_free(p);
}

static void libc_memalign(void)
{
	void *p = __libc_memalign(64, 96);
	if ((uintptr_t)p & 63)
		failures++;
	free(p);
}

static void libc_valloc(void)
{
	__libc_free(__libc_valloc(1000));
}

static void *leak_libc(void)
{
	return __libc_malloc(33);
}

static void *volatile sink;

int main(void)
{
	libc_then_free();
	malloc_then_libc();
	libc_realloc();
	realloc_of_libc();
	libc_calloc();
	libc_memalign();
	libc_valloc();
	sink = leak_libc();
	sink = NULL;
	return failures;
}
