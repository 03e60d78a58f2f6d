/* opts.c - sizes, option-name suggestions and the output check (opts.h). */
#include "cli/opts.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool ht_parse_scaled(const char *s, double *out, const char **end)
{
	if (!s || !((*s >= '0' && *s <= '9') || (*s == '.' && s[1] >= '0' && s[1] <= '9')))
		return false;
	char *e;
	errno = 0;
	double v = strtod(s, &e);
	/* strtod also takes hex, inf and exponents: only digits and a point here */
	for (const char *p = s; p < e; p++)
		if (!((*p >= '0' && *p <= '9') || *p == '.'))
			return false;
	if (errno || e == s)
		return false;
	static const char units[] = "KMGT";
	const char *u = strchr(units, *e >= 'a' && *e <= 'z' ? *e - 32 : *e);
	if (*e && u) {
		v *= pow(1024.0, (double)(u - units + 1));
		e++;
		if (e[0] == 'i' && (e[1] == 'B' || e[1] == 'b'))
			e += 2;
		else if (*e == 'B' || *e == 'b')
			e++;
	} else if (*e == 'B') {
		e++;
	}
	*out = v;
	if (end)
		*end = e;
	return true;
}

bool ht_parse_size(const char *s, unsigned long long max, unsigned long long *out)
{
	double v;
	const char *end;
	if (!ht_parse_scaled(s, &v, &end) || *end || v > (double)max || v != floor(v))
		return false;
	*out = (unsigned long long)v;
	return true;
}

size_t ht_edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > 64 || lb > 64) /* option names are short; a long word is none of them */
		return la > lb ? la : lb;
	size_t row[65];
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0];
		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j];
			size_t best = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb];
}

const char *ht_nearest_name(const char *word, const char *const *names)
{
	char w[65];
	size_t n = strcspn(word, "=");
	if (n >= sizeof w)
		return NULL;
	memcpy(w, word, n);
	w[n] = 0;
	const char *best = NULL;
	size_t bd = 3;
	for (; *names; names++) {
		size_t d = ht_edit_distance(w, *names);
		if (d < bd && 2 * d < strlen(*names)) {
			bd = d;
			best = *names;
		}
	}
	return best;
}

int ht_output_dir_check(const char *path, char *why, size_t len)
{
	if (path && (!strcmp(path, "-") || !strcmp(path, "/dev/stdout")))
		return 0;
	char dir[4096];
	const char *slash = path ? strrchr(path, '/') : NULL;
	struct stat st;
	if (!path || !slash) {
		snprintf(dir, sizeof dir, ".");
	} else if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		snprintf(dir, sizeof dir, "%s", path); /* -o DIR: the trace goes inside */
	} else {
		size_t n = (size_t)(slash - path);
		if (n >= sizeof dir)
			return 0; /* the agent says what it makes of it */
		memcpy(dir, path, n);
		dir[n] = 0;
		if (!n)
			snprintf(dir, sizeof dir, "/");
	}
	if (strchr(dir, '%'))
		return 0; /* known only once a process has its pid and name */
	int err = 0;
	if (stat(dir, &st) != 0)
		err = errno;
	else if (!S_ISDIR(st.st_mode))
		err = ENOTDIR;
	else if (access(dir, W_OK | X_OK) != 0)
		err = errno;
	if (err)
		snprintf(why, len, "%s: %s", dir, strerror(err));
	return -err;
}

size_t ht_help_options(const char *help, ht_help_opt_t *out, size_t max)
{
	size_t n = 0;
	for (const char *line = help; line && *line && n < max;) {
		const char *eol = strchr(line, '\n');
		size_t len = eol ? (size_t)(eol - line) : strlen(line);
		if (len > 5 && !strncmp(line, "    -", 5)) {
			const char *p = line + 4, *end = line + len;
			const char *gap = strstr(p, "  ");
			if (gap && gap < end)
				end = gap;
			ht_help_opt_t *o = &out[n];
			memset(o, 0, sizeof(*o));
			/* names ("-f," "--format") until a word not starting with '-' */
			while (p < end && *p == '-') {
				size_t w = strcspn(p, " ,\n");
				if (p + w > end)
					w = (size_t)(end - p);
				if (p[1] == '-')
					snprintf(o->long_name, sizeof o->long_name, "%.*s", (int)w, p);
				else
					snprintf(o->short_name, sizeof o->short_name, "%.*s", (int)w, p);
				p += w;
				while (p < end && (*p == ',' || *p == ' '))
					p++;
			}
			snprintf(o->arg, sizeof o->arg, "%.*s", (int)(end - p), p);
			n++;
		}
		line = eol ? eol + 1 : NULL;
	}
	return n;
}
