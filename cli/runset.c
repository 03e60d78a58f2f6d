/* runset.c - the traces of one run as one thing (runset.h).
 *
 * A report of several processes loads them one at a time: each trace is
 * read, modelled and symbolized, its row of the table and its top sites
 * (their stacks already as text) are kept, and the rest is freed before
 * the next, so that a run of 80 processes costs the memory of its largest.
 */
#include "cli/runset.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/model.h"
#include "analysis/reader.h"
#include "analysis/safe.h"
#include "analysis/symbolize.h"
#include "analysis/util.h"
#include "report/report.h"
#include "trace_format.h"

void ht_runset_init(ht_runset_t *rs)
{
	memset(rs, 0, sizeof *rs);
	rs->stdin_fd = -1;
}

void ht_runset_free(ht_runset_t *rs)
{
	for (size_t i = 0; i < rs->n; i++) {
		free(rs->p[i].path);
		free(rs->p[i].shown);
		free(rs->p[i].program);
	}
	free(rs->p);
	free(rs->source);
	free(rs->command);
	if (rs->stdin_fd >= 0)
		close(rs->stdin_fd);
	ht_runset_init(rs);
}

static ht_proc_t *add_proc(ht_runset_t *rs, const char *path, const char *shown)
{
	if (ht_util_grow((void **)&rs->p, &rs->cap, rs->n + 1, sizeof *rs->p))
		return NULL;
	ht_proc_t *p = &rs->p[rs->n];
	memset(p, 0, sizeof *p);
	p->path = strdup(path);
	p->shown = strdup(shown);
	p->pid = p->ppid = -1;
	if (!p->path || !p->shown) {
		free(p->path);
		free(p->shown);
		return NULL;
	}
	rs->n++;
	return p;
}

/* The first bytes of path (up to len), or -1. */
static ssize_t head_of(const char *path, char *buf, size_t len)
{
	int fd = ht_open_regular(path, 0);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, len);
	close(fd);
	return n;
}

static bool is_runfile(const char *path)
{
	char h[sizeof HT_RUNFILE_MAGIC];
	return head_of(path, h, sizeof h - 1) == (ssize_t)(sizeof h - 1) &&
	       !memcmp(h, HT_RUNFILE_MAGIC, sizeof h - 1);
}

static bool is_trace(const char *path)
{
	char h[HT_FILE_MAGIC_LEN];
	return head_of(path, h, sizeof h) == (ssize_t)sizeof h && !memcmp(h, HT_FILE_MAGIC, sizeof h);
}

/* dir/name into a new string (name alone when absolute or dir is "."). */
static char *join(const char *dir, size_t dirlen, const char *name)
{
	char *s = NULL;
	if (name[0] == '/' || !dirlen)
		return strdup(name);
	if (asprintf(&s, "%.*s/%s", (int)dirlen, dir, name) < 0)
		return NULL;
	return s;
}

