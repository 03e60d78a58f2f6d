/* frames.c - the rules of the frames every output shows (frames.h). */
#include "analysis/frames.h"

#include <errno.h>
#include <inttypes.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/util.h"

static ht_frame_opts_t opts;
static regex_t *fold_re;
static size_t nfold_re;
static char debuginfo_buf[4200] = ":.debug:/usr/lib/debug";

int ht_frames_configure(const ht_frame_opts_t *o, char *why, size_t len)
{
	opts = *o;
	opts.fold_regex = NULL;
	if (o->nfold_regex) {
		fold_re = calloc(o->nfold_regex, sizeof(*fold_re));
		if (!fold_re)
			return -ENOMEM;
		for (size_t i = 0; i < o->nfold_regex; i++) {
			int e = regcomp(&fold_re[i], o->fold_regex[i], REG_EXTENDED | REG_NOSUB);
			if (e) {
				char msg[200];
				regerror(e, &fold_re[i], msg, sizeof msg);
				snprintf(why, len, "--fold-frames '%s': %s", o->fold_regex[i], msg);
				return -EINVAL;
			}
			nfold_re = i + 1;
		}
	}
	if (o->debug_dirs && *o->debug_dirs) {
		/* the given directories first, then libdw's default: the file's
		 * own directory, its .debug, /usr/lib/debug */
		int k = snprintf(debuginfo_buf, sizeof debuginfo_buf, "%s::.debug:/usr/lib/debug",
				 o->debug_dirs);
		if (k < 0 || (size_t)k >= sizeof debuginfo_buf) {
			snprintf(why, len, "--debug-dir: the directories are too long");
			return -EINVAL;
		}
	}
	return 0;
}

const ht_frame_opts_t *ht_frames_opts(void)
{
	return &opts;
}

const char *ht_frames_debuginfo_path(void)
{
	return debuginfo_buf;
}

/* ---- C++ names ------------------------------------------------------------------ */

/* Spelled-out types and their typedefs, after std::__cxx11:: and
 * std::__1:: became std:: (the demangler's spelling, ", " and " >"). */
static const struct {
	const char *full, *tdef;
} typedefs[] = {
#define CT(c) "<" c ", std::char_traits<" c ">"
#define CTA(c) CT(c) ", std::allocator<" c "> >"
	{ "std::basic_string" CTA("char"), "std::string" },
	{ "std::basic_string" CTA("wchar_t"), "std::wstring" },
	{ "std::basic_string" CTA("char8_t"), "std::u8string" },
	{ "std::basic_string" CTA("char16_t"), "std::u16string" },
	{ "std::basic_string" CTA("char32_t"), "std::u32string" },
	{ "std::basic_string_view" CT("char") " >", "std::string_view" },
	{ "std::basic_ostringstream" CTA("char"), "std::ostringstream" },
	{ "std::basic_istringstream" CTA("char"), "std::istringstream" },
	{ "std::basic_stringstream" CTA("char"), "std::stringstream" },
	{ "std::basic_stringbuf" CTA("char"), "std::stringbuf" },
	{ "std::basic_ostream" CT("char") " >", "std::ostream" },
	{ "std::basic_istream" CT("char") " >", "std::istream" },
	{ "std::basic_iostream" CT("char") " >", "std::iostream" },
	{ "std::basic_ofstream" CT("char") " >", "std::ofstream" },
	{ "std::basic_ifstream" CT("char") " >", "std::ifstream" },
	{ "std::basic_fstream" CT("char") " >", "std::fstream" },
	{ "std::basic_streambuf" CT("char") " >", "std::streambuf" },
	{ "std::basic_filebuf" CT("char") " >", "std::filebuf" },
	{ "std::basic_ios" CT("char") " >", "std::ios" },
#undef CTA
#undef CT
};

static bool ident_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* in with std::__cxx11:: and std::__1:: as std:: and the typedefs
 * substituted; malloc'd, or NULL. */
