/* sampled.c - a deterministic program for the sampling tests: sites of
 * known counts and bytes, from large blocks to tiny ones, one of them about
 * 1% of all bytes. Every block is freed except site_leak's.
 *
 *   function    marker      calls x size                  allocs   bytes
 *   site_big    SMP_BIG        40 x 1 MiB                      40   41943040
 *   site_mid    SMP_MID     20000 x 2000                    20000   40000000
 *   site_small  SMP_SMALL  500000 x 64                     500000   32000000
 *   site_mixed  SMP_MIXED   30000 x (16 << (i % 9)), i.e.
 *                           16..4096 cycling                30000   27250720
 *   site_onepct SMP_ONEPCT  12200 x 120                     12200    1464000
 *   site_tiny   SMP_TINY     1000 x 8                        1000       8000
 *   site_leak   SMP_LEAK     3000 x 1000, never freed        3000    3000000
 *   total                                                  566240  145665760
 *
 * site_onepct holds 1.005% of the bytes, site_leak 2.06% (all of it
 * leaked), site_tiny 0.005%. Frees: every block but site_leak's: 563240.
 * With argument "noleak", site_leak's blocks are freed too (566240 frees,
 * nothing live at exit).
 * Blocks are freed in batches of 100, so the heap peak is set by site_big
 * (2 MiB live at once) plus the leaked blocks.
 */
#include <stdlib.h>
#include <string.h>

static void *volatile sink;
static void *batch[100];
static int nbatch;

static void keep(void *p)
{
	sink = p;
	batch[nbatch++] = p;
	if (nbatch == 100) {
		for (int i = 0; i < nbatch; i++)
			free(batch[i]);
		nbatch = 0;
	}
}

static void flush(void)
{
	for (int i = 0; i < nbatch; i++)
		free(batch[i]);
	nbatch = 0;
}

void site_big(void);
void site_mid(void);
void site_small(void);
void site_mixed(void);
void site_onepct(void);
void site_tiny(void);
void site_leak(void **out);

void site_big(void)
{
	for (int i = 0; i < 20; i++) {
		void *p = malloc(1 << 20); /* SMP_BIG */
		sink = p;
		void *q = malloc(1 << 20); /* SMP_BIG */
		sink = q;
		free(p);
		free(q);
	}
}

void site_mid(void)
{
	for (int i = 0; i < 20000; i++)
		keep(malloc(2000)); /* SMP_MID */
	flush();
}

void site_small(void)
{
	for (int i = 0; i < 500000; i++)
		keep(malloc(64)); /* SMP_SMALL */
	flush();
}

void site_mixed(void)
{
	for (int i = 0; i < 30000; i++)
		keep(malloc((size_t)16 << (i % 9))); /* SMP_MIXED */
	flush();
}

void site_onepct(void)
{
	for (int i = 0; i < 12200; i++)
		keep(malloc(120)); /* SMP_ONEPCT */
	flush();
}

void site_tiny(void)
{
	for (int i = 0; i < 1000; i++)
		keep(malloc(8)); /* SMP_TINY */
	flush();
}

void site_leak(void **out)
{
	for (int i = 0; i < 3000; i++)
		out[i] = malloc(1000); /* SMP_LEAK */
}

int main(int argc, char **argv)
{
	static void *leak[3000];
	site_leak(leak);
	site_big();
	site_mid();
	site_small();
	site_mixed();
	site_onepct();
	site_tiny();
	if (argc > 1 && !strcmp(argv[1], "noleak"))
		for (int i = 0; i < 3000; i++)
			free(leak[i]);
	return 0;
}
