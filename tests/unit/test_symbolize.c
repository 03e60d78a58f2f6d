/* test_symbolize.c - analysis/symbolize.c against real objects.
 *
 * Everything is checked against ground truth the test owns: return addresses
 * taken in this executable at known lines, a C++ program with a two-level
 * inline chain compiled at test time (-O2 -g) that prints its own return
 * address, a stripped library linked at a non-zero address (.dynsym only),
 * libc's malloc, and stale/missing files. It also times gcc's cc1 (stripped,
 * ET_EXEC) and libc (DWARF from libc6-dbg when installed) at 10k addresses.
 * Needs cc and c++ at run time; the timings are printed, not asserted.
 */
#include "analysis/symbolize.h"
#include "test.h"

#include <dlfcn.h>
#include <elf.h>
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <link.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAXF 16

/* Checks test.h does not have: exact string equality where NULL equals only
 * NULL (unknown values must stay NULL), suffix, and a failure with a
 * message. */
#define STR_EQ(a, b)                                                          \
	do {                                                                  \
		const char *a_ = (a), *b_ = (b);                              \
		int ok_ = (!a_ && !b_) || (a_ && b_ && !strcmp(a_, b_));      \
		test_result(ok_, __FILE__, __LINE__, #a " == " #b);           \
		if (!ok_)                                                     \
			fprintf(stderr, "    got \"%s\", expected \"%s\"\n",     \
				a_ ? a_ : "(null)", b_ ? b_ : "(null)");      \
	} while (0)

#define STR_ENDS(str, suffix)                                                 \
	do {                                                                  \
		const char *s_ = (str), *x_ = (suffix);                       \
		size_t ls_ = s_ ? strlen(s_) : 0, lx_ = strlen(x_);          \
		int ok_ = s_ && ls_ >= lx_ && !strcmp(s_ + ls_ - lx_, x_);    \
		test_result(ok_, __FILE__, __LINE__, #str " ends with " #suffix); \
		if (!ok_)                                                     \
			fprintf(stderr, "    got \"%s\"\n", s_ ? s_ : "(null)"); \
	} while (0)

#define FAIL(...)                                                             \
	do {                                                                  \
		fprintf(stderr, "    ");                                      \
		fprintf(stderr, __VA_ARGS__);                                 \
		fputc('\n', stderr);                                          \
		test_result(0, __FILE__, __LINE__, "setup");                  \
	} while (0)

/* ------------------------------------------------------------------------ */
/* What the trace would record about a module, taken from the live process */
/* ------------------------------------------------------------------------ */

typedef struct modinfo {
	char path[4096];
	uint64_t bias;
	uint8_t build_id[64];
	size_t build_id_len;
	ht_segment_t segs[16];
	size_t nsegs;
} modinfo_t;

typedef struct find_ctx {
	const char *needle; /* "" for the main executable */
	modinfo_t *out;
	int found;
} find_ctx_t;

/* The GNU build-id note of a loaded object, read from its PT_NOTE segments
 * in memory, as the agent does. */
static void read_build_id(struct dl_phdr_info *info, modinfo_t *mi)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr);
		const char *end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
			const char *name = p + sizeof(*n);
			const char *desc = name + ((n->n_namesz + 3) & ~3u);
			if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 &&
			    memcmp(name, "GNU", 4) == 0 &&
			    n->n_descsz <= sizeof(mi->build_id)) {
				memcpy(mi->build_id, desc, n->n_descsz);
				mi->build_id_len = n->n_descsz;
				return;
			}
			p = desc + ((n->n_descsz + 3) & ~3u);
		}
	}
}

static int find_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	find_ctx_t *c = data;
	const char *name = info->dlpi_name ? info->dlpi_name : "";
	if (c->needle[0] ? !strstr(name, c->needle) : name[0] != '\0')
		return 0;
	modinfo_t *mi = c->out;
	memset(mi, 0, sizeof(*mi));
	if (name[0]) {
		snprintf(mi->path, sizeof(mi->path), "%s", name);
	} else {
		ssize_t n = readlink("/proc/self/exe", mi->path,
				     sizeof(mi->path) - 1);
		mi->path[n > 0 ? n : 0] = '\0';
	}
	mi->bias = info->dlpi_addr;
	for (int i = 0; i < info->dlpi_phnum && mi->nsegs < 16; i++)
		if (info->dlpi_phdr[i].p_type == PT_LOAD)
			mi->segs[mi->nsegs++] = (ht_segment_t){
				info->dlpi_phdr[i].p_vaddr,
				info->dlpi_phdr[i].p_memsz,
				info->dlpi_phdr[i].p_flags,
			};
	read_build_id(info, mi);
	c->found = 1;
	return 1;
}

