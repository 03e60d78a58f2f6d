/* leak_roots.c - memory the leak scan must or must not take for roots, one
 * scenario per argument, for tests/e2e/test_leak_classes.py, which compares
 * heaptrail's classes with valgrind memcheck's. As in leak_classes.c, the
 * scenarios build their blocks in noinline functions and wipe the stack
 * below main's frame, so that no stale copy of a pointer is left where
 * either tool would find it.
 *
 *   arena     a worker thread (its own glibc arena) copies the addresses of
 *             two blocks into a block of its arena and frees that, then
 *             waits; the blocks are dropped: main's 1234 bytes and the
 *             worker's page-aligned 1011 (memalign, the only live block of
 *             its arena). Freed chunks are no roots: 2 definite
 *   deadstack a thread with a 48 MiB stack runs and ends (glibc caches at
 *             most 40 MiB of stacks: it unmaps this one when it is joined);
 *             a page mapped where the stack was holds the only pointer to
 *             a 100-byte block: 1 reachable
 *   coro      coroutine stacks carved from one mapping: the first holds a
 *             4321-byte block in a local and is suspended; the second, above
 *             it, calls exit: 1 reachable
 *   altstack  exit from a signal handler running on an alternate stack in
 *             .bss, right above a table that holds 8 blocks: 8 reachable
 *   shm       a POSIX shared memory object (shm_open: a file in /dev/shm),
 *             mapped shared, holds the only pointers to 5 blocks of 500
 *             bytes: 5 reachable
 */
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static NOINLINE void wipe_stack(void)
{
	volatile char buf[16384];
	memset((char *)buf, 0, sizeof buf);
	__asm__ volatile("" ::"r"(buf) : "memory");
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int ready;

/* Tells main the worker is done, then waits until the process exits. */
static NOINLINE void done_and_wait(void)
{
	pthread_mutex_lock(&mu);
	ready = 1;
	pthread_cond_broadcast(&cv);
	for (;;)
		pthread_cond_wait(&cv, &mu);
}

static void wait_worker(void)
{
	pthread_mutex_lock(&mu);
	while (!ready)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
}

static void *main_block; /* main's block, until the worker is done */

static NOINLINE void stale_copies(void)
{
	void *aligned = memalign(4096, 1011);
	void **tmp = malloc(64);
	tmp[2] = aligned;
	tmp[3] = main_block;
	free(tmp);
}

static void *arena_worker(void *arg)
{
	(void)arg;
	stale_copies();
	wipe_stack();
	done_and_wait();
	return NULL;
}

static NOINLINE void scenario_arena(void)
{
	main_block = malloc(1234);
	pthread_t th;
	pthread_create(&th, NULL, arena_worker, NULL);
	wait_worker();
	main_block = NULL;
}

static void *stack_worker(void *arg)
{
	int local;
	free(malloc(10)); /* the agent knows the thread */
	*(void **)arg = &local;
	return NULL;
}

static NOINLINE void scenario_deadstack(void)
{
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 48 << 20);
	void *where;
	pthread_t th;
	pthread_create(&th, &attr, stack_worker, &where);
	pthread_join(th, NULL);
	uintptr_t page = ((uintptr_t)where & ~(uintptr_t)4095) - (16 << 20);
	void **m = mmap((void *)page, 4096, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (m == MAP_FAILED)
		exit(3); /* the stack is still there */
	m[100] = malloc(100);
}

#define CORO_STACK (64 * 1024)
static ucontext_t main_ctx, coro_ctx[2];

static void coro_hold(void)
{
	void *volatile mine = malloc(4321);
	swapcontext(&coro_ctx[0], &main_ctx);
	(void)mine;
}

static void coro_exit(void)
{
	exit(0);
}

static NOINLINE void run_coro(void)
{
	char *pool = mmap(NULL, 2 * CORO_STACK, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	void (*body[2])(void) = {coro_hold, coro_exit};
	for (int i = 0; i < 2; i++) {
		getcontext(&coro_ctx[i]);
		coro_ctx[i].uc_stack.ss_sp = pool + i * CORO_STACK;
		coro_ctx[i].uc_stack.ss_size = CORO_STACK;
		coro_ctx[i].uc_link = &main_ctx;
		makecontext(&coro_ctx[i], body[i], 0);
	}
	swapcontext(&main_ctx, &coro_ctx[0]); /* the first keeps its block, yields */
	swapcontext(&main_ctx, &coro_ctx[1]); /* the second exits */
	exit(4);
}

static struct {
	void *table[16384];
	char stack[1 << 16];
} alt; /* .bss: the table's end and the stack share a mapping */

static void exit_handler(int sig)
{
	(void)sig;
	exit(0);
}

static NOINLINE void scenario_altstack(void)
{
	for (int i = 0; i < 8; i++)
		alt.table[16000 + i] = malloc(100 + i);
}

static NOINLINE void exit_on_altstack(void)
{
	stack_t ss = {.ss_sp = alt.stack, .ss_size = sizeof alt.stack};
	sigaltstack(&ss, NULL);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = exit_handler;
	sa.sa_flags = SA_ONSTACK;
	sigaction(SIGUSR1, &sa, NULL);
	raise(SIGUSR1);
	exit(4);
}

static NOINLINE void scenario_shm(void)
{
	char name[32] = "/ht_leak_roots_";
	char *p = name + strlen(name);
	for (unsigned pid = (unsigned)getpid(); pid; pid /= 10) /* digits reversed: unique */
		*p++ = (char)('0' + pid % 10);
	int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0 || ftruncate(fd, 4096) != 0)
		exit(3);
	void **shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	shm_unlink(name);
	close(fd);
	if (shared == MAP_FAILED)
		exit(3);
	for (int i = 0; i < 5; i++)
		shared[i] = malloc(500);
}

int main(int argc, char **argv)
{
	const char *s = argc > 1 ? argv[1] : "";
	if (!strcmp(s, "arena"))
		scenario_arena();
	else if (!strcmp(s, "deadstack"))
		scenario_deadstack();
	else if (!strcmp(s, "shm"))
		scenario_shm();
	else if (!strcmp(s, "altstack"))
		scenario_altstack();
	else if (strcmp(s, "coro"))
		return 2;
	wipe_stack();
	if (!strcmp(s, "coro"))
		run_coro();
	if (!strcmp(s, "altstack"))
		exit_on_altstack();
	return 0;
}
