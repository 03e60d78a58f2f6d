/* mapped.c - an mmap-based allocator, with figures known by construction.
 *
 *   site            calls                                   mapped at exit
 *   rt_map_small    5 x 64 KiB, 2 unmapped                  3 x 64 KiB = 196,608
 *   rt_map_big      1 MiB, its last 256 KiB unmapped        768 KiB    = 786,432
 *   rt_map_grow     128 KiB, then rt_grow moves it
 *   rt_grow         mremap to 512 KiB (MREMAP_MAYMOVE)      512 KiB    = 524,288
 *   rt_map_file     4 KiB of a file, unmapped               0
 *
 *   mapped at the peak (after the file map): 327,680 + 1,048,576 +
 *   524,288 + 4,096 = 1,904,640 bytes; at exit 1,507,328 bytes.
 *   One madvise(MADV_DONTNEED) of 64 KiB (the mapping stays).
 * At the end, prints heaptrail_stats()'s mapped and resident bytes
 * (mapped 1,507,328 under the agent; both 0 without it), then "ok".
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "heaptrail.h"

#define KIB 1024ul

__attribute__((noinline)) static void *rt_map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		_exit(1);
	}
	return p;
}

__attribute__((noinline)) void *rt_map_small(void) { return rt_map(64 * KIB); }
__attribute__((noinline)) void *rt_map_big(void) { return rt_map(1024 * KIB); }
__attribute__((noinline)) void *rt_map_grow(void) { return rt_map(128 * KIB); }

__attribute__((noinline)) void *rt_grow(void *p, size_t old, size_t len)
{
	void *q = mremap(p, old, len, MREMAP_MAYMOVE);
	if (q == MAP_FAILED) {
		perror("mremap");
		_exit(1);
	}
	return q;
}

__attribute__((noinline)) void *rt_map_file(const char *path)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0) {
		perror(path);
		_exit(1);
	}
	void *p = mmap(NULL, 4 * KIB, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		perror("mmap file");
		_exit(1);
	}
	return p;
}

int main(int argc, char **argv)
{
	(void)argc;
	char *small[5];
	for (int i = 0; i < 5; i++) {
		small[i] = rt_map_small();
		small[i][0] = 1;
	}
	char *big = rt_map_big();
	char *g = rt_map_grow();
	g[0] = 1;
	g = rt_grow(g, 128 * KIB, 512 * KIB);
	void *f = rt_map_file(argv[0]);
	madvise(small[4], 64 * KIB, MADV_DONTNEED);
	munmap(small[0], 64 * KIB);
	munmap(small[1], 64 * KIB);
	munmap(big + 768 * KIB, 256 * KIB);
	munmap(f, 4 * KIB);
	struct heaptrail_stats s = {.size = sizeof s};
	heaptrail_stats(&s);
	printf("mapped %llu resident %llu\n", (unsigned long long)s.mapped_bytes,
	       (unsigned long long)s.resident_bytes);
	puts("ok");
	return 0;
}
