/* run.c - `heaptrail run`: run a program with libheaptrail.so preloaded.
 *
 * The agent is found as $HEAPTRAIL_AGENT, else next to this binary (build
 * tree), else in <bindir>/../lib/heaptrail (install tree). The agent appends
 * one `pid<TAB>path` line per trace it opens to a private manifest, so
 * traces of forked children and exec'd images are found too. The manifest
 * has no name (a memfd, or a file unlinked at once): the agent opens it as
 * /proc/<our pid>/fd/<n>, so nothing is left behind however we end, and it
 * tells us by a signal (SIG_UNLISTED) of a trace it could not list. While the
 * program runs we ignore SIGINT/SIGQUIT, as a shell does, so that Ctrl-C
 * reaches only the program and we still print the summary afterwards; and
 * we pass SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2 sent to us on to the
 * program (a process manager that stops the pid it started, a snapshot
 * signal sent to the wrong pid), so that it is never left running alone
 * and its end is still summed up.
 */
#include "cli/run.h"
#include "cli/top.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "analysis/badfree.h"
#include "analysis/leaks.h"
#include "analysis/model.h"
#include "analysis/reader.h"
#include "report/badfree_section.h"
#include "report/report.h"
#include "analysis/symbolize.h"
#include "trace_format.h"
#include "analysis/util.h"
#include "cli/runset.h"

/* Signals sent to `heaptrail run` that go on to the program, and its pid
 * while it runs (0 otherwise). */
static const int forwarded[] = { SIGTERM, SIGHUP, SIGUSR1, SIGUSR2 };
#define NFORWARDED (sizeof(forwarded) / sizeof(forwarded[0]))
static volatile pid_t forward_to;

/* "oom_kill N" in file, or -1. */
static int64_t oom_count_in(const char *path)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	char line[256];
	int64_t n = -1;
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, "oom_kill ", 9)) {
			n = strtoll(line + 9, NULL, 10);
			break;
		}
	fclose(f);
	return n;
}

/* How many processes the OOM killer has killed in our memory cgroup
 * (cgroup v2's memory.events, v1's memory.oom_control: the program runs
 * in ours), else on the whole machine (/proc/vmstat, Linux 4.13), or -1.
 * A program that dies of SIGKILL while it rises was the OOM killer's: its
 * own status cannot say (a zombie's cgroup reads as the root, dmesg may
 * be closed to us). The machine's count also counts other processes
 * killed meanwhile, which would be taken for it. */
static int64_t oom_kills(void)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	char line[4096], path[4200];
	int64_t n = -1;
	while (f && n < 0 && fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = 0;
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c2 = 0;
		const char *ctrl = c1 + 1, *cg = c2 + 1;
		if (!strcmp(ctrl, "memory"))
			snprintf(path, sizeof path, "/sys/fs/cgroup/memory%s/memory.oom_control", cg);
		else if (!*ctrl && !strcmp(line, "0"))
			snprintf(path, sizeof path, "/sys/fs/cgroup%s/memory.events", cg);
		else
			continue;
		n = oom_count_in(path);
	}
	if (f)
		fclose(f);
	return n >= 0 ? n : oom_count_in("/proc/vmstat");
}

static void forward_signal(int sig)
{
	int e = errno;
	if (forward_to > 0)
		kill(forward_to, sig);
	errno = e;
}

/* The agent's word that a trace of process si_pid is missing from the
 * manifest (value 0: it could not write the line) or was added after all
 * (1). The pids of those still missing, and how many. */
#define SIG_UNLISTED (SIGRTMIN + 1)
#define MAX_UNLISTED 64
static volatile pid_t unlisted_pid[MAX_UNLISTED];
static volatile sig_atomic_t unlisted_more; /* beyond the table */

static void on_unlisted(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	if (si->si_code != SI_QUEUE)
		return;
	if (si->si_value.sival_int == 1) {
		for (size_t i = 0; i < MAX_UNLISTED; i++)
			if (unlisted_pid[i] == si->si_pid) {
				unlisted_pid[i] = 0;
				return;
			}
		if (unlisted_more > 0)
			unlisted_more--;
		return;
	}
	for (size_t i = 0; i < MAX_UNLISTED; i++)
		if (!unlisted_pid[i]) {
			unlisted_pid[i] = si->si_pid;
			return;
		}
	unlisted_more++;
}

/* ---- finding the agent ----------------------------------------------------- */

static bool is_file(const char *p)
{
	struct stat sb;
	return stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* Absolute path of the agent into buf, or -ENOENT. */
int ht_find_agent(char *buf, size_t len)
{
	const char *env = getenv("HEAPTRAIL_AGENT");
	if (env && *env) {
		if (!realpath(env, buf) || !is_file(buf)) {
			fprintf(stderr, "heaptrail: HEAPTRAIL_AGENT=%s: no such file\n", env);
			return -ENOENT;
		}
		return 0;
	}
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n < 0) {
		fprintf(stderr, "heaptrail: cannot read /proc/self/exe: %s\n", strerror(errno));
		return -errno;
	}
	exe[n] = '\0';
	char *slash = strrchr(exe, '/');
	if (slash)
		*slash = '\0';
	if (snprintf(buf, len, "%s/libheaptrail.so", exe) < (int)len && is_file(buf))
		return 0;
	char real[PATH_MAX];
	if (snprintf(buf, len, "%s/../lib/heaptrail/libheaptrail.so", exe) < (int)len &&
	    is_file(buf) && realpath(buf, real)) {
		snprintf(buf, len, "%s", real);
		return 0;
	}
	fprintf(stderr,
		"heaptrail: cannot find libheaptrail.so (looked in %s and %s/../lib/heaptrail);"
		" set HEAPTRAIL_AGENT\n",
		exe, exe);
	return -ENOENT;
}

/* ---- environment of the child -------------------------------------------------- */

/* manifest: the path the agent opens (NULL: none); run_id: manifest_run's
 * value. */