static int find_loaded(const char *needle, modinfo_t *mi)
{
	find_ctx_t c = { needle, mi, 0 };
	dl_iterate_phdr(find_cb, &c);
	return c.found;
}

static void add(ht_symbolizer_t *s, uint64_t id, const modinfo_t *mi,
		uint64_t bias)
{
	ht_symbolizer_add_module(s, id, mi->path, mi->build_id,
				 mi->build_id_len, bias, mi->segs, mi->nsegs);
}

/* Build-id and PT_LOAD list of a file on disk (for objects not loaded). */
static int file_info(const char *path, modinfo_t *mi, uint64_t *text_lo,
		     uint64_t *text_hi)
{
	memset(mi, 0, sizeof(*mi));
	snprintf(mi->path, sizeof(mi->path), "%s", path);
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf) {
		close(fd);
		return -1;
	}
	const void *id;
	ssize_t n = dwelf_elf_gnu_build_id(elf, &id);
	if (n > 0 && (size_t)n <= sizeof(mi->build_id)) {
		memcpy(mi->build_id, id, (size_t)n);
		mi->build_id_len = (size_t)n;
	}
	size_t phnum = 0, shstrndx = 0;
	elf_getphdrnum(elf, &phnum);
	for (size_t i = 0; i < phnum && mi->nsegs < 16; i++) {
		GElf_Phdr mem, *ph = gelf_getphdr(elf, (int)i, &mem);
		if (ph && ph->p_type == PT_LOAD)
			mi->segs[mi->nsegs++] = (ht_segment_t){
				ph->p_vaddr, ph->p_memsz, ph->p_flags
			};
	}
	elf_getshdrstrndx(elf, &shstrndx);
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			continue;
		const char *name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && !strcmp(name, ".text")) {
			*text_lo = sh.sh_addr;
			*text_hi = sh.sh_addr + sh.sh_size;
		}
	}
	elf_end(elf);
	close(fd);
	return 0;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------------------------ */
/* This executable                                                          */
/* ------------------------------------------------------------------------ */

static modinfo_t self;

/* The return address of its caller: the call instruction is on the line
 * the caller wrote it. */
__attribute__((noinline)) static uint64_t caller_ra(void)
{
	uint64_t ra = (uint64_t)__builtin_return_address(0);
	__asm__ volatile("" ::: "memory"); /* no tail call */
	return ra;
}

static uint64_t self_ra;
static int self_line;

__attribute__((noinline)) static void test_self(ht_symbolizer_t *s)
{
	self_ra = caller_ra(); self_line = __LINE__;

	ht_frame_t f[MAXF];
	size_t n = ht_symbolize(s, 1, self_ra, f, MAXF);
	CHECK_EQ(n, 1);
	STR_EQ(f[0].function, "test_self");
	STR_ENDS(f[0].file, "tests/unit/test_symbolize.c");
	CHECK(f[0].file && f[0].file[0] == '/');
	CHECK_EQ(f[0].line, self_line);
	STR_EQ(f[0].module, self.path);
	CHECK_EQ(f[0].address, self_ra);
	CHECK(!f[0].inlined);

	/* Cached: the same strings come back, not copies. */
	ht_frame_t g[MAXF];
	CHECK_EQ(ht_symbolize(s, 1, self_ra, g, MAXF), 1);
	CHECK(g[0].function == f[0].function && g[0].file == f[0].file);

	/* A function entry (ip - 1 lands on its first byte). */
	n = ht_symbolize(s, 1, (uint64_t)(uintptr_t)&caller_ra + 1, f, MAXF);
	STR_EQ(f[n - 1].function, "caller_ra");
}

