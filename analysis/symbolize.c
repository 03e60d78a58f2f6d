/* symbolize.c - return addresses to function, file, line (elfutils libdw).
 *
 * Runs in the CLI only. Design and invariants:
 *  - One offline Dwfl session per trace module. Objects can overlap in the
 *    traced address space (a library dlclose'd and another mapped at the same
 *    place), and the reader already knows which module an address belongs to,
 *    so a private session per module makes every lookup unambiguous.
 *  - Modules are opened lazily, on the first address that needs them: a trace
 *    lists every object of the process but most stacks touch a few.
 *  - A module whose file is missing or whose build-id differs from the one the
 *    trace recorded is never used for symbols (they would be silently wrong);
 *    one warning per path goes to stderr and its frames keep module+address.
 *  - Two lazy per-module indexes keep a cold lookup cheap (libdw's own
 *    searches are linear): function symbols sorted by address, and per
 *    compilation unit its functions' address ranges, from which only the
 *    function at pc is descended to find its inlined instances.
 *  - Results are cached per (module id, ip) as a run of frames in one pool, so
 *    a hot address costs one hash probe. All strings (names, files, module
 *    paths) are interned in an arena owned by the symbolizer; the frames handed
 *    out point into it and stay valid until ht_symbolizer_free().
 *  - Not thread-safe: one symbolizer per thread. ht_symbolize_prefetch
 *    resolves a trace's distinct addresses on worker threads, each with a
 *    private symbolizer (sessions, indexes, arena) over whole modules; the
 *    calling thread takes their answers by address, interning the strings
 *    into its own arena, and adopts their sessions once they are done.
 */
#include "analysis/frames.h"
#include "analysis/safe.h"
#include "analysis/symbolize.h"
#include "analysis/util.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* From libstdc++ (the CLI links -lstdc++); declared here so this stays C. */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len,
			    int *status);

/* Deepest inline chain kept per address. Real code stays far below (GCC's
 * deepest chains in cc1 are ~20); the cap only bounds the scratch array. */
#define SYM_MAX_FRAMES 64

/* ------------------------------------------------------------------------ */
/* String arena and interning                                               */
/* ------------------------------------------------------------------------ */

/* Bump allocator in chunks; strings never move and are freed all at once. */
typedef struct arena_chunk {
	struct arena_chunk *next;
	size_t used, cap;
	char data[];
} arena_chunk_t;

#define ARENA_CHUNK (64 * 1024)

/* One interned string. demangled caches __cxa_demangle's answer (which
 * costs microseconds) for names shared by many addresses; warned makes the
 * stale-module warning once per path even if the trace reloads it. */
typedef struct str_entry {
	const char *str;
	const char *demangled;
	uint64_t hash;
	bool demangle_tried;
	bool warned;
} str_entry_t;

/* ------------------------------------------------------------------------ */
/* Modules and the address cache                                            */
/* ------------------------------------------------------------------------ */

typedef enum {
	MOD_UNOPENED, /* declared, file not looked at yet */
	MOD_OK,       /* Dwfl session ready */
	MOD_UNUSABLE, /* missing, unreadable or changed: no symbols */
} mod_state_t;

/* One function symbol. name points into the module's ELF string table,
 * valid while its Dwfl session lives. */
typedef struct elf_sym {
	uint64_t addr, size;
	const char *name;
	int rank; /* lower wins among aliases at one address */
} elf_sym_t;

/* One address range of an out-of-line function (DW_TAG_subprogram). */
typedef struct fn_range {
	Dwarf_Addr lo, hi;
	Dwarf_Die die;
} fn_range_t;

/* A compilation unit's functions sorted by address, built on the first
 * lookup into that CU. key is the CU DIE's address in the mapped
 * .debug_info, unique within the module. */
typedef struct cu_index {
	const void *key;
	fn_range_t *fns;
	size_t nfns, cap;
} cu_index_t;

typedef struct sym_module {
	uint64_t id;
	const char *path; /* interned, may be NULL */
	uint8_t *build_id;
	size_t build_id_len;
	uint64_t load_bias;
	ht_segment_t *segs;
	size_t nsegs;
	mod_state_t state;
	Dwfl *dwfl;
	Dwfl_Module *mod;
	struct elf_sym *syms; /* function symbols by address, built lazily */
	size_t nsyms;
	bool syms_built;
	struct cu_index **cus; /* open addressing by CU DIE address */
	size_t ncus, cus_cap;
	const char *warning; /* why it is unusable, in a prefetch worker (quiet) */
	int worker;	     /* the prefetch worker that resolves it, or -1 */
} sym_module_t;

/* Cached result of one (module, ip): frames[first .. first+count). */
typedef struct cache_entry {
	uint64_t module_id, ip;
	uint32_t first, count; /* count == 0: empty slot */
} cache_entry_t;

struct ht_symbolizer {
	arena_chunk_t *arena;

	str_entry_t *strs; /* open addressing, power-of-two size */
	size_t nstrs, strs_cap;

	sym_module_t **mods; /* in declaration order; pointers stay put */
	size_t nmods, mods_cap;
	uint32_t *mod_index; /* open addressing: 1 + index into mods, 0 empty */
	size_t mod_index_cap;

	cache_entry_t *cache;
	size_t ncache, cache_cap;

	ht_frame_t *frames; /* pool of cached frames */
	size_t nframes, frames_cap;

	bool quiet;	       /* a prefetch worker: warnings go to m->warning */
	struct prefetch *pf;   /* addresses resolved on worker threads */
};

/* Offline callbacks: the file is opened by path (find_elf is only a formality
 * for dwfl_report_elf), separate debuginfo is found by build-id or
 * .gnu_debuglink under the default path ":.debug:/usr/lib/debug". */
static char *debuginfo_path;
static const Dwfl_Callbacks offline_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
	.debuginfo_path = &debuginfo_path,
};

/* A trace names the module paths, and through the ELF files at them the
 * paths libdw then opens itself: .gnu_debuglink names searched beside the
 * file, build-id links, the dwz file, split-DWARF .dwo files. A FIFO among
 * them would block a report in open() forever, a device feed it without
 * end. module_open opens the module itself (ht_open_regular); for the
 * rest, this definition of open() interposes libc's for libdw and libelf
 * (an executable's definitions come first in the dynamic linker's
 * search): a read-only open of anything but a regular file or a directory
 * fails with ENODEV. A caller that asks for O_NONBLOCK itself checks what
 * it opened (ht_reader_load_file), and gets the plain call. */
