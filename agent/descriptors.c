/* descriptors.c - file descriptors and the program's own handles.
 *
 * The calls that create or close a descriptor are interposed like malloc
 * and recorded as EXT events (common/trace_format.h): FD_OPEN after a
 * successful call, with the stack and which call made it; FD_CLOSE before
 * the real close, so that another thread that gets the number back orders
 * after it (the free rule, hooks.c rule 4). The reader reports descriptors
 * opened and never closed; those the process inherited are never seen
 * opened, so they never count.
 *
 * The hooks obey the rules at the top of hooks.c, and more strictly:
 *  - a call made inside the agent (guard set, or a return address in
 *    libheaptrail.so: the agent's own open/close bind to these hooks) or
 *    while the agent is not recording passes straight through. Unlike
 *    malloc, an open does not start the agent: before ht_init (early
 *    constructors) nothing is recorded;
 *  - a vfork child runs on its parent's memory: its dup2/close must not
 *    land in the parent's trace (getpid() != ht_pid);
 *  - the real functions are looked up together, once, under the guard,
 *    but run without it: fopen's FILE is a malloc the program made, and
 *    memcheck counts it;
 *  - errno is the real call's.
 * The agent's descriptors (the trace's, libunwind's pipe) are moved to
 * high numbers (ht_fd_move_high: above the soft RLIMIT_NOFILE when it is
 * at most 1024, where the program cannot reach them), so that the program
 * finds the low ones free as without the agent. The trace's is also
 * hidden from fcntl and dup (EBADF): a shell that finds an open
 * close-on-exec descriptor takes it for its own and saves and restores
 * it, duplicating the trace onto a number it then writes to.
 * The trace's own descriptor is kept from the program (a daemon that
 * closes every descriptor, a shell that dup2s onto a fixed number):
 * close of it fails with EBADF, as if it were not open; close_range and
 * closefrom close around it; dup2/dup3 onto it move the trace to another
 * number first; syscall() of those (x86-64) is handled the same way
 * (below). A system call the hooks cannot see still reaches it: the
 * writer then opens the file again (reopen_trace in writer.c). A vfork
 * child has a table of its own and is let through.
 *
 * Calls inside libc (fopen's own open, popen, opendir) use libc's internal
 * names and are not seen, in pairs: what libc opens on its own it closes on
 * its own.
 *
 * fdopen creates no descriptor; it is recorded as an FD_OPEN of the same
 * number (call HT_FDCALL_FOPEN), which replaces the descriptor's open
 * stack: the FILE is what the program must fclose, so its stack is the
 * useful one. dup2/dup3 onto an open descriptor close it implicitly: an
 * FD_CLOSE of the target precedes its FD_OPEN (the reader ignores closes
 * of descriptors it never saw open, so the target need not be checked).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent.h"
#include "unwind.h"

/* ---- the real functions ------------------------------------------------------ */

static int (*real_open)(const char *, int, ...);
static int (*real___open_2)(const char *, int);
static int (*real___open64_2)(const char *, int);
static int (*real___openat_2)(int, const char *, int);
static int (*real___openat64_2)(int, const char *, int);
static int (*real_open64)(const char *, int, ...);
static int (*real_openat)(int, const char *, int, ...);
static int (*real_openat64)(int, const char *, int, ...);
static int (*real_creat)(const char *, mode_t);
static int (*real_creat64)(const char *, mode_t);
static int (*real_socket)(int, int, int);
static int (*real_socketpair)(int, int, int, int[2]);
static int (*real_accept)(int, struct sockaddr *, socklen_t *);
static int (*real_accept4)(int, struct sockaddr *, socklen_t *, int);
static int (*real_pipe)(int[2]);
static int (*real_pipe2)(int[2], int);
static int (*real_dup)(int);
static int (*real_dup2)(int, int);
static int (*real_dup3)(int, int, int);
static int (*real_fcntl)(int, int, ...);
static int (*real_fcntl64)(int, int, ...);
static FILE *(*real_fopen)(const char *, const char *);
static FILE *(*real_fopen64)(const char *, const char *);
static FILE *(*real_freopen)(const char *, const char *, FILE *);
static FILE *(*real_freopen64)(const char *, const char *, FILE *);
static FILE *(*real_fdopen)(int, const char *);
static int (*real_close)(int);
static int (*real_close_range)(unsigned, unsigned, int);
static void (*real_closefrom)(int);
static int (*real_fclose)(FILE *);

