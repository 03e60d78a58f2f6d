/* pprof.c - `heaptrail convert --format pprof`: a gzipped
 * perftools.profiles.Profile (third_party/pprof/profile.proto), encoded with
 * the protobuf-c code the Makefile generates into build/gen.
 *
 * Layout (docs/EXPORTS.md has the user's view):
 *   - one Sample per site (distinct stack), location_id leaf first, values in
 *     the order of sample_types[] below: Go's four heap types first, so
 *     `go tool pprof` treats the file as a heap profile, then heaptrail's own;
 *   - one Location per distinct (module, return address, frames): the
 *     address's inlined frames are Line entries of that Location, innermost
 *     first and the real function last, which is what pprof expects;
 *   - one Function per distinct (name, file); one Mapping per module that a
 *     location uses, with its build-id as hex and has_functions /
 *     has_filenames / has_line_numbers set, so `go tool pprof
 *     -symbolize=none` shows our names without the binaries.
 *
 * Invariants: string_table[0] == "" (the proto requires it); ids of
 * mappings, locations and functions are 1-based indices into their arrays,
 * so a record's id never needs a lookup. Everything is built in memory
 * (sized by the sites and their frames, not by the events), packed once,
 * and gzipped to the stream with zlib.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "report/export.h"
#include "profile.pb-c.h"
#include "analysis/mapped.h"
#include "analysis/util.h"

typedef Perftools__Profiles__Profile pb_profile_t;
typedef Perftools__Profiles__ValueType pb_vtype_t;
typedef Perftools__Profiles__Sample pb_sample_t;
typedef Perftools__Profiles__Label pb_label_t;
typedef Perftools__Profiles__Mapping pb_mapping_t;
typedef Perftools__Profiles__Location pb_location_t;
typedef Perftools__Profiles__Line pb_line_t;
typedef Perftools__Profiles__Function pb_function_t;

/* The sample types, in value order. Go's heap profile defines the first
 * four; its "inuse" is what is live when the profile is taken, which for a
 * finished trace is what leaked. */
enum {
	V_ALLOC_OBJECTS,
	V_ALLOC_SPACE,
	V_INUSE_OBJECTS,
	V_INUSE_SPACE,
	V_PEAK_SPACE,
	V_LEAKED_OBJECTS,
	V_LEAKED_SPACE,
	V_TEMPORARY_OBJECTS,
	NVALUES, /* the heap's types: every profile has them */
	/* the program's own maps (analysis/mapped.h), when the trace has any:
	 * bytes mapped at the end and at the peak of mapped memory, by site */
	V_MAPPED_SPACE = NVALUES,
	V_MAPPED_PEAK_SPACE,
	NVALUES_ALL
};

static const char *const sample_types[NVALUES_ALL][2] = {
	[V_ALLOC_OBJECTS] = { "alloc_objects", "count" },
	[V_ALLOC_SPACE] = { "alloc_space", "bytes" },
	[V_INUSE_OBJECTS] = { "inuse_objects", "count" },
	[V_INUSE_SPACE] = { "inuse_space", "bytes" },
	[V_PEAK_SPACE] = { "peak_space", "bytes" },
	[V_LEAKED_OBJECTS] = { "leaked_objects", "count" },
	[V_LEAKED_SPACE] = { "leaked_space", "bytes" },
	[V_TEMPORARY_OBJECTS] = { "temporary_objects", "count" },
	[V_MAPPED_SPACE] = { "mapped_space", "bytes" },
	[V_MAPPED_PEAK_SPACE] = { "mapped_peak_space", "bytes" },
};

/* The type pprof shows unless told otherwise. alloc_space rather than Go's
 * inuse_space: a profile of a finished run has "in use" = leaked, which is
 * zero for a clean program, so inuse_space would open on an empty view;
 * bytes allocated is also what heaptrail report ranks sites by first. */
#define DEFAULT_SAMPLE_TYPE V_ALLOC_SPACE

/* ---- the builder ------------------------------------------------------------ */

