/* modules.c - the module map: which ELF objects are loaded, and where.
 *
 * The trace records raw return addresses; the CLI needs each object's path,
 * build-id, load bias and PT_LOAD segments to symbolize them. We write a
 * MODULE record for every object at start, diff the loaded set after each
 * dlopen/dlclose (and whenever a new stack holds an address no known module
 * covers: libc loads NSS and iconv modules behind our back), and write
 * MODULE_UNLOAD for objects that left, so frames of an unloaded library still
 * resolve to its file. The stacks of an object that left are forgotten
 * (ht_stacks_forget_range): the next object loaded at its address has the
 * same return addresses, and must not get the old stacks' ids and symbols.
 *
 * dl_iterate_phdr is called under the guard: the loader may allocate.
 */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"

#define HT_MAX_MODULES 4096

typedef struct module {
	uint64_t id;
	uintptr_t bias;
	uintptr_t lo, hi; /* union of its PT_LOAD segments */
	uint64_t name_hash;
	uintptr_t relro_lo, relro_hi; /* PT_GNU_RELRO: read-only after start-up */
	bool seen; /* found in the current dl_iterate_phdr pass */
} module_t;

static module_t modules[HT_MAX_MODULES];
static unsigned nmodules;
static uint64_t next_module_id = 1;
static ht_lock_t module_lock;
uintptr_t ht_agent_lo, ht_agent_hi;

bool ht_modules_known(uintptr_t addr)
{
	/* Racy read of an append-only array: a miss only costs a refresh. */
	unsigned n = __atomic_load_n(&nmodules, __ATOMIC_ACQUIRE);
	for (unsigned i = 0; i < n; i++) {
		if (addr >= modules[i].lo && addr < modules[i].hi)
			return true;
	}
	return false;
}

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* Finds the NT_GNU_BUILD_ID note in the object's mapped PT_NOTE segments. */
static size_t build_id(const struct dl_phdr_info *info, const uint8_t **out)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
		const uint8_t *end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
			size_t name = (nh->n_namesz + 3) & ~3u;
			size_t desc = (nh->n_descsz + 3) & ~3u;
			const uint8_t *d = p + sizeof *nh + name;
			if (d + nh->n_descsz > end)
				break;
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
			    !memcmp(p + sizeof *nh, "GNU", 4)) {
				*out = d;
				return nh->n_descsz;
			}
			p = d + desc;
		}
	}
	return 0;
}

static void module_path(const struct dl_phdr_info *info, char *path, size_t cap)
{
	if (info->dlpi_name && info->dlpi_name[0]) {
		ht_strlcpy(path, info->dlpi_name, cap);
		return;
	}
	/* The main program has an empty name: ask the kernel. */
	ssize_t n = readlink("/proc/self/exe", path, cap - 1);
	path[n > 0 ? n : 0] = 0;
}

static void write_module(const module_t *m, const struct dl_phdr_info *info,
			 const char *path)
{
	/* Static: we run under module_lock, and thread stacks may be small. */
	static uint8_t rec[4096 + 64 + 32 * 3 * HT_VARINT_MAX + 64];
	size_t n = 0;
	n += ht_varint_put(rec + n, m->id);
	/* on the events' scale (coarse or not): the first event that uses
	 * this module must not be stamped before it (the reader picks the
	 * module of an address by time) */
	n += ht_varint_put(rec + n, ht_stamp());
	n += ht_varint_put(rec + n, m->bias);
	size_t plen = ht_strlen(path);
	n += ht_varint_put(rec + n, plen);
	memcpy(rec + n, path, plen);
	n += plen;
	const uint8_t *bid = NULL;
	size_t blen = build_id(info, &bid);
	if (blen > 64)
		blen = 0;
	n += ht_varint_put(rec + n, blen);
	if (blen)
		memcpy(rec + n, bid, blen);
	n += blen;
	unsigned nsegs = 0;
	for (int i = 0; i < info->dlpi_phnum; i++)
		nsegs += info->dlpi_phdr[i].p_type == PT_LOAD;
	if (nsegs > 32)
		nsegs = 32;
	n += ht_varint_put(rec + n, nsegs);
	unsigned done = 0;
	for (int i = 0; i < info->dlpi_phnum && done < nsegs; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		n += ht_varint_put(rec + n, ph->p_vaddr);
		n += ht_varint_put(rec + n, ph->p_memsz);
		n += ht_varint_put(rec + n, ph->p_flags);
		done++;
	}
	ht_lock(&ht_writer_lock);
	ht_writer_record(HT_REC_MODULE, rec, n);
	ht_unlock(&ht_writer_lock);
}

