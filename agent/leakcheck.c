/* leakcheck.c - memcheck's leak classes, computed inside the process.
 *
 * At exit (and on demand) every block the writer knows live (live.c) is
 * classified the way valgrind memcheck does it:
 *  1. Roots are the program's readable and writable memory that is not heap:
 *     the writable segments of loaded objects (.data, .bss) and their relro,
 *     thread stacks (the exiting thread's from where it called exit up),
 *     static TLS (it sits in those mappings), anonymous mappings. Excluded:
 *     the heap (glibc's [heap] and arena heaps, where free chunks keep stale
 *     pointers, and the ranges of big and custom blocks: live blocks are
 *     scanned when reached), the agent's own memory, its libraries' data and
 *     its writer thread's stack, stacks of exited threads (while still mapped).
 *  2. An aligned word equal to a block's start makes it reachable; one
 *     inside it, possibly reachable. Scanning propagates: what a reachable
 *     block points to is reachable (possibly, for interior pointers), what a
 *     possibly reachable block points to is at most possibly reachable.
 *  3. Each block still unreached, in address order, leads a clique: the
 *     unreached blocks it leads to are indirectly lost; the leader, unless
 *     a later leader reaches it, is definitely lost.
 * Memory the scan reads may vanish under it (another thread unmaps it): a
 * fault in the scan skips that range (ht_leak_scan_fault).
 *
 * Runs with ht_writer_lock and ht_live_lock held (the LEAKS record, the
 * table) and the guard set; memory from ht_mmap.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "live.h"

enum { UNREACHED = 0, INDIRECT, POSSIBLE, REACHABLE };

static ht_scan_block_t *blk;
static size_t blk_bytes; /* blk's mapping */
static uint8_t *state;
static uint32_t *stack;
static size_t n_blk, blk_cap, stack_len, stack_cap;
static uintptr_t lo_addr, hi_addr; /* every block lies in [lo_addr, hi_addr) */

/* ---- faults while scanning ----------------------------------------------- */

static sigjmp_buf fault_jmp;
static __thread volatile bool scanning; /* this thread is reading a root range */

bool ht_leak_scan_fault(void)
{
	if (!scanning)
		return false;
	scanning = false;
	siglongjmp(fault_jmp, 1);
}

/* ---- sorting and finding blocks ------------------------------------------ */

/* In-place MSD radix sort by address, a byte a level (American flag
 * sort): no second array (the check at exit sorts in the live table's own
 * memory, to add nothing per block). The counts are static, one set a
 * level: the check runs under the writer's lock, on any thread's stack. */
static size_t radix_count[8][256], radix_next[8][256];

static void insertion_sort(ht_scan_block_t *a, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		ht_scan_block_t v = a[i];
		size_t j = i;
		for (; j > 0 && a[j - 1].addr > v.addr; j--)
			a[j] = a[j - 1];
		a[j] = v;
	}
}

static void radix_sort(ht_scan_block_t *a, size_t n, unsigned level)
{
	if (n <= 32) {
		insertion_sort(a, n);
		return;
	}
	unsigned shift = level * 8;
	size_t *count = radix_count[level], *next = radix_next[level];
	memset(count, 0, sizeof radix_count[0]);
	for (size_t i = 0; i < n; i++)
		count[(a[i].addr >> shift) & 255]++;
	size_t sum = 0;
	for (unsigned d = 0; d < 256; d++) {
		next[d] = sum;
		sum += count[d];
		count[d] = sum; /* now the bucket's end */
	}
	for (unsigned d = 0; d < 256; d++) {
		while (next[d] < count[d]) {
			unsigned e = (a[next[d]].addr >> shift) & 255;
			if (e == d) {
				next[d]++;
				continue;
			}
			ht_scan_block_t t = a[next[d]];
			a[next[d]] = a[next[e]];
			a[next[e]++] = t;
		}
	}
	if (!level)
		return;
	/* next[d] is now the end of bucket d */
	size_t start = 0;
	for (unsigned d = 0; d < 256; d++) {
		size_t end = next[d];
		if (end - start > 1)
			radix_sort(a + start, end - start, level - 1);
		start = end;
	}
}