typedef struct builder {
	const ht_model_t *m;
	/* string table: strings[i] owned; by_hash: FNV hash (+probe) -> index */
	char **strings;
	size_t nstrings, cap_strings;
	ht_map_t str_by_hash;
	/* functions: key (name index << 32 | file index) -> index */
	pb_function_t *funcs;
	size_t nfuncs, cap_funcs;
	ht_map_t func_by_key;
	/* locations: hash of their content (+probe) -> index; lines in one pool,
	 * location i owns lines[loc_first[i] .. + locations[i].n_line] */
	pb_location_t *locs;
	size_t nlocs, cap_locs;
	size_t *loc_first;
	size_t cap_loc_first;
	pb_line_t *lines;
	size_t nlines, cap_lines;
	ht_map_t loc_by_hash;
	/* mappings: trace module index -> mapping index (HT_MAP_NONE: none yet) */
	pb_mapping_t *maps;
	size_t nmaps, cap_maps;
	long *map_module; /* trace module index of each mapping */
	size_t cap_map_module;
	ht_map_t map_by_module;
	/* samples: values and location ids in pools, pointers fixed up at the end */
	pb_sample_t *samples;
	size_t nsamples, cap_samples;
	int64_t *values; /* nv per sample */
	size_t nv;	 /* NVALUES, or NVALUES_ALL with mapped memory */
	size_t cap_values;
	uint64_t *loc_ids;
	size_t nloc_ids, cap_loc_ids;
	size_t *sample_first; /* first location id of sample i in loc_ids */
	size_t cap_sample_first;
	pb_label_t *labels; /* one per sample: its stack id */
	size_t cap_labels;
} builder_t;

static int64_t str_index_safe(builder_t *b, const char *s);

/* Index of s in the string table, adding a copy if new. <0 on -ENOMEM.
 * Strings are escaped as the text report's are (safe.h): protobuf wants
 * valid UTF-8 in strings, and `pprof -top` prints them to a terminal. */
static int64_t str_index(builder_t *b, const char *s)
{
	if (!s)
		s = "";
	if (ht_text_is_safe(s))
		return str_index_safe(b, s);
	size_t need = ht_text_len(s) + 1;
	char *esc = malloc(need);
	if (!esc)
		return -ENOMEM;
	int64_t i = str_index_safe(b, ht_text_safe(esc, need, s));
	free(esc);
	return i;
}

static int64_t str_index_safe(builder_t *b, const char *s)
{
	uint64_t h = ht_fnv1a(s);
	for (;; h++) { /* equal hashes: probe the next hash value */
		uint32_t i = ht_map_get(&b->str_by_hash, h);
		if (i == HT_MAP_NONE)
			break;
		if (!strcmp(b->strings[i], s))
			return i;
	}
	char *copy = strdup(s);
	if (!copy || b->nstrings >= UINT32_MAX - 1 ||
	    ht_util_grow((void **)&b->strings, &b->cap_strings, b->nstrings + 1, sizeof(char *)) ||
	    ht_map_put(&b->str_by_hash, h, (uint32_t)b->nstrings)) {
		free(copy);
		return -ENOMEM;
	}
	b->strings[b->nstrings] = copy;
	return (int64_t)b->nstrings++;
}

/* Function id (1-based) for name + file. 0 on -ENOMEM. */
static uint64_t func_id(builder_t *b, const char *name, const char *file)
{
	int64_t n = str_index(b, name), f = str_index(b, file);
	if (n < 0 || f < 0)
		return 0;
	uint64_t key = (uint64_t)n << 32 | (uint64_t)f;
	uint32_t i = ht_map_get(&b->func_by_key, key);
	if (i != HT_MAP_NONE)
		return i + 1;
	if (ht_util_grow((void **)&b->funcs, &b->cap_funcs, b->nfuncs + 1, sizeof(*b->funcs)) ||
	    ht_map_put(&b->func_by_key, key, (uint32_t)b->nfuncs))
		return 0;
	pb_function_t *fn = &b->funcs[b->nfuncs];
	perftools__profiles__function__init(fn);
	fn->id = b->nfuncs + 1;
	fn->name = n;
	/* the symbolizer hands out demangled names only; pprof wants the
	 * system name set, and the same name is what it shows then */
	fn->system_name = n;
	fn->filename = f;
	return ++b->nfuncs;
}

