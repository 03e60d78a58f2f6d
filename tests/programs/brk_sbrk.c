/* brk_sbrk.c - the program's own moves of the break, with figures known
 * by construction (malloc's own growth of its arena is not among them).
 *
 *   site          calls                                 mapped at exit
 *   grow_sbrk     3 x sbrk(+64 KiB)                     160 KiB = 163,840
 *   grow_brk      brk(break + 32 KiB)                   0
 *   shrink_sbrk   sbrk(-64 KiB): brk's 32 KiB and the last 32 KiB of
 *                 grow_sbrk's third
 *
 *   mapped at the peak (before the shrink): 229,376 bytes.
 * First, 200 blocks of 4 KiB are allocated and kept: malloc grows its main
 * arena by 800 KiB through libc's own __sbrk, which is the heap's, not a
 * map of the program's (no site for it). No malloc between the first
 * move and the shrink (its arena could move
 * the break between ours). The break is first moved to a page boundary
 * (from main, by "aligned" bytes, 0 if it was one). Prints
 * heaptrail_stats()'s mapped bytes (163,840 + the alignment's whole pages
 * under the agent), then "ok".
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "heaptrail.h"

#define KIB 1024l

__attribute__((noinline)) static void *grow_sbrk(void)
{
	return sbrk(64 * KIB);
}

__attribute__((noinline)) static int grow_brk(void)
{
	return brk((char *)sbrk(0) + 32 * KIB);
}

__attribute__((noinline)) static void *shrink_sbrk(void)
{
	return sbrk(-64 * KIB);
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0); /* printf allocates nothing */
	static void *held[200];
	for (int i = 0; i < 200; i++)
		if (!(held[i] = malloc(4096)))
			return 1;
	uintptr_t b = (uintptr_t)sbrk(0);
	long align = b & 4095 ? 4096 - (long)(b & 4095) : 0;
	if (align)
		sbrk(align); /* a site of main's, its bytes printed below */
	for (int i = 0; i < 3; i++)
		if (grow_sbrk() == (void *)-1)
			return 1;
	if (grow_brk() != 0)
		return 1;
	if (shrink_sbrk() == (void *)-1)
		return 1;
	struct heaptrail_stats s = {.size = sizeof s};
	heaptrail_stats(&s);
	printf("mapped %llu aligned %ld\n", (unsigned long long)s.mapped_bytes, align);
	puts("ok");
	return 0;
}
