// cxx_containers.cc - std::string, std::vector and std::map allocations whose
// stacks start in libstdc++'s allocator plumbing (new_allocator, allocator_traits,
// _M_create, _M_realloc_insert, _M_get_node, operator new), for the folded and
// shortened frames of the text report (tests/e2e/test_stacks.py).
//
//   function                     allocations (program's own)
//   make_names()                 8 std::string of 40 chars (past the SSO buffer)
//   fill_vector()                std::vector<long> push_back x9: storage of
//                                1, 2, 4, 8, 16 longs (5 allocations)
//   fill_map()                   std::map<std::string, int>: 6 nodes (keys
//                                of 3 chars fit the SSO buffer)
//   Deeply::Nested::Registry<..>::register_entry(...)   1 std::string of 64 chars,
//                                kept until exit (in use at exit)
//   Exit status 0.
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace Deeply {
namespace Nested {
template <typename Key, typename Value> struct Registry {
	std::vector<std::string> *keep;
	// a long name with template arguments: the report folds them to <>
	__attribute__((noinline)) void register_entry(const std::map<std::string, std::vector<std::string>> &,
						      const std::string &name)
	{
		keep = new std::vector<std::string>(); // one 24-byte vector
		keep->reserve(1);		       // one 32-byte buffer
		keep->emplace_back(name + std::string(64 - name.size(), 'r'));
	}
};
} // namespace Nested
} // namespace Deeply

static std::vector<std::string> names;

__attribute__((noinline)) static void make_names()
{
	names.reserve(8);
	for (int i = 0; i < 8; i++)
		names.push_back(std::string(40, (char)('a' + i)));
}

__attribute__((noinline)) static long fill_vector()
{
	std::vector<long> v;
	for (long i = 0; i < 9; i++)
		v.push_back(i);
	long s = 0;
	for (long x : v)
		s += x;
	return s;
}

__attribute__((noinline)) static int fill_map()
{
	std::map<std::string, int> m;
	const char *keys[] = { "one", "two", "six", "ten", "abc", "xyz" };
	for (int i = 0; i < 6; i++)
		m[keys[i]] = i;
	return (int)m.size();
}

int main()
{
	make_names();
	long s = fill_vector();
	int k = fill_map();
	static Deeply::Nested::Registry<std::string, std::map<std::string, std::vector<std::string>>> reg;
	std::map<std::string, std::vector<std::string>> none;
	reg.register_entry(none, "entry");
	printf("%ld %d %zu\n", s, k, names.size());
	return 0;
}