static char *hex(const uint8_t *p, size_t n)
{
	char *s = malloc(2 * n + 1);
	if (!s)
		return NULL;
	for (size_t i = 0; i < n; i++)
		snprintf(s + 2 * i, 3, "%02x", p[i]);
	s[2 * n] = '\0';
	return s;
}

static const char *module_name(const ht_trace_t *t, const ht_module_t *mod)
{
	/* the dynamic linker names the main program ""; PROCESS knows it */
	if (!mod->path[0] && t->exe_path)
		return t->exe_path;
	return mod->path;
}

/* Mapping id (1-based) for trace module mi, or 0 (none) if mi < 0.
 * Sets *err on -ENOMEM. */
static uint64_t mapping_id(builder_t *b, long mi, int *err)
{
	if (mi < 0)
		return 0;
	uint32_t i = ht_map_get(&b->map_by_module, (uint64_t)mi);
	if (i != HT_MAP_NONE)
		return i + 1;
	const ht_trace_t *t = b->m->trace;
	const ht_module_t *mod = &t->modules[mi];
	if (ht_util_grow((void **)&b->maps, &b->cap_maps, b->nmaps + 1, sizeof(*b->maps)) ||
	    ht_util_grow((void **)&b->map_module, &b->cap_map_module, b->nmaps + 1,
			 sizeof(*b->map_module)) ||
	    ht_map_put(&b->map_by_module, (uint64_t)mi, (uint32_t)b->nmaps)) {
		*err = -ENOMEM;
		return 0;
	}
	pb_mapping_t *mp = &b->maps[b->nmaps];
	perftools__profiles__mapping__init(mp);
	mp->id = b->nmaps + 1;
	/* the module's PT_LOAD span, page aligned; the first segment maps file
	 * offset 0 in every ELF the linkers produce */
	uint64_t lo = UINT64_MAX, hi = 0, page = t->page_size ? t->page_size : 4096;
	for (size_t k = 0; k < mod->nsegs; k++) {
		if (mod->segs[k].vaddr < lo)
			lo = mod->segs[k].vaddr;
		if (mod->segs[k].vaddr + mod->segs[k].memsz > hi)
			hi = mod->segs[k].vaddr + mod->segs[k].memsz;
	}
	if (lo <= hi) {
		mp->memory_start = mod->bias + (lo & ~(page - 1));
		mp->memory_limit = mod->bias + ((hi + page - 1) & ~(page - 1));
	}
	mp->file_offset = 0;
	int64_t fname = str_index(b, module_name(t, mod));
	char *bid = mod->build_id_len ? hex(mod->build_id, mod->build_id_len) : NULL;
	int64_t bidx = bid ? str_index(b, bid) : 0;
	free(bid);
	if (fname < 0 || bidx < 0 || (mod->build_id_len && !bid)) {
		*err = -ENOMEM;
		return 0;
	}
	mp->filename = fname;
	mp->build_id = bidx;
	/* heaptrail symbolized everything it could: pprof must not try again */
	mp->has_functions = mp->has_filenames = mp->has_line_numbers = 1;
	mp->has_inline_frames = 1;
	b->map_module[b->nmaps++] = mi;
	return mp->id;
}

/* Name for a frame the symbolizer could not name: "libfoo.so.1+0x1234"
 * (file-relative address), or "0x7f..." with no module. Caller frees. */
static char *unknown_name(const ht_trace_t *t, long mi, uint64_t ip)
{
	char buf[64];
	if (mi < 0) {
		snprintf(buf, sizeof buf, "0x%" PRIx64, ip);
		return strdup(buf);
	}
	const char *path = module_name(t, &t->modules[mi]);
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	size_t n = strlen(base);
	char *s = malloc(n + 32);
	if (s)
		snprintf(s, n + 32, "%s+0x%" PRIx64, base, ip - t->modules[mi].bias);
	return s;
}

