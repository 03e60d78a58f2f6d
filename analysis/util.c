/* util.c - error names, growable arrays, the u64 map and number formatting
 * shared by the reader, the model and the reports. */
#include "analysis/util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *ht_strerror(int err)
{
	switch (-err) {
#define HT_ERRNO_CASE(name, val, msg) \
	case val:                     \
		return msg;
		HT_ERRNO_MAP(HT_ERRNO_CASE)
#undef HT_ERRNO_CASE
	default:
		return strerror(-err);
	}
}

FILE *ht_open_output(const char *path, bool replace, unsigned mode, const struct stat *keep,
		     int *err)
{
	/* no O_TRUNC: the file is checked before anything is lost */
	int fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | (replace ? 0 : O_EXCL),
		      (mode_t)mode);
	struct stat st;
	if (fd < 0) {
		int e = errno;
		/* ELOOP also means a loop of links further up the path */
		*err = e == ELOOP && lstat(path, &st) == 0 && S_ISLNK(st.st_mode) ? -HT_ESYMLINK
		       : e == EEXIST && lstat(path, &st) == 0 && S_ISLNK(st.st_mode) ? -HT_ESYMLINK
										: -e;
		return NULL;
	}
	int r = 0;
	if (fstat(fd, &st))
		r = -errno;
	else if (keep && st.st_dev == keep->st_dev && st.st_ino == keep->st_ino)
		r = -HT_ESAME;
	else if (S_ISREG(st.st_mode) && st.st_size && ftruncate(fd, 0))
		r = -errno;
	FILE *f = r ? NULL : fdopen(fd, "wb");
	if (!f) {
		*err = r ? r : -errno;
		close(fd);
	}
	return f;
}

unsigned ht_threads(void)
{
	const char *e = getenv("HEAPTRAIL_THREADS");
	char *end;
	long n = 0;
	if (e && *e) {
		n = strtol(e, &end, 10);
		if (*end)
			n = 0;
	}
	if (n <= 0)
		n = sysconf(_SC_NPROCESSORS_ONLN);
	return n < 1 ? 1 : n > 64 ? 64 : (unsigned)n;
}

int ht_util_grow(void **ptr, size_t *cap, size_t need, size_t elsize)
{
	if (need <= *cap)
		return 0;
	size_t ncap = *cap ? *cap : 16;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return -ENOMEM;
		ncap *= 2;
	}
	if (ncap > SIZE_MAX / elsize)
		return -ENOMEM;
	void *p = realloc(*ptr, ncap * elsize);
	if (!p)
		return -ENOMEM;
	*ptr = p;
	*cap = ncap;
	return 0;
}

/* ---- u64 -> u32 map: linear probing, values mark occupancy ---------------- */

uint32_t ht_map_get(const ht_map_t *m, uint64_t key)
{
	if (!m->cap)
		return HT_MAP_NONE;
	size_t mask = m->cap - 1;
	for (size_t i = ht_util_hash64(key) & mask;; i = (i + 1) & mask) {
		if (m->vals[i] == HT_MAP_NONE)
			return HT_MAP_NONE;
		if (m->keys[i] == key)
			return m->vals[i];
	}
}

static int map_resize(ht_map_t *m, size_t ncap)
{
	uint64_t *keys = malloc(ncap * sizeof(*keys));
	uint32_t *vals = malloc(ncap * sizeof(*vals));
	if (!keys || !vals) {
		free(keys);
		free(vals);
		return -ENOMEM;
	}
	memset(vals, 0xff, ncap * sizeof(*vals));
	size_t mask = ncap - 1;
	for (size_t j = 0; j < m->cap; j++) {
		if (m->vals[j] == HT_MAP_NONE)
			continue;
		size_t i = ht_util_hash64(m->keys[j]) & mask;
		while (vals[i] != HT_MAP_NONE)
			i = (i + 1) & mask;
		keys[i] = m->keys[j];
		vals[i] = m->vals[j];
	}
	free(m->keys);
	free(m->vals);
	m->keys = keys;
	m->vals = vals;
	m->cap = ncap;
	return 0;
}

int ht_map_put(ht_map_t *m, uint64_t key, uint32_t val)
{
	/* keep the load factor under 1/2 so probes stay short */
	if ((m->len + 1) * 2 > m->cap) {
		int r = map_resize(m, m->cap ? m->cap * 2 : 64);
		if (r)
			return r;
	}
	size_t mask = m->cap - 1;
	size_t i = ht_util_hash64(key) & mask;
	while (m->vals[i] != HT_MAP_NONE) {
		if (m->keys[i] == key) {
			m->vals[i] = val;
			return 0;
		}
		i = (i + 1) & mask;
	}
	m->keys[i] = key;
	m->vals[i] = val;
	m->len++;
	return 0;
}

void ht_map_free(ht_map_t *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}

/* ---- formatting ------------------------------------------------------------ */

char *ht_fmt_count(char *buf, uint64_t v)
{
	char tmp[32];
	int n = snprintf(tmp, sizeof(tmp), "%" PRIu64, v);
	int o = 0;
	for (int i = 0; i < n; i++) {
		if (i > 0 && (n - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = tmp[i];
	}
	buf[o] = '\0';
	return buf;
}

char *ht_fmt_size(char *buf, uint64_t bytes)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	if (bytes < 1024) {
		snprintf(buf, HT_FMT_LEN, "%" PRIu64 " B", bytes);
		return buf;
	}
	double v = (double)bytes;
	int u = 0;
	while (v >= 1024.0 && u < 6) {
		v /= 1024.0;
		u++;
	}
	/* three significant digits: 1.18 MiB, 11.8 MiB, 118 MiB */
	if (v < 9.995)
		snprintf(buf, HT_FMT_LEN, "%.2f %s", v, units[u]);
	else if (v < 99.95)
		snprintf(buf, HT_FMT_LEN, "%.1f %s", v, units[u]);
	else
		snprintf(buf, HT_FMT_LEN, "%.0f %s", v, units[u]);
	return buf;
}

char *ht_fmt_duration(char *buf, uint64_t ns)
{
	if (ns >= 1000000000ULL)
		snprintf(buf, HT_FMT_LEN, "%.3f s", (double)ns / 1e9);
	else if (ns >= 1000000ULL)
		snprintf(buf, HT_FMT_LEN, "%.1f ms", (double)ns / 1e6);
	else if (ns >= 1000ULL)
		snprintf(buf, HT_FMT_LEN, "%.0f us", (double)ns / 1e3);
	else
		snprintf(buf, HT_FMT_LEN, "%" PRIu64 " ns", ns);
	return buf;
}

int ht_open_regular(const char *path, uint64_t max_size)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat sb;
	int e = 0;
	if (fstat(fd, &sb) < 0)
		e = -errno;
	else if (!S_ISREG(sb.st_mode))
		e = -HT_ENOTREG;
	else if (max_size && (uint64_t)sb.st_size > max_size)
		e = -EFBIG;
	else if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0)
		e = -errno;
	if (e) {
		close(fd);
		return e;
	}
	return fd;
}
