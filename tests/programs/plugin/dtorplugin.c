/* dtorplugin.c - build/tests/libdtorplugin.so, loaded by dtor_exit.c and
 * never unloaded: its constructor allocates, its destructor frees.
 *
 *   dtor_ctor_alloc  100 x malloc(64) in the constructor, all freed by the
 *                    destructor, which runs at exit among the ELF
 *                    destructors (_dl_fini)
 */
#include <stdlib.h>

static void *blocks[100];

void *dtor_ctor_alloc(size_t n);

void *dtor_ctor_alloc(size_t n)
{
	return malloc(n); /* DTOR_ALLOC */
}

__attribute__((constructor)) static void plugin_init(void)
{
	for (int i = 0; i < 100; i++)
		blocks[i] = dtor_ctor_alloc(64);
}

__attribute__((destructor)) static void plugin_fini(void)
{
	for (int i = 0; i < 100; i++)
		free(blocks[i]);
}