/* Location id (1-based) for one return address expanded into frames f[0..n)
 * (inlined first, the real function last). 0 on -ENOMEM. */
static uint64_t location_id(builder_t *b, const ht_site_t *site, const ht_frame_t *f, size_t n)
{
	const ht_trace_t *t = b->m->trace;
	uint64_t ip = f[0].address;
	long mi = site->stack ? ht_trace_module_for(t, ip, site->first_time) : -1;
	int err = 0;
	uint64_t map = mapping_id(b, mi, &err);
	if (err)
		return 0;
	/* the lines this location would have */
	size_t first = b->nlines;
	if (ht_util_grow((void **)&b->lines, &b->cap_lines, first + n, sizeof(*b->lines)))
		return 0;
	uint64_t h = ht_util_hash64(ip ^ map << 48) ^ n;
	for (size_t i = 0; i < n; i++) {
		uint64_t fid;
		if (f[i].function) {
			fid = func_id(b, f[i].function, f[i].file);
		} else {
			/* address 0 with no module: the placeholder of a stack-less site */
			char *name = ip || mi >= 0 ? unknown_name(t, mi, ip) : strdup(ht_site_placeholder(site));
			fid = name ? func_id(b, name, f[i].file) : 0;
			free(name);
		}
		if (!fid)
			return 0;
		pb_line_t *ln = &b->lines[first + i];
		perftools__profiles__line__init(ln);
		ln->function_id = fid;
		ln->line = f[i].line;
		h = ht_util_hash64(h ^ fid) + (uint64_t)f[i].line;
	}
	/* an existing location with the same content? */
	for (;; h++) {
		uint32_t j = ht_map_get(&b->loc_by_hash, h);
		if (j == HT_MAP_NONE)
			break;
		const pb_location_t *l = &b->locs[j];
		if (l->address != ip || l->mapping_id != map || l->n_line != n)
			continue;
		size_t k = 0;
		const pb_line_t *ol = &b->lines[b->loc_first[j]];
		while (k < n && ol[k].function_id == b->lines[first + k].function_id &&
		       ol[k].line == b->lines[first + k].line)
			k++;
		if (k == n)
			return j + 1; /* the lines just written are dropped */
	}
	if (ht_util_grow((void **)&b->locs, &b->cap_locs, b->nlocs + 1, sizeof(*b->locs)) ||
	    ht_util_grow((void **)&b->loc_first, &b->cap_loc_first, b->nlocs + 1,
			 sizeof(*b->loc_first)) ||
	    ht_map_put(&b->loc_by_hash, h, (uint32_t)b->nlocs))
		return 0;
	pb_location_t *l = &b->locs[b->nlocs];
	perftools__profiles__location__init(l);
	l->id = b->nlocs + 1;
	l->mapping_id = map;
	l->address = ip;
	l->n_line = n;
	b->loc_first[b->nlocs] = first;
	b->nlines += n;
	return ++b->nlocs;
}

/* The proto says mapping[0] is the main binary (pprof prints its name and
 * build-id as the profile's): move the program's mapping to the front,
 * renumbering the locations' references. */
static void main_mapping_first(builder_t *b)
{
	const ht_trace_t *t = b->m->trace;
	size_t k = 0;
	while (k < b->nmaps) {
		const ht_module_t *mod = &t->modules[b->map_module[k]];
		if (!mod->path[0] || (t->exe_path && !strcmp(mod->path, t->exe_path)))
			break;
		k++;
	}
	if (k == 0 || k == b->nmaps)
		return;
	pb_mapping_t main_map = b->maps[k];
	memmove(&b->maps[1], &b->maps[0], k * sizeof(*b->maps));
	b->maps[0] = main_map;
	for (size_t i = 0; i <= k; i++)
		b->maps[i].id = i + 1;
	/* old ids 1..k become 2..k+1, old k+1 becomes 1 */
	for (size_t i = 0; i < b->nlocs; i++) {
		uint64_t id = b->locs[i].mapping_id;
		if (id == k + 1)
			b->locs[i].mapping_id = 1;
		else if (id >= 1 && id <= k)
			b->locs[i].mapping_id = id + 1;
	}
}

