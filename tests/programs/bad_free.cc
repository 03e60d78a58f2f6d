// bad_free.cc - one bad free per mode (argv[1]), each from a function of
// its own so that the report's stacks can be checked by name:
//   double      free(p) twice (glibc aborts: "free(): double free detected")
//   middle      free(p + 16) of a 64-byte block (glibc aborts: invalid pointer)
//   never       free of an address malloc never returned (a static array)
//   new_array   delete of a new[] block (mismatched, no abort)
//   free_new    free() of a new block (mismatched, no abort)
//   realloc_middle  realloc(p + 16) of a 64-byte block (glibc aborts:
//               "realloc(): invalid pointer")
//   ok          frees nothing wrongly
// Prints "reached end" when it gets past the bad free.
#include <cstdio>
#include <cstdlib>
#include <cstring>

static char not_heap[64] __attribute__((aligned(16)));

extern "C" __attribute__((noinline)) void *bf_alloc_block(void)
{
	return malloc(64);
}

extern "C" __attribute__((noinline)) void bf_first_free(void *p)
{
	free(p);
}

extern "C" __attribute__((noinline)) void bf_second_free(void *p)
{
	free(p);
}

extern "C" __attribute__((noinline)) void bf_free_middle(char *p)
{
	free(p + 16);
}

extern "C" __attribute__((noinline)) void bf_free_static(void)
{
	free(not_heap + 16);
}

extern "C" __attribute__((noinline)) int *bf_new_array(void)
{
	return new int[10];
}

extern "C" __attribute__((noinline)) void bf_delete_scalar(int *p)
{
	delete p;
}

extern "C" __attribute__((noinline)) int *bf_new_scalar(void)
{
	return new int(7);
}

extern "C" __attribute__((noinline)) void bf_free_of_new(int *p)
{
	free(p);
}

extern "C" __attribute__((noinline)) void *bf_realloc_middle(char *p)
{
	return realloc(p + 16, 200);
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "ok";
	void *keep = malloc(100); // something else in the trace
	if (!strcmp(m, "double")) {
		void *p = bf_alloc_block();
		bf_first_free(p);
		bf_second_free(p);
	} else if (!strcmp(m, "middle")) {
		char *p = (char *)bf_alloc_block();
		bf_free_middle(p);
	} else if (!strcmp(m, "never")) {
		bf_free_static();
	} else if (!strcmp(m, "new_array")) {
		bf_delete_scalar(bf_new_array());
	} else if (!strcmp(m, "realloc_middle")) {
		char *p = (char *)bf_alloc_block();
		bf_realloc_middle(p);
	} else if (!strcmp(m, "free_new")) {
		bf_free_of_new(bf_new_scalar());
	}
	free(keep);
	puts("reached end");
	return 0;
}
