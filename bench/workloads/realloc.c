/* realloc - realloc growth of many buffers.
 *
 * Usage: realloc [ITERATIONS]   (default 6000000)
 *
 * 2048 buffers (string builders); each iteration appends 1-64 bytes to one of
 * them. Even-numbered buffers grow exactly (one realloc per append, as naive
 * code does), odd ones double their capacity (amortised, as std::vector and
 * most string builders do). A buffer that passes its limit (1-16 KiB) is
 * sometimes shrunk to fit with realloc and then freed; it restarts from NULL
 * (realloc(NULL, n), i.e. an allocation through realloc).
 * Deterministic, prints nothing, frees everything.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline, noclone))
#define BARRIER() __asm__ volatile("" ::: "memory")
#define NBUF 2048

struct builder {
	char *data;
	size_t len, cap, limit;
};

static struct builder buffers[NBUF];
static uint64_t rng_state = 0x853c49e6748fea9bull;
volatile uint64_t sink;

static inline uint32_t rnd(void)
{
	rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(rng_state >> 33);
}

NOINLINE static void grow_to(struct builder *b, size_t need, int exact)
{
	size_t cap = b->cap;
	if (exact)
		cap = need;
	else {
		if (cap < 32)
			cap = 32;
		while (cap < need)
			cap *= 2;
	}
	char *p = realloc(b->data, cap);
	if (!p)
		abort();
	b->data = p;
	b->cap = cap;
	BARRIER();
}

NOINLINE static void builder_append(struct builder *b, int exact, const char *src, size_t n)
{
	if (b->len + n > b->cap)
		grow_to(b, b->len + n, exact);
	memcpy(b->data + b->len, src, n);
	b->len += n;
	BARRIER();
}

NOINLINE static void builder_finish(struct builder *b, uint32_t r)
{
	if (r & 1) {
		/* shrink to fit, as a finished string would be */
		char *p = realloc(b->data, b->len);
		if (!p)
			abort();
		b->data = p;
	}
	sink += (unsigned char)b->data[b->len - 1];
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
	BARRIER();
}

NOINLINE static void emit_record(unsigned i, uint32_t r)
{
	static const char text[64] = "the quick brown fox jumps over the lazy dog 0123456789 ABCDEFGH";
	struct builder *b = &buffers[i];
	if (b->limit == 0)
		b->limit = 1024u << (r % 5);
	builder_append(b, !(i & 1), text, 1 + ((r >> 8) & 63));
	if (b->len >= b->limit) {
		builder_finish(b, r >> 16);
		b->limit = 1024u << ((r >> 20) % 5);
	}
	BARRIER();
}

NOINLINE static void run(unsigned long iterations)
{
	for (unsigned long i = 0; i < iterations; i++) {
		uint32_t r = rnd();
		emit_record(r % NBUF, r >> 11);
	}
	BARRIER();
}

int main(int argc, char **argv)
{
	unsigned long iterations = argc > 1 ? strtoul(argv[1], NULL, 0) : 6000000ul;
	run(iterations);
	for (unsigned i = 0; i < NBUF; i++)
		free(buffers[i].data);
	return 0;
}
