/* dlopen.c - dlopen libdlplugin.so (next to this binary), call its
 * plugin_leak(2000), dlclose it, then exit. The leaked block's stack must
 * still symbolize to plugin_leak after the library is gone.
 *
 *   function     calls                                      allocs frees bytes
 *   plugin_leak  malloc(2000) freed, malloc(3000) leaked       2     1   5000
 *   program's own: leaked 1 block / 3000 bytes, leaf plugin_leak.
 *
 * Plus the dynamic loader's own: dlopen mallocs the link map, its name, the
 * dependency and scope arrays, and dlclose frees them; memcheck counts them
 * too (the totals test compares with memcheck). Their stacks pass through
 * dlopen or dlclose. Exit status 0 (1 if the plugin cannot be loaded, 2 if it
 * cannot be unloaded).
 */
#include <dlfcn.h>
#include <limits.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

static char path[PATH_MAX];
static void *volatile sink;

int main(void)
{
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 32);
	if (n <= 0)
		return 1;
	path[n] = 0;
	strcpy(strrchr(path, '/') + 1, "libdlplugin.so");
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return 1;
	void *(*fn)(size_t) = (void *(*)(size_t))dlsym(h, "plugin_leak");
	if (!fn)
		return 1;
	sink = fn(2000);
	sink = NULL;
	if (dlclose(h) != 0)
		return 2;
	return 0;
}
