/* live_blocks - a program that exits with many blocks live, for the cost of
 * the leak check at exit (bench/leakcheck.sh).
 *
 * Usage: live_blocks [N]   (default 1000000)
 *
 * Builds N blocks of 24-88 bytes: a binary tree of N/2 nodes held by a
 * global (still reachable), and N/2 list nodes whose head is dropped (one
 * definitely lost, the rest indirectly lost), so the scan walks every kind
 * of edge. Deterministic.
 */
#include <stdlib.h>
#include <string.h>

struct node {
	struct node *left, *right;
	char pad[];
};

struct node *volatile live_blocks_root; /* read by nobody: volatile keeps the store */
static struct node *volatile escape; /* keeps the compiler from eliding the list */
static unsigned long seed = 1;

static size_t next_size(void)
{
	seed = seed * 6364136223846793005ul + 1442695040888963407ul;
	return 24 + (seed >> 33) % 65;
}

static struct node *tree(long n)
{
	if (n <= 0)
		return NULL;
	struct node *x = malloc(next_size());
	x->left = tree((n - 1) / 2);
	x->right = tree(n - 1 - (n - 1) / 2);
	return x;
}

static __attribute__((noinline)) void lost_list(long n)
{
	struct node *head = NULL;
	for (long i = 0; i < n; i++) {
		struct node *x = malloc(next_size());
		x->left = head;
		x->right = NULL;
		head = x;
	}
	escape = head;
	escape = NULL;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	live_blocks_root = tree(n / 2);
	lost_list(n - n / 2);
	volatile char wipe[4096];
	memset((char *)wipe, 0, sizeof wipe);
	return 0;
}