/* One sample for site s, or for the map site ms (s then only holds its
 * stack). Returns 0 or -ENOMEM. */
static int add_sample(builder_t *b, ht_symbolizer_t *sym, const ht_site_t *s,
		      const ht_map_site_t *ms, ht_frame_t **frames, size_t *cap)
{
	long nf = ht_model_frames(b->m, sym, s, frames, cap);
	if (nf < 0)
		return (int)nf;
	ht_frame_t none = { 0 };
	const ht_frame_t *f = *frames;
	if (nf == 0) { /* stack unknown: one placeholder frame keeps the totals */
		f = &none;
		nf = 1;
	}
	size_t first = b->nloc_ids;
	/* group each return address's frames: inlined ones, then the real one */
	for (long i = 0; i < nf;) {
		long j = i;
		while (j + 1 < nf && f[j].inlined && f[j + 1].address == f[i].address)
			j++;
		uint64_t id = location_id(b, s, f + i, (size_t)(j - i + 1));
		if (!id || ht_util_grow((void **)&b->loc_ids, &b->cap_loc_ids, b->nloc_ids + 1,
					sizeof(*b->loc_ids)))
			return -ENOMEM;
		b->loc_ids[b->nloc_ids++] = id;
		i = j + 1;
	}
	size_t k = b->nsamples;
	if (ht_util_grow((void **)&b->samples, &b->cap_samples, k + 1, sizeof(*b->samples)) ||
	    ht_util_grow((void **)&b->values, &b->cap_values, (k + 1) * b->nv, sizeof(*b->values)) ||
	    ht_util_grow((void **)&b->sample_first, &b->cap_sample_first, k + 1,
			 sizeof(*b->sample_first)) ||
	    ht_util_grow((void **)&b->labels, &b->cap_labels, k + 1, sizeof(*b->labels)))
		return -ENOMEM;
	int64_t *v = &b->values[k * b->nv];
	memset(v, 0, b->nv * sizeof(*v));
	if (ms) {
		v[V_MAPPED_SPACE] = (int64_t)ms->live;
		v[V_MAPPED_PEAK_SPACE] = (int64_t)ms->at_peak;
	} else {
	v[V_ALLOC_OBJECTS] = (int64_t)s->allocations;
	v[V_ALLOC_SPACE] = (int64_t)s->bytes_allocated;
	v[V_INUSE_OBJECTS] = (int64_t)s->leaked_blocks;
	v[V_INUSE_SPACE] = (int64_t)s->leaked_bytes;
	v[V_PEAK_SPACE] = (int64_t)s->peak_bytes;
	v[V_LEAKED_OBJECTS] = (int64_t)s->leaked_blocks;
	v[V_LEAKED_SPACE] = (int64_t)s->leaked_bytes;
	v[V_TEMPORARY_OBJECTS] = (int64_t)s->temporary;
	}
	b->sample_first[k] = first;
	pb_sample_t *smp = &b->samples[k];
	perftools__profiles__sample__init(smp);
	smp->n_location_id = b->nloc_ids - first;
	smp->n_value = b->nv;
	/* a numeric label ties the sample to the JSON report's "stack_id" */
	int64_t key = str_index(b, "stack_id");
	if (key < 0)
		return -ENOMEM;
	perftools__profiles__label__init(&b->labels[k]);
	b->labels[k].key = key;
	b->labels[k].num = (int64_t)s->stack_id;
	b->nsamples++;
	return 0;
}