static void range_of(const struct dl_phdr_info *info, uintptr_t *lo, uintptr_t *hi)
{
	*lo = UINTPTR_MAX;
	*hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;
		if (a < *lo)
			*lo = a;
		if (a + ph->p_memsz > *hi)
			*hi = a + ph->p_memsz;
	}
	if (*lo > *hi)
		*lo = *hi = 0;
}

static int visit(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	static char path[4096]; /* under module_lock */
	module_path(info, path, sizeof path);
	uintptr_t lo, hi;
	range_of(info, &lo, &hi);
	uint64_t h = hash_str(path);
	for (unsigned i = 0; i < nmodules; i++) {
		module_t *m = &modules[i];
		if (m->id && m->bias == info->dlpi_addr && m->name_hash == h &&
		    m->lo == lo) {
			m->seen = true;
			return 0;
		}
	}
	/* New object. Reuse the slot of an unloaded one if the array is full. */
	module_t *m = NULL;
	if (nmodules < HT_MAX_MODULES) {
		m = &modules[nmodules];
	} else {
		for (unsigned i = 0; i < nmodules && !m; i++)
			if (!modules[i].id)
				m = &modules[i];
		if (!m)
			return 0;
	}
	m->id = next_module_id++;
	m->bias = info->dlpi_addr;
	m->lo = lo;
	m->hi = hi;
	m->name_hash = h;
	m->relro_lo = m->relro_hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_GNU_RELRO) {
			m->relro_lo = info->dlpi_addr + ph->p_vaddr;
			m->relro_hi = m->relro_lo + ph->p_memsz;
		}
	}
	m->seen = true;
	write_module(m, info, path);
	if (m == &modules[nmodules])
		__atomic_store_n(&nmodules, nmodules + 1, __ATOMIC_RELEASE);
	return 0;
}

/* glibc counts every load and unload (dlpi_adds, dlpi_subs): reading them
 * from the first object tells whether anything changed since the last walk,
 * so addresses that are in no module (JIT code) do not cost a full walk. */
static unsigned long long seen_adds, seen_subs;
static bool walked_once;

static int read_counters(struct dl_phdr_info *info, size_t size, void *arg)
{
	unsigned long long *c = arg;
	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
		c[0] = info->dlpi_adds;
		c[1] = info->dlpi_subs;
	}
	return 1; /* the first object is enough */
}

void ht_modules_refresh(void)
{
	ht_lock(&module_lock);
	unsigned long long c[2] = {~0ull, ~0ull};
	dl_iterate_phdr(read_counters, c);
	if (walked_once && c[0] == seen_adds && c[1] == seen_subs && c[0] != ~0ull) {
		ht_unlock(&module_lock);
		return;
	}
	walked_once = true;
	seen_adds = c[0];
	seen_subs = c[1];
	for (unsigned i = 0; i < nmodules; i++)
		modules[i].seen = false;
	dl_iterate_phdr(visit, NULL);
	/* The ranges that left, for the stack table once module_lock is
	 * released (fork takes the stack lock first). More than fit are
	 * merged into the last: forgetting too much only costs definitions. */
	uintptr_t gone[16][2];
	unsigned ngone = 0;
	for (unsigned i = 0; i < nmodules; i++) {
		module_t *m = &modules[i];
		if (!m->id || m->seen)
			continue;
		uint8_t rec[2 * HT_VARINT_MAX];
		size_t n = ht_varint_put(rec, m->id);
		n += ht_varint_put(rec + n, ht_stamp());
		ht_lock(&ht_writer_lock);
		ht_writer_record(HT_REC_MODULE_UNLOAD, rec, n);
		ht_unlock(&ht_writer_lock);
		if (ngone < 16) {
			gone[ngone][0] = m->lo;
			gone[ngone++][1] = m->hi;
		} else {
			if (m->lo < gone[15][0])
				gone[15][0] = m->lo;
			if (m->hi > gone[15][1])
				gone[15][1] = m->hi;
		}
		/* Keep lo/hi out of lookups but the slot reusable. */
		m->id = 0;
		m->lo = m->hi = 0;
	}
	ht_unlock(&module_lock);
	for (unsigned i = 0; i < ngone; i++)
		ht_stacks_forget_range(gone[i][0], gone[i][1]);
}

void ht_modules_rewrite_all(void)
{
	ht_lock(&module_lock);
	__atomic_store_n(&nmodules, 0, __ATOMIC_RELEASE);
	memset(modules, 0, sizeof modules);
	walked_once = false;
	ht_unlock(&module_lock);
	ht_modules_refresh();
}

uintptr_t ht_agent_deps[HT_AGENT_DEPS_MAX][2];
unsigned ht_agent_ndeps;
uintptr_t ht_libc_data_lo, ht_libc_data_hi;
uintptr_t ht_libunwind_lo, ht_libunwind_hi;