static void sort_blocks(void)
{
	uintptr_t diff = 0;
	for (size_t i = 1; i < n_blk; i++)
		diff |= blk[i].addr ^ blk[0].addr;
	if (diff)
		radix_sort(blk, n_blk, (unsigned)(63 - __builtin_clzll(diff)) / 8);
}

static inline uint64_t blk_size(size_t i)
{
	return blk[i].info & HT_SCAN_SIZE_MASK;
}

/* Index of the first block whose address is >= a. */
static size_t lower_bound(uintptr_t a)
{
	size_t lo = 0, hi = n_blk;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (blk[mid].addr < a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* ---- the granule filter ----------------------------------------------------
 * Most words the scan reads are not pointers to a block, yet many fall in
 * [lo_addr, hi_addr): that range spans from the heap up to the mmap'd
 * blocks, where a runtime's own pools also live (cc1's GC pages: 25 MB of
 * roots whose words were each a binary search over every live block). A
 * set of the 64 KiB granules that blocks cover answers most of those with
 * one probe of a table that stays in cache. */
#define GRANULE_SHIFT 16
static uint64_t *granules; /* open addressing: granule + 1, 0 empty */
static size_t granules_cap; /* a power of two, or 0: no filter */

static inline size_t granule_slot(uint64_t g)
{
	return (size_t)((g * 0x9e3779b97f4a7c15ull) >> 32) & (granules_cap - 1);
}

static void granule_add(uint64_t g)
{
	size_t i = granule_slot(g);
	while (granules[i] && granules[i] != g + 1)
		i = (i + 1) & (granules_cap - 1);
	granules[i] = g + 1;
}

static inline bool granule_has(uintptr_t w)
{
	uint64_t g = w >> GRANULE_SHIFT;
	for (size_t i = granule_slot(g);; i = (i + 1) & (granules_cap - 1)) {
		if (granules[i] == g + 1)
			return true;
		if (!granules[i])
			return false;
	}
}

/* Calls f on each granule the sorted blocks cover, once; returns the count. */
static size_t granules_each(void (*f)(uint64_t))
{
	size_t n = 0;
	uint64_t next = 0; /* granules below it are done */
	for (size_t i = 0; i < n_blk; i++) {
		uint64_t first = blk[i].addr >> GRANULE_SHIFT;
		uint64_t last = (blk[i].addr + (blk_size(i) ? blk_size(i) - 1 : 0)) >> GRANULE_SHIFT;
		uint64_t g = first > next ? first : next;
		if (g <= last)
			n += last - g + 1;
		for (; f && g <= last; g++)
			f(g);
		if (last + 1 > next)
			next = last + 1;
	}
	return n;
}

/* Without room for it (a block of terabytes, no memory), every word in
 * range is looked up. */
static void granules_build(void)
{
	granules_cap = 0;
	size_t n = granules_each(NULL);
	if (n > (1u << 20))
		return;
	size_t cap = 1024;
	while (cap < 2 * n)
		cap *= 2;
	granules = ht_mmap(cap * sizeof *granules);
	if (!granules)
		return;
	granules_cap = cap;
	granules_each(granule_add);
}

static void granules_free(void)
{
	if (granules_cap)
		ht_munmap(granules, granules_cap * sizeof *granules);
	granules = NULL;
	granules_cap = 0;
}

/* The block w points into, or -1. A zero-size block is pointed to only by
 * its address. A block nested in another (a program's pool carved from a
 * malloc block) wins over the outer one. */
static inline long find_block(uintptr_t w)
{
	if (w < lo_addr || w >= hi_addr)
		return -1;
	if (granules_cap && !granule_has(w))
		return -1;
	size_t i = lower_bound(w + 1); /* first block after w */
	for (int step = 0; step < 2 && i > 0; step++) {
		i--;
		if (w == blk[i].addr || w - blk[i].addr < blk_size(i))
			return (long)i;
	}
	return -1;
}

/* ---- marking ----------------------------------------------------------- */

static void push(size_t i)
{
	if (stack_len == stack_cap) {
		size_t cap = stack_cap ? stack_cap * 2 : 4096;
		uint32_t *s = ht_mmap(cap * sizeof *s);
		if (!s)
			return; /* out of memory: the block stays less reachable */
		if (stack) {
			memcpy(s, stack, stack_len * sizeof *s);
			ht_munmap(stack, stack_cap * sizeof *s);
		}
		stack = s;
		stack_cap = cap;
	}
	stack[stack_len++] = (uint32_t)i;
}

/* Set while scanning libc's writable data: glibc's main arena there holds
 * the addresses of the chunks it manages (top, bins), which lie inside the
 * preceding blocks; memcheck, with its own allocator, never sees them. */
static bool in_libc_data;

/* True if w is the chunk header that follows glibc block i (its address is
 * the block's last usable word): what the arena's top and bins hold. */
static inline bool is_next_chunk(uintptr_t w, size_t i)
{
	if (blk[i].info & HT_SCAN_CUSTOM)
		return false;
	size_t chunk = *(const size_t *)(blk[i].addr - 8) & ~(size_t)7;
	return w == blk[i].addr - 16 + chunk;
}

/* A word seen while scanning from the roots or from a reachable/possible
 * block (prior_definite: from the roots or a reachable block). */
static inline void mark(uintptr_t w, bool prior_definite)
{
	long i = find_block(w);
	if (i < 0 || state[i] == REACHABLE)
		return;
	if (HT_UNLIKELY(in_libc_data) && w != blk[i].addr && is_next_chunk(w, (size_t)i))
		return;
	if (w == blk[i].addr && prior_definite) {
		state[i] = REACHABLE;
		push((size_t)i);
	} else if (state[i] == UNREACHED) {
		state[i] = POSSIBLE;
		push((size_t)i);
	}
}

/* A word seen while scanning the clique led by leader. */
static inline void mark_clique(uintptr_t w, size_t leader)
{
	long i = find_block(w);
	if (i < 0 || (size_t)i == leader || state[i] != UNREACHED)
		return;
	state[i] = INDIRECT;
	push((size_t)i);
}

static void scan_range(uintptr_t lo, uintptr_t hi, int mode, size_t leader)
{
	lo = (lo + 7) & ~(uintptr_t)7;
	if (hi < lo + 8)
		return;
	const uintptr_t *w = (const uintptr_t *)lo, *end = (const uintptr_t *)(hi & ~(uintptr_t)7);
	if (mode == 2) {
		for (; w < end; w++)
			mark_clique(*w, leader);
	} else {
		for (; w < end; w++)
			mark(*w, mode == 1);
	}
}

/* A fault while scanning (the memory vanished: another thread unmapped
 * it, or freed a large block the table still holds) jumps back here. The
 * jump buffer does not save the signal mask (that would be a system call
 * per block): after a fault, the signals the handler blocked are unblocked
 * by hand. */
static void after_fault(void)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGSEGV);
	sigaddset(&s, SIGBUS);
	pthread_sigmask(SIG_UNBLOCK, &s, NULL);
}

