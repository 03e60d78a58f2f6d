/* own_malloc.c - an executable that defines malloc, free, calloc and
 * realloc itself (a bump allocator on a static arena), as programs with
 * their own allocator linked in do (Chromium's PartitionAlloc): its calls
 * never reach libc, nor heaptrail. heaptrail run must say so instead of
 * reporting 0 allocations as the program's. 1000 malloc(100) + free.
 * Exit status 0.
 */
#include <stddef.h>
#include <string.h>

static char arena[1 << 20];
static size_t used;

void *malloc(size_t n)
{
	if (used + n > sizeof arena)
		return NULL;
	void *p = arena + used;
	used += (n + 15) & ~(size_t)15;
	return p;
}

void free(void *p)
{
	(void)p;
}

void *calloc(size_t a, size_t b)
{
	void *p = malloc(a * b);
	if (p)
		memset(p, 0, a * b);
	return p;
}

void *realloc(void *old, size_t n)
{
	void *p = malloc(n);
	if (p && old)
		memcpy(p, old, n);
	return p;
}

int main(void)
{
	for (int i = 0; i < 1000; i++)
		free(malloc(100));
	return 0;
}
