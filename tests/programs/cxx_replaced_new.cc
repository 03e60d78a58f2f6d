// cxx_replaced_new.cc - a program that replaces only the plain operator new
// and operator delete(void *), as the C++ standard allows: libstdc++'s
// new[], nothrow new, sized delete and delete[] call them, so every form
// must reach the program's own functions.
//
//   argv[1] "malloc": the replacements count their calls and use malloc
//     and free; the program checks its counts: 5 news (new, new[], nothrow
//     new, nothrow new[], new of a struct), 5 deletes (sized delete of the
//     struct, delete[], delete, and the nothrow ones freed by delete and
//     delete[]). Each new mallocs size + 16 bytes (a header), so heaptrail
//     sees 5 mallocs of known sizes whose leaf is the program's operator
//     new, and 5 frees.
//   argv[1] "mmap": the replacements use mmap and munmap; heaptrail sees
//     none of it, and a free() of such a block would abort.
//
// Exit status 0 when the program's counts are right (1 otherwise); no
// stdio.
#include <cstdlib>
#include <cstring>
#include <new>
#include <sys/mman.h>

static int news, deletes;
static bool use_mmap;

struct header {
	std::size_t size;
	std::size_t pad;
};

void *operator new(std::size_t n)
{
	news++;
	std::size_t total = n + sizeof(header);
	void *p;
	if (use_mmap) {
		p = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			throw std::bad_alloc();
	} else {
		p = std::malloc(total); // REPLACED_NEW
		if (!p)
			throw std::bad_alloc();
	}
	static_cast<header *>(p)->size = total;
	return static_cast<header *>(p) + 1;
}

void operator delete(void *q) noexcept
{
	if (!q)
		return;
	deletes++;
	header *h = static_cast<header *>(q) - 1;
	if (use_mmap)
		munmap(h, h->size);
	else
		std::free(h);
}

struct widget {
	long a[6];
};

int main(int argc, char **argv)
{
	use_mmap = argc > 1 && !std::strcmp(argv[1], "mmap");
	widget *w = new widget();               // operator new(48)
	char *arr = new char[100];              // new[] -> operator new(100)
	int *nt = new (std::nothrow) int(7);    // nothrow new -> operator new(4)
	short *nta = new (std::nothrow) short[10]; // nothrow new[] -> operator new(20)
	long *l = new long(1);                  // operator new(8)
	delete w;                               // sized delete -> operator delete
	delete[] arr;                           // delete[] -> operator delete
	delete nt;
	delete[] nta;
	delete l;
	return news == 5 && deletes == 5 ? 0 : 1;
}