/* Scans a root range. */
static void scan_root_piece(uintptr_t lo, uintptr_t hi)
{
	in_libc_data = lo < ht_libc_data_hi && hi > ht_libc_data_lo;
	if (sigsetjmp(fault_jmp, 0) == 0) {
		scanning = true;
		scan_range(lo, hi, 1, 0);
	} else {
		after_fault();
	}
	scanning = false;
	in_libc_data = false;
}

/* Big mappings (a runtime's reserved heap, sparse arrays) are mostly
 * pages never touched: they hold zeros, and reading them would fault
 * each one in. Only the resident pages of those are read (mincore); a
 * page swapped out is skipped with them, which may miss a pointer on a
 * machine that swaps. While none of the process's pages is swapped out
 * (VmSwap 0), a private mapping's page that is not resident was never
 * written: then every private mapping from SCAN_SPARSE_PRIVATE up is
 * read so, thread stacks among them (8 MiB each, a few pages used: 128
 * threads' took the exit's scan 0.55 s, faulting in zero pages). */
#define SCAN_SPARSE_MIN (16u << 20)
#define SCAN_SPARSE_PRIVATE (256u << 10)
#define SCAN_WINDOW (4u << 20)
static uintptr_t sparse_min = SCAN_SPARSE_MIN; /* for the mapping being read */

