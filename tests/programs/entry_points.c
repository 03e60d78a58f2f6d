/* entry_points.c - every C allocation entry point, counts known by construction.
 *
 * Counting convention: valgrind memcheck's . Each successful
 * allocation call is one allocation of the requested size; realloc(p, n>0)
 * with p != NULL is one free plus one allocation; realloc(NULL, n) is one
 * allocation; realloc(p, 0) frees (glibc) and is one free; free(NULL) and
 * failed calls count nothing. No stdio: libc allocates nothing behind us.
 *
 *   function         call                            allocs frees bytes
 *   use_malloc       malloc(100), free                  1     1    100
 *   use_calloc       calloc(10, 20), free               1     1    200
 *   use_realloc      realloc(NULL, 50)                  1     0     50
 *                    realloc(p, 500)   (grow)           1     1    500
 *                    realloc(p, 20)    (shrink)         1     1     20
 *                    realloc(p, 0)     (frees)          0     1      0
 *   use_reallocarray reallocarray(NULL, 4, 25)          1     0    100
 *                    reallocarray(p, 8, 25)             1     1    200
 *                    free(p)                            0     1      0
 *   use_free_null    free(NULL)                         0     0      0
 *   use_posix_memalign posix_memalign(64, 256), free    1     1    256
 *   use_aligned_alloc aligned_alloc(128, 384), free     1     1    384
 *   use_memalign     memalign(32, 96), free             1     1     96
 *   use_valloc       valloc(1000), free                 1     1   1000
 *   use_usable_size  malloc(24), malloc_usable_size, free 1   1     24
 *   use_failures     malloc(huge), calloc(overflow), posix_memalign(align 3)
 *                    fail and count nothing; malloc(8), free 1     1      8
 *   leak_one         malloc(77), never freed            1     0     77
 *   ---------------------------------------------------------------------
 *   total                                              14    13   3015
 *   leaked: 1 block, 77 bytes (leaf function leak_one)
 *   peak heap: 1000 bytes, the valloc block while nothing else is live
 *   (a realloc is free-then-alloc, so use_realloc peaks at 500; leak_one
 *   runs last). Temporary allocations are checked in temporaries.c (a
 *   realloc's free-then-alloc makes them ambiguous here).
 *   Exit status 0.
 *
 * pvalloc and a failing realloc are in entry_points_extra.c: valgrind 3.19
 * aborts on pvalloc and counts a failed realloc as one alloc + one free of
 * the requested size, and this program's totals must be checkable by memcheck.
 */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures;

static void check(int ok, const char *what)
{
	if (!ok) {
		(void)!write(2, "entry_points: check failed: ", 28);
		(void)!write(2, what, strlen(what));
		(void)!write(2, "\n", 1);
		failures++;
	}
}

/* Keep the compiler from reasoning about the blocks (it cannot at -O0 with
 * -fno-builtin anyway). */
static void touch(void *p, size_t n)
{
	volatile unsigned char *c = p;
	for (size_t i = 0; i < n; i += 16)
		c[i] = (unsigned char)i;
}

static void use_malloc(void)
{
	void *p = malloc(100);
	check(p != NULL, "malloc");
	touch(p, 100);
	free(p);
}

static void use_calloc(void)
{
	unsigned char *p = calloc(10, 20);
	check(p != NULL && p[199] == 0, "calloc");
	free(p);
}

static void use_realloc(void)
{
	char *p = realloc(NULL, 50);
	check(p != NULL, "realloc(NULL, 50)");
	touch(p, 50);
	p = realloc(p, 500);
	check(p != NULL, "realloc grow");
	touch(p, 500);
	p = realloc(p, 20);
	check(p != NULL, "realloc shrink");
	p = realloc(p, 0); /* glibc: frees p, returns NULL */
	check(p == NULL, "realloc(p, 0) returns NULL");
}

static void use_reallocarray(void)
{
	void *p = reallocarray(NULL, 4, 25);
	check(p != NULL, "reallocarray(NULL)");
	p = reallocarray(p, 8, 25);
	check(p != NULL, "reallocarray grow");
	free(p);
}

static void use_free_null(void)
{
	free(NULL);
}

static void use_posix_memalign(void)
{
	void *p = NULL;
	int rc = posix_memalign(&p, 64, 256);
	check(rc == 0 && p && ((uintptr_t)p & 63) == 0, "posix_memalign");
	free(p);
}

static void use_aligned_alloc(void)
{
	void *p = aligned_alloc(128, 384);
	check(p && ((uintptr_t)p & 127) == 0, "aligned_alloc");
	free(p);
}

static void use_memalign(void)
{
	void *p = memalign(32, 96);
	check(p && ((uintptr_t)p & 31) == 0, "memalign");
	free(p);
}

static void use_valloc(void)
{
	void *p = valloc(1000);
	check(p && ((uintptr_t)p & 4095) == 0, "valloc");
	touch(p, 1000);
	free(p);
}

static void use_usable_size(void)
{
	void *p = malloc(24);
	check(p && malloc_usable_size(p) >= 24, "malloc_usable_size");
	free(p);
}

static void use_failures(void)
{
	/* A size no allocator can satisfy; volatile so nothing folds it. */
	volatile size_t huge = SIZE_MAX / 2;
	void *p = malloc(huge);
	check(p == NULL, "malloc(huge) fails");
	p = calloc(huge, 4); /* overflows */
	check(p == NULL, "calloc overflow fails");
	void *q = malloc(8);
	check(q != NULL, "malloc(8)");
	void *a = NULL;
	int rc = posix_memalign(&a, 3, 16);
	check(rc == EINVAL && a == NULL, "posix_memalign(align 3) fails");
	free(q);
}

static void *leak_one(void)
{
	void *p = malloc(77);
	touch(p, 77);
	return p;
}

static void *volatile sink;

int main(void)
{
	use_malloc();
	use_calloc();
	use_realloc();
	use_reallocarray();
	use_free_null();
	use_posix_memalign();
	use_aligned_alloc();
	use_memalign();
	use_valloc();
	use_usable_size();
	use_failures();
	sink = leak_one();
	sink = NULL; /* no pointer left: a definite leak */
	return failures ? 1 : 0;
}