int open(const char *path, int flags, ...)
{
	mode_t mode = 0;
	if (flags & (O_CREAT | __O_TMPFILE)) {
		va_list ap;
		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	bool guard = (flags & O_ACCMODE) == O_RDONLY &&
		     !(flags & (O_CREAT | __O_TMPFILE | O_NONBLOCK | O_PATH | O_DIRECTORY));
	int fd = (int)syscall(SYS_openat, AT_FDCWD, path, flags | (guard ? O_NONBLOCK : 0), mode);
	if (fd < 0 || !guard)
		return fd;
	struct stat sb;
	if (fstat(fd, &sb) < 0 || !(S_ISREG(sb.st_mode) || S_ISDIR(sb.st_mode)) ||
	    fcntl(fd, F_SETFL, flags & ~O_ACCMODE & ~O_CLOEXEC) < 0) {
		close(fd);
		errno = ENODEV;
		return -1;
	}
	return fd;
}

/* ------------------------------------------------------------------------ */
/* Hashing                                                                  */
/* ------------------------------------------------------------------------ */

static uint64_t mix64(uint64_t x)
{
	/* splitmix64 finaliser: return addresses share their high bits and
	 * step by small odd amounts, so the low bits need mixing. */
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static uint64_t hash_str(const char *p)
{
	return mix64(ht_fnv1a(p));
}

/* ------------------------------------------------------------------------ */
/* Arena                                                                    */
/* ------------------------------------------------------------------------ */

/* Copy len bytes + NUL into the arena. Returns NULL when out of memory. */
static char *arena_strndup(ht_symbolizer_t *s, const char *p, size_t len)
{
	arena_chunk_t *c = s->arena;
	if (!c || c->cap - c->used < len + 1) {
		size_t cap = len + 1 > ARENA_CHUNK ? len + 1 : ARENA_CHUNK;
		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->cap = cap;
		c->used = 0;
		/* A huge string gets its own chunk behind the current one,
		 * so the space left in the current one is not wasted. */
		if (s->arena && cap > ARENA_CHUNK) {
			c->next = s->arena->next;
			s->arena->next = c;
		} else {
			c->next = s->arena;
			s->arena = c;
		}
	}
	char *d = c->data + c->used;
	memcpy(d, p, len);
	d[len] = '\0';
	c->used += len + 1;
	return d;
}

static int strs_grow(ht_symbolizer_t *s)
{
	size_t cap = s->strs_cap ? s->strs_cap * 2 : 1024;
	str_entry_t *t = calloc(cap, sizeof(*t));
	if (!t)
		return -1;
	for (size_t i = 0; i < s->strs_cap; i++) {
		if (!s->strs[i].str)
			continue;
		size_t j = s->strs[i].hash & (cap - 1);
		while (t[j].str)
			j = (j + 1) & (cap - 1);
		t[j] = s->strs[i];
	}
	free(s->strs);
	s->strs = t;
	s->strs_cap = cap;
	return 0;
}

/* The entry for string p, created on first sight. NULL: out of memory. */
static str_entry_t *intern_entry(ht_symbolizer_t *s, const char *p)
{
	if (s->nstrs * 2 >= s->strs_cap && strs_grow(s) < 0)
		return NULL;
	uint64_t h = hash_str(p);
	size_t i = h & (s->strs_cap - 1);
	for (; s->strs[i].str; i = (i + 1) & (s->strs_cap - 1))
		if (s->strs[i].hash == h && strcmp(s->strs[i].str, p) == 0)
			return &s->strs[i];
	const char *copy = arena_strndup(s, p, strlen(p));
	if (!copy)
		return NULL;
	s->strs[i] = (str_entry_t){ .str = copy, .hash = h };
	s->nstrs++;
	return &s->strs[i];
}

/* Interned copy of p (NULL stays NULL, and out of memory gives NULL: an
 * unknown value rather than a crash). */
static const char *intern(ht_symbolizer_t *s, const char *p)
{
	if (!p)
		return NULL;
	str_entry_t *e = intern_entry(s, p);
	return e ? e->str : NULL;
}

/* Readable form of a symbol name: C++ names demangled ("make_widget(int)"),
 * anything else (C names, failed demangling) as it is. Interned. */
static const char *demangle(ht_symbolizer_t *s, const char *name)
{
	if (!name)
		return NULL;
	if (name[0] != '_' || name[1] != 'Z')
		return intern(s, name);
	str_entry_t *e = intern_entry(s, name);
	if (!e)
		return NULL;
	if (!e->demangle_tried) {
		int status = 0;
		char *d = __cxa_demangle(name, NULL, NULL, &status);
		/* intern() may rehash the table: keep no pointer into it. */
		const char *mangled = e->str;
		const char *out = NULL;
		if (status == 0 && d && !ht_frames_opts()->full_names) {
			/* the name people read (frames.h); --full-names keeps it whole */
			size_t need = ht_cxx_shorten(d, NULL, 0) + 1;
			char *sh = malloc(need);
			if (sh) {
				ht_cxx_shorten(d, sh, need);
				out = intern(s, sh);
				free(sh);
			}
		}
		if (!out && status == 0 && d)
			out = intern(s, d);
		free(d);
		e = intern_entry(s, mangled);
		if (!e)
			return out;
		e->demangle_tried = true;
		e->demangled = out;
	}
	return e->demangled ? e->demangled : e->str;
}

/* ------------------------------------------------------------------------ */
/* Symbolizer lifetime and modules                                          */
/* ------------------------------------------------------------------------ */

ht_symbolizer_t *ht_symbolizer_new(void)
{
	/* --debug-dir: searched before libdw's default path (written once:
	 * prefetch workers read it) */
	if (ht_frames_opts()->debug_dirs && !debuginfo_path)
		debuginfo_path = (char *)ht_frames_debuginfo_path();
	return calloc(1, sizeof(ht_symbolizer_t));
}

static void prefetch_free(ht_symbolizer_t *s);

void ht_symbolizer_free(ht_symbolizer_t *s)
{
	if (!s)
		return;
	prefetch_free(s);
	for (size_t i = 0; i < s->nmods; i++) {
		sym_module_t *m = s->mods[i];
		if (m->dwfl)
			dwfl_end(m->dwfl);
		free(m->syms);
		for (size_t k = 0; k < m->cus_cap; k++)
			if (m->cus[k]) {
				free(m->cus[k]->fns);
				free(m->cus[k]);
			}
		free(m->cus);
		free(m->build_id);
		free(m->segs);
		free(m);
	}
	free(s->mods);
	free(s->mod_index);
	free(s->cache);
	free(s->frames);
	free(s->strs);
	for (arena_chunk_t *c = s->arena, *next; c; c = next) {
		next = c->next;
		free(c);
	}
	free(s);
}

static sym_module_t *find_module(ht_symbolizer_t *s, uint64_t id)
{
	if (!s->mod_index_cap)
		return NULL;
	size_t mask = s->mod_index_cap - 1;
	for (size_t i = mix64(id) & mask; s->mod_index[i];
	     i = (i + 1) & mask) {
		sym_module_t *m = s->mods[s->mod_index[i] - 1];
		if (m->id == id)
			return m;
	}
	return NULL;
}

/* The index in s->mods of a declared module. */
static size_t module_index(const ht_symbolizer_t *s, uint64_t id)
{
	size_t mask = s->mod_index_cap - 1;
	size_t i = mix64(id) & mask;
	while (s->mods[s->mod_index[i] - 1]->id != id)
		i = (i + 1) & mask;
	return s->mod_index[i] - 1;
}

static int mod_index_grow(ht_symbolizer_t *s)
{
	size_t cap = s->mod_index_cap ? s->mod_index_cap * 2 : 64;
	uint32_t *t = calloc(cap, sizeof(*t));
	if (!t)
		return -1;
	for (size_t k = 0; k < s->nmods; k++) {
		size_t i = mix64(s->mods[k]->id) & (cap - 1);
		while (t[i])
			i = (i + 1) & (cap - 1);
		t[i] = (uint32_t)(k + 1);
	}
	free(s->mod_index);
	s->mod_index = t;
	s->mod_index_cap = cap;
	return 0;
}

void ht_symbolizer_add_module(ht_symbolizer_t *s, uint64_t module_id,
			      const char *path, const uint8_t *build_id,
			      size_t build_id_len, uint64_t load_bias,
			      const ht_segment_t *segs, size_t nsegs)
{
	/* Module ids are unique in a trace; a repeated declaration (a
	 * refreshed module map) describes the same object, so keep the first
	 * and its cached results. */
	if (find_module(s, module_id))
		return;
	if (s->nmods == s->mods_cap) {
		size_t cap = s->mods_cap ? s->mods_cap * 2 : 32;
		sym_module_t **t = realloc(s->mods, cap * sizeof(*t));
		if (!t)
			return;
		s->mods = t;
		s->mods_cap = cap;
	}
	if ((s->nmods + 1) * 2 > s->mod_index_cap && mod_index_grow(s) < 0)
		return;
	sym_module_t *m = calloc(1, sizeof(*m));
	if (!m)
		return;
	m->id = module_id;
	m->path = intern(s, path);
	m->load_bias = load_bias;
	if (build_id_len) {
		m->build_id = malloc(build_id_len);
		if (m->build_id) {
			memcpy(m->build_id, build_id, build_id_len);
			m->build_id_len = build_id_len;
		}
	}
	if (nsegs) {
		m->segs = malloc(nsegs * sizeof(*segs));
		if (m->segs) {
			memcpy(m->segs, segs, nsegs * sizeof(*segs));
			m->nsegs = nsegs;
		}
	}
	m->state = MOD_UNOPENED;
	m->worker = -1;

	s->mods[s->nmods++] = m;
	size_t mask = s->mod_index_cap - 1;
	size_t i = mix64(module_id) & mask;
	while (s->mod_index[i])
		i = (i + 1) & mask;
	s->mod_index[i] = (uint32_t)s->nmods;
}

/* The kernel's vDSO has no file; the agent may still list it. Saying it
 * "cannot be opened" on every report would only be noise. */
static bool is_pseudo_path(const char *p)
{
	return !p || !*p || p[0] == '[' || strncmp(p, "linux-vdso", 10) == 0 ||
	       strncmp(p, "linux-gate", 10) == 0;
}

/* Print the stale-module warning once per path, however many module ids
 * (dlopen/dlclose cycles) share it. */
static void warn_path(ht_symbolizer_t *s, const char *path, const char *why)
{
	if (is_pseudo_path(path))
		return;
	str_entry_t *e = intern_entry(s, path);
	if (e && e->warned)
		return;
	if (e)
		e->warned = true;
	fprintf(stderr,
		"heaptrail: warning: %s %s; its frames are left unsymbolized\n",
		HT_TEXT(path), why);
}

/* A prefetch worker keeps the warning with the module: the calling thread
 * prints it when it first takes an answer from that module, where a
 * symbolizer of its own would have opened it. */
static void warn_once(ht_symbolizer_t *s, sym_module_t *m, const char *why)
{
	if (s->quiet)
		m->warning = intern(s, why);
	else
		warn_path(s, m->path, why);
}

/* Without a build-id in the trace, the PT_LOAD layout is the best evidence
 * that the file on disk is the one that ran. True when it matches (or when
 * there is nothing to compare). */
static bool segments_match(const sym_module_t *m)
{
	if (!m->nsegs)
		return true;
	GElf_Addr bias;
	Elf *elf = dwfl_module_getelf(m->mod, &bias);
	size_t phnum;
	if (!elf || elf_getphdrnum(elf, &phnum) != 0)
		return true;
	size_t k = 0;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr mem, *ph = gelf_getphdr(elf, (int)i, &mem);
		if (!ph || ph->p_type != PT_LOAD)
			continue;
		if (k >= m->nsegs || m->segs[k].vaddr != ph->p_vaddr ||
		    m->segs[k].memsz != ph->p_memsz)
			return false;
		k++;
	}
	return k == m->nsegs;
}

/* Open m's file in its own Dwfl session and check it is the traced one.
 * Sets m->state; true when symbols can be used. */
static bool module_open(ht_symbolizer_t *s, sym_module_t *m)
{
	if (m->state != MOD_UNOPENED) {
		if (m->warning && !s->quiet) { /* opened by a prefetch worker */
			warn_path(s, m->path, m->warning);
			m->warning = NULL;
		}
		return m->state == MOD_OK;
	}
	m->state = MOD_UNUSABLE;
	if (is_pseudo_path(m->path))
		return false;

	/* opened here, not by libdw: a FIFO is refused without blocking */
	int fd = ht_open_regular(m->path, 0);
	if (fd < 0) {
		char why[512];
		snprintf(why, sizeof(why), "cannot be opened (%s)",
			 fd == -HT_ENOTREG ? "not a regular file" : ht_strerror(fd));
		warn_once(s, m, why);
		return false;
	}
	m->dwfl = dwfl_begin(&offline_callbacks);
	if (!m->dwfl) {
		close(fd);
		return false;
	}
	dwfl_report_begin(m->dwfl);
	/* add_p_vaddr = true: the trace records the load *bias* (dlpi_addr),
	 * which is what libdw calls base when add_p_vaddr is set. With false,
	 * libdw takes base as the address of the first segment and subtracts
	 * its p_vaddr again, which is only the same thing for objects linked
	 * at 0 (see __libdwfl_elf_address_range); objects linked elsewhere
	 * (-Ttext-segment, prelink) would be shifted. ET_EXEC ignores base. */
	m->mod = dwfl_report_elf(m->dwfl, m->path, m->path, fd, m->load_bias,
				 true);
	dwfl_report_end(m->dwfl, NULL, NULL);
	if (!m->mod) {
		close(fd); /* the module's on success, still ours here */
		char why[512];
		snprintf(why, sizeof(why), "cannot be opened (%s)",
			 dwfl_errmsg(-1));
		warn_once(s, m, why);
		goto fail;
	}

	const unsigned char *bits;
	GElf_Addr vaddr;
	int len = dwfl_module_build_id(m->mod, &bits, &vaddr);
	if (m->build_id_len) {
		if (len != (int)m->build_id_len ||
		    memcmp(bits, m->build_id, m->build_id_len) != 0) {
			warn_once(s, m,
				  "changed since the trace was recorded "
				  "(build-id differs)");
			goto fail;
		}
	} else if (!segments_match(m)) {
		warn_once(s, m,
			  "changed since the trace was recorded "
			  "(its PT_LOAD segments differ)");
		goto fail;
	}
	m->state = MOD_OK;
	return true;

fail:
	dwfl_end(m->dwfl);
	m->dwfl = NULL;
	m->mod = NULL;
	return false;
}

/* ------------------------------------------------------------------------ */
/* Resolution                                                               */
/* ------------------------------------------------------------------------ */

/* Source-level name of a function DIE. dwarf_attr_integrate follows
 * DW_AT_abstract_origin (inlined and out-of-line instances) and
 * DW_AT_specification (C++ members defined outside their class), which is
 * where the names live. The linkage name carries the parameter types, so it
 * is preferred for C++; C functions only have DW_AT_name. */
static const char *die_name(ht_symbolizer_t *s, Dwarf_Die *die,
			    bool *has_linkage)
{
	Dwarf_Attribute attr;
	const char *link = dwarf_formstring(
		dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
	if (!link)
		link = dwarf_formstring(
			dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
	const char *plain =
		dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
	*has_linkage = link != NULL;
	if (link) {
		const char *d = demangle(s, link);
		/* demangle() hands back the input when it fails; the plain
		 * name reads better than a raw _Z string then. */
		if (d && (plain == NULL || strcmp(d, link) != 0))
			return d;
	}
	return intern(s, plain);
}

/* Preference among aliases at one address (malloc vs __libc_malloc):
 * sized over sizeless, global over weak over local, then fewer leading
 * underscores (the public name). */
static int sym_rank(const GElf_Sym *sym, const char *name)
{
	int bind = GELF_ST_BIND(sym->st_info);
	int under = 0;
	while (name[under] == '_' && under < 9)
		under++;
	return (sym->st_size ? 0 : 1000) +
	       (bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 100 : 200) + under;
}

static int sym_cmp(const void *a, const void *b)
{
	const elf_sym_t *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return (x->rank > y->rank) - (x->rank < y->rank);
}

/* Sorted index of m's function symbols. dwfl_module_addrinfo scans the
 * whole symbol table on every call (elfutils 0.188): 3.4 ms per lookup in
 * gcc's cc1 with its 29k exported symbols, 6.6 s for 10k addresses. One
 * pass here and a binary search per lookup instead. */
static void build_symbols(sym_module_t *m)
{
	m->syms_built = true;
	int n = dwfl_module_getsymtab(m->mod);
	if (n <= 0)
		return;
	m->syms = malloc((size_t)n * sizeof(*m->syms));
	if (!m->syms)
		return;
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		GElf_Word shndx;
		const char *name = dwfl_module_getsym_info(m->mod, i, &sym, &addr,
							  &shndx, NULL, NULL);
		int type = GELF_ST_TYPE(sym.st_info);
		/* Functions only: data objects and labels (_end, __bss_start)
		 * would name code they do not describe. */
		if (!name || !*name || sym.st_shndx == SHN_UNDEF ||
		    (type != STT_FUNC && type != STT_GNU_IFUNC))
			continue;
		m->syms[m->nsyms++] = (elf_sym_t){ .addr = addr,
						   .size = sym.st_size,
						   .name = name,
						   .rank = sym_rank(&sym, name) };
	}
	qsort(m->syms, m->nsyms, sizeof(*m->syms), sym_cmp);
}

/* Raw name of the ELF symbol covering addr (.symtab, or .dynsym in a
 * stripped object, or the separate debuginfo's .symtab). NULL when none
 * does. Points into the module's ELF data. */
static const char *elf_symbol_raw(sym_module_t *m, Dwarf_Addr addr)
{
	if (!m->syms_built)
		build_symbols(m);
	/* Last symbol at or below addr; among aliases the best ranked comes
	 * first, so step back to it. */
	size_t lo = 0, hi = m->nsyms;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	size_t i = lo - 1;
	while (i > 0 && m->syms[i - 1].addr == m->syms[i].addr)
		i--;
	const elf_sym_t *best = NULL;
	for (size_t k = i; k < lo && !best; k++)
		if (addr < m->syms[k].addr + m->syms[k].size)
			best = &m->syms[k];
	/* A sized symbol below may still cover addr (nested symbols); look a
	 * few entries back rather than scan. */
	for (size_t k = i, tries = 0; !best && k-- > 0 && tries < 8; tries++)
		if (m->syms[k].size && addr < m->syms[k].addr + m->syms[k].size)
			best = &m->syms[k];
	/* A sizeless function (hand-written assembly) extends to the next
	 * symbol, as libdw assumes too. */
	if (!best && m->syms[i].size == 0)
		best = &m->syms[i];
	return best ? best->name : NULL;
}

/* The same, demangled and interned. */
static const char *elf_symbol(ht_symbolizer_t *s, sym_module_t *m,
			      Dwarf_Addr addr)
{
	return demangle(s, elf_symbol_raw(m, addr));
}

/* Absolute form of a DWARF source path. libdw joins a file with its line
 * table directory, but (0.188) leaves DWARF 5 directories that are relative
 * to the compilation directory relative ("tests/unit/x.c" for a file
 * compiled as tests/unit/x.c). DWARF defines them relative to DW_AT_comp_dir,
 * so join them here; a relative comp_dir (-fdebug-prefix-map=...=.) leaves
 * the path as DWARF has it. */
static const char *source_path(ht_symbolizer_t *s, Dwarf_Die *cu,
			       const char *path)
{
	if (!path || path[0] == '/' || !cu)
		return intern(s, path);
	Dwarf_Attribute attr;
	const char *dir =
		dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &attr));
	if (!dir || dir[0] != '/')
		return intern(s, path);
	const char *rel = path;
	while (rel[0] == '.' && rel[1] == '/')
		rel += 2;
	size_t dl = strlen(dir);
	char buf[4096];
	int n = snprintf(buf, sizeof(buf), "%s%s%s", dir,
			 dl && dir[dl - 1] == '/' ? "" : "/", rel);
	if (n < 0 || (size_t)n >= sizeof(buf))
		return intern(s, path);
	return intern(s, buf);
}