static int setup_env(const ht_run_opts_t *o, const char *agent, const char *manifest,
		     const char *run_id)
{
	/* LD_PRELOAD splits on spaces and colons: such a path cannot be preloaded */
	if (strpbrk(agent, " :")) {
		fprintf(stderr, "heaptrail: the agent path '%s' contains a space or colon\n", agent);
		return -EINVAL;
	}
	const char *old = getenv("LD_PRELOAD");
	size_t len = strlen(agent) + (old ? strlen(old) + 1 : 0) + 1;
	char *pre = malloc(len);
	if (!pre)
		return -ENOMEM;
	snprintf(pre, len, "%s%s%s", agent, old && *old ? ":" : "", old ? old : "");

	/* The user's own HEAPTRAIL_OPTIONS come first: later keys win. */
	char cwd[PATH_MAX];
	const char *out = o->output ? o->output : "heaptrail.%n.%p.ht";
	/* an absolute path survives a chdir in the program before it forks */
	if (out[0] == '/' || !getcwd(cwd, sizeof(cwd)) || strchr(cwd, ','))
		cwd[0] = '\0';
	const char *uopt = getenv("HEAPTRAIL_OPTIONS");
	if (!manifest)
		manifest = run_id = "";
	size_t olen = strlen(out) + strlen(cwd) + strlen(manifest) + strlen(run_id) +
		      (uopt ? strlen(uopt) : 0) +
		      (o->break_alloc ? strlen(o->break_alloc) : 0) + 180;
	char *opts = malloc(olen);
	if (!opts) {
		free(pre);
		return -ENOMEM;
	}
	int n = snprintf(opts, olen, "%s%soutput=%s%s%s", uopt ? uopt : "", uopt && *uopt ? "," : "",
			 cwd, cwd[0] ? "/" : "", out);
	if (*manifest)
		n += snprintf(opts + n, olen - (size_t)n, ",manifest=%s,manifest_run=%s", manifest,
			      run_id);
	if (o->gdb)
		n += snprintf(opts + n, olen - (size_t)n, ",break_traced=1");
	if (o->depth)
		n += snprintf(opts + n, olen - (size_t)n, ",depth=%u", o->depth);
	if (o->unwind)
		n += snprintf(opts + n, olen - (size_t)n, ",unwind=%s", o->unwind);
	if (o->no_follow_fork)
		n += snprintf(opts + n, olen - (size_t)n, ",follow_fork=0");
	if (o->functions)
		n += snprintf(opts + n, olen - (size_t)n, ",functions=1");
	if (o->start_off)
		n += snprintf(opts + n, olen - (size_t)n, ",start=off");
	if (o->no_mmap)
		n += snprintf(opts + n, olen - (size_t)n, ",mmap=0");
	if (o->free_stacks)
		n += snprintf(opts + n, olen - (size_t)n, ",free_stacks=1");
	if (o->summary)
		n += snprintf(opts + n, olen - (size_t)n, ",summary=1");
	if (o->summary_sites)
		n += snprintf(opts + n, olen - (size_t)n, ",summary_sites=%u", o->summary_sites);
	if (o->sample_rate)
		n += snprintf(opts + n, olen - (size_t)n, ",sample_rate=%llu", o->sample_rate);
	if (o->sample_seed_set)
		n += snprintf(opts + n, olen - (size_t)n, ",sample_seed=%llu", o->sample_seed);
	if (o->no_leak_check)
		n += snprintf(opts + n, olen - (size_t)n, ",leak_check=0");
	if (o->break_alloc)
		snprintf(opts + n, olen - (size_t)n, ",break=%s", o->break_alloc);
	int r = 0;
	if (setenv("LD_PRELOAD", pre, 1) || setenv("HEAPTRAIL_OPTIONS", opts, 1))
		r = -errno;
	free(pre);
	free(opts);
	return r;
}

/* ---- the summary ---------------------------------------------------------------- */

typedef struct entry {
	long pid;
	char *path;
	/* from the agent's "end" line, when the trace was finished */
	bool ended;
	unsigned long long allocs, frees, bytes, duration_ns;
	/* "exact": the agent's figures equal the trace's replay (agent/live.h) */
	bool exact;
	/* "lost": writing the file failed part way (closed by the program, a
	 * full disk): it holds the events up to then */
	bool lost;
	/* the program it exec'd (an "exec" line), NULL when none */
	char *exec_target;
	/* the object whose own malloc the program calls ("ownmalloc"), or NULL */
	char *own_malloc;
	/* the libraries whose malloc and free are bound past the agent
	 * ("bypass": RTLD_DEEPBIND, dlmopen), ", "-separated, or NULL */
	char *bypass;
	unsigned long long x_allocs, x_frees, x_bytes, peak, leaked_bytes, leaked_blocks,
		temporary;
	/* the "proc" line: parent, fork child or not, program (NULL unknown) */
	long ppid;
	bool forked;
	char *program;
	/* the end line's "how": HT_END_* and the status, how -1 unknown */
	int how;
	unsigned status;
} entry_t;

/* Read the manifest: a "pid<TAB>path" line when a trace is opened, and a
 * "pid<TAB>path<TAB>end<TAB>allocs<TAB>frees<TAB>bytes<TAB>ns" line when it is
 * finished. Returns the number of traces; *out is owned by the caller. */
/* The latest entry of the trace at path (one path is one trace). */
static entry_t *last_entry(entry_t *ent, size_t n, const char *path)
{
	for (size_t i = n; i-- > 0;)
		if (!strcmp(ent[i].path, path))
			return &ent[i];
	return NULL;
}

static unsigned errors_seen;	/* "error" lines: traces the agent could not create */
static char first_error[4096 + 160];
static long first_error_pid;

static size_t read_manifest(int fd, entry_t **out)
{
	*out = NULL;
	/* the agents write through descriptors of their own (O_APPEND): ours
	 * reads from the start */
	int rfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	FILE *f = rfd < 0 || lseek(rfd, 0, SEEK_SET) < 0 ? NULL : fdopen(rfd, "r");
	if (!f) {
		fprintf(stderr, "heaptrail: cannot read the list of traces: %s\n", strerror(errno));
		if (rfd >= 0)
			close(rfd);
		return 0;
	}
	size_t n = 0, cap = 0;
	char *line = NULL;
	size_t lcap = 0;
	ssize_t len;
	while ((len = getline(&line, &lcap, f)) > 0) {
		if (line[len - 1] == '\n')
			line[--len] = '\0';
		char *tab = strchr(line, '\t');
		if (!tab)
			continue;
		char *er = strstr(tab + 1, "\terror\t");
		if (er) {
			/* the agent could not create this trace: said once, at
			 * the end, if no trace was written at all */
			*er = '\0';
			if (!errors_seen++) {
				snprintf(first_error, sizeof first_error, "%s: %s", tab + 1, er + 7);
				first_error_pid = strtol(line, NULL, 10);
			}
			continue;
		}
		char *om = strstr(tab + 1, "\townmalloc\t");
		if (om) {
			*om = '\0';
			entry_t *e = last_entry(*out, n, tab + 1);
			if (e) {
				free(e->own_malloc);
				e->own_malloc = strdup(om + 11);
			}
			continue;
		}
		char *by = strstr(tab + 1, "\tbypass\t");
		if (by) {
			*by = '\0';
			entry_t *e = last_entry(*out, n, tab + 1);
			const char *lib = by + 8;
			size_t had = e && e->bypass ? strlen(e->bypass) : 0;
			char *all = e ? realloc(e->bypass, had + strlen(lib) + 3) : NULL;
			if (all) {
				sprintf(all + had, "%s%s", had ? ", " : "", lib);
				e->bypass = all;
			}
			continue;
		}
		char *ex = strstr(tab + 1, "\texec\t");
		if (ex) {
			*ex = '\0';
			entry_t *e = last_entry(*out, n, tab + 1);
			if (e) {
				free(e->exec_target);
				e->exec_target = strdup(ex + 6);
			}
			continue;
		}
		char *pr = strstr(tab + 1, "\tproc\t");
		if (pr) {
			*pr = '\0';
			entry_t *e = last_entry(*out, n, tab + 1);
			char kind[16];
			int at = 0;
			if (e && sscanf(pr + 6, "%ld %15s %n", &e->ppid, kind, &at) == 2 && at) {
				e->forked = !strcmp(kind, "forked");
				free(e->program);
				e->program = strdup(pr + 6 + at);
			}
			continue;
		}
		char *end = strstr(tab + 1, "\tend\t");
		if (end) {
			*end = '\0';
			entry_t *e = last_entry(*out, n, tab + 1);
			if (e) {
				e->ended = sscanf(end + 5, "%llu\t%llu\t%llu\t%llu", &e->allocs,
						  &e->frees, &e->bytes, &e->duration_ns) == 4;
				e->lost = strstr(end + 5, "\tlost") != NULL;
				const char *x = strstr(end + 5, "\texact\t");
				e->exact = e->ended && x &&
					   sscanf(x + 7, "%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu",
						  &e->x_allocs, &e->x_frees, &e->x_bytes, &e->peak,
						  &e->leaked_bytes, &e->leaked_blocks, &e->temporary) == 7;
				const char *h = strstr(end + 5, "\thow\t");
				if (!h || sscanf(h + 5, "%d\t%u", &e->how, &e->status) != 2)
					e->how = -1;
			}
			continue;
		}
		if (ht_util_grow((void **)out, &cap, n + 1, sizeof(**out)))
			continue;
		char *p = strdup(tab + 1);
		if (!p)
			continue;
		(*out)[n++] = (entry_t){ .pid = strtol(line, NULL, 10), .path = p, .ppid = -1,
					 .how = -1 };
	}
	free(line);
	fclose(f);
	return n;
}

