/* leaky.c - the example program of the README: a small "word index" that
 * builds a list of records, keeps a cache, frees some of it and leaks the
 * rest, so that every section of heaptrail's report has something to show.
 * An argument sets the number of records (default 1000): scripts/
 * screenshots.sh compares two runs with `heaptrail diff`. */
#include <stdlib.h>
#include <string.h>

struct record {
	struct record *next;
	char *name;
	int value;
};

static char *copy_name(const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = malloc(n);
	memcpy(p, s, n);
	return p;
}

static struct record *make_record(const char *name, int value)
{
	struct record *r = calloc(1, sizeof *r);
	r->name = copy_name(name);
	r->value = value;
	return r;
}

static int checksum(int i)
{
	/* a temporary buffer, freed right away */
	char *scratch = malloc(256);
	memset(scratch, i, 256);
	int sum = scratch[0] + scratch[255];
	free(scratch);
	return sum;
}

static void **grow_cache(void **cache, size_t *cap)
{
	*cap = *cap ? *cap * 2 : 4;
	return realloc(cache, *cap * sizeof *cache);
}

int main(int argc, char **argv)
{
	struct record *head = NULL;
	void **cache = NULL;
	size_t used = 0, cap = 0;
	int n = argc > 1 ? atoi(argv[1]) : 1000;
	for (int i = 0; i < n; i++) {
		struct record *r = make_record(i % 2 ? "odd" : "even", checksum(i));
		r->next = head;
		head = r;
		if (used == cap)
			cache = grow_cache(cache, &cap);
		cache[used++] = r;
	}
	/* Free the even records only: the odd ones leak with their names. */
	for (size_t i = 0; i < used; i++) {
		struct record *r = cache[i];
		if (i % 2 == 0) {
			free(r->name);
			free(r);
		}
	}
	free(cache);
	return 0;
}
