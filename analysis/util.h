/* util.h - small shared pieces of the CLI: error codes, growable arrays, a
 * u64 -> u32 hash map, and number formatting for reports.
 *
 * Library code returns 0 or a negative code: -errno, or -HT_E* from the table
 * below; ht_strerror() names either kind.
 */
#ifndef HEAPTRAIL_UTIL_H
#define HEAPTRAIL_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* CLI error codes, above the errno range. */
#define HT_ERRNO_MAP(X)                                        \
	X(ECORRUPT, 4001, "corrupt trace")                     \
	X(ETRUNC, 4002, "truncated trace")                     \
	X(EMAGIC, 4003, "not a heaptrail trace")               \
	X(EVERSION, 4004, "unsupported trace format version")  \
	X(EZSTD, 4005, "zstd decompression failed")            \
	X(ETOOBIG, 4006, "trace body exceeds the size limit")  \
	X(EEMPTY, 4007, "trace holds no process record")       \
	X(ENOTREG, 4008, "not a regular file (a trace is one)")               \
	X(ESYMLINK, 4009, "a symbolic link: no output is written through one") \
	X(ESAME, 4010, "the input itself: not overwritten")

enum ht_errno {
#define HT_ERRNO_ENUM(name, val, msg) HT_##name = val,
	HT_ERRNO_MAP(HT_ERRNO_ENUM)
#undef HT_ERRNO_ENUM
};

/* Message for a negative error code (-errno or -HT_E*). Static storage. */
const char *ht_strerror(int err);

/* Opens path for an output file of the CLI (convert -o, run's JSON
 * summary), the one policy for all of them: never through a symbolic link
 * at the last component (-HT_ESYMLINK: a link planted where the output goes
 * would send it over the file it points to); a new file gets mode (less
 * the umask); an existing regular file is replaced when the user named it
 * (replace), else refused (-EEXIST: a name the CLI chose, where another
 * run's file may be); a device or a FIFO is written as it is. keep: a
 * file that must not be replaced (the input), checked on the opened file,
 * -HT_ESAME. Returns the stream, or NULL with *err set. */
struct stat;
FILE *ht_open_output(const char *path, bool replace, unsigned mode, const struct stat *keep,
		     int *err);

/* Worker threads the analysis may use: HEAPTRAIL_THREADS when set (1: all
 * on the calling thread), else the processors online; 1 to 64. */
unsigned ht_threads(void);

/* Make room for need elements of elsize bytes in *ptr (capacity *cap),
 * growing geometrically. Returns 0 or -ENOMEM; *ptr is untouched on error. */
int ht_util_grow(void **ptr, size_t *cap, size_t need, size_t elsize);

/* Open-addressing map from any u64 key to a u32 value (UINT32_MAX is
 * reserved as "empty"). No deletion: the CLI only ever adds. */
typedef struct ht_map {
	uint64_t *keys;
	uint32_t *vals;
	size_t cap; /* power of two, or 0 */
	size_t len;
} ht_map_t;

#define HT_MAP_NONE UINT32_MAX

uint32_t ht_map_get(const ht_map_t *m, uint64_t key);
/* Insert or overwrite. Returns 0 or -ENOMEM. */
int ht_map_put(ht_map_t *m, uint64_t key, uint32_t val);
void ht_map_free(ht_map_t *m);

/* The file name of a path (what follows its last '/'); NULL stays NULL. */
static inline const char *ht_base_name(const char *p)
{
	const char *s = p ? strrchr(p, '/') : NULL;
	return s ? s + 1 : p;
}

/* FNV-1a of a string; tables mix it further (ht_util_hash64). */
static inline uint64_t ht_fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

/* A 64-bit mixer (murmur3 finalizer) for hash tables. */
static inline uint64_t ht_util_hash64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

/* Formatting into caller buffers of at least HT_FMT_LEN bytes; each returns
 * its buffer so calls can sit inside printf arguments. */
#define HT_FMT_LEN 40
/* 1234567 -> "1,234,567" */
char *ht_fmt_count(char *buf, uint64_t v);
/* "blocks", or "block" for one: "in 1 block". */
static inline const char *ht_blocks_word(uint64_t n)
{
	return n == 1 ? "block" : "blocks";
}
/* 1234567 -> "1.18 MiB"; below 1 KiB "512 B" */
char *ht_fmt_size(char *buf, uint64_t bytes);
/* nanoseconds -> "1.234 s", "12.3 ms", "45 us" */
char *ht_fmt_duration(char *buf, uint64_t ns);

/* Open an input the user or a trace names, read-only: a regular file, at
 * most max_size bytes (0: any size). O_NONBLOCK until fstat has seen a
 * regular file, so that a FIFO with no writer cannot block the open.
 * Returns the descriptor (close-on-exec), or a negative code: -errno,
 * -HT_ENOTREG (a FIFO, a device, a directory...) or -EFBIG. */
int ht_open_regular(const char *path, uint64_t max_size);

#endif /* HEAPTRAIL_UTIL_H */
