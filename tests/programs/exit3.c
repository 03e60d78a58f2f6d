/* exit3.c - a few allocations, then exit status 3 (returned from main, so
 * exit(3) runs): heaptrail run must exit 3 and the report say exit_code 3.
 *
 *   function  calls                                      allocs frees bytes
 *   work      malloc(10), malloc(20) freed; malloc(30)      3     2     60
 *             leaked
 *   total: 3 allocs, 2 frees, 60 bytes; leaked 1 block / 30 bytes.
 *   Exit status 3.
 */
#include <stdlib.h>

static void *volatile sink;

static void work(void)
{
	void *a = malloc(10);
	void *b = malloc(20);
	sink = malloc(30);
	free(a);
	free(b);
	sink = NULL;
}

int main(void)
{
	work();
	return 3;
}
