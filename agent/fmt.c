/* fmt.c - string, memory and log helpers that never call malloc.
 *
 * The agent runs inside malloc hooks, so it cannot use stdio, snprintf or
 * strdup (they may allocate). Together with writer.c, this is the only file
 * that makes raw system calls.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
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
	ssize_t w = syscall(SYS_write, 2, line, n);
	(void)w;
	errno = saved;
}

/* Every range the agent maps, so that the leak scan does not take the
 * agent's own buffers (full of block addresses) for the program's roots.
 * A slot is claimed with a compare-and-swap; ht_mmap is never on the fast
 * path (blocks, thread states, tables). */
#define HT_MAPS_MAX 8192
static struct ht_map_slot {
	_Atomic uintptr_t addr;
	size_t size;
} agent_maps[HT_MAPS_MAX];
static _Atomic bool agent_maps_full;

static void maps_add(void *p, size_t size)
{
	for (unsigned i = 0; i < HT_MAPS_MAX; i++) {
		uintptr_t expected = 0;
		if (atomic_load_explicit(&agent_maps[i].addr, memory_order_relaxed) == 0 &&
		    atomic_compare_exchange_strong(&agent_maps[i].addr, &expected, (uintptr_t)p)) {
			agent_maps[i].size = size;
			return;
		}
	}
	atomic_store(&agent_maps_full, true);
}

void *ht_mmap(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	maps_add(p, size);
	return p;
}

void ht_munmap(void *p, size_t size)
{
	if (!p)
		return;
	for (unsigned i = 0; i < HT_MAPS_MAX; i++) {
		if (atomic_load_explicit(&agent_maps[i].addr, memory_order_relaxed) == (uintptr_t)p) {
			agent_maps[i].size = 0;
			atomic_store(&agent_maps[i].addr, 0);
			break;
		}
	}
	munmap(p, size);
}

unsigned ht_agent_maps(uintptr_t (*out)[2], unsigned cap)
{
	unsigned n = 0;
	for (unsigned i = 0; i < HT_MAPS_MAX && n < cap; i++) {
		uintptr_t a = atomic_load(&agent_maps[i].addr);
		if (a && agent_maps[i].size) {
			out[n][0] = a;
			out[n][1] = a + agent_maps[i].size;
			n++;
		}
	}
	return n;
}

/* Raw system calls: glibc's open and read are cancellation points (a
 * program's pthread_cancel must not take effect inside its malloc), and
 * open is the agent's own hook. */
long ht_read_file(const char *path, char *buf, size_t cap)
{
	int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t n = 0;
	while (n + 1 < cap) {
		ssize_t r = syscall(SYS_read, fd, buf + n, cap - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	syscall(SYS_close, fd);
	buf[n] = 0;
	return (long)n;
}

long ht_read_proc(const char *name, char *buf, size_t cap)
{
	char path[64];
	size_t k = ht_append_str(path, 0, sizeof path, "/proc/thread-self/");
	ht_append_str(path, k, sizeof path, name);
	long n = ht_read_file(path, buf, cap);
	if (n > 0)
		return n;
	k = ht_append_str(path, 0, sizeof path, "/proc/self/");
	ht_append_str(path, k, sizeof path, name);
	return ht_read_file(path, buf, cap);
}
