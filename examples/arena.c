/* arena.c - a bump allocator on mmap'd chunks, annotated for heaptrail.
 *
 * The program's own allocator bypasses malloc, so no malloc tool sees its
 * blocks. Three calls from heaptrail.h make them visible in every report,
 * leak list and export: heaptrail_alloc when a block is handed out,
 * heaptrail_free when it is taken back (here: when the arena is reset),
 * heaptrail_realloc when a block grows. Without the agent these calls cost a
 * test of a function pointer each.
 *
 *   cc -O2 -g -Iinclude -o arena examples/arena.c
 *   heaptrail run -- ./arena && heaptrail report heaptrail.arena.*.ht
 */
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>

#include "heaptrail.h"

#define CHUNK (1u << 20)

typedef struct chunk {
	struct chunk *next;
	size_t used;
	unsigned char data[];
} chunk_t;

typedef struct arena {
	chunk_t *chunks;
} arena_t;

/* Each block starts with its size, so that a reset can walk them. */
typedef struct block {
	size_t size;
	unsigned char data[];
} block_t;

/* Carves a block out of the current chunk (a new chunk when it is full). */
static void *bump(arena_t *a, size_t size)
{
	size_t need = (sizeof(block_t) + size + 15) & ~(size_t)15;
	chunk_t *c = a->chunks;
	if (!c || c->used + need > CHUNK - sizeof(chunk_t)) {
		c = mmap(NULL, CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (c == MAP_FAILED)
			return NULL;
		c->next = a->chunks;
		c->used = 0;
		a->chunks = c;
	}
	block_t *b = (block_t *)(c->data + c->used);
	c->used += need;
	b->size = size;
	return b->data;
}

static void *arena_alloc(arena_t *a, size_t size)
{
	void *p = bump(a, size);
	if (p)
		heaptrail_alloc(p, size);
	return p;
}

/* A bump allocator cannot grow in place: copy, and tell heaptrail the
 * block moved (one free plus one allocation, as memcheck counts it). */
static void *arena_grow(arena_t *a, void *p, size_t size)
{
	block_t *old = (block_t *)((unsigned char *)p - offsetof(block_t, data));
	void *q = bump(a, size);
	if (!q)
		return NULL;
	memcpy(q, p, old->size < size ? old->size : size);
	heaptrail_realloc(p, q, size);
	return q;
}

/* Every block of the arena is freed at once. */
static void arena_reset(arena_t *a)
{
	while (a->chunks) {
		chunk_t *c = a->chunks;
		for (size_t off = 0; off < c->used;) {
			block_t *b = (block_t *)(c->data + off);
			heaptrail_free(b->data);
			off += (sizeof(block_t) + b->size + 15) & ~(size_t)15;
		}
		a->chunks = c->next;
		munmap(c, CHUNK);
	}
}

static char *make_token(arena_t *a, int i)
{
	char *s = arena_alloc(a, 32);
	memset(s, 'a' + i % 26, 31);
	s[31] = 0;
	return s;
}

int main(void)
{
	arena_t parse = {NULL}, keep = {NULL};
	for (int round = 0; round < 10; round++) {
		for (int i = 0; i < 1000; i++)
			make_token(&parse, i);
		arena_reset(&parse); /* a parse's tokens die with it */
	}
	char *table = arena_alloc(&keep, 64);
	table = arena_grow(&keep, table, 4096); /* kept: shows as a leak */
	return table[0] == 0 ? 0 : 1;
}