/* A path as the user would type it: relative to the cwd when below it. */
static const char *display_path(const char *p, const char *cwd)
{
	/* escaped (safe.h): the trace's name holds the program's; for messages
	 * only, in a few buffers used in turn */
	static char shown[4][HT_TEXT_LEN];
	static unsigned next;
	size_t n = strlen(cwd);
	if (n > 1 && !strncmp(p, cwd, n) && p[n] == '/')
		p += n + 1;
	next = (next + 1) % 4;
	return ht_text_safe(shown[next], sizeof(shown[next]), p);
}

/* Above this size the summary comes from the agent's own counts: replaying
 * a trace of hundreds of megabytes would take longer than many programs. */
#define FULL_SUMMARY_MAX_BYTES (8ull << 20)

/* Summary mode: the top sites by bytes on stderr, symbolized, and the
 * JSON report next to the trace (PATH.json). */
static void summary_sites(const ht_model_t *m, ht_symbolizer_t *sym, const char *path,
			  const char *shown, ht_supp_list_t *supps)
{
	ht_report_top_sites_text(stderr, m, sym, 10);
	/* PATH.json, or PATH.json.N when that exists (never over a file, never
	 * through a symlink: the trace's own rule) */
	size_t len = strlen(path) + 32;
	char *jpath = malloc(len);
	FILE *f = NULL;
	int err = ENOMEM;
	for (unsigned i = 0; jpath && i < 1000 && !f; i++) {
		if (i)
			snprintf(jpath, len, "%s.json.%u", path, i);
		else
			snprintf(jpath, len, "%s.json", path);
		int r = 0;
		f = ht_open_output(jpath, false, 0600, NULL, &r);
		err = -r;
		if (!f && r != -EEXIST && r != -HT_ESYMLINK)
			break;
	}
	/* the leaks as `heaptrail report --format json` gives them: with the
	 * suppressions (built-in and the user's) applied */
	ht_leaks_t lk;
	int lr = f ? ht_leaks_build(m, sym, supps, &lk) : 0;
	bool have_lk = f && lr == 0;
	int r = !f ? -err : have_lk ? ht_report_json(f, m, sym, NULL, &lk) : lr;
	if (have_lk)
		ht_leaks_free(&lk);
	if (f && fclose(f) && !r)
		r = -EIO;
	if (r)
		fprintf(stderr, "heaptrail: cannot write the JSON summary of %s: %s\n", shown,
			ht_strerror(r));
	else
		fprintf(stderr, "\nheaptrail: JSON summary written to %s%s\n", HT_TEXT(jpath),
			strcmp(jpath + strlen(jpath) - 5, ".json") ? " (the .json name was taken)" : "");
	free(jpath);
}

/* "s" unless n is 1. */
static const char *plural(uint64_t n)
{
	return n == 1 ? "" : "s";
}

/* The summary's two lines of totals; sample_rate != 0: estimates;
 * summary: a summary-mode trace (no temporaries: they need events). */
static void print_totals(const ht_totals_t *tt, uint64_t sample_rate, bool summary)
{
	char a[HT_FMT_LEN], b[HT_FMT_LEN], c[HT_FMT_LEN], d[HT_FMT_LEN], e[HT_FMT_LEN];
	const char *est = sample_rate ? "~" : "";
	fprintf(stderr, "heaptrail: %s allocation%s, %s free%s, %s allocated, peak heap %s%s, in %s\n",
		ht_fmt_count(a, tt->allocations), plural(tt->allocations), ht_fmt_count(b, tt->frees),
		plural(tt->frees),
		ht_fmt_size(c, tt->bytes_allocated), est, ht_fmt_size(d, tt->peak_heap_bytes),
		ht_fmt_duration(e, tt->duration_ns));
	/* "in use at exit", memcheck's words: what was live then, some of it
	 * still reachable or suppressed (C++'s runtime pool: 71 KiB in every
	 * program); the report's leak section says what was lost */
	if (sample_rate)
		fprintf(stderr, "heaptrail: in use at exit ~%s in ~%s block%s (sampled every %s on average)\n",
			ht_fmt_size(a, tt->leaked_bytes), ht_fmt_count(b, tt->leaked_blocks),
			plural(tt->leaked_blocks), ht_fmt_size(c, sample_rate));
	else if (summary)
		fprintf(stderr, "heaptrail: in use at exit %s in %s block%s\n", ht_fmt_size(a, tt->leaked_bytes),
			ht_fmt_count(b, tt->leaked_blocks), plural(tt->leaked_blocks));
	else
		fprintf(stderr, "heaptrail: in use at exit %s in %s block%s; %s temporary allocation%s\n",
			ht_fmt_size(a, tt->leaked_bytes), ht_fmt_count(b, tt->leaked_blocks),
			plural(tt->leaked_blocks), ht_fmt_count(c, tt->temporary),
			plural(tt->temporary));
}

/* --unwind fp over code without frame pointers (ht_model_fp_broken). */
static void fp_warning(const ht_model_t *m)
{
	size_t fp_bad, fp_total;
	const char *fp_where = ht_model_fp_broken(m, &fp_bad, &fp_total);
	if (fp_where)
		fprintf(stderr,
			"heaptrail: warning: --unwind fp, but %zu of %zu stacks end before the "
			"thread's start (the first in %s): code without frame pointers cut them "
			"short or led them astray; run again with the default --unwind libunwind (or "
			"build with -fno-omit-frame-pointer)\n",
			fp_bad, fp_total, HT_TEXT(fp_where));
}

/* The same for a trace the summary does not read back. */
static void fp_warning_of(const char *path)
{
	ht_trace_t *t = NULL;
	ht_model_t *m = NULL;
	if (ht_reader_load_file(path, NULL, &t) >= 0 && (t->proc_flags & HT_PROC_UNWIND_FP) &&
	    !ht_model_build(t, &m))
		fp_warning(m);
	ht_model_free(m);
	ht_trace_free(t);
}