/* True when /proc/self/status says no page of the process is swapped out. */
static bool nothing_swapped(void)
{
	static char buf[4096];
	if (ht_read_proc("status", buf, sizeof buf) <= 0)
		return false;
	for (const char *p = buf; *p; p++) {
		if ((p == buf || p[-1] == '\n') && !ht_strncmp(p, "VmSwap:", 7)) {
			p += 7;
			while (*p == ' ' || *p == '\t')
				p++;
			return p[0] == '0' && (p[1] == ' ' || p[1] == '\n');
		}
	}
	return false;
}

static void scan_root(uintptr_t lo, uintptr_t hi)
{
	if (hi - lo < sparse_min) {
		scan_root_piece(lo, hi);
		return;
	}
	static unsigned char vec[SCAN_WINDOW / 4096];
	uintptr_t page_lo = lo & ~(uintptr_t)4095;
	for (uintptr_t w = page_lo; w < hi; w += SCAN_WINDOW) {
		uintptr_t we = w + SCAN_WINDOW < hi ? w + SCAN_WINDOW : hi;
		size_t npages = (we - w + 4095) / 4096;
		if (mincore((void *)w, we - w, vec) != 0) {
			scan_root_piece(w < lo ? lo : w, we); /* unknown: read it all */
			continue;
		}
		for (size_t i = 0; i < npages;) {
			if (!(vec[i] & 1)) {
				i++;
				continue;
			}
			size_t j = i;
			while (j < npages && (vec[j] & 1))
				j++;
			uintptr_t a = w + i * 4096, b = w + j * 4096;
			scan_root_piece(a < lo ? lo : a, b > we ? we : b);
			i = j;
		}
	}
}

static void drain(int mode, size_t leader)
{
	while (stack_len) {
		size_t i = stack[--stack_len];
		int m = mode == 2 ? 2 : (state[i] == REACHABLE ? 1 : 0);
		if (sigsetjmp(fault_jmp, 0) == 0) {
			scanning = true;
			scan_range(blk[i].addr, blk[i].addr + blk_size(i), m, leader);
		} else {
			after_fault();
		}
		scanning = false;
	}
}

/* ---- the roots ----------------------------------------------------------- */

/* Ranges never scanned, sorted by start. */
static uintptr_t (*excl)[2];
static unsigned n_excl;
/* the agent's mappings (8192), its libraries, dead stacks (256), arena heaps */
#define EXCL_MAX (8192 + 2048)
#define HT_MAX_RELRO 4096 /* as many as modules.c keeps */

static void excl_add(uintptr_t lo, uintptr_t hi)
{
	if (lo < hi && n_excl < EXCL_MAX) {
		excl[n_excl][0] = lo;
		excl[n_excl][1] = hi;
		n_excl++;
	}
}

static void excl_sort(void)
{
	for (unsigned i = 1; i < n_excl; i++) { /* insertion sort: small, mostly sorted */
		uintptr_t a = excl[i][0], b = excl[i][1];
		unsigned j = i;
		while (j > 0 && excl[j - 1][0] > a) {
			excl[j][0] = excl[j - 1][0];
			excl[j][1] = excl[j - 1][1];
			j--;
		}
		excl[j][0] = a;
		excl[j][1] = b;
	}
}

/* Scans [lo, hi) minus the excluded ranges. */
static void scan_root_minus_excl(uintptr_t lo, uintptr_t hi)
{
	uintptr_t cur = lo;
	for (unsigned i = 0; i < n_excl && cur < hi; i++) {
		if (excl[i][1] <= cur)
			continue;
		if (excl[i][0] >= hi)
			break;
		if (excl[i][0] > cur)
			scan_root(cur, excl[i][0]);
		if (excl[i][1] > cur)
			cur = excl[i][1];
	}
	if (cur < hi)
		scan_root(cur, hi);
}

/* glibc's heaps: the main arena is the [heap] (brk) mapping; every other
 * arena's heap is a HEAP_MAX-aligned mapping (64 MiB on 64-bit), and a
 * block of HT_MMAP_CHUNK_BIT is a mapping of its own. */
#define HEAP_MAX ((uintptr_t)64 << 20)
#define MMAPPED_CHUNK 0x2 /* glibc's IS_MMAPPED, in the size word before a block */

/* Scans the mapping [lo, hi) as roots minus the heap in it: the arena
 * heaps its small blocks live in (free chunks there hold stale pointers),
 * and blocks that are mappings of their own or the program's (they are
 * scanned only when reached). The kernel merges adjacent anonymous
 * mappings into one, so an arena or a big block can share a line of
 * /proc/self/maps with the program's own memory (Python's object arenas,
 * for one): only the heap part is left out. */
