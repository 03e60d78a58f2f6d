/* fmt.c - string, memory and log helpers that never call malloc.
 *
 * The agent runs inside malloc hooks, so it cannot use stdio, snprintf or
 * strdup (they may allocate). Together with writer.c, this is the only file
 * that makes raw system calls.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "agent.h"

size_t ht_strlen(const char *s)
{
	size_t n = 0;
	while (s[n])
		n++;
	return n;
}

int ht_strcmp(const char *a, const char *b)
{
	while (*a && *a == *b) {
		a++;
		b++;
	}
	return (unsigned char)*a - (unsigned char)*b;
}

int ht_strncmp(const char *a, const char *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (a[i] != b[i] || !a[i])
			return (unsigned char)a[i] - (unsigned char)b[i];
	}
	return 0;
}

size_t ht_strlcpy(char *dst, const char *src, size_t cap)
{
	size_t n = 0;
	if (!cap)
		return 0;
	while (src[n] && n + 1 < cap) {
		dst[n] = src[n];
		n++;
	}
	dst[n] = 0;
	return n;
}

size_t ht_append_str(char *dst, size_t len, size_t cap, const char *s)
{
	while (*s && len + 1 < cap)
		dst[len++] = *s++;
	if (cap)
		dst[len < cap ? len : cap - 1] = 0;
	return len;
}

size_t ht_append_u64(char *dst, size_t len, size_t cap, uint64_t v)
{
	char tmp[24];
	size_t n = 0;
	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n && len + 1 < cap)
		dst[len++] = tmp[--n];
	if (cap)
		dst[len < cap ? len : cap - 1] = 0;
	return len;
}

/* At most this many messages per process: a broken setup must not flood
 * the program's stderr. */
#define HT_MAX_LOG 16
static _Atomic int log_count;

void ht_log(const char *msg, const char *arg)
{
	if (atomic_fetch_add(&log_count, 1) >= HT_MAX_LOG)
		return;
	int saved = errno;
	char line[512];
	size_t n = ht_append_str(line, 0, sizeof line - 1, "heaptrail: ");
	n = ht_append_str(line, n, sizeof line - 1, msg);
	if (arg)
		n = ht_append_str(line, n, sizeof line - 1, arg);
	line[n++] = '\n';
	ssize_t w = write(2, line, n);
	(void)w;
	errno = saved;
}

void *ht_mmap(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

void ht_munmap(void *p, size_t size)
{
	if (p)
		munmap(p, size);
}

long ht_read_file(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t n = 0;
	while (n + 1 < cap) {
		ssize_t r = read(fd, buf + n, cap - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = 0;
	return (long)n;
}
