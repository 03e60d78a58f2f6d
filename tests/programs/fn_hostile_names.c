/* fn_hostile_names.c - names a program or its debug info can give, made to
 * attack a terminal or break an output format (tests/e2e/test_hostile_names.py).
 *
 * Every name holds ESC sequences (OSC title setting, CSI colours and screen
 * clearing), BEL, CR and, where the source allows, a newline followed by a
 * line of its own ("FORGED ..."), or UTF-8 that is not valid (a surrogate,
 * a noncharacter, a code point above U+10FFFF, stray and overlong bytes):
 *   function names  two functions written in assembly (no debug info: their
 *                   names come from the symbol table), whose callees leak
 *                   1001 B and 1002 B (definitely lost)
 *   a source path   path_fn, compiled under a #line naming a file with ESC,
 *                   BEL and a newline (DWARF's line table holds it); leaks
 *                   1003 B
 *   a tag           on a block of 1004 B, and an invalid-UTF-8 tag on one of
 *                   1005 B, both kept (still reachable)
 *   a phase, a snapshot, a pool, a handle kind (one handle held at exit)
 *   a thread name   (pthread_setname_np: 15 bytes at most); the thread
 *                   leaks 1006 B
 * Built with -finstrument-functions (fn_ prefix) for `report --functions`.
 */
#include <pthread.h>
#include <stdlib.h>

#include "heaptrail.h"

#define EVIL_FN "evil\x1b]0;pwn\x07\rfake\x1b[31mred\x1b[2J"
#define BAD_FN "bad\xed\xa0\x80sur\xef\xbf\xbfnc\xf4\x90\x80\x80" "big\xff\xc0\xaf"

void *keep[4];

__attribute__((noinline, used)) void *helper_a(void)
{
	return malloc(1001);
}

__attribute__((noinline, used)) void *helper_b(void)
{
	return malloc(1002);
}

#if defined(__x86_64__)
/* A function with a frame pointer and CFI that calls callee: the names are
 * quoted for the assembler, which takes any byte but a newline there. */
#define ASM_FN(name, callee)                                                              \
	__asm__(".text\n.hidden \"" name "\"\n.type \"" name "\", @function\n\"" name "\":\n" \
		".cfi_startproc\npushq %rbp\n.cfi_def_cfa_offset 16\n.cfi_offset 6, -16\n"  \
		"movq %rsp, %rbp\n.cfi_def_cfa_register 6\ncall " callee "\n"              \
		"popq %rbp\n.cfi_def_cfa 7, 8\nret\n.cfi_endproc\n"                          \
		".size \"" name "\", .-\"" name "\"\n")
ASM_FN(EVIL_FN, "helper_a");
ASM_FN(BAD_FN, "helper_b");
__attribute__((visibility("hidden"))) void *evil_fn(void) __asm__("\"" EVIL_FN "\"");
__attribute__((visibility("hidden"))) void *bad_fn(void) __asm__("\"" BAD_FN "\"");
#else
static void *evil_fn(void)
{
	return helper_a();
}
static void *bad_fn(void)
{
	return helper_b();
}
#endif

void *path_fn(void);

static void *thread_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "t\x1b]0;x\x07\r\nFORG");
	void *volatile p = malloc(1006);
	p = NULL;
	return p;
}

int main(void)
{
	void *volatile p = evil_fn();
	p = bad_fn();
	p = path_fn();
	p = NULL;

	keep[0] = malloc(1004);
	heaptrail_tag(keep[0], "tag\x1b]0;pwn\x07\r\nFORGED TAG");
	keep[1] = malloc(1005);
	heaptrail_tag(keep[1], "utf\xed\xa0\x80\xef\xbf\xbe\xf4\x90\x80\x80\xc0\xaf");

	heaptrail_phase_begin("ph\x1b[31m\r\nFORGED PHASE");
	free(malloc(64));
	heaptrail_phase_end("ph\x1b[31m\r\nFORGED PHASE");
	heaptrail_snapshot("snap\x1b[2J\nFORGED SNAP");

	static char arena[256];
	heaptrail_pool_create(arena, "pool\x1b]0;x\x07\nFORGED POOL");
	heaptrail_pool_alloc(arena, arena, 32);
	heaptrail_handle_acquire("kind\x1b[5m\r\nFORGED KIND", 7);

	pthread_t t;
	if (pthread_create(&t, NULL, thread_main, NULL) == 0)
		pthread_join(t, NULL);
	return 0;
}

/* what follows is in a file of that name for the debug info */
#line 1 "evil\x1b]0;pwn\x07\nFORGED PATH.c"
__attribute__((noinline)) void *path_fn(void)
{
	return malloc(1003);
}