static void scan_mapping(uintptr_t lo, uintptr_t hi)
{
	uintptr_t cur = lo;
	for (size_t i = lower_bound(lo); i < n_blk && blk[i].addr < hi;) {
		uintptr_t a = blk[i].addr, from, to;
		bool custom = blk[i].info & HT_SCAN_CUSTOM;
		/* glibc's size word sits just before the block; a block at the
		 * start of a page is not glibc's (another allocator's: the page
		 * before may be unmapped) and is left out on its own */
		if (!custom && (a & 4095) >= 16 && !(*(const size_t *)(a - 8) & MMAPPED_CHUNK)) {
			from = a & ~(HEAP_MAX - 1); /* the arena heap holding it */
			to = from + HEAP_MAX;
		} else {
			from = custom ? a : a - 16; /* an mmapped chunk's header */
			to = a + blk_size(i);
		}
		if (from < lo)
			from = lo;
		if (to > hi)
			to = hi;
		if (from > cur)
			scan_root_minus_excl(cur, from);
		if (to > cur)
			cur = to;
		i++;
		while (i < n_blk && blk[i].addr < cur) /* inside what was just left out */
			i++;
	}
	if (cur < hi)
		scan_root_minus_excl(cur, hi);
}

static uintptr_t parse_hex(const char **s)
{
	uintptr_t v = 0;
	for (;; (*s)++) {
		char c = **s;
		if (c >= '0' && c <= '9')
			v = v * 16 + (uintptr_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v = v * 16 + (uintptr_t)(c - 'a' + 10);
		else
			return v;
	}
}

/* Reads /proc/self/maps whole into an ht_mmap buffer. */
static char *read_maps(size_t *cap_out)
{
	size_t cap = 1 << 20;
	for (int tries = 0; tries < 6; tries++, cap *= 4) {
		char *buf = ht_mmap(cap);
		if (!buf)
			return NULL;
		long n = ht_read_proc("maps", buf, cap);
		if (n >= 0 && (size_t)n + 1 < cap) {
			*cap_out = cap;
			return buf;
		}
		ht_munmap(buf, cap);
	}
	return NULL;
}

/* One line of /proc/self/maps. */
typedef struct {
	uintptr_t lo, hi;
	bool rw;
	bool priv; /* MAP_PRIVATE */
	const char *path; /* "\n" (or "") for anonymous memory */
} maps_line_t;

/* Parses the line at l into m; returns the next line, NULL at the end. */
static const char *maps_next(const char *l, maps_line_t *m)
{
	if (!*l)
		return NULL;
	const char *s = l;
	m->lo = parse_hex(&s);
	s++; /* '-' */
	m->hi = parse_hex(&s);
	s++; /* ' ' */
	m->rw = s[0] == 'r' && s[1] == 'w';
	m->priv = s[0] && s[1] && s[2] && s[3] == 'p';
	const char *path = s;
	for (int field = 0; field < 4 && *path && *path != '\n'; field++) {
		while (*path && *path != ' ' && *path != '\n')
			path++;
		while (*path == ' ')
			path++;
	}
	m->path = path;
	const char *eol = path;
	while (*eol && *eol != '\n')
		eol++;
	return *eol ? eol + 1 : eol;
}

/* Reads the word at a into *out; false if that faults. */
static bool peek(uintptr_t a, uintptr_t *out)
{
	if (sigsetjmp(fault_jmp, 0) == 0) {
		scanning = true;
		*out = *(volatile const uintptr_t *)a;
		scanning = false;
		return true;
	}
	after_fault();
	scanning = false;
	return false;
}

/* glibc's heap_info (malloc/arena.c) opens every heap of the arenas other
 * than the main one: the arena's address, the arena's previous heap (none
 * in its first heap, where the arena itself follows this header: 32 or 48
 * bytes, by version), the size in use and the size made read-write. */
enum { HEAP_AR_PTR, HEAP_PREV, HEAP_SIZE, HEAP_MPROTECT_SIZE, HEAP_WORDS };

static bool peek_heap(uintptr_t h, uintptr_t w[HEAP_WORDS])
{
	for (int i = 0; i < HEAP_WORDS; i++)
		if (!peek(h + 8 * (uintptr_t)i, &w[i]))
			return false;
	return true;
}

static bool first_heap_of(uintptr_t h, const uintptr_t w[HEAP_WORDS])
{
	return !w[HEAP_PREV] && w[HEAP_AR_PTR] > h && w[HEAP_AR_PTR] - h <= 64 &&
	       !(w[HEAP_AR_PTR] & 7);
}

/* The read-write size of the arena heap at h (HEAP_MAX-aligned), or 0 if
 * h holds no heap_info: its sizes must be whole pages, within HEAP_MAX,
 * and its arena must be the one that opens the arena's first heap. */
static uintptr_t arena_heap_size(uintptr_t h)
{
	uintptr_t w[HEAP_WORDS], first[HEAP_WORDS];
	if (!peek_heap(h, w))
		return 0;
	uintptr_t size = w[HEAP_SIZE], rw_size = w[HEAP_MPROTECT_SIZE];
	if (!size || ((size | rw_size) & 4095) || size > rw_size || rw_size > HEAP_MAX)
		return 0;
	if (first_heap_of(h, w))
		return rw_size;
	uintptr_t first_h = w[HEAP_AR_PTR] & ~(HEAP_MAX - 1);
	if (!w[HEAP_PREV] || (w[HEAP_PREV] & (HEAP_MAX - 1)) || first_h == h ||
	    !peek_heap(first_h, first) || !first_heap_of(first_h, first) ||
	    first[HEAP_AR_PTR] != w[HEAP_AR_PTR])
		return 0;
	return rw_size;
}

/* Leaves out glibc's arena heaps other than the main one. Their free
 * chunks keep stale pointers, and a heap may hold no block that tells it
 * apart (scan_mapping: only page-aligned ones, or none), so each is known
 * by its heap_info, at the start of a HEAP_MAX-aligned anonymous mapping.
 * Their live blocks are scanned when reached. */
static void exclude_arena_heaps(const char *maps)
{
	maps_line_t m;
	for (const char *l = maps; (l = maps_next(l, &m));) {
		if (!m.rw || (*m.path && *m.path != '\n'))
			continue;
		for (uintptr_t h = (m.lo + HEAP_MAX - 1) & ~(HEAP_MAX - 1); h >= m.lo && h < m.hi;
		     h += HEAP_MAX) {
			/* a big mapping's untouched pages are not faulted in for
			 * this; glibc wrote the header of a heap */
			unsigned char in = 1;
			bool big = m.hi - m.lo >= SCAN_SPARSE_MIN;
			if (big && !mincore((void *)h, 4096, &in) && !(in & 1))
				continue;
			excl_add(h, h + arena_heap_size(h));
		}
	}
}

/* The maps read for this check, for exclude_dead_stack. */
static const char *check_maps;

/* A stack of a thread that exited: glibc keeps it mapped, stale, in its
 * cache, but unmaps what the cache cannot hold (40 MiB), and the addresses
 * are reused (a library's .bss, the program's mappings). Left out only
 * while the mapping holding its top is still that stack: anonymous and
 * starting where the stack starts (the guard page below keeps the kernel
 * from merging it), or the main thread's [stack], which is never unmapped
 * (its bounds reach below the mapping: the rlimit). */
static void exclude_dead_stack(uintptr_t lo, uintptr_t hi)
{
	maps_line_t m;
	for (const char *l = check_maps; (l = maps_next(l, &m)) && m.lo < hi;) {
		if (hi > m.hi)
			continue;
		if (m.rw && !ht_strncmp(m.path, "[stack]", 7))
			excl_add(m.lo > lo ? m.lo : lo, hi);
		else if (m.rw && (!*m.path || *m.path == '\n') && m.lo == lo)
			excl_add(lo, hi);
		return;
	}
}

/* sp: where the calling thread's frames end, 0 if it runs elsewhere (a
 * coroutine's stack, an alternate signal stack): then the mapping that
 * holds it is program memory like any other, read whole. */
static void scan_roots(const char *maps, uintptr_t sp)
{
	bool no_swap = nothing_swapped();
	maps_line_t m;
	for (const char *l = maps; (l = maps_next(l, &m));) {
		const char *path = m.path;
		if (!m.rw)
			continue;
		/* devices may not like being read; [vvar] and the like are not
		 * ours. /dev/shm holds files (tmpfs: shm_open), read like any. */
		if (*path == '[' && ht_strncmp(path, "[stack", 6) && ht_strncmp(path, "[heap", 5))
			continue;
		if (!ht_strncmp(path, "/dev/", 5) && ht_strncmp(path, "/dev/zero", 9) &&
		    ht_strncmp(path, "/dev/shm/", 9))
			continue;
		if (!ht_strncmp(path, "[heap]", 6))
			continue; /* the main arena */
		uintptr_t lo = m.lo;
		if (sp >= lo && sp < m.hi) /* our own stack: from sp up */
			lo = sp;
		sparse_min = no_swap && m.priv ? SCAN_SPARSE_PRIVATE : SCAN_SPARSE_MIN;
		scan_mapping(lo, m.hi);
	}
	sparse_min = SCAN_SPARSE_MIN;
	/* relro (.data.rel.ro, .got): pointers stored before start-up made
	 * them read-only, e.g. in the loader's own tables. Those mappings are
	 * r--p, so the pass above did not read them. */
	static uintptr_t relro[HT_MAX_RELRO][2];
	unsigned nr = ht_modules_relro(relro, HT_MAX_RELRO);
	for (unsigned i = 0; i < nr; i++)
		scan_root_minus_excl(relro[i][0], relro[i][1]);
}

/* ---- the check --------------------------------------------------------- */

static void write_records(unsigned reason, uint64_t check_id)
{
	size_t cap = 1 << 20;
	uint8_t *rec = ht_mmap(cap);
	if (!rec)
		return;
	static const uint8_t kind_of[] = {
		[UNREACHED] = HT_LEAK_DEFINITE, [INDIRECT] = HT_LEAK_INDIRECT,
		[POSSIBLE] = HT_LEAK_POSSIBLE, [REACHABLE] = HT_LEAK_REACHABLE};
	uint64_t now = ht_now();
	size_t i = 0;
	do {
		size_t n = ht_varint_put(rec, now);
		n += ht_varint_put(rec + n, check_id);
		n += ht_varint_put(rec + n, reason);
		size_t last_at = n++; /* one byte: 0 or 1 */
		uintptr_t prev = 0;
		for (; i < n_blk && n + 2 * HT_VARINT_MAX < cap; i++) {
			n += ht_varint_put(rec + n, ht_zigzag((int64_t)(blk[i].addr - prev)));
			n += ht_varint_put(rec + n, kind_of[state[i]]);
			prev = blk[i].addr;
		}
		rec[last_at] = i == n_blk;
		ht_writer_record(HT_REC_LEAKS, rec, n);
	} while (i < n_blk);
	ht_munmap(rec, cap);
}

void ht_leak_check(unsigned reason, uint64_t check_id, uintptr_t sp)
{
	size_t maps_cap = 0;
	char *maps = NULL;
	n_blk = ht_live_count();
	blk = NULL;
	blk_bytes = 0;
	if (reason == HT_LEAK_AT_EXIT) {
		/* the table is done with: its memory holds the blocks */
		blk = ht_live_take(&n_blk, &blk_bytes);
	} else if (n_blk) {
		blk_bytes = n_blk * sizeof *blk;
		blk = ht_mmap(blk_bytes);
		if (blk)
			n_blk = ht_live_copy(blk, n_blk);
	}
	if (!blk)
		n_blk = 0;
	state = n_blk ? ht_mmap(n_blk) : NULL;
	blk_cap = n_blk;
	excl = ht_mmap(EXCL_MAX * sizeof *excl);
	if (n_blk && (!state || !excl))
		goto out;
	if (n_blk)
		sort_blocks();
	lo_addr = n_blk ? blk[0].addr : 0;
	hi_addr = 0;
	for (size_t i = 0; i < n_blk; i++) {
		uintptr_t e = blk[i].addr + (blk_size(i) ? blk_size(i) : 1);
		if (e > hi_addr)
			hi_addr = e;
	}
	granules_build();
	if (n_blk && (maps = read_maps(&maps_cap))) {
		n_excl = ht_agent_maps(excl, 8192);
		excl_add(ht_agent_lo, ht_agent_hi);
		for (unsigned i = 0; i < ht_agent_ndeps; i++)
			excl_add(ht_agent_deps[i][0], (ht_agent_deps[i][1] + 4095) & ~(uintptr_t)4095);
		check_maps = maps;
		ht_thread_exclusions(excl_add, exclude_dead_stack);
		exclude_arena_heaps(maps);
		excl_sort();
		/* what lies below sp is dead frames only in the thread's stack */
		ht_thread_t *t = ht_tls_thread;
		if (t && t->stack_hi && (sp < t->stack_lo || sp >= t->stack_hi))
			sp = 0;
		scan_roots(maps, sp);
		drain(0, 0);
		for (size_t i = 0; i < n_blk; i++) {
			if (state[i] != UNREACHED)
				continue;
			push(i);
			drain(2, i);
		}
	}
	if (ht_opt_summary) {
		/* no addresses in a summary: the classes go to the site rows */
		static const uint8_t kinds[] = {
			[UNREACHED] = HT_LEAK_DEFINITE, [INDIRECT] = HT_LEAK_INDIRECT,
			[POSSIBLE] = HT_LEAK_POSSIBLE, [REACHABLE] = HT_LEAK_REACHABLE};
		if (check_id == 0)
			for (size_t i = 0; i < n_blk; i++)
				ht_summary_leak((uint32_t)(blk[i].info >> HT_SCAN_SITE_SHIFT), kinds[state[i]], blk_size(i));
	} else {
		write_records(reason, check_id);
	}
out:
	granules_free();
	ht_munmap(maps, maps_cap);
	ht_munmap(blk, blk_bytes);
	ht_munmap(state, blk_cap);
	ht_munmap(excl, EXCL_MAX * sizeof *excl);
	ht_munmap(stack, stack_cap * sizeof *stack);
	blk = NULL;
	state = NULL;
	stack = NULL;
	stack_len = stack_cap = 0;
}

/* ---- on-demand checks --------------------------------------------------------
 * heaptrail_leak_check() and the leak signal run a check while the program
 * goes on: the caller's events so far and every shipped block are digested
 * first; other threads keep running, so blocks they allocated in the last
 * moments (events not shipped yet, at most ~0.5 s) may be missing from the
 * check, and the report calls them unclassified. A LEAK_CHECK event in the
 * caller's thread marks where the check ran. */

static _Atomic uint64_t next_check_id = 1;

static int check_now(unsigned reason)
{
	if (!ht_opt_leak_check || atomic_load(&ht_state) != HT_STATE_RECORDING)
		return -1;
	ht_thread_t *t = ht_thread_get();
	if (!t)
		return -1;
	__builtin_unwind_init(); /* callee-saved registers into this frame */
	uintptr_t sp = (uintptr_t)__builtin_frame_address(0) - 64;
	uint64_t id = atomic_fetch_add(&next_check_id, 1);
	if (!ht_event_begin(t))
		return -1; /* the trace is closing */
	ht_put_ext(t, HT_EXT_LEAK_CHECK, &id, 1);
	atomic_store_explicit(&t->in_event, 0, memory_order_relaxed);
	if (!ht_live_sync(t))
		return -1;
	ht_lock(&ht_live_lock);
	ht_leak_check(reason, id, sp);
	ht_unlock(&ht_live_lock);
	ht_writer_flush(false);
	ht_unlock(&ht_writer_lock);
	return 0;
}

HT_EXPORT int heaptrail_agent_leak_check(void);
int heaptrail_agent_leak_check(void)
{
	if (ht_guard)
		return -1;
	int saved = errno;
	ht_guard = 1;
	int r = check_now(HT_LEAK_AT_CALL);
	ht_guard = 0;
	errno = saved;
	return r;
}

/* The leak signal. Not async-signal-safe in general (it takes the writer
 * lock and reads /proc), so it does nothing when the signal interrupted the
 * agent itself (the guard is set), where that lock may be ours. */
void ht_leak_signal_handler(int sig)
{
	(void)sig;
	if (ht_guard) {
		ht_log("leak check signal arrived inside the agent: ignored, send it again", NULL);
		return;
	}
	int saved = errno;
	ht_guard = 1;
	check_now(HT_LEAK_AT_SIGNAL);
	ht_guard = 0;
	errno = saved;
}
