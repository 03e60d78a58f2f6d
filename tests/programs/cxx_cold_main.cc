// cxx_cold_main.cc - built with -O2 (Makefile): main's exception path goes
// to main.cold, and main's line table then ends in a row of no length
// right before _start, which has no debug information. A frame in _start
// must get no file and line, not main's last one.
//
//   main  10 x std::string of 40 chars kept in a vector, one throw caught
//         (__cxa_allocate_exception), then everything freed
//
// Exit status 0. No stdio.
#include <stdexcept>
#include <string>
#include <vector>

int main()
{
	std::vector<std::string> v;
	for (int i = 0; i < 10; i++)
		v.push_back(std::string(40 + i, 'x'));
	try {
		throw std::runtime_error("cold");
	} catch (const std::exception &e) {
		v.push_back(e.what());
	}
	return v.size() == 11 ? 0 : 1;
}
