// cxx_alt_alloc.cc - C++ allocations in a program whose malloc is an
// allocator library's (jemalloc, tcmalloc) that defines operator new and
// delete as well; the test runs it with such a library preloaded after the
// agent, and a build of it linked to the library.
//
//   function      calls                                     allocs frees bytes
//   make_arrays   new int[i + 1], i < 100; delete[] the
//                 even i's                                     100    50 20200
//   make_objects  new Obj (24 bytes), delete (sized), x10       10    10   240
//   make_nothrow  operator new(32, nothrow), delete, x5          5     5   160
//   make_aligned  operator new(64, align_val_t(64)),
//                 aligned delete, x3                             3     3   192
//   use_malloc    malloc(123), free                              1     1   123
//   -------------------------------------------------------------------------
//   program's own: 119 allocations, 69 frees, 20,915 bytes; leaked: the 50
//   arrays of odd i (10,200 bytes, leaf make_arrays); plus libstdc++'s
//   72,704-byte start-up pool.
//
// Exit status 0 (1 if an aligned block is misaligned). No stdio.
#include <cstdint>
#include <cstdlib>
#include <new>

struct Obj {
	long a, b, c;
};

static int *arrays[100];
static int failures;

__attribute__((noinline)) static void make_arrays()
{
	for (int i = 0; i < 100; i++)
		arrays[i] = new int[i + 1];
	for (int i = 0; i < 100; i += 2) {
		delete[] arrays[i];
		arrays[i] = nullptr;
	}
}

__attribute__((noinline)) static void make_objects()
{
	for (int i = 0; i < 10; i++) {
		Obj *o = new Obj();
		delete o;
	}
}

__attribute__((noinline)) static void make_nothrow()
{
	for (int i = 0; i < 5; i++) {
		void *p = ::operator new(32, std::nothrow);
		::operator delete(p, std::nothrow);
	}
}

__attribute__((noinline)) static void make_aligned()
{
	for (int i = 0; i < 3; i++) {
		void *p = ::operator new(64, std::align_val_t(64));
		if ((uintptr_t)p & 63)
			failures++;
		::operator delete(p, std::align_val_t(64));
	}
}

__attribute__((noinline)) static void use_malloc()
{
	void *volatile p = malloc(123);
	free(p);
}

int main()
{
	make_arrays();
	make_objects();
	make_nothrow();
	make_aligned();
	use_malloc();
	for (int i = 0; i < 100; i++)
		arrays[i] = nullptr; /* the odd ones leak */
	return failures;
}