static char *cxx_typedefs(const char *in)
{
	size_t n = strlen(in);
	char *a = malloc(n + 1), *b;
	if (!a)
		return NULL;
	size_t o = 0;
	for (size_t i = 0; i < n;) {
		if (!strncmp(in + i, "std::__cxx11::", 14)) {
			memcpy(a + o, "std::", 5), o += 5, i += 14;
		} else if (!strncmp(in + i, "std::__1::", 10)) {
			memcpy(a + o, "std::", 5), o += 5, i += 10;
		} else {
			a[o++] = in[i++];
		}
	}
	a[o] = 0;
	/* substitute repeatedly: inner typedefs first make outer ones match */
	for (bool changed = true; changed;) {
		changed = false;
		for (size_t k = 0; k < sizeof typedefs / sizeof typedefs[0]; k++) {
			char *p = strstr(a, typedefs[k].full);
			if (!p || (p > a && ident_char(p[-1])))
				continue;
			size_t fl = strlen(typedefs[k].full), tl = strlen(typedefs[k].tdef);
			memcpy(p, typedefs[k].tdef, tl);
			memmove(p + tl, p + fl, strlen(p + fl) + 1);
			changed = true;
		}
	}
	b = a;
	return b;
}

/* Where the function's own name starts in a shortened name: after a
 * return type ("void std::vector<>::_M_realloc_insert<>(...)": a template
 * function's), that is after the last space at bracket depth 0 before the
 * parameters; 0 when there is none, or it belongs to an operator
 * ("operator new", "Foo::operator bool"). */
static size_t after_return_type(const char *s)
{
	size_t sp = 0;
	int depth = 0;
	for (size_t i = 0; s[i]; i++) {
		if (s[i] == '<')
			depth++;
		else if (s[i] == '>' && depth > 0)
			depth--;
		else if (s[i] == '(' && depth == 0 && i > 0)
			break;
		else if (s[i] == ' ' && depth == 0)
			sp = i + 1;
	}
	if (sp >= 9 && !strncmp(s + sp - 9, "operator ", 9))
		return 0;
	return sp;
}

size_t ht_cxx_shorten(const char *in, char *out, size_t len)
{
	char *a = cxx_typedefs(in);
	const char *s = a ? a : in;
	size_t n = strlen(s), o = 0;
	char *b = malloc(2 * n + 3); /* a '<' left open still adds its '>' */
	if (!b) {
		free(a);
		if (len)
			snprintf(out, len, "%s", in);
		return strlen(in);
	}
	int depth = 0;
	for (size_t i = 0; s[i];) {
		if (depth == 0 && !strncmp(s + i, "operator", 8) && (i == 0 || !ident_char(s[i - 1])) &&
		    !ident_char(s[i + 8])) {
			/* operator<, operator<<=, operator->, operator<=>: not brackets */
			memcpy(b + o, s + i, 8);
			o += 8, i += 8;
			while (s[i] && strchr("<>=-*!", s[i]))
				b[o++] = s[i++];
			continue;
		}
		char c = s[i++];
		if (c == '<') {
			if (depth++ == 0) {
				b[o++] = '<';
				b[o++] = '>';
			}
		} else if (c == '>' && depth > 0) {
			depth--;
		} else if (depth == 0) {
			b[o++] = c;
		}
	}
	b[o] = 0;
	const char *r = b + after_return_type(b);
	size_t rl = strlen(r);
	if (len)
		snprintf(out, len, "%s", r);
	free(b);
	free(a);
	return rl;
}

/* ---- folding -------------------------------------------------------------------- */

/* The program's allocation wrappers and libc's allocating helpers: their
 * caller is where the memory is wanted. */
