/* unrolled.c - one source line that allocates from three call
 * instructions (a loop unrolled by hand): three return addresses, one
 * site as people read it (function, file, line).
 *
 *   make_three(size)  3 x malloc(size) on the line marked UNROLLED, each
 *                     block leaked (its pointer dropped)
 *   ---------------------------------------------------------------------
 *   program's own: 3 allocations, 3 leaked, 3 * size bytes; size is argv[1]
 *   (default 100).
 */
#include <stdlib.h>
#include <string.h>

static void *volatile keep[3];

static void __attribute__((noinline)) make_three(size_t size)
{
	keep[0] = malloc(size); keep[1] = malloc(size); keep[2] = malloc(size); /* UNROLLED */
	for (int i = 0; i < 3; i++)
		memset(keep[i], i, size);
	/* lost: no pointer to them is left */
	keep[0] = keep[1] = keep[2] = NULL;
}

int main(int argc, char **argv)
{
	make_three(argc > 1 ? strtoul(argv[1], NULL, 10) : 100);
	return 0;
}