/* libc's writable segment (where glibc keeps its main arena). */
static void libc_data(const struct dl_phdr_info *info)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_W)) {
			ht_libc_data_lo = info->dlpi_addr + ph->p_vaddr;
			ht_libc_data_hi = ht_libc_data_lo + ph->p_memsz;
		}
	}
}

/* The libraries the agent brings (libunwind keeps copies of the program's
 * registers in its globals; the others are listed because only the agent
 * uses them in practice): the leak scan does not take their data for the
 * program's roots. */
static const char *base_name(const char *path)
{
	const char *base = path;
	for (const char *c = path; *c; c++)
		if (*c == '/')
			base = c + 1;
	return base;
}

static bool is_agent_dep(const char *path)
{
	const char *base = base_name(path);
	return !ht_strncmp(base, "libunwind", 9) || !ht_strncmp(base, "liblzma.", 8) ||
	       !ht_strncmp(base, "libzstd.", 8);
}

static bool is_libc(const char *path)
{
	size_t n = ht_strlen(path);
	return n >= 10 && !ht_strcmp(path + n - 10, "/libc.so.6");
}

static int find_agent(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	uintptr_t self = (uintptr_t)arg;
	uintptr_t lo, hi;
	range_of(info, &lo, &hi);
	if (self >= lo && self < hi) {
		ht_agent_lo = lo;
		ht_agent_hi = hi;
	} else if (info->dlpi_name && is_libc(info->dlpi_name)) {
		libc_data(info);
	} else if (info->dlpi_name && is_agent_dep(info->dlpi_name) &&
		   ht_agent_ndeps < HT_AGENT_DEPS_MAX) {
		ht_agent_deps[ht_agent_ndeps][0] = lo;
		ht_agent_deps[ht_agent_ndeps][1] = hi;
		ht_agent_ndeps++;
		if (!ht_strncmp(base_name(info->dlpi_name), "libunwind.", 10)) {
			ht_libunwind_lo = lo;
			ht_libunwind_hi = hi;
		}
	}
	return 0;
}

void ht_modules_init(void)
{
	dl_iterate_phdr(find_agent, (void *)(uintptr_t)&ht_modules_init);
}

/* ---- libraries bound past the agent -------------------------------------
 * A library dlopen'ed with RTLD_DEEPBIND (or into another namespace by
 * dlmopen) looks its symbols up in its own dependencies first: its malloc
 * and free are libc's, not the agent's, and the program's figures miss
 * them (its frees of the program's blocks make false leaks). dlopen is
 * not interposed (hooks.c says why), so the flag is not seen; its effect
 * is: a resolved GOT slot of malloc, free, calloc or realloc that holds
 * neither the agent's function nor the global definition (an executable's
 * own malloc) nor an address in the library itself (a lazy slot not yet
 * bound). Such libraries are named in the manifest ("bypass"), once each.
 * Checked when the trace is finished, and for the library that dlclose
 * closes (only it: a program may load and close one plugin many times). */

#if defined(__x86_64__)
#define HT_R_JUMP_SLOT R_X86_64_JUMP_SLOT
#define HT_R_GLOB_DAT R_X86_64_GLOB_DAT
#elif defined(__aarch64__)
#define HT_R_JUMP_SLOT R_AARCH64_JUMP_SLOT
#define HT_R_GLOB_DAT R_AARCH64_GLOB_DAT
#endif

#define HT_BYPASS_NAMES 4
static const char *const bypass_names[HT_BYPASS_NAMES] = {"malloc", "free", "calloc", "realloc"};
static void *bypass_global[HT_BYPASS_NAMES];
static uint64_t bypass_noted[64];
static unsigned bypass_nnoted;
static ht_lock_t bypass_lock;

#ifdef HT_R_JUMP_SLOT
/* glibc relocates the dynamic section's addresses in place (not where it
 * is read-only): an address below the bias is still an offset. */
static uintptr_t dyn_addr(uintptr_t bias, uintptr_t v)
{
	return v < bias ? v + bias : v;
}

