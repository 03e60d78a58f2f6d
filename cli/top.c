/* top.c - `heaptrail top`: a live view of a trace as the agent writes it.
 *
 * The trace is followed (ht_reader_follow): each refresh reads what the
 * file gained since the last one and hands its events to one pass
 * (ht_pass_advance) with a single consumer, analysis/watch.c. Events are
 * held back LAG_NS behind the clock: an event reaches the file within
 * 0.5 s at most (agent/flusher.c), so another thread's earlier events may
 * still be on their way; a trace that ended, or a file that has not been
 * written for QUIET_NS, is read to its end.
 *
 * The view is termios and ANSI escapes on the alternate screen; the
 * terminal is given back on every way out (q, SIGINT, SIGTERM, SIGHUP,
 * exit) and around a stop (SIGTSTP). Nothing here ever writes to the
 * trace or signals the program: leaving the view leaves it running.
 */
#include "cli/top.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <langinfo.h>
#include <limits.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "trace_format.h"
#include "analysis/pass.h"
#include "analysis/reader.h"
#include "analysis/safe.h"
#include "analysis/symbolize.h"
#include "analysis/util.h"
#include "analysis/watch.h"

#define NS 1000000000ull
#define LAG_NS (1 * NS)	     /* events held back behind the clock */
#define QUIET_NS (2 * NS)    /* a file quiet this long is read to its end */
#define RATE_SECONDS 10	     /* allocation rates: over the last 10 s */
#define GROWTH_SECONDS 10    /* growth: over the last 10 s */
#define CHART_ROWS 3
#define TEXT_COLS 100	     /* --once and --batch: the frame's width */

typedef struct group {
	char *name; /* raw (printed escaped) */
	uint64_t live, blocks, allocs;
	double rate;
	int64_t growth;
} group_t;

typedef struct top {
	const char *path; /* the file read */
	char shown[PATH_MAX]; /* its name for the screen (printed escaped) */
	pid_t pid;	      /* the process watched, 0 when unknown */
	bool child;	      /* run --live: our child */
	const char *output;   /* run --live: where the program's output goes */
	ht_trace_t *t;
	ht_pass_t *pass;
	ht_watch_t w;
	bool following;
	ht_symbolizer_t *sym;
	size_t sym_modules;
	/* sites folded by the name shown: pass site -> group */
	uint32_t *site_group;
	size_t nsite_group, cap_site_group;
	group_t *groups;
	size_t ngroups, cap_groups;
	ht_map_t group_by_hash;
	uint32_t *order;
	/* the view */
	int sort;
	bool paused, tty, color, utf8;
	unsigned interval_ms, nsites;
	int rows, cols;
	bool quiet;	    /* the file has not been written for QUIET_NS */
	bool behind;	    /* the last read stopped short of the file's end, */
	uint64_t size;	    /* which was this */
	uint64_t now;	    /* the trace's time shown */
	/* snapshots */
	pid_t snap_pid;
	char snap_path[PATH_MAX];
	char note[PATH_MAX + 128];
	unsigned nsnap;
} top_t;

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS + (uint64_t)ts.tv_nsec;
}

/* ---- the terminal ------------------------------------------------------------------ */

static struct termios saved_tio;
static int tty_in = -1;
static bool raw_on, screen_on;
static volatile sig_atomic_t quit_sig, resized, continued;
static struct sigaction old_sa[6];
static const int view_sigs[6] = { SIGINT, SIGTERM, SIGHUP, SIGWINCH, SIGTSTP, SIGCONT };
static unsigned nview_sigs;