/* Line-table answer for addr: the innermost source position, which is the
 * position inside the innermost inlined function. */
static void line_of(ht_symbolizer_t *s, Dwfl_Module *mod, Dwarf_Addr addr,
		    const char **file, int *line)
{
	*file = NULL;
	*line = 0;
	Dwfl_Line *l = dwfl_module_getsrc(mod, addr);
	if (!l)
		return;
	/* The row found is the last one at or below addr, and a sequence may
	 * end in a row of no length: code after it without debug information
	 * (_start, a static library's) would get that row's line. Not unless
	 * its compilation unit covers addr. */
	Dwarf_Addr bias, base, lo, hi;
	Dwarf_Die *cu = dwfl_linecu(l);
	if (cu && dwfl_module_getdwarf(mod, &bias) && dwarf_ranges(cu, 0, &base, &lo, &hi) > 0 &&
	    dwarf_haspc(cu, addr - bias) == 0)
		return; /* a unit without ranges is taken at its line table's word */
	int lineno = 0;
	const char *src = dwfl_lineinfo(l, NULL, &lineno, NULL, NULL, NULL);
	*file = source_path(s, dwfl_linecu(l), src);
	*line = lineno > 0 ? lineno : 0;
}

static bool is_function_tag(int tag)
{
	return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine ||
	       tag == DW_TAG_entry_point;
}

