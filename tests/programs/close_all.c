/* close_all.c - a program that closes every descriptor it did not open
 * itself, as daemons and fork-exec helpers do, or dup2s onto every low
 * number, with heap events before and after.
 *
 *   before   1000 x malloc(16), all freed
 *   then     by argv[1]: "close" close(3..4095), "closefrom" closefrom(3),
 *            "close_range" close_range(3, ~0U, 0), "dup2" dup2(/dev/null,
 *            3..99), each closed again; no argument: all four in turn
 *   after    1000 x malloc(32), 993 freed: 7 blocks (224 bytes) leaked
 *   ------------------------------------------------------------------------
 *   2000 allocations, 1993 frees, 48,000 bytes; 7 blocks, 224 bytes leaked.
 *
 * The trace's descriptor is among those numbers: every event must still
 * reach the trace. Exit status 0, or 1 if a call the program makes fails
 * where it must not (dup2 onto a free number, close of what it dup2ed).
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *volatile keep[1000];

static int dup2_all(void)
{
	int null = open("/dev/null", O_RDWR);
	if (null < 0)
		return 1;
	for (int fd = 3; fd < 100; fd++) {
		if (fd == null)
			continue;
		if (dup2(null, fd) != fd || close(fd) != 0)
			return 1;
	}
	close(null);
	return 0;
}

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "";
	for (int i = 0; i < 1000; i++)
		keep[i] = malloc(16);
	for (int i = 0; i < 1000; i++)
		free(keep[i]);

	if (!*how || !strcmp(how, "close"))
		for (int fd = 3; fd < 4096; fd++)
			close(fd);
	if (!*how || !strcmp(how, "closefrom"))
		closefrom(3);
	if (!*how || !strcmp(how, "close_range"))
		close_range(3, ~0U, 0);
	if ((!*how || !strcmp(how, "dup2")) && dup2_all())
		return 1;

	for (int i = 0; i < 1000; i++)
		keep[i] = malloc(32);
	for (int i = 7; i < 1000; i++)
		free(keep[i]);
	return 0;
}