static _Atomic bool resolved;

#define RESOLVE(name) *(void **)&real_##name = dlsym(RTLD_NEXT, #name)

/* Looks every real function up once. dlsym may allocate: the guard keeps
 * that out of the trace (malloc's bootstrap buffer serves it if needed).
 * Two threads racing here store the same values. */
HT_NOINLINE HT_COLD static void resolve_all(void)
{
	int e = errno;
	ht_guard++;
	RESOLVE(open);
	RESOLVE(open64);
	RESOLVE(__open_2);
	RESOLVE(__open64_2);
	RESOLVE(__openat_2);
	RESOLVE(__openat64_2);
	RESOLVE(openat);
	RESOLVE(openat64);
	RESOLVE(creat);
	RESOLVE(creat64);
	RESOLVE(socket);
	RESOLVE(socketpair);
	RESOLVE(accept);
	RESOLVE(accept4);
	RESOLVE(pipe);
	RESOLVE(pipe2);
	RESOLVE(dup);
	RESOLVE(dup2);
	RESOLVE(dup3);
	RESOLVE(fcntl);
	RESOLVE(fcntl64);
	RESOLVE(fopen);
	RESOLVE(fopen64);
	RESOLVE(freopen);
	RESOLVE(freopen64);
	RESOLVE(fdopen);
	RESOLVE(fclose);
	RESOLVE(close_range);
	RESOLVE(closefrom);
	RESOLVE(close); /* last: a non-NULL real_close means all are resolved */
	ht_guard--;
	if (!real_close) {
		ht_log("cannot find the real close; giving up", NULL);
		_exit(127);
	}
	/* glibc before 2.28 has no fcntl64: fall back to fcntl */
	if (!real_fcntl64)
		real_fcntl64 = real_fcntl;
	atomic_store(&resolved, true);
	errno = e;
}

#define REAL(name) (HT_UNLIKELY(!atomic_load_explicit(&resolved, memory_order_acquire)) ? resolve_all() : (void)0, real_##name)

/* True if the call whose return address is ret should be recorded. */
static inline bool should_record_res(void *ret)
{
	if (HT_UNLIKELY(ht_guard))
		return false;
	if (atomic_load_explicit(&ht_state, memory_order_relaxed) != HT_STATE_RECORDING)
		return false;
	if (ht_addr_in_agent((uintptr_t)ret))
		return false;
	return getpid() == ht_pid; /* not a vfork child */
}

/* True when fd is the trace's descriptor and the call (return address
 * ret) is the program's, in this process: the hooks keep it open. The
 * first test is all a call on another descriptor pays. */
static inline bool is_trace_fd(long fd, void *ret)
{
	int tfd = atomic_load_explicit(&ht_trace_fd, memory_order_acquire);
	/* the file too: a raw system call may have closed the trace and the
	 * program reused the number, which the writer has not noticed yet */
	return HT_UNLIKELY(fd == tfd) && tfd >= 0 && !ht_addr_in_agent((uintptr_t)ret) &&
	       getpid() == ht_pid && ht_writer_fd_is_trace(tfd);
}

/* ---- events (EXT, written with ht_put_ext) ----------------------------------------- */

/* Records FD_OPEN of fd (and of fd2 when >= 0: pipe, socketpair), made by
 * call. Inline, so that the stack starts in the hook (ht_capture). */
__attribute__((always_inline)) static inline void record_open(int fd, int fd2, unsigned call)
{
	if (!atomic_load_explicit(&ht_recording_on, memory_order_relaxed))
		return; /* switched off by the program: closes are still recorded */
	int e = errno;
	ht_guard = 1;
	ht_thread_t *t = ht_thread_get();
	if (t && ht_event_begin(t)) {
		uint64_t f[3] = {(unsigned)fd, ht_capture(t), call};
		ht_put_ext(t, HT_EXT_FD_OPEN, f, 3);
		if (fd2 >= 0) {
			f[0] = (unsigned)fd2;
			ht_put_ext(t, HT_EXT_FD_OPEN, f, 3);
		}
		atomic_store_explicit(&t->in_event, 0, memory_order_relaxed);
	}
	ht_guard = 0;
	ht_transient_end();
	errno = e;
}

