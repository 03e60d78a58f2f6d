/* test.h - a minimal unit-test harness: value-printing checks and a closing
 * "N passed, N failed" line that the test runner reads.
 *
 * Usage: CHECK(cond); CHECK_EQ(a, b) (integers); CHECK_STR(haystack, needle)
 * (substring); return TEST_DONE(); from main.
 */
#ifndef HEAPTRAIL_TEST_H
#define HEAPTRAIL_TEST_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static unsigned test_passed, test_failed;

static inline void test_result(int ok, const char *file, int line, const char *expr)
{
	if (ok) {
		test_passed++;
		return;
	}
	test_failed++;
	fprintf(stderr, "%s:%d: FAILED: %s\n", file, line, expr);
}

#define CHECK(cond) test_result(!!(cond), __FILE__, __LINE__, #cond)

#define CHECK_EQ(a, b)                                                                      \
	do {                                                                                \
		int64_t a_ = (int64_t)(a), b_ = (int64_t)(b);                               \
		test_result(a_ == b_, __FILE__, __LINE__, #a " == " #b);                   \
		if (a_ != b_)                                                               \
			fprintf(stderr, "    got %" PRId64 ", expected %" PRId64 "\n", a_, b_); \
	} while (0)

#define CHECK_STR(hay, needle)                                                      \
	do {                                                                        \
		const char *h_ = (hay), *n_ = (needle);                             \
		int ok_ = h_ && strstr(h_, n_) != NULL;                             \
		test_result(ok_, __FILE__, __LINE__, #hay " contains " #needle);    \
		if (!ok_)                                                           \
			fprintf(stderr, "    \"%s\" lacks \"%s\"\n", h_ ? h_ : "(null)", n_); \
	} while (0)

/* Print the closing line; the exit status is 1 if anything failed. */
#define TEST_DONE()                                                          \
	(printf("%u passed, %u failed\n", test_passed, test_failed), test_failed ? 1 : 0)

#endif /* HEAPTRAIL_TEST_H */
