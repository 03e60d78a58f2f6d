/* attach.c - `heaptrail attach PID` and `heaptrail detach PID`.
 *
 * The agent is loaded with ptrace alone (no debugger): one thread of the
 * process is stopped at a moment when it holds none of libc's or the
 * loader's locks, made to call libc's dlopen on libheaptrail.so, then the
 * agent's heaptrail_attach_start (agent/attach.c), and put back exactly as
 * it was: its registers, vector state and signal mask, an interrupted
 * system call restarted by the kernel as after any stop. Only that thread
 * stops; the others run on, so a lock one of them holds is let go while
 * dlopen waits for it. The call returns to address 0: the fault that
 * follows is the tracer's sign that the function returned, and it never
 * reaches the program.
 *
 * The detach stops nothing: heaptrail writes the agent's request word with
 * process_vm_writev and the agent's own thread puts the slots back and
 * finishes the trace, while heaptrail reads its state.
 */
#include "cli/attach.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/run.h"
#include "cli/opts.h"
#include "analysis/safe.h"
#include "analysis/model.h"
#include "analysis/reader.h"
#include "analysis/util.h"

/* The agent's control block (agent/attach.c): the same layout. */
enum {
	ST_LOADED = 0,
	ST_RECORDING = 1,
	ST_STOPPING = 2,
	ST_DETACHED = 3,
	ST_FAILED = 4,
	ST_ENDED = 5,
	ST_REFUSED = 6, /* an attach was refused before the agent started */
	ST_PRELOADED = 7,
};
struct ctl {
	uint32_t version, request, status, slots;
	uint64_t patch_ns, restore_ns, objects;
	char path[4096];
	char error[512];
};
#define CTL_VERSION 1

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_us(long us)
{
	struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
	nanosleep(&ts, NULL);
}

bool ht_parse_duration(const char *s, double *seconds)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || errno || v < 0)
		return false;
	if (!*end || !strcmp(end, "s"))
		*seconds = v;
	else if (!strcmp(end, "ms"))
		*seconds = v / 1000;
	else if (!strcmp(end, "m") || !strcmp(end, "min"))
		*seconds = v * 60;
	else if (!strcmp(end, "h"))
		*seconds = v * 3600;
	else
		return false;
	return *seconds > 0;
}

/* ---- the process's maps and ELF symbols ---------------------------------- */

typedef struct map {
	uint64_t lo, hi, off;
	char path[512];
} map_t;

typedef struct maps {
	map_t *m;
	size_t n;
} maps_t;

/* The thread's state letter from stat ('R', 'S', 'T', 'Z', ...), or 0. */
static char task_state(const char *dir)
{
	char p[96], stat[512] = "";
	snprintf(p, sizeof p, "%s/stat", dir);
	FILE *f = fopen(p, "re");
	if (f) {
		if (!fgets(stat, sizeof stat, f))
			stat[0] = 0;
		fclose(f);
	}
	const char *paren = strrchr(stat, ')');
	return paren && paren[1] == ' ' ? paren[2] : 0;
}

/* /proc/PID, or, when the main thread has ended (pthread_exit: /proc/PID
 * then shows no executable and no maps), /proc/PID/task/TID of a live one. */
static void proc_dir(pid_t pid, char *buf, size_t len)
{
	snprintf(buf, len, "/proc/%d", (int)pid);
	if (task_state(buf) != 'Z')
		return;
	char tp[64];
	snprintf(tp, sizeof tp, "/proc/%d/task", (int)pid);
	int dfd = open(tp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return;
	char d[8192];
	long n;
	while ((n = syscall(SYS_getdents64, dfd, d, sizeof d)) > 0)
		for (long off = 0; off < n;) {
			struct dent {
				uint64_t ino;
				int64_t off;
				unsigned short reclen;
				unsigned char type;
				char name[];
			} *e = (void *)(d + off);
			long tid = atol(e->name);
			off += e->reclen;
			char c[96];
			snprintf(c, sizeof c, "/proc/%d/task/%ld", (int)pid, tid);
			if (tid > 0 && tid != pid && task_state(c) != 'Z') {
				snprintf(buf, len, "%s", c);
				close(dfd);
				return;
			}
		}
	close(dfd);
}

/* A thread whose id reaches the process's memory (process_vm_readv): the
 * process's id, or a live thread's when the main thread has ended. */
static pid_t mem_tid(pid_t pid)
{
	char dir[96];
	proc_dir(pid, dir, sizeof dir);
	const char *t = strstr(dir, "/task/");
	return t ? (pid_t)atol(t + 6) : pid;
}

static int read_maps(pid_t pid, maps_t *out)
{
	char p[128], line[1024], dir[96];
	proc_dir(pid, dir, sizeof dir);
	snprintf(p, sizeof p, "%s/maps", dir);
	FILE *f = fopen(p, "re");
	if (!f)
		return -errno;
	size_t cap = 0;
	out->n = 0;
	while (fgets(line, sizeof line, f)) {
		map_t m = {0};
		int at = 0;
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %*s %" SCNx64 " %*s %*s %n", &m.lo, &m.hi,
			   &m.off, &at) < 3)
			continue;
		char *path = line + at;
		path[strcspn(path, "\n")] = 0;
		snprintf(m.path, sizeof m.path, "%s", path);
		if (out->n == cap) {
			cap = cap ? cap * 2 : 256;
			map_t *g = realloc(out->m, cap * sizeof *g);
			if (!g) {
				fclose(f);
				return -ENOMEM;
			}
			out->m = g;
		}
		out->m[out->n++] = m;
	}
	fclose(f);
	return 0;
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

static bool is_libc(const char *path)
{
	const char *b = base_name(path);
	return !strncmp(b, "libc.so", 7) || (!strncmp(b, "libc-", 5) && strstr(b, ".so"));
}

/* Where the loader keeps its locks and malloc its arenas: a thread stopped
 * with its pc in one of these may hold them. */
