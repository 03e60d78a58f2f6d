/* html_report.c - figures known by construction for the HTML report's test
 * (tests/e2e/test_html.py), in two phases 150 ms apart:
 *   phase 1  temp_loop: 100 blocks of 64 B, each freed at once (100
 *            temporary allocations)
 *   phase 2  keep_some: 10 blocks of 1000 B, live together (the peak),
 *            freed at the end; two functions whose names are markup (an
 *            <img onerror=...> with an ESC sequence, and a </script> that
 *            opens another script) call leak_a and leak_b, which leak
 *            1001 B and 1002 B (definitely lost); 50 ms later the 10
 *            blocks are freed and the program ends, so phase 2's blocks
 *            live 50 ms at least
 * The markup names are written in assembly (the symbol table holds them);
 * elsewhere the functions have plain names and the leaks are the same.
 */
#include <stdlib.h>
#include <time.h>

#define IMG_FN "<img src=x onerror=window.__pwned=1>\x1b[31m"
#define SCRIPT_FN "</script><script>window.__pwned=2</script>"

void *keep[10];

__attribute__((noinline, used)) void *leak_a(void)
{
	return malloc(1001);
}

__attribute__((noinline, used)) void *leak_b(void)
{
	return malloc(1002);
}

#if defined(__x86_64__)
/* A function with a frame pointer and CFI that calls callee (as in
 * fn_hostile_names.c): the assembler takes any byte but a newline in a
 * quoted name. */
#define ASM_FN(name, callee)                                                              \
	__asm__(".text\n.hidden \"" name "\"\n.type \"" name "\", @function\n\"" name "\":\n" \
		".cfi_startproc\npushq %rbp\n.cfi_def_cfa_offset 16\n.cfi_offset 6, -16\n"  \
		"movq %rsp, %rbp\n.cfi_def_cfa_register 6\ncall " callee "\n"              \
		"popq %rbp\n.cfi_def_cfa 7, 8\nret\n.cfi_endproc\n"                          \
		".size \"" name "\", .-\"" name "\"\n")
ASM_FN(IMG_FN, "leak_a");
ASM_FN(SCRIPT_FN, "leak_b");
__attribute__((visibility("hidden"))) void *img_fn(void) __asm__("\"" IMG_FN "\"");
__attribute__((visibility("hidden"))) void *script_fn(void) __asm__("\"" SCRIPT_FN "\"");
#else
static void *img_fn(void)
{
	return leak_a();
}
static void *script_fn(void)
{
	return leak_b();
}
#endif

__attribute__((noinline)) static void temp_loop(void)
{
	for (int i = 0; i < 100; i++) {
		void *volatile p = malloc(64);
		free(p);
	}
}

__attribute__((noinline)) static void keep_some(void)
{
	for (int i = 0; i < 10; i++)
		keep[i] = malloc(1000);
}

int main(void)
{
	temp_loop();
	struct timespec ts = { 0, 150 * 1000 * 1000 };
	nanosleep(&ts, NULL);
	keep_some();
	void *volatile p = img_fn();
	p = script_fn();
	p = NULL;
	ts.tv_nsec = 50 * 1000 * 1000; /* phase 2's blocks live 50 ms at least */
	nanosleep(&ts, NULL);
	for (int i = 0; i < 10; i++)
		free(keep[i]);
	return 0;
}