static void builder_free(builder_t *b)
{
	for (size_t i = 0; i < b->nstrings; i++)
		free(b->strings[i]);
	free(b->strings);
	ht_map_free(&b->str_by_hash);
	free(b->funcs);
	ht_map_free(&b->func_by_key);
	free(b->locs);
	free(b->loc_first);
	free(b->lines);
	ht_map_free(&b->loc_by_hash);
	free(b->maps);
	free(b->map_module);
	ht_map_free(&b->map_by_module);
	free(b->samples);
	free(b->values);
	free(b->loc_ids);
	free(b->sample_first);
	free(b->labels);
}

/* ---- output ------------------------------------------------------------------ */

/* gzip data[0..len) to out. Returns 0, -EIO or -ENOMEM. */
static int write_gzip(FILE *out, const uint8_t *data, size_t len)
{
	z_stream z;
	memset(&z, 0, sizeof z);
	/* windowBits 15 + 16: a gzip wrapper (mtime 0: the output is
	 * reproducible), which the proto's comment asks for on disk */
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	unsigned char buf[65536];
	int e = 0, zr;
	do {
		if (z.avail_in == 0 && len > 0) {
			/* feed at most 1 GiB per call: avail_in is 32-bit */
			size_t n = len > (1u << 30) ? (1u << 30) : len;
			z.next_in = (Bytef *)data;
			z.avail_in = (uInt)n;
			data += n;
			len -= n;
		}
		z.next_out = buf;
		z.avail_out = sizeof buf;
		zr = deflate(&z, len == 0 ? Z_FINISH : Z_NO_FLUSH);
		size_t have = sizeof buf - z.avail_out;
		if (have && fwrite(buf, 1, have, out) != have) {
			e = -EIO;
			break;
		}
	} while (zr != Z_STREAM_END && (zr == Z_OK || zr == Z_BUF_ERROR));
	if (!e && zr != Z_STREAM_END)
		e = -EIO;
	deflateEnd(&z);
	return e;
}