/* ------------------------------------------------------------------------ */
/* Scopes at an address                                                     */
/* ------------------------------------------------------------------------ */

/* dwarf_getscopes and dwarf_getscopes_die walk the whole CU for every
 * address (dwarf_getscopes_die without pruning): ~80-160 us per address in
 * libc's CUs, dominated by dwarf_siblingof. Instead each CU's functions are
 * indexed once, the function at pc is found by binary search, and only its
 * own subtree is descended. libdw's walk remains the fallback. */

/* Nesting bound for the descent (lexical blocks + inline levels). */
#define SYM_MAX_DEPTH 128

static int fn_cmp(const void *a, const void *b)
{
	const fn_range_t *x = a, *y = b;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	/* Aliases over one range (assembly CUs declare getcontext and
	 * __getcontext): the first in DIE order, as libdw's walk picks. */
	Dwarf_Off ox = dwarf_dieoffset((Dwarf_Die *)&x->die);
	Dwarf_Off oy = dwarf_dieoffset((Dwarf_Die *)&y->die);
	return (ox > oy) - (ox < oy);
}

/* Collect the ranges of every function defined under parent: at CU level,
 * and inside namespaces and classes (GCC nests functions defined in a
 * namespace there) and dwz-imported units. Functions are not descended:
 * what is inside one is found later by descent from it. */
