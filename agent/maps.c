/* maps.c - the program's own memory maps: mmap, munmap, mremap and
 * madvise (DONTNEED/FREE) as EXT events with their stacks (option mmap,
 * on by default).
 *
 * The real calls are the system calls themselves, not dlsym's next
 * definition: the agent maps memory before it could resolve anything
 * (ht_mmap at start-up goes through this very hook), and dlsym may map.
 * glibc's own maps (malloc's arenas and big blocks, thread stacks, ld.so
 * loading libraries) call its internal __mmap and never come here, so
 * what is recorded is the program's and its libraries' own: a runtime's
 * heap, an allocator's regions, file maps. brk and sbrk likewise: malloc
 * grows its main arena through libc's internal __sbrk, which never comes
 * here (that growth is the heap, already in the trace as blocks), so what
 * is recorded (kind HT_MAP_BRK) is the program's own moves of the break.
 * They go through glibc's exported __sbrk, not the system call: glibc
 * keeps its own idea of the break, which a raw call would leave stale. */
#include <errno.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent.h"
#include "unwind.h"

/* The program's mapped bytes (heaptrail_stats): recorded maps less
 * recorded unmaps; an unmap of memory mapped unrecorded may take it below
 * zero, read as 0. */
static _Atomic int64_t mapped_now;

static inline uint64_t whole_pages(uint64_t len)
{
	return (len + 4095) & ~(uint64_t)4095;
}

uint64_t ht_maps_mapped(void)
{
	int64_t v = atomic_load_explicit(&mapped_now, memory_order_relaxed);
	return v > 0 ? (uint64_t)v : 0;
}

static inline long raw_ret(long r)
{
	if (r < 0 && r > -4096) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

/* True when the call whose return address is ret is the program's. */
static inline bool maps_record(void *ret)
{
	if (!ht_opt_mmap || HT_UNLIKELY(ht_guard))
		return false;
	if (atomic_load_explicit(&ht_state, memory_order_relaxed) != HT_STATE_RECORDING ||
	    !atomic_load_explicit(&ht_recording_on, memory_order_relaxed))
		return false;
	uintptr_t r = (uintptr_t)ret;
	if (ht_addr_in_agent(r))
		return false;
	for (unsigned i = 0; i < ht_agent_ndeps; i++) /* libunwind, zstd */
		if (r - ht_agent_deps[i][0] < ht_agent_deps[i][1] - ht_agent_deps[i][0])
			return false;
	return getpid() == ht_pid; /* not a vfork child */
}

/* Records EXT kind with fields f[0..n); the stack goes in f[stack_at]
 * (captured here: inline, so that it starts in the hook). */
__attribute__((always_inline)) static inline void record_map(unsigned kind, uint64_t *f, unsigned n,
							    int stack_at)
{
	int e = errno;
	ht_guard = 1;
	ht_thread_t *t = ht_thread_get();
	if (t && ht_event_begin(t)) {
		if (stack_at >= 0)
			f[stack_at] = ht_capture(t);
		ht_put_ext(t, kind, f, n);
		atomic_store_explicit(&t->in_event, 0, memory_order_relaxed);
	}
	ht_guard = 0;
	errno = e;
}

static inline unsigned map_kind(int flags, int fd)
{
	if (!(flags & MAP_ANONYMOUS) && fd >= 0)
		return HT_MAP_FILE;
	return (flags & MAP_SHARED) ? HT_MAP_SHARED : HT_MAP_ANON;
}

static void *map_body(void *ret, void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	void *p = (void *)raw_ret(syscall(SYS_mmap, addr, len, prot, flags, fd, off));
	if (p != MAP_FAILED && maps_record(ret)) {
		atomic_fetch_add_explicit(&mapped_now, (int64_t)whole_pages(len), memory_order_relaxed);
		uint64_t f[4] = {(uintptr_t)p, len, 0, map_kind(flags, fd)};
		record_map(HT_EXT_MMAP, f, 4, 2);
	}
	return p;
}

HT_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return map_body(__builtin_return_address(0), addr, len, prot, flags, fd, off);
}

HT_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return map_body(__builtin_return_address(0), addr, len, prot, flags, fd, off);
}

HT_EXPORT int munmap(void *addr, size_t len)
{
	/* before the call, like a free: another thread may map there next */
	if (maps_record(__builtin_return_address(0))) {
		atomic_fetch_sub_explicit(&mapped_now, (int64_t)whole_pages(len), memory_order_relaxed);
		uint64_t f[2] = {(uintptr_t)addr, len};
		record_map(HT_EXT_MUNMAP, f, 2, -1);
	}
	return (int)raw_ret(syscall(SYS_munmap, addr, len));
}

HT_EXPORT void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
	void *want = NULL;
	if (flags & MREMAP_FIXED) {
		va_list ap;
		va_start(ap, flags);
		want = va_arg(ap, void *);
		va_end(ap);
	}
	void *p = (void *)raw_ret(syscall(SYS_mremap, old, old_len, new_len, flags, want));
	if (p != MAP_FAILED && maps_record(__builtin_return_address(0))) {
		atomic_fetch_add_explicit(&mapped_now,
					  (int64_t)whole_pages(new_len) - (int64_t)whole_pages(old_len),
					  memory_order_relaxed);
		uint64_t f[5] = {(uintptr_t)old, old_len, (uintptr_t)p, new_len, 0};
		record_map(HT_EXT_MREMAP, f, 5, 4);
	}
	return p;
}

HT_EXPORT int madvise(void *addr, size_t len, int advice)
{
	int r = (int)raw_ret(syscall(SYS_madvise, addr, len, advice));
	if (r == 0 && (advice == MADV_DONTNEED || advice == MADV_FREE) &&
	    maps_record(__builtin_return_address(0))) {
		uint64_t f[2] = {(uintptr_t)addr, len};
		record_map(HT_EXT_MADVISE_FREE, f, 2, -1);
	}
	return r;
}

/* glibc's, exported: the break moved by inc, glibc's idea of it kept. */
extern void *__sbrk(intptr_t inc);

/* The break moved from old by inc (done): growth is a map of the
 * program's, a shrink an unmap. */
static void brk_record(void *ret, uintptr_t old, intptr_t inc)
{
	if (!inc || !maps_record(ret))
		return;
	if (inc > 0) {
		atomic_fetch_add_explicit(&mapped_now, (int64_t)whole_pages((uint64_t)inc),
					  memory_order_relaxed);
		uint64_t f[4] = {old, (uint64_t)inc, 0, HT_MAP_BRK};
		record_map(HT_EXT_MMAP, f, 4, 2);
	} else {
		uint64_t len = (uint64_t)-inc;
		atomic_fetch_sub_explicit(&mapped_now, (int64_t)whole_pages(len), memory_order_relaxed);
		uint64_t f[2] = {old - len, len};
		record_map(HT_EXT_MUNMAP, f, 2, -1);
	}
}

HT_EXPORT void *sbrk(intptr_t inc)
{
	void *old = __sbrk(inc);
	if (old != (void *)-1)
		brk_record(__builtin_return_address(0), (uintptr_t)old, inc);
	return old;
}

HT_EXPORT int brk(void *addr)
{
	void *old = __sbrk(0);
	if (old == (void *)-1)
		return -1;
	intptr_t inc = (intptr_t)((uintptr_t)addr - (uintptr_t)old);
	if (__sbrk(inc) == (void *)-1)
		return -1;
	brk_record(__builtin_return_address(0), (uintptr_t)old, inc);
	return 0;
}
