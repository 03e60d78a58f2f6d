// cxx_bad_align.cc - aligned operator new with an alignment that is not a
// power of two (0, 3, 5, 6, 7, 12, 24): the C++ runtime rejects each, the
// throwing forms with std::bad_alloc, the nothrow ones with NULL.
//
//   bad_align  per alignment: operator new(100, al) (must throw), and
//              operator new[](100, al, nothrow) (must return NULL)
//
// Exit status: the number of those calls that succeeded (0). No stdio.
#include <new>

static const unsigned long aligns[] = {0, 3, 5, 6, 7, 12, 24};

__attribute__((noinline)) static int bad_align()
{
	int succeeded = 0;
	for (unsigned long al : aligns) {
		try {
			void *p = ::operator new(100, std::align_val_t(al));
			succeeded++;
			::operator delete(p, std::align_val_t(al));
		} catch (const std::bad_alloc &) {
		}
		void *q = ::operator new[](100, std::align_val_t(al), std::nothrow);
		if (q) {
			succeeded++;
			::operator delete[](q, std::align_val_t(al));
		}
	}
	return succeeded;
}

int main()
{
	return bad_align();
}
