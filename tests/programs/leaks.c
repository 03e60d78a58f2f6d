/* leaks.c - known leaks with known stacks. Each allocating line carries a
 * marker comment (LEAK_BIG, ...) so tests can find its line number.
 *
 *   function       calls                                 allocs frees bytes
 *   leak_big       malloc(4096), leaked                     1     0   4096
 *   inner_leaker   2 x malloc(100), leaked (called by       2     0    200
 *                  leak_nested)
 *   leak_small     3 x malloc(32), leaked                   3     0     96
 *   leak_realloc   malloc(10) then realloc(p, 300),         2     1    310
 *                  leaked: the leak is the realloc's block
 *   no_leak        5 x malloc(64), all freed                5     5    320
 *   total: 13 allocs, 6 frees, 5022 bytes.
 *   Leaks, largest first (bytes, blocks, leaf function, marker):
 *     4096  1  leak_big       LEAK_BIG
 *      300  1  leak_realloc   LEAK_REALLOC
 *      200  2  inner_leaker   LEAK_INNER  (stack[1] is leak_nested)
 *       96  3  leak_small     LEAK_SMALL
 *   leaked: 7 blocks, 4692 bytes. Exit status 0.
 */
#include <stdlib.h>
#include <string.h>

/* Stored then dropped, so the blocks end up unreachable. */
static void *volatile sink;

void leak_big(void);
void inner_leaker(void);
void leak_nested(void);
void leak_small(void);
void leak_realloc(void);
void no_leak(void);

void leak_big(void)
{
	sink = malloc(4096); /* LEAK_BIG */
}

void inner_leaker(void)
{
	for (int i = 0; i < 2; i++)
		sink = malloc(100); /* LEAK_INNER */
}

void leak_nested(void)
{
	inner_leaker();
}

void leak_small(void)
{
	for (int i = 0; i < 3; i++)
		sink = malloc(32); /* LEAK_SMALL */
}

void leak_realloc(void)
{
	char *p = malloc(10); /* REALLOC_FIRST */
	memset(p, 1, 10);
	p = realloc(p, 300); /* LEAK_REALLOC */
	sink = p;
}

void no_leak(void)
{
	void *p[5];
	for (int i = 0; i < 5; i++)
		p[i] = malloc(64); /* NO_LEAK */
	for (int i = 0; i < 5; i++)
		free(p[i]);
}

int main(void)
{
	leak_small();
	leak_big();
	leak_nested();
	leak_realloc();
	no_leak();
	sink = NULL;
	return 0;
}
