/* first_freed_last.c - the first block is freed last, right after another
 * free, with the peak's temporary in between:
 *
 *   a = malloc(48); b = malloc(10); c = malloc(20); free(b); free(a); free(c);
 *
 *   3 allocs, 3 frees, 78 bytes, peak 78; 1 temporary (c: freed before the
 *   thread allocated again), nothing leaked. Exit status 0.
 *
 * heaptrack takes a `- 0` line right after any other free for a temporary,
 * so the heaptrack export must not free the first block as info 0.
 */
#include <stdlib.h>

int main(void)
{
	void *volatile a = malloc(48);
	void *volatile b = malloc(10);
	void *volatile c = malloc(20);
	free(b);
	free(a);
	free(c);
	return 0;
}