int ht_export_pprof(FILE *out, const ht_model_t *m, ht_symbolizer_t *sym, const ht_export_opts_t *o,
		    const ht_export_data_t *d)
{
	(void)d;
	(void)o; /* every cost is a sample type: --cost does not apply */
	const ht_trace_t *t = m->trace;
	builder_t b;
	memset(&b, 0, sizeof b);
	b.m = m;
	ht_frame_t *frames = NULL;
	size_t cap = 0;
	int e = 0;
	pb_vtype_t types[NVALUES_ALL], period_type;
	pb_vtype_t *type_ptrs[NVALUES_ALL];
	pb_sample_t **sample_ptrs = NULL;
	pb_mapping_t **map_ptrs = NULL;
	pb_location_t **loc_ptrs = NULL;
	pb_line_t **line_ptrs = NULL;
	pb_function_t **func_ptrs = NULL;
	pb_label_t **label_ptrs = NULL;
	uint8_t *packed = NULL;
	int64_t comment;

	if (str_index(&b, "") != 0) { /* string_table[0] must be "" */
		e = -ENOMEM;
		goto out;
	}
	b.nv = m->mapped ? NVALUES_ALL : NVALUES;
	for (size_t i = 0; i < b.nv; i++) {
		perftools__profiles__value_type__init(&types[i]);
		int64_t ty = str_index(&b, sample_types[i][0]), un = str_index(&b, sample_types[i][1]);
		if (ty < 0 || un < 0) {
			e = -ENOMEM;
			goto out;
		}
		types[i].type = ty;
		types[i].unit = un;
		type_ptrs[i] = &types[i];
	}
	perftools__profiles__value_type__init(&period_type);
	period_type.type = str_index(&b, "space");
	period_type.unit = types[V_ALLOC_SPACE].unit;
	{
		char text[512];
		snprintf(text, sizeof text, "heaptrail %s: %s", HT_VERSION,
			 t->argc ? t->argv[0] : t->exe_path ? t->exe_path : "?");
		comment = str_index(&b, text);
	}
	if (period_type.type < 0 || comment < 0) {
		e = -ENOMEM;
		goto out;
	}

	/* samples in site order: sites already merge equal stacks */
	for (size_t i = 0; i < m->nsites && !e; i++)
		if (m->sites[i].allocations)
			e = add_sample(&b, sym, &m->sites[i], NULL, &frames, &cap);
	for (size_t i = 0; m->mapped && i < m->mapped->nsites && !e; i++) {
		const ht_map_site_t *ms = &m->mapped->sites[i];
		ht_site_t s = { 0 };
		s.stack_id = ms->stack_id;
		s.stack = ms->stack_id ? ht_trace_stack(t, ms->stack_id) : NULL;
		s.first_time = ms->first_time;
		e = add_sample(&b, sym, &s, ms, &frames, &cap);
	}
	if (e)
		goto out;
	main_mapping_first(&b);

	/* pointer arrays, now that the pools no longer move */
	sample_ptrs = malloc((b.nsamples + 1) * sizeof(*sample_ptrs));
	label_ptrs = malloc((b.nsamples + 1) * sizeof(*label_ptrs));
	map_ptrs = malloc((b.nmaps + 1) * sizeof(*map_ptrs));
	loc_ptrs = malloc((b.nlocs + 1) * sizeof(*loc_ptrs));
	line_ptrs = malloc((b.nlines + 1) * sizeof(*line_ptrs));
	func_ptrs = malloc((b.nfuncs + 1) * sizeof(*func_ptrs));
	if (!sample_ptrs || !label_ptrs || !map_ptrs || !loc_ptrs || !line_ptrs || !func_ptrs) {
		e = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < b.nsamples; i++) {
		sample_ptrs[i] = &b.samples[i];
		label_ptrs[i] = &b.labels[i];
		b.samples[i].value = &b.values[i * b.nv];
		b.samples[i].location_id = &b.loc_ids[b.sample_first[i]];
		b.samples[i].n_label = 1;
		b.samples[i].label = &label_ptrs[i];
	}
	for (size_t i = 0; i < b.nlines; i++)
		line_ptrs[i] = &b.lines[i];
	for (size_t i = 0; i < b.nlocs; i++) {
		loc_ptrs[i] = &b.locs[i];
		b.locs[i].line = &line_ptrs[b.loc_first[i]];
	}
	for (size_t i = 0; i < b.nmaps; i++)
		map_ptrs[i] = &b.maps[i];
	for (size_t i = 0; i < b.nfuncs; i++)
		func_ptrs[i] = &b.funcs[i];

	pb_profile_t p;
	perftools__profiles__profile__init(&p);
	p.n_sample_type = b.nv;
	p.sample_type = type_ptrs;
	p.n_sample = b.nsamples;
	p.sample = sample_ptrs;
	p.n_mapping = b.nmaps;
	p.mapping = map_ptrs;
	p.n_location = b.nlocs;
	p.location = loc_ptrs;
	p.n_function = b.nfuncs;
	p.function = func_ptrs;
	p.n_string_table = b.nstrings;
	p.string_table = b.strings;
	p.time_nanos = (int64_t)t->start_realtime_ns;
	p.duration_nanos = (int64_t)m->totals.duration_ns;
	p.period_type = &period_type;
	/* every allocation is recorded, or (a sampled trace) the values are
	 * already the weighted estimates: nothing for pprof to scale. The
	 * period says the sampling rate, as Go's heap profiles do. */
	p.period = m->sample_rate ? (int64_t)m->trace->sample_rate : 1;
	p.n_comment = 1;
	p.comment = &comment;
	p.default_sample_type = types[DEFAULT_SAMPLE_TYPE].type;

	size_t len = perftools__profiles__profile__get_packed_size(&p);
	packed = malloc(len ? len : 1);
	if (!packed) {
		e = -ENOMEM;
		goto out;
	}
	perftools__profiles__profile__pack(&p, packed);
	e = write_gzip(out, packed, len);
out:
	free(packed);
	free(sample_ptrs);
	free(label_ptrs);
	free(map_ptrs);
	free(loc_ptrs);
	free(line_ptrs);
	free(func_ptrs);
	free(frames);
	builder_free(&b);
	if (e)
		return e;
	return ferror(out) ? -EIO : 0;
}
