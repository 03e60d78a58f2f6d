/* leak_classes.c - blocks in each of memcheck's leak classes, one scenario
 * per argument, for the leak-class tests (tests/e2e/test_leak_classes.py),
 * which compare heaptrail's classes with valgrind memcheck's.
 *
 * Every scenario builds its blocks in a noinline function and then wipes
 * the stack below main's frame, so that no stale copy of a pointer is left
 * where either tool would find it; what stays reachable is reachable
 * through globals, TLS, another thread's live frame or other blocks.
 *
 *   list      a 10-node list whose head pointer is dropped: 1 definite,
 *             9 indirect; plus a 5-node list kept in a global: reachable
 *   tree      a lost binary tree of 15 nodes (1 definite, 14 indirect) and
 *             a 7-node tree held by a global (reachable)
 *   cycle     two lost 3-block cycles (a definite and 2 indirect each) and
 *             a reachable cycle
 *   interior  a block reached only through a pointer into its middle
 *             (possible), the block it points to (possible), and a block
 *             whose start a global holds (reachable); a big heap block and
 *             an mmapped one, each reached only through a pointer tens of
 *             KiB past its start (possible: the pointer lies in another
 *             64 KiB granule than the block's start)
 *   thread    a block referenced only from a waiting thread's stack
 *             (reachable), and one the thread dropped (definite)
 *   tls       blocks held by __thread variables of the main thread and of
 *             a waiting thread (reachable), one dropped (definite)
 *   dlopen    a block held by a global of a dlopen'ed library that stays
 *             loaded (reachable), and one it returned and we dropped
 *             (definite)
 *   mixed     all of the above at once
 *   exit_      like list, leaving through _exit
 *   merged     a page mapped right after a big (mmapped) block, so that the
 *              kernel merges the two into one mapping, holds the only
 *              pointer to a 40-byte block (reachable); the big block is
 *              held by a global (reachable)
 *   sparse     a 4 GiB anonymous mapping, one page of it used, holds the
 *              only pointer to a 100-byte block (reachable); a 50-byte
 *              block is dropped (definite)
 *   ondemand   like list, then heaptrail_leak_check() and SIGUSR2: two
 *              checks while running, each with list's classes
 */
#include <dlfcn.h>
#include <signal.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "heaptrail.h"

#define NOINLINE __attribute__((noinline))

struct node {
	struct node *next, *left, *right;
	char pad[40];
};

static struct node *kept_list, *kept_tree, *kept_cycle;
static char *kept_interior_target; /* points into the middle of a block */
static char *kept_start;
static char *kept_far_heap, *kept_far_mmap; /* far into big blocks */
static __thread void *tls_ptr;

/* Overwrites the stack below the caller's frame, where scenarios left
 * their locals, so that no stale pointer survives there. */
static NOINLINE void wipe_stack(void)
{
	volatile char buf[16384];
	memset((char *)buf, 0, sizeof buf);
	__asm__ volatile("" ::"r"(buf) : "memory");
}

static NOINLINE struct node *make_list(int n)
{
	struct node *head = NULL;
	for (int i = 0; i < n; i++) {
		struct node *x = calloc(1, sizeof *x);
		x->next = head;
		head = x;
	}
	return head;
}

static NOINLINE struct node *make_tree(int depth)
{
	if (!depth)
		return NULL;
	struct node *x = calloc(1, sizeof *x);
	x->left = make_tree(depth - 1);
	x->right = make_tree(depth - 1);
	return x;
}

static NOINLINE struct node *make_cycle(void)
{
	struct node *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b), *c = calloc(1, sizeof *c);
	a->next = b;
	b->next = c;
	c->next = a;
	return a;
}

static NOINLINE void scenario_list(void)
{
	make_list(10); /* dropped */
	kept_list = make_list(5);
}

static NOINLINE void scenario_tree(void)
{
	make_tree(4); /* 15 nodes, dropped */
	kept_tree = make_tree(3);
}

static NOINLINE void scenario_cycle(void)
{
	make_cycle();
	make_cycle();
	kept_cycle = make_cycle();
}

