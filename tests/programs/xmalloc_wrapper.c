/* xmalloc_wrapper.c - allocations that all go through the program's own
 * wrappers (git's and bash's xmalloc, xrealloc, xcalloc, xstrdup; one
 * wrapper of its own, pool_grab, that only --fold-frames names), for the
 * folded frames of the text report (tests/e2e/test_stacks.py).
 *
 *   caller            through                allocations  bytes
 *   read_config()     xmalloc(100) x3              3        300
 *   parse_line()      xcalloc(4, 25) x2            2        200
 *   grow_buffer()     xmalloc(16), xrealloc(64)    2         80
 *   copy_name()       xstrdup("heaptrail") x1      1         10
 *   use_pool()        pool_grab(48) -> xmalloc     1         48
 *   everything is freed but read_config's 3 blocks (in use at exit: 300 bytes)
 *   Exit status 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) void *xmalloc(size_t n)
{
	void *p = malloc(n);
	if (!p)
		abort();
	return p;
}

__attribute__((noinline)) void *xcalloc(size_t n, size_t s)
{
	void *p = calloc(n, s);
	if (!p)
		abort();
	return p;
}

__attribute__((noinline)) void *xrealloc(void *q, size_t n)
{
	void *p = realloc(q, n);
	if (!p)
		abort();
	return p;
}

__attribute__((noinline)) char *xstrdup(const char *s)
{
	char *p = strdup(s);
	if (!p)
		abort();
	return p;
}

__attribute__((noinline)) void *pool_grab(size_t n)
{
	return xmalloc(n);
}

static void *keep[3];

__attribute__((noinline)) static void read_config(void)
{
	for (int i = 0; i < 3; i++)
		keep[i] = xmalloc(100);
}

__attribute__((noinline)) static void parse_line(void)
{
	for (int i = 0; i < 2; i++)
		free(xcalloc(4, 25));
}

__attribute__((noinline)) static void grow_buffer(void)
{
	char *b = xmalloc(16);
	b = xrealloc(b, 64);
	free(b);
}

__attribute__((noinline)) static void copy_name(void)
{
	free(xstrdup("heaptrail"));
}

__attribute__((noinline)) static void use_pool(void)
{
	free(pool_grab(48));
}

int main(void)
{
	read_config();
	parse_line();
	grow_buffer();
	copy_name();
	use_pool();
	printf("%p\n", keep[0]);
	return 0;
}