static bool is_unsafe_object(const char *path)
{
	const char *b = base_name(path);
	return is_libc(path) || !strncmp(b, "ld-linux", 8) || !strncmp(b, "ld-2.", 5) ||
	       !strncmp(b, "libpthread.so", 13) || !strncmp(b, "libpthread-", 11) ||
	       !strncmp(b, "libdl.so", 8) || !strncmp(b, "libdl-", 6);
}

/* The first mapping of the file whose basename test accepts. */
static const map_t *find_map(const maps_t *ms, bool (*test)(const char *))
{
	for (size_t i = 0; i < ms->n; i++)
		if (ms->m[i].path[0] == '/' && test(ms->m[i].path))
			return &ms->m[i];
	return NULL;
}

/* The load bias of the file mapped at path: its offset-0 mapping's start
 * less the first segment's address. */
static bool load_bias(const maps_t *ms, const char *path, uint64_t first_vaddr, uint64_t *bias)
{
	for (size_t i = 0; i < ms->n; i++)
		if (!strcmp(ms->m[i].path, path) && ms->m[i].off == 0) {
			*bias = ms->m[i].lo - (first_vaddr & ~(uint64_t)0xfff);
			return true;
		}
	return false;
}

typedef struct elf {
	uint8_t *data;
	size_t size;
	uint64_t first_vaddr;
	bool has_interp;
	unsigned machine, cls;
} elf_t;

static int elf_load(const char *path, elf_t *e)
{
	memset(e, 0, sizeof *e);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
		close(fd);
		return -ENOEXEC;
	}
	e->size = (size_t)st.st_size;
	e->data = malloc(e->size);
	size_t got = 0;
	while (e->data && got < e->size) {
		ssize_t r = read(fd, e->data + got, e->size - got);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	if (!e->data || got < e->size || memcmp(e->data, ELFMAG, SELFMAG)) {
		free(e->data);
		e->data = NULL;
		return -ENOEXEC;
	}
	e->cls = e->data[EI_CLASS];
	const Elf64_Ehdr *h = (const Elf64_Ehdr *)e->data;
	e->machine = h->e_machine;
	if (e->cls != ELFCLASS64)
		return 0;
	e->first_vaddr = UINT64_MAX;
	for (unsigned i = 0; i < h->e_phnum; i++) {
		uint64_t at = h->e_phoff + (uint64_t)i * h->e_phentsize;
		if (at + sizeof(Elf64_Phdr) > e->size)
			break;
		const Elf64_Phdr *ph = (const Elf64_Phdr *)(e->data + at);
		if (ph->p_type == PT_INTERP)
			e->has_interp = true;
		if (ph->p_type == PT_LOAD && ph->p_vaddr < e->first_vaddr)
			e->first_vaddr = ph->p_vaddr;
	}
	return 0;
}

/* The value of the dynamic symbol name (its default version first), or 0. */
static uint64_t elf_sym(const elf_t *e, const char *name)
{
	const Elf64_Ehdr *h = (const Elf64_Ehdr *)e->data;
	if (e->cls != ELFCLASS64 || h->e_shoff + (uint64_t)h->e_shnum * sizeof(Elf64_Shdr) > e->size)
		return 0;
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(e->data + h->e_shoff);
	const Elf64_Shdr *dynsym = NULL, *versym = NULL;
	for (unsigned i = 0; i < h->e_shnum; i++) {
		if (sh[i].sh_type == SHT_DYNSYM)
			dynsym = &sh[i];
		else if (sh[i].sh_type == SHT_GNU_versym)
			versym = &sh[i];
	}
	if (!dynsym || dynsym->sh_link >= h->e_shnum)
		return 0;
	const Elf64_Shdr *strs = &sh[dynsym->sh_link];
	if (dynsym->sh_offset + dynsym->sh_size > e->size || strs->sh_offset + strs->sh_size > e->size)
		return 0;
	const Elf64_Sym *sy = (const Elf64_Sym *)(e->data + dynsym->sh_offset);
	size_t n = dynsym->sh_size / sizeof *sy;
	const uint16_t *ver = versym && versym->sh_offset + n * 2 <= e->size
				      ? (const uint16_t *)(e->data + versym->sh_offset) : NULL;
	uint64_t hidden = 0;
	for (size_t i = 0; i < n; i++) {
		if (sy[i].st_name >= strs->sh_size || sy[i].st_shndx == SHN_UNDEF || !sy[i].st_value)
			continue;
		if (strcmp((const char *)e->data + strs->sh_offset + sy[i].st_name, name))
			continue;
		if (ver && (ver[i] & 0x8000)) {
			hidden = sy[i].st_value;
			continue;
		}
		return sy[i].st_value;
	}
	return hidden;
}

/* path as the process sees it (its root may not be ours) */
static void proc_path(char *buf, size_t len, pid_t pid, const char *path)
{
	int n = snprintf(buf, len, "/proc/%d/root%s", (int)pid, path);
	if (n < 0 || (size_t)n >= len || access(buf, R_OK))
		snprintf(buf, len, "%s", path);
}

/* ---- memory ------------------------------------------------------------------ */

static int mem_write(pid_t pid, uint64_t addr, const void *buf, size_t len)
{
	struct iovec l = {(void *)buf, len}, r = {(void *)(uintptr_t)addr, len};
	ssize_t n = process_vm_writev(pid, &l, 1, &r, 1, 0);
	return n == (ssize_t)len ? 0 : -(errno ? errno : EIO);
}

static int mem_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec l = {buf, len}, r = {(void *)(uintptr_t)addr, len};
	ssize_t n = process_vm_readv(pid, &l, 1, &r, 1, 0);
	return n == (ssize_t)len ? 0 : -(errno ? errno : EIO);
}

static void read_cstr(pid_t pid, uint64_t addr, char *buf, size_t len)
{
	buf[0] = 0;
	for (size_t n = len - 1; n >= 16; n /= 2) /* a string near a map's end */
		if (!mem_read(pid, addr, buf, n)) {
			buf[n] = 0;
			return;
		}
}