static void print_summary(const entry_t *ent, const char *shown, ht_supp_list_t *supps,
			  bool unwind_fp)
{
	const char *path = ent->path;
	struct stat st;
	if (ent->lost)
		fprintf(stderr, "heaptrail: warning: %s is incomplete: writing it failed (the program "
				"closed its descriptor, or the disk is full); it holds the events up "
				"to then\n", shown);
	if (ent->exact) {
		/* the figures the replay would give, counted by the agent: no
		 * need to read the trace back (a third of a second for a
		 * million allocations) */
		ht_totals_t tt = {
			.allocations = ent->x_allocs,
			.frees = ent->x_frees,
			.bytes_allocated = ent->x_bytes,
			.peak_heap_bytes = ent->peak,
			.leaked_bytes = ent->leaked_bytes,
			.leaked_blocks = ent->leaked_blocks,
			.temporary = ent->temporary,
			.duration_ns = ent->duration_ns,
		};
		print_totals(&tt, 0, false);
		if (unwind_fp)
			fp_warning_of(path);
		return;
	}
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
		return; /* output=/dev/null: nothing to read back */
	if (ent->ended && stat(path, &st) == 0 &&
	    (unsigned long long)st.st_size > FULL_SUMMARY_MAX_BYTES) {
		char a[HT_FMT_LEN], b[HT_FMT_LEN], c[HT_FMT_LEN], d[HT_FMT_LEN];
		fprintf(stderr, "heaptrail: %s allocations, %s frees, %s allocated, in %s\n",
			ht_fmt_count(a, ent->allocs), ht_fmt_count(b, ent->frees),
			ht_fmt_size(c, ent->bytes), ht_fmt_duration(d, ent->duration_ns));
		fprintf(stderr, "heaptrail: a large trace (%s): peak heap, leaks and sites are in "
				"its report\n", ht_fmt_size(a, (uint64_t)st.st_size));
		return;
	}
	ht_trace_t *t = NULL;
	int r = ht_reader_load_file(path, NULL, &t);
	if (r < 0) {
		fprintf(stderr, "heaptrail: cannot read %s: %s\n", shown,
			t && t->message[0] ? HT_TEXT(t->message) : ht_strerror(r));
		ht_trace_free(t);
		return;
	}
	ht_model_t *m = NULL;
	/* a summary trace's sites are listed: folded by their frames */
	ht_symbolizer_t *sym = t->have_summary ? ht_symbolizer_new() : NULL;
	if (sym)
		ht_trace_add_modules(t, sym);
	if (ht_model_build_sym(t, sym, &m)) {
		fprintf(stderr, "heaptrail: out of memory summarizing %s\n", shown);
		ht_symbolizer_free(sym);
		ht_trace_free(t);
		return;
	}
	print_totals(&m->totals, m->sample_rate ? t->sample_rate : 0, t->have_summary);
	fp_warning(m);
	if (t->error)
		fprintf(stderr, "heaptrail: warning: %s\n", HT_TEXT(t->message));
	if (t->ending == HT_ENDING_CUT_SHORT && !ent->lost) {
		char e[32];
		fprintf(stderr,
			"heaptrail: warning: the run was cut short: the agent did not see the "
			"program end (a raw exit_group system call, as Go programs make, or a "
			"signal the agent could not catch, such as SIGKILL or the OOM killer's); "
			"the trace's last event is at %s, and events of about the last half "
			"second before the end may be missing, so the figures above are "
			"partial\n",
			ht_fmt_duration(e, t->last_time));
	}
	if (t->have_summary)
		summary_sites(m, sym, path, shown, supps);
	ht_symbolizer_free(sym);
	ht_model_free(m);
	ht_trace_free(t);
}

/* The leak exit code's test on the main trace: true when unsuppressed
 * definite or indirect (or unclassified) leaks remain; their section goes
 * to stderr unless o->no_leak_report. */
static bool leaks_fail(const ht_run_opts_t *o, const char *path, const char *shown)
{
	ht_trace_t *t = NULL;
	ht_model_t *m = NULL;
	ht_leaks_t l;
	bool fail = false;
	ht_symbolizer_t *sym = NULL;
	bool loaded = ht_reader_load_file(path, NULL, &t) >= 0;
	if (loaded && (sym = ht_symbolizer_new()))
		ht_trace_add_modules(t, sym);
	if (!loaded || ht_model_build_sym(t, sym, &m)) {
		fprintf(stderr, "heaptrail: cannot check %s for leaks\n", shown);
		ht_symbolizer_free(sym);
		ht_trace_free(t);
		return false;
	}
	if (ht_leaks_build(m, sym, o->supps, &l) == 0) {
		fail = ht_leaks_fail(&l);
		if (fail && !o->no_leak_report) {
			fflush(stdout);
			ht_report_leaks_text(stderr, m, sym, &l, 0, false);
		}
		ht_leaks_free(&l);
	}
	ht_symbolizer_free(sym);
	ht_model_free(m);
	ht_trace_free(t);
	return fail;
}

/* The trace at path has double, invalid or mismatched frees: printed on
 * stderr (the INVALID FREES section). */
static bool bad_frees_fail(const char *path, const char *shown)
{
	ht_trace_t *t = NULL;
	ht_model_t *m = NULL;
	if (ht_reader_load_file(path, NULL, &t) < 0 || ht_model_build(t, &m)) {
		fprintf(stderr, "heaptrail: cannot check %s for invalid frees\n", shown);
		ht_trace_free(t);
		return false;
	}
	bool fail = m->bad && m->bad->total;
	if (fail) {
		ht_symbolizer_t *sym = ht_symbolizer_new();
		if (sym)
			ht_model_add_modules(m, sym);
		fflush(stdout);
		fprintf(stderr, "heaptrail: invalid frees in %s:\n", shown);
		ht_emitter_t e;
		ht_emit_init(&e, stderr, HT_EMIT_TEXT);
		ht_section_badfrees(&e, m, sym);
		fputc('\n', stderr);
		ht_symbolizer_free(sym);
	}
	ht_model_free(m);
	ht_trace_free(t);
	return fail;
}

/* The process pid exists (a daemon left running by the program). */
static bool still_running(long pid)
{
	return pid > 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM);
}

/* How a trace with neither an end nor an exec in the manifest ended, from
 * its file: killed (no END record: a debugger's probe child, say), or ended
 * without a word to the manifest (a process that dropped its privileges,
 * or had no descriptor left for it). Read only when small unless whole:
 * -1 when unknown. */
static int file_ending(const entry_t *e, bool whole)
{
	struct stat st;
	if (e->ended || e->exec_target || stat(e->path, &st) != 0)
		return -1;
	if (!whole && (unsigned long long)st.st_size > FULL_SUMMARY_MAX_BYTES)
		return -1; /* unknown: say nothing rather than guess */
	ht_trace_t *t = NULL;
	int ending = ht_reader_load_file(e->path, NULL, &t) >= 0 ? (int)t->ending : -1;
	ht_trace_free(t);
	return ending;
}

/* Processes whose trace the agent could not list (on_unlisted), and what
 * is known of them; true if any. */
static bool say_unlisted(void)
{
	char pids[MAX_UNLISTED * 12 + 1];
	size_t k = 0, n = 0;
	pids[0] = '\0';
	for (size_t i = 0; i < MAX_UNLISTED; i++) {
		pid_t p = unlisted_pid[i];
		if (!p)
			continue;
		n++;
		k += (size_t)snprintf(pids + k, sizeof pids - k, "%s%ld", k ? ", " : "", (long)p);
	}
	size_t more = unlisted_more > 0 ? (size_t)unlisted_more : 0;
	if (!n && !more)
		return false;
	fprintf(stderr, "heaptrail: warning: the list of traces may be incomplete: %zu process%s "
			"could not add %s trace to it (%s%s%s; the agent said why above)\n",
		n + more, n + more == 1 ? "" : "es", n + more == 1 ? "its" : "their",
		n ? "pid " : "", pids, more ? (n ? " and more" : "pids not kept") : "");
	return true;
}

