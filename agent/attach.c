/* attach.c - the agent loaded into a running process (heaptrail attach).
 *
 * heaptrail attach (cli/attach.c) makes one thread of the process call
 * dlopen on this library, then heaptrail_attach_start. Loaded that late,
 * the agent's malloc is not the one the process's objects bound to: each
 * object calls through its own GOT slots (JUMP_SLOT, GLOB_DAT relocations)
 * resolved to libc's. heaptrail_attach_start starts the agent as at a
 * preloaded start (the trace's time 0 is the attach), then points every
 * loaded object's slots for the malloc family and operator new/delete at
 * the agent's hooks; its control thread points the slots of objects loaded
 * later too (it looks for new objects every HT_ATTACH_POLL_MS), and on
 * detach puts every slot back, finishes the trace (END how=DETACH) and
 * leaves the agent idle in the process. The hooks forward to the same
 * functions the slots held (glibc's, or a preloaded allocator's), so a
 * block allocated before the attach and freed after it, or the other way
 * round, reaches the allocator that made it; the trace counts such frees
 * apart (PROCESS flag HT_PROC_ATTACHED).
 * The slots of exit, _exit and the exec family go to the agent's hooks too,
 * so that the trace ends complete when the process does, and those of
 * pthread_getattr_np, which the hooks must know a thread is in.
 *
 * dlopen's slots go to attach_dlopen, which patches a library as soon as
 * dlopen returns it, before the program calls into it. glibc's dlopen finds
 * the RUNPATH and $ORIGIN to search from its caller's return address, so
 * attach_dlopen hands a bare name, or a path with '$', to the real dlopen by
 * a sibling call (the return address stays the caller's) and leaves that
 * library to the control thread's next look.
 *
 * heaptrail detach (and attach's own end) asks for the detach by writing
 * heaptrail_attach_ctl.request with process_vm_writev: the process is not
 * stopped for it. The control block is also where heaptrail reads the
 * state, the trace's path and an error.
 */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"

bool ht_attaching;
const char *ht_attach_options;

#define HT_ATTACH_POLL_MS 20

/* Read and written by heaptrail (cli/attach.c) through process_vm_readv and
 * process_vm_writev; the layout is theirs too (HT_ATTACH_CTL_VERSION). */
enum {
	HT_ATTACH_LOADED = 0,
	HT_ATTACH_RECORDING = 1,
	HT_ATTACH_STOPPING = 2,
	HT_ATTACH_DETACHED = 3,
	HT_ATTACH_FAILED = 4,
	HT_ATTACH_ENDED = 5, /* the process finished the trace itself (exit, exec) */
	HT_ATTACH_REFUSED = 6, /* refused before the agent started: may be tried again */
	HT_ATTACH_PRELOADED = 7, /* preloaded (heaptrail run, LD_PRELOAD) */
};
#define HT_ATTACH_CTL_VERSION 1
struct heaptrail_attach_ctl {
	uint32_t version;
	_Atomic uint32_t request; /* heaptrail writes 1: detach */
	_Atomic uint32_t status;  /* HT_ATTACH_* */
	uint32_t slots;		  /* GOT slots pointed at the agent */
	uint64_t patch_ns;	  /* the attach's patching, in the stopped thread */
	uint64_t restore_ns;	  /* the detach's restoring (the process runs on) */
	uint64_t objects;	  /* objects whose slots were patched */
	char path[4096];	  /* the trace */
	char error[512];
};
HT_EXPORT struct heaptrail_attach_ctl heaptrail_attach_ctl = {.version = HT_ATTACH_CTL_VERSION};

/* The entry points a process's objects may bind to that the agent hooks:
 * the malloc family and operator new/delete. */
