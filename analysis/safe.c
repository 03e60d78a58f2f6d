/* safe.c - strings from a trace made safe for text, JSON and XML (safe.h). */
#include <string.h>

#include "analysis/safe.h"

size_t ht_utf8_decode(const unsigned char *p, size_t n, uint32_t *cp)
{
	unsigned c = p[0];
	size_t len;
	uint32_t v, min;
	if (c < 0x80) {
		*cp = c;
		return 1;
	} else if (c >= 0xc2 && c <= 0xdf) {
		len = 2, v = c & 0x1f, min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3, v = c & 0x0f, min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4, v = c & 0x07, min = 0x10000;
	} else {
		return 0; /* a continuation byte, 0xc0/0xc1 (always overlong), 0xf5 and up */
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (p[i] & 0x3f);
	}
	if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return len;
}

/* Noncharacters XML 1.0 forbids (and no text should carry). */
static bool nonchar(uint32_t cp)
{
	return cp == 0xfffe || cp == 0xffff;
}

/* ---- text ------------------------------------------------------------------- */

/* Whether a terminal or editor would act on the code point rather than show
 * it: C0, DEL, C1 (U+009B is a CSI for some terminals), the line and
 * paragraph separators, bidirectional marks, embeddings and isolates
 * (which reorder what is shown), and the noncharacters. */
static bool text_escaped(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0x061c || cp == 0x200e ||
	       cp == 0x200f || (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) ||
	       nonchar(cp);
}

/* One character of s (n >= 1 bytes left): its output in *out, *olen bytes
 * (pointing into s when unchanged, else into esc); returns the bytes read. */
static size_t text_unit(const unsigned char *p, size_t n, char esc[8], const char **out,
			size_t *olen)
{
	static const char hex[] = "0123456789abcdef";
	uint32_t cp;
	size_t l = ht_utf8_decode(p, n, &cp);
	if (l && !text_escaped(cp)) {
		*out = (const char *)p;
		*olen = l;
		return l;
	}
	*out = esc;
	esc[0] = '\\';
	if (l == 0 || cp < 0x80) {
		unsigned b = p[0];
		if (b == '\n' || b == '\r' || b == '\t') {
			esc[1] = b == '\n' ? 'n' : b == '\r' ? 'r' : 't';
			*olen = 2;
		} else {
			esc[1] = 'x';
			esc[2] = hex[b >> 4];
			esc[3] = hex[b & 15];
			*olen = 4;
		}
		return 1; /* an ill-formed sequence: one byte at a time */
	}
	esc[1] = 'u';
	for (int i = 0; i < 4; i++)
		esc[2 + i] = hex[cp >> (12 - 4 * i) & 15];
	*olen = 6;
	return l;
}

bool ht_text_is_safe(const char *s)
{
	if (!s)
		return true;
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);
	while (n > 0) {
		uint32_t cp;
		size_t l = 1;
		if (*p < 0x20 || *p >= 0x7f) { /* printable ASCII is the usual case */
			l = ht_utf8_decode(p, n, &cp);
			if (!l || text_escaped(cp))
				return false;
		}
		p += l;
		n -= l;
	}
	return true;
}

void ht_text_putn(FILE *out, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	while (n > 0) {
		size_t run = 0; /* printable ASCII goes out in runs */
		while (run < n && p[run] >= 0x20 && p[run] < 0x7f)
			run++;
		if (run) {
			fwrite(p, 1, run, out);
			p += run;
			n -= run;
			continue;
		}
		char esc[8];
		const char *o;
		size_t ol, l = text_unit(p, n, esc, &o, &ol);
		fwrite(o, 1, ol, out);
		p += l;
		n -= l;
	}
}

void ht_text_put(FILE *out, const char *s)
{
	if (s)
		ht_text_putn(out, s, strlen(s));
}

size_t ht_text_len(const char *s)
{
	if (!s)
		return 0;
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s), total = 0;
	while (n > 0) {
		char esc[8];
		const char *o;
		size_t ol, l = text_unit(p, n, esc, &o, &ol);
		total += ol;
		p += l;
		n -= l;
	}
	return total;
}

void ht_text_pad(FILE *out, const char *s, int width)
{
	ht_text_put(out, s);
	for (size_t l = ht_text_len(s); (long)l < width; l++)
		fputc(' ', out);
}

const char *ht_text_safe(char *buf, size_t len, const char *s)
{
	if (!s)
		return s;
	size_t need = ht_text_len(s);
	if (need < len && ht_text_is_safe(s))
		return s;
	size_t room = need < len ? len - 1 : len - 4; /* "..." when cut */
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s), used = 0;
	while (n > 0) {
		char esc[8];
		const char *o;
		size_t ol, l = text_unit(p, n, esc, &o, &ol);
		if (used + ol > room)
			break;
		memcpy(buf + used, o, ol);
		used += ol;
		p += l;
		n -= l;
	}
	if (n > 0) {
		memcpy(buf + used, "...", 3);
		used += 3;
	}
	buf[used] = '\0';
	return buf;
}

/* ---- JSON ------------------------------------------------------------------- */

void ht_json_str(FILE *out, const char *s)
{
	if (!s) {
		fputs("null", out);
		return;
	}
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);
	fputc('"', out);
	while (n > 0) {
		unsigned c = *p;
		size_t l = 1;
		uint32_t cp;
		if (c == '"' || c == '\\') {
			fputc('\\', out);
			fputc((int)c, out);
		} else if (c == '\n') {
			fputs("\\n", out);
		} else if (c == '\t') {
			fputs("\\t", out);
		} else if (c == '\r') {
			fputs("\\r", out);
		} else if (c < 0x20) {
			fprintf(out, "\\u%04x", c);
		} else if (c < 0x80) {
			fputc((int)c, out);
		} else if ((l = ht_utf8_decode(p, n, &cp)) == 0 || nonchar(cp)) {
			fputs("\\ufffd", out);
			l = l ? l : 1;
		} else if (cp == 0x2028 || cp == 0x2029) {
			/* valid JSON, but line breaks to JavaScript before ES2019 */
			fprintf(out, "\\u%04x", (unsigned)cp);
		} else {
			fwrite(p, 1, l, out);
		}
		p += l;
		n -= l;
	}
	fputc('"', out);
}

/* ---- XML -------------------------------------------------------------------- */

void ht_xml_put(FILE *out, const char *s)
{
	if (!s)
		return;
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);
	while (n > 0) {
		unsigned c = *p;
		size_t l = 1;
		uint32_t cp;
		if (c == '&')
			fputs("&amp;", out);
		else if (c == '<')
			fputs("&lt;", out);
		else if (c == '>')
			fputs("&gt;", out);
		else if (c == '"')
			fputs("&quot;", out);
		else if (c < 0x20 || (l = ht_utf8_decode(p, n, &cp)) == 0 || nonchar(cp)) {
			fputs("\xef\xbf\xbd", out); /* U+FFFD */
			l = l ? l : 1;
		} else
			fwrite(p, 1, l, out);
		p += l;
		n -= l;
	}
}
