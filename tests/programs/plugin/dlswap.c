/* dlswap.c - built twice, as libdlswap1.so (SWAP_FN=swap_one_alloc) and
 * libdlswap2.so (SWAP_FN=swap_two_alloc): the same code at the same
 * offsets, so when the second is loaded where the first was, its call to
 * malloc has the first one's return address (dlswap.c, the program).
 *
 *   SWAP_FN(n)  malloc(n), freed by the caller
 */
#include <stdlib.h>
#include <string.h>

void *SWAP_FN(size_t n);

void *SWAP_FN(size_t n)
{
	void *p = malloc(n); /* SWAP_ALLOC */
	memset(p, 0, n);
	return p;
}