static const char *const hooked[] = {
	"malloc", "calloc", "realloc", "reallocarray", "free", "posix_memalign",
	"aligned_alloc", "memalign", "valloc", "pvalloc", "malloc_usable_size",
	"_Znwm", "_Znam", "_ZnwmRKSt9nothrow_t", "_ZnamRKSt9nothrow_t",
	"_ZnwmSt11align_val_t", "_ZnamSt11align_val_t",
	"_ZnwmSt11align_val_tRKSt9nothrow_t", "_ZnamSt11align_val_tRKSt9nothrow_t",
	"_ZdlPv", "_ZdaPv", "_ZdlPvm", "_ZdaPvm", "_ZdlPvRKSt9nothrow_t",
	"_ZdaPvRKSt9nothrow_t", "_ZdlPvSt11align_val_t", "_ZdaPvSt11align_val_t",
	"_ZdlPvmSt11align_val_t", "_ZdaPvmSt11align_val_t",
	"_ZdlPvSt11align_val_tRKSt9nothrow_t", "_ZdaPvSt11align_val_tRKSt9nothrow_t",
	"exit", "_exit", "_Exit", "quick_exit", "execve", "execv", "execvp", "execvpe",
	"execl", "execlp", "execle", "fexecve", "execveat",
	/* it holds the thread's lock around its own mallocs, which the
	 * agent's first look at a thread's stack takes (hooks.c) */
	"pthread_getattr_np",
	"dlopen", /* last: attach_dlopen, not a hook of hooks.c */
};
#define HT_NHOOKED (sizeof hooked / sizeof hooked[0])
static uintptr_t ours[HT_NHOOKED];
/* the process's definitions, for a slot the agent did not patch itself
 * (found at attach: not looked up from inside dl_iterate_phdr, under the
 * loader's lock) */
static uintptr_t theirs[HT_NHOOKED];
static uint64_t hooked_hash[HT_NHOOKED];

/* One patched slot and what it held. */
typedef struct slot {
	uintptr_t at, old;
	uint32_t which;
} slot_t;
#define HT_SLOTS_MAX 65536
static slot_t *slots;
static uint32_t nslots;
static ht_lock_t slot_lock;
static bool detaching; /* under slot_lock: no more patching */
static unsigned long long seen_adds; /* dlpi_adds at the last scan */

static uint64_t hash_name(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ull;
	return h;
}

static int which_hooked(const char *name)
{
	uint64_t h = hash_name(name);
	for (unsigned k = 0; k < HT_NHOOKED; k++)
		if (hooked_hash[k] == h && !ht_strcmp(hooked[k], name))
			return (int)k;
	return -1;
}

static uintptr_t dyn_ptr(uintptr_t bias, uintptr_t v)
{
	/* glibc relocates most of these in place; the vDSO's are offsets */
	return v < bias ? v + bias : v;
}

static bool in_agent_or_deps(uintptr_t a)
{
	if (ht_addr_in_agent(a))
		return true;
	for (unsigned i = 0; i < ht_agent_ndeps; i++)
		if (a >= ht_agent_deps[i][0] && a < ht_agent_deps[i][1])
			return true;
	return false;
}

/* Writes v at slot a of an object whose PT_GNU_RELRO is [rlo, rhi). The
 * loader made the whole pages of it read-only (from rlo's page to the page
 * rhi is in, not that one: it holds writable data), and so does this. */
static void slot_write(uintptr_t a, uintptr_t v, uintptr_t rlo, uintptr_t rhi)
{
	long page = sysconf(_SC_PAGESIZE);
	uintptr_t mask = ~(uintptr_t)(page - 1);
	uintptr_t pg = a & mask;
	bool ro = pg >= (rlo & mask) && pg < (rhi & mask);
	if (ro && mprotect((void *)pg, (size_t)page, PROT_READ | PROT_WRITE) != 0)
		return;
	__atomic_store_n((uintptr_t *)a, v, __ATOMIC_RELEASE);
	if (ro)
		mprotect((void *)pg, (size_t)page, PROT_READ);
}

struct scan {
	bool restore;
	unsigned objects;
};

