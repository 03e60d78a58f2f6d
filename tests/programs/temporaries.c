/* temporaries.c - temporary allocations known by construction. A temporary
 * allocation is one freed before the same thread allocates again; the cases
 * below are chosen so that the stricter reading (freed by the very next
 * allocator event, heaptrack's) gives the same counts.
 *
 *   function     calls                                   allocs frees bytes temporary
 *   pairs        10 x { a = malloc(64)  (TMP_A);           20    20  960   10 (b's)
 *                       b = malloc(32)  (TMP_B);
 *                       free(b); free(a); }
 *                a is not temporary (b came between), b is.
 *   pure_temp    5 x { c = calloc(2, 8) (TMP_C); free(c) }  5     5   80    5
 *   keepers      y = malloc(1000) (TMP_Y), z = malloc(10)   2     1 1010    0
 *                (TMP_Z), free(y); z leaked
 *   total: 27 allocs, 26 frees, 2050 bytes, 15 temporary allocations;
 *   leaked 1 block / 10 bytes. Per site (leaf function, marker):
 *     pairs TMP_A 0, pairs TMP_B 10, pure_temp TMP_C 5, keepers 0 and 0.
 *   Exit status 0.
 */
#include <stdlib.h>
#include <string.h>

static void *volatile sink;

void pairs(void);
void pure_temp(void);
void keepers(void);

void pairs(void)
{
	for (int i = 0; i < 10; i++) {
		char *a = malloc(64); /* TMP_A */
		char *b = malloc(32); /* TMP_B */
		a[0] = b[0] = (char)i;
		free(b);
		free(a);
	}
}

void pure_temp(void)
{
	for (int i = 0; i < 5; i++) {
		char *c = calloc(2, 8); /* TMP_C */
		c[i] = 1;
		free(c);
	}
}

void keepers(void)
{
	char *y = malloc(1000); /* TMP_Y */
	char *z = malloc(10);   /* TMP_Z */
	y[0] = z[0] = 1;
	free(y);
	sink = z;
}

int main(void)
{
	pairs();
	pure_temp();
	keepers();
	sink = NULL;
	return 0;
}