/* ------------------------------------------------------------------------ */
/* A C++ program with an inline chain                                       */
/* ------------------------------------------------------------------------ */

static const char cxx_src[] =
	"#include <cstdio>\n"
	"#include <link.h>\n"
	"void *volatile g_ra;\n"
	"__attribute__((noinline)) void sink(int x) {\n"
	"  g_ra = __builtin_return_address(0);\n"
	"  asm volatile(\"\" : : \"r\"(x) : \"memory\");\n"
	"}\n"
	"static inline int inner_inline(int x) {\n"
	"  sink(x); // LINE_INNER\n"
	"  return x * 3;\n"
	"}\n"
	"namespace ns {\n"
	"struct Outer {\n"
	"  static int outer_inline(int x) {\n"
	"    int r = inner_inline(x + 1); // LINE_OUTER\n"
	"    return r + 2;\n"
	"  }\n"
	"};\n"
	"}\n"
	"struct Widget { int v; };\n"
	"__attribute__((noinline)) Widget make_widget(int n) {\n"
	"  Widget w;\n"
	"  w.v = ns::Outer::outer_inline(n); // LINE_MAKE\n"
	"  return w;\n"
	"}\n"
	"static int cb(struct dl_phdr_info *i, size_t, void *d) {\n"
	"  *(unsigned long *)d = i->dlpi_addr;\n"
	"  return 1;\n"
	"}\n"
	"int main(int argc, char **) {\n"
	"  Widget w = make_widget(argc);\n"
	"  unsigned long bias = 0;\n"
	"  dl_iterate_phdr(cb, &bias);\n"
	"  std::printf(\"%lx %lx\\n\", bias, (unsigned long)g_ra);\n"
	"  return w.v == 0;\n"
	"}\n";

/* 1-based line of the source line containing marker. */
static int line_of_marker(const char *marker)
{
	const char *p = strstr(cxx_src, marker);
	int line = 1;
	for (const char *q = cxx_src; p && q < p; q++)
		line += *q == '\n';
	return p ? line : -1;
}

static char tmpdir[] = "/tmp/ht_symtest.XXXXXX";

static int write_file(const char *dir, const char *name, const char *text)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

static uint64_t cxx_bias, cxx_ra;
static modinfo_t cxx;

static void test_cxx(ht_symbolizer_t *s)
{
	char cmd[1024];
	if (write_file(tmpdir, "prog.cc", cxx_src) < 0) {
		FAIL("cannot write prog.cc");
		return;
	}
	/* Relative source name: DWARF then holds comp_dir + "prog.cc", and
	 * the symbolizer must put them together into an absolute path. */
	snprintf(cmd, sizeof(cmd),
		 "cd %s && c++ -O2 -g -o prog prog.cc && ./prog > out.txt",
		 tmpdir);
	if (system(cmd) != 0) {
		FAIL("cannot build/run the C++ program: %s", cmd);
		return;
	}
	char path[512];
	snprintf(path, sizeof(path), "%s/out.txt", tmpdir);
	FILE *f = fopen(path, "r");
	unsigned long b = 0, r = 0;
	int ok = f && fscanf(f, "%lx %lx", &b, &r) == 2;
	if (f)
		fclose(f);
	if (!ok) {
		FAIL("no output from the C++ program");
		return;
	}
	cxx_bias = b;
	cxx_ra = r;
	uint64_t lo, hi;
	snprintf(path, sizeof(path), "%s/prog", tmpdir);
	file_info(path, &cxx, &lo, &hi);
	CHECK(cxx.build_id_len > 0);
	add(s, 2, &cxx, cxx_bias);

	char src[512];
	snprintf(src, sizeof(src), "%s/prog.cc", tmpdir);
	ht_frame_t fr[MAXF];
	size_t n = ht_symbolize(s, 2, cxx_ra, fr, MAXF);
	CHECK_EQ(n, 3);
	if (n != 3) {
		for (size_t i = 0; i < n; i++)
			fprintf(stderr, "  frame %zu: %s %s:%d inlined=%d\n", i,
				fr[i].function, fr[i].file, fr[i].line,
				fr[i].inlined);
		return;
	}
	/* GCC gives internal-linkage functions no DW_AT_linkage_name, so a
	 * static inline function is known by its DW_AT_name alone. */
	STR_EQ(fr[0].function, "inner_inline");
	STR_EQ(fr[0].file, src);
	CHECK_EQ(fr[0].line, line_of_marker("LINE_INNER"));
	CHECK(fr[0].inlined);
	STR_EQ(fr[1].function, "ns::Outer::outer_inline(int)");
	STR_EQ(fr[1].file, src);
	CHECK_EQ(fr[1].line, line_of_marker("LINE_OUTER"));
	CHECK(fr[1].inlined);
	STR_EQ(fr[2].function, "make_widget(int)");
	STR_EQ(fr[2].file, src);
	CHECK_EQ(fr[2].line, line_of_marker("LINE_MAKE"));
	CHECK(!fr[2].inlined);
	for (size_t i = 0; i < n; i++) {
		STR_EQ(fr[i].module, cxx.path);
		CHECK_EQ(fr[i].address, cxx_ra);
	}

	/* max smaller than the chain: the innermost frames, in order. */
	CHECK_EQ(ht_symbolize(s, 2, cxx_ra, fr, 1), 1);
	STR_EQ(fr[0].function, "inner_inline");
	CHECK_EQ(ht_symbolize(s, 2, cxx_ra, fr, 0), 0);
}

