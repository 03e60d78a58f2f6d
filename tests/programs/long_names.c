/* long_names.c - a flame graph whose labels must be shortened to fit: the
 * long-named function allocates 18,347 of the 100,000 bytes, so its box is
 * about 216.5 px of the graph's 1,180 px, where a label cut for 7 px per
 * character (30 characters) runs past the box in a 7.2 px font.
 *
 *   2 allocs, 2 frees, 100,000 bytes, peak 100,000; nothing leaked.
 *   Exit status 0.
 */
#include <stdlib.h>

static void *volatile keep[2];

void allocate_from_a_function_whose_name_is_long_enough_to_be_cut(void);
void allocate_the_rest(void);

void allocate_from_a_function_whose_name_is_long_enough_to_be_cut(void)
{
	keep[0] = malloc(18347);
}

void allocate_the_rest(void)
{
	keep[1] = malloc(81653);
}

int main(void)
{
	allocate_from_a_function_whose_name_is_long_enough_to_be_cut();
	allocate_the_rest();
	free(keep[0]);
	free(keep[1]);
	return 0;
}