/* ---- the stopped thread -------------------------------------------------------- */

typedef struct thread {
	pid_t pid, tid;
	struct user_regs_struct regs;
	uint8_t xstate[16384];
	struct iovec xs;
	uint64_t mask;
	bool have_x;
} thread_t;

/* The mapping pc is in, or NULL. */
static const map_t *map_of(const maps_t *ms, uint64_t pc)
{
	for (size_t i = 0; i < ms->n; i++)
		if (pc >= ms->m[i].lo && pc < ms->m[i].hi)
			return &ms->m[i];
	return NULL;
}

static bool is_loader(const char *path)
{
	const char *b = base_name(path);
	return !strncmp(b, "ld-linux", 8) || !strncmp(b, "ld-2.", 5);
}

/* Whether a thread stopped with regs can run the loader: its pc is out of
 * libc and the loader, or it waits in a system call in libc that is not
 * malloc's own (mmap, brk, ... inside an arena's lock). Never in the
 * loader, even in a system call: it makes them holding its lock, in the
 * middle of changing its list of objects (a dlopen reading a file). */
static bool safe_point(const maps_t *ms, const struct user_regs_struct *r)
{
	const map_t *m = map_of(ms, r->rip);
	if (!m || !is_unsafe_object(m->path))
		return true;
	long nr = (long)r->orig_rax;
	if (nr < 0 || is_loader(m->path))
		return false;
	switch (nr) {
	case SYS_mmap: case SYS_munmap: case SYS_mprotect: case SYS_brk:
	case SYS_madvise: case SYS_mremap:
		return false;
	}
	return true;
}

/* Waits up to timeout_ms for tid's next stop (its status): 0, -1 if the
 * process is gone, -2 on the timeout. */
static int wait_stop_for(pid_t tid, int *status, int timeout_ms)
{
	double until = now_s() + timeout_ms / 1e3;
	long us = 20;
	for (;;) {
		pid_t w = waitpid(tid, status, __WALL | WNOHANG);
		if (w == tid)
			return WIFSTOPPED(*status) ? 0 : -1;
		if (w < 0 && errno != EINTR)
			return -1;
		if (now_s() >= until)
			return -2;
		sleep_us(us);
		if (us < 1000)
			us *= 2;
	}
}

static int wait_stop(pid_t tid, int *status)
{
	return wait_stop_for(tid, status, 1000) == 0 ? 0 : -1;
}

/* System calls that the kernel does not restart after a stop but fail
 * with EINTR (signal(7): epoll_wait, sigtimedwait, semop, io_getevents...;
 * gdb's and strace's attach do that to them too). */
static bool nr_eintr_prone(long nr)
{
	switch (nr) {
	case SYS_epoll_wait: case SYS_epoll_pwait: case SYS_rt_sigtimedwait:
	case SYS_semop: case SYS_semtimedop: case SYS_io_getevents:
#ifdef SYS_epoll_pwait2
	case SYS_epoll_pwait2:
#endif
#ifdef SYS_io_pgetevents
	case SYS_io_pgetevents:
#endif
		return true;
	}
	return false;
}

/* Whether thread tid waits in a system call that a stop makes fail with
 * EINTR. Read from /proc without stopping it. */
static bool eintr_prone(pid_t pid, pid_t tid)
{
	char p[96], line[64] = "";
	snprintf(p, sizeof p, "/proc/%d/task/%d/syscall", (int)pid, (int)tid);
	FILE *f = fopen(p, "re");
	if (!f)
		return false;
	if (!fgets(line, sizeof line, f))
		line[0] = 0;
	fclose(f);
	char *end;
	long nr = strtol(line, &end, 10);
	return end != line && nr_eintr_prone(nr); /* else "running" */
}

/* Set by stop_safe when the process was stopped (SIGSTOP, SIGTSTP) by the
 * time its thread stopped for heaptrail. */
static bool group_stopped;

/* Stops tid at a safe point; false if it reached none (tid stopped, or
 * gone). A thread waiting where a stop makes it fail with EINTR is given
 * up to half a second to come out first. */
static bool stop_safe(thread_t *t, const maps_t *ms, int tries)
{
	for (int k = 0; k < tries; k++) {
		for (int w = 0; w < 500 && eintr_prone(t->pid, t->tid); w++)
			sleep_us(1000);
		if (ptrace(PTRACE_INTERRUPT, t->tid, 0, 0))
			return false;
		int st;
		for (;;) {
			if (wait_stop(t->tid, &st))
				return false;
			if ((st >> 16) == PTRACE_EVENT_STOP && WSTOPSIG(st) != SIGTRAP) {
				/* a group stop (the process was being stopped): it
				 * stays stopped once detached */
				group_stopped = true;
				return false;
			}
			if ((st >> 16) == PTRACE_EVENT_STOP)
				break;
			/* a signal on its way to the program: it goes on its way */
			if (ptrace(PTRACE_CONT, t->tid, 0, (void *)(long)WSTOPSIG(st)))
				return false;
		}
		if (ptrace(PTRACE_GETREGS, t->tid, 0, &t->regs))
			return false;
		if (safe_point(ms, &t->regs))
			return true;
		if (k + 1 == tries)
			break; /* left stopped: PTRACE_DETACH needs that */
		if (ptrace(PTRACE_CONT, t->tid, 0, 0))
			return false;
		sleep_us(k < 10 ? 50 : 1000);
	}
	return false;
}

/* Calls fn(a0, a1) in the stopped thread on a stack below sp; the result
 * in *ret. 0, or an error message in err. */
