/* close_trace.c - a program that closes or replaces the trace's descriptor
 * in one of the ways a program can (argv[1]), with heap events before and
 * after, so that the trace must have both.
 *
 *   before   100,000 x malloc(16), all freed
 *   then     by argv[1]:
 *     close_range              close_range(3, ~0U, 0) (glibc's)
 *     close_range_cloexec      close_range(3, ~0U, CLOSE_RANGE_CLOEXEC)
 *     sys_close_range          syscall(SYS_close_range, 3, ~0U, 0)
 *     sys_close_range_cloexec  the same with CLOSE_RANGE_CLOEXEC
 *     close                    close() on 3 up to past the trace's number
 *     sys_close                syscall(SYS_close, fd) on the same
 *     dup2, dup3               dup2/dup3 of /dev/null onto the trace's
 *     sys_dup2, sys_dup3       number, by glibc's function or by syscall()
 *     asm_close_range          close_range(3, ~0U, 0) by the syscall
 *                              instruction itself (x86-64; syscall()
 *                              elsewhere): no hook sees it
 *     asm_close                close of the trace's number, the same way
 *     asm_reuse                that, then the program's own file dup2'd
 *                              onto the number, held while the agent
 *                              writes (sleeps of 0.7 and 0.8 s around an
 *                              allocation that ships a block): the file
 *                              must stay empty and close without error
 *   after    100,100 x malloc(32), 100,093 freed: 7 blocks (224 bytes)
 *   ------------------------------------------------------------------------
 *   200,100 allocations, 200,093 frees, 4,803,200 bytes; 7 blocks, 224
 *   bytes leaked.
 *
 * The trace's number is found in /proc/self/fd (a link ending in ".ht");
 * without the agent the ways that need it do nothing. Exit status 0; 2 for
 * an unknown way; 3 if a call on the program's own descriptors fails (a
 * dup2 that does not return its target, a close of the program's own
 * file); 4 if the program's file received bytes it did not write. No
 * stdio.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC 4
#endif

static void *volatile keep[100100];

/* Without opendir, which would allocate. */
static int trace_fd(void)
{
	int d = open("/proc/self/fd", O_RDONLY | O_DIRECTORY);
	if (d < 0)
		return -1;
	int found = -1;
	char buf[4096] __attribute__((aligned(8)));
	long n;
	while (found < 0 && (n = syscall(SYS_getdents64, d, buf, sizeof buf)) > 0) {
		for (long off = 0; off < n && found < 0;) {
			unsigned short reclen;
			memcpy(&reclen, buf + off + 16, sizeof reclen);
			const char *name = buf + off + 19;
			char link[64], target[4096];
			strcpy(link, "/proc/self/fd/");
			strncat(link, name, sizeof link - 15);
			ssize_t k = readlink(link, target, sizeof target - 1);
			if (k > 3 && !memcmp(target + k - 3, ".ht", 3))
				found = atoi(name);
			off += reclen;
		}
	}
	close(d);
	return found;
}

/* The system call without glibc's syscall(), which the agent replaces. */
static long raw3(long n, long a, long b, long c)
{
#if defined(__x86_64__)
	long r;
	__asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
	return r;
#else
	return syscall(n, a, b, c);
#endif
}

static int dup_onto(const char *how, int tfd)
{
	if (tfd < 0)
		return 0;
	int null = open("/dev/null", O_WRONLY);
	if (null < 0)
		return 3;
	long r;
	if (!strcmp(how, "dup2"))
		r = dup2(null, tfd);
	else if (!strcmp(how, "dup3"))
		r = dup3(null, tfd, 0);
	else if (!strcmp(how, "sys_dup2"))
		r = syscall(SYS_dup2, null, tfd);
	else
		r = syscall(SYS_dup3, null, tfd, 0);
	if (r != tfd || write(tfd, "x", 1) != 1 || close(tfd) != 0)
		return 3;
	close(null);
	return 0;
}

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "";
	int tfd = trace_fd();
	int last = tfd > 4095 ? tfd : 4095;
	int mine = -1;
	char mine_path[] = "/tmp/close_trace.XXXXXX";

	for (int i = 0; i < 100000; i++)
		keep[i] = malloc(16);
	for (int i = 0; i < 100000; i++)
		free(keep[i]);

	if (!strcmp(how, "close_range"))
		close_range(3, ~0U, 0);
	else if (!strcmp(how, "close_range_cloexec"))
		close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
	else if (!strcmp(how, "sys_close_range"))
		syscall(SYS_close_range, 3, ~0U, 0);
	else if (!strcmp(how, "sys_close_range_cloexec"))
		syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC);
	else if (!strcmp(how, "close"))
		for (int fd = 3; fd <= last; fd++)
			close(fd);
	else if (!strcmp(how, "sys_close"))
		for (int fd = 3; fd <= last; fd++)
			syscall(SYS_close, fd);
	else if (!strncmp(how, "dup", 3) || !strncmp(how, "sys_dup", 7)) {
		int e = dup_onto(how, tfd);
		if (e)
			return e;
	} else if (!strcmp(how, "asm_close_range"))
		raw3(SYS_close_range, 3, ~0U, 0);
	else if (!strcmp(how, "asm_close") || !strcmp(how, "asm_reuse")) {
		if (tfd >= 0)
			raw3(SYS_close, tfd, 0, 0);
		if (!strcmp(how, "asm_reuse") && tfd >= 0) {
			int fd = mkstemp(mine_path);
			if (fd < 0 || dup2(fd, tfd) != tfd)
				return 3;
			close(fd);
			mine = tfd;
		}
	} else if (*how)
		return 2;

	for (int i = 0; i < 100100; i++) {
		keep[i] = malloc(32);
		if (mine >= 0 && (i == 1000 || i == 1001))
			usleep(i == 1000 ? 700000 : 800000);
	}
	for (int i = 7; i < 100100; i++)
		free(keep[i]);
	if (mine >= 0) {
		struct stat st;
		int bad = fstat(mine, &st) != 0 ? 3 : st.st_size != 0 ? 4 : 0;
		unlink(mine_path);
		if (close(mine) != 0)
			return 3;
		if (bad)
			return bad;
	}
	return 0;
}