static NOINLINE void scenario_interior(void)
{
	char *inner = malloc(200);
	char *outer = malloc(300);
	memset(inner, 0, 200);
	memset(outer, 0, 300);
	*(char **)(outer + 48) = inner; /* outer -> inner (start) */
	kept_interior_target = outer + 100; /* only an interior pointer to outer */
	kept_start = malloc(64);
	memset(kept_start, 0, 64);
	kept_far_heap = (char *)malloc(100000) + 90000;
	kept_far_mmap = (char *)malloc(1 << 20) + 600000;
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int ready;

static NOINLINE void hold_and_wait(void *held)
{
	volatile void *on_stack = held; /* the only reference */
	pthread_mutex_lock(&mu);
	ready = 1;
	pthread_cond_broadcast(&cv);
	for (;;)
		pthread_cond_wait(&cv, &mu); /* until the process exits */
	(void)on_stack;
}

static void *thread_main(void *arg)
{
	(void)arg;
	malloc(48); /* dropped: definite */
	tls_ptr = malloc(80); /* this thread's TLS: reachable */
	void *held = malloc(120);
	memset(held, 1, 120);
	hold_and_wait(held);
	return NULL;
}

static NOINLINE void start_holder(void)
{
	pthread_t th;
	pthread_create(&th, NULL, thread_main, NULL);
	pthread_mutex_lock(&mu);
	while (!ready)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
}

static NOINLINE void scenario_tls(void)
{
	tls_ptr = malloc(96);
	malloc(32); /* dropped */
}

static NOINLINE void scenario_dlopen(void)
{
	char path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", path, sizeof path - 32);
	if (n <= 0)
		exit(2);
	path[n] = 0;
	strcpy(strrchr(path, '/') + 1, "libdlplugin.so");
	void *h = dlopen(path, RTLD_NOW);
	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		exit(2);
	}
	void (*keep)(size_t) = (void (*)(size_t))dlsym(h, "plugin_keep");
	void *(*leak)(size_t) = (void *(*)(size_t))dlsym(h, "plugin_leak");
	keep(777);
	leak(10); /* 1010 bytes, dropped */
}

static void *kept_big;

static NOINLINE void scenario_merged(void)
{
	size_t len = 1 << 20;
	char *big = malloc(len);
	kept_big = big;
	/* glibc maps a block this big on its own, its 16-byte header at the
	 * start of a page; mappings grow downwards, so the page before it is
	 * free: a neighbour with the same protection, one mapping */
	uintptr_t start = ((uintptr_t)big - 16) & ~(uintptr_t)4095;
	char *page = mmap((void *)(start - 4096), 4096, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (page == MAP_FAILED) /* taken (another allocator): anywhere */
		page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	*(void **)(page + 64) = malloc(40);
}

static NOINLINE void scenario_sparse(void)
{
	char *big = mmap(NULL, 4ul << 30, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (big == MAP_FAILED)
		exit(2);
	*(void **)(big + (3ul << 30)) = malloc(100);
	char *lost = malloc(50);
	memset(lost, 0, 50);
}

int main(int argc, char **argv)
{
	const char *s = argc > 1 ? argv[1] : "mixed";
	int all = !strcmp(s, "mixed");
	if (all || !strcmp(s, "list") || !strcmp(s, "exit_") || !strcmp(s, "ondemand"))
		scenario_list();
	if (all || !strcmp(s, "tree"))
		scenario_tree();
	if (all || !strcmp(s, "cycle"))
		scenario_cycle();
	if (all || !strcmp(s, "interior"))
		scenario_interior();
	if (all || !strcmp(s, "tls"))
		scenario_tls();
	if (all || !strcmp(s, "dlopen"))
		scenario_dlopen();
	if (!strcmp(s, "sparse"))
		scenario_sparse();
	if (!strcmp(s, "merged"))
		scenario_merged();
	if (all || !strcmp(s, "thread") || !strcmp(s, "tls"))
		start_holder();
	wipe_stack();
	if (!strcmp(s, "ondemand")) {
		heaptrail_leak_check();
		wipe_stack();
		kill(getpid(), SIGUSR2);
		wipe_stack();
	}
	if (!strcmp(s, "exit_"))
		_exit(0);
	return 0;
}
