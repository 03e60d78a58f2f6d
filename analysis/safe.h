/* safe.h - strings from a trace or a program, made safe for each kind of
 * output.
 *
 * Function names and source paths come from debug info, thread names from
 * pthread_setname_np, tags, phases, snapshots and handle kinds from the
 * program through heaptrail.h, arguments from its command line: any bytes.
 * Every writer prints such a string through one of these, once, where it is
 * printed:
 *   text  (terminals, and line-based formats read by other tools' terminal
 *         output): control characters escaped (\n, \r, \t, \x1b, \u009b),
 *         the bidirectional overrides and line separators that would move
 *         or break what a terminal or editor shows (\u202e), noncharacters
 *         (\ufffe), and every byte of an ill-formed UTF-8 sequence (\xed).
 *         The backslash itself is left alone: output stays as readable, and
 *         nothing but the escaped characters can act on a terminal.
 *   JSON  strictly valid UTF-8: controls escaped, ill-formed sequences,
 *         surrogates, code points above U+10FFFF and U+FFFE/U+FFFF become
 *         U+FFFD.
 *   XML   the same replacements, C0 controls also replaced by U+FFFD (XML
 *         1.0 forbids them, and a parser normalizes line breaks in
 *         attributes), markup escaped.
 * Strings that need none of this are written unchanged.
 */
#ifndef HEAPTRAIL_SAFE_H
#define HEAPTRAIL_SAFE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Length of the well-formed UTF-8 sequence at p (n >= 1 bytes left) and its
 * code point in *cp, or 0 when ill-formed: a stray continuation byte, an
 * overlong form, a surrogate, above U+10FFFF, or cut short. */
size_t ht_utf8_decode(const unsigned char *p, size_t n, uint32_t *cp);

/* ---- text ---- */

/* Whether s prints as is (NULL: yes). */
bool ht_text_is_safe(const char *s);
/* s escaped, at most len - 1 bytes (len >= 8): s itself when it needs no
 * escape and fits, else buf, cut at a character with "..." when too long. */
const char *ht_text_safe(char *buf, size_t len, const char *s);
/* s escaped (up to HT_TEXT_LEN - 1 bytes) in a buffer that lives as long
 * as the enclosing block: for printf's arguments. */
#define HT_TEXT_LEN 1024
#define HT_TEXT(s) ht_text_safe((char[HT_TEXT_LEN]){ 0 }, HT_TEXT_LEN, (s))
/* Writes s escaped, whole; nothing for NULL. */
void ht_text_put(FILE *out, const char *s);
/* The same for n bytes of s (no NUL needed). */
void ht_text_putn(FILE *out, const char *s, size_t n);
/* Bytes s takes escaped (without a NUL). */
size_t ht_text_len(const char *s);
/* Writes s escaped, then spaces up to width bytes: printf's "%-*s". */
void ht_text_pad(FILE *out, const char *s, int width);

/* ---- JSON ---- */

/* A JSON string, quotes included; null for NULL. */
void ht_json_str(FILE *out, const char *s);

/* ---- XML ---- */

/* Text or an attribute value (in double quotes). */
void ht_xml_put(FILE *out, const char *s);

#endif /* HEAPTRAIL_SAFE_H */