/* Two objects mapped at the same addresses (one dlclose'd, the other loaded
 * in its place): the module id alone decides. */
static void test_overlap(ht_symbolizer_t *s)
{
	const uint64_t base = 0x7f1200000000ULL;
	add(s, 10, &cxx, base);
	add(s, 11, &self, base);
	ht_frame_t f[MAXF];
	size_t n = ht_symbolize(s, 10, base + (cxx_ra - cxx_bias), f, MAXF);
	STR_EQ(f[n - 1].function, "make_widget(int)");
	n = ht_symbolize(s, 11, base + (self_ra - self.bias), f, MAXF);
	STR_EQ(f[n - 1].function, "test_self");
	CHECK_EQ(f[n - 1].line, self_line);
}

/* ------------------------------------------------------------------------ */
/* Libraries                                                                */
/* ------------------------------------------------------------------------ */

/* A stripped library whose first PT_LOAD is not at 0: names can only come
 * from .dynsym, and the load bias must not be confused with the load
 * address of the first segment. */
static void test_stripped_high_lib(ht_symbolizer_t *s)
{
	char cmd[1024], lib[512];
	write_file(tmpdir, "high.c",
		   "int exported_fn(int x) { return x * 7 + 1; }\n");
	snprintf(cmd, sizeof(cmd),
		 "cd %s && cc -shared -fPIC -O2 -g "
		 "-Wl,-Ttext-segment=0x40000000 -o libhigh.so high.c && "
		 "strip libhigh.so",
		 tmpdir);
	if (system(cmd) != 0) {
		FAIL("cannot build libhigh.so");
		return;
	}
	snprintf(lib, sizeof(lib), "%s/libhigh.so", tmpdir);
	void *h = dlopen(lib, RTLD_NOW);
	void *fn = h ? dlsym(h, "exported_fn") : NULL;
	modinfo_t mi;
	if (!fn || !find_loaded("libhigh.so", &mi)) {
		FAIL("cannot load libhigh.so: %s", dlerror());
		return;
	}
	CHECK(mi.nsegs > 0 && mi.segs[0].vaddr >= 0x40000000);
	add(s, 3, &mi, mi.bias);
	ht_frame_t f[MAXF];
	size_t n = ht_symbolize(s, 3, (uint64_t)(uintptr_t)fn + 3, f, MAXF);
	CHECK_EQ(n, 1);
	STR_EQ(f[0].function, "exported_fn");
	STR_EQ(f[0].file, NULL);
	CHECK_EQ(f[0].line, 0);
	STR_EQ(f[0].module, lib);
	dlclose(h);
}

/* libc's malloc, looked up in libc itself (not an interposer such as
 * ASan's). With libc6-dbg the DWARF name is the definition, __libc_malloc;
 * from .dynsym alone, one of its aliases. */