static int add_runfile(ht_runset_t *rs, const char *cmd, const char *path)
{
	FILE *f = fopen(path, "re");
	if (!f) {
		fprintf(stderr, "heaptrail: %s: %s: %s\n", cmd, HT_TEXT(path), strerror(errno));
		return 1;
	}
	const char *slash = strrchr(path, '/');
	size_t dirlen = slash ? (size_t)(slash - path) : 0;
	if (slash && !dirlen)
		dirlen = 1; /* "/x.run" */
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	size_t before = rs->n;
	unsigned lineno = 0;
	int ret = 0;
	while ((len = getline(&line, &cap, f)) > 0) {
		lineno++;
		if (line[len - 1] == '\n')
			line[--len] = 0;
		if (!strncmp(line, "# command: ", 11) && !rs->command) {
			rs->command = strdup(line + 11);
			continue;
		}
		if (line[0] == '#' || !line[0])
			continue;
		char *field[5] = { NULL };
		char *save = NULL, *tok = strtok_r(line, "\t", &save);
		size_t nf = 0;
		for (; tok && nf < 5; tok = strtok_r(NULL, "\t", &save))
			field[nf++] = tok;
		if (nf < 4) {
			fprintf(stderr, "heaptrail: %s: %s:%u: not a line of a run file (TRACE, PID, "
					"PARENT, PROGRAM, ENDED separated by tabs)\n",
				cmd, HT_TEXT(path), lineno);
			ret = 1;
			break;
		}
		char *full = join(path, dirlen, field[0]);
		ht_proc_t *p = full ? add_proc(rs, full, full) : NULL;
		free(full);
		if (!p) {
			ret = 1;
			break;
		}
		p->pid = strtol(field[1], NULL, 10);
		p->ppid = strtol(field[2], NULL, 10);
		p->program = strdup(field[3]);
		snprintf(p->ended, sizeof p->ended, "%s", field[4] ? field[4] : "");
	}
	free(line);
	fclose(f);
	if (!ret && rs->n == before) {
		fprintf(stderr, "heaptrail: %s: %s lists no traces\n", cmd, HT_TEXT(path));
		ret = 1;
	}
	return ret;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int add_dir(ht_runset_t *rs, const char *cmd, const char *dir)
{
	DIR *d = opendir(dir);
	if (!d) {
		fprintf(stderr, "heaptrail: %s: %s: %s\n", cmd, HT_TEXT(dir), strerror(errno));
		return 1;
	}
	char **runs = NULL, **traces = NULL;
	size_t nruns = 0, ntraces = 0, capr = 0, capt = 0;
	size_t dl = strlen(dir);
	while (dl > 1 && dir[dl - 1] == '/')
		dl--;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char *p = join(dir, dl, de->d_name);
		if (!p)
			continue;
		if (is_runfile(p) && !ht_util_grow((void **)&runs, &capr, nruns + 1, sizeof *runs))
			runs[nruns++] = p;
		else if (is_trace(p) && !ht_util_grow((void **)&traces, &capt, ntraces + 1, sizeof *traces))
			traces[ntraces++] = p;
		else
			free(p);
	}
	closedir(d);
	int ret = 0;
	/* the run files name their traces and what is known of them; the
	 * traces alone when there is none */
	if (nruns) {
		qsort(runs, nruns, sizeof *runs, cmp_str);
		for (size_t i = 0; i < nruns && !ret; i++)
			ret = add_runfile(rs, cmd, runs[i]);
	} else if (ntraces) {
		qsort(traces, ntraces, sizeof *traces, cmp_str);
		for (size_t i = 0; i < ntraces && !ret; i++)
			ret = add_proc(rs, traces[i], traces[i]) ? 0 : 1;
	} else {
		fprintf(stderr, "heaptrail: %s: %s: no traces in this directory\n", cmd, HT_TEXT(dir));
		ret = 1;
	}
	for (size_t i = 0; i < nruns; i++)
		free(runs[i]);
	for (size_t i = 0; i < ntraces; i++)
		free(traces[i]);
	free(runs);
	free(traces);
	return ret;
}

/* Standard input as a file the reader can map: itself when it is a
 * regular file (`< trace.ht`), else copied into an unlinked temporary
 * file, kept open for as long as the set. */
static int spool_stdin(ht_runset_t *rs, const char *cmd, char *path, size_t len)
{
	struct stat st;
	if (fstat(0, &st) == 0 && S_ISREG(st.st_mode) && lseek(0, 0, SEEK_CUR) == 0) {
		snprintf(path, len, "/proc/self/fd/0");
		return 0;
	}
	if (rs->stdin_fd >= 0) {
		fprintf(stderr, "heaptrail: %s: - (standard input) given twice\n", cmd);
		return 1;
	}
	const char *tmp = getenv("TMPDIR");
	char tpl[4096];
	snprintf(tpl, sizeof tpl, "%s/heaptrail-stdin-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	int fd = mkostemp(tpl, O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "heaptrail: %s: cannot create a temporary file for standard input "
				"in %s: %s\n",
			cmd, HT_TEXT(tmp && *tmp ? tmp : "/tmp"), strerror(errno));
		return 1;
	}
	unlink(tpl);
	char buf[65536];
	for (;;) {
		ssize_t n = read(0, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, "heaptrail: %s: reading standard input: %s\n", cmd,
				strerror(errno));
			close(fd);
			return 1;
		}
		if (n == 0)
			break;
		for (ssize_t w = 0; w < n;) {
			ssize_t k = write(fd, buf + w, (size_t)(n - w));
			if (k < 0 && errno == EINTR)
				continue;
			if (k < 0) {
				fprintf(stderr, "heaptrail: %s: spooling standard input to %s: %s\n",
					cmd, HT_TEXT(tpl), strerror(errno));
				close(fd);
				return 1;
			}
			w += k;
		}
	}
	rs->stdin_fd = fd;
	snprintf(path, len, "/proc/self/fd/%d", fd);
	return 0;
}

