/* frames.h - the rules that turn symbolized frames into the frames every
 * output shows: C++ names shortened, the allocator's plumbing and the
 * program's allocation wrappers folded away from the leaf, and one label for
 * a frame without a symbol. The model applies them (ht_model_frames), so
 * sites fold by what people read and every writer gets finished frames.
 *
 * The rules are the command's options, set once before any trace is read
 * (ht_frames_configure); the defaults shorten and fold.
 */
#ifndef HEAPTRAIL_FRAMES_H
#define HEAPTRAIL_FRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/symbolize.h"

typedef struct ht_frame_opts {
	bool full_names; /* --full-names: C++ names as demangled */
	bool no_fold;	 /* --no-fold: every frame, wrappers and plumbing too */
	const char *const *fold_regex; /* --fold-frames: extended regexes, NULL-terminated */
	size_t nfold_regex;
	const char *debug_dirs; /* --debug-dir: ':'-separated, searched first; NULL: none */
} ht_frame_opts_t;

/* Set the rules (copied). Returns 0, or -EINVAL with why (room for len
 * bytes) when a regex does not compile. */
int ht_frames_configure(const ht_frame_opts_t *o, char *why, size_t len);
const ht_frame_opts_t *ht_frames_opts(void);

/* The search path of separate debug files for libdw: the --debug-dir
 * directories, then libdw's default (":.debug:/usr/lib/debug"). Static. */
const char *ht_frames_debuginfo_path(void);

/* A demangled C++ name as heaptrack shows it: the standard library's
 * typedefs for their spelled-out types (std::string for
 * std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >),
 * std::__cxx11:: and std::__1:: as std::, and every template argument list
 * folded to <> (operator<, operator<<, operator-> and such kept). Writes
 * to out (room for len, cut there) and returns the length it needs. */
size_t ht_cxx_shorten(const char *in, char *out, size_t len);

/* Whether function fn is allocator plumbing or an allocation wrapper that
 * --no-fold would show: the built-in list (libstdc++'s allocators and
 * node and buffer helpers, operator new, the wrappers of git, bash, GLib,
 * SQLite, CPython, ...) or a --fold-frames regex. */
bool ht_frame_folds(const char *fn);

/* Fold the run of folding frames at the leaf of f[0..n): those whose
 * function folds, and frames without a function between them, up to the
 * last that folds; one frame at least is kept. The first frame kept gets
 * folded (how many went) and folded_via (the outermost function folded).
 * Returns the new count (f is moved down in place). */
size_t ht_frames_fold(ht_frame_t *f, size_t n);

/* The label of a frame without a function, the same in every output:
 * "git+0x289719" (the module's base name and the frame's offset in it,
 * for addr2line -e), "0x7f..." when no module holds it. Returns buf. */
const char *ht_frame_label(const ht_frame_t *f, char *buf, size_t len);
#define HT_FRAME_LABEL_LEN 320

#endif /* HEAPTRAIL_FRAMES_H */
