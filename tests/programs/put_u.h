/* put_u.h - decimal digits of v appended at buf[*n], for test programs that
 * print their figures with write(2): stdio would allocate behind them. */
#ifndef HEAPTRAIL_TEST_PUT_U_H
#define HEAPTRAIL_TEST_PUT_U_H

#include <stddef.h>

static void put_u(unsigned long v, char *buf, size_t *n)
{
	char tmp[24];
	size_t k = 0;
	do
		tmp[k++] = (char)('0' + v % 10);
	while (v /= 10);
	while (k)
		buf[(*n)++] = tmp[--k];
}

#endif