int ht_runset_add(ht_runset_t *rs, const char *cmd, const char *arg)
{
	char spooled[64];
	const char *path = arg;
	if (!strcmp(arg, "-")) {
		if (spool_stdin(rs, cmd, spooled, sizeof spooled))
			return 1;
		path = spooled;
	}
	struct stat st;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		free(rs->source);
		rs->source = strdup(arg);
		return add_dir(rs, cmd, path);
	}
	if (is_runfile(path)) {
		free(rs->source);
		rs->source = strdup(arg);
		return add_runfile(rs, cmd, path);
	}
	/* a trace, or what the reader will say is not one */
	return add_proc(rs, path, strcmp(arg, "-") ? arg : "(standard input)") ? 0 : 1;
}

/* "exit 0", "signal 9 (SIGKILL)", ... for the table. */
static void ending_short(const ht_trace_t *t, char *buf, size_t len)
{
	const char *abbr;
	switch (t->ending) {
	case HT_ENDING_EXIT:
		if (t->agent_flags & HT_AGENT_EXIT_CODE_UNKNOWN)
			snprintf(buf, len, "exit ?");
		else
			snprintf(buf, len, "exit %" PRIu64, t->end_status & 0xff);
		break;
	case HT_ENDING_UNDERSCORE_EXIT:
		snprintf(buf, len, "_exit %" PRIu64, t->end_status & 0xff);
		break;
	case HT_ENDING_SIGNAL:
		abbr = t->end_status < 65 ? sigabbrev_np((int)t->end_status) : NULL;
		snprintf(buf, len, "signal %" PRIu64 "%s%s%s", t->end_status, abbr ? " (SIG" : "",
			 abbr ? abbr : "", abbr ? ")" : "");
		break;
	case HT_ENDING_DETACH:
		snprintf(buf, len, "detached");
		break;
	case HT_ENDING_EXEC:
		snprintf(buf, len, "exec %s", t->exec_path ? ht_base_name(t->exec_path) : "");
		break;
	default:
		snprintf(buf, len, "cut short");
		break;
	}
	for (char *c = buf; *c; c++)
		if (*c == '\t' || *c == '\n')
			*c = ' ';
}

static void fill_from(ht_proc_t *p, const ht_trace_t *t)
{
	if (!p->program) {
		const char *exe = t->exe_path && *t->exe_path ? t->exe_path
				  : t->argc ? t->argv[0] : "?";
		p->program = strdup(ht_base_name(exe));
	}
	if (p->pid < 0)
		p->pid = (long)t->pid;
	if (p->ppid < 0)
		p->ppid = (long)t->ppid;
	if (!p->ended[0])
		ending_short(t, p->ended, sizeof p->ended);
}

void ht_runset_fill(ht_runset_t *rs)
{
	for (size_t i = 0; i < rs->n; i++) {
		ht_proc_t *p = &rs->p[i];
		if (p->program && p->pid >= 0)
			continue;
		ht_trace_t *t = NULL;
		if (ht_reader_load_file(p->path, NULL, &t) >= 0 && t->have_process)
			fill_from(p, t);
		ht_trace_free(t);
	}
}

static void list_procs(const ht_runset_t *rs)
{
	for (size_t i = 0; i < rs->n; i++)
		fprintf(stderr, "heaptrail:   %-16s pid %-8ld %s\n",
			HT_TEXT(rs->p[i].program ? rs->p[i].program : "?"), rs->p[i].pid,
			HT_TEXT(rs->p[i].shown));
}

long ht_runset_pick(ht_runset_t *rs, const char *cmd, long pid, const char *program)
{
	ht_runset_fill(rs);
	long found = -1;
	size_t nfound = 0;
	for (size_t i = 0; i < rs->n; i++) {
		const ht_proc_t *p = &rs->p[i];
		if (pid >= 0 && p->pid != pid)
			continue;
		if (program && (!p->program || strcmp(p->program, program)))
			continue;
		/* an image that exec'd another under the same pid: the later
		 * one is "the process" for --pid */
		if (found < 0 || pid >= 0)
			found = (long)i;
		nfound++;
	}
	if (nfound == 1 || (nfound > 1 && pid >= 0 && !program))
		return found;
	char which[64] = "";
	if (pid >= 0)
		snprintf(which, sizeof which, "%swith pid %ld", program ? " " : "", pid);
	if (!nfound)
		fprintf(stderr, "heaptrail: %s: no process %s%s in %s; it holds:\n", cmd,
			program ? HT_TEXT(program) : "", which,
			rs->source ? HT_TEXT(rs->source) : "the traces given");
	else
		fprintf(stderr, "heaptrail: %s: %zu processes of %s; pick one with --pid:\n", cmd,
			nfound, HT_TEXT(program));
	list_procs(rs);
	return -1;
}