/* Records FD_CLOSE of fd; called before the real close. */
static void record_close(int fd)
{
	if (fd < 0)
		return;
	int e = errno;
	ht_guard = 1;
	ht_thread_t *t = ht_thread_get();
	if (t && ht_event_begin(t)) {
		uint64_t f = (unsigned)fd;
		ht_put_ext(t, HT_EXT_FD_CLOSE, &f, 1);
		atomic_store_explicit(&t->in_event, 0, memory_order_relaxed);
	}
	ht_guard = 0;
	ht_transient_end();
	errno = e;
}

/* ---- descriptors ------------------------------------------------------------------ */

/* Wraps the real call `call` returning a descriptor made by fdcall. */
#define FD_HOOK_BODY(fdcall, call)                                             \
	do {                                                                   \
		if (!should_record_res(__builtin_return_address(0)))           \
			return call;                                           \
		int fd_ = call;                                                \
		if (fd_ >= 0)                                                  \
			record_open(fd_, -1, fdcall);                          \
		return fd_;                                                    \
	} while (0)

/* open's mode argument exists only with O_CREAT or O_TMPFILE. */
#define OPEN_MODE(flags, last)                                                 \
	mode_t mode = 0;                                                       \
	if ((flags) & O_CREAT || ((flags) & O_TMPFILE) == O_TMPFILE) {         \
		va_list ap;                                                    \
		va_start(ap, last);                                            \
		mode = va_arg(ap, mode_t);                                     \
		va_end(ap);                                                    \
	}

HT_EXPORT int open(const char *path, int flags, ...)
{
	OPEN_MODE(flags, flags);
	FD_HOOK_BODY(HT_FDCALL_OPEN, REAL(open)(path, flags, mode));
}

HT_EXPORT int open64(const char *path, int flags, ...)
{
	OPEN_MODE(flags, flags);
	FD_HOOK_BODY(HT_FDCALL_OPEN, REAL(open64)(path, flags, mode));
}

HT_EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
	OPEN_MODE(flags, flags);
	FD_HOOK_BODY(HT_FDCALL_OPEN, REAL(openat)(dirfd, path, flags, mode));
}

HT_EXPORT int openat64(int dirfd, const char *path, int flags, ...)
{
	OPEN_MODE(flags, flags);
	FD_HOOK_BODY(HT_FDCALL_OPEN, REAL(openat64)(dirfd, path, flags, mode));
}

/* What open and openat become under _FORTIFY_SOURCE (Debian builds its
 * packages with it) when the flags are not a constant and no mode is
 * given. */
HT_EXPORT int __open_2(const char *path, int flags);
HT_EXPORT int __open64_2(const char *path, int flags);
HT_EXPORT int __openat_2(int dirfd, const char *path, int flags);
HT_EXPORT int __openat64_2(int dirfd, const char *path, int flags);

HT_EXPORT int __open_2(const char *path, int flags)
{
	FD_HOOK_BODY(HT_FDCALL_OPEN, REAL(__open_2)(path, flags));
}

HT_EXPORT int __open64_2(const char *path, int flags)
{
	FD_HOOK_BODY(HT_FDCALL_OPEN, REAL(__open64_2)(path, flags));
}

HT_EXPORT int __openat_2(int dirfd, const char *path, int flags)
{
	FD_HOOK_BODY(HT_FDCALL_OPEN, REAL(__openat_2)(dirfd, path, flags));
}

HT_EXPORT int __openat64_2(int dirfd, const char *path, int flags)
{
	FD_HOOK_BODY(HT_FDCALL_OPEN, REAL(__openat64_2)(dirfd, path, flags));
}

HT_EXPORT int creat(const char *path, mode_t mode)
{
	FD_HOOK_BODY(HT_FDCALL_OPEN, REAL(creat)(path, mode));
}

