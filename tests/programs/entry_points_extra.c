/* entry_points_extra.c - the entry-point cases valgrind 3.19 cannot be the
 * oracle for, so their counts are known by construction only:
 *  - pvalloc: memcheck aborts ("Program aborting because of call to pvalloc");
 *  - a failing realloc: memcheck counts it as one alloc + one free of the
 *    requested size; by the convention (only successful calls count, the old
 *    block stays live) it counts nothing.
 *
 *   function        call                          allocs frees bytes
 *   use_pvalloc     pvalloc(1000), free;
 *                   __libc_pvalloc(500), free         2     2   1500 (requested
 *                                                       size, not the page)
 *   realloc_fails   malloc(40); realloc(p, huge),
 *                   reallocarray(p, overflowing),
 *                   reallocarray(p, huge) fail, each
 *                   with ENOMEM (nothing); free(p)    1     1     40
 *   leak_pvalloc    pvalloc(3000), never freed        1     0   3000
 *   total                                             4     3   4540
 *   leaked: 1 block, 3000 bytes (leaf leak_pvalloc). peak heap: 3000.
 *   Exit status 0 (1 if a call misbehaves).
 */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

void *__libc_pvalloc(size_t);

static int failures;

static void use_pvalloc(void)
{
	void *p = pvalloc(1000);
	if (!p || ((uintptr_t)p & 4095) != 0)
		failures++;
	free(p);
	p = __libc_pvalloc(500);
	if (!p || ((uintptr_t)p & 4095) != 0)
		failures++;
	free(p);
}

static void realloc_fails(void)
{
	volatile size_t huge = SIZE_MAX / 2;
	char *p = malloc(40);
	errno = 0;
	char *q = realloc(p, huge);
	if (!p || q || errno != ENOMEM)
		failures++;
	errno = 0;
	q = reallocarray(p, huge, 3);
	if (q || errno != ENOMEM)
		failures++;
	errno = 0;
	q = reallocarray(p, 1, huge);
	if (q || errno != ENOMEM)
		failures++;
	p[39] = 1; /* still ours */
	free(p);
}

static void *leak_pvalloc(void)
{
	void *p = pvalloc(3000);
	if (!p || ((uintptr_t)p & 4095) != 0)
		failures++;
	return p;
}

static void *volatile sink;

int main(void)
{
	use_pvalloc();
	realloc_fails();
	sink = leak_pvalloc();
	sink = NULL;
	return failures ? 1 : 0;
}
