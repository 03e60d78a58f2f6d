/* test_safe.c - analysis/safe.c: names made safe for text, JSON and XML, byte
 * for byte. */
#include <stdlib.h>

#include "analysis/safe.h"
#include "test.h"

typedef void (*put_fn)(FILE *, const char *);

/* What put writes for s, in a static buffer. */
static const char *put(put_fn fn, const char *s)
{
	static char out[1024];
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	fn(f, s);
	fclose(f);
	snprintf(out, sizeof(out), "%s", buf);
	free(buf);
	return out;
}

#define TEXT_IS(s, want)                                                         \
	do {                                                                     \
		CHECK(!strcmp(put(ht_text_put, s), want));                       \
		CHECK_EQ(ht_text_len(s), strlen(want));                          \
		CHECK(ht_text_is_safe(s) == !strcmp(s, want));                   \
		if (strcmp(put(ht_text_put, s), want))                           \
			fprintf(stderr, "    got \"%s\"\n", put(ht_text_put, s)); \
	} while (0)

static void test_text(void)
{
	TEXT_IS("plain name(int) const", "plain name(int) const");
	TEXT_IS("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
	TEXT_IS("a\x1b]0;t\x07\r\n\tb\x7f", "a\\x1b]0;t\\x07\\r\\n\\tb\\x7f");
	TEXT_IS("back\\slash", "back\\slash"); /* left alone */
	TEXT_IS("csi\xc2\x9b" "31m", "csi\\u009b31m");                 /* C1 */
	TEXT_IS("rlo\xe2\x80\xae" "x", "rlo\\u202ex");                  /* bidi override */
	TEXT_IS("ls\xe2\x80\xa8" "x", "ls\\u2028x");                    /* line separator */
	TEXT_IS("nc\xef\xbf\xbe\xef\xbf\xbf", "nc\\ufffe\\uffff");      /* noncharacters */
	TEXT_IS("sur\xed\xa0\x80", "sur\\xed\\xa0\\x80");               /* surrogate */
	TEXT_IS("big\xf4\x90\x80\x80", "big\\xf4\\x90\\x80\\x80");      /* above U+10FFFF */
	TEXT_IS("ovl\xc0\xaf\xe0\x80\xaf", "ovl\\xc0\\xaf\\xe0\\x80\\xaf"); /* overlong */
	TEXT_IS("cut\xe2\x82", "cut\\xe2\\x82");                        /* cut short */
	TEXT_IS("\xff\x80", "\\xff\\x80");

	/* a buffer: the string itself when it fits and needs nothing */
	char buf[16];
	const char *s = "fits";
	CHECK(ht_text_safe(buf, sizeof(buf), s) == s);
	CHECK(!strcmp(ht_text_safe(buf, sizeof(buf), "a\x1b"), "a\\x1b"));
	/* too long: cut at a character, "..." after, within the buffer */
	CHECK(!strcmp(ht_text_safe(buf, sizeof(buf), "0123456789abcdefgh"), "0123456789ab..."));
	CHECK(!strcmp(ht_text_safe(buf, sizeof(buf), "0123456789\xc3\xa9xyzw"),
		      "0123456789\xc3\xa9..."));
	CHECK(!strcmp(ht_text_safe(buf, sizeof(buf), "01234567890\x1b" "abcdef"), "01234567890..."));
	CHECK(ht_text_safe(buf, sizeof(buf), NULL) == NULL);
	char pad[64];
	FILE *f = fmemopen(pad, sizeof(pad), "w");
	ht_text_pad(f, "x\ty", 8);
	fputc('|', f);
	fputc(0, f);
	fclose(f);
	CHECK(!strcmp(pad, "x\\ty    |"));
}

static void test_json(void)
{
	CHECK(!strcmp(put(ht_json_str, "a\"b\\c\x1b\r\n\t"), "\"a\\\"b\\\\c\\u001b\\r\\n\\t\""));
	CHECK(!strcmp(put(ht_json_str, "caf\xc3\xa9 \xf0\x9f\x98\x80"),
		      "\"caf\xc3\xa9 \xf0\x9f\x98\x80\""));
	CHECK(!strcmp(put(ht_json_str, "s\xed\xa0\x80"), "\"s\\ufffd\\ufffd\\ufffd\""));
	CHECK(!strcmp(put(ht_json_str, "n\xef\xbf\xbe\xef\xbf\xbf"), "\"n\\ufffd\\ufffd\""));
	CHECK(!strcmp(put(ht_json_str, "b\xf4\x90\x80\x80"), "\"b\\ufffd\\ufffd\\ufffd\\ufffd\""));
	CHECK(!strcmp(put(ht_json_str, "o\xc0\xaf"), "\"o\\ufffd\\ufffd\""));
	CHECK(!strcmp(put(ht_json_str, "l\xe2\x80\xa8"), "\"l\\u2028\""));
	CHECK(!strcmp(put(ht_json_str, NULL), "null"));
}

static void test_xml(void)
{
#define FFFD "\xef\xbf\xbd"
	CHECK(!strcmp(put(ht_xml_put, "<a href=\"x\">&'</a>"),
		      "&lt;a href=&quot;x&quot;&gt;&amp;'&lt;/a&gt;"));
	CHECK(!strcmp(put(ht_xml_put, "e\x1b[1m\t\n"), "e" FFFD "[1m" FFFD FFFD));
	CHECK(!strcmp(put(ht_xml_put, "s\xed\xa0\x80"), "s" FFFD FFFD FFFD));
	CHECK(!strcmp(put(ht_xml_put, "n\xef\xbf\xbe"), "n" FFFD));
	CHECK(!strcmp(put(ht_xml_put, "b\xf4\x90\x80\x80"), "b" FFFD FFFD FFFD FFFD));
	CHECK(!strcmp(put(ht_xml_put, "caf\xc3\xa9 \xc2\x85"), "caf\xc3\xa9 \xc2\x85"));
#undef FFFD
}

int main(void)
{
	test_text();
	test_json();
	test_xml();
	return TEST_DONE();
}