/* ---- the report of the whole set ------------------------------------------------ */

typedef struct row {
	ht_proc_t *p;
	bool loaded;
	uint64_t start_ns;
	uint64_t allocations, bytes, peak, lost, in_use;
	size_t nsites; /* with allocations */
	bool sampled;
} row_t;

typedef struct srow {
	size_t proc; /* index of its row */
	uint64_t bytes, allocations, peak;
	char *stack; /* text, or the JSON array of frames */
} srow_t;

/* Frames shown per site of the whole run. */
#define STACK_LINES 6

static int cmp_row(const void *a, const void *b)
{
	const row_t *x = a, *y = b;
	if (x->loaded != y->loaded) /* an unreadable trace has no start: last */
		return x->loaded ? -1 : 1;
	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	return x->p < y->p ? -1 : x->p > y->p;
}

static int cmp_srow(const void *a, const void *b)
{
	const srow_t *x = a, *y = b;
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return x->proc < y->proc ? -1 : x->proc > y->proc;
}

/* One process: its row, and its top sites appended to *s. In leaks_only
 * text mode, its leak section is printed here (after the table it is
 * not: the table comes first, so the caller loads twice there). */
static int load_one(row_t *r, size_t ri, bool json, size_t top, bool by_address,
		    ht_supp_list_t *supps, srow_t **s, size_t *ns, size_t *scap, FILE *leaks_out,
		    bool show_reachable)
{
	ht_trace_t *t = NULL;
	int rc = ht_reader_load_file(r->p->path, NULL, &t);
	if (rc < 0) {
		fprintf(stderr, "heaptrail: %s: %s\n", HT_TEXT(r->p->shown),
			t && t->message[0] ? HT_TEXT(t->message) : ht_strerror(rc));
		ht_trace_free(t);
		return 1;
	}
	if (t->error)
		fprintf(stderr, "heaptrail: warning: %s: %s; reporting the records complete before it\n",
			HT_TEXT(r->p->shown), HT_TEXT(t->message));
	fill_from(r->p, t);
	ht_symbolizer_t *sym = ht_symbolizer_new();
	if (sym)
		ht_trace_add_modules(t, sym);
	ht_model_t *m = NULL;
	ht_leaks_t lk;
	bool have_lk = false;
	if (ht_model_build_sym(t, by_address ? NULL : sym, &m)) {
		fprintf(stderr, "heaptrail: %s: out of memory\n", HT_TEXT(r->p->shown));
		ht_symbolizer_free(sym);
		ht_trace_free(t);
		return 1;
	}
	have_lk = ht_leaks_build(m, sym, supps, &lk) == 0;
	r->loaded = true;
	r->start_ns = t->start_realtime_ns;
	r->allocations = m->totals.allocations;
	r->bytes = m->totals.bytes_allocated;
	r->peak = m->totals.peak_heap_bytes;
	r->in_use = m->totals.leaked_bytes;
	r->sampled = m->sample_rate != 0;
	if (have_lk)
		r->lost = lk.bytes[0] + lk.bytes[HT_LEAK_DEFINITE] + lk.bytes[HT_LEAK_INDIRECT];
	if (leaks_out) {
		if (have_lk && (ht_leaks_fail(&lk) || show_reachable)) {
			fprintf(leaks_out, "\n== %s, pid %ld: %s ==\n", HT_TEXT(r->p->program),
				r->p->pid, HT_TEXT(r->p->shown));
			ht_report_leaks_text(leaks_out, m, sym, &lk, top, show_reachable);
		}
	} else {
		size_t *idx = malloc((m->nsites ? m->nsites : 1) * sizeof *idx);
		size_t k = idx ? ht_model_sort(m, HT_BY_BYTES, idx) : 0;
		r->nsites = k;
		if (k > top)
			k = top;
		ht_frame_t *frames = NULL;
		size_t fcap = 0;
		for (size_t i = 0; i < k; i++) {
			const ht_site_t *site = &m->sites[idx[i]];
			char *text = NULL;
			size_t tlen = 0;
			FILE *f = open_memstream(&text, &tlen);
			if (!f)
				break;
			if (json) {
				long nf = ht_model_frames(m, sym, site, &frames, &fcap);
				ht_json_frames(f, frames, nf < 0 ? 0 : nf);
			} else {
				ht_report_stack_text(f, m, sym, site, false);
			}
			fclose(f);
			/* its top frames: the process's own report has the rest */
			char *cut = text;
			for (int l = 0; cut && l < STACK_LINES; l++)
				cut = (cut = strchr(cut, '\n')) ? cut + 1 : NULL;
			if (!json && cut && *cut) {
				size_t keep = (size_t)(cut - text);
				char *t2 = realloc(text, keep + 16);
				if (t2) {
					strcpy(t2 + keep, "     ...\n");
					text = t2;
				}
			}
			if (ht_util_grow((void **)s, scap, *ns + 1, sizeof **s)) {
				free(text);
				break;
			}
			(*s)[(*ns)++] = (srow_t){ ri, site->bytes_allocated, site->allocations,
						  site->peak_bytes, text };
		}
		free(frames);
		free(idx);
	}
	if (have_lk)
		ht_leaks_free(&lk);
	ht_model_free(m);
	ht_symbolizer_free(sym);
	ht_trace_free(t);
	return 0;
}