static void index_children(cu_index_t *ci, Dwarf_Die *parent, int depth)
{
	Dwarf_Die c;
	if (depth > 16 || dwarf_child(parent, &c) != 0)
		return;
	do {
		switch (dwarf_tag(&c)) {
		case DW_TAG_subprogram:
		case DW_TAG_entry_point: {
			Dwarf_Addr base, lo, hi;
			ptrdiff_t off = 0;
			while ((off = dwarf_ranges(&c, off, &base, &lo, &hi)) > 0) {
				if (lo >= hi)
					continue;
				if (ci->nfns == ci->cap) {
					size_t cap = ci->cap ? ci->cap * 2 : 64;
					fn_range_t *t =
						realloc(ci->fns, cap * sizeof(*t));
					if (!t)
						return;
					ci->fns = t;
					ci->cap = cap;
				}
				ci->fns[ci->nfns++] =
					(fn_range_t){ .lo = lo, .hi = hi, .die = c };
			}
			break;
		}
		case DW_TAG_namespace:
		case DW_TAG_class_type:
		case DW_TAG_structure_type:
		case DW_TAG_union_type:
		case DW_TAG_module:
			index_children(ci, &c, depth + 1);
			break;
		case DW_TAG_imported_unit: {
			Dwarf_Attribute attr;
			Dwarf_Die unit;
			if (dwarf_formref_die(dwarf_attr(&c, DW_AT_import, &attr),
					      &unit))
				index_children(ci, &unit, depth + 1);
			break;
		}
		default:
			break;
		}
	} while (dwarf_siblingof(&c, &c) == 0);
}

/* The index of cudie's CU, built on first use. NULL: out of memory. */
static cu_index_t *cu_index(sym_module_t *m, Dwarf_Die *cudie)
{
	const void *key = cudie->addr;
	uint64_t h = mix64((uint64_t)(uintptr_t)key);
	if (m->cus_cap) {
		size_t mask = m->cus_cap - 1;
		for (size_t i = h & mask; m->cus[i]; i = (i + 1) & mask)
			if (m->cus[i]->key == key)
				return m->cus[i];
	}
	if ((m->ncus + 1) * 2 > m->cus_cap) {
		size_t cap = m->cus_cap ? m->cus_cap * 2 : 64;
		cu_index_t **t = calloc(cap, sizeof(*t));
		if (!t)
			return NULL;
		for (size_t k = 0; k < m->cus_cap; k++) {
			if (!m->cus[k])
				continue;
			size_t i = mix64((uint64_t)(uintptr_t)m->cus[k]->key) &
				   (cap - 1);
			while (t[i])
				i = (i + 1) & (cap - 1);
			t[i] = m->cus[k];
		}
		free(m->cus);
		m->cus = t;
		m->cus_cap = cap;
	}
	cu_index_t *ci = calloc(1, sizeof(*ci));
	if (!ci)
		return NULL;
	ci->key = key;
	index_children(ci, cudie, 0);
	qsort(ci->fns, ci->nfns, sizeof(*ci->fns), fn_cmp);
	size_t i = h & (m->cus_cap - 1);
	while (m->cus[i])
		i = (i + 1) & (m->cus_cap - 1);
	m->cus[i] = ci;
	m->ncus++;
	return ci;
}

static bool is_block_tag(int tag)
{
	return tag == DW_TAG_inlined_subroutine ||
	       tag == DW_TAG_lexical_block || tag == DW_TAG_try_block ||
	       tag == DW_TAG_catch_block || tag == DW_TAG_with_stmt;
}

/* Physical scopes at pc, innermost first, into out[SYM_MAX_DEPTH]: the
 * nested inlined instances and blocks, then the function. 0 when the index
 * has no function at pc. */
