/* wrap.c - fit the text views to a width (--width, the terminal's): standard
 * output becomes a stream that breaks each line longer than the width at a
 * space, preferring the one after a comma, and indents the rest under the
 * line's own indentation. A word longer than the width is never cut: its
 * line overflows. The stack printer lays out its frames itself
 * (report/document.c); this catches every other line of every view.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report/report.h"

typedef struct wrap {
	size_t width;
	char *line; /* the line so far */
	size_t len, cap;
	int fd;
	int err;
} wrap_t;

static wrap_t *the_wrap;

static int put_all(wrap_t *w, const char *p, size_t n)
{
	while (n) {
		ssize_t k = write(w->fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			w->err = errno ? errno : EIO;
			return -1;
		}
		p += k, n -= (size_t)k;
	}
	return 0;
}

/* Columns that p[0..n) takes: escape sequences none, a UTF-8 character one. */
static size_t cols(const char *p, size_t n)
{
	size_t c = 0;
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '\033' && i + 1 < n && p[i + 1] == '[') {
			for (i += 2; i < n && !(p[i] >= '@' && p[i] <= '~'); i++)
				;
			continue;
		}
		if (((unsigned char)p[i] & 0xc0) != 0x80)
			c++;
	}
	return c;
}

/* Write one line (without its '\n') broken to the width. */
static int emit_line(wrap_t *w, const char *s, size_t n)
{
	if (cols(s, n) <= w->width)
		return put_all(w, s, n);
	size_t lead = 0;
	while (lead < n && s[lead] == ' ')
		lead++;
	/* under the text of the line ("#1    12 KiB ..." lists: under the figure) */
	size_t want = n && s[0] == '#' ? 10 : lead + 4;
	size_t indent = want < w->width / 2 ? want : w->width / 2;
	char pad[128];
	memset(pad, ' ', sizeof pad);
	if (indent > sizeof pad)
		indent = sizeof pad;
	size_t start = 0, first = 1;
	while (start < n) {
		size_t avail = first ? w->width : w->width - indent;
		/* the longest piece that fits, ending before a space; a comma's
		 * space first */
		size_t brk = 0, comma = 0;
		for (size_t i = start + 1; i < n; i++) {
			if (s[i] != ' ' || s[i - 1] == ' ')
				continue;
			if (i <= lead)
				continue;
			if (cols(s + start, i - start) > avail)
				break;
			brk = i;
			if (s[i - 1] == ',')
				comma = i;
		}
		if (cols(s + start, n - start) <= avail) {
			brk = n;
		} else if (comma && cols(s + start, comma - start) * 3 >= avail * 2) {
			brk = comma; /* a comma's space two thirds along or more */
		} else if (!brk) { /* one word too long: up to its end, overflowing */
			for (brk = start + 1; brk < n && !(s[brk] == ' ' && brk > lead); brk++)
				;
		}
		if (!first && put_all(w, pad, indent))
			return -1;
		if (put_all(w, s + start, brk - start))
			return -1;
		start = brk;
		while (start < n && s[start] == ' ')
			start++;
		if (start < n && put_all(w, "\n", 1))
			return -1;
		first = 0;
	}
	return 0;
}

static ssize_t wrap_write(void *c, const char *buf, size_t size)
{
	wrap_t *w = c;
	for (size_t i = 0; i < size; i++) {
		if (buf[i] == '\n') {
			if (emit_line(w, w->line, w->len) || put_all(w, "\n", 1))
				return -1;
			w->len = 0;
			continue;
		}
		if (w->len + 1 > w->cap) {
			size_t nc = w->cap ? 2 * w->cap : 256;
			char *p = realloc(w->line, nc);
			if (!p)
				return -1;
			w->line = p, w->cap = nc;
		}
		w->line[w->len++] = buf[i];
	}
	return (ssize_t)size;
}

/* A last line without its '\n', at exit. */
static void wrap_atexit(void)
{
	wrap_t *w = the_wrap;
	fflush(stdout);
	if (w && w->len) {
		emit_line(w, w->line, w->len);
		w->len = 0;
	}
}

int ht_wrap_stdout(size_t width)
{
	if (!width || the_wrap)
		return 0;
	wrap_t *w = calloc(1, sizeof *w);
	if (!w)
		return -ENOMEM;
	w->width = width;
	fflush(stdout);
	w->fd = dup(STDOUT_FILENO);
	cookie_io_functions_t io = { .write = wrap_write };
	FILE *f = w->fd >= 0 ? fopencookie(w, "w", io) : NULL;
	if (!f) {
		if (w->fd >= 0)
			close(w->fd);
		free(w);
		return -errno;
	}
	the_wrap = w;
	stdout = f;
	atexit(wrap_atexit);
	return 0;
}
