/* recursion.c - an allocation 201 program frames deep: main calls
 * recurse(199), which recurses down to recurse(0) (200 frames of recurse),
 * which calls leaf_alloc, which mallocs.
 *
 *   function    calls                                    allocs frees bytes
 *   leaf_alloc  malloc(4096), never freed                   1     0   4096
 *   total: 1 alloc, 0 frees, 4096 bytes; leaked 1 block / 4096 bytes.
 *
 * The leak's stack, leaf first: leaf_alloc, recurse x 200, main, then libc's
 * start-up frames. With the default depth (64) the 64 innermost frames are
 * kept: leaf_alloc then 63 x recurse. With --depth 256: leaf_alloc, 200 x
 * recurse, main, ... Exit status 0.
 */
#include <stdlib.h>
#include <string.h>

static void *volatile sink;

void *leaf_alloc(void);
int recurse(int n);

void *leaf_alloc(void)
{
	void *p = malloc(4096);
	memset(p, 0, 4096);
	return p;
}

/* Not a tail call at -O0: the add after the call keeps every frame. */
int recurse(int n)
{
	if (n == 0) {
		sink = leaf_alloc();
		return 1;
	}
	return recurse(n - 1) + 1;
}

int main(void)
{
	int depth = recurse(199);
	sink = NULL;
	return depth == 200 ? 0 : 1;
}
