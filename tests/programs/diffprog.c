/* diffprog.c - two runs to compare (`heaptrail diff`): `diffprog 1` and
 * `diffprog 2` differ by construction, site by site (N is the argument).
 *
 *   function  per run                              N=1            N=2
 *   grow      N*10 x malloc(100), each freed       10 / 1000 B    20 / 2000 B
 *   steady    5 x malloc(64) held, then freed      5 / 320 B      5 / 320 B
 *   only_old  N=1: 4 x malloc(50), each freed      4 / 200 B      -
 *   only_new  N=2: 3 x malloc(200), each freed     -              3 / 600 B
 *   leak      N x malloc(1000), never freed        1 / 1000 B     2 / 2000 B
 *
 * Temporary (freed before the next allocation): grow's and only_*'s
 * blocks, and steady's last one. The leaks come last and nothing else is
 * live then: the peak is at the end, N * 1000 bytes, all of it leak's.
 * Diff 1 -> 2: allocations +10, bytes +2,400, frees +9, temporary +9,
 * peak +1,000, leaked +1,000 B in +1 block. Exit status 0.
 */
#include <stdlib.h>

static void *volatile sink;
static void *held[8];

void grow(int n);
void steady(void);
void only_old(void);
void only_new(void);
void leak(int n);

void grow(int n)
{
	for (int i = 0; i < n * 10; i++) {
		void *p = malloc(100);
		sink = p;
		free(p);
	}
}

void steady(void)
{
	for (int i = 0; i < 5; i++)
		held[i] = malloc(64);
	for (int i = 0; i < 5; i++)
		free(held[i]);
}

void only_old(void)
{
	for (int i = 0; i < 4; i++) {
		void *p = malloc(50);
		sink = p;
		free(p);
	}
}

void only_new(void)
{
	for (int i = 0; i < 3; i++) {
		void *p = malloc(200);
		sink = p;
		free(p);
	}
}

void leak(int n)
{
	for (int i = 0; i < n; i++)
		held[i] = malloc(1000);
}

int main(int argc, char **argv)
{
	int n = argc > 1 && argv[1][0] == '2' ? 2 : 1;
	grow(n);
	steady();
	if (n == 1)
		only_old();
	else
		only_new();
	leak(n);
	sink = NULL;
	return 0;
}
