/* churn.c - many events (a trace big enough to cut in half and still hold
 * thousands of complete events), counts known by construction.
 *
 *   function     calls                                    allocs frees bytes
 *   churn_alloc  50000 x malloc(16 + (i % 4) * 16), each   50000 50000 2000000
 *                freed right away (all temporary)
 *   churn_keep   10 x malloc(100), never freed                10     0    1000
 *   total: 50010 allocs, 50000 frees, 2001000 bytes; leaked 10 blocks /
 *   1000 bytes; 50000 temporary allocations; peak heap 1000 (the kept
 *   blocks, allocated after the churn). Exit status 0.
 * An argument N replaces the 50000 churn calls (the summary-mode tests run
 * it longer).
 */
#include <stdlib.h>
#include <string.h>

static void *volatile sink;
static void *keep[10];

void *churn_alloc(size_t n);
void churn_keep(void);

void *churn_alloc(size_t n)
{
	return malloc(n);
}

void churn_keep(void)
{
	for (int i = 0; i < 10; i++)
		keep[i] = malloc(100);
	memset(keep, 0, sizeof(keep));
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 50000;
	for (int i = 0; i < n; i++) {
		char *p = churn_alloc(16 + (size_t)(i % 4) * 16);
		p[0] = (char)i;
		free(p);
	}
	churn_keep();
	sink = NULL;
	return 0;
}
