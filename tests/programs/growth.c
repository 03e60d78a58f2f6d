/* growth.c - three sites with known shapes over time, for growth suspects
 * (heaptrail leaks --growth). 400 rounds of 1 ms:
 *
 *   cache_add   GROWING   one 64-byte entry per round, kept in a cache
 *                         that is never trimmed: 400 blocks live at the end
 *   churn_buf   CHURNING  one 512-byte buffer per round, the previous one
 *                         freed: 1 block live at any time (the last, at the end)
 *   table_add   PLATEAU   one 256-byte entry per round for the first 80
 *                         rounds, then none: 80 blocks live at the end
 *
 * Exit status 0. The blocks are reachable (globals) at exit, on purpose:
 * growth is about live bytes over time, not about lost blocks.
 */
#include <stdlib.h>
#include <time.h>

#define ROUNDS 400
#define PLATEAU_ROUNDS 80

static void *cache[ROUNDS];
static void *table[PLATEAU_ROUNDS];
static void *churn;

void cache_add(int i);
void churn_buf(void);
void table_add(int i);

void cache_add(int i)
{
	cache[i] = malloc(64); /* GROWING */
}

void churn_buf(void)
{
	free(churn);
	churn = malloc(512); /* CHURNING */
}

void table_add(int i)
{
	table[i] = malloc(256); /* PLATEAU */
}

int main(void)
{
	struct timespec ms = { 0, 1000000 };
	for (int i = 0; i < ROUNDS; i++) {
		cache_add(i);
		churn_buf();
		if (i < PLATEAU_ROUNDS)
			table_add(i);
		nanosleep(&ms, NULL);
	}
	return 0;
}