static int call_in(thread_t *t, uint64_t fn, uint64_t a0, uint64_t a1, uint64_t sp,
		   uint64_t *ret, char *err, size_t elen)
{
	struct user_regs_struct r = t->regs;
	uint64_t zero = 0;
	if (mem_write(t->tid, sp, &zero, sizeof zero)) {
		snprintf(err, elen, "cannot write the thread's stack: %s", strerror(errno));
		return -1;
	}
	r.rip = fn;
	r.rdi = a0;
	r.rsi = a1;
	r.rax = 0;
	r.rsp = sp; /* (sp + 8) % 16 == 0: as after a call */
	r.orig_rax = (unsigned long long)-1; /* not in a system call: no restart of ours */
	r.eflags &= ~0x400ull;		     /* the ABI's direction flag, clear */
	if (ptrace(PTRACE_SETREGS, t->tid, 0, &r) || ptrace(PTRACE_CONT, t->tid, 0, 0)) {
		snprintf(err, elen, "ptrace: %s", strerror(errno));
		return -1;
	}
	bool said = false;
	for (;;) {
		int st, w;
		while ((w = wait_stop_for(t->tid, &st, 5000)) == -2) {
			if (!said)
				fprintf(stderr, "heaptrail: still waiting for the process's thread %d "
						"to return from the agent's loading...\n",
					(int)t->tid);
			said = true;
		}
		if (w) {
			snprintf(err, elen, "the process ended during the call");
			return -2;
		}
		int sig = WSTOPSIG(st);
		if ((st >> 16) == PTRACE_EVENT_STOP)
			sig = 0;
		else if (sig == SIGSEGV) {
			struct user_regs_struct now;
			if (ptrace(PTRACE_GETREGS, t->tid, 0, &now)) {
				snprintf(err, elen, "ptrace: %s", strerror(errno));
				return -1;
			}
			if (now.rip == 0) {
				*ret = now.rax;
				return 0;
			}
			snprintf(err, elen, "the call faulted at 0x%llx", (unsigned long long)now.rip);
			return -1;
		}
		if (ptrace(PTRACE_CONT, t->tid, 0, (void *)(long)sig)) {
			snprintf(err, elen, "ptrace: %s", strerror(errno));
			return -1;
		}
	}
}

/* ---- refusals ------------------------------------------------------------------- */

static void permission_hint(pid_t pid, const char *why)
{
	char scope[16] = "";
	FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
	if (f) {
		if (!fgets(scope, sizeof scope, f))
			scope[0] = 0;
		scope[strcspn(scope, "\n")] = 0;
		fclose(f);
	}
	fprintf(stderr,
		"heaptrail: cannot attach to process %d: %s. ptrace is not permitted: the process "
		"belongs to another user, or heaptrail lacks CAP_SYS_PTRACE",
		(int)pid, why);
	if (scope[0] && strcmp(scope, "0"))
		fprintf(stderr, ", or kernel.yama.ptrace_scope is %s (1: only a parent may trace; "
				"run heaptrail as root, or set it to 0)",
			scope);
	fprintf(stderr, ". The process was not touched.\n");
}

/* The signals pid ignores (SigIgn), bit N-1 for signal N. */
static uint64_t ignored_signals(pid_t pid)
{
	char p[64], line[256];
	snprintf(p, sizeof p, "/proc/%d/status", (int)pid);
	FILE *f = fopen(p, "re");
	unsigned long long mask = 0;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "SigIgn: %llx", &mask) == 1)
			break;
	if (f)
		fclose(f);
	return mask;
}

static pid_t tracer_of(pid_t pid)
{
	char p[64], line[256];
	snprintf(p, sizeof p, "/proc/%d/status", (int)pid);
	FILE *f = fopen(p, "re");
	long tracer = 0;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "TracerPid: %ld", &tracer) == 1)
			break;
	if (f)
		fclose(f);
	return (pid_t)tracer;
}