static void put_str(const char *s)
{
	size_t n = strlen(s);
	while (n) {
		ssize_t w = write(STDOUT_FILENO, s, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

/* Async-signal-safe: termios and write only. */
static void term_restore(void)
{
	if (screen_on) {
		put_str("\x1b[0m\x1b[?25h\x1b[?1049l");
		screen_on = false;
	}
	if (raw_on) {
		tcsetattr(tty_in, TCSAFLUSH, &saved_tio);
		raw_on = false;
	}
}

static int term_enter(void)
{
	if (tcgetattr(tty_in, &saved_tio) < 0)
		return -1;
	struct termios raw = saved_tio;
	raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	raw.c_cc[VMIN] = 0;
	raw.c_cc[VTIME] = 0;
	if (tcsetattr(tty_in, TCSAFLUSH, &raw) < 0)
		return -1;
	raw_on = true;
	put_str("\x1b[?1049h\x1b[?25l\x1b[2J");
	screen_on = true;
	return 0;
}

static void on_signal(int sig)
{
	switch (sig) {
	case SIGWINCH:
		resized = 1;
		break;
	case SIGTSTP: {
		/* give the terminal back, then stop as the default would */
		int e = errno;
		term_restore();
		signal(SIGTSTP, SIG_DFL);
		raise(SIGTSTP);
		errno = e;
		break;
	}
	case SIGCONT:
		continued = 1;
		break;
	default:
		quit_sig = sig;
		break;
	}
}

/* run --live leaves SIGTERM and SIGHUP to heaptrail run, which forwards
 * them to the program. */
static void signals_install(bool all)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	nview_sigs = 0;
	for (unsigned i = 0; i < 6; i++) {
		if (!all && (view_sigs[i] == SIGTERM || view_sigs[i] == SIGHUP))
			continue;
		sigaction(view_sigs[i], &sa, &old_sa[i]);
		nview_sigs |= 1u << i;
	}
}

static void signals_restore(void)
{
	for (unsigned i = 0; i < 6; i++)
		if (nview_sigs & (1u << i))
			sigaction(view_sigs[i], &old_sa[i], NULL);
	nview_sigs = 0;
}

static void window_size(top_t *tp)
{
	struct winsize ws;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col && ws.ws_row) {
		tp->cols = ws.ws_col;
		tp->rows = ws.ws_row;
	} else {
		tp->cols = 80;
		tp->rows = 24;
	}
}

/* ---- the process and its trace -------------------------------------------------------- */

/* 1 running, 0 gone (or a zombie), -1 unknown. */
static int process_state(pid_t pid, bool child)
{
	if (pid <= 0)
		return -1;
	if (child) {
		siginfo_t si;
		memset(&si, 0, sizeof si);
		if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0)
			return si.si_pid == pid ? 0 : 1;
		return 0;
	}
	char p[64], buf[512];
	snprintf(p, sizeof p, "/proc/%ld/stat", (long)pid);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	const char *rp = strrchr(buf, ')');
	return rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X') ? 0 : 1;
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

/* Whether process pid has the agent mapped: 1, 0, or -errno. */
static int has_agent(pid_t pid)
{
	char p[64];
	snprintf(p, sizeof p, "/proc/%ld/maps", (long)pid);
	FILE *f = fopen(p, "re");
	if (!f)
		return -errno;
	char *line = NULL;
	size_t cap = 0;
	int found = 0;
	while (getline(&line, &cap, f) > 0)
		if (strstr(line, "/libheaptrail.so")) {
			found = 1;
			break;
		}
	free(line);
	fclose(f);
	return found;
}

/* When process pid is `heaptrail run` (its comm is heaptrail), its one
 * child with the agent loaded, else 0. */
static long heaptrail_child(pid_t pid)
{
	char p[96], buf[256];
	snprintf(p, sizeof p, "/proc/%ld/comm", (long)pid);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
	if (fd >= 0)
		close(fd);
	if (n <= 0 || strncmp(buf, "heaptrail\n", 10))
		return 0;
	snprintf(p, sizeof p, "/proc/%ld/task/%ld/children", (long)pid, (long)pid);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	long kid = strtol(buf, NULL, 10);
	return kid > 0 && has_agent((pid_t)kid) == 1 ? kid : 0;
}

/* The trace process pid writes: among its open regular files, the one
 * that starts with a trace's header and whose PROCESS record names pid
 * (the first such header when none does yet). Its /proc path goes to
 * path, its name to shown. 0, or -errno (-ENOENT: none). */
static int find_trace_fd(pid_t pid, char *path, size_t plen, char *shown, size_t slen)
{
	char dir[64];
	snprintf(dir, sizeof dir, "/proc/%ld/fd", (long)pid);
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	int best = -1;
	bool best_named = false;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!all_digits(e->d_name))
			continue;
		char link[PATH_MAX], target[PATH_MAX];
		snprintf(link, sizeof link, "%s/%s", dir, e->d_name);
		ssize_t n = readlink(link, target, sizeof target - 1);
		if (n <= 0 || target[0] != '/')
			continue;
		target[n] = '\0';
		int fd = open(link, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0)
			continue;
		struct stat sb;
		char head[HT_FILE_HEADER_LEN];
		bool is_trace = fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) &&
				pread(fd, head, sizeof head, 0) == (ssize_t)sizeof head &&
				!memcmp(head, HT_FILE_MAGIC, HT_FILE_MAGIC_LEN);
		close(fd);
		if (!is_trace)
			continue;
		/* its PROCESS record names the process: a trace it inherited
		 * from its parent before an exec names the parent */
		bool named = false;
		ht_trace_t *t;
		if (ht_reader_follow(link, &t) == 0) {
			bool grew;
			/* the first record only: a poll reads the file, which is
			 * fine once; the view then reads it again from the start */
			if (ht_reader_follow_poll(t, &grew) == 0 && t->have_process)
				named = t->pid == (uint64_t)pid;
			ht_trace_free(t);
		}
		if (best < 0 || (named && !best_named)) {
			best = atoi(e->d_name);
			best_named = named;
			snprintf(path, plen, "%s", link);
			snprintf(shown, slen, "%s", target);
		}
	}
	closedir(d);
	return best < 0 ? -ENOENT : 0;
}

/* The program's name for the screen. */
static const char *program_name(const top_t *tp)
{
	const ht_trace_t *t = tp->t;
	const char *p = t->argc && t->argv[0][0] ? t->argv[0] : t->exe_path ? t->exe_path : "?";
	const char *slash = strrchr(p, '/');
	return slash && slash[1] ? slash + 1 : p;
}

/* ---- reading ------------------------------------------------------------------------- */

static int top_advance(top_t *tp);

/* Reads what the file gained and hands the events up to the limit to the
 * pass. 0, or an error the view cannot go on from (printed). */
static int top_read(top_t *tp)
{
	ht_trace_t *t = tp->t;
	/* a long trace in steps of a poll each, its events handed on
	 * between them (ht_reader_follow_poll); two per refresh, so that
	 * the view shows how far it has got and keys are read meanwhile */
	tp->behind = false;
	for (int k = 0; k < 2; k++) {
		bool grew = false;
		int e = ht_reader_follow_poll(t, &grew);
		if (e) {
			fprintf(stderr, "heaptrail top: cannot read %s: %s\n", HT_TEXT(tp->shown),
				strerror(-e));
			return e;
		}
		if ((e = top_advance(tp)) || !grew)
			return e;
	}
	struct stat sb;
	tp->behind = stat(tp->path, &sb) == 0 && (uint64_t)sb.st_size > ht_reader_follow_offset(t);
	if (tp->behind)
		tp->size = (uint64_t)sb.st_size;
	return 0;
}

/* Hands the events read up to the limit to the pass. */
static int top_advance(top_t *tp)
{
	ht_trace_t *t = tp->t;
	int e;
	uint64_t now = mono_ns();
	if (!t->have_process)
		return 0;
	if (!tp->following) {
		if ((e = ht_pass_new(t, &tp->pass)) || (e = ht_watch_attach(tp->pass, &tp->w)) ||
		    (e = ht_pass_follow(tp->pass)))
			return e;
		tp->w.rate = (double)t->sample_rate;
		tp->following = true;
	}
	bool done = t->ending != HT_ENDING_CUT_SHORT || t->error;
	/* quiet: not written for QUIET_NS, by its time stamp (a trace read
	 * long after it was cut short is taken whole at once) */
	struct stat sb;
	struct timespec rt;
	clock_gettime(CLOCK_REALTIME, &rt);
	uint64_t rnow = (uint64_t)rt.tv_sec * NS + (uint64_t)rt.tv_nsec;
	tp->quiet = stat(tp->path, &sb) == 0 &&
		    rnow - ((uint64_t)sb.st_mtim.tv_sec * NS + (uint64_t)sb.st_mtim.tv_nsec) >= QUIET_NS;
	uint64_t limit;
	if (done || tp->quiet)
		limit = UINT64_MAX;
	else if (now > t->start_mono_ns + LAG_NS)
		limit = now - t->start_mono_ns - LAG_NS;
	else
		limit = 0;
	if ((e = ht_pass_advance(tp->pass, limit)))
		return e;
	uint64_t shown = limit == UINT64_MAX ? tp->w.last_time : limit;
	if (t->end_time > shown && limit == UINT64_MAX)
		shown = t->end_time;
	tp->now = shown;
	ht_watch_tick(&tp->w, tp->now);
	return 0;
}

