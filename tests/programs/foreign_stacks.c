/* foreign_stacks.c - allocations made on stacks that are not the thread's
 * own: coroutines (makecontext) on a stack from malloc and on one from
 * mmap, and a signal handler on an alternate stack (sigaltstack).
 *
 *   coro_body  level1 > level2 > level3: malloc(100) + free, 10 times on
 *              each of the two coroutine stacks        20 allocs  20 frees
 *   on_usr1    SIGUSR1 raised by main (not inside malloc), on the
 *              alternate stack: alt1 > alt2: malloc(200) + free, 5 times
 *                                                      5 allocs   5 frees
 * Expected report: the stacks above, whole, with any unwinder (the
 * frame-pointer walker checks the thread's stack bounds, and these frames
 * lie outside them). Prints nothing.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>

#define NI __attribute__((noinline))
#define STACK (256 * 1024)

static volatile int sink;
static ucontext_t main_ctx, coro_ctx;

NI static void *level3(size_t n)
{
	void *p = malloc(n);
	sink++;
	return p;
}

NI static void *level2(size_t n)
{
	void *p = level3(n);
	sink++;
	return p;
}

NI static void *level1(size_t n)
{
	void *p = level2(n);
	sink++;
	return p;
}

NI static void coro_body(void)
{
	for (int i = 0; i < 10; i++) {
		void *p = level1(100);
		free(p);
	}
}

NI static void *alt2(size_t n)
{
	void *p = malloc(n);
	sink++;
	return p;
}

NI static void *alt1(size_t n)
{
	void *p = alt2(n);
	sink++;
	return p;
}

NI static void on_usr1(int sig)
{
	(void)sig;
	for (int i = 0; i < 5; i++)
		free(alt1(200));
}

NI static void run_on(void *stack)
{
	getcontext(&coro_ctx);
	coro_ctx.uc_stack.ss_sp = stack;
	coro_ctx.uc_stack.ss_size = STACK;
	coro_ctx.uc_link = &main_ctx;
	makecontext(&coro_ctx, coro_body, 0);
	swapcontext(&main_ctx, &coro_ctx);
}

int main(void)
{
	void *heap_stack = malloc(STACK);
	void *mapped_stack = mmap(NULL, STACK, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (!heap_stack || mapped_stack == MAP_FAILED)
		return 1;
	run_on(heap_stack);
	run_on(mapped_stack);
	free(heap_stack);
	munmap(mapped_stack, STACK);

	static char alt[STACK];
	stack_t ss = {.ss_sp = alt, .ss_size = sizeof alt};
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_ONSTACK;
	if (sigaltstack(&ss, NULL) != 0 || sigaction(SIGUSR1, &sa, NULL) != 0)
		return 2;
	raise(SIGUSR1);
	return 0;
}
