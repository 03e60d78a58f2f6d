// cxx_alloc.cc - C++ allocation entry points, counts known by construction.
//
// Counts exclude libstdc++'s emergency exception pool, which the runtime
// mallocs before main (1 allocation of 72,704 bytes, never freed without
// valgrind's --run-cxx-freeres): every total below is "+1 alloc, +72704
// bytes, +1 live block" for the whole program.
//
//   function          call                                allocs frees bytes
//   make_widget(int)  new Widget (32 bytes) x2                2     1     64
//                     (one deleted with sized delete, one leaked)
//   make_array(int)   new int[10], delete[]                   1     1     40
//   make_nothrow()    new (nothrow) Widget, delete            1     1     32
//                     new (nothrow) char[100], delete[]       1     1    100
//   make_aligned()    new Aligned (alignas 64, 128 bytes),    1     1    128
//                     delete (aligned + sized)
//                     new Aligned[2], delete[] (aligned)      1     1    256
//                     operator new(200, align_val_t(256)),    1     1    200
//                     operator delete(p, 200, align_val_t)
//   grow_vector()     std::vector<int> push_back x5: storage  4     4     60
//                     of 1, 2, 4, 8 ints (4+8+16+32 bytes)
//   -----------------------------------------------------------------------
//   program's own                                            12    11    880
//   with the libstdc++ pool                                  13    11  73584
//   leaked: make_widget(int) 1 block 32 bytes (+ the pool, 1 block 72704)
//   peak heap: 72704 + 32 (leaked widget) + 256 (Aligned[2]) = 72992.
//   Exit status 0.
//
// A throwing operator new is in cxx_extra.cc: valgrind cannot throw from its
// operator new replacement and aborts the program instead.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <unistd.h>
#include <vector>

struct Widget {
	int id;
	long pad[3];
	explicit Widget(int i) : id(i), pad{0, 0, 0} {}
};
static_assert(sizeof(Widget) == 32, "Widget is 32 bytes");

struct alignas(64) Aligned {
	char bytes[128];
};
static_assert(sizeof(Aligned) == 128, "Aligned is 128 bytes");

static int failures;

// Non-static and not inlined (-O0): the leaf frame of its allocations.
Widget *make_widget(int id)
{
	return new Widget(id);
}

int make_array(int n)
{
	int *a = new int[n];
	for (int i = 0; i < n; i++)
		a[i] = i;
	int sum = a[n - 1];
	delete[] a;
	return sum;
}

void make_nothrow()
{
	Widget *w = new (std::nothrow) Widget(3);
	char *c = new (std::nothrow) char[100];
	if (!w || !c)
		failures++;
	delete w;
	delete[] c;
}

void make_aligned()
{
	Aligned *a = new Aligned;
	if (reinterpret_cast<uintptr_t>(a) % 64)
		failures++;
	delete a;
	Aligned *b = new Aligned[2];
	if (reinterpret_cast<uintptr_t>(b) % 64)
		failures++;
	delete[] b;
	void *c = ::operator new(200, std::align_val_t(256));
	if (reinterpret_cast<uintptr_t>(c) % 256)
		failures++;
	::operator delete(c, 200, std::align_val_t(256));
}

int grow_vector()
{
	std::vector<int> v;
	for (int i = 0; i < 5; i++)
		v.push_back(i);
	return v[4];
}

static Widget *volatile sink;

int main()
{
	Widget *w = make_widget(1);
	delete w; // sized delete: Widget has a trivial destructor, size known
	sink = make_widget(2);
	sink = nullptr; // leaked
	if (make_array(10) != 9)
		failures++;
	make_nothrow();
	make_aligned();
	if (grow_vector() != 4)
		failures++;
	return failures ? 1 : 0;
}