/* A fork child's image that exec'd another before it allocated anything:
 * its trace holds the process and its modules, nothing of its own. Read
 * back before it is removed, so that only what is known empty goes. */
static bool empty_exec_image(const entry_t *ent, size_t n, size_t i)
{
	const entry_t *e = &ent[i];
	if (!e->forked || !e->exec_target || e->ended)
		return false;
	bool replaced = false;
	for (size_t j = i + 1; j < n && !replaced; j++)
		replaced = ent[j].pid == e->pid;
	struct stat st;
	if (!replaced || stat(e->path, &st) || !S_ISREG(st.st_mode) || st.st_size > (1 << 20))
		return false;
	ht_trace_t *t = NULL;
	bool empty = ht_reader_load_file(e->path, NULL, &t) >= 0 && !t->error &&
		     t->ending == HT_ENDING_EXEC && !t->nevents && !t->nfn_events &&
		     !t->nmark_events && !t->npool_events && !t->nsnapshot_events &&
		     !t->next_events && !t->nsummary_rows;
	ht_trace_free(t);
	return empty;
}

static void free_entry(entry_t *e)
{
	free(e->exec_target);
	free(e->own_malloc);
	free(e->bypass);
	free(e->program);
}

/* How a process of the run ended, for the run file: file_how is
 * ending[] of report_traces; wstatus the main process's wait status, or
 * -1 for the others. */
static void entry_ended(const entry_t *e, int file_how, int wstatus, char *buf, size_t len)
{
	const char *abbr;
	int sig = -1;
	if (e->ended && e->how == HT_END_EXIT) {
		snprintf(buf, len, "exit %u", e->status & 0xff);
	} else if (e->ended && e->how == HT_END_UNDERSCORE_EXIT) {
		snprintf(buf, len, "_exit %u", e->status & 0xff);
	} else if (e->ended && e->how == HT_END_SIGNAL) {
		sig = (int)e->status;
	} else if (e->ended && e->how == HT_END_DETACH) {
		snprintf(buf, len, "detached");
	} else if (e->exec_target && !e->ended) {
		snprintf(buf, len, "exec %s", ht_base_name(e->exec_target));
	} else if (wstatus >= 0 && WIFSIGNALED(wstatus)) {
		sig = WTERMSIG(wstatus);
	} else if (wstatus >= 0 && WIFEXITED(wstatus)) {
		snprintf(buf, len, "exit %d", WEXITSTATUS(wstatus));
	} else if (file_how == -2) {
		snprintf(buf, len, "running");
	} else if (file_how == HT_ENDING_CUT_SHORT) {
		snprintf(buf, len, "cut short");
	} else if (file_how == HT_ENDING_EXIT || file_how == HT_ENDING_UNDERSCORE_EXIT) {
		snprintf(buf, len, "exit ?");
	} else if (file_how == HT_ENDING_SIGNAL) {
		snprintf(buf, len, "signal ?");
	} else {
		snprintf(buf, len, "?");
	}
	if (sig >= 0) {
		abbr = sigabbrev_np(sig);
		snprintf(buf, len, "signal %d%s%s%s", sig, abbr ? " (SIG" : "", abbr ? abbr : "",
			 abbr ? ")" : "");
	}
	for (char *c = buf; *c; c++)
		if (*c == '\t' || *c == '\n')
			*c = ' ';
}

/* Several traces: the run file beside the main one, and which process
 * allocated most (the agent's count from the end line; a process still
 * running or killed has none). */
static void write_run(entry_t *ent, size_t n, size_t main_i, const int *ending, int wstatus,
		      const ht_run_opts_t *o, const char *cwd)
{
	ht_proc_t *p = calloc(n, sizeof *p);
	if (!p)
		return;
	size_t most = SIZE_MAX;
	for (size_t i = 0; i < n; i++) {
		p[i].path = ent[i].path;
		p[i].pid = ent[i].pid;
		p[i].ppid = ent[i].ppid;
		p[i].program = ent[i].program;
		entry_ended(&ent[i], ending ? ending[i] : -1, i == main_i ? wstatus : -1, p[i].ended,
			    sizeof p[i].ended);
		if (ent[i].ended && (most == SIZE_MAX || ent[i].bytes > ent[most].bytes))
			most = i;
	}
	char *run = ht_runfile_write(ent[main_i].path, o->argv, p, n);
	free(p);
	if (!run)
		return;
	fprintf(stderr, "heaptrail: the run's %zu processes are listed in %s", n, display_path(run, cwd));
	if (most != SIZE_MAX) {
		char a[HT_FMT_LEN];
		fprintf(stderr, "; most allocated by %s, pid %ld: %s",
			HT_TEXT(ent[most].program ? ent[most].program : "?"), ent[most].pid,
			ht_fmt_size(a, ent[most].bytes));
	}
	fprintf(stderr, "\nheaptrail: the whole run: heaptrail report %s\n", display_path(run, cwd));
	free(run);
}

/* Prints the summary and the traces' paths. Returns the main trace's path
 * (the caller frees it), or NULL when no trace was written. */
/* *others: the other traces that ended by exit or _exit (not at an exec,
 * not killed, not still running), for the leak gate; the caller frees. */