/* Patches (or restores) the slots of one object. */
static int scan_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct scan *sc = arg;
	const ElfW(Dyn) *dyn = NULL;
	uintptr_t bias = info->dlpi_addr, rlo = 0, rhi = 0, first = UINTPTR_MAX;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(bias + ph->p_vaddr);
		else if (ph->p_type == PT_GNU_RELRO) {
			rlo = bias + ph->p_vaddr;
			rhi = rlo + ph->p_memsz;
		} else if (ph->p_type == PT_LOAD && bias + ph->p_vaddr < first)
			first = bias + ph->p_vaddr;
	}
	if (!dyn || first == UINTPTR_MAX || in_agent_or_deps(first))
		return 0;
	uintptr_t symtab = 0, strtab = 0, rela = 0, jmprel = 0;
	size_t relasz = 0, pltrelsz = 0;
	long pltrel = DT_RELA;
	for (; dyn->d_tag != DT_NULL; dyn++) {
		switch (dyn->d_tag) {
		case DT_SYMTAB: symtab = dyn_ptr(bias, dyn->d_un.d_ptr); break;
		case DT_STRTAB: strtab = dyn_ptr(bias, dyn->d_un.d_ptr); break;
		case DT_RELA: rela = dyn_ptr(bias, dyn->d_un.d_ptr); break;
		case DT_RELASZ: relasz = dyn->d_un.d_val; break;
		case DT_JMPREL: jmprel = dyn_ptr(bias, dyn->d_un.d_ptr); break;
		case DT_PLTRELSZ: pltrelsz = dyn->d_un.d_val; break;
		case DT_PLTREL: pltrel = (long)dyn->d_un.d_val; break;
		}
	}
	if (!symtab || !strtab || (bias && symtab < bias)) /* the vDSO: nothing to bind */
		return 0;
	const ElfW(Sym) *sy = (const ElfW(Sym) *)symtab;
	const char *st = (const char *)strtab;
	const ElfW(Rela) *tab[2] = {(const ElfW(Rela) *)rela,
				    pltrel == DT_RELA ? (const ElfW(Rela) *)jmprel : NULL};
	size_t cnt[2] = {relasz / sizeof(ElfW(Rela)), pltrelsz / sizeof(ElfW(Rela))};
	bool any = false;
	for (int t = 0; t < 2; t++) {
		if (!tab[t])
			continue;
		for (size_t i = 0; i < cnt[t]; i++) {
			unsigned type = (unsigned)ELF64_R_TYPE(tab[t][i].r_info);
			if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
				continue;
			const ElfW(Sym) *s = &sy[ELF64_R_SYM(tab[t][i].r_info)];
			if (!s->st_name || ELF64_ST_TYPE(s->st_info) == STT_OBJECT)
				continue;
			int k = which_hooked(st + s->st_name);
			if (k < 0)
				continue;
			uintptr_t a = bias + tab[t][i].r_offset;
			uintptr_t v = __atomic_load_n((uintptr_t *)a, __ATOMIC_ACQUIRE);
			if (sc->restore) {
				if (v != ours[k])
					continue;
				/* what it held, else the process's definition */
				uintptr_t old = 0;
				for (uint32_t j = 0; j < nslots; j++)
					if (slots[j].at == a && slots[j].which == (uint32_t)k)
						old = slots[j].old;
				if (!old)
					old = theirs[k];
				if (old)
					slot_write(a, old, rlo, rhi);
				any = true;
				continue;
			}
			if (v == ours[k] || !v || nslots >= HT_SLOTS_MAX)
				continue;
			slots[nslots++] = (slot_t){a, v, (uint32_t)k};
			slot_write(a, ours[k], rlo, rhi);
			any = true;
		}
	}
	sc->objects += any;
	return 0;
}

static int count_adds(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	*(unsigned long long *)arg = info->dlpi_adds;
	return 1;
}

