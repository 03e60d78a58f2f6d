/* runset.c - the traces of one run as one thing (runset.h): what the
 * command was given, and the report and diff of a whole run, read by
 * analysis/run_summary.h and written by report/run_section.h.
 */
#include "cli/runset.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/reader.h"
#include "analysis/run_summary.h"
#include "analysis/safe.h"
#include "analysis/util.h"
#include "report/run_section.h"
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

void ht_runset_fill(ht_runset_t *rs)
{
	for (size_t i = 0; i < rs->n; i++) {
		ht_proc_t *p = &rs->p[i];
		if (p->program && p->pid >= 0)
			continue;
		ht_trace_t *t = NULL;
		if (ht_reader_load_file(p->path, NULL, &t) >= 0 && t->have_process)
			ht_proc_fill(p, t);
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

int ht_runset_report(FILE *out, ht_runset_t *rs, bool json, size_t top, bool by_address,
		     ht_supp_list_t *supps, const char *run_arg, bool leaks_only,
		     bool show_reachable)
{
	if (!top)
		top = 10;
	ht_run_summary_t s;
	if (ht_run_summarize(&s, rs->p, rs->n, top, !leaks_only, by_address, supps))
		return 1;
	ht_emitter_t e;
	ht_emit_init(&e, out, json ? HT_EMIT_JSON : HT_EMIT_TEXT);
	ht_section_run_head(&e, &s, rs->source, rs->command, leaks_only);
	/* the leaks of each process that lost memory, read again one at a
	 * time after the table (the JSON has the table alone) */
	size_t looked = 0;
	int err = 0;
	for (size_t i = 0; leaks_only && !json && i < s.n; i++) {
		const ht_run_proc_t *r = &s.procs[s.order[i]];
		if (!r->loaded || (!r->lost && !show_reachable))
			continue;
		looked++;
		ht_proc_load_t l;
		if (ht_proc_load(&l, r->p, by_address, supps))
			continue;
		int le = ht_section_run_leaks(&e, r->p, &l, top, show_reachable);
		if (le && !err)
			err = le;
		ht_proc_load_free(&l);
	}
	int te = ht_section_run_tail(&e, &s, top, leaks_only, looked, run_arg);
	unsigned failed = s.failed;
	ht_run_summary_free(&s);
	if (failed)
		fprintf(stderr, "heaptrail: %u of %zu traces could not be read (above)\n", failed, rs->n);
	return err || te || ferror(out) || failed ? 1 : 0;
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

int ht_runset_diff(FILE *out, ht_runset_t *base, ht_runset_t *new_, bool json, bool by_address)
{
	ht_proc_t *const side[2] = { base->p, new_->p };
	const size_t n[2] = { base->n, new_->n };
	ht_run_programs_t r;
	int err = ht_run_by_program(&r, side, n, by_address);
	if (!err) {
		ht_emitter_t e;
		ht_emit_init(&e, out, json ? HT_EMIT_JSON : HT_EMIT_TEXT);
		err = ht_section_run_diff(&e, &r,
					  base->source ? base->source : base->n ? base->p[0].shown : "?",
					  new_->source ? new_->source : new_->n ? new_->p[0].shown : "?");
	}
	unsigned failed = r.failed;
	ht_run_programs_free(&r);
	return err || ferror(out) || failed ? 1 : 0;
}
