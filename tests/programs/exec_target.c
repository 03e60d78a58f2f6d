/* exec_target.c - the image exec_parent execs (also runs on its own).
 *
 *   function     calls                                   allocs frees bytes
 *   target_work  malloc(1000) x3, two freed                 3     2   3000
 *   leaked: 1 block, 1000 bytes (leaf target_work).
 *   Exit status 0 when argv[1] is "from-exec" (it was exec'd by
 *   exec_parent), 5 otherwise: proves the arguments crossed the exec.
 */
#include <stdlib.h>
#include <string.h>

static void *volatile keep;

static void target_work(void)
{
	void *p[3];
	for (int i = 0; i < 3; i++) {
		p[i] = malloc(1000);
		memset(p[i], i, 1000);
	}
	free(p[0]);
	free(p[1]);
	keep = p[2];
	keep = NULL;
}

int main(int argc, char **argv)
{
	target_work();
	return argc == 2 && strcmp(argv[1], "from-exec") == 0 ? 0 : 5;
}