static void test_libc(ht_symbolizer_t *s, modinfo_t *libc)
{
	void *h = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	void *fn = h ? dlsym(h, "malloc") : NULL;
	if (!fn || !find_loaded("libc.so.6", libc)) {
		FAIL("libc.so.6 or its malloc not found");
		return;
	}
	add(s, 4, libc, libc->bias);
	ht_frame_t f[MAXF];
	size_t n = ht_symbolize(s, 4, (uint64_t)(uintptr_t)fn + 1, f, MAXF);
	const char *name = f[n - 1].function;
	CHECK(name && (!strcmp(name, "malloc") ||
		       !strcmp(name, "__libc_malloc")));
	CHECK(!f[n - 1].inlined);
	STR_EQ(f[n - 1].module, libc->path);
	printf("libc malloc -> %s  %s:%d (%zu frame%s)\n", name ? name : "?",
	       f[n - 1].file ? f[n - 1].file : "?", f[n - 1].line, n,
	       n == 1 ? "" : "s");
	dlclose(h);
}

/* ------------------------------------------------------------------------ */
/* Stale and missing files                                                  */
/* ------------------------------------------------------------------------ */

/* Runs fn with stderr captured; returns what it wrote (static buffer). */
static const char *capture_stderr(void (*fn)(ht_symbolizer_t *),
				  ht_symbolizer_t *s)
{
	static char buf[8192];
	char path[512];
	snprintf(path, sizeof(path), "%s/stderr.txt", tmpdir);
	fflush(stderr);
	int saved = dup(2);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	dup2(fd, 2);
	fn(s);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	buf[n > 0 ? n : 0] = '\0';
	close(fd);
	return buf;
}

static void stale_body(ht_symbolizer_t *s)
{
	modinfo_t bad = self;
	bad.build_id[0] ^= 0xff;
	add(s, 20, &bad, self.bias);
	add(s, 21, &bad, self.bias); /* reloaded: still one warning */
	ht_frame_t f[MAXF];
	size_t n = ht_symbolize(s, 20, self_ra, f, MAXF);
	CHECK_EQ(n, 1);
	STR_EQ(f[0].function, NULL);
	STR_EQ(f[0].file, NULL);
	CHECK_EQ(f[0].line, 0);
	STR_EQ(f[0].module, self.path);
	CHECK_EQ(f[0].address, self_ra);
	ht_symbolize(s, 20, self_ra + 16, f, MAXF);
	ht_symbolize(s, 21, self_ra, f, MAXF);
	STR_EQ(f[0].function, NULL);

	/* Without a build-id, the PT_LOAD layout decides. */
	modinfo_t noid = self;
	noid.build_id_len = 0;
	add(s, 22, &noid, self.bias);
	n = ht_symbolize(s, 22, self_ra, f, MAXF);
	STR_EQ(f[n - 1].function, "test_self");
}

static void missing_body(ht_symbolizer_t *s)
{
	static const uint8_t id[4] = { 1, 2, 3, 4 };
	ht_symbolizer_add_module(s, 30, "/nonexistent/libgone.so", id, 4,
				 0x7f0000000000ULL, NULL, 0);
	ht_symbolizer_add_module(s, 31, "linux-vdso.so.1", NULL, 0,
				 0x7ffff7fc1000ULL, NULL, 0);
	ht_frame_t f[MAXF];
	size_t n = ht_symbolize(s, 30, 0x7f0000001234ULL, f, MAXF);
	CHECK_EQ(n, 1);
	STR_EQ(f[0].function, NULL);
	STR_EQ(f[0].module, "/nonexistent/libgone.so");
	ht_symbolize(s, 30, 0x7f0000005678ULL, f, MAXF);
	n = ht_symbolize(s, 31, 0x7ffff7fc1800ULL, f, MAXF);
	CHECK_EQ(n, 1);
	STR_EQ(f[0].module, "linux-vdso.so.1");
	/* No module, or one never declared: address only. */
	n = ht_symbolize(s, UINT64_MAX, 0x1234, f, MAXF);
	CHECK_EQ(n, 1);
	STR_EQ(f[0].module, NULL);
	STR_EQ(f[0].function, NULL);
	CHECK_EQ(f[0].address, 0x1234);
	n = ht_symbolize(s, 999, 0x5678, f, MAXF);
	STR_EQ(f[0].module, NULL);
}