static char *report_traces(int manifest, pid_t child, int wstatus, const ht_run_opts_t *o,
			   char ***others, size_t *nothers)
{
	const char *output = o->output;
	ht_supp_list_t *supps = o->supps;
	*others = NULL;
	*nothers = 0;
	entry_t *ent;
	size_t n = read_manifest(manifest, &ent);
	char cwd[PATH_MAX];
	if (!getcwd(cwd, sizeof(cwd)))
		cwd[0] = '\0';
	if (n == 0) {
		if (errors_seen)
			fprintf(stderr, "heaptrail: no trace was written: the agent could not create "
					"%s\n", HT_TEXT(first_error));
		else
			fputs("heaptrail: no trace was written (a statically linked program, a setuid "
			      "one run by another user, or one that clears LD_PRELOAD, cannot be "
			      "traced; an agent the loader could not preload says why above)\n",
			      stderr);
		return NULL;
	}
	/* the main trace: the last image of the process we started (an exec
	 * replaces the image and opens a new file under the same pid) */
	size_t main_i = 0;
	for (size_t i = 0; i < n; i++)
		if (ent[i].pid == (long)child)
			main_i = i;
	/* fork-then-exec images that allocated nothing leave no trace */
	for (size_t i = 0; i < n;) {
		if (i == main_i || !empty_exec_image(ent, n, i) || unlink(ent[i].path)) {
			i++;
			continue;
		}
		/* the image it exec'd, which found the name taken, gets it
		 * back when its trace is finished (a trace still being written
		 * keeps its path) */
		size_t pl = strlen(ent[i].path);
		for (size_t j = i + 1; j < n; j++)
			if (ent[j].pid == ent[i].pid && ent[j].ended &&
			    !strncmp(ent[j].path, ent[i].path, pl) && !strcmp(ent[j].path + pl, ".1") &&
			    renameat2(AT_FDCWD, ent[j].path, AT_FDCWD, ent[i].path, RENAME_NOREPLACE) == 0) {
				free(ent[j].path);
				ent[j].path = ent[i].path;
				ent[i].path = NULL;
				break;
			}
		free(ent[i].path);
		free_entry(&ent[i]);
		memmove(&ent[i], &ent[i + 1], (n - i - 1) * sizeof *ent);
		n--;
		if (main_i > i)
			main_i--;
	}
	print_summary(&ent[main_i], display_path(ent[main_i].path, cwd), supps,
		      o->unwind && !strcmp(o->unwind, "fp"));
	if (ent[main_i].own_malloc)
		fprintf(stderr, "heaptrail: note: %s defines its own malloc: the program's "
				"allocations go there, not through libc, and heaptrail sees none "
				"of them\n",
			HT_TEXT(ent[main_i].own_malloc));
	if (ent[main_i].bypass)
		fprintf(stderr, "heaptrail: note: %s bound to a malloc and free other than the "
				"program's (loaded with RTLD_DEEPBIND, or by dlmopen): heaptrail "
				"sees none of its allocations and frees, and a block of the "
				"program's that it frees shows as a leak\n",
			HT_TEXT(ent[main_i].bypass));
	/* its last image exec'd one that opened no trace (a failed exec goes
	 * on recording, and ends the trace as usual) */
	if (ent[main_i].exec_target && !ent[main_i].ended)
		fprintf(stderr, "heaptrail: note: the program executed %s, which was not traced "
				"(statically linked, or LD_PRELOAD removed from its environment); "
				"the figures above end there\n",
			HT_TEXT(ent[main_i].exec_target));
	/* a process that could not create its trace is not summed up */
	if (errors_seen)
		fprintf(stderr, "heaptrail: warning: %u process%s could not create %s trace: pid %ld, "
				"%s%s\n",
			errors_seen, errors_seen == 1 ? "" : "es", errors_seen == 1 ? "its" : "their",
			first_error_pid, HT_TEXT(first_error), errors_seen > 1 ? ", and others" : "");
	/* a trace the manifest does not say ended: its file does (the leak
	 * gate needs to know which exited) */
	int *ending = calloc(n, sizeof *ending);
	for (size_t i = 0; ending && i < n; i++) {
		if (i == main_i) {
			ending[i] = -1; /* summarized above */
			continue;
		}
		bool running = !ent[i].ended && !ent[i].exec_target && still_running(ent[i].pid);
		ending[i] = running ? -2 : file_ending(&ent[i], o->leak_exitcode >= 0);
	}
	/* output=/dev/null (a device) or a file the agent could not write
	 * even its header to (a full disk): nothing to report on */
	struct stat mst;
	bool device = stat(ent[main_i].path, &mst) == 0 && !S_ISREG(mst.st_mode);
	bool empty = !device && stat(ent[main_i].path, &mst) == 0 &&
		     mst.st_size < HT_FILE_HEADER_LEN;
	if (device || empty) {
		fprintf(stderr, "heaptrail: %s %s%s\n", empty ? "nothing was written to" : "trace written to",
			display_path(ent[main_i].path, cwd),
			empty ? " (the agent's message above says why)" : " (a device: nothing to report)");
	} else if (n == 1) {
		/* -o names an existing file: the agent never overwrites it, and a
		 * report of that name would show an older run */
		char want[2 * PATH_MAX];
		bool moved = false;
		if (output && !strchr(output, '%')) {
			snprintf(want, sizeof(want), "%s%s%s", output[0] == '/' ? "" : cwd,
				 output[0] == '/' ? "" : "/", output);
			size_t k = strlen(want);
			moved = strncmp(ent[0].path, want, k) == 0 && ent[0].path[k] == '.';
		}
		fprintf(stderr, "heaptrail: trace written to %s%s%s%s\n", display_path(ent[0].path, cwd),
			moved ? " (" : "", moved ? HT_TEXT(output) : "", moved ? " already existed)" : "");
	} else {
		/* every one: each is a file of the run, and the leak gate
		 * may name any of them */
		fprintf(stderr, "heaptrail: %zu traces written (forked children and exec'd images):\n",
			n);
		for (size_t i = 0; i < n; i++) {
			/* a daemon (a child left running) has not ended its
			 * trace yet: not cut short, and not finished either */
			int how = ending ? ending[i] : -1;
			fprintf(stderr, "heaptrail:   %s  (pid %ld %s%s%s)\n", display_path(ent[i].path, cwd),
				ent[i].pid, HT_TEXT(ent[i].program ? ent[i].program : "?"),
				i == main_i ? ", summarized above" : "",
				how == -2 ? ", still running: its trace ends when it does"
				: how == HT_ENDING_CUT_SHORT ? ", cut short: killed?" : "");
		}
	}
	if (!device && !empty)
		fprintf(stderr, "heaptrail: heaptrail report %s\n", display_path(ent[main_i].path, cwd));
	if (!device && !empty && n > 1)
		write_run(ent, n, main_i, ending, wstatus, o, cwd);
	char *main_path = device || empty ? NULL : ent[main_i].path;
	*others = calloc(n, sizeof **others);
	for (size_t i = 0; i < n; i++) {
		bool exited = ent[i].ended ? !ent[i].exec_target
				: ending && (ending[i] == HT_ENDING_EXIT ||
					     ending[i] == HT_ENDING_UNDERSCORE_EXIT ||
					     ending[i] == HT_ENDING_SIGNAL);
		if (i != main_i && *others && exited)
			(*others)[(*nothers)++] = ent[i].path;
		else if (ent[i].path != main_path)
			free(ent[i].path);
		free_entry(&ent[i]);
	}
	free(ent);
	free(ending);
	return main_path;
}

/* ---- running -------------------------------------------------------------------- */

/* --live: the program's output goes to this file, so that it cannot
 * write over the view; its name is the trace's with .out. */
static void live_output_name(char *buf, size_t len, const char *prog, long pid)
{
	const char *slash = strrchr(prog, '/');
	snprintf(buf, len, "heaptrail.%s.%ld.out", slash && slash[1] ? slash + 1 : prog, pid);
}

/* --live: the trace process pid opened, from its first line in the
 * manifest ("pid<TAB>path"), waited for up to 10 s while the program
 * runs. Malloc'd, or NULL. */
static char *live_trace(int mfd, pid_t pid)
{
	for (int tries = 0; tries < 1000; tries++) {
		int rfd = fcntl(mfd, F_DUPFD_CLOEXEC, 0);
		FILE *f = rfd < 0 || lseek(rfd, 0, SEEK_SET) < 0 ? NULL : fdopen(rfd, "r");
		if (!f) {
			if (rfd >= 0)
				close(rfd);
			return NULL;
		}
		char *line = NULL, *found = NULL;
		size_t cap = 0;
		ssize_t len;
		while (!found && (len = getline(&line, &cap, f)) > 0) {
			if (line[len - 1] != '\n')
				break; /* being written */
			line[len - 1] = '\0';
			char *tab = strchr(line, '\t');
			if (tab && strtol(line, NULL, 10) == (long)pid && !strchr(tab + 1, '\t'))
				found = strdup(tab + 1);
		}
		free(line);
		fclose(f);
		if (found)
			return found;
		siginfo_t si;
		memset(&si, 0, sizeof si);
		if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid)
			return NULL; /* ended without opening one */
		usleep(10000);
	}
	return NULL;
}

/* The manifest: a file with no name, so that nothing is left behind
 * however we end (SIGKILL included). A memfd, else a file in $TMPDIR
 * unlinked at once. Close-on-exec: the agent opens it by its /proc link,
 * and the program never sees it. */
