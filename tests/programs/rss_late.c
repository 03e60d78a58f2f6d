/* rss_late.c - a program whose resident set peaks well after its heap.
 *
 * Allocates and touches 8 MiB (the heap's peak, at once), frees it, waits
 * 300 ms, then maps 64 MiB and touches it 8 MiB at a time every 60 ms
 * (no allocation meanwhile: only the agent's own sampling sees it), holds
 * it 300 ms and exits. The resident set peaks at 64 MiB or more about a
 * second after the heap's peak.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define MIB (1024ul * 1024)

static void nap(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
	nanosleep(&ts, NULL);
}

int main(void)
{
	char *h = malloc(8 * MIB);
	if (!h)
		return 1;
	memset(h, 1, 8 * MIB);
	free(h);
	nap(300);
	char *m = mmap(NULL, 64 * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return 1;
	for (int i = 0; i < 8; i++) {
		memset(m + i * 8 * MIB, 2, 8 * MIB);
		nap(60);
	}
	nap(300);
	munmap(m, 64 * MIB);
	return 0;
}
