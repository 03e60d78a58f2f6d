/* malloc_pointer.c - built without PIE (Makefile), takes malloc's address:
 * malloc's address is then this executable's PLT entry everywhere, which
 * is not a malloc of its own. 100 malloc(32) through the pointer, each
 * freed: 100 allocations, 100 frees, 3200 bytes. Exit status 0.
 */
#include <stdlib.h>

void *(*volatile alloc)(size_t);

int main(void)
{
	alloc = malloc;
	for (int i = 0; i < 100; i++)
		free(alloc(32));
	return 0;
}
