// cxx_small_align.cc - aligned operator new with an alignment below a
// pointer's (allowed: any power of two), which posix_memalign refuses.
//
//   small_align  operator new(10, align_val_t(4)) and its delete; then
//                operator new[](24, align_val_t(2)) and its delete[]
//   ------------------------------------------------------------------------
//   program's own: 2 allocations (10 and 24 bytes, as operator new and
//   new[]), 2 frees; plus libstdc++'s 72,704-byte start-up pool.
//
// Exit status 0. No stdio.
#include <new>

__attribute__((noinline)) static void small_align()
{
	void *p = ::operator new(10, std::align_val_t(4)); // SMALL_ALIGN
	::operator delete(p, std::align_val_t(4));
	void *q = ::operator new[](24, std::align_val_t(2));
	::operator delete[](q, std::align_val_t(2));
}

int main()
{
	small_align();
	return 0;
}
