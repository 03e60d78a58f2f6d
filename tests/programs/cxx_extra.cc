// cxx_extra.cc - C++ cases valgrind cannot be the oracle for (its operator
// new replacement aborts instead of throwing), counts by construction only.
//
// The libstdc++ emergency pool is allocated before main: 1 allocation of
// 72,704 bytes, never freed.
//
//   function           call                               allocs frees bytes
//   throw_bad_alloc()  new char[huge] fails and throws: the
//                      failed call counts nothing; libstdc++'s
//                      __cxa_allocate_exception mallocs the
//                      bad_alloc (8 + 128 header), freed when
//                      the catch block ends                     1     1    136
//   extra_leak()       new int[4], never freed                  1     0     16
//   ------------------------------------------------------------------------
//   program's own                                               2     1    152
//   with the libstdc++ pool                                     3     1  72856
//   leaked: extra_leak() 1 block 16 bytes (+ the pool, 72704 bytes).
//   Exit status 0: the exception crossed the agent's operator new[] and was
//   caught (1 if not).
#include <cstddef>
#include <new>

static int failures;

void throw_bad_alloc()
{
	volatile std::size_t huge = ~static_cast<std::size_t>(0) / 4;
	try {
		char *p = new char[huge];
		p[0] = 1;
		failures++; // must not get here
	} catch (const std::bad_alloc &) {
		return;
	}
	failures++;
}

int *extra_leak()
{
	return new int[4];
}

static int *volatile sink;

int main()
{
	throw_bad_alloc();
	sink = extra_leak();
	sink = nullptr;
	return failures ? 1 : 0;
}