static void text_table(FILE *out, const row_t *rows, size_t n)
{
	int w = 7;
	for (size_t i = 0; i < n; i++) {
		int l = (int)ht_text_len(rows[i].p->program ? rows[i].p->program : "?");
		if (l > w)
			w = l < 24 ? l : 24;
	}
	ht_report_rule(out, "PROCESSES");
	fprintf(out, "  %-*s %8s %8s %11s %11s %11s  %s\n", w, "program", "pid", "parent",
		"allocated", "peak", "lost", "ended");
	for (size_t i = 0; i < n; i++) {
		const row_t *r = &rows[i];
		char a[HT_FMT_LEN], b[HT_FMT_LEN], c[HT_FMT_LEN];
		fputs("  ", out);
		ht_text_pad(out, r->p->program ? r->p->program : "?", w);
		if (!r->loaded) {
			fprintf(out, " %8ld %8ld %11s %11s %11s  %s\n", r->p->pid, r->p->ppid, "?", "?",
				"?", "unreadable");
			continue;
		}
		fprintf(out, " %8ld %8ld %s%10s %s%10s %s%10s  ", r->p->pid, r->p->ppid,
			r->sampled ? "~" : " ", ht_fmt_size(a, r->bytes), r->sampled ? "~" : " ",
			ht_fmt_size(b, r->peak), r->sampled ? "~" : " ", ht_fmt_size(c, r->lost));
		ht_text_put(out, r->p->ended[0] ? r->p->ended : "?");
		fputc('\n', out);
	}
}

static void json_table(FILE *out, const row_t *rows, size_t n)
{
	fputs("\"processes\": [", out);
	for (size_t i = 0; i < n; i++) {
		const row_t *r = &rows[i];
		fprintf(out, "%s\n  {\"program\": ", i ? "," : "");
		ht_json_str(out, r->p->program ? r->p->program : "");
		fprintf(out, ", \"pid\": %ld, \"parent\": %ld, \"trace\": ", r->p->pid, r->p->ppid);
		ht_json_str(out, r->p->shown);
		if (r->loaded)
			fprintf(out, ", \"allocations\": %" PRIu64 ", \"bytes_allocated\": %" PRIu64
				     ", \"peak_heap_bytes\": %" PRIu64 ", \"lost_bytes\": %" PRIu64
				     ", \"in_use_at_exit_bytes\": %" PRIu64,
				r->allocations, r->bytes, r->peak, r->lost, r->in_use);
		fputs(", \"ended\": ", out);
		ht_json_str(out, r->p->ended);
		fputc('}', out);
	}
	fputs("\n]", out);
}

