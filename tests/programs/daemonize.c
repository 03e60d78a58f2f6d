/* daemonize.c - a program that becomes a daemon with daemon(3), whose
 * parent leaves by an _exit inside glibc.
 *
 *   main     malloc(64) 1000 times, frees 500, then daemon(1, 1)
 *            parent: 1000 allocs, 500 frees, 500 blocks (32,000 B) live
 *            at its _exit
 *   daemon   malloc(32) + free, 10 times; leaves a file DIR/done
 *            (argv[1]) so that the test knows it finished  10 allocs 10 frees
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	static void *keep[1000];
	for (int i = 0; i < 1000; i++)
		keep[i] = malloc(64);
	for (int i = 0; i < 1000; i += 2)
		free(keep[i]);
	if (daemon(1, 1) != 0)
		return 1;
	for (int i = 0; i < 10; i++)
		free(malloc(32));
	char path[4096];
	size_t n = strlen(argv[1]);
	if (n + 6 > sizeof path)
		return 1;
	memcpy(path, argv[1], n);
	memcpy(path + n, "/done", 6);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	return fd < 0;
}