static int indexed_scopes(sym_module_t *m, Dwarf_Die *cudie, Dwarf_Addr pc,
			  Dwarf_Die *out)
{
	cu_index_t *ci = cu_index(m, cudie);
	if (!ci || !ci->nfns)
		return 0;
	size_t lo = 0, hi = ci->nfns;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ci->fns[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	const fn_range_t *f = NULL;
	/* Ranges of distinct functions do not overlap in practice; a few
	 * steps back cover odd producers that nest them. */
	for (size_t k = lo, tries = 0; k-- > 0 && tries < 4 && !f; tries++)
		if (pc < ci->fns[k].hi)
			f = &ci->fns[k];
	if (!f)
		return 0;
	/* Among aliases starting at the same address, the first sorted. */
	while (f > ci->fns && f[-1].lo == f->lo && pc < f[-1].hi)
		f--;

	Dwarf_Die chain[SYM_MAX_DEPTH];
	int depth = 0;
	chain[depth++] = f->die;
	for (bool deeper = true; deeper && depth < SYM_MAX_DEPTH;) {
		deeper = false;
		Dwarf_Die c;
		if (dwarf_child(&chain[depth - 1], &c) != 0)
			break;
		do {
			if (is_block_tag(dwarf_tag(&c)) && dwarf_haspc(&c, pc) > 0) {
				chain[depth++] = c;
				deeper = true;
				break;
			}
		} while (dwarf_siblingof(&c, &c) == 0);
	}
	for (int i = 0; i < depth; i++)
		out[i] = chain[depth - 1 - i];
	return depth;
}

/* libdw's own walk, for what the index misses (GNU C nested functions,
 * unusual producers). dwarf_getscopes finds the innermost scope at pc, but
 * past an inlined instance it continues into the *abstract* definition's
 * scopes (made for variable lookup); the physical nesting comes from
 * dwarf_getscopes_die on that innermost DIE, as eu-addr2line -i does.
 * *scopes is malloc'd (caller frees) when the return is > 0. */
static int libdw_scopes(Dwarf_Die *cudie, Dwarf_Addr pc, Dwarf_Die **scopes)
{
	*scopes = NULL;
	int n = dwarf_getscopes(cudie, pc, scopes);
	if (n <= 0) {
		free(*scopes);
		*scopes = NULL;
		return 0;
	}
	Dwarf_Die inner = (*scopes)[0];
	free(*scopes);
	*scopes = NULL;
	n = dwarf_getscopes_die(&inner, scopes);
	if (n <= 0) {
		free(*scopes);
		*scopes = NULL;
		return 0;
	}
	return n;
}

/* Expand addr through DWARF scopes into out[]: innermost inlined function
 * first, the containing real function last. Returns the number of frames,
 * 0 when DWARF has no function there (no debuginfo, line tables only). */
static size_t resolve_dwarf(ht_symbolizer_t *s, sym_module_t *m,
			    Dwarf_Addr addr, ht_frame_t *out, size_t max)
{
	Dwarf_Addr bias;
	Dwarf_Die *cudie = dwfl_module_addrdie(m->mod, addr, &bias);
	if (!cudie)
		return 0;
	Dwarf_Die chain[SYM_MAX_DEPTH];
	Dwarf_Die *scopes = chain;
	int nscopes = indexed_scopes(m, cudie, addr - bias, chain);
	if (nscopes <= 0) {
		nscopes = libdw_scopes(cudie, addr - bias, &scopes);
		if (nscopes <= 0)
			return 0;
	}

	/* The line table gives the innermost position; every outer frame is
	 * at the call site its inlined callee recorded (DW_AT_call_file/line,
	 * indices into the line table of the CU holding the DIE). */
	const char *file;
	int line;
	line_of(s, m->mod, addr, &file, &line);
	Dwarf_Files *files = NULL;
	Dwarf_Die cu; /* valid once files is set */
	size_t n = 0;
	bool real = false;
	for (int i = 0; i < nscopes && n < max && !real; i++) {
		Dwarf_Die *die = &scopes[i];
		int tag = dwarf_tag(die);
		if (!is_function_tag(tag))
			continue;
		real = tag != DW_TAG_inlined_subroutine;
		bool has_linkage;
		const char *name = die_name(s, die, &has_linkage);
		/* GCC gives internal-linkage C++ functions (static, or templates
		 * over a lambda) only DW_AT_name: "foo", without scope and
		 * parameters. An out-of-line one still has its mangled symbol
		 * in .symtab, which reads "ns::foo(int)". */
		if (real && !has_linkage) {
			const char *sym = elf_symbol_raw(m, addr);
			if (sym && (!name || (sym[0] == '_' && sym[1] == 'Z')))
				name = demangle(s, sym);
		}
		out[n++] = (ht_frame_t){ .function = name,
					 .file = file,
					 .line = line,
					 .module = m->path,
					 .inlined = !real };
		if (real)
			break;

		/* The caller's position is this instance's call site. */
		file = NULL;
		line = 0;
		Dwarf_Attribute attr;
		Dwarf_Word v;
		if (!files) {
			if (!dwarf_diecu(die, &cu, NULL, NULL) ||
			    dwarf_getsrcfiles(&cu, &files, NULL) != 0)
				files = NULL;
		}
		if (files &&
		    dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &attr),
				    &v) == 0)
			file = source_path(
				s, &cu, dwarf_filesrc(files, v, NULL, NULL));
		if (dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &attr),
				    &v) == 0)
			line = (int)v;
	}
	if (scopes != chain)
		free(scopes);

	/* Inlined frames without an enclosing subprogram DIE (broken or
	 * partial DWARF): the real function still gets its frame, named by
	 * the ELF symbol, at the outermost call site. */
	if (n > 0 && !real && n < max)
		out[n++] = (ht_frame_t){ .function = elf_symbol(s, m, addr),
					 .file = file,
					 .line = line,
					 .module = m->path,
					 .inlined = false };
	return n;
}

/* Frames for ip in m (m may be NULL), written to out[0..max). Never 0. */
static size_t resolve(ht_symbolizer_t *s, sym_module_t *m, uint64_t ip,
		      ht_frame_t *out, size_t max)
{
	size_t n = 0;
	/* ip - 1: a return address points after the call, possibly already
	 * into the next line or, after a noreturn call, the next function. */
	if (m && ip > 0 && module_open(s, m)) {
		Dwarf_Addr addr = ip - 1;
		n = resolve_dwarf(s, m, addr, out, max);
		if (n == 0) {
			out[0] = (ht_frame_t){
				.function = elf_symbol(s, m, addr),
				.module = m->path,
			};
			line_of(s, m->mod, addr, &out[0].file, &out[0].line);
			n = 1;
		}
	}
	if (n == 0) {
		out[0] = (ht_frame_t){ .module = m ? m->path : NULL };
		n = 1;
	}
	for (size_t i = 0; i < n; i++)
		out[i].address = ip;
	return n;
}

/* ------------------------------------------------------------------------ */
/* The cache                                                                */
/* ------------------------------------------------------------------------ */

static size_t cache_slot(const ht_symbolizer_t *s, uint64_t module_id,
			 uint64_t ip)
{
	size_t mask = s->cache_cap - 1;
	size_t i = mix64(ip ^ mix64(module_id)) & mask;
	while (s->cache[i].count &&
	       (s->cache[i].ip != ip || s->cache[i].module_id != module_id))
		i = (i + 1) & mask;
	return i;
}

static int cache_grow(ht_symbolizer_t *s)
{
	size_t old_cap = s->cache_cap;
	cache_entry_t *old = s->cache;
	size_t cap = old_cap ? old_cap * 2 : 4096;
	cache_entry_t *t = calloc(cap, sizeof(*t));
	if (!t)
		return -1;
	s->cache = t;
	s->cache_cap = cap;
	for (size_t i = 0; i < old_cap; i++)
		if (old[i].count)
			s->cache[cache_slot(s, old[i].module_id, old[i].ip)] =
				old[i];
	free(old);
	return 0;
}

/* Remember frames f[0..n) for (module_id, ip). Failure (out of memory, or
 * a pool beyond 4G frames) only means the address is resolved again. */