static int count(const char *hay, const char *needle)
{
	int c = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p++)
		c++;
	return c;
}

static void test_stale_and_missing(ht_symbolizer_t *s)
{
	char want[4096 + 256];
	const char *err = capture_stderr(stale_body, s);
	snprintf(want, sizeof(want),
		 "heaptrail: warning: %s changed since the trace was recorded "
		 "(build-id differs); its frames are left unsymbolized\n",
		 self.path);
	STR_EQ(err, want);

	err = capture_stderr(missing_body, s);
	CHECK_EQ(count(err, "heaptrail: warning: /nonexistent/libgone.so "
				"cannot be opened"),
		     1);
	CHECK_EQ(count(err, "\n"), 1);
	CHECK_EQ(count(err, "vdso"), 0);
}

/* ------------------------------------------------------------------------ */
/* Prefetch on worker threads                                               */
/* ------------------------------------------------------------------------ */

static bool frames_equal(const ht_frame_t *a, size_t na, const ht_frame_t *b, size_t nb)
{
	if (na != nb)
		return false;
	for (size_t i = 0; i < na; i++) {
		const char *sa[3] = { a[i].function, a[i].file, a[i].module };
		const char *sb[3] = { b[i].function, b[i].file, b[i].module };
		for (int k = 0; k < 3; k++)
			if (!sa[k] != !sb[k] || (sa[k] && strcmp(sa[k], sb[k])))
				return false;
		if (a[i].line != b[i].line || a[i].inlined != b[i].inlined ||
		    a[i].address != b[i].address)
			return false;
	}
	return true;
}

/* Addresses of this executable, libc (with its DWARF when installed) and
 * cc1, spread over their code, resolved on 1, 2 and 3 worker threads: the
 * frames equal those of a symbolizer that resolves each itself, for the
 * addresses prefetched and for the others of the same modules (resolved
 * later on the calling thread, in the sessions the workers opened). */
static void test_prefetch(const modinfo_t *libc)
{
	enum { PER = 600 };
	modinfo_t mods[3];
	uint64_t lo[3], hi[3];
	int nm = 0;
	const char *paths[3] = { self.path, libc->path, "/usr/lib/gcc/x86_64-linux-gnu/12/cc1" };
	for (int i = 0; i < 3; i++)
		if (access(paths[i], R_OK) == 0 && file_info(paths[i], &mods[nm], &lo[nm], &hi[nm]) == 0 &&
		    hi[nm] > lo[nm])
			nm++;
	CHECK(nm >= 2);
	uint64_t *ids = malloc(3 * PER * 2 * sizeof(*ids)), *ips = malloc(3 * PER * 2 * sizeof(*ips));
	size_t n = 0;
	for (int m = 0; m < nm; m++) {
		uint64_t bias = mods[m].nsegs && mods[m].segs[0].vaddr == 0 ? 0x7f0000000000ULL * (m + 1) : 0;
		uint64_t step = (hi[m] - lo[m]) / (2 * PER);
		for (int i = 0; i < 2 * PER; i++) {
			ids[n] = (uint64_t)m + 1;
			ips[n++] = bias + lo[m] + 1 + (uint64_t)i * step;
		}
		mods[m].bias = bias;
	}
	ids[n] = 99; /* a module nobody declared */
	ips[n++] = 0x1234;
	ht_symbolizer_t *ref = ht_symbolizer_new();
	for (int m = 0; m < nm; m++)
		add(ref, (uint64_t)m + 1, &mods[m], mods[m].bias);
	for (unsigned nth = 1; nth <= 3; nth++) {
		ht_symbolizer_t *s = ht_symbolizer_new();
		for (int m = 0; m < nm; m++)
			add(s, (uint64_t)m + 1, &mods[m], mods[m].bias);
		/* every other address: the rest are not prefetched */
		uint64_t *pids = malloc(n * sizeof(*pids)), *pips = malloc(n * sizeof(*pips));
		size_t pn = 0;
		for (size_t i = 0; i < n; i += 2) {
			pids[pn] = ids[i];
			pips[pn++] = ips[i];
		}
		CHECK_EQ(ht_symbolize_prefetch(s, pids, pips, pn, nth), 0);
		free(pids);
		free(pips);
		size_t bad = 0, named = 0;
		for (size_t i = 0; i < n; i++) {
			ht_frame_t a[64], b[64];
			size_t na = ht_symbolize(ref, ids[i], ips[i], a, 64);
			size_t nb = ht_symbolize(s, ids[i], ips[i], b, 64);
			named += nb && b[nb - 1].function;
			if (!frames_equal(a, na, b, nb) && bad++ < 3)
				FAIL("%u threads: address %#llx of module %llu: %zu frames (%s) against %zu (%s)",
				     nth, (unsigned long long)ips[i], (unsigned long long)ids[i], nb,
				     nb && b[0].function ? b[0].function : "?", na,
				     na && a[0].function ? a[0].function : "?");
		}
		CHECK_EQ(bad, 0);
		CHECK(named > n / 2); /* symbols were found: the comparison meant something */
		ht_symbolizer_free(s);
	}
	/* freed while its workers still run: they stop */
	ht_symbolizer_t *s = ht_symbolizer_new();
	for (int m = 0; m < nm; m++)
		add(s, (uint64_t)m + 1, &mods[m], mods[m].bias);
	CHECK_EQ(ht_symbolize_prefetch(s, ids, ips, n, 2), 0);
	ht_symbolizer_free(s);
	ht_symbolizer_free(ref);
	free(ids);
	free(ips);
}