static void comm_of(pid_t pid, char *buf, size_t len)
{
	char p[64];
	snprintf(p, sizeof p, "/proc/%d/comm", (int)pid);
	FILE *f = fopen(p, "re");
	buf[0] = 0;
	if (f) {
		if (!fgets(buf, (int)len, f))
			buf[0] = 0;
		fclose(f);
	}
	buf[strcspn(buf, "\n")] = 0;
	for (char *c = buf; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
}

/* The agent in pid: its control block's address. 1 when not loaded. */
static int find_ctl(pid_t pid, const maps_t *ms, uint64_t *ctl_addr, char *agent_path, size_t len)
{
	for (size_t i = 0; i < ms->n; i++) {
		if (strcmp(base_name(ms->m[i].path), "libheaptrail.so") || ms->m[i].off)
			continue;
		char p[PATH_MAX];
		proc_path(p, sizeof p, pid, ms->m[i].path);
		elf_t e;
		if (elf_load(p, &e))
			return -1;
		uint64_t v = elf_sym(&e, "heaptrail_attach_ctl"), bias;
		bool ok = v && load_bias(ms, ms->m[i].path, e.first_vaddr, &bias);
		free(e.data);
		if (!ok)
			return -1;
		*ctl_addr = bias + v;
		snprintf(agent_path, len, "%s", ms->m[i].path);
		return 0;
	}
	return 1;
}

static int read_ctl(pid_t pid, uint64_t at, struct ctl *c)
{
	int e = mem_read(mem_tid(pid), at, c, sizeof *c);
	if (e)
		return e;
	c->path[sizeof c->path - 1] = 0;
	c->error[sizeof c->error - 1] = 0;
	return c->version == CTL_VERSION ? 0 : -EPROTO;
}

/* ---- attach ---------------------------------------------------------------------- */

static volatile sig_atomic_t stop_sig;
static void on_stop(int sig)
{
	stop_sig = sig;
}

static bool alive(pid_t pid)
{
	return kill(pid, 0) == 0 || errno == EPERM;
}

/* The agent's options: its HEAPTRAIL_OPTIONS syntax. */
static int agent_options(const ht_attach_opts_t *o, const char *out, char *buf, size_t len)
{
	int n = snprintf(buf, len, "output=%s,follow_fork=0,mmap=0", out);
	if (o->depth)
		n += snprintf(buf + n, len - (size_t)n, ",depth=%u", o->depth);
	if (o->unwind)
		n += snprintf(buf + n, len - (size_t)n, ",unwind=%s", o->unwind);
	if (o->no_leak_check)
		n += snprintf(buf + n, len - (size_t)n, ",leak_check=0");
	if (o->free_stacks)
		n += snprintf(buf + n, len - (size_t)n, ",free_stacks=1");
	if (o->sample_rate)
		n += snprintf(buf + n, len - (size_t)n, ",sample_rate=%llu", o->sample_rate);
	return n < (int)len ? 0 : -ENAMETOOLONG;
}

/* Loads the agent into pid and starts it. 0, or 1 having said why. */
static int inject(pid_t pid, const char *agent, const char *opts, double *pause_s,
		  uint64_t *ctl_at)
{
	char comm[64], p[PATH_MAX];
	comm_of(pid, comm, sizeof comm);
	/* the program: a 64-bit x86 one, dynamically linked */
	char dir[96];
	proc_dir(pid, dir, sizeof dir);
	snprintf(p, sizeof p, "%s/exe", dir);
	elf_t exe;
	int e = elf_load(p, &exe);
	if (e == -EACCES || e == -EPERM) {
		permission_hint(pid, "its executable cannot be read");
		return 1;
	}
	if (e) {
		fprintf(stderr, "heaptrail: cannot read the executable of process %d (%s): %s\n",
			(int)pid, HT_TEXT(comm), strerror(-e));
		return 1;
	}
	free(exe.data);
	if (exe.cls != ELFCLASS64 || exe.machine != EM_X86_64) {
		fprintf(stderr, "heaptrail: process %d (%s) is not an x86-64 program: heaptrail attach "
				"supports x86-64 only. The process was not touched.\n",
			(int)pid, HT_TEXT(comm));
		return 1;
	}
	if (!exe.has_interp) {
		fprintf(stderr, "heaptrail: process %d (%s) runs a statically linked program: there is "
				"no dynamic loader in it to load the agent with (use heaptrail run on a "
				"dynamically linked build). The process was not touched.\n",
			(int)pid, HT_TEXT(comm));
		return 1;
	}
	char state = task_state(dir);
	if (state == 'T' || state == 't' || state == 'Z') {
		fprintf(stderr, "heaptrail: process %d (%s) is %s: heaptrail attach needs it running%s. "
				"The process was not touched.\n",
			(int)pid, HT_TEXT(comm),
			state == 'Z' ? "a zombie" : "stopped (SIGSTOP, or a debugger's stop)",
			state == 'Z' ? "" : "; continue it first");
		return 1;
	}
	/* the calls end in a fault at address 0; the kernel resets an ignored
	 * SIGSEGV to its default when it forces one */
	if (ignored_signals(pid) & (1ull << (SIGSEGV - 1))) {
		fprintf(stderr, "heaptrail: process %d (%s) ignores SIGSEGV, which heaptrail attach "
				"would reset to its default. The process was not touched.\n",
			(int)pid, HT_TEXT(comm));
		return 1;
	}
	pid_t tracer = tracer_of(pid);
	if (tracer) {
		char tc[64];
		comm_of(tracer, tc, sizeof tc);
		fprintf(stderr, "heaptrail: process %d (%s) is already traced by process %d (%s): a "
				"process has one tracer at a time. The process was not touched.\n",
			(int)pid, HT_TEXT(comm), (int)tracer, HT_TEXT(tc));
		return 1;
	}
	maps_t ms = {0};
	if ((e = read_maps(pid, &ms))) {
		if (e == -EACCES || e == -EPERM)
			permission_hint(pid, "its memory map cannot be read");
		else
			fprintf(stderr, "heaptrail: cannot read the maps of process %d: %s\n", (int)pid,
				strerror(-e));
		return 1;
	}
	char had[PATH_MAX];
	uint64_t old_ctl;
	struct ctl old;
	int found = find_ctl(pid, &ms, &old_ctl, had, sizeof had);
	int got = found == 1 ? -1 : read_ctl(pid, old_ctl, &old);
	/* loaded by an attach that was refused before the agent started: the
	 * agent may start now */
	if (found != 1 && (got || (old.status != ST_LOADED && old.status != ST_REFUSED))) {
		fprintf(stderr, "heaptrail: process %d (%s) has heaptrail's agent loaded already (%s): %s. "
				"The process was not touched.\n",
			(int)pid, HT_TEXT(comm), HT_TEXT(had),
			!got && old.status == ST_RECORDING ? "it is attached now; heaptrail detach stops that"
			: !got && old.status == ST_PRELOADED
				? "it runs under heaptrail run (or LD_PRELOAD)"
				: "it was attached before, and the agent starts once per process");
		free(ms.m);
		return 1;
	}
	const map_t *libc = find_map(&ms, is_libc);
	if (!libc) {
		fprintf(stderr, "heaptrail: process %d (%s) has no libc mapped (not a glibc program?): "
				"nothing to load the agent with. The process was not touched.\n",
			(int)pid, HT_TEXT(comm));
		free(ms.m);
		return 1;
	}
	char libc_path[PATH_MAX];
	proc_path(libc_path, sizeof libc_path, pid, libc->path);
	elf_t lc;
	uint64_t bias = 0, dlopen_at = 0, dlerror_at = 0;
	unsigned long mode = 2; /* RTLD_NOW */
	if (!elf_load(libc_path, &lc)) {
		dlopen_at = elf_sym(&lc, "dlopen");
		dlerror_at = elf_sym(&lc, "dlerror");
		if (!dlopen_at) { /* before glibc 2.34: libc's private entry */
			dlopen_at = elf_sym(&lc, "__libc_dlopen_mode");
			mode |= 0x80000000ul; /* __RTLD_DLOPEN */
			dlerror_at = 0;
		}
		if (!load_bias(&ms, libc->path, lc.first_vaddr, &bias))
			dlopen_at = 0;
		free(lc.data);
	}
	if (!dlopen_at) {
		fprintf(stderr, "heaptrail: cannot find dlopen in %s of process %d. The process was not "
				"touched.\n",
			HT_TEXT(libc->path), (int)pid);
		free(ms.m);
		return 1;
	}
	dlopen_at += bias;
	if (dlerror_at)
		dlerror_at += bias;

	/* a thread to borrow: the main thread first */
	pid_t tids[4096];
	size_t nt = 0;
	char lead[64];
	snprintf(lead, sizeof lead, "/proc/%d", (int)pid);
	if (task_state(lead) != 'Z') /* not ended by pthread_exit */
		tids[nt++] = pid;
	{
		char cmd[96];
		snprintf(cmd, sizeof cmd, "/proc/%d/task", (int)pid);
		int dfd = open(cmd, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd >= 0) {
			char buf[8192];
			long n;
			while ((n = syscall(SYS_getdents64, dfd, buf, sizeof buf)) > 0) {
				for (long off = 0; off < n;) {
					struct {
						uint64_t ino;
						int64_t off;
						unsigned short reclen;
						unsigned char type;
						char name[];
					} *d = (void *)(buf + off);
					long tid = atol(d->name);
					if (tid > 0 && tid != pid && nt < sizeof tids / sizeof *tids)
						tids[nt++] = (pid_t)tid;
					off += d->reclen;
				}
			}
			close(dfd);
		}
	}
	/* the threads that a stop would not make fail with EINTR first, the
	 * main thread first among them */
	for (size_t i = 0, j = 0; i < nt; i++)
		if (!eintr_prone(pid, tids[i])) {
			pid_t x = tids[i];
			memmove(&tids[j + 1], &tids[j], (i - j) * sizeof *tids);
			tids[j++] = x;
		}
	static thread_t t;
	memset(&t, 0, sizeof t);
	t.pid = pid;
	bool stopped = false;
	double t_stop = 0;
	for (size_t i = 0; i < nt && !stopped; i++) {
		t.tid = tids[i];
		if (ptrace(PTRACE_SEIZE, t.tid, 0, 0)) {
			if (errno == ESRCH)
				continue; /* the thread ended */
			if (errno == EPERM || errno == EACCES) {
				if (tracer_of(pid)) {
					fprintf(stderr, "heaptrail: process %d (%s) is already traced by "
							"process %d. The process was not touched.\n",
						(int)pid, HT_TEXT(comm), (int)tracer_of(pid));
				} else {
					permission_hint(pid, strerror(errno));
				}
				free(ms.m);
				return 1;
			}
			fprintf(stderr, "heaptrail: cannot attach to process %d: %s\n", (int)pid,
				strerror(errno));
			free(ms.m);
			return 1;
		}
		if (stop_safe(&t, &ms, 400)) {
			stopped = true;
			t_stop = now_s();
		} else {
			ptrace(PTRACE_DETACH, t.tid, 0, 0);
			if (group_stopped)
				break;
		}
	}
	free(ms.m);
	if (group_stopped) {
		fprintf(stderr, "heaptrail: process %d (%s) is stopped (SIGSTOP, or a debugger's stop): "
				"heaptrail attach needs it running; continue it first. The process was "
				"not touched.\n",
			(int)pid, HT_TEXT(comm));
		return 1;
	}
	if (!stopped) {
		fprintf(stderr, "heaptrail: no thread of process %d (%s) came out of libc's allocator "
				"or the loader within a second: not attached, the process runs on "
				"untouched\n",
			(int)pid, HT_TEXT(comm));
		return 1;
	}
	if ((long)t.regs.orig_rax >= 0 && nr_eintr_prone((long)t.regs.orig_rax) &&
	    (long)t.regs.rax == -EINTR)
		fprintf(stderr, "heaptrail: note: thread %d of process %d was waiting in system call %ld, "
				"which fails with EINTR after any stop (as under gdb or strace -p); "
				"programs retry it\n",
			(int)t.tid, (int)pid, (long)t.regs.orig_rax);
	/* what the thread had: registers, vector state, signal mask */
	t.xs.iov_base = t.xstate;
	t.xs.iov_len = sizeof t.xstate;
	t.have_x = ptrace(PTRACE_GETREGSET, t.tid, (void *)(long)NT_X86_XSTATE, &t.xs) == 0;
	bool have_mask = ptrace(PTRACE_GETSIGMASK, t.tid, (void *)sizeof t.mask, &t.mask) == 0;
	/* only the synchronous signals open during the calls: a handler of the
	 * program's would find its thread in the middle of dlopen */
	uint64_t block = ~0ull;
	static const int open_sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS};
	for (size_t k = 0; k < sizeof open_sigs / sizeof *open_sigs; k++)
		block &= ~(1ull << (open_sigs[k] - 1));
	if (have_mask)
		ptrace(PTRACE_SETSIGMASK, t.tid, (void *)sizeof block, &block);
	/* the strings on the thread's stack, below its red zone */
	uint64_t cur = (t.regs.rsp - 128 - 256) & ~15ull;
	size_t alen = strlen(agent) + 1, olen = strlen(opts) + 1;
	cur = (cur - alen) & ~15ull;
	uint64_t agent_at = cur;
	cur = (cur - olen) & ~15ull;
	uint64_t opts_at = cur;
	uint64_t sp = cur - 64 - 8;
	char err[PATH_MAX + 1024] = "";
	int rc = 0;
	uint64_t ret = 0;
	if (mem_write(t.tid, agent_at, agent, alen) || mem_write(t.tid, opts_at, opts, olen)) {
		snprintf(err, sizeof err, "cannot write the thread's stack: %s", strerror(errno));
		rc = -1;
	}
	if (!rc && !(rc = call_in(&t, dlopen_at, agent_at, mode, sp, &ret, err, sizeof err)) && !ret) {
		char why[512] = "dlopen failed";
		uint64_t msg = 0;
		if (dlerror_at && !call_in(&t, dlerror_at, 0, 0, sp, &msg, err, sizeof err) && msg)
			read_cstr(t.tid, msg, why, sizeof why);
		snprintf(err, sizeof err, "the process could not load %s: %s", agent, why);
		rc = -1;
	}
	uint64_t start_at = 0;
	if (!rc) {
		maps_t m2 = {0};
		char loaded[PATH_MAX];
		if (read_maps(pid, &m2) || find_ctl(pid, &m2, ctl_at, loaded, sizeof loaded)) {
			snprintf(err, sizeof err, "the agent is not in the process's maps after dlopen");
			rc = -1;
		} else {
			char lp[PATH_MAX];
			proc_path(lp, sizeof lp, pid, loaded);
			elf_t ae;
			uint64_t b;
			if (!elf_load(lp, &ae)) {
				start_at = elf_sym(&ae, "heaptrail_attach_start");
				if (start_at && load_bias(&m2, loaded, ae.first_vaddr, &b))
					start_at += b;
				else
					start_at = 0;
				free(ae.data);
			}
			if (!start_at) {
				snprintf(err, sizeof err, "no heaptrail_attach_start in %s (an older agent?)",
					 loaded);
				rc = -1;
			}
		}
		free(m2.m);
	}
	if (!rc && !(rc = call_in(&t, start_at, opts_at, 0, sp, &ret, err, sizeof err)) && ret) {
		char why[512];
		read_cstr(t.tid, ret, why, sizeof why);
		snprintf(err, sizeof err, "the agent did not start: %s", why);
		rc = -1;
	}
	/* the thread as it was; a system call it was in is restarted by the
	 * kernel as after any stop (its orig_rax and -ERESTART* are back) */
	if (rc != -2) {
		if (t.have_x)
			ptrace(PTRACE_SETREGSET, t.tid, (void *)(long)NT_X86_XSTATE, &t.xs);
		ptrace(PTRACE_SETREGS, t.tid, 0, &t.regs);
		if (have_mask)
			ptrace(PTRACE_SETSIGMASK, t.tid, (void *)sizeof t.mask, &t.mask);
		ptrace(PTRACE_DETACH, t.tid, 0, 0);
	}
	*pause_s = now_s() - t_stop;
	if (rc) {
		fprintf(stderr, "heaptrail: cannot attach to process %d (%s): %s\n", (int)pid,
			HT_TEXT(comm), HT_TEXT(err));
		return 1;
	}
	return 0;
}

