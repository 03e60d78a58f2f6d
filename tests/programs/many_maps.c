/* many_maps.c - maps and unmaps one page N times (argv[1], default 1000):
 * 2N map events. Summary mode keeps the first 65,536 of them; past that
 * the report must say its mapped figures are partial.
 *
 * Expected: mmap_calls N, munmap_calls N, nothing mapped at the end.
 */
#include <stdlib.h>
#include <sys/mman.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000;
	for (long i = 0; i < n; i++) {
		void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return 1;
		munmap(p, 4096);
	}
	return 0;
}