/* ------------------------------------------------------------------------ */
/* Speed                                                                    */
/* ------------------------------------------------------------------------ */

/* Symbolizes N addresses spread over path's .text (in a fresh symbolizer,
 * so the timing includes opening the file and its debuginfo). */
static void time_text(const char *path, int npoints)
{
	modinfo_t mi;
	uint64_t lo = 0, hi = 0;
	if (access(path, R_OK) != 0 || file_info(path, &mi, &lo, &hi) < 0 ||
	    hi <= lo) {
		printf("timing: %s not available, skipped\n", path);
		return;
	}
	/* A PIE / library: any bias will do offline. */
	uint64_t bias = mi.nsegs && mi.segs[0].vaddr == 0 ? 0x7f0000000000ULL
							   : 0;
	ht_symbolizer_t *s = ht_symbolizer_new();
	add(s, 1, &mi, bias);
	uint64_t step = (hi - lo) / (uint64_t)npoints;
	int named = 0, lines = 0, frames = 0;
	ht_frame_t f[MAXF];
	double t0 = now();
	for (int i = 0; i < npoints; i++) {
		size_t n = ht_symbolize(s, 1, bias + lo + 1 + i * step, f,
					MAXF);
		frames += (int)n;
		named += f[n - 1].function != NULL;
		lines += f[0].line > 0;
	}
	double t1 = now();
	for (int i = 0; i < npoints; i++)
		ht_symbolize(s, 1, bias + lo + 1 + i * step, f, MAXF);
	double t2 = now();
	printf("timing: %s: %d addresses in %.1f ms (%.1f us each; cached "
	       "again %.2f ms): %d named, %d with file:line, %d frames\n",
	       path, npoints, (t1 - t0) * 1e3, (t1 - t0) * 1e6 / npoints,
	       (t2 - t1) * 1e3, named, lines, frames);
	CHECK(frames >= npoints);
	ht_symbolizer_free(s);
}

int main(void)
{
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	if (!find_loaded("", &self)) {
		fprintf(stderr, "cannot find the main executable\n");
		return 1;
	}
	CHECK(self.build_id_len > 0);

	ht_symbolizer_t *s = ht_symbolizer_new();
	add(s, 1, &self, self.bias);
	modinfo_t libc;
	test_self(s);
	test_cxx(s);
	test_overlap(s);
	test_stripped_high_lib(s);
	test_libc(s, &libc);
	test_stale_and_missing(s);
	ht_symbolizer_free(s);
	test_prefetch(&libc);

	time_text("/usr/lib/gcc/x86_64-linux-gnu/12/cc1", 10000);
	time_text(libc.path, 10000);

	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmpdir);
	return TEST_DONE();
}