/* Expands %p and %n of the output pattern, absolute. */
static int output_path(const ht_attach_opts_t *o, char *buf, size_t len)
{
	char comm[64];
	comm_of(o->pid, comm, sizeof comm);
	const char *pat = o->output ? o->output : "heaptrail.%n.%p.ht";
	char tmp[PATH_MAX] = "";
	size_t n = 0;
	for (const char *c = pat; *c && n + 32 < sizeof tmp; c++) {
		if (c[0] == '%' && c[1] == 'p') {
			n += (size_t)snprintf(tmp + n, sizeof tmp - n, "%d", (int)o->pid);
			c++;
		} else if (c[0] == '%' && c[1] == 'n') {
			n += (size_t)snprintf(tmp + n, sizeof tmp - n, "%s", comm);
			c++;
		} else {
			tmp[n++] = *c;
			tmp[n] = 0;
		}
	}
	if (strchr(tmp, ',') || strchr(tmp, '%')) {
		fprintf(stderr, "heaptrail: -o %s: a ',' or '%%' cannot be in an attached trace's path\n",
			tmp);
		return -1;
	}
	if (tmp[0] == '/')
		return snprintf(buf, len, "%s", tmp) < (int)len ? 0 : -1;
	char cwd[PATH_MAX];
	if (!getcwd(cwd, sizeof cwd))
		return -1;
	return snprintf(buf, len, "%s/%s", cwd, tmp) < (int)len ? 0 : -1;
}

