/* find_trace_fd.c - a program that comes across the trace's descriptor (a
 * shell saving what it takes for its own, a daemon probing descriptors):
 * it finds it in /proc/self/fd and must see it as not open: fcntl and dup
 * fail with EBADF; dup2 onto its number and writes there reach the
 * program's own file, never the trace.
 *
 *   then  10 x malloc(24), all freed
 *
 * Exit status 0 (also when no trace descriptor is found: run without the
 * agent); 3 if fcntl sees it, 4 if dup does, 5 if dup2 onto it fails.
 * No stdio.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int trace_fd(void)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return -1;
	int found = -1;
	struct dirent *e;
	while ((e = readdir(d)) && found < 0) {
		char link[64], target[4096];
		strcpy(link, "/proc/self/fd/");
		strncat(link, e->d_name, sizeof link - 15);
		ssize_t n = readlink(link, target, sizeof target - 1);
		if (n > 3 && !memcmp(target + n - 3, ".ht", 3))
			found = atoi(e->d_name);
	}
	closedir(d);
	return found;
}

int main(void)
{
	int fd = trace_fd();
	if (fd >= 0) {
		errno = 0;
		if (fcntl(fd, F_GETFD) != -1 || errno != EBADF)
			return 3;
		if (dup(fd) != -1)
			return 4;
		int null = open("/dev/null", O_WRONLY);
		if (null < 0 || dup2(null, fd) != fd)
			return 5;
		if (write(fd, "not the trace\n", 14) != 14)
			return 5;
		close(fd);
		close(null);
	}
	for (int i = 0; i < 10; i++)
		free(malloc(24));
	return 0;
}
