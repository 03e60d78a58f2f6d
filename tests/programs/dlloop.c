/* dlloop.c - dlopen libdlplugin.so (next to this binary), call its
 * plugin_leak(2000), dlclose it; argv[1] times (default 1000). Each round
 * may map the library at another address, and each load is a new module
 * in the trace: the same two lines of plugin_leak allocate every round.
 *
 *   plugin_leak  malloc(2000) freed, malloc(3000) leaked, per round
 *
 * Plus the dynamic loader's own (link maps, names, scopes: their stacks
 * pass through dlopen or dlclose). Exit status 0; 1 if the plugin cannot
 * be loaded, 2 if it cannot be unloaded.
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char path[PATH_MAX];
static void *volatile sink;

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? strtol(argv[1], NULL, 10) : 1000;
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 32);
	if (n <= 0)
		return 1;
	path[n] = 0;
	strcpy(strrchr(path, '/') + 1, "libdlplugin.so");
	for (long i = 0; i < rounds; i++) {
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
	}
	return 0;
}