/* Waits for the agent to finish the trace; 0 when it did. */
static int wait_detached(pid_t pid, uint64_t ctl_at, struct ctl *c, double timeout_s)
{
	double t0 = now_s();
	while (now_s() - t0 < timeout_s) {
		if (read_ctl(pid, ctl_at, c))
			return alive(pid) ? -1 : 1; /* gone: its exit ended the trace */
		if (c->status == ST_DETACHED)
			return 0;
		sleep_us(5000);
	}
	return -1;
}

/* The trace's totals on stderr, as heaptrail run prints them (a trace of
 * at most 64 MiB: a larger one is left to heaptrail report). */
static void summarize(const char *path)
{
	struct stat st;
	if (stat(path, &st) || !S_ISREG(st.st_mode) || st.st_size > (64 << 20))
		return;
	ht_trace_t *t = NULL;
	ht_model_t *m = NULL;
	if (ht_reader_load_file(path, NULL, &t) < 0 || ht_model_build(t, &m)) {
		ht_trace_free(t);
		return;
	}
	const ht_totals_t *tt = &m->totals;
	char a[HT_FMT_LEN], b[HT_FMT_LEN], c[HT_FMT_LEN], d[HT_FMT_LEN], e[HT_FMT_LEN],
		f[HT_FMT_LEN];
	fprintf(stderr, "heaptrail: %s allocations, %s frees (and %s of blocks from before the "
			"attach), %s allocated, peak heap %s, in %s\n",
		ht_fmt_count(a, tt->allocations), ht_fmt_count(b, tt->frees),
		ht_fmt_count(c, tt->ignored_frees), ht_fmt_size(d, tt->bytes_allocated),
		ht_fmt_size(e, tt->peak_heap_bytes), ht_fmt_duration(f, tt->duration_ns));
	fprintf(stderr, "heaptrail: heaptrail report %s\n", HT_TEXT(path));
	ht_model_free(m);
	ht_trace_free(t);
}

