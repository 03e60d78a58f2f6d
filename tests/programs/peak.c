/* peak.c - a heap peak known by construction, and each site's contribution
 * to it (bytes the site has live at the moment of the peak).
 *
 *   step  function  call                 live after
 *   1     alloc_a   a = malloc(1000)       1000
 *   2     alloc_b   b = malloc(50000)     51000
 *   3     alloc_c   c = malloc(20000)     71000   <- peak
 *   4               free(b)               21000
 *   5     alloc_d   d = malloc(30000)     51000
 *   6               free(a), free(c), free(d)  0
 *   7     alloc_e   e = malloc(10), leaked  10
 *   total: 5 allocs, 4 frees, 101010 bytes; peak_heap_bytes 71000.
 *   Contribution to the peak (site peak_bytes): alloc_b 50000, alloc_c
 *   20000, alloc_a 1000, alloc_d 0 (its block came after the peak), alloc_e 0.
 *   leaked: 1 block / 10 bytes. Exit status 0.
 */
#include <stdlib.h>
#include <string.h>

static void *volatile sink;

void *alloc_a(void);
void *alloc_b(void);
void *alloc_c(void);
void *alloc_d(void);
void *alloc_e(void);

void *alloc_a(void) { return malloc(1000); }
void *alloc_b(void) { return malloc(50000); }
void *alloc_c(void) { return malloc(20000); }
void *alloc_d(void) { return malloc(30000); }
void *alloc_e(void) { return malloc(10); }

int main(void)
{
	char *a = alloc_a();
	char *b = alloc_b();
	char *c = alloc_c();
	memset(a, 1, 1000);
	memset(b, 1, 50000);
	memset(c, 1, 20000);
	free(b);
	char *d = alloc_d();
	memset(d, 1, 30000);
	free(a);
	free(c);
	free(d);
	sink = alloc_e();
	sink = NULL;
	return 0;
}
