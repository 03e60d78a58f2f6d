/* symbolize.h - turn raw return addresses into function, file, line.
 *
 * Runs only in the CLI, never inside the target. Backed by elfutils libdw
 * (Dwfl offline session): each traced module is reported at its load bias,
 * symbols come from .symtab/.dynsym or separate debuginfo (found by build-id
 * under /usr/lib/debug), lines and inlined frames from DWARF. C++ names are
 * demangled.
 *
 * Ownership: every string returned lives until ht_symbolizer_free().
 * One symbolizer is used by one thread (ht_symbolize_prefetch's workers
 * have their own).
 */
#ifndef HEAPTRAIL_SYMBOLIZE_H
#define HEAPTRAIL_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ht_symbolizer ht_symbolizer_t;

/* One source-level frame. A return address expands to one or more of these:
 * the inlined functions first (innermost first, inlined = true), then the
 * real (out-of-line) function last (inlined = false). Unknown values are
 * NULL / 0, never made up. */
typedef struct ht_frame {
	const char *function; /* demangled name, or NULL */
	const char *file;     /* absolute source path when DWARF has it, or NULL */
	int line;	      /* 0 when unknown */
	const char *module;   /* path of the ELF object, or NULL */
	uint64_t address;     /* the raw return address from the trace */
	bool inlined;
	/* set by the model (ht_model_frames), 0 from the symbolizer: */
	bool has_offset;      /* offset is known: module holds the address */
	uint64_t offset;      /* address - the module's load bias (addr2line -e module) */
	unsigned folded;      /* frames folded below this one (analysis/frames.h) */
	const char *folded_via; /* the outermost of them, when folded */
} ht_frame_t;

/* One PT_LOAD segment of a module, as in HT_REC_MODULE. */
typedef struct ht_segment {
	uint64_t vaddr, memsz, flags;
} ht_segment_t;

ht_symbolizer_t *ht_symbolizer_new(void);
void ht_symbolizer_free(ht_symbolizer_t *s);

/* Declare a module (HT_REC_MODULE). module_id is the trace's id. The ELF file
 * is opened lazily, on the first address that falls into it. If the file on
 * disk has a different build-id than the trace recorded, its symbols are not
 * used (frames get only module + address) and one warning is printed. */
void ht_symbolizer_add_module(ht_symbolizer_t *s, uint64_t module_id,
			      const char *path, const uint8_t *build_id,
			      size_t build_id_len, uint64_t load_bias,
			      const ht_segment_t *segs, size_t nsegs);

/* Symbolize one return address of module module_id (the reader decides which
 * module holds ip; pass UINT64_MAX when none does). The lookup uses ip - 1, so
 * that a call at the end of a function is not attributed to the next line.
 * Writes up to max frames to out and returns how many (>= 1: an address that
 * cannot be resolved still gives one frame with function == NULL). Results
 * are cached per address. */
size_t ht_symbolize(ht_symbolizer_t *s, uint64_t module_id, uint64_t ip,
		    ht_frame_t *out, size_t max);

/* The same for an address that is not a return address: a function's entry
 * address (ENTER events, -finstrument-functions) is looked up as is, since
 * entry - 1 belongs to the function before it. The frames' address is addr.
 * Shares ht_symbolize's cache (an exact lookup of addr is the return-address
 * lookup of addr + 1). */
size_t ht_symbolize_exact(ht_symbolizer_t *s, uint64_t module_id, uint64_t addr,
			  ht_frame_t *out, size_t max);

/* Start resolving n return addresses (module ids and ips as ht_symbolize
 * takes them) on up to nthreads threads of their own, each with private
 * libdw sessions over whole modules, while the caller goes on. ht_symbolize
 * then answers them from the workers (waiting for one not yet resolved),
 * with the same frames as it would have resolved itself. Addresses in no
 * declared module, and modules s has opened already, are left to
 * ht_symbolize. The threads end with ht_symbolizer_free at the latest.
 * Returns 0, or -ENOMEM (then nothing was started). */
int ht_symbolize_prefetch(ht_symbolizer_t *s, const uint64_t *module_ids,
			  const uint64_t *ips, size_t n, unsigned nthreads);

#endif /* HEAPTRAIL_SYMBOLIZE_H */
