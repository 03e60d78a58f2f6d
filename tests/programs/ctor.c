/* ctor.c - allocations made before main, by a constructor, must be counted.
 *
 *   function     when               calls                   allocs frees bytes
 *   early_alloc  constructor        malloc(111), malloc(222)   3     1    666
 *                (before main)      malloc(333); the 222 one
 *                                   is freed by the ctor
 *   main_alloc   main               malloc(444), freed; frees  1     3    444
 *                                   the ctor's 111 and 333
 *   total: 4 allocs, 4 frees, 1110 bytes; nothing leaked. Exit status 0.
 */
#include <stdlib.h>
#include <string.h>

static void *early[3];

void early_alloc(void);
void main_alloc(void);

void early_alloc(void)
{
	early[0] = malloc(111);
	early[1] = malloc(222);
	early[2] = malloc(333);
	memset(early[2], 3, 333);
	free(early[1]);
	early[1] = NULL;
}

__attribute__((constructor)) static void before_main(void)
{
	early_alloc();
}

void main_alloc(void)
{
	void *p = malloc(444);
	memset(p, 4, 444);
	free(p);
}

int main(void)
{
	if (!early[0] || !early[2])
		return 1;
	main_alloc();
	free(early[0]);
	free(early[2]);
	return 0;
}
