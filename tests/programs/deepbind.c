/* deepbind.c - dlopen libdlplugin.so (next to this binary) with
 * RTLD_DEEPBIND when argv[1] is "deep": the library then looks its
 * symbols up in its own dependencies first, and its malloc and free are
 * libc's, past the agent. It calls plugin_leak(2000) (2 mallocs, 1 free,
 * in the library), and dlclose's the library when argv[2] is "close".
 * heaptrail run must name the library as bound past it; without the flag
 * it must not. Exit status 0 (1 if the plugin cannot be loaded).
 */
#include <dlfcn.h>
#include <limits.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

static char path[PATH_MAX];
static void *volatile sink;

int main(int argc, char **argv)
{
	int deep = argc > 1 && !strcmp(argv[1], "deep");
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 32);
	if (n <= 0)
		return 1;
	path[n] = 0;
	strcpy(strrchr(path, '/') + 1, "libdlplugin.so");
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL | (deep ? RTLD_DEEPBIND : 0));
	if (!h)
		return 1;
	void *(*fn)(size_t) = (void *(*)(size_t))dlsym(h, "plugin_leak");
	if (!fn)
		return 1;
	sink = fn(2000);
	sink = NULL;
	if (argc > 2 && !strcmp(argv[2], "close"))
		dlclose(h);
	return 0;
}
