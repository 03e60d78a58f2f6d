/* exit_handlers.c - allocations made after main returns, by an atexit
 * handler and by a destructor, belong to the program and must be counted
 * ("a complete trace of everything up to that point").
 *
 *   function       when                   calls            allocs frees bytes
 *   main_work      main                   malloc(50) freed    1     1     50
 *   atexit_alloc   atexit handler         malloc(600),        2     1   1300
 *                                         malloc(700) freed;
 *                                         the 600 leaked
 *   dtor_alloc     destructor (runs in    malloc(800) freed,  2     1   1700
 *                  exit, after main)      malloc(900) leaked
 *   total: 5 allocs, 3 frees, 3050 bytes; leaked 2 blocks, 1500 bytes
 *   (leaf atexit_alloc 600, dtor_alloc 900). Exit status 0.
 */
#include <stdlib.h>
#include <string.h>

static void *volatile sink;

void main_work(void);
void atexit_alloc(void);
void dtor_alloc(void);

void main_work(void)
{
	void *p = malloc(50);
	memset(p, 0, 50);
	free(p);
}

void atexit_alloc(void)
{
	sink = malloc(600);
	void *q = malloc(700);
	memset(q, 0, 700);
	free(q);
	sink = NULL;
}

void dtor_alloc(void)
{
	void *q = malloc(800);
	memset(q, 0, 800);
	free(q);
	sink = malloc(900);
	sink = NULL;
}

__attribute__((destructor)) static void at_unload(void)
{
	dtor_alloc();
}

int main(void)
{
	if (atexit(atexit_alloc) != 0)
		return 1;
	main_work();
	return 0;
}