HT_EXPORT int creat64(const char *path, mode_t mode)
{
	FD_HOOK_BODY(HT_FDCALL_OPEN, REAL(creat64)(path, mode));
}

HT_EXPORT int socket(int domain, int type, int protocol)
{
	FD_HOOK_BODY(HT_FDCALL_SOCKET, REAL(socket)(domain, type, protocol));
}

HT_EXPORT int accept(int fd, struct sockaddr *addr, socklen_t *len)
{
	FD_HOOK_BODY(HT_FDCALL_ACCEPT, REAL(accept)(fd, addr, len));
}

HT_EXPORT int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
	FD_HOOK_BODY(HT_FDCALL_ACCEPT, REAL(accept4)(fd, addr, len, flags));
}

HT_EXPORT int dup(int fd)
{
	if (is_trace_fd(fd, __builtin_return_address(0))) {
		errno = EBADF;
		return -1;
	}
	FD_HOOK_BODY(HT_FDCALL_DUP, REAL(dup)(fd));
}

/* Two descriptors at once: pipe, pipe2, socketpair. */
#define FD_PAIR_HOOK_BODY(fdcall, fds, call)                                   \
	do {                                                                   \
		if (!should_record_res(__builtin_return_address(0)))           \
			return call;                                           \
		int r_ = call;                                                 \
		if (r_ == 0)                                                   \
			record_open(fds[0], fds[1], fdcall);                   \
		return r_;                                                     \
	} while (0)

