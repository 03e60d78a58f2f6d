/* text_layout.c - the layout the text views share: the style set by the
 * command (--width, --color) and the section rules every text section
 * starts with.
 */
#include <string.h>

#include "report/text_layout.h"

#define WIDTH 100 /* the rules' length; a narrower --width shortens them */

ht_text_style_t ht_text_style;

void ht_report_list_rule(FILE *out, const char *title, size_t shown, size_t n)
{
	char t[128];
	if (n > shown)
		snprintf(t, sizeof(t), "%s (top %zu of %zu sites)", title, shown, n);
	else
		snprintf(t, sizeof(t), "%s (%zu site%s)", title, n, n == 1 ? "" : "s");
	ht_report_rule(out, t);
}

void ht_report_rule(FILE *out, const char *title)
{
	size_t n = strlen(title), w = ht_text_style.width && ht_text_style.width < WIDTH
						? ht_text_style.width
						: WIDTH;
	fprintf(out, "\n%s%s%s ", HT_BOLD, title, HT_RESET);
	for (size_t i = n + 1; i < w; i++)
		fputc('-', out);
	fputc('\n', out);
}