static unsigned scan_all(bool restore)
{
	struct scan sc = {restore, 0};
	ht_lock(&slot_lock);
	if (restore)
		detaching = true; /* a dlopen on another thread patches no more */
	else if (detaching) {
		ht_unlock(&slot_lock);
		return 0;
	}
	dl_iterate_phdr(count_adds, &seen_adds);
	dl_iterate_phdr(scan_object, &sc);
	ht_unlock(&slot_lock);
	return sc.objects;
}

/* ---- the process's definitions ----------------------------------------------- */

/* A non-PIE executable that takes a function's address makes its PLT entry
 * the function's address for the whole process: dlsym(RTLD_DEFAULT) gives
 * that entry (an undefined symbol with a value), which jumps through the
 * executable's own slot, one the agent points at itself. The definition is
 * then the first object's in load order (the preloaded ones first) that
 * defines the name, as the loader binds the slots. */
#define HT_DEF_OBJECTS 1024
struct def_objects {
	const char *name[HT_DEF_OBJECTS];
	uintptr_t lo[HT_DEF_OBJECTS], hi[HT_DEF_OBJECTS];
	unsigned n;
};

static int list_objects(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct def_objects *o = arg;
	if (!info->dlpi_name || !info->dlpi_name[0] || o->n >= HT_DEF_OBJECTS)
		return 0; /* the executable, the vDSO */
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;
		if (a < lo)
			lo = a;
		if (a + ph->p_memsz > hi)
			hi = a + ph->p_memsz;
	}
	o->name[o->n] = info->dlpi_name;
	o->lo[o->n] = lo;
	o->hi[o->n] = hi;
	o->n++;
	return 0;
}

static bool is_definition(void *f)
{
	Dl_info info;
	const ElfW(Sym) *sym = NULL;
	return f && dladdr1(f, &info, (void **)&sym, RTLD_DL_SYMENT) && sym &&
	       sym->st_shndx != SHN_UNDEF;
}

void *ht_attach_next(const char *name)
{
	void *f = dlsym(RTLD_DEFAULT, name);
	if (!f || is_definition(f))
		return f;
	/* threads may look up at once (the C++ operators' first calls) */
	struct def_objects *o = ht_mmap(sizeof *o);
	if (!o)
		return dlsym(RTLD_NEXT, name);
	dl_iterate_phdr(list_objects, o);
	Dl_info self;
	uintptr_t own = dladdr((void *)&ht_attach_next, &self) ? (uintptr_t)self.dli_fbase : 0;
	void *found = NULL;
	for (unsigned i = 0; i < o->n && !found; i++) {
		if (own >= o->lo[i] && own < o->hi[i])
			continue;
		void *h = dlopen(o->name[i], RTLD_LAZY | RTLD_NOLOAD);
		void *g = h ? dlsym(h, name) : NULL;
		if (h)
			dlclose(h);
		if (g && (uintptr_t)g >= o->lo[i] && (uintptr_t)g < o->hi[i] && is_definition(g))
			found = g;
	}
	ht_munmap(o, sizeof *o);
	return found ? found : dlsym(RTLD_NEXT, name);
}

/* ---- dlopen ---------------------------------------------------------------- */

static void *(*real_dlopen)(const char *, int);

/* A path dlopen opens as it is: no search (RUNPATH), no $ORIGIN. */
static inline bool plain_path(const char *f)
{
	bool slash = false;
	for (; f && *f; f++) {
		if (*f == '$')
			return false;
		slash |= *f == '/';
	}
	return slash;
}

HT_NOINLINE static void *dlopen_then_scan(const char *file, int mode)
{
	void *h = real_dlopen(file, mode);
	if (h && atomic_load(&ht_state) == HT_STATE_RECORDING) {
		ht_guard++;
		heaptrail_attach_ctl.objects += scan_all(false);
		ht_guard--;
	}
	return h;
}

/* Both returns are sibling calls: dlopen sees the caller's return address
 * where it searches (bare names); the agent's where it does not. */
static void *attach_dlopen(const char *file, int mode)
{
	if (!plain_path(file))
		return real_dlopen(file, mode);
	return dlopen_then_scan(file, mode);
}