int ht_runset_report(FILE *out, ht_runset_t *rs, bool json, size_t top, bool by_address,
		     ht_supp_list_t *supps, const char *run_arg, bool leaks_only,
		     bool show_reachable)
{
	if (!top)
		top = 10;
	row_t *rows = calloc(rs->n, sizeof *rows);
	if (!rows)
		return 1;
	srow_t *s = NULL;
	size_t ns = 0, scap = 0;
	unsigned failed = 0;
	for (size_t i = 0; i < rs->n; i++) {
		rows[i].p = &rs->p[i];
		failed += load_one(&rows[i], i, json, top, by_address, supps, &s, &ns, &scap, NULL,
				   false) != 0;
	}
	/* in the order they started; the sites keep their process's row */
	size_t *order = malloc(rs->n * sizeof *order);
	row_t *sorted = malloc(rs->n * sizeof *sorted);
	if (!order || !sorted) {
		free(order);
		free(sorted);
		free(rows);
		return 1;
	}
	memcpy(sorted, rows, rs->n * sizeof *rows);
	qsort(sorted, rs->n, sizeof *sorted, cmp_row);
	qsort(s, ns, sizeof *s, cmp_srow);
	size_t most = SIZE_MAX, nsites = 0;
	uint64_t total = 0;
	for (size_t i = 0; i < rs->n; i++) {
		total += rows[i].bytes;
		nsites += rows[i].nsites;
		if (rows[i].loaded && (most == SIZE_MAX || rows[i].bytes > rows[most].bytes))
			most = i;
	}
	size_t shown = ns < top ? ns : top;
	if (json) {
		fputs("{\"heaptrail_run\": 1, \"source\": ", out);
		ht_json_str(out, rs->source ? rs->source : "");
		fputs(", \"command\": ", out);
		ht_json_str(out, rs->command ? rs->command : "");
		fputs(",\n", out);
		json_table(out, sorted, rs->n);
		if (!leaks_only) {
			fputs(",\n\"sites\": [", out);
			for (size_t i = 0; i < shown; i++) {
				const row_t *r = &rows[s[i].proc];
				fprintf(out, "%s\n  {\"program\": ", i ? "," : "");
				ht_json_str(out, r->p->program ? r->p->program : "");
				fprintf(out, ", \"pid\": %ld, \"bytes_allocated\": %" PRIu64
					     ", \"allocations\": %" PRIu64 ", \"peak_bytes\": %" PRIu64
					     ", \"frames\": %s}",
					r->p->pid, s[i].bytes, s[i].allocations, s[i].peak,
					s[i].stack && *s[i].stack ? s[i].stack : "[]");
			}
			fputs("\n]", out);
		}
		fputs("}\n", out);
	} else {
		fprintf(out, "heaptrail %s: %zu processes", leaks_only ? "leaks" : "report", rs->n);
		if (rs->source) {
			fputs(" of ", out);
			ht_text_put(out, rs->source);
		}
		fputc('\n', out);
		if (rs->command) {
			fputs("  command     ", out);
			ht_text_put(out, rs->command);
			fputc('\n', out);
		}
		text_table(out, sorted, rs->n);
		if (most != SIZE_MAX) {
			char a[HT_FMT_LEN], b[HT_FMT_LEN];
			fprintf(out, "  %s allocated in all; most by ", ht_fmt_size(a, total));
			ht_text_put(out, rows[most].p->program);
			fprintf(out, " (pid %ld): %s\n", rows[most].p->pid, ht_fmt_size(b, rows[most].bytes));
		}
		if (leaks_only) {
			bool any = false;
			for (size_t i = 0; i < rs->n; i++) {
				const row_t *r = &sorted[i];
				if (!r->loaded || (!r->lost && !show_reachable))
					continue;
				row_t tmp = *r;
				srow_t *none = NULL;
				size_t z = 0, zc = 0;
				load_one(&tmp, 0, false, top, by_address, supps, &none, &z, &zc, out,
					 show_reachable);
				any = true;
			}
			if (!any)
				fputs("\nno process lost memory (definitely or indirectly)\n", out);
		} else {
			ht_report_list_rule(out, "TOP SITES OF ALL PROCESSES BY BYTES ALLOCATED", shown,
					    nsites);
			for (size_t i = 0; i < shown; i++) {
				const row_t *r = &rows[s[i].proc];
				char a[HT_FMT_LEN], b[HT_FMT_LEN], c[HT_FMT_LEN];
				fprintf(out, "#%zu  ", i + 1);
				ht_text_put(out, r->p->program);
				fprintf(out, " (pid %ld): %s%s in %s allocation%s, %s at its process's peak\n",
					r->p->pid, r->sampled ? "~" : "", ht_fmt_size(a, s[i].bytes),
					ht_fmt_count(b, s[i].allocations), s[i].allocations == 1 ? "" : "s",
					ht_fmt_size(c, s[i].peak));
				fputs(s[i].stack ? s[i].stack : "", out);
			}
			if (!shown)
				fputs("  no allocations\n", out);
		}
		if (most != SIZE_MAX) {
			fputs("\none process in full: heaptrail ", out);
			fputs(leaks_only ? "leaks" : "report", out);
			fprintf(out, " --pid %ld ", rows[most].p->pid);
			ht_text_put(out, run_arg);
			fputs(" (or --program NAME)\n", out);
		}
	}
	for (size_t i = 0; i < ns; i++)
		free(s[i].stack);
	free(s);
	free(order);
	free(sorted);
	free(rows);
	if (failed)
		fprintf(stderr, "heaptrail: %u of %zu traces could not be read (above)\n", failed, rs->n);
	return ferror(out) || failed ? 1 : 0;
}

