/* opts.h - pieces of the command line shared by every subcommand: sizes
 * with suffixes, the nearest option name for a typo, and the check that
 * `heaptrail run -o` can create its trace before the program starts.
 */
#ifndef HEAPTRAIL_OPTS_H
#define HEAPTRAIL_OPTS_H

#include <stdbool.h>
#include <stddef.h>

/* A number with an optional binary suffix, as every size option and gate
 * takes it: K or KiB (1024), M or MiB, G or GiB, T or TiB, any of them
 * also with a plain B ("64MB" is 64 MiB), and a plain B alone. A fraction
 * is allowed ("1.5M"). *end (may be NULL) gets the first byte not taken;
 * returns false when s does not start with a number. */
bool ht_parse_scaled(const char *s, double *out, const char **end);

/* A whole size in bytes up to max ("512K", "4096"): false for anything else,
 * a fraction of a byte, or a sign. */
bool ht_parse_size(const char *s, unsigned long long max, unsigned long long *out);

/* Levenshtein distance of a and b. */
size_t ht_edit_distance(const char *a, const char *b);

/* The name of names (NULL-terminated) nearest to word, when it is near
 * enough to be the one meant (at most 2 edits, and fewer than half of the
 * word's length); NULL otherwise. A "--name=value" word is compared by its
 * name. */
const char *ht_nearest_name(const char *word, const char *const *names);

/* Whether `heaptrail run -o path` (NULL: the default name in the current
 * directory) can be created: its directory exists, is a directory and is
 * writable. A path whose directory part holds a % pattern, and the
 * standard output (-, /dev/stdout), are not checked. Returns 0, or -errno
 * with why (room for len bytes) naming the directory. */
int ht_output_dir_check(const char *path, char *why, size_t len);

/* An option of a help text: a line indented by four spaces that starts
 * with '-': "    -f, --format text|json  output format". Its names, and
 * what follows them up to two spaces ("text|json", "N", "FILE", or ""). */
typedef struct ht_help_opt {
	char short_name[8]; /* "-f", or "" */
	char long_name[48]; /* "--format", or "" */
	char arg[96];
} ht_help_opt_t;

/* The options of help, in order, at most max. Returns how many. */
size_t ht_help_options(const char *help, ht_help_opt_t *out, size_t max);

#endif /* HEAPTRAIL_OPTS_H */
