/* churn - many small malloc/free pairs from a few call sites, several frames deep.
 *
 * Usage: churn [ITERATIONS]   (default 8000000; each iteration = 3 malloc + 3 free)
 *
 * Three allocation sites, each reached through a chain of noinline helpers so
 * that a profiler has to unwind 6-8 frames per event (built -O2 without frame
 * pointers, like most real programs):
 *   - a temporary token: allocated, touched, freed at once;
 *   - a cache entry: replaces a random slot of a 1024-entry ring (lives a while);
 *   - a string: appended to a short list, the list freed every 8 strings.
 * Deterministic (fixed LCG), prints nothing; everything is freed before exit.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline, noclone))
#define BARRIER() __asm__ volatile("" ::: "memory")

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static inline uint32_t rnd(void)
{
	rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(rng_state >> 33);
}

volatile uint64_t sink;

struct node {
	struct node *next;
	uint32_t key;
	uint32_t len;
	unsigned char data[];
};

#define RING 1024
static struct node *ring[RING];
static struct node *list_head;
static unsigned list_len;

NOINLINE static struct node *node_new(uint32_t key, uint32_t len)
{
	struct node *n = malloc(sizeof *n + len);
	if (!n)
		abort();
	n->next = NULL;
	n->key = key;
	n->len = len;
	memset(n->data, (int)(key & 0xff), len);
	BARRIER();
	return n;
}

NOINLINE static void node_free(struct node *n)
{
	sink += n->key + n->data[n->len ? n->len - 1 : 0];
	free(n);
	BARRIER();
}

/* site 1: temporary token (parse_input -> lex_token -> make_token -> node_new) */
NOINLINE static struct node *make_token(uint32_t key)
{
	struct node *t = node_new(key, 8 + (key & 31));
	BARRIER();
	return t;
}

NOINLINE static uint64_t lex_token(uint32_t key)
{
	struct node *t = make_token(key);
	uint64_t h = t->key * 31u + t->len;
	node_free(t);
	BARRIER();
	return h;
}

NOINLINE static uint64_t parse_input(uint32_t key)
{
	uint64_t h = lex_token(key);
	BARRIER();
	return h;
}

/* site 2: cache entry (cache_update -> cache_insert -> cache_entry_new -> node_new) */
NOINLINE static struct node *cache_entry_new(uint32_t key)
{
	struct node *e = node_new(key, 24 + (key % 200));
	BARRIER();
	return e;
}

NOINLINE static void cache_insert(uint32_t key)
{
	unsigned slot = key % RING;
	if (ring[slot])
		node_free(ring[slot]);
	ring[slot] = cache_entry_new(key);
	BARRIER();
}

NOINLINE static void cache_update(uint32_t key)
{
	cache_insert(key);
	BARRIER();
}

/* site 3: short-lived strings on a list (build_message -> append_string -> string_new -> node_new) */
NOINLINE static struct node *string_new(uint32_t key)
{
	struct node *s = node_new(key, 16 + (key % 48));
	BARRIER();
	return s;
}

NOINLINE static void append_string(uint32_t key)
{
	struct node *s = string_new(key);
	s->next = list_head;
	list_head = s;
	if (++list_len == 8) {
		while (list_head) {
			struct node *n = list_head;
			list_head = n->next;
			node_free(n);
		}
		list_len = 0;
	}
	BARRIER();
}

NOINLINE static void build_message(uint32_t key)
{
	append_string(key);
	BARRIER();
}

NOINLINE static void step(void)
{
	uint32_t r = rnd();
	sink += parse_input(r);
	cache_update(r >> 7);
	build_message(r >> 11);
	BARRIER();
}

NOINLINE static void run(unsigned long iterations)
{
	for (unsigned long i = 0; i < iterations; i++)
		step();
	BARRIER();
}

int main(int argc, char **argv)
{
	unsigned long iterations = argc > 1 ? strtoul(argv[1], NULL, 0) : 8000000ul;
	run(iterations);
	for (unsigned i = 0; i < RING; i++)
		if (ring[i])
			node_free(ring[i]);
	while (list_head) {
		struct node *n = list_head;
		list_head = n->next;
		node_free(n);
	}
	return 0;
}
