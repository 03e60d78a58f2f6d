/* low_fds.c - a program that expects the lowest descriptors to be free, as
 * they are without the agent: its first open gets 3 (0-2 being the
 * standard ones), and with RLIMIT_NOFILE lowered to 5 it can still open 3
 * and 4. The agent's own descriptors (the trace's, libunwind's pipe) must
 * be out of the way. Allocates first, from a few call chains, so that the
 * agent has started and unwound.
 *
 *   chain  55 x malloc(16) (chains 1 to 10 deep), all freed
 *
 * Exit status 0; 10 + the first descriptor if it is not 3; 2 if the
 * second open under the lowered limit fails. No stdio.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

__attribute__((noinline)) static void chain(int depth)
{
	if (depth)
		chain(depth - 1);
	free(malloc(16));
}

int main(void)
{
	for (int i = 0; i < 10; i++)
		chain(i);
	int fd = open("/dev/null", O_RDONLY);
	if (fd != 3)
		return 10 + fd;
	close(fd);
	struct rlimit rl = { 5, 5 };
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
		return 3;
	int a = open("/dev/null", O_RDONLY), b = open("/dev/null", O_RDONLY);
	return a == 3 && b == 4 ? 0 : 2;
}