/* True if one of rel[0..n)'s slots of the malloc family is bound past us. */
static bool bound_past(const struct dl_phdr_info *info, const ElfW(Rela) *rel, size_t n,
		       const ElfW(Sym) *symtab, const char *strtab, uintptr_t lo, uintptr_t hi)
{
	for (size_t i = 0; i < n; i++) {
		unsigned long type = ELF64_R_TYPE(rel[i].r_info);
		if (type != HT_R_JUMP_SLOT && type != HT_R_GLOB_DAT)
			continue;
		const ElfW(Sym) *sym = &symtab[ELF64_R_SYM(rel[i].r_info)];
		if (sym->st_shndx != SHN_UNDEF)
			continue;
		const char *name = strtab + sym->st_name;
		for (int k = 0; k < HT_BYPASS_NAMES; k++) {
			if (ht_strcmp(name, bypass_names[k]))
				continue;
			uintptr_t to = *(const uintptr_t *)(info->dlpi_addr + rel[i].r_offset);
			if (to && !ht_addr_in_agent(to) && to != (uintptr_t)bypass_global[k] &&
			    !(to >= lo && to < hi))
				return true;
		}
	}
	return false;
}
#endif

static int check_bypass(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	const struct link_map *only = arg;
	if (only && (only->l_addr != info->dlpi_addr || !info->dlpi_name || !only->l_name ||
		     ht_strcmp(only->l_name, info->dlpi_name)))
		return 0;
#ifdef HT_R_JUMP_SLOT
	const ElfW(Dyn) *dyn = NULL;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
	if (!dyn || !info->dlpi_name || !info->dlpi_name[0])
		return 0; /* the executable binds in the global scope */
	uintptr_t bias = info->dlpi_addr, symtab = 0, strtab = 0, rela = 0, jmprel = 0;
	size_t relasz = 0, pltrelsz = 0;
	long pltrel = DT_RELA;
	for (; dyn->d_tag != DT_NULL; dyn++) {
		switch (dyn->d_tag) {
		case DT_SYMTAB: symtab = dyn_addr(bias, dyn->d_un.d_ptr); break;
		case DT_STRTAB: strtab = dyn_addr(bias, dyn->d_un.d_ptr); break;
		case DT_RELA: rela = dyn_addr(bias, dyn->d_un.d_ptr); break;
		case DT_RELASZ: relasz = dyn->d_un.d_val; break;
		case DT_JMPREL: jmprel = dyn_addr(bias, dyn->d_un.d_ptr); break;
		case DT_PLTRELSZ: pltrelsz = dyn->d_un.d_val; break;
		case DT_PLTREL: pltrel = (long)dyn->d_un.d_val; break;
		}
	}
	if (!symtab || !strtab)
		return 0;
	uintptr_t lo, hi;
	range_of(info, &lo, &hi);
	const ElfW(Sym) *sy = (const ElfW(Sym) *)symtab;
	const char *st = (const char *)strtab;
	bool past = (rela && bound_past(info, (const ElfW(Rela) *)rela, relasz / sizeof(ElfW(Rela)),
				       sy, st, lo, hi)) ||
		    (jmprel && pltrel == DT_RELA &&
		     bound_past(info, (const ElfW(Rela) *)jmprel, pltrelsz / sizeof(ElfW(Rela)), sy,
				st, lo, hi));
	if (!past)
		return 0;
	uint64_t h = hash_str(info->dlpi_name);
	for (unsigned i = 0; i < bypass_nnoted; i++)
		if (bypass_noted[i] == h)
			return 0;
	if (bypass_nnoted < sizeof bypass_noted / sizeof *bypass_noted)
		bypass_noted[bypass_nnoted++] = h;
	ht_writer_note_bypass(info->dlpi_name);
#else
	(void)info;
#endif
	return 0;
}

void ht_modules_check_bypass(void *handle)
{
	struct link_map *only = NULL;
	if (handle && (dlinfo(handle, RTLD_DI_LINKMAP, &only) != 0 || !only))
		return;
	if (ht_lock_held(&bypass_lock))
		return; /* a handler interrupted this thread's own check */
	ht_lock(&bypass_lock);
	for (int k = 0; k < HT_BYPASS_NAMES; k++)
		bypass_global[k] = dlsym(RTLD_DEFAULT, bypass_names[k]);
	dl_iterate_phdr(check_bypass, only);
	ht_unlock(&bypass_lock);
}

void ht_modules_fork_prepare(void)
{
	ht_lock(&module_lock);
}

void ht_modules_fork_parent(void)
{
	ht_unlock(&module_lock);
}

void ht_modules_fork_child(void)
{
	ht_lock_reset(&module_lock);
}

unsigned ht_modules_relro(uintptr_t (*out)[2], unsigned cap)
{
	/* racy read of an append-only array (unloads clear id): at worst a
	 * module loaded this instant is missed */
	unsigned n = __atomic_load_n(&nmodules, __ATOMIC_ACQUIRE), k = 0;
	for (unsigned i = 0; i < n && k < cap; i++) {
		const module_t *m = &modules[i];
		if (m->id && m->relro_hi > m->relro_lo) {
			out[k][0] = m->relro_lo;
			out[k][1] = m->relro_hi;
			k++;
		}
	}
	return k;
}
