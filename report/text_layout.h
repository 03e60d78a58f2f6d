/* text_layout.h - the layout the text views share (report/text_layout.c):
 * the style the command sets, the colours, and the section rules. */
#ifndef HEAPTRAIL_TEXT_LAYOUT_H
#define HEAPTRAIL_TEXT_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* How the text views lay out, set once by the command (--width, --color):
 * width 0 is no limit (a file: lines as long as their content); color
 * adds ANSI SGR colours to headings, figures and function names. */
typedef struct ht_text_style {
	size_t width;
	bool color;
} ht_text_style_t;
extern ht_text_style_t ht_text_style;

/* The colours of the text views: "" when ht_text_style.color is off. */
#define HT_SGR(code) (ht_text_style.color ? "\033[" code "m" : "")
#define HT_BOLD HT_SGR("1")
#define HT_FN HT_SGR("1")       /* a function name of the user's frames */
#define HT_DIM HT_SGR("2")      /* locations, markers */
#define HT_RED HT_SGR("31")     /* lost memory, a worse figure */
#define HT_GREEN HT_SGR("32")   /* a better figure */
#define HT_YELLOW HT_SGR("33")  /* warnings, hints */
#define HT_RESET HT_SGR("0")

/* A section title of the text reports: "\nTITLE ---...---" to 100 columns. */
void ht_report_rule(FILE *out, const char *title);
/* The rule of a list of sites: "TITLE (top SHOWN of N sites)", or "(N sites)". */
void ht_report_list_rule(FILE *out, const char *title, size_t shown, size_t n);

#endif /* HEAPTRAIL_TEXT_LAYOUT_H */