static void set_error(const char *a, const char *b)
{
	size_t n = ht_append_str(heaptrail_attach_ctl.error, 0, sizeof heaptrail_attach_ctl.error, a);
	if (b)
		ht_append_str(heaptrail_attach_ctl.error, n, sizeof heaptrail_attach_ctl.error, b);
}

/* Detach: the slots back, the trace finished. The program runs on. */
static void detach_now(void)
{
	atomic_store(&heaptrail_attach_ctl.status, HT_ATTACH_STOPPING);
	uint64_t t0 = ht_clock_ns();
	scan_all(true);
	heaptrail_attach_ctl.restore_ns = ht_clock_ns() - t0;
	ht_finish(HT_END_DETACH, 0);
	atomic_store(&heaptrail_attach_ctl.status, HT_ATTACH_DETACHED);
}

/* The control thread: objects loaded later, and the detach request. */
static void *control_main(void *arg)
{
	(void)arg;
	ht_guard = 1; /* nothing of this thread's is the program's */
	while (atomic_load(&ht_state) == HT_STATE_RECORDING) {
		if (atomic_load(&heaptrail_attach_ctl.request)) {
			detach_now();
			return NULL;
		}
		unsigned long long adds = 0;
		dl_iterate_phdr(count_adds, &adds);
		if (adds != seen_adds)
			heaptrail_attach_ctl.objects += scan_all(false);
		struct timespec ts = {0, HT_ATTACH_POLL_MS * 1000000L};
		nanosleep(&ts, NULL);
	}
	/* the process finished the trace itself (exit, exec) */
	if (atomic_load(&heaptrail_attach_ctl.status) == HT_ATTACH_RECORDING)
		atomic_store(&heaptrail_attach_ctl.status, HT_ATTACH_ENDED);
	return NULL;
}

/* True when this library was loaded after the process started (dlopen,
 * heaptrail attach) rather than preloaded: libc comes before it in the
 * link map. Its constructor then leaves the start to heaptrail_attach_start. */
bool ht_attach_loaded_late(void)
{
	Dl_info info;
	struct link_map *self = NULL;
	if (dladdr1((void *)&ht_attach_loaded_late, &info, (void **)&self, RTLD_DL_LINKMAP) && self)
		for (struct link_map *m = self->l_prev; m; m = m->l_prev) {
			const char *n = m->l_name ? m->l_name : "";
			const char *base = n;
			for (const char *c = n; *c; c++)
				if (*c == '/')
					base = c + 1;
			if (!ht_strncmp(base, "libc.so", 7))
				return true;
		}
	atomic_store(&heaptrail_attach_ctl.status, HT_ATTACH_PRELOADED);
	return false;
}

/* Called by heaptrail attach in one thread of the stopped process, its
 * asynchronous signals blocked. options: HEAPTRAIL_OPTIONS's syntax.
 * NULL on success, else why not (also in heaptrail_attach_ctl.error). */
