/* put_u.h - test programs that print their figures with write(2): stdio
 * would allocate behind them. */
#ifndef HEAPTRAIL_TEST_PUT_U_H
#define HEAPTRAIL_TEST_PUT_U_H

#include <stddef.h>
#include <unistd.h>

/* Decimal digits of v appended at buf[*n]. */
static inline void put_u(unsigned long v, char *buf, size_t *n)
{
	char tmp[24];
	size_t k = 0;
	do
		tmp[k++] = (char)('0' + v % 10);
	while (v /= 10);
	while (k)
		buf[(*n)++] = tmp[--k];
}

/* v[0..n) on one line of standard output, separated by spaces (at most
 * 16). 0 when written, 1 when not. */
static inline int print_figures(const unsigned long *v, size_t n)
{
	char buf[16 * 21];
	size_t len = 0;
	for (size_t i = 0; i < n && i < 16; i++) {
		if (i)
			buf[len++] = ' ';
		put_u(v[i], buf, &len);
	}
	buf[len++] = '\n';
	return write(1, buf, len) == (ssize_t)len ? 0 : 1;
}

#endif