static int open_manifest(void)
{
	int fd = memfd_create("heaptrail-manifest", MFD_CLOEXEC);
	if (fd >= 0)
		return fd;
	const char *tmp = getenv("TMPDIR");
	if (!tmp || !*tmp)
		tmp = "/tmp";
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/heaptrail-manifest-XXXXXX", tmp);
	fd = mkostemp(path, O_CLOEXEC); /* mode 0600, O_EXCL */
	if (fd < 0) {
		fprintf(stderr, "heaptrail: cannot create a temporary file in %s: %s\n", HT_TEXT(tmp),
			strerror(errno));
		return -1;
	}
	unlink(path);
	return fd;
}

/* gdb's Python, one line for -ex: at each stop inside the agent (a
 * --break-alloc trap is raised in libc's raise, a few frames into the
 * agent), select the first frame past the agent's, the program's call of
 * the allocator, and show it. */
static const char gdb_py[] =
	"python exec(\"def _heaptrail_stop(ev):\\n"
	"  try:\\n"
	"    f = gdb.newest_frame()\\n"
	"    seen = False\\n"
	"    while f is not None:\\n"
	"      so = gdb.solib_name(f.pc()) or ''\\n"
	"      if 'libheaptrail' in so:\\n"
	"        seen = True\\n"
	"      elif seen:\\n"
	"        f.select()\\n"
	"        gdb.write('heaptrail: selected the program frame that called malloc or free "
	"(the agent and libc frames are below it):\\\\n')\\n"
	"        gdb.execute('frame')\\n"
	"        return\\n"
	"      f = f.older()\\n"
	"  except gdb.error:\\n"
	"    pass\\n"
	"gdb.events.stop.connect(_heaptrail_stop)\\n\")";

/* --gdb: becomes gdb, which starts the program with the agent preloaded
 * in it alone (not in gdb, nor in a shell: startup-with-shell off). No
 * manifest: nothing waits to read it. */
static int run_gdb(const ht_run_opts_t *o, const char *agent)
{
	const char *keep[2] = { "LD_PRELOAD", "HEAPTRAIL_OPTIONS" };
	char *old[2], *val[2];
	for (int k = 0; k < 2; k++) {
		const char *v = getenv(keep[k]);
		old[k] = v ? strdup(v) : NULL;
	}
	if (setup_env(o, agent, NULL, NULL))
		return 1;
	for (int k = 0; k < 2; k++) {
		val[k] = strdup(getenv(keep[k]));
		if (old[k] ? setenv(keep[k], old[k], 1) : unsetenv(keep[k]))
			return 1;
	}
	size_t argc = 0;
	while (o->argv[argc])
		argc++;
	char **args = calloc(argc + 16, sizeof *args);
	char *pre = NULL, *opts = NULL;
	if (!args || !val[0] || !val[1] ||
	    asprintf(&pre, "set environment LD_PRELOAD=%s", val[0]) < 0 ||
	    asprintf(&opts, "set environment HEAPTRAIL_OPTIONS=%s", val[1]) < 0) {
		fprintf(stderr, "heaptrail: out of memory\n");
		return 1;
	}
	size_t n = 0;
	args[n++] = "gdb";
	args[n++] = "-q";
	args[n++] = "-ex";
	args[n++] = "set startup-with-shell off";
	args[n++] = "-ex";
	args[n++] = pre;
	args[n++] = "-ex";
	args[n++] = opts;
	args[n++] = "-ex";
	args[n++] = (char *)gdb_py;
	args[n++] = "-ex";
	args[n++] = "run";
	args[n++] = "--args";
	for (size_t i = 0; i < argc; i++)
		args[n++] = o->argv[i];
	args[n] = NULL;
	fflush(NULL);
	execvp("gdb", args);
	fprintf(stderr, "heaptrail: --gdb: cannot run gdb: %s\n", strerror(errno));
	return errno == ENOENT ? 127 : 126;
}

