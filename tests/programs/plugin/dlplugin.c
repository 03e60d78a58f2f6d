/* dlplugin.c - build/tests/libdlplugin.so, loaded and unloaded by dlopen.c.
 *
 *   plugin_leak(n)  malloc(n) freed, then malloc(n + 1000) returned to the
 *                   caller, which never frees it: 2 allocs, 1 free, the leak's
 *                   leaf frame is plugin_leak (in this library, which is
 *                   unloaded by the time the program exits).
 *   plugin_keep(n)   malloc(n) kept in this library's global: reachable for
 *                    as long as the library stays loaded (leak_classes.c).
 */
#include <stdlib.h>
#include <string.h>

void *plugin_leak(size_t n);
void plugin_keep(size_t n);

static void *kept;

void plugin_keep(size_t n)
{
	kept = malloc(n);
	memset(kept, 0, n);
}

void *plugin_leak(size_t n)
{
	void *tmp = malloc(n);
	memset(tmp, 0, n);
	free(tmp);
	void *p = malloc(n + 1000); /* PLUGIN_LEAK */
	memset(p, 0, n + 1000);
	return p;
}
