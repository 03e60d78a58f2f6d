/* replay_driver.c - run files (or every file of directories) through
 * LLVMFuzzerTestOneInput without libFuzzer: the fuzz corpus becomes a
 * regression test in `make check` (zstd's regression_driver.c does the same).
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	size_t cap = 1 << 16, len = 0;
	uint8_t *buf = malloc(cap);
	size_t n;
	while (buf && (n = fread(buf + len, 1, cap - len, f)) > 0) {
		len += n;
		if (len == cap) {
			uint8_t *nb = realloc(buf, cap *= 2);
			if (!nb)
				free(buf);
			buf = nb;
		}
	}
	fclose(f);
	if (!buf) {
		fprintf(stderr, "replay: %s: out of memory\n", path);
		return -1;
	}
	LLVMFuzzerTestOneInput(buf, len);
	free(buf);
	return 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
	unsigned files = 0, failed = 0;
	for (int i = 1; i < argc; i++) {
		struct stat sb;
		if (stat(argv[i], &sb) < 0) {
			fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
			failed++;
			continue;
		}
		if (!S_ISDIR(sb.st_mode)) {
			files++;
			failed += run_file(argv[i]) != 0;
			continue;
		}
		DIR *d = opendir(argv[i]);
		if (!d) {
			failed++;
			continue;
		}
		/* sorted, so a failure is reproducible by position */
		char **names = NULL;
		size_t n = 0, cap = 0;
		struct dirent *e;
		while ((e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			if (n == cap) {
				cap = cap ? cap * 2 : 64;
				char **nn = realloc(names, cap * sizeof(*names));
				if (!nn)
					break;
				names = nn;
			}
			size_t l = strlen(argv[i]) + strlen(e->d_name) + 2;
			names[n] = malloc(l);
			if (!names[n])
				break;
			snprintf(names[n++], l, "%s/%s", argv[i], e->d_name);
		}
		closedir(d);
		qsort(names, n, sizeof(*names), name_cmp);
		for (size_t j = 0; j < n; j++) {
			files++;
			failed += run_file(names[j]) != 0;
			free(names[j]);
		}
		free(names);
	}
	printf("replay: %u inputs, %u unreadable\n", files, failed);
	return failed ? 1 : 0;
}