static void cache_put(ht_symbolizer_t *s, uint64_t module_id, uint64_t ip,
		      const ht_frame_t *f, size_t n)
{
	if ((s->ncache + 1) * 2 > s->cache_cap && cache_grow(s) < 0)
		return;
	if (s->nframes + n > s->frames_cap) {
		size_t cap = s->frames_cap ? s->frames_cap * 2 : 4096;
		while (cap < s->nframes + n)
			cap *= 2;
		if (cap > UINT32_MAX)
			return;
		ht_frame_t *t = realloc(s->frames, cap * sizeof(*t));
		if (!t)
			return;
		s->frames = t;
		s->frames_cap = cap;
	}
	memcpy(s->frames + s->nframes, f, n * sizeof(*f));
	size_t i = cache_slot(s, module_id, ip);
	s->cache[i] = (cache_entry_t){ .module_id = module_id,
				       .ip = ip,
				       .first = (uint32_t)s->nframes,
				       .count = (uint32_t)n };
	s->nframes += n;
	s->ncache++;
}

/* ------------------------------------------------------------------------ */
/* Prefetch: the distinct addresses resolved on worker threads              */
/* ------------------------------------------------------------------------ */

/* One address's answer: written by its worker, then read by the calling
 * thread once done is set (release / acquire). */
typedef struct pf_item {
	uint64_t module_id, ip;
	ht_frame_t *frames;  /* malloc'd; strings in the worker's arena */
	uint32_t count;	     /* 0: not resolved (out of memory): resolve anew */
	const char *warning; /* its module's, when that is unusable */
	atomic_bool done;
} pf_item_t;

typedef struct pf_worker {
	struct prefetch *pf;
	ht_symbolizer_t *sym; /* its own: a Dwfl session is never shared */
	uint32_t *items;      /* indexes into pf->items, in the caller's order */
	size_t nitems;
	pthread_t th;
	bool running;
} pf_worker_t;

typedef struct prefetch {
	pf_item_t *items;
	size_t n;
	uint32_t *index; /* open addressing on (module, ip): 1 + item, 0 empty */
	size_t index_cap;
	pf_worker_t *w;
	unsigned nw;
	atomic_bool stop; /* the symbolizer is being freed */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned waiters;
} prefetch_t;

static void *pf_main(void *arg)
{
	pf_worker_t *w = arg;
	prefetch_t *pf = w->pf;
	ht_frame_t tmp[SYM_MAX_FRAMES];
	for (size_t k = 0; k < w->nitems; k++) {
		if (atomic_load_explicit(&pf->stop, memory_order_relaxed))
			break;
		pf_item_t *it = &pf->items[w->items[k]];
		sym_module_t *m = find_module(w->sym, it->module_id);
		size_t n = resolve(w->sym, m, it->ip, tmp, SYM_MAX_FRAMES);
		if ((it->frames = malloc(n * sizeof(*tmp)))) {
			memcpy(it->frames, tmp, n * sizeof(*tmp));
			it->count = (uint32_t)n;
		}
		it->warning = m ? m->warning : NULL;
		pthread_mutex_lock(&pf->lock);
		atomic_store_explicit(&it->done, true, memory_order_release);
		if (pf->waiters)
			pthread_cond_broadcast(&pf->cond);
		pthread_mutex_unlock(&pf->lock);
	}
	return NULL;
}

static size_t pf_slot(const prefetch_t *pf, uint64_t module_id, uint64_t ip)
{
	size_t mask = pf->index_cap - 1;
	size_t i = mix64(ip ^ mix64(module_id)) & mask;
	while (pf->index[i]) {
		const pf_item_t *it = &pf->items[pf->index[i] - 1];
		if (it->ip == ip && it->module_id == module_id)
			break;
		i = (i + 1) & mask;
	}
	return i;
}

/* Item k's answer, once its worker has written it. */
static const pf_item_t *pf_wait(prefetch_t *pf, size_t k)
{
	pf_item_t *it = &pf->items[k];
	if (!atomic_load_explicit(&it->done, memory_order_acquire)) {
		pthread_mutex_lock(&pf->lock);
		pf->waiters++;
		while (!atomic_load_explicit(&it->done, memory_order_acquire))
			pthread_cond_wait(&pf->cond, &pf->lock);
		pf->waiters--;
		pthread_mutex_unlock(&pf->lock);
	}
	return it;
}

/* The worker's answer as this symbolizer's own: its strings interned here,
 * so that equal names are one pointer whichever thread found them. */
static size_t pf_take(ht_symbolizer_t *s, sym_module_t *m, const pf_item_t *it,
		      ht_frame_t *out)
{
	if (it->warning && m)
		warn_path(s, m->path, it->warning);
	for (uint32_t i = 0; i < it->count; i++) {
		out[i] = it->frames[i];
		out[i].function = intern(s, out[i].function);
		out[i].file = intern(s, out[i].file);
		out[i].module = m ? m->path : intern(s, out[i].module);
	}
	return it->count;
}

/* Worker k's modules, with their sessions and indexes, handed to s once the
 * worker is done: an address the prefetch did not cover then reuses them
 * rather than opening the files again. */
static void pf_adopt(ht_symbolizer_t *s, unsigned k)
{
	pf_worker_t *w = &s->pf->w[k];
	if (w->running) {
		pthread_join(w->th, NULL);
		w->running = false;
	}
	for (size_t i = 0; i < w->sym->nmods; i++) {
		sym_module_t *wm = w->sym->mods[i], *m = find_module(s, wm->id);
		if (!m || m->worker != (int)k)
			continue;
		m->worker = -1;
		if (m->state != MOD_UNOPENED || wm->state == MOD_UNOPENED)
			continue;
		m->state = wm->state;
		m->dwfl = wm->dwfl;
		m->mod = wm->mod;
		m->syms = wm->syms;
		m->nsyms = wm->nsyms;
		m->syms_built = wm->syms_built;
		m->cus = wm->cus;
		m->ncus = wm->ncus;
		m->cus_cap = wm->cus_cap;
		m->warning = wm->warning; /* in w's arena, kept until prefetch_free */
		wm->dwfl = NULL;
		wm->syms = NULL;
		wm->cus = NULL;
		wm->ncus = wm->cus_cap = 0;
	}
}