int ht_detach(pid_t pid, bool quiet)
{
	maps_t ms = {0};
	char agent[PATH_MAX], comm[64];
	uint64_t at;
	comm_of(pid, comm, sizeof comm);
	int e = read_maps(pid, &ms);
	if (e) {
		if (e == -EACCES || e == -EPERM)
			permission_hint(pid, "its memory map cannot be read");
		else
			fprintf(stderr, "heaptrail: no process %d\n", (int)pid);
		return 1;
	}
	int f = find_ctl(pid, &ms, &at, agent, sizeof agent);
	free(ms.m);
	struct ctl c;
	if (f || read_ctl(pid, at, &c)) {
		fprintf(stderr, "heaptrail: process %d (%s) is not attached: heaptrail's agent is not "
				"loaded in it\n",
			(int)pid, HT_TEXT(comm));
		return 1;
	}
	if (c.status != ST_RECORDING) {
		fprintf(stderr, "heaptrail: process %d (%s) is not attached (%s)\n", (int)pid, HT_TEXT(comm),
			c.status == ST_DETACHED ? "detached already"
			: c.status == ST_ENDED	  ? "its trace ended with an exit or exec"
			: c.status == ST_STOPPING ? "it is detaching now"
						  : "the agent runs under heaptrail run, or never started");
		return 1;
	}
	uint32_t one = 1;
	if ((e = mem_write(mem_tid(pid), at + offsetof(struct ctl, request), &one, sizeof one))) {
		if (e == -EPERM || e == -EACCES)
			permission_hint(pid, "its memory cannot be written");
		else
			fprintf(stderr, "heaptrail: cannot ask process %d to detach: %s\n", (int)pid,
				strerror(-e));
		return 1;
	}
	double t0 = now_s();
	int w = wait_detached(pid, at, &c, 120);
	if (w < 0) {
		char dir[96];
		proc_dir(pid, dir, sizeof dir);
		fprintf(stderr, "heaptrail: process %d did not finish its trace within 2 minutes%s\n",
			(int)pid,
			task_state(dir) == 'T' ? ": it is stopped (SIGSTOP); the trace is finished "
						 "when it is continued"
					       : "");
		return 1;
	}
	if (!quiet) {
		if (w == 0) {
			fprintf(stderr,
				"heaptrail: detached from process %d (%s) in %.1f ms (slots restored in "
				"%.2f ms; the process was not stopped); trace %s\n",
				(int)pid, HT_TEXT(comm), (now_s() - t0) * 1e3, (double)c.restore_ns / 1e6,
				HT_TEXT(c.path));
			summarize(c.path);
		} else {
			fprintf(stderr, "heaptrail: process %d ended; its trace is complete\n", (int)pid);
		}
	}
	return 0;
}

int ht_attach(const ht_attach_opts_t *o)
{
#if !defined(__x86_64__)
	(void)o;
	fprintf(stderr, "heaptrail: heaptrail attach supports x86-64 only\n");
	return 1;
#else
	pid_t pid = o->pid;
	if (!alive(pid)) {
		fprintf(stderr, "heaptrail: no process %d\n", (int)pid);
		return 1;
	}
	char agent[PATH_MAX], out[PATH_MAX], opts[PATH_MAX + 256], why[PATH_MAX + 64];
	if (ht_find_agent(agent, sizeof agent))
		return 1;
	if (output_path(o, out, sizeof out))
		return 1;
	int e = ht_output_dir_check(out, why, sizeof why);
	if (e) {
		fprintf(stderr, "heaptrail: -o %s: %s\n", HT_TEXT(out), HT_TEXT(why));
		return 1;
	}
	if (agent_options(o, out, opts, sizeof opts)) {
		fprintf(stderr, "heaptrail: -o %s: too long\n", out);
		return 1;
	}
	/* Ctrl-C and SIGTERM wait until the injection is over */
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_stop;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigset_t blk, old;
	sigemptyset(&blk);
	sigaddset(&blk, SIGINT);
	sigaddset(&blk, SIGTERM);
	sigaddset(&blk, SIGHUP);
	sigprocmask(SIG_BLOCK, &blk, &old);
	double pause_s = 0;
	uint64_t ctl_at = 0;
	int rc = inject(pid, agent, opts, &pause_s, &ctl_at);
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (rc)
		return 1;
	struct ctl c;
	char comm[64];
	comm_of(pid, comm, sizeof comm);
	if (read_ctl(pid, ctl_at, &c)) {
		fprintf(stderr, "heaptrail: attached, but the agent's state cannot be read\n");
		return 1;
	}
	fprintf(stderr,
		"heaptrail: attached to process %d (%s): one thread paused %.1f ms (agent start and "
		"%u slots in %" PRIu64 " objects: %.2f ms), the others ran on; recording to %s\n",
		(int)pid, HT_TEXT(comm), pause_s * 1e3, c.slots, c.objects, (double)c.patch_ns / 1e6,
		HT_TEXT(c.path));
	char path[sizeof c.path];
	snprintf(path, sizeof path, "%s", c.path);
	if (o->for_seconds > 0)
		fprintf(stderr, "heaptrail: detaching in %g s (Ctrl-C: now)\n", o->for_seconds);
	else
		fprintf(stderr, "heaptrail: Ctrl-C (or heaptrail detach %d) detaches\n", (int)pid);
	double t0 = now_s();
	while (!stop_sig) {
		if (o->for_seconds > 0 && now_s() - t0 >= o->for_seconds)
			break;
		if (read_ctl(pid, ctl_at, &c) || c.status != ST_RECORDING) {
			if (!alive(pid) || read_ctl(pid, ctl_at, &c) || c.status == ST_ENDED) {
				/* its exit finishes the trace: wait for its end */
				for (int i = 0; i < 200 && alive(pid); i++)
					sleep_us(10000);
				fprintf(stderr, "heaptrail: process %d ended; its trace %s is complete\n",
					(int)pid, HT_TEXT(path));
			} else {
				fprintf(stderr, "heaptrail: process %d was detached (heaptrail detach); "
						"trace %s\n",
					(int)pid, HT_TEXT(path));
			}
			summarize(path);
			return 0;
		}
		sleep_us(20000);
	}
	return ht_detach(pid, false);
#endif
}
