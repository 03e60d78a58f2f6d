/* steady.c - allocates at a steady, moderate rate until killed: malloc(64)
 * and free, 100 pairs a millisecond, so that its thread ships a block
 * every few hundred milliseconds and the writer is never idle for long.
 * The count of allocations made so far is kept in the file argv[1]
 * (shared memory: it is right whenever the process dies). Prints "ready"
 * first. No stdio. Killed by the test (SIGKILL).
 */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || ftruncate(fd, 4096) != 0)
		return 1;
	volatile long *count = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (count == MAP_FAILED)
		return 1;
	if (write(1, "ready\n", 6) != 6)
		return 1;
	for (long n = 1;; n++) {
		void *volatile p = malloc(64);
		free(p);
		*count = n;
		if (n % 100 == 0)
			usleep(1000);
	}
}