HT_EXPORT const char *heaptrail_attach_start(const char *options);
const char *heaptrail_attach_start(const char *options)
{
#if !defined(__x86_64__)
	set_error("heaptrail attach supports x86-64 only", NULL);
	return heaptrail_attach_ctl.error;
#else
	if (atomic_load(&ht_state) != HT_STATE_UNINIT) {
		set_error("heaptrail's agent already ran in this process (heaptrail run, or an "
			  "earlier attach): it cannot start again",
			  NULL);
		atomic_store(&heaptrail_attach_ctl.status, HT_ATTACH_FAILED);
		return heaptrail_attach_ctl.error;
	}
	uint64_t t0 = ht_clock_ns();
	ht_guard++;
	for (unsigned k = 0; k < HT_NHOOKED; k++)
		hooked_hash[k] = hash_name(hooked[k]);
	/* the agent's own definitions: a reference from inside the library
	 * binds in the global scope first (libc's) */
	Dl_info info;
	void *self = NULL;
	if (dladdr((void *)&heaptrail_attach_start, &info) && info.dli_fname)
		self = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
	for (unsigned k = 0; self && k + 1 < HT_NHOOKED; k++)
		ours[k] = (uintptr_t)dlsym(self, hooked[k]);
	ours[HT_NHOOKED - 1] = (uintptr_t)&attach_dlopen;
	for (unsigned k = 0; k < HT_NHOOKED; k++)
		theirs[k] = (uintptr_t)ht_attach_next(hooked[k]);
	*(void **)&real_dlopen = (void *)theirs[HT_NHOOKED - 1];
	if (self)
		dlclose(self);
	slots = ht_mmap(HT_SLOTS_MAX * sizeof(slot_t));
	ht_guard--;
	if (!self || !ours[0] || !real_dlopen || !slots) {
		set_error("the agent cannot find its own hooks", NULL);
		atomic_store(&heaptrail_attach_ctl.status, HT_ATTACH_REFUSED);
		return heaptrail_attach_ctl.error;
	}
	/* The process creates the trace with its own rights: a directory it
	 * cannot write is refused before the agent starts (it starts once). */
	char dir[4096];
	size_t dl = 0;
	if (!ht_strncmp(options, "output=", 7))
		for (const char *c = options + 7; *c && *c != ',' && dl + 1 < sizeof dir; c++)
			dir[dl++] = *c;
	while (dl && dir[dl - 1] != '/')
		dl--;
	dir[dl > 1 ? dl - 1 : dl] = 0;
	if (dl && access(dir, W_OK | X_OK) != 0) {
		set_error("the process cannot create its trace in ", dir);
		size_t n = ht_strlen(heaptrail_attach_ctl.error);
		ht_append_str(heaptrail_attach_ctl.error, n, sizeof heaptrail_attach_ctl.error,
			      " (it writes the trace with its own user's rights): give -o a directory "
			      "it may write to");
		atomic_store(&heaptrail_attach_ctl.status, HT_ATTACH_REFUSED);
		return heaptrail_attach_ctl.error;
	}
	ht_attaching = true;
	ht_attach_options = options;
	ht_hooks_resolve();
	ht_init();
	ht_attach_options = NULL;
	if (atomic_load(&ht_state) != HT_STATE_RECORDING) {
		set_error("the agent could not start (the process's stderr says why: "
			  "the trace file?)",
			  NULL);
		atomic_store(&heaptrail_attach_ctl.status, HT_ATTACH_FAILED);
		return heaptrail_attach_ctl.error;
	}
	/* the trace's path, for heaptrail: what the descriptor names (thread-self:
	 * /proc/self is empty once the main thread has ended) */
	char link[64];
	size_t n = ht_append_str(link, 0, sizeof link, "/proc/thread-self/fd/");
	ht_append_u64(link, n, sizeof link, (uint64_t)atomic_load(&ht_trace_fd));
	long len = readlink(link, heaptrail_attach_ctl.path, sizeof heaptrail_attach_ctl.path - 1);
	heaptrail_attach_ctl.path[len > 0 ? len : 0] = 0;
	heaptrail_attach_ctl.objects = scan_all(false);
	heaptrail_attach_ctl.slots = nslots;
	ht_guard++;
	ht_flusher_start();
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	pthread_t th;
	int e = pthread_create(&th, &attr, control_main, NULL);
	pthread_attr_destroy(&attr);
	ht_guard--;
	if (e != 0) {
		scan_all(true);
		ht_finish(HT_END_DETACH, 0);
		set_error("the agent could not start its thread", NULL);
		atomic_store(&heaptrail_attach_ctl.status, HT_ATTACH_FAILED);
		return heaptrail_attach_ctl.error;
	}
	heaptrail_attach_ctl.patch_ns = ht_clock_ns() - t0;
	atomic_store(&heaptrail_attach_ctl.status, HT_ATTACH_RECORDING);
	return NULL;
#endif
}
