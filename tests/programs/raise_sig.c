/* raise_sig.c - 100 x malloc(100), 99 freed, then raise(argv[1]) with the
 * signal at its default action, which ends the process (SIGALRM of a
 * forgotten alarm(), SIGUSR1, a profiling timer's SIGPROF, a real-time
 * signal). The trace must be complete. No stdio.
 *
 *   100 allocations, 99 frees, 10,000 bytes; 1 block (100 bytes) leaked.
 *   Exit: killed by the signal.
 */
#include <signal.h>
#include <stdlib.h>

static void *volatile keep;

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	for (int i = 0; i < 100; i++) {
		free(keep);
		keep = malloc(100);
	}
	raise(atoi(argv[1]));
	return 1;
}
