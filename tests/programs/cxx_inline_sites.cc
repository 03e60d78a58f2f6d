// Many allocation sites behind inlined code: built -O2 -g (Makefile), so
// that most stacks expand into inline chains (the containers' members, the
// helpers below) over the program, libstdc++ and libc. Its report tells
// whether symbolizing on several threads gives the same frames as one.
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

template <int N> struct Node {
	int v[N % 7 + 1];
};

static std::vector<void *> keep; // some blocks stay: the leak sections list them

// always inlined into each instance of fill<N>: one more inline level
template <int N> static inline __attribute__((always_inline)) Node<N> *make_node(int i)
{
	Node<N> *n = new Node<N>;
	n->v[0] = i;
	return n;
}

// one function per N: distinct return addresses, each with its inlines
template <int N> __attribute__((noinline)) void fill(int rounds)
{
	std::vector<int> v;
	std::map<int, std::string> m;
	std::unordered_map<int, int> u;
	for (int i = 0; i < rounds; i++) {
		v.push_back(i * N);
		m.emplace(i, std::string(40 + N, 'a' + N % 26));
		u[i] = N;
		Node<N> *n = make_node<N>(i);
		if (i % 5 == 0)
			keep.push_back(n);
		else
			delete n;
	}
	auto s = std::make_shared<std::vector<long>>(N + 1, 1L);
	keep.push_back(new std::vector<long>(*s));
	if (N > 0)
		fill<(N > 0 ? N - 1 : 0)>(rounds);
}

int main()
{
	fill<47>(20);
	return 0;
}