/* ---- sites by name --------------------------------------------------------------------- */

static bool is_allocator(const char *fn)
{
	static const char *const names[] = {
		"malloc", "calloc", "realloc", "reallocarray", "free", "posix_memalign",
		"aligned_alloc", "memalign", "valloc", "pvalloc", "strdup", "strndup",
		"__libc_malloc", "__libc_calloc", "__libc_realloc", "__libc_memalign",
		/* heaptrail.h's inline wrappers: the program's allocator called them */
		"heaptrail_alloc", "heaptrail_realloc", "heaptrail_pool_alloc",
		"operator new(unsigned long)", "operator new[](unsigned long)",
		"operator new(unsigned long, std::align_val_t)",
		"operator new[](unsigned long, std::align_val_t)",
		"operator new(unsigned long, std::nothrow_t const&)",
		"operator new[](unsigned long, std::nothrow_t const&)",
	};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (!strcmp(fn, names[i]))
			return true;
	return false;
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

/* The name a stack's site is shown by: its first frame outside the
 * allocator and the agent, as "function (file:line)". Malloc'd. */
static char *site_name(top_t *tp, uint64_t stack_id)
{
	const ht_trace_t *t = tp->t;
	const ht_stack_t *st = ht_trace_stack(t, stack_id);
	char buf[1024];
	if (!st || !st->depth)
		return strdup("(no stack)");
	if (!tp->sym)
		tp->sym = ht_symbolizer_new();
	for (; tp->sym && tp->sym_modules < t->nmodules; tp->sym_modules++) {
		const ht_module_t *m = &t->modules[tp->sym_modules];
		const char *path = m->path[0] ? m->path : t->exe_path && t->exe_path[0] ? t->exe_path : NULL;
		if (path)
			ht_symbolizer_add_module(tp->sym, tp->sym_modules, path, m->build_id,
						 m->build_id_len, m->bias, m->segs, m->nsegs);
	}
	ht_frame_t first = { 0 };
	bool have_first = false;
	for (uint32_t i = 0; i < st->depth; i++) {
		uint64_t ip = t->ips[st->first + i];
		long mi = ht_trace_module_for(t, ip, t->last_time);
		ht_frame_t fr[16];
		size_t n = 1;
		if (tp->sym)
			n = ht_symbolize(tp->sym, mi < 0 ? UINT64_MAX : (uint64_t)mi, ip, fr, 16);
		else
			fr[0] = (ht_frame_t){ .module = mi < 0 ? NULL : t->modules[mi].path, .address = ip };
		for (size_t k = 0; k < n; k++) {
			if (!have_first) {
				first = fr[k];
				have_first = true;
			}
			if ((fr[k].function && is_allocator(fr[k].function)) ||
			    (fr[k].module && strstr(base_name(fr[k].module), "libheaptrail")))
				continue;
			first = fr[k];
			goto found;
		}
	}
found:
	if (first.function && first.file && first.line)
		snprintf(buf, sizeof buf, "%s (%s:%d)", first.function, base_name(first.file), first.line);
	else if (first.function && first.module)
		snprintf(buf, sizeof buf, "%s (%s)", first.function, base_name(first.module));
	else if (first.function)
		snprintf(buf, sizeof buf, "%s", first.function);
	else if (first.module && first.module[0])
		snprintf(buf, sizeof buf, "0x%" PRIx64 " (%s)", first.address, base_name(first.module));
	else
		snprintf(buf, sizeof buf, "0x%" PRIx64, first.address);
	return strdup(buf);
}

static uint64_t str_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* Names the pass's sites not named yet, and sums the groups. */
static int group_sites(top_t *tp)
{
	ht_watch_t *w = &tp->w;
	if (w->nsites > tp->nsite_group) {
		if (ht_util_grow((void **)&tp->site_group, &tp->cap_site_group, w->nsites,
				 sizeof(*tp->site_group)))
			return -ENOMEM;
		for (size_t i = tp->nsite_group; i < w->nsites; i++) {
			char *name = site_name(tp, ht_pass_site_stack(tp->pass, (uint32_t)i));
			if (!name)
				return -ENOMEM;
			uint64_t h = str_hash(name);
			uint32_t g;
			while ((g = ht_map_get(&tp->group_by_hash, h)) != HT_MAP_NONE &&
			       strcmp(tp->groups[g].name, name))
				h++;
			if (g == HT_MAP_NONE) {
				if (ht_util_grow((void **)&tp->groups, &tp->cap_groups, tp->ngroups + 1,
						 sizeof(*tp->groups)) ||
				    ht_map_put(&tp->group_by_hash, h, (uint32_t)tp->ngroups)) {
					free(name);
					return -ENOMEM;
				}
				g = (uint32_t)tp->ngroups++;
				tp->groups[g] = (group_t){ name, 0, 0, 0, 0, 0 };
			} else {
				free(name);
			}
			tp->site_group[i] = g;
		}
		tp->nsite_group = w->nsites;
		free(tp->order);
		if (!(tp->order = malloc(tp->ngroups * sizeof(*tp->order))))
			return -ENOMEM;
	}
	for (size_t g = 0; g < tp->ngroups; g++) {
		group_t *gr = &tp->groups[g];
		gr->live = gr->blocks = gr->allocs = 0;
		gr->rate = 0;
		gr->growth = 0;
	}
	for (size_t i = 0; i < w->nsites; i++) {
		group_t *gr = &tp->groups[tp->site_group[i]];
		const ht_watch_site_t *s = &w->sites[i];
		gr->live += s->live_bytes;
		gr->blocks += s->live_blocks;
		gr->allocs += s->allocs;
		gr->rate += ht_watch_site_rate(w, i, RATE_SECONDS);
		gr->growth += ht_watch_site_growth(w, i, GROWTH_SECONDS);
	}
	return 0;
}

static int sort_by;
static const group_t *sort_groups;

static int group_cmp(const void *a, const void *b)
{
	const group_t *x = &sort_groups[*(const uint32_t *)a], *y = &sort_groups[*(const uint32_t *)b];
	int c = 0;
	switch (sort_by) {
	case HT_TOP_RATE:
		c = (x->rate < y->rate) - (x->rate > y->rate);
		break;
	case HT_TOP_GROWTH:
		c = (x->growth < y->growth) - (x->growth > y->growth);
		break;
	}
	if (!c)
		c = (x->live < y->live) - (x->live > y->live);
	if (!c)
		c = (x->allocs < y->allocs) - (x->allocs > y->allocs);
	if (!c)
		c = strcmp(x->name, y->name);
	return c;
}

/* ---- the frame ------------------------------------------------------------------------ */

typedef struct frame {
	FILE *out;
	int cols;
	bool ansi;
	char line[4096];
	size_t len;
	int nlines, maxlines; /* lines written, and at most (0: any) */
} frame_t;

static void fl(frame_t *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Appends to the current line. */
static void fl(frame_t *f, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(f->line + f->len, sizeof f->line - f->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		f->len += (size_t)n < sizeof f->line - f->len ? (size_t)n : sizeof f->line - 1 - f->len;
}

/* Ends the line: cut to the width (escape sequences take no column, a
 * UTF-8 character one), erased to its end on the terminal. */
static void fend(frame_t *f)
{
	if (f->maxlines && f->nlines >= f->maxlines) {
		f->len = 0; /* a screen too small: no line may scroll it */
		return;
	}
	f->nlines++;
	int col = 0;
	const char *s = f->line;
	size_t i = 0;
	while (i < f->len) {
		unsigned char c = (unsigned char)s[i];
		if (c == 0x1b) { /* ours only: names are escaped */
			size_t j = i + 1;
			while (j < f->len && !isalpha((unsigned char)s[j]))
				j++;
			fwrite(s + i, 1, j + 1 - i, f->out);
			i = j + 1;
			continue;
		}
		size_t n = 1;
		if (c >= 0xc0)
			while (i + n < f->len && ((unsigned char)s[i + n] & 0xc0) == 0x80)
				n++;
		if (col >= f->cols) {
			i += n;
			continue;
		}
		fwrite(s + i, 1, n, f->out);
		col++;
		i += n;
	}
	if (f->ansi)
		fputs("\x1b[0m\x1b[K", f->out);
	fputc(f->ansi ? '\r' : '\n', f->out);
	if (f->ansi)
		fputc('\n', f->out);
	f->len = 0;
}

/* The last line: cut like the others, and nothing after it (a newline
 * there would scroll the screen). */
static void fend_last(frame_t *f)
{
	FILE *o = f->out;
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	if (!m)
		return;
	f->out = m;
	fend(f);
	fclose(m);
	f->out = o;
	if (len && buf[len - 1] == '\n')
		len--;
	fwrite(buf, 1, len, o);
	fputs("\x1b[0m\x1b[K", o);
	free(buf);
}

static const char *sgr(const top_t *tp, const char *code)
{
	return tp->color ? code : "";
}

static void fmt_signed_size(char *buf, int64_t v)
{
	char s[HT_FMT_LEN];
	uint64_t a = v < 0 ? (uint64_t)(-(v + 1)) + 1 : (uint64_t)v;
	snprintf(buf, HT_FMT_LEN, "%s%s", v > 0 ? "+" : v < 0 ? "-" : "", ht_fmt_size(s, a));
}

static void fmt_rate(char *buf, double r)
{
	char s[HT_FMT_LEN];
	if (r >= 100 || r == 0)
		ht_fmt_count(s, ht_round_u64(r));
	else
		snprintf(s, sizeof s, "%.1f", r);
	snprintf(buf, HT_FMT_LEN, "%s", s);
}

/* The heap over the last seconds, rows high: one column per `per`
 * seconds, the most heap in use in them. */
static void chart(top_t *tp, frame_t *f, int width)
{
	const ht_watch_t *w = &tp->w;
	uint64_t have = w->started ? w->sec - w->sec0 + 1 : 0;
	if (have > HT_WATCH_HISTORY)
		have = HT_WATCH_HISTORY;
	if (width < 10)
		width = 10;
	uint64_t per = have > (uint64_t)width ? (have + (uint64_t)width - 1) / (uint64_t)width : 1;
	int ncols = (int)((have + per - 1) / per);
	uint64_t vals[HT_WATCH_HISTORY], top = 0;
	for (int c = 0; c < ncols; c++) {
		uint64_t v = 0;
		/* column c covers seconds [end - (ncols - c) * per, + per) */
		for (uint64_t k = 0; k < per; k++) {
			uint64_t back = (uint64_t)(ncols - 1 - c) * per + k;
			if (back >= have)
				continue;
			uint64_t x = w->hist_max[(w->sec - back) % HT_WATCH_HISTORY];
			if (x > v)
				v = x;
		}
		vals[c] = v;
		if (v > top)
			top = v;
	}
	char span[HT_FMT_LEN], tops[HT_FMT_LEN];
	if (have < 60)
		snprintf(span, sizeof span, "%" PRIu64 " s", have);
	else if (have % 60)
		snprintf(span, sizeof span, "%" PRIu64 " min %" PRIu64 " s", have / 60, have % 60);
	else
		snprintf(span, sizeof span, "%" PRIu64 " min", have / 60);
	fl(f, "heap in use, the last %s (%s per column; top %s)", span,
	   per == 1 ? "1 s" : (snprintf(tops, sizeof tops, "%" PRIu64 " s", per), tops),
	   ht_fmt_size((char[HT_FMT_LEN]){ 0 }, top));
	fend(f);
	static const char *const blocks[9] = { " ", "\u2581", "\u2582", "\u2583", "\u2584",
					      "\u2585", "\u2586", "\u2587", "\u2588" };
	static const char ascii[9] = { ' ', '.', '.', '_', '_', '=', '=', '#', '#' };
	for (int r = CHART_ROWS - 1; r >= 0; r--) {
		fl(f, "%s", sgr(tp, "\x1b[36m"));
		for (int c = 0; c < ncols; c++) {
			uint64_t level = top ? (vals[c] * CHART_ROWS * 8 + top - 1) / top : 0;
			int part = level >= (uint64_t)(r + 1) * 8 ? 8
				   : level > (uint64_t)r * 8 ? (int)(level - (uint64_t)r * 8)
							      : 0;
			if (tp->utf8)
				fl(f, "%s", blocks[part]);
			else
				fl(f, "%c", ascii[part]);
		}
		fend(f);
	}
}

static const char *const sort_names[HT_TOP_NSORTS] = { "live bytes", "allocation rate", "growth" };

static void status_text(const top_t *tp, char *buf, size_t len)
{
	const ht_trace_t *t = tp->t;
	if (tp->behind) {
		char a[HT_FMT_LEN], b[HT_FMT_LEN];
		snprintf(buf, len, "reading the trace: %s of %s", ht_fmt_size(a, ht_reader_follow_offset(t)),
			 ht_fmt_size(b, tp->size));
		return;
	}
	switch (t->ending) {
	case HT_ENDING_EXIT:
	case HT_ENDING_UNDERSCORE_EXIT:
		snprintf(buf, len, "exited with status %" PRIu64, t->end_status);
		return;
	case HT_ENDING_SIGNAL:
		snprintf(buf, len, "killed by signal %" PRIu64, t->end_status);
		return;
	case HT_ENDING_DETACH:
		snprintf(buf, len, "recording stopped");
		return;
	case HT_ENDING_EXEC:
		snprintf(buf, len, "exec'd %s", HT_TEXT(t->exec_path));
		return;
	default:
		break;
	}
	if (t->error) {
		snprintf(buf, len, "damaged: %s", HT_TEXT(t->message));
		return;
	}
	int st = process_state(tp->pid, tp->child);
	if (st == 1 || (st < 0 && !tp->quiet))
		snprintf(buf, len, "running");
	else if (st == 0)
		snprintf(buf, len, "ended without an END record (killed, or cut short)");
	else
		snprintf(buf, len, "no news (the trace is not growing)");
}

static int draw(top_t *tp, FILE *out, bool ansi)
{
	frame_t f = { out, ansi ? tp->cols : TEXT_COLS, ansi, "", 0, 0, ansi ? tp->rows - 2 : 0 };
	const ht_trace_t *t = tp->t;
	const ht_watch_t *w = &tp->w;
	char a[HT_FMT_LEN], b[HT_FMT_LEN], c[HT_FMT_LEN], d[HT_FMT_LEN], st[600];
	if (ansi)
		fputs("\x1b[H", out);
	if (!t->have_process) {
		fl(&f, "%sheaptrail top%s  %s: waiting for the trace's first record", sgr(tp, "\x1b[1m"),
		   sgr(tp, "\x1b[0m"), HT_TEXT(tp->shown));
		fend(&f);
		if (t->error) {
			fl(&f, "%s", HT_TEXT(t->message));
			fend(&f);
		}
		if (ansi)
			fputs("\x1b[J", out);
		return 0;
	}
	if (group_sites(tp))
		return -ENOMEM;
	status_text(tp, st, sizeof st);
	fl(&f, "%sheaptrail top%s  %s (pid %" PRIu64 ")  %s%s%s  at %s%s", sgr(tp, "\x1b[1m"),
	   sgr(tp, "\x1b[0m"), HT_TEXT(program_name(tp)), t->pid, sgr(tp, "\x1b[1m"), st,
	   sgr(tp, "\x1b[0m"), ht_fmt_duration(a, tp->now),
	   tp->paused ? (tp->color ? "  \x1b[7m PAUSED \x1b[0m" : "  [PAUSED]") : "");
	fend(&f);
	fl(&f, "trace %s", HT_TEXT(tp->shown));
	if (tp->output)
		fl(&f, "   program output: %s", HT_TEXT(tp->output));
	fend(&f);
	fl(&f, "heap in use %s%10s%s  %s B in %s %s", sgr(tp, "\x1b[1m"), ht_fmt_size(a, w->heap),
	   sgr(tp, "\x1b[0m"), ht_fmt_count(b, w->heap), ht_fmt_count(c, w->blocks),
	   ht_blocks_word(w->blocks));
	fend(&f);
	fl(&f, "peak heap   %10s  %s B at %s", ht_fmt_size(a, w->peak), ht_fmt_count(b, w->peak),
	   ht_fmt_duration(c, w->peak_time));
	fend(&f);
	fmt_rate(d, ht_watch_rate(w, RATE_SECONDS));
	/* a sampled trace: estimates, until the END's exact counts (as a
	 * report shows them) */
	bool exact = t->sample_rate && t->have_end_counts;
	const char *est = t->sample_rate && !exact ? "~" : "";
	fl(&f, "allocations %9s%1s  %s/s over the last %ds   frees %s%s   allocated %s%s",
	   ht_fmt_count(a, exact ? t->end_allocs : w->allocs), est, d, RATE_SECONDS, est,
	   ht_fmt_count(b, exact ? t->end_frees : w->frees), est,
	   ht_fmt_size(c, exact ? t->end_bytes : w->bytes));
	fend(&f);
	if (t->sample_rate) {
		fl(&f, "sampled: one allocation per %s allocated on average; heap and sites are "
		       "estimates", ht_fmt_size(a, t->sample_rate));
		fend(&f);
	}
	fend(&f);
	chart(tp, &f, f.cols - 1);
	fend(&f);
	int used = 5 + 2 + CHART_ROWS + 2 + (t->sample_rate ? 1 : 0);
	size_t room = tp->nsites ? tp->nsites
		      : ansi ? (tp->rows - used - 3 > 1 ? (size_t)(tp->rows - used - 3) : 1)
			     : 10;
	for (size_t g = 0; g < tp->ngroups; g++)
		tp->order[g] = (uint32_t)g;
	sort_by = tp->sort;
	sort_groups = tp->groups;
	if (tp->ngroups)
		qsort(tp->order, tp->ngroups, sizeof(*tp->order), group_cmp);
	fl(&f, "sites by %s (%zu sites)", sort_names[tp->sort], tp->ngroups);
	fend(&f);
	const char *on = sgr(tp, "\x1b[1;4m"), *off = sgr(tp, "\x1b[0m");
	char growth_h[32];
	snprintf(growth_h, sizeof growth_h, "GROWTH/%ds", GROWTH_SECONDS);
	fl(&f, "%s%11s%s %9s %s%10s%s %s%11s%s  SITE", tp->sort == HT_TOP_LIVE ? on : "", "LIVE",
	   tp->sort == HT_TOP_LIVE ? off : "", "BLOCKS", tp->sort == HT_TOP_RATE ? on : "", "ALLOCS/S",
	   tp->sort == HT_TOP_RATE ? off : "", tp->sort == HT_TOP_GROWTH ? on : "", growth_h,
	   tp->sort == HT_TOP_GROWTH ? off : "");
	if (!ansi || !tp->color)
		fl(&f, "   (sorted: %s)", tp->sort == HT_TOP_LIVE ? "LIVE" : tp->sort == HT_TOP_RATE ? "ALLOCS/S" : "GROWTH");
	fend(&f);
	for (size_t k = 0; k < room && k < tp->ngroups; k++) {
		const group_t *g = &tp->groups[tp->order[k]];
		char gr[HT_FMT_LEN], name[512];
		fmt_signed_size(gr, g->growth);
		fmt_rate(d, g->rate);
		fl(&f, "%11s %9s %10s %11s  %s", ht_fmt_size(a, g->live), ht_fmt_count(b, g->blocks), d, gr,
		   ht_text_safe(name, sizeof name, g->name));
		fend(&f);
	}
	if (ansi) {
		fputs("\x1b[J", out);
		/* the note above the keys, the keys on the last line */
		f.maxlines = 0;
		if (tp->note[0]) {
			fprintf(out, "\x1b[%d;1H", tp->rows - 1);
			fl(&f, "%s", tp->note);
			fend(&f);
		}
		fprintf(out, "\x1b[%d;1H", tp->rows);
		fl(&f, "%s l%s live  %s r%s rate  %s g%s growth  %s p%s %s  %s s%s snapshot  %s q%s quit",
		   sgr(tp, "\x1b[7m"), off, sgr(tp, "\x1b[7m"), off, sgr(tp, "\x1b[7m"), off,
		   sgr(tp, "\x1b[7m"), off, tp->paused ? "resume" : "pause", sgr(tp, "\x1b[7m"), off,
		   sgr(tp, "\x1b[7m"), off);
		f.ansi = false; /* no newline after the last line */
		f.out = out;
		fend_last(&f);
	} else if (tp->note[0]) {
		fl(&f, "%s", tp->note);
		fend(&f);
	}
	return 0;
}

/* ---- snapshots ------------------------------------------------------------------------ */

/* `s`: a text report of the trace as far as it has been read, written by
 * `heaptrail report` in a child, from a copy of those bytes (the file
 * goes on growing). */
static void snapshot(top_t *tp)
{
	if (tp->snap_pid > 0) {
		snprintf(tp->note, sizeof tp->note, "a snapshot is still being written to %s",
			 HT_TEXT(tp->snap_path));
		return;
	}
	uint64_t n = ht_reader_follow_offset(tp->t);
	int src = open(tp->path, O_RDONLY | O_CLOEXEC);
	int mfd = memfd_create("heaptrail-snapshot", 0);
	int out = -1;
	char name[PATH_MAX];
	for (unsigned k = ++tp->nsnap; mfd >= 0 && src >= 0 && k < tp->nsnap + 1000; k++) {
		snprintf(name, sizeof name, "heaptrail-top.%" PRIu64 ".%u.txt", tp->t->pid, k);
		out = open(name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (out >= 0 || errno != EEXIST) {
			tp->nsnap = k;
			break;
		}
	}
	int e = src < 0 || mfd < 0 || out < 0 ? errno : 0;
	if (!e) {
		/* what the report below is of: the memfd's name means nothing */
		char head[PATH_MAX + 256], at[HT_FMT_LEN];
		int hn = snprintf(head, sizeof head,
				  "heaptrail top: snapshot of %s, its first %" PRIu64 " bytes (read up to "
				  "%s of the run; the last events in them may be cut short)\n\n",
				  HT_TEXT(tp->shown), n, ht_fmt_duration(at, tp->now));
		if (hn > 0 && write(out, head, (size_t)hn) != hn)
			e = errno ? errno : EIO;
	}
	uint8_t buf[1 << 16];
	for (uint64_t at = 0; !e && at < n;) {
		ssize_t r = pread(src, buf, n - at < sizeof buf ? (size_t)(n - at) : sizeof buf, (off_t)at);
		if (r <= 0 || write(mfd, buf, (size_t)r) != r)
			e = r < 0 ? errno : EIO;
		at += r > 0 ? (uint64_t)r : 0;
	}
	pid_t pid = -1;
	if (!e) {
		pid = fork();
		if (pid == 0) {
			char trace[64];
			snprintf(trace, sizeof trace, "/proc/self/fd/%d", mfd);
			int dn = open("/dev/null", O_RDWR);
			dup2(out, STDOUT_FILENO);
			if (dn >= 0) {
				dup2(dn, STDIN_FILENO);
				dup2(dn, STDERR_FILENO);
			}
			signal(SIGINT, SIG_IGN); /* a Ctrl-C in the view is not for it */
			execl("/proc/self/exe", "heaptrail", "report", trace, (char *)NULL);
			_exit(127);
		}
		if (pid < 0)
			e = errno;
	}
	if (e) {
		snprintf(tp->note, sizeof tp->note, "cannot write a snapshot%s%s: %s",
			 out >= 0 ? " to " : "", out >= 0 ? HT_TEXT(name) : "", strerror(e));
		if (out >= 0)
			unlink(name);
	} else {
		tp->snap_pid = pid;
		snprintf(tp->snap_path, sizeof tp->snap_path, "%s", name);
		snprintf(tp->note, sizeof tp->note, "writing a snapshot to %s ...", HT_TEXT(name));
	}
	if (src >= 0)
		close(src);
	if (mfd >= 0)
		close(mfd);
	if (out >= 0)
		close(out);
}

static void snapshot_reap(top_t *tp, bool wait)
{
	if (tp->snap_pid <= 0)
		return;
	int status;
	pid_t r;
	while ((r = waitpid(tp->snap_pid, &status, wait ? 0 : WNOHANG)) < 0 && errno == EINTR)
		;
	if (r == 0)
		return;
	tp->snap_pid = 0;
	if (r > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0)
		snprintf(tp->note, sizeof tp->note, "snapshot written to %s", HT_TEXT(tp->snap_path));
	else
		snprintf(tp->note, sizeof tp->note, "the snapshot report failed (%s): see %s",
			 r > 0 && WIFEXITED(status) ? "exit status" : "killed", HT_TEXT(tp->snap_path));
}

/* ---- the loops -------------------------------------------------------------------------- */

static void top_free(top_t *tp)
{
	snapshot_reap(tp, true);
	ht_pass_free(tp->pass); /* its consumer's fini is none: the watch is ours */
	ht_watch_free(&tp->w);
	ht_trace_free(tp->t);
	ht_symbolizer_free(tp->sym);
	for (size_t g = 0; g < tp->ngroups; g++)
		free(tp->groups[g].name);
	free(tp->groups);
	free(tp->site_group);
	free(tp->order);
	ht_map_free(&tp->group_by_hash);
}

static void handle_key(top_t *tp, unsigned char c, bool *quit)
{
	switch (c) {
	case 'q':
	case 'Q':
		*quit = true;
		break;
	case 'l':
	case 'L':
		tp->sort = HT_TOP_LIVE;
		break;
	case 'r':
	case 'R':
		tp->sort = HT_TOP_RATE;
		break;
	case 'g':
	case 'G':
		tp->sort = HT_TOP_GROWTH;
		break;
	case '\t':
		tp->sort = (tp->sort + 1) % HT_TOP_NSORTS;
		break;
	case 'p':
	case 'P':
		tp->paused = !tp->paused;
		break;
	case 's':
	case 'S':
		snapshot(tp);
		break;
	case 0x0c: /* Ctrl-L */
		resized = 1;
		break;
	default:
		break;
	}
}

/* The terminal view until q or a signal. 0, or 1 on an error. */
static int view(top_t *tp, bool own_signals)
{
	tty_in = isatty(STDIN_FILENO) ? STDIN_FILENO : open("/dev/tty", O_RDWR | O_CLOEXEC);
	if (tty_in < 0 || term_enter() < 0) {
		fprintf(stderr, "heaptrail top: cannot set up the terminal: %s\n", strerror(errno));
		return 1;
	}
	atexit(term_restore);
	quit_sig = resized = continued = 0;
	signals_install(own_signals);
	window_size(tp);
	char *fbuf = NULL;
	size_t flen = 0;
	int ret = 0;
	bool quit = false, dirty = false;
	uint64_t next = 0;
	while (!quit && !quit_sig) {
		uint64_t now = mono_ns();
		if (continued) {
			continued = 0;
			struct sigaction sa;
			memset(&sa, 0, sizeof sa);
			sa.sa_handler = on_signal;
			sigemptyset(&sa.sa_mask);
			sigaction(SIGTSTP, &sa, NULL);
			if (!raw_on && term_enter() < 0)
				break;
			resized = 1;
		}
		bool redraw = dirty; /* a key's change, shown at once */
		dirty = false;
		if (resized) {
			resized = 0;
			window_size(tp);
			put_str("\x1b[2J");
			redraw = true;
		}
		if (now >= next) {
			if (!tp->paused && top_read(tp)) {
				ret = 1;
				break;
			}
			snapshot_reap(tp, false);
			/* behind the file: on at once (keys are read between) */
			next = tp->behind && !tp->paused ? now : now + (uint64_t)tp->interval_ms * 1000000u;
			redraw = true;
		}
		if (redraw) {
			free(fbuf); /* open_memstream makes a new one */
			fbuf = NULL;
			FILE *m = open_memstream(&fbuf, &flen);
			if (!m || draw(tp, m, true)) {
				if (m)
					fclose(m);
				ret = 1;
				break;
			}
			fclose(m);
			if (raw_on)
				put_str(fbuf);
		}
		uint64_t wait = next > mono_ns() ? (next - mono_ns()) / 1000000u : 0;
		struct pollfd pfd = { tty_in, POLLIN, 0 };
		int pr = poll(&pfd, 1, wait > 1000 ? 1000 : (int)wait + 1);
		if (pr > 0 && (pfd.revents & POLLIN)) {
			unsigned char keys[64];
			ssize_t n = read(tty_in, keys, sizeof keys);
			bool before_paused = tp->paused;
			for (ssize_t i = 0; i < n && !quit; i++) {
				if (keys[i] == 0x1b) /* an escape sequence (arrows): skipped */
					break;
				handle_key(tp, keys[i], &quit);
			}
			if (before_paused && !tp->paused)
				next = 0;
			dirty = !quit;
		} else if (pr > 0 && (pfd.revents & (POLLHUP | POLLERR))) {
			break; /* the terminal went away */
		}
	}
	free(fbuf);
	term_restore();
	signals_restore();
	if (tty_in != STDIN_FILENO)
		close(tty_in);
	return ret;
}

/* --once and --batch: frames as text. */
static int batch(top_t *tp, unsigned frames)
{
	for (unsigned i = 0; i < frames; i++) {
		if (i)
			usleep(tp->interval_ms * 1000u);
		do
			if (top_read(tp))
				return 1;
		while (tp->behind);
		if (i)
			putchar('\n');
		if (draw(tp, stdout, false))
			return 1;
		fflush(stdout);
	}
	if (tp->t->error && !tp->t->have_process) {
		fprintf(stderr, "heaptrail top: %s: %s\n", HT_TEXT(tp->shown), tp->t->message);
		return 1;
	}
	return 0;
}

static void top_init(top_t *tp)
{
	memset(tp, 0, sizeof *tp);
	setlocale(LC_CTYPE, "");
	const char *cs = nl_langinfo(CODESET);
	tp->utf8 = cs && !strcmp(cs, "UTF-8");
	const char *nc = getenv("NO_COLOR"), *term = getenv("TERM");
	tp->color = !(nc && *nc) && !(term && !strcmp(term, "dumb"));
	tp->interval_ms = 1000;
}

/* Frames as text: no colours. */
static void text_mode(top_t *tp)
{
	tp->color = false;
}

int ht_top(const ht_top_opts_t *o)
{
	top_t tp;
	top_init(&tp);
	tp.sort = o->sort;
	tp.nsites = o->nsites;
	if (o->interval_ms)
		tp.interval_ms = o->interval_ms;
	bool text = o->once || o->batch;
	if (!text && (!isatty(STDOUT_FILENO) || (!isatty(STDIN_FILENO) && access("/dev/tty", R_OK)))) {
		fprintf(stderr, "heaptrail top: standard output is not a terminal: use --once or "
				"--batch N for frames as text\n");
		return 2;
	}
	const char *target = o->target;
	char path[PATH_MAX];
	struct stat sb;
	if (all_digits(target) && stat(target, &sb) < 0) {
		long pid = strtol(target, NULL, 10);
		int a = pid > 0 && pid <= INT_MAX ? has_agent((pid_t)pid) : -ESRCH;
		if (a == -ENOENT || a == -ESRCH) {
			fprintf(stderr, "heaptrail top: no process %s (and no file of that name)\n", target);
			return 1;
		}
		if (a < 0) {
			fprintf(stderr, "heaptrail top: cannot look into process %ld: %s (run heaptrail top "
					"as the user the process runs as)\n", pid, strerror(-a));
			return 1;
		}
		if (!a) {
			long kid = heaptrail_child((pid_t)pid);
			if (kid > 0)
				fprintf(stderr, "heaptrail top: process %ld is heaptrail itself: the program "
						"it runs is process %ld (heaptrail top %ld)\n", pid, kid, kid);
			else
				fprintf(stderr, "heaptrail top: process %ld does not have the heaptrail agent "
						"loaded: start it with `heaptrail run`, or attach to it with "
						"`heaptrail attach %ld`\n", pid, pid);
			return 1;
		}
		int e = find_trace_fd((pid_t)pid, path, sizeof path, tp.shown, sizeof tp.shown);
		if (e == -ENOENT) {
			fprintf(stderr, "heaptrail top: process %ld has the agent loaded but no trace "
					"open (recording has not started, or has finished)\n", pid);
			return 1;
		}
		if (e) {
			fprintf(stderr, "heaptrail top: cannot look at the files of process %ld: %s\n",
				pid, strerror(-e));
			return 1;
		}
		tp.pid = (pid_t)pid;
		tp.path = path;
	} else {
		tp.path = target;
		snprintf(tp.shown, sizeof tp.shown, "%s", target);
	}
	int e = ht_reader_follow(tp.path, &tp.t);
	if (e) {
		fprintf(stderr, "heaptrail top: %s: %s\n", HT_TEXT(tp.shown),
			e == -HT_ENOTREG ? "not a regular file" : strerror(-e));
		return 1;
	}
	/* a file that is not a trace is said at once, not waited for */
	if ((e = top_read(&tp))) {
		top_free(&tp);
		return 1;
	}
	if (tp.t->error && !tp.t->have_process &&
	    (tp.t->error == -HT_EMAGIC || tp.t->error == -HT_EVERSION || tp.t->error == -HT_ECORRUPT)) {
		fprintf(stderr, "heaptrail top: %s: %s\n", HT_TEXT(tp.shown), tp.t->message);
		top_free(&tp);
		return 1;
	}
	if (tp.t->have_process && (tp.t->proc_flags & HT_PROC_SUMMARY)) {
		fprintf(stderr, "heaptrail top: %s is a summary-mode trace (--summary): it holds no "
				"events to watch; its figures come at the end (heaptrail report)\n",
			HT_TEXT(tp.shown));
		top_free(&tp);
		return 1;
	}
	/* what the program does comes first: on a busy machine the view
	 * waits, not the program (top only reads its trace) */
	errno = 0;
	int nv = nice(10);
	(void)nv; /* not lowered (-1 and errno): it still only reads */
	int ret;
	if (text) {
		text_mode(&tp);
		ret = batch(&tp, o->once ? 1 : o->batch);
	} else {
		ret = view(&tp, true);
		if (!ret && tp.pid && process_state(tp.pid, false) == 1)
			fprintf(stderr, "heaptrail top: left the view; process %ld runs on\n", (long)tp.pid);
	}
	if (tp.snap_pid > 0 || tp.nsnap) {
		snapshot_reap(&tp, true);
		if (tp.note[0])
			fprintf(stderr, "heaptrail top: %s\n", tp.note);
	}
	top_free(&tp);
	return ret;
}

int ht_top_live(const char *path, pid_t pid, const char *output)
{
	top_t tp;
	top_init(&tp);
	tp.pid = pid;
	tp.child = true;
	tp.output = output;
	tp.path = path;
	snprintf(tp.shown, sizeof tp.shown, "%s", path);
	if (ht_reader_follow(path, &tp.t)) {
		fprintf(stderr, "heaptrail: cannot read %s for the live view\n", HT_TEXT(path));
		return -1;
	}
	int ret = view(&tp, false);
	if (tp.snap_pid > 0 || tp.nsnap) {
		snapshot_reap(&tp, true);
		if (tp.note[0])
			fprintf(stderr, "heaptrail: %s\n", tp.note);
	}
	top_free(&tp);
	return ret ? -1 : 0;
}
