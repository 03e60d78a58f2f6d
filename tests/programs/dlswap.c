/* dlswap.c - a library unloaded and another loaded at its address: the
 * second one's allocations must be attributed to it, not to the first,
 * although their return addresses are the same.
 *
 *   libdlswap1.so  swap_one_alloc  10 x malloc(100), each freed
 *   (dlclose, then dlopen of libdlswap2.so at the same address)
 *   libdlswap2.so  swap_two_alloc  10 x malloc(200), each freed
 *   ------------------------------------------------------------------------
 *   program's own: 20 allocations, 20 frees, 3,000 bytes.
 *
 * Plus the dynamic loader's own (link maps, names, scopes: their stacks
 * pass through dlopen or dlclose). Both libraries are called through the
 * same call sites (phase, call_plugin), so the whole chains are equal. Exit status 0; 1 if a
 * library cannot be loaded, 3 if the second was not loaded at the first
 * one's address (the case this program exists for did not happen).
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[PATH_MAX];

static void __attribute__((noinline)) call_plugin(void *(*fn)(size_t), size_t size)
{
	for (int i = 0; i < 10; i++)
		free(fn(size));
}

static const char *const libs[2] = {"libdlswap1.so", "libdlswap2.so"};
static const char *const syms[2] = {"swap_one_alloc", "swap_two_alloc"};
static void *fns[2];

/* Loads library k, calls it from call_plugin's one call site, unloads it.
 * 0 when done, 1 when the library cannot be loaded. */
static int __attribute__((noinline)) phase(int k)
{
	char path[PATH_MAX + 32];
	strcpy(path, dir);
	strcat(path, libs[k]);
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h || !(fns[k] = dlsym(h, syms[k])))
		return 1;
	call_plugin((void *(*)(size_t))fns[k], 100 * (size_t)(k + 1));
	dlclose(h);
	return 0;
}

int main(void)
{
	ssize_t n = readlink("/proc/self/exe", dir, sizeof(dir) - 32);
	if (n <= 0)
		return 1;
	dir[n] = 0;
	strrchr(dir, '/')[1] = 0;
	for (int k = 0; k < 2; k++)
		if (phase(k))
			return 1;
	return fns[0] == fns[1] ? 0 : 3;
}