/* ---- the run file ------------------------------------------------------------- */

/* arg quoted for a POSIX shell when it needs it, on one line. */
static void put_quoted(FILE *f, const char *a)
{
	bool plain = *a != 0;
	for (const char *c = a; *c; c++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=+,:@%", *c))
			plain = false;
	if (plain) {
		fputs(a, f);
		return;
	}
	fputc('\'', f);
	for (const char *c = a; *c; c++) {
		if (*c == '\'')
			fputs("'\\''", f);
		else
			fputc(*c == '\n' || *c == '\t' ? ' ' : *c, f);
	}
	fputc('\'', f);
}

char *ht_runfile_write(const char *root_trace, char *const *argv, const ht_proc_t *p, size_t n)
{
	size_t rl = strlen(root_trace);
	size_t base = rl > 3 && !strcmp(root_trace + rl - 3, ".ht") ? rl - 3 : rl;
	char *path = malloc(base + 32);
	if (!path)
		return NULL;
	int fd = -1;
	for (unsigned i = 0; i < 100 && fd < 0; i++) {
		if (i)
			snprintf(path, base + 32, "%.*s.%u.run", (int)base, root_trace, i);
		else
			snprintf(path, base + 32, "%.*s.run", (int)base, root_trace);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		fprintf(stderr, "heaptrail: cannot write the run's list of processes %s: %s\n",
			HT_TEXT(path), strerror(errno));
		if (fd >= 0)
			close(fd);
		free(path);
		return NULL;
	}
	const char *slash = strrchr(path, '/');
	size_t dirlen = slash ? (size_t)(slash - path) + 1 : 0;
	fputs(HT_RUNFILE_MAGIC "\n# command: ", f);
	for (size_t i = 0; argv[i]; i++) {
		if (i)
			fputc(' ', f);
		put_quoted(f, argv[i]);
	}
	fputs("\n# trace\tpid\tparent\tprogram\tended\n", f);
	for (size_t i = 0; i < n; i++) {
		const char *tp = p[i].path;
		/* beside the run file: by name, so that the two move together */
		if (dirlen && !strncmp(tp, path, dirlen) && !strchr(tp + dirlen, '/'))
			tp += dirlen;
		if (strpbrk(tp, "\t\n"))
			continue; /* not one field: the run's summary lists it */
		char prog[256];
		snprintf(prog, sizeof prog, "%s", p[i].program ? p[i].program : "?");
		for (char *c = prog; *c; c++)
			if (*c == '\t' || *c == '\n')
				*c = ' ';
		fprintf(f, "%s\t%ld\t%ld\t%s\t%s\n", tp, p[i].pid, p[i].ppid, prog,
			p[i].ended[0] ? p[i].ended : "?");
	}
	if (fclose(f)) {
		fprintf(stderr, "heaptrail: cannot write the run's list of processes %s: %s\n",
			HT_TEXT(path), strerror(errno));
		unlink(path);
		free(path);
		return NULL;
	}
	return path;
}

/* ---- two runs side by side ------------------------------------------------------ */

typedef struct prog_row {
	const char *program;
	size_t procs[2];
	uint64_t bytes[2], peak[2], lost[2];
} prog_row_t;

static prog_row_t *prog_of(prog_row_t **rows, size_t *n, size_t *cap, const char *program)
{
	for (size_t i = 0; i < *n; i++)
		if (!strcmp((*rows)[i].program, program))
			return &(*rows)[i];
	if (ht_util_grow((void **)rows, cap, *n + 1, sizeof **rows))
		return NULL;
	prog_row_t *r = &(*rows)[(*n)++];
	memset(r, 0, sizeof *r);
	r->program = program;
	return r;
}

int ht_runset_diff(FILE *out, ht_runset_t *base, ht_runset_t *new_, bool json, bool by_address)
{
	prog_row_t *rows = NULL;
	size_t n = 0, cap = 0;
	ht_runset_t *side[2] = { base, new_ };
	unsigned failed = 0;
	for (int k = 0; k < 2; k++) {
		for (size_t i = 0; i < side[k]->n; i++) {
			row_t r = { .p = &side[k]->p[i] };
			srow_t *none = NULL;
			size_t z = 0, zc = 0;
			/* top 0 sites: the figures alone */
			if (load_one(&r, 0, json, 0, by_address, NULL, &none, &z, &zc, NULL, false)) {
				failed++;
				continue;
			}
			prog_row_t *pr = prog_of(&rows, &n, &cap, r.p->program ? r.p->program : "?");
			if (!pr)
				continue;
			pr->procs[k]++;
			pr->bytes[k] += r.bytes;
			pr->lost[k] += r.lost;
			if (r.peak > pr->peak[k])
				pr->peak[k] = r.peak;
		}
	}
	if (json) {
		fputs("{\"heaptrail_run_diff\": 1, \"programs\": [", out);
		for (size_t i = 0; i < n; i++) {
			const prog_row_t *r = &rows[i];
			fprintf(out, "%s\n  {\"program\": ", i ? "," : "");
			ht_json_str(out, r->program);
			for (int k = 0; k < 2; k++)
				fprintf(out, ", \"%s\": {\"processes\": %zu, \"bytes_allocated\": %" PRIu64
					     ", \"peak_heap_bytes\": %" PRIu64 ", \"lost_bytes\": %" PRIu64 "}",
					k ? "new" : "base", r->procs[k], r->bytes[k], r->peak[k], r->lost[k]);
			fputc('}', out);
		}
		fputs("\n]}\n", out);
	} else {
		int w = 7;
		for (size_t i = 0; i < n; i++) {
			int l = (int)ht_text_len(rows[i].program);
			if (l > w)
				w = l < 24 ? l : 24;
		}
		fputs("heaptrail diff of runs: ", out);
		ht_text_put(out, base->source ? base->source : base->n ? base->p[0].shown : "?");
		fputs(" -> ", out);
		ht_text_put(out, new_->source ? new_->source : new_->n ? new_->p[0].shown : "?");
		fputs("\n\n", out);
		ht_report_rule(out, "PROGRAMS (the processes of each summed; peak: the largest process's)");
		fprintf(out, "  %-*s %9s %23s %23s %23s\n", w, "program", "processes",
			"allocated base -> new", "peak base -> new", "lost base -> new");
		for (size_t i = 0; i < n; i++) {
			const prog_row_t *r = &rows[i];
			char a[HT_FMT_LEN], b[HT_FMT_LEN], c[HT_FMT_LEN], d[HT_FMT_LEN], e[HT_FMT_LEN],
				f[HT_FMT_LEN], pc[32];
			snprintf(pc, sizeof pc, "%zu -> %zu", r->procs[0], r->procs[1]);
			fputs("  ", out);
			ht_text_pad(out, r->program, w);
			fprintf(out, " %9s %10s -> %-10s %10s -> %-10s %10s -> %-10s\n", pc,
				ht_fmt_size(a, r->bytes[0]), ht_fmt_size(b, r->bytes[1]),
				ht_fmt_size(c, r->peak[0]), ht_fmt_size(d, r->peak[1]),
				ht_fmt_size(e, r->lost[0]), ht_fmt_size(f, r->lost[1]));
		}
		fputs("\nthe sites of one program: heaptrail diff --program NAME BASE NEW\n", out);
	}
	free(rows);
	return ferror(out) || failed ? 1 : 0;
}