int ht_run(const ht_run_opts_t *o)
{
	char agent[PATH_MAX];
	if (ht_find_agent(agent, sizeof(agent)))
		return 1;
	if (o->gdb)
		return run_gdb(o, agent);

	int mfd = open_manifest();
	if (mfd < 0)
		return 1;
	/* the agent's way to it, and what it checks before writing or
	 * signalling: our pid, the signal, the file's identity */
	char manifest[64], run_id[96];
	struct stat mst;
	if (fstat(mfd, &mst)) {
		fprintf(stderr, "heaptrail: cannot stat the list of traces: %s\n", strerror(errno));
		close(mfd);
		return 1;
	}
	snprintf(manifest, sizeof manifest, "/proc/%ld/fd/%d", (long)getpid(), mfd);
	snprintf(run_id, sizeof run_id, "%ld:%d:%llu:%llu", (long)getpid(), SIG_UNLISTED,
		 (unsigned long long)mst.st_dev, (unsigned long long)mst.st_ino);
	/* for as long as we live: an agent may signal late (a daemon) */
	struct sigaction unl;
	memset(&unl, 0, sizeof unl);
	unl.sa_sigaction = on_unlisted;
	unl.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&unl.sa_mask);
	sigaction(SIG_UNLISTED, &unl, NULL);

	/* exec errors come back through a close-on-exec pipe */
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0) {
		fprintf(stderr, "heaptrail: pipe: %s\n", strerror(errno));
		close(mfd);
		return 1;
	}
	struct sigaction ign, old_int, old_quit, old_pipe;
	memset(&ign, 0, sizeof(ign));
	ign.sa_handler = SIG_IGN;
	sigemptyset(&ign.sa_mask);
	sigaction(SIGINT, &ign, &old_int);
	sigaction(SIGQUIT, &ign, &old_quit);
	/* our stderr piped to `head` that has gone: the summary's write fails
	 * (EPIPE) and we still write FILE.json and exit with the program's
	 * status; the program gets the disposition it would have had */
	sigaction(SIGPIPE, &ign, &old_pipe);
	/* forwarded signals wait, blocked, until the program's pid is known */
	sigset_t fwd_set, old_mask;
	sigemptyset(&fwd_set);
	struct sigaction fwd, old_fwd[NFORWARDED];
	memset(&fwd, 0, sizeof(fwd));
	fwd.sa_handler = forward_signal;
	fwd.sa_flags = SA_RESTART;
	sigemptyset(&fwd.sa_mask);
	for (size_t i = 0; i < NFORWARDED; i++)
		sigaddset(&fwd_set, forwarded[i]);
	sigprocmask(SIG_BLOCK, &fwd_set, &old_mask);
	for (size_t i = 0; i < NFORWARDED; i++)
		sigaction(forwarded[i], &fwd, &old_fwd[i]);
	fflush(NULL);

	int64_t oom_before = oom_kills();
	struct timespec started;
	clock_gettime(CLOCK_MONOTONIC, &started);
	pid_t pid = fork();
	if (pid == 0) {
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGQUIT, &old_quit, NULL);
		sigaction(SIGPIPE, &old_pipe, NULL);
		for (size_t i = 0; i < NFORWARDED; i++)
			sigaction(forwarded[i], &old_fwd[i], NULL);
		sigprocmask(SIG_SETMASK, &old_mask, NULL);
		close(pfd[0]);
		int err = setup_env(o, agent, manifest, run_id);
		if (!err && o->live) {
			/* the view has the terminal: output to a file, no input */
			char name[PATH_MAX];
			live_output_name(name, sizeof name, o->argv[0], (long)getpid());
			int ofd = open(name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
			/* O_RDWR: the CLI's open() refuses a read-only open of a device
			 * (analysis/symbolize.c) */
			int nfd = open("/dev/null", O_RDWR | O_CLOEXEC);
			if (ofd < 0 || nfd < 0 || dup2(ofd, STDOUT_FILENO) < 0 ||
			    dup2(ofd, STDERR_FILENO) < 0 || dup2(nfd, STDIN_FILENO) < 0)
				err = -errno;
		}
		if (!err) {
			execvp(o->argv[0], o->argv);
			err = -errno;
		}
		ssize_t w = write(pfd[1], &err, sizeof(err));
		(void)w;
		_exit(127);
	}
	close(pfd[1]);
	if (pid < 0) {
		int e = errno;
		/* a signal held meanwhile now does what it would have done */
		for (size_t i = 0; i < NFORWARDED; i++)
			sigaction(forwarded[i], &old_fwd[i], NULL);
		sigprocmask(SIG_SETMASK, &old_mask, NULL);
		fprintf(stderr, "heaptrail: fork: %s\n", strerror(e));
		close(pfd[0]);
		close(mfd);
		return 1;
	}
	forward_to = pid;
	sigprocmask(SIG_SETMASK, &old_mask, NULL);
	int err = 0;
	ssize_t got;
	do
		got = read(pfd[0], &err, sizeof(err));
	while (got < 0 && errno == EINTR);
	close(pfd[0]);

	char live_out[PATH_MAX] = "";
	if (o->live && got == 0) {
		live_output_name(live_out, sizeof live_out, o->argv[0], (long)pid);
		char *tpath = live_trace(mfd, pid);
		if (!tpath)
			fprintf(stderr, "heaptrail: no trace to watch: %s opened none\n", HT_TEXT(o->argv[0]));
		else if (ht_top_live(tpath, pid, live_out) == 0) {
			siginfo_t si;
			memset(&si, 0, sizeof si);
			if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && !si.si_pid)
				fprintf(stderr, "heaptrail: left the live view; waiting for %s (pid %ld) to "
						"end\n", HT_TEXT(o->argv[0]), (long)pid);
		}
		free(tpath);
	}

	/* The program ends; until it is reaped its pid cannot go to another
	 * process, so forwarding stops before the reaping. */
	siginfo_t ended;
	while (waitid(P_PID, (id_t)pid, &ended, WEXITED | WNOWAIT) < 0 && errno == EINTR)
		;
	forward_to = 0;
	for (size_t i = 0; i < NFORWARDED; i++)
		sigaction(forwarded[i], &old_fwd[i], NULL);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGQUIT, &old_quit, NULL);

	int ret;
	bool signaled = false;
	if (got == (ssize_t)sizeof(err) && err) {
		if (err == -ENOENT && !strchr(o->argv[0], '/')) /* searched in PATH, as a shell says */
			fprintf(stderr, "heaptrail: %s: command not found\n", HT_TEXT(o->argv[0]));
		else
			fprintf(stderr, "heaptrail: cannot run %s: %s\n", HT_TEXT(o->argv[0]),
				strerror(-err));
		close(mfd);
		return err == -ENOENT ? 127 : err == -EACCES || err == -ENOEXEC ? 126 : 127;
	}
	if (WIFEXITED(status)) {
		ret = WEXITSTATUS(status);
		fprintf(stderr, "heaptrail: %s exited with status %d\n", HT_TEXT(o->argv[0]), ret);
	} else if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		const char *abbr = sigabbrev_np(sig);
		int64_t oom_after = sig == SIGKILL ? oom_kills() : -1;
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		char when[32];
		ht_fmt_duration(when, (uint64_t)(now.tv_sec - started.tv_sec) * 1000000000u +
					      (uint64_t)now.tv_nsec - (uint64_t)started.tv_nsec);
		if (oom_before >= 0 && oom_after > oom_before)
			fprintf(stderr, "heaptrail: %s was killed by the OOM killer after %s (signal 9, "
					"SIGKILL; the kernel's count of OOM kills rose during the run)\n",
				HT_TEXT(o->argv[0]), when);
		else
			fprintf(stderr, "heaptrail: %s was killed by signal %d%s%s%s after %s\n",
				HT_TEXT(o->argv[0]), sig, abbr ? " (SIG" : "", abbr ? abbr : "",
				abbr ? ")" : "", when);
		ret = 128 + sig;
		signaled = true;
	} else {
		ret = 1;
	}
	if (live_out[0])
		fprintf(stderr, "heaptrail: the output of %s is in %s\n", HT_TEXT(o->argv[0]),
			HT_TEXT(live_out));
	char **others;
	size_t nothers;
	char *main_path = report_traces(mfd, pid, status, o, &others, &nothers);
	close(mfd);
	bool incomplete = say_unlisted();
	/* With no trace there was no leak check: a gate that asked for one
	 * must not pass (a program that failed keeps its own status). */
	if (!main_path && o->leak_exitcode >= 0 && ret == 0) {
		fprintf(stderr, "heaptrail: no trace, so no leak check: exit status 1 "
				"(--leak-exitcode)\n");
		ret = 1;
	}
	/* a death by signal keeps its status: the leaks of a crash are not
	 * news. Every process that exited counts, as under memcheck's
	 * --trace-children (a test script's leaking test fails the gate); a
	 * trace that ended at an exec does not (that image did not end). */
	if (main_path && o->leak_exitcode >= 0 && !signaled) {
		char cwd[PATH_MAX];
		if (!getcwd(cwd, sizeof(cwd)))
			cwd[0] = '\0';
		bool fail = leaks_fail(o, main_path, display_path(main_path, cwd));
		for (size_t i = 0; i < nothers; i++) {
			if (leaks_fail(o, others[i], display_path(others[i], cwd))) {
				fprintf(stderr, "heaptrail: leaks found in %s\n",
					display_path(others[i], cwd));
				fail = true;
			}
		}
		if (fail) {
			fprintf(stderr, "heaptrail: leaks found: exit status %d (--leak-exitcode)\n",
				o->leak_exitcode);
			ret = o->leak_exitcode;
		} else if ((incomplete || errors_seen) && ret == 0) {
			/* a process with no trace, or one not listed, was not
			 * checked: "no leaks" would be a guess. As with no trace
			 * at all, 1: the leak code means leaks were seen. */
			fprintf(stderr, "heaptrail: no leaks in the traces listed, but %s: exit status 1 "
					"(--leak-exitcode)\n",
				incomplete ? "the list may be incomplete"
					   : "some processes could not create a trace");
			ret = 1;
		}
	}
	/* bad frees: memcheck's --error-exitcode. A death by signal is
	 * replaced too: glibc aborts the program on the double free itself. */
	if (o->error_exitcode >= 0 && main_path) {
		char cwd[PATH_MAX];
		if (!getcwd(cwd, sizeof(cwd)))
			cwd[0] = '\0';
		bool fail = bad_frees_fail(main_path, display_path(main_path, cwd));
		for (size_t i = 0; i < nothers; i++)
			fail |= bad_frees_fail(others[i], display_path(others[i], cwd));
		if (fail) {
			fprintf(stderr, "heaptrail: invalid frees found: exit status %d "
					"(--error-exitcode)\n",
				o->error_exitcode);
			ret = o->error_exitcode;
		}
	}
	for (size_t i = 0; i < nothers; i++)
		free(others[i]);
	free(others);
	free(main_path);
	return ret;
}
