// containers - C++ standard containers growing and churning.
//
// Usage: containers [ITERATIONS]   (default 15000)
//
// Each iteration, through a few noinline layers of "application" code:
//   - std::vector<int> push_back growth to 1-4096 elements (no reserve);
//   - std::map<int, std::string> with 64 inserts (strings of 8-48 chars, half
//     past the 15-char small-string buffer) and some erases;
//   - std::unordered_map<std::string, int> with 128 inserts (rehash growth);
//   - std::string built by repeated += and a std::vector<std::string> of its
//     tokens (split on spaces).
// Everything goes through operator new/delete (libstdc++'s default allocator).
// Deterministic, prints nothing, frees everything.
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#define NOINLINE __attribute__((noinline, noclone))
#define BARRIER() __asm__ volatile("" ::: "memory")

static uint64_t rng_state = 0xda3e39cb94b95bdbull;
static inline uint32_t rnd()
{
	rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
	return static_cast<uint32_t>(rng_state >> 33);
}

volatile uint64_t sink;

static std::string make_text(uint32_t r, size_t len)
{
	static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789 ";
	std::string s(len, 'x');
	for (size_t i = 0; i < len; i++)
		s[i] = alphabet[(r >> (i % 24) ^ i * 7) % (sizeof alphabet - 1)];
	return s;
}

NOINLINE static uint64_t fill_samples(uint32_t r)
{
	std::vector<int> samples;
	size_t n = 1 + r % 4096;
	for (size_t i = 0; i < n; i++)
		samples.push_back(static_cast<int>(i ^ r));
	BARRIER();
	return samples.size() + static_cast<uint64_t>(samples.back());
}

NOINLINE static uint64_t index_records(uint32_t r)
{
	std::map<int, std::string> records;
	for (int i = 0; i < 64; i++) {
		uint32_t k = rnd();
		records.emplace(static_cast<int>(k % 1000), make_text(k, 8 + k % 41));
	}
	for (int i = 0; i < 16; i++)
		records.erase(static_cast<int>((r + static_cast<uint32_t>(i) * 61) % 1000));
	BARRIER();
	return records.size();
}

NOINLINE static uint64_t count_words(uint32_t r)
{
	std::unordered_map<std::string, int> counts;
	for (int i = 0; i < 128; i++) {
		uint32_t k = rnd() % 96;
		counts["identifier_number_" + std::to_string(k + (r & 7))]++;
	}
	BARRIER();
	return counts.size();
}

NOINLINE static uint64_t build_and_split(uint32_t r)
{
	std::string line;
	for (int i = 0; i < 40; i++) {
		line += make_text(r + static_cast<uint32_t>(i), 3 + (r + static_cast<uint32_t>(i)) % 12);
		line += ' ';
	}
	std::vector<std::string> tokens;
	size_t start = 0;
	for (size_t pos; (pos = line.find(' ', start)) != std::string::npos; start = pos + 1)
		if (pos > start)
			tokens.emplace_back(line, start, pos - start);
	BARRIER();
	return tokens.size() + line.size();
}

NOINLINE static uint64_t process_batch(uint32_t r)
{
	uint64_t h = fill_samples(r);
	h += index_records(r);
	h += count_words(r);
	h += build_and_split(r);
	BARRIER();
	return h;
}

int main(int argc, char **argv)
{
	unsigned long iterations = argc > 1 ? std::strtoul(argv[1], nullptr, 0) : 15000ul;
	for (unsigned long i = 0; i < iterations; i++)
		sink += process_batch(rnd());
	return 0;
}