int ht_symbolize_prefetch(ht_symbolizer_t *s, const uint64_t *module_ids,
			  const uint64_t *ips, size_t n, unsigned nthreads)
{
	if (s->pf || s->quiet || nthreads < 1 || n == 0 || n >= UINT32_MAX / 4)
		return 0;
	prefetch_t *pf = calloc(1, sizeof(*pf));
	size_t *cnt = calloc(s->nmods ? s->nmods : 1, sizeof(*cnt));
	size_t *order = malloc((s->nmods ? s->nmods : 1) * sizeof(*order));
	size_t *load = calloc(nthreads, sizeof(*load));
	int *owner = malloc((s->nmods ? s->nmods : 1) * sizeof(*owner));
	size_t cap = 64;
	while (cap < 2 * n)
		cap *= 2;
	if (!pf || !cnt || !order || !load || !owner ||
	    !(pf->items = calloc(n, sizeof(*pf->items))) ||
	    !(pf->index = calloc(cap, sizeof(*pf->index))) ||
	    !(pf->w = calloc(nthreads, sizeof(*pf->w))))
		goto fail;
	pf->index_cap = cap;
	pthread_mutex_init(&pf->lock, NULL);
	pthread_cond_init(&pf->cond, NULL);
	s->pf = pf;
	/* the distinct addresses of known modules (others need no lookup),
	 * counted per module; mods[] and its index, as declared */
	for (size_t i = 0; i < n; i++) {
		sym_module_t *m = module_ids[i] == UINT64_MAX ? NULL : find_module(s, module_ids[i]);
		if (!m || m->state != MOD_UNOPENED) /* opened here: resolved here */
			continue;
		size_t j = pf_slot(pf, module_ids[i], ips[i]);
		if (pf->index[j])
			continue;
		pf->items[pf->n] = (pf_item_t){ .module_id = module_ids[i], .ip = ips[i] };
		pf->index[j] = (uint32_t)++pf->n;
	}
	size_t nused = 0;
	for (size_t i = 0; i < pf->n; i++) {
		size_t k = module_index(s, pf->items[i].module_id);
		if (!cnt[k]++)
			order[nused++] = k;
	}
	/* whole modules to workers, most addresses first, each to the least
	 * loaded: a module's DWARF is read and indexed by one worker only */
	for (size_t a = 1; a < nused; a++)
		for (size_t b = a; b > 0 && cnt[order[b]] > cnt[order[b - 1]]; b--) {
			size_t x = order[b];
			order[b] = order[b - 1];
			order[b - 1] = x;
		}
	pf->nw = nused < nthreads ? (unsigned)nused : nthreads;
	for (size_t k = 0; k < s->nmods; k++)
		owner[k] = -1;
	for (size_t a = 0; a < nused; a++) {
		unsigned best = 0;
		for (unsigned k = 1; k < pf->nw; k++)
			if (load[k] < load[best])
				best = k;
		load[best] += cnt[order[a]];
		owner[order[a]] = (int)best;
	}
	for (unsigned k = 0; k < pf->nw; k++) {
		pf_worker_t *w = &pf->w[k];
		w->pf = pf;
		if (!(w->sym = ht_symbolizer_new()) ||
		    !(w->items = malloc(load[k] * sizeof(*w->items))))
			goto undo;
		w->sym->quiet = true;
	}
	for (size_t k = 0; k < s->nmods; k++) {
		sym_module_t *m = s->mods[k];
		if (owner[k] < 0)
			continue;
		ht_symbolizer_t *ws = pf->w[owner[k]].sym;
		ht_symbolizer_add_module(ws, m->id, m->path, m->build_id, m->build_id_len,
					 m->load_bias, m->segs, m->nsegs);
		if (!find_module(ws, m->id))
			goto undo;
	}
	for (size_t i = 0; i < pf->n; i++) {
		size_t k = module_index(s, pf->items[i].module_id);
		pf_worker_t *w = &pf->w[owner[k]];
		w->items[w->nitems++] = (uint32_t)i;
	}
	/* dwfl_begin sets libelf's version: once here, not racing in each */
	elf_version(EV_CURRENT);
	for (unsigned k = 0; k < pf->nw; k++) {
		pf_worker_t *w = &pf->w[k];
		if (pthread_create(&w->th, NULL, pf_main, w)) {
			/* its addresses resolve on the calling thread */
			for (size_t i = 0; i < w->nitems; i++)
				atomic_store(&pf->items[w->items[i]].done, true);
			continue;
		}
		w->running = true;
	}
	for (size_t k = 0; k < s->nmods; k++)
		if (owner[k] >= 0 && pf->w[owner[k]].running)
			s->mods[k]->worker = owner[k];
	free(cnt);
	free(order);
	free(load);
	free(owner);
	return 0;
undo:
	prefetch_free(s);
	pf = NULL;
fail:
	if (pf) {
		free(pf->items);
		free(pf->index);
		free(pf->w);
		free(pf);
	}
	free(cnt);
	free(order);
	free(load);
	free(owner);
	return -ENOMEM;
}

static void prefetch_free(ht_symbolizer_t *s)
{
	prefetch_t *pf = s->pf;
	if (!pf)
		return;
	atomic_store(&pf->stop, true);
	for (unsigned k = 0; k < pf->nw; k++) {
		pf_worker_t *w = &pf->w[k];
		if (w->running)
			pthread_join(w->th, NULL);
		ht_symbolizer_free(w->sym);
		free(w->items);
	}
	for (size_t i = 0; i < pf->n; i++)
		free(pf->items[i].frames);
	pthread_mutex_destroy(&pf->lock);
	pthread_cond_destroy(&pf->cond);
	for (size_t k = 0; k < s->nmods; k++)
		s->mods[k]->worker = -1;
	free(pf->items);
	free(pf->index);
	free(pf->w);
	free(pf);
	s->pf = NULL;
}

size_t ht_symbolize(ht_symbolizer_t *s, uint64_t module_id, uint64_t ip,
		    ht_frame_t *out, size_t max)
{
	if (max == 0)
		return 0;
	if (s->cache_cap) {
		const cache_entry_t *e =
			&s->cache[cache_slot(s, module_id, ip)];
		if (e->count) {
			size_t n = e->count < max ? e->count : max;
			memcpy(out, s->frames + e->first, n * sizeof(*out));
			return n;
		}
	}
	/* Resolve the whole chain once, whatever max is, so the cache holds
	 * the complete answer for later callers with more room. */
	ht_frame_t tmp[SYM_MAX_FRAMES];
	sym_module_t *m =
		module_id == UINT64_MAX ? NULL : find_module(s, module_id);
	size_t n = 0;
	if (s->pf && m) {
		size_t j = pf_slot(s->pf, module_id, ip);
		if (s->pf->index[j])
			n = pf_take(s, m, pf_wait(s->pf, s->pf->index[j] - 1), tmp);
		else if (m->worker >= 0)
			pf_adopt(s, (unsigned)m->worker);
	}
	if (n == 0)
		n = resolve(s, m, ip, tmp, SYM_MAX_FRAMES);
	cache_put(s, module_id, ip, tmp, n);
	if (n > max)
		n = max;
	memcpy(out, tmp, n * sizeof(*out));
	return n;
}

size_t ht_symbolize_exact(ht_symbolizer_t *s, uint64_t module_id, uint64_t addr,
			  ht_frame_t *out, size_t max)
{
	/* resolve() subtracts 1 from what it is given: hand it addr + 1 (no
	 * module holds UINT64_MAX, so not wrapping there loses nothing) */
	size_t n = ht_symbolize(s, module_id, addr == UINT64_MAX ? addr : addr + 1, out, max);
	for (size_t i = 0; i < n; i++)
		out[i].address = addr;
	return n;
}