static const char *const wrappers[] = {
	/* git, bash, gnulib, binutils' libiberty */
	"xmalloc", "xcalloc", "xrealloc", "xstrdup", "xstrndup", "xmemdupz", "xmallocz",
	"xmallocz_gently", "do_xmalloc", "xzalloc", "xnmalloc", "xnrealloc", "x2realloc",
	"x2nrealloc", "xmemdup", "xcharalloc", "ximalloc", "xicalloc", "xirealloc", "xizalloc",
	"xreallocarray", "xnew", "sh_xmalloc", "sh_xrealloc",
	/* GLib */
	"g_malloc", "g_malloc0", "g_realloc", "g_try_malloc", "g_try_malloc0", "g_try_realloc",
	"g_malloc_n", "g_malloc0_n", "g_realloc_n", "g_try_malloc_n", "g_try_malloc0_n",
	"g_try_realloc_n", "g_strdup", "g_strndup", "g_memdup", "g_memdup2", "g_slice_alloc",
	"g_slice_alloc0",
	/* SQLite */
	"sqlite3Malloc", "sqlite3MallocZero", "sqlite3_malloc", "sqlite3_malloc64",
	"sqlite3_realloc", "sqlite3_realloc64", "sqlite3Realloc", "sqlite3DbMallocRaw",
	"sqlite3DbMallocRawNN", "sqlite3DbMallocZero", "sqlite3DbRealloc", "sqlite3DbReallocOrFree",
	"sqlite3DbStrDup", "sqlite3DbStrNDup", "sqlite3DbSpanDup", "sqlite3MemMalloc",
	"sqlite3MemRealloc", "mallocWithAlarm", "dbMallocRawFinish", "dbReallocFinish",
	"sqlite3PageMalloc", "pcache1Alloc",
	/* CPython */
	"PyMem_Malloc", "PyMem_Calloc", "PyMem_Realloc", "PyMem_RawMalloc", "PyMem_RawCalloc",
	"PyMem_RawRealloc", "_PyMem_RawMalloc", "_PyMem_RawCalloc", "_PyMem_RawRealloc",
	"PyObject_Malloc", "PyObject_Calloc", "PyObject_Realloc", "_PyObject_Malloc",
	"_PyObject_Calloc", "_PyObject_Realloc", "_PyMem_DebugMalloc", "_PyMem_DebugCalloc",
	"_PyMem_DebugRealloc", "_PyMem_DebugRawMalloc", "_PyMem_DebugRawCalloc",
	"_PyMem_DebugRawRealloc", "_PyMem_DebugRawAlloc", "pymalloc_alloc", "_PyObject_GC_Alloc",
	"gc_alloc",
	/* libc's helpers that allocate for their caller */
	"strdup", "__strdup", "strndup", "__strndup", "wcsdup", "__wcsdup",
};

/* C++ runtime plumbing: operator new, libstdc++ and libc++ (everything of
 * namespace std at the leaf: the containers' allocation paths,
 * allocator_traits, _M_* helpers; the outermost is named by the marker). */
static bool cxx_plumbing(const char *fn)
{
	return !strncmp(fn, "operator new", 12) || !strncmp(fn, "std::", 5) ||
	       !strncmp(fn, "__gnu_cxx::", 11) || !strncmp(fn, "__cxa_allocate_", 15) ||
	       !strncmp(fn, "__cxxabiv1::", 12);
}

bool ht_frame_folds(const char *fn)
{
	if (!fn)
		return false;
	if (cxx_plumbing(fn) || cxx_plumbing(fn + after_return_type(fn)))
		return true;
	/* a C name: up to its parameters, if the demangler gave any */
	size_t l = strcspn(fn, "(");
	for (size_t i = 0; i < sizeof wrappers / sizeof wrappers[0]; i++)
		if (strlen(wrappers[i]) == l && !strncmp(fn, wrappers[i], l))
			return true;
	for (size_t i = 0; i < nfold_re; i++)
		if (!regexec(&fold_re[i], fn, 0, NULL, 0))
			return true;
	return false;
}

size_t ht_frames_fold(ht_frame_t *f, size_t n)
{
	if (opts.no_fold || n < 2)
		return n;
	size_t last = SIZE_MAX; /* the outermost folding frame of the leaf run */
	for (size_t i = 0; i < n; i++) {
		if (f[i].function && !ht_frame_folds(f[i].function))
			break;
		if (f[i].function)
			last = i;
	}
	/* nothing folds, or everything would: the stack stays whole */
	if (last == SIZE_MAX || last + 1 >= n)
		return n;
	size_t k = last + 1;
	const char *via = f[last].function;
	memmove(f, f + k, (n - k) * sizeof(*f));
	f[0].folded = (unsigned)k;
	f[0].folded_via = via;
	return n - k;
}

const char *ht_frame_label(const ht_frame_t *f, char *buf, size_t len)
{
	if (f->module && f->has_offset)
		snprintf(buf, len, "%s+0x%" PRIx64, ht_base_name(f->module), f->offset);
	else if (f->module)
		snprintf(buf, len, "%s", ht_base_name(f->module));
	else
		snprintf(buf, len, "0x%" PRIx64, f->address);
	return buf;
}