int ht_fd_move_high(int fd)
{
	struct rlimit rl;
	if (fd < 0 || getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return fd;
	int high = -1;
	if (rl.rlim_cur <= 1024 &&
	    (rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= rl.rlim_cur + 16)) {
		/* Above the soft limit, as valgrind keeps its own: no number
		 * the program can open, dup2 onto or reach by closing up to
		 * the limit. The limit is raised only for the moment. */
		struct rlimit more = { rl.rlim_cur + 16, rl.rlim_max };
		if (setrlimit(RLIMIT_NOFILE, &more) == 0) {
			high = REAL(fcntl)(fd, F_DUPFD_CLOEXEC, (void *)(uintptr_t)rl.rlim_cur);
			setrlimit(RLIMIT_NOFILE, &rl);
		}
	}
	if (high < 0) {
		/* just below the limit, where no program asks for a number
		 * (a huge limit: below 1024, not a descriptor table that size) */
		rlim_t top = rl.rlim_cur <= 65536 ? rl.rlim_cur : 1024;
		if (top < 3 + 16)
			return fd;
		high = REAL(fcntl)(fd, F_DUPFD_CLOEXEC, (void *)(uintptr_t)(top - 16));
	}
	if (high < 0)
		return fd;
	syscall(SYS_close, fd); /* not glibc's close: a cancellation point */
	return high;
}

/* libunwind's pipe (it checks addresses by writing them to one): moved to
 * high numbers like the trace's. */
#define LIBUNWIND_PIPE(fds, call)                                              \
	do {                                                                   \
		uintptr_t ret_ = (uintptr_t)__builtin_return_address(0);       \
		if (HT_UNLIKELY(ret_ - ht_libunwind_lo < ht_libunwind_hi - ht_libunwind_lo)) { \
			int r_ = call;                                         \
			if (r_ == 0) {                                         \
				int e_ = errno;                                \
				fds[0] = ht_fd_move_high(fds[0]);              \
				fds[1] = ht_fd_move_high(fds[1]);              \
				errno = e_;                                    \
			}                                                      \
			return r_;                                             \
		}                                                              \
	} while (0)

HT_EXPORT int pipe(int fds[2])
{
	LIBUNWIND_PIPE(fds, REAL(pipe)(fds));
	FD_PAIR_HOOK_BODY(HT_FDCALL_PIPE, fds, REAL(pipe)(fds));
}

HT_EXPORT int pipe2(int fds[2], int flags)
{
	LIBUNWIND_PIPE(fds, REAL(pipe2)(fds, flags));
	FD_PAIR_HOOK_BODY(HT_FDCALL_PIPE, fds, REAL(pipe2)(fds, flags));
}

HT_EXPORT int socketpair(int domain, int type, int protocol, int fds[2])
{
	FD_PAIR_HOOK_BODY(HT_FDCALL_SOCKET, fds, REAL(socketpair)(domain, type, protocol, fds));
}

/* dup2/dup3 replace newfd atomically: no other thread can get the number
 * in between, so its implicit close is recorded after success, with the
 * new open. dup2(fd, fd) changes nothing. */
#define DUP2_HOOK_BODY(oldfd, newfd, call)                                     \
	do {                                                                   \
		if (!should_record_res(__builtin_return_address(0)))           \
			return call;                                           \
		int fd_ = call;                                                \
		if (fd_ >= 0 && oldfd != newfd) {                              \
			record_close(fd_);                                     \
			record_open(fd_, -1, HT_FDCALL_DUP);                   \
		}                                                              \
		return fd_;                                                    \
	} while (0)

/* dup2/dup3 onto the trace's number: the trace moves out of the way (not
 * from a signal handler that interrupted the agent: it may hold the
 * writer's lock). If the call then fails, the old number is closed. */
#define DUP2_PROTECT(oldfd, newfd, call)                                       \
	do {                                                                   \
		if (HT_UNLIKELY(is_trace_fd(newfd, __builtin_return_address(0))) && \
		    oldfd != newfd && !ht_guard) {                             \
			ht_writer_move_fd(newfd);                              \
			int r_ = call;                                         \
			if (r_ < 0) {                                          \
				int e_ = errno;                                \
				REAL(close)(newfd);                            \
				errno = e_;                                    \
			}                                                      \
			return r_;                                             \
		}                                                              \
	} while (0)

HT_EXPORT int dup2(int oldfd, int newfd)
{
	DUP2_PROTECT(oldfd, newfd, REAL(dup2)(oldfd, newfd));
	DUP2_HOOK_BODY(oldfd, newfd, REAL(dup2)(oldfd, newfd));
}

HT_EXPORT int dup3(int oldfd, int newfd, int flags)
{
	DUP2_PROTECT(oldfd, newfd, REAL(dup3)(oldfd, newfd, flags));
	DUP2_HOOK_BODY(oldfd, newfd, REAL(dup3)(oldfd, newfd, flags));
}

/* fcntl is variadic: the third argument is an int, a long or a pointer
 * depending on cmd, or absent. It is passed on as a pointer-sized value,
 * which is what glibc itself reads (va_arg(ap, void *)); reading an absent
 * one only picks up an unused register. Only F_DUPFD and F_DUPFD_CLOEXEC
 * create a descriptor. */
#define FCNTL_BODY(fn)                                                         \
	va_list ap;                                                            \
	va_start(ap, cmd);                                                     \
	void *arg = va_arg(ap, void *);                                        \
	va_end(ap);                                                            \
	if (is_trace_fd(fd, __builtin_return_address(0))) {                   \
		errno = EBADF; /* not the program's: as if not open */         \
		return -1;                                                     \
	}                                                                      \
	if (cmd != F_DUPFD && cmd != F_DUPFD_CLOEXEC)                          \
		return REAL(fn)(fd, cmd, arg);                                 \
	FD_HOOK_BODY(HT_FDCALL_DUP, REAL(fn)(fd, cmd, arg))

HT_EXPORT int fcntl(int fd, int cmd, ...)
{
	FCNTL_BODY(fcntl);
}

HT_EXPORT int fcntl64(int fd, int cmd, ...)
{
	FCNTL_BODY(fcntl64);
}

HT_EXPORT int close(int fd)
{
	if (is_trace_fd(fd, __builtin_return_address(0))) {
		errno = EBADF;
		return -1;
	}
	if (!should_record_res(__builtin_return_address(0)))
		return REAL(close)(fd);
	record_close(fd);
	return real_close(fd);
}

/* close_range and closefrom close whatever is open in a range (a daemon
 * or a fork child before exec closes everything from 3 up): the open
 * descriptors of the range are read from /proc/self/fd (getdents64 into
 * a stack buffer: no malloc) and each gets an FD_CLOSE before the real
 * call. Without /proc nothing is recorded. */
static void record_close_range(unsigned first, unsigned last)
{
	int dfd = REAL(open)("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return;
	char buf[4096] __attribute__((aligned(8)));
	long n;
	while ((n = syscall(SYS_getdents64, dfd, buf, sizeof buf)) > 0) {
		for (long off = 0; off < n;) {
			/* struct linux_dirent64: ino, off, reclen (u16), type, name */
			unsigned short reclen;
			memcpy(&reclen, buf + off + 16, sizeof reclen);
			const char *name = buf + off + 19;
			unsigned long fd = 0;
			bool num = *name != 0;
			for (const char *c = name; *c; c++) {
				if (*c < '0' || *c > '9') {
					num = false;
					break;
				}
				fd = fd * 10 + (unsigned long)(*c - '0');
			}
			if (num && fd >= first && fd <= last && fd != (unsigned long)dfd &&
			    fd != (unsigned long)atomic_load(&ht_trace_fd))
				record_close((int)fd);
			off += reclen;
		}
	}
	real_close(dfd);
}

/* close_range(first, last) but around the trace's descriptor tfd, which
 * lies in the range, by cr (glibc's close_range or the system call).
 * Without close_range (glibc < 2.34) the part below tfd is closed one by
 * one. */
typedef int close_range_fn(unsigned, unsigned, int);
static int close_range_around(unsigned first, unsigned last, int flags, unsigned tfd,
			      close_range_fn *cr)
{
	int r = 0;
	if (tfd > first) {
		if (cr)
			r = cr(first, tfd - 1, flags);
		else
			for (unsigned fd = first; fd < tfd; fd++)
				real_close((int)fd);
	}
	if (r == 0 && tfd < last && cr)
		r = cr(tfd + 1, last, flags);
	return r;
}

/* close_range called from ret, made by cr (glibc's or the system call):
 * the closes recorded, the trace's descriptor kept. */
static int close_range_hooked(void *ret, unsigned first, unsigned last, int flags,
			      close_range_fn *cr)
{
	if (should_record_res(ret) && !(flags & CLOSE_RANGE_CLOEXEC) && first <= last) {
		int e = errno;
		record_close_range(first, last);
		errno = e;
	}
	int tfd = atomic_load_explicit(&ht_trace_fd, memory_order_acquire);
	if (HT_UNLIKELY(tfd >= 0 && first <= (unsigned)tfd && (unsigned)tfd <= last) &&
	    !(flags & CLOSE_RANGE_CLOEXEC) && is_trace_fd(tfd, ret))
		return close_range_around(first, last, flags, (unsigned)tfd, cr);
	return cr(first, last, flags);
}

HT_EXPORT int close_range(unsigned first, unsigned last, int flags)
{
	return close_range_hooked(__builtin_return_address(0), first, last, flags,
				  REAL(close_range));
}

HT_EXPORT void closefrom(int lowfd)
{
	void *ret = __builtin_return_address(0);
	unsigned first = lowfd < 0 ? 0 : (unsigned)lowfd;
	if (should_record_res(ret)) {
		int e = errno;
		record_close_range(first, ~0u);
		errno = e;
	}
	int tfd = atomic_load_explicit(&ht_trace_fd, memory_order_acquire);
	if (HT_UNLIKELY(tfd >= 0 && (unsigned)tfd >= first) && is_trace_fd(tfd, ret)) {
		int e = errno; /* closefrom sets none */
		close_range_around(first, (unsigned)tfd, 0, (unsigned)tfd, REAL(close_range));
		REAL(closefrom)(tfd + 1);
		errno = e;
		return;
	}
	REAL(closefrom)(lowfd);
}

/* ---- syscall() ------------------------------------------------------------------------
 * Programs that support glibc before 2.34 close descriptors with
 * syscall(SYS_close_range, ...), and some close or dup2 that way: glibc's
 * syscall() is replaced, on x86-64, so that those calls keep the trace's
 * descriptor and are recorded as the functions are. Every other call goes
 * straight to the kernel as in glibc's (no stack frame: a clone or vfork
 * made through syscall() sees the stack as glibc's leaves it). The agent's
 * own syscall() calls come here too, and pass. A system call made without
 * syscall() (inline assembly) is not seen: the writer then opens the trace
 * again (writer.c, reopen_trace). */
#if defined(__x86_64__)

#define HT_STR_(x) #x
#define HT_STR(x) HT_STR_(x)

static inline long raw_syscall3(long n, long a, long b, long c)
{
	long r;
	__asm__ volatile("syscall"
			 : "=a"(r)
			 : "a"(n), "D"(a), "S"(b), "d"(c)
			 : "rcx", "r11", "memory");
	return r;
}

/* A system call's result as syscall() returns it: -1 and errno. */
static long sys_result(long r)
{
	if ((unsigned long)r > -4096ul) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

static int sys_close_range(unsigned first, unsigned last, int flags)
{
	return (int)sys_result(raw_syscall3(SYS_close_range, first, last, flags));
}

/* The error path of syscall below. */
__attribute__((visibility("hidden"), used)) long ht_syscall_error(long r);
long ht_syscall_error(long r)
{
	return sys_result(r);
}

/* syscall(n, a, b, c) for the descriptor calls; the return address is
 * the program's call of syscall(). */
__attribute__((visibility("hidden"), used)) long ht_syscall_fd(long n, long a, long b, long c);
long ht_syscall_fd(long n, long a, long b, long c)
{
	void *ret = __builtin_return_address(0);
	if (n == SYS_close) {
		if (is_trace_fd(a, ret)) {
			errno = EBADF;
			return -1;
		}
		if (should_record_res(ret))
			record_close((int)a);
		return sys_result(raw_syscall3(n, a, b, c));
	}
	if (n == SYS_close_range)
		return close_range_hooked(ret, (unsigned)a, (unsigned)b, (int)c, sys_close_range);
	/* SYS_dup2 (c is not an argument: the kernel ignores it), SYS_dup3 */
	if (is_trace_fd(b, ret) && a != b && !ht_guard) {
		ht_writer_move_fd((int)b);
		long r = sys_result(raw_syscall3(n, a, b, c));
		if (r < 0) {
			int e = errno;
			raw_syscall3(SYS_close, b, 0, 0);
			errno = e;
		}
		return r;
	}
	if (!should_record_res(ret))
		return sys_result(raw_syscall3(n, a, b, c));
	long r = sys_result(raw_syscall3(n, a, b, c));
	if (r >= 0 && a != b) {
		record_close((int)r);
		record_open((int)r, -1, HT_FDCALL_DUP);
	}
	return r;
}

/* glibc's syscall: the number in rdi, six arguments in rsi, rdx, rcx,
 * r8, r9 and on the stack, moved to the kernel's registers. */
__asm__(".text\n"
	".globl syscall\n"
	".type syscall, @function\n"
	".p2align 4\n"
	"syscall:\n"
	"	endbr64\n"
	"	cmpq $" HT_STR(SYS_close) ", %rdi\n"
	"	je ht_syscall_fd\n"
	"	cmpq $" HT_STR(SYS_close_range) ", %rdi\n"
	"	je ht_syscall_fd\n"
	"	cmpq $" HT_STR(SYS_dup2) ", %rdi\n"
	"	je ht_syscall_fd\n"
	"	cmpq $" HT_STR(SYS_dup3) ", %rdi\n"
	"	je ht_syscall_fd\n"
	"	movq %rdi, %rax\n"
	"	movq %rsi, %rdi\n"
	"	movq %rdx, %rsi\n"
	"	movq %rcx, %rdx\n"
	"	movq %r8, %r10\n"
	"	movq %r9, %r8\n"
	"	movq 8(%rsp), %r9\n"
	"	syscall\n"
	"	cmpq $-4095, %rax\n"
	"	jae 1f\n"
	"	ret\n"
	"1:	movq %rax, %rdi\n"
	"	jmp ht_syscall_error\n"
	".size syscall, .-syscall\n");

#endif

/* ---- stdio ----------------------------------------------------------------------------- */

/* fileno without stdio's lock (fileno_unlocked is as good: a FILE being
 * opened or closed is the caller's alone); -1 for streams without one
 * (fmemopen, open_memstream). */
static inline int stream_fd(FILE *f)
{
	return f ? fileno_unlocked(f) : -1;
}

#define FOPEN_HOOK_BODY(call)                                                  \
	do {                                                                   \
		if (!should_record_res(__builtin_return_address(0)))           \
			return call;                                           \
		FILE *f_ = call;                                               \
		int fd_ = stream_fd(f_);                                       \
		if (fd_ >= 0)                                                  \
			record_open(fd_, -1, HT_FDCALL_FOPEN);                 \
		return f_;                                                     \
	} while (0)

HT_EXPORT FILE *fopen(const char *path, const char *mode)
{
	FOPEN_HOOK_BODY(REAL(fopen)(path, mode));
}

HT_EXPORT FILE *fopen64(const char *path, const char *mode)
{
	FOPEN_HOOK_BODY(REAL(fopen64)(path, mode));
}

HT_EXPORT FILE *fdopen(int fd, const char *mode)
{
	FOPEN_HOOK_BODY(REAL(fdopen)(fd, mode));
}

/* freopen closes the stream's descriptor (even when it then fails) and
 * opens another, perhaps with the same number. path NULL reopens the same
 * file with a new mode, which may keep the descriptor: the close and the
 * open are both recorded, and cancel out. */
#define FREOPEN_HOOK_BODY(call)                                                \
	do {                                                                   \
		if (!should_record_res(__builtin_return_address(0)))           \
			return call;                                           \
		record_close(stream_fd(f));                                    \
		FOPEN_HOOK_BODY(call);                                         \
	} while (0)

HT_EXPORT FILE *freopen(const char *path, const char *mode, FILE *f)
{
	FREOPEN_HOOK_BODY(REAL(freopen)(path, mode, f));
}

HT_EXPORT FILE *freopen64(const char *path, const char *mode, FILE *f)
{
	FREOPEN_HOOK_BODY(REAL(freopen64)(path, mode, f));
}

HT_EXPORT int fclose(FILE *f)
{
	if (!should_record_res(__builtin_return_address(0)))
		return REAL(fclose)(f);
	record_close(stream_fd(f));
	return real_fclose(f);
}

/* ---- handles (heaptrail.h) --------------------------------------------------------------
 * heaptrail_handle_acquire/release: the program's own resources (jobs,
 * channels, GPU buffers...) of a kind named like a tag. The stack is the
 * program's call of the inline wrapper. */

HT_EXPORT int heaptrail_agent_handle_acquire(const char *kind, uintptr_t handle);
int heaptrail_agent_handle_acquire(const char *kind, uintptr_t handle)
{
	if (!kind || ht_guard || !atomic_load_explicit(&ht_recording_on, memory_order_relaxed) ||
	    atomic_load_explicit(&ht_state, memory_order_relaxed) != HT_STATE_RECORDING)
		return 0;
	int e = errno;
	ht_guard = 1;
	ht_thread_t *t = ht_thread_get();
	if (t && ht_event_begin(t)) {
		uint32_t id = ht_name_intern(t, kind);
		if (id) {
			uint64_t f[3] = {id, handle, ht_capture(t)};
			ht_put_ext(t, HT_EXT_HANDLE_ACQUIRE, f, 3);
		}
		atomic_store_explicit(&t->in_event, 0, memory_order_relaxed);
	}
	ht_guard = 0;
	ht_transient_end();
	errno = e;
	return 0;
}

HT_EXPORT int heaptrail_agent_handle_release(const char *kind, uintptr_t handle);
int heaptrail_agent_handle_release(const char *kind, uintptr_t handle)
{
	if (!kind || ht_guard ||
	    atomic_load_explicit(&ht_state, memory_order_relaxed) != HT_STATE_RECORDING)
		return 0;
	int e = errno;
	ht_guard = 1;
	ht_thread_t *t = ht_thread_get();
	if (t && ht_event_begin(t)) {
		uint32_t id = ht_name_intern(t, kind);
		if (id) {
			uint64_t f[2] = {id, handle};
			ht_put_ext(t, HT_EXT_HANDLE_RELEASE, f, 2);
		}
		atomic_store_explicit(&t->in_event, 0, memory_order_relaxed);
	}
	ht_guard = 0;
	ht_transient_end();
	errno = e;
	return 0;
}
