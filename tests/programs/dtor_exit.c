/* dtor_exit.c - a library whose destructor frees what its constructor
 * allocated: those frees come during exit, after the program's atexit
 * handlers, among the ELF destructors.
 *
 *   libdtorplugin.so  100 x malloc(64) in its constructor (at dlopen), all
 *                     freed in its destructor (at exit; never dlclosed)
 *   ------------------------------------------------------------------------
 *   the library's own: 100 allocations, 100 frees, nothing leaked.
 *
 * Plus the dynamic loader's for dlopen (their stacks pass through dlopen).
 * Exit status 0 (1 if the library cannot be loaded).
 */
#include <dlfcn.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

static char path[PATH_MAX];

int main(void)
{
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 32);
	if (n <= 0)
		return 1;
	path[n] = 0;
	strcpy(strrchr(path, '/') + 1, "libdtorplugin.so");
	return dlopen(path, RTLD_NOW | RTLD_LOCAL) ? 0 : 1;
}
