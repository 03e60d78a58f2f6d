/* main.c - the heaptrail command: option parsing and exit statuses.
 *
 * The only file of the CLI that exits. Statuses:
 *   report: 0 report printed (perhaps partial, with a warning),
 *           1 the trace could not be read at all, 2 usage error;
 *   run:    the program's own status (128+N for signal N), 127 program not
 *           found, 126 not executable, 2 usage error, 1 heaptrail failure;
 *   diff:   as report: 0 the comparison printed, 1 a trace could not be
 *           read at all, 2 usage error; 3 a --fail-if condition holds;
 *   check:  0 no condition holds, 1 a trace could not be read at all (or
 *           the JUnit file not written), 2 usage error, 3 a condition holds
 *           (HT_EXIT_GATE);
 *   attach, detach: 0 the trace is complete, 1 could not attach (the
 *           process untouched) or nothing to detach, 2 usage error.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/run.h"
#include "cli/attach.h"
#include "cli/top.h"
#include "analysis/diff.h"
#include "analysis/leaks.h"
#include "analysis/functions.h"
#include "trace_format.h"
#include "analysis/model.h"
#include "analysis/reader.h"
#include "report/export.h"
#include "report/report.h"
#include "report/badfree_section.h"
#include "report/functions_section.h"
#include "analysis/marks.h"
#include "report/marks_section.h"
#include "report/html.h"
#include "analysis/blocks.h"
#include "analysis/symbolize.h"
#include "report/timeline.h"
#include "analysis/util.h"
#include "cli/gate.h"
#include "cli/opts.h"
#include "cli/compress.h"
#include "cli/runset.h"
#include "analysis/pass.h"
#include "analysis/progress.h"
#include "analysis/resources.h"
#include "analysis/frames.h"

#include <sys/ioctl.h>
#include <unistd.h>

static const char usage_text[] =
	"usage: heaptrail run [-o FILE] [--depth N] [--unwind fp|libunwind] [--no-follow-fork]\n"
	"                     [--functions] [--start-off] [--summary [--summary-sites N]]\n"
	"                     [--sample-rate BYTES [--sample-seed N]]\n"
	"                     [--break-alloc LIST] [--leak-exitcode N [--no-leak-report]]\n"
	"                     [--no-leak-check] [--error-exitcode N] [--free-stacks] [--no-mmap]\n"
	"                     [--gdb]\n"
	"                     [SUPPRESSIONS] [--] PROGRAM [ARGS...]\n"
	"       heaptrail attach PID [-o FILE] [--for DURATION] [--depth N] [--unwind fp|libunwind]\n"
	"                        [--sample-rate BYTES] [--no-leak-check] [--free-stacks]\n"
	"       heaptrail detach PID\n"
	"       heaptrail report [-f text|json] [-n N] [--show-reachable] [--by-address]\n"
	"                        [SUPPRESSIONS] [--functions [--memory]\n"
	"                        [--time-unit ns|us|ms|s]] [--pid N|--program NAME] FILE...\n"
	"       heaptrail leaks [-f text|json] [-n N] [--show-reachable] [--growth]\n"
	"                       [--by-address] [SUPPRESSIONS] [--pid N|--program NAME] FILE...\n"
	"       SUPPRESSIONS: [--suppressions FILE]... [--no-default-suppressions]\n"
	"       heaptrail report --by-tag FILE\n"
	"       heaptrail report --tag NAME [--depth N] [--min-count N] [--top N] FILE\n"
	"       heaptrail convert -f FORMAT [-o OUT] [--cost COST] [--icicle]\n"
	"                         [--by-address] [--pid N|--program NAME] FILE...\n"
	"       heaptrail diff [-f text|json] [-n N] [--match function|line]\n"
	"                      [--by-address] [--program NAME] [--fail-if EXPR]... [--junit FILE]\n"
	"                      BASE NEW\n"
	"       heaptrail check --fail-if EXPR... [--junit FILE] [SUPPRESSIONS]\n"
	"                       [--pid N|--program NAME] FILE\n"
	"       heaptrail top [--once | --batch N] [--sort live|rate|growth] [-n N]\n"
	"                     [--interval SECONDS] PID|FILE\n"
	"       heaptrail COMMAND --help | heaptrail --help | --version\n";

/* The help, one section per command: `heaptrail --help` prints them all,
 * `heaptrail COMMAND --help` its own. Each option is a line of its own,
 * indented by four spaces ("    -f, --format text|json  what it does"):
 * the "did you mean" of a mistyped option and the shell completion
 * (`heaptrail --list-options COMMAND`, completion/) read the options from
 * these lines, so the three cannot drift apart. */
static const char help_head[] =
	"heaptrail - record every heap allocation of a program and report where its memory goes\n"
	"\n";

static const char help_run[] =
	"heaptrail run [options] [--] PROGRAM [ARGS...]\n"
	"  Run PROGRAM with the heaptrail agent preloaded, then print a summary and the\n"
	"  trace file(s) on stderr. Exits with the program's status (128+N for signal N);\n"
	"  2 before the program starts when an option is wrong or -o cannot be created.\n"
	"    -o, --output FILE       trace path (%p: pid, %n: program name)\n"
	"                            default: heaptrail.%n.%p.ht in the current directory\n"
	"    --depth N               frames per stack, 1..1024 (default 64)\n"
	"    --unwind fp|libunwind   stack walker (default libunwind; fp needs frame pointers)\n"
	"    --no-follow-fork        do not trace forked children\n"
	"    --functions             record function entry and exit (programs built with\n"
	"                            -finstrument-functions; docs/FUNCTIONS.md)\n"
	"    --start-off             start with recording switched off: the program switches\n"
	"                            it on with heaptrail_set_recording(1) (heaptrail.h)\n"
	"    --summary               keep per-site totals in the program instead of a trace of\n"
	"                            events: bounded memory, a small file, the top sites and\n"
	"                            FILE.json at the end (no chart, no temporary allocations)\n"
	"    --summary-sites N       rows of the summary's site table (default 4096); sites\n"
	"                            past it are counted in one overflow row\n"
	"    --break-alloc LIST      raise SIGTRAP when allocation N (\"N\" on the main thread,\n"
	"                            \"T.N\" on thread T; several joined by '+') is made and\n"
	"                            when it is freed, for a debugger (the leak report names\n"
	"                            one block of each leak as \"e.g. block N\")\n"
	"    --gdb                   run the program under gdb instead, the agent loaded in\n"
	"                            it alone: each stop of --break-alloc selects the frame\n"
	"                            of the program that called the allocator; processes\n"
	"                            it starts are not stopped. No summary: heaptrail\n"
	"                            becomes gdb (the trace is written as usual)\n"
	"    --leak-exitcode N       exit with N when definite or indirect leaks remain in\n"
	"                            any process that exited (a trace without classes: any\n"
	"                            leak), printing them on stderr\n"
	"    --no-leak-report        with --leak-exitcode: the exit status only, no leak list\n"
	"    --error-exitcode N      exit with N when any traced process made a double, invalid\n"
	"                            or mismatched free (listed on stderr), even when glibc\n"
	"                            aborted the program for it\n"
	"    --free-stacks           record every free's stack too: the report then names where a\n"
	"                            mismatched delete was called and where a block freed twice\n"
	"                            was first freed (costs a stack capture per free)\n"
	"    --no-mmap               do not record the program's own mmap, munmap, mremap,\n"
	"                            madvise, brk and sbrk calls (the report's MAPPED MEMORY)\n"
	"    --no-leak-check         no table of live blocks in the program and no leak scan\n"
	"                            at exit: the agent's memory stays flat, but leaks are\n"
	"                            listed from the trace without classes (definite,\n"
	"                            indirect, reachable). The table costs about 30 bytes\n"
	"                            per live block (5 million blocks: 150 MB); without it\n"
	"                            the agent adds about 3 bytes a block\n"
	"    --sample-rate BYTES     record one allocation per BYTES allocated on average\n"
	"                            (Poisson sampling; 512K, 1M); reports show estimates\n"
	"                            with their 95% interval. 0: every allocation (default)\n"
	"    --sample-seed N         seed the sampling, for reproducible runs\n"
	"    --live                  show the live view (heaptrail top) while the program\n"
	"                            runs; its output goes to heaptrail.NAME.PID.out, its\n"
	"                            input is /dev/null. q leaves the view, not the program\n"
	"\n";

static const char help_top[] =
	"heaptrail top [options] PID|FILE\n"
	"  A live view of a program's heap while it runs: heap in use and its peak,\n"
	"  allocations per second, a chart of the last minutes, and the sites with the\n"
	"  most live bytes, allocations per second or growth, refreshed every second.\n"
	"  PID: a process running under `heaptrail run` or `heaptrail attach` (its\n"
	"  trace is found among its open files); FILE: a trace, read as it grows.\n"
	"  Keys: l r g (or Tab) sort by live bytes, rate, growth; p pause; s write a\n"
	"  text report of what has been read to heaptrail-top.PID.N.txt; q quit (the\n"
	"  program runs on). NO_COLOR=1 turns colours off.\n"
	"    --once                  print one frame as text and exit (for scripts)\n"
	"    --batch N               print N frames as text, one per interval\n"
	"    --sort live|rate|growth\n"
	"                            the first order of the sites (default live)\n"
	"    -n, --top N             sites listed (default: as many as fit; text: 10)\n"
	"    --interval SECONDS      time between refreshes (default 1; 0.1 to 60)\n"
	"\n";

static const char help_attach[] =
	"heaptrail attach PID [options]\n"
	"  Load the agent into the running process PID with ptrace (no debugger) and record\n"
	"  its allocations as heaptrail run does, until --for ends, Ctrl-C, heaptrail detach\n"
	"  PID or the process's end; then the agent lets go and the process runs on. Blocks\n"
	"  allocated before the attach are unknown: their frees are counted apart, not as\n"
	"  errors. x86-64, dynamically linked glibc programs; ptrace must be permitted.\n"
	"  Exits 0 once the trace is complete, 1 when it could not attach (said why; the\n"
	"  process was not touched).\n"
	"    -o, --output FILE       trace path (%p: pid, %n: program name), written by the\n"
	"                            process itself; default: heaptrail.%n.%p.ht here\n"
	"    --for DURATION          detach after DURATION (10, 10s, 500ms, 2m, 1h)\n"
	"    --depth N               frames per stack, 1..1024 (default 64)\n"
	"    --unwind fp|libunwind   stack walker (default libunwind)\n"
	"    --sample-rate BYTES     record one allocation per BYTES allocated on average\n"
	"    --no-leak-check         no table of live blocks in the process\n"
	"    --free-stacks           record every free's stack too\n";

static const char help_detach[] =
	"heaptrail detach PID\n"
	"  Stop the recording that heaptrail attach started in PID: the agent puts the\n"
	"  process's allocation entry points back, finishes the trace and stays idle; the\n"
	"  process is not stopped for it. Exits 0 once the trace is complete.\n";

static const char help_report[] =
	"heaptrail report [options] FILE...\n"
	"  Symbolize a trace and print its summary, top sites, leaks and temporary\n"
	"  allocations. FILE may be a run (the NAME.run file heaptrail run writes\n"
	"  beside its traces, or their directory) or several traces: a table of the\n"
	"  processes, then the top sites of all of them. - reads standard input.\n"
	"    -f, --format text|json|html  output format (default text); html: one\n"
	"                            self-contained interactive page (with -o)\n"
	"    -o, --output FILE       with --format html: the file to write (- for stdout)\n"
	"    -n, --top N             entries per list (text default 10, json: all sites);\n"
	"                            0 means all\n"
	"    --functions             the function profile instead: per-thread call trees with\n"
	"                            calls, total and self time (json: a \"functions\" section\n"
	"                            added to the report)\n"
	"    --memory                with --functions: each function's heap, inclusive and own,\n"
	"                            and the top functions by own bytes and allocations\n"
	"    --time-unit ns|us|ms|s  with --functions: unit of the times (default: picked from\n"
	"                            the longest thread)\n"
	"    --by-tag                allocations, bytes and live blocks per tag (heaptrail_tag)\n"
	"    --tag NAME              the call stacks that allocated blocks tagged NAME, most\n"
	"                            allocations first (docs/API.md)\n"
	"    --depth N               with --tag: cut stacks to N frames, leaf first (default all)\n"
	"    --min-count N           with --tag: only stacks with at least N allocations\n"
	"    --show-reachable        list the still-reachable blocks (else one line)\n"
	"    --by-address            one site per stack of return addresses (default: the\n"
	"                            stacks that symbolize alike are one site)\n"
	"    --pid N                 of a run (FILE...: a run file, a directory, several\n"
	"                            traces): process N alone (default: all of them)\n"
	"    --program NAME          of a run: the process of program NAME alone\n"
	"\n";

static const char help_leaks[] =
	"heaptrail leaks [options] FILE...\n"
	"  The leak section alone: leaks by class (definitely, indirectly, possibly lost,\n"
	"  still reachable), then by stack, largest first, and the on-demand leak checks.\n"
	"    -f, --format text|json  output format (default text)\n"
	"    -n, --top N             stacks per class (default 10; 0 means all)\n"
	"    --show-reachable        list the still-reachable blocks (else one line)\n"
	"    --growth                growth suspects instead: sites whose live bytes keep\n"
	"                            growing over the run, steadiest first\n"
	"    --by-address            one site per stack of return addresses\n"
	"    --pid N                 of a run (FILE...: a run file, a directory, several\n"
	"                            traces): process N alone (default: all of them)\n"
	"    --program NAME          of a run: the process of program NAME alone\n"
	"\n";

static const char help_supp[] =
	"Suppressions (run, report, leaks, check):\n"
	"    --suppressions FILE     LeakSanitizer's format: `leak:PATTERN` lines matched\n"
	"                            against each frame's function, file and module\n"
	"    --no-default-suppressions  do not suppress the built-in one-time allocations\n"
	"                            of libc, ld.so and libstdc++\n"
	"\n";

static const char help_diff[] =
	"heaptrail diff [options] BASE NEW\n"
	"  Compare two traces: the totals side by side with their change, then the sites\n"
	"  whose figures changed most (bytes allocated, allocations, bytes at the peak,\n"
	"  bytes in use at exit), matched across the traces by their symbolized stacks.\n"
	"  Two runs (run files or directories) are compared by program.\n"
	"    -f, --format text|json|html  output format (default text); html: one\n"
	"                            self-contained interactive page (needs -o)\n"
	"    -o, --output FILE       with --format html: the file to write (- for stdout)\n"
	"    -n, --top N             sites per table (text, default 10; 0 means all);\n"
	"                            json lists every site\n"
	"    --match function|line   match stacks by their functions (default: survives\n"
	"                            lines moving between builds) or by function and line\n"
	"    --by-address            one site per stack of return addresses in each trace\n"
	"    --program NAME          of runs: compare the process of program NAME of each\n"
	"    --fail-if EXPR          exit with status 3 when EXPR holds (repeatable; the\n"
	"                            results on stderr): METRIC>+10% or >+1MiB (the change\n"
	"                            from BASE), METRIC>64MiB (NEW's figure); see check\n"
	"    --junit FILE            with --fail-if: the results as JUnit XML, one testcase\n"
	"                            per condition\n"
	"\n";

static const char help_check[] =
	"heaptrail check --fail-if EXPR... [options] FILE\n"
	"  Test a trace against limits, for CI: print each condition with its figure and\n"
	"  exit with status 3 when any holds (0: none holds, 1: the trace could not be\n"
	"  read, 2: usage error). EXPR is [site:FUNC ]METRIC OP VALUE: METRIC a name\n"
	"  of the JSON report's totals (peak_heap_bytes, definite_bytes, allocations,\n"
	"  ...; docs/JSON.md) or with site:FUNC of its sites (bytes_allocated,\n"
	"  peak_bytes, ...), summed over the stacks through function FUNC; OP one of\n"
	"  > >= < <= == !=; VALUE a number, K M G (KiB MiB GiB) for 1024s. A figure\n"
	"  the trace does not record makes its condition fail, saying so.\n"
	"    --fail-if EXPR          a condition (repeatable): peak_heap_bytes>64MiB,\n"
	"                            definite_bytes>0, site:parse bytes_allocated>1MiB\n"
	"    --junit FILE            the results as JUnit XML, one testcase per condition\n"
	"    --pid N                 of a run (a run file or directory): the process to test\n"
	"    --program NAME          of a run: the process of program NAME\n"
	"\n";

static const char help_convert[] =
	"heaptrail convert --format FORMAT [options] FILE\n"
	"  Write the trace in a format other tools read (heaptrail convert --help lists them).\n"
	"    -f, --format FORMAT     the output format (below)\n"
	"    -o OUT                  output file (default: standard output); a name ending\n"
	"                            in .zst or .gz is compressed with zstd or gzip\n"
	"    --cost bytes|allocations|peak|leaked|temporary\n"
	"                            what a stack weighs (folded, flamegraph; leaked:\n"
	"                            the bytes in use at exit)\n"
	"    --icicle                flamegraph with the root at the top\n"
	"    --by-address            one site per stack of return addresses\n"
	"    --pid N                 of a run: the process to convert (folded takes every\n"
	"                            process, each stack under a root frame naming it)\n"
	"    --program NAME          of a run: the process of program NAME\n"
	"\n";

static const char help_view[] =
	"Stacks and text (report, leaks, diff, check, convert):\n"
	"    --width N               fit text to N columns (default: the terminal's; a file\n"
	"                            or a pipe: no limit); long names wrap, never cut\n"
	"    --full-names            C++ names as demangled (default shortened: std::string,\n"
	"                            template arguments as <>)\n"
	"    --fold-frames REGEX     fold frames whose function matches REGEX (extended,\n"
	"                            repeatable), as the built-in allocation wrappers are\n"
	"    --no-fold               every frame: no allocator plumbing or wrapper folded\n"
	"    --debug-dir DIR         look for separate debug files in DIR first (by build-id:\n"
	"                            DIR/.build-id/xx/rest.debug; repeatable)\n"
	"    --color auto|always|never  colour the text (default auto: on a terminal,\n"
	"                            unless NO_COLOR is set)\n"
	"\n";

static const char help_env[] =
	"Sizes take K, M, G (or KiB, MiB, GiB): 1024, 1024^2, 1024^3.\n"
	"Environment: HEAPTRAIL_AGENT overrides the path of libheaptrail.so;\n"
	"HEAPTRAIL_READER_RESIDENT_MB caps the decoded events a report keeps in memory\n"
	"(default: a sixteenth of the machine's memory, 256 to 1024): past it, each pass\n"
	"decodes the rest again (slower, but a report's memory no longer grows with the\n"
	"trace).\n";

/* A command's help sections, in the order the whole help prints them. */
static const struct {
	const char *cmd;
	const char *const *sections; /* NULL-terminated */
} help_of[] = {
	{ "run", (const char *const[]){ help_run, help_supp, help_env, NULL } },
	{ "attach", (const char *const[]){ help_attach, NULL } },
	{ "detach", (const char *const[]){ help_detach, NULL } },
	{ "report", (const char *const[]){ help_report, help_supp, help_view, help_env, NULL } },
	{ "leaks", (const char *const[]){ help_leaks, help_supp, help_view, help_env, NULL } },
	{ "diff", (const char *const[]){ help_diff, help_view, help_env, NULL } },
	{ "check", (const char *const[]){ help_check, help_supp, help_view, help_env, NULL } },
	{ "convert", (const char *const[]){ help_convert, help_view, help_env, NULL } },
	{ "top", (const char *const[]){ help_top, NULL } },
};
#define NCOMMANDS (sizeof(help_of) / sizeof(help_of[0]))

/* The command being parsed, for the usage hint; NULL before one is known. */
static const char *usage_cmd;

static void list_formats(FILE *out);

/* cmd's help (NULL: all of it) on stdout. */
static void print_help(const char *cmd)
{
	if (!cmd) {
		fputs(help_head, stdout);
		fputs(help_run, stdout);
		fputs(help_report, stdout);
		fputs(help_leaks, stdout);
		fputs(help_supp, stdout);
		fputs(help_diff, stdout);
		fputs(help_check, stdout);
		fputs(help_convert, stdout);
		fputs(help_view, stdout);
		fputs(help_env, stdout);
		return;
	}
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (!strcmp(help_of[i].cmd, cmd))
			for (const char *const *s = help_of[i].sections; *s; s++)
				fputs(*s, stdout);
	if (!strcmp(cmd, "convert"))
		list_formats(stdout);
}

/* The options of cmd's help (NULL-terminated, static), for the "did you
 * mean" of a mistyped one and for the completion. */
static const char *const *command_options(const char *cmd)
{
	static const char *names[128];
	static char buf[4096];
	size_t n = 0, used = 0;
	for (size_t i = 0; i < NCOMMANDS; i++) {
		if (strcmp(help_of[i].cmd, cmd))
			continue;
		for (const char *const *s = help_of[i].sections; *s; s++) {
			ht_help_opt_t o[64];
			size_t k = ht_help_options(*s, o, 64);
			for (size_t j = 0; j < k && n + 2 < 128; j++) {
				for (int f = 0; f < 2; f++) {
					const char *nm = f ? o[j].long_name : o[j].short_name;
					size_t l = strlen(nm) + 1;
					if (!*nm || used + l > sizeof buf)
						continue;
					memcpy(buf + used, nm, l);
					names[n++] = buf + used;
					used += l;
				}
			}
		}
	}
	names[n] = NULL;
	return names;
}

static int usage_error(const char *fmt, const char *arg)
{
	fputs("heaptrail: ", stderr);
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	if (usage_cmd)
		fprintf(stderr, "see heaptrail %s --help for its usage\n", usage_cmd);
	else
		fputs(usage_text, stderr);
	return 2;
}

/* An option cmd does not take: one line, with the nearest one it takes. */
static int unknown_option(const char *cmd, const char *a)
{
	const char *near = ht_nearest_name(a, command_options(cmd));
	fprintf(stderr, "heaptrail: %s: unknown option '%s'", cmd, HT_TEXT(a));
	if (near)
		fprintf(stderr, "; did you mean %s?", near);
	fprintf(stderr, "\nsee heaptrail %s --help for its usage\n", cmd);
	return 2;
}

/* Value of option `name` at argv[*i]: "--name=V" or "--name V". NULL when
 * argv[*i] is not that option; *missing set when the value is absent. */
static const char *opt_value(int argc, char **argv, int *i, const char *name, bool *missing)
{
	size_t n = strlen(name);
	const char *a = argv[*i];
	if (strncmp(a, name, n) != 0)
		return NULL;
	if (a[n] == '=')
		return a + n + 1;
	if (a[n] != '\0')
		return NULL;
	if (*i + 1 >= argc) {
		*missing = true;
		return NULL;
	}
	return argv[++*i];
}

/* opt_value, also under a short name: "-f V" or "-fV". */
static const char *opt_value2(int argc, char **argv, int *i, const char *name, const char *shrt,
			      bool *missing)
{
	const char *v = opt_value(argc, argv, i, name, missing);
	if (v || *missing)
		return v;
	const char *a = argv[*i];
	size_t n = strlen(shrt);
	if (strncmp(a, shrt, n))
		return NULL;
	if (a[n])
		return a + n;
	if (*i + 1 >= argc) {
		*missing = true;
		return NULL;
	}
	return argv[++*i];
}

static bool parse_uint(const char *s, unsigned long long max, unsigned long long *out)
{
	if (!s || !*s || *s == '-' || *s == '+')
		return false;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return false;
	*out = v;
	return true;
}

/* Suppression options shared by run, report and leaks. */
#define MAX_SUPP_FILES 16
typedef struct supp_opts {
	const char *files[MAX_SUPP_FILES];
	size_t nfiles;
	bool no_default;
} supp_opts_t;

/* Consume a suppression option at argv[*i]. Returns 1 when it was one, 0
 * when not, 2 after a usage error (printed). */
static int supp_option(int argc, char **argv, int *i, const char *cmd, supp_opts_t *so)
{
	bool missing = false;
	const char *v;
	if (!strcmp(argv[*i], "--no-default-suppressions")) {
		so->no_default = true;
		return 1;
	}
	if (!(v = opt_value(argc, argv, i, "--suppressions", &missing)) && !missing)
		return 0;
	if (missing || !*v) {
		fprintf(stderr, "heaptrail: %s: --suppressions needs a file\n"
				"see heaptrail %s --help for its usage\n", cmd, cmd);
		return 2;
	}
	if (so->nfiles >= MAX_SUPP_FILES) {
		fprintf(stderr, "heaptrail: %s: at most %d suppression files\n", cmd, MAX_SUPP_FILES);
		return 2;
	}
	so->files[so->nfiles++] = v;
	return 1;
}

/* The suppression list: the built-in patterns, then the files'. Returns 0,
 * or 1 after printing why a file cannot be used. */
static int supp_load(const supp_opts_t *so, ht_supp_list_t *l)
{
	memset(l, 0, sizeof(*l));
	if (!so->no_default && ht_supp_add_defaults(l)) {
		fprintf(stderr, "heaptrail: out of memory\n");
		return 1;
	}
	for (size_t i = 0; i < so->nfiles; i++) {
		size_t line = 0;
		int r = ht_supp_load_file(l, so->files[i], &line);
		if (r == -EINVAL)
			fprintf(stderr, "heaptrail: %s:%zu: not a `leak:PATTERN` line (nor a comment)\n",
				HT_TEXT(so->files[i]), line);
		else if (r == -HT_ENOTREG)
			fprintf(stderr, "heaptrail: %s: not a regular file (a suppressions file"
					" must be one)\n", HT_TEXT(so->files[i]));
		else if (r == -EFBIG)
			fprintf(stderr, "heaptrail: %s: larger than %" PRIu64 " MiB: not a"
					" suppressions file\n", HT_TEXT(so->files[i]), HT_SUPP_FILE_MAX >> 20);
		else if (r)
			fprintf(stderr, "heaptrail: %s: %s\n", HT_TEXT(so->files[i]), ht_strerror(r));
		if (r) {
			ht_supp_free(l);
			return 1;
		}
	}
	return 0;
}

/* --break-alloc LIST: numbers "N" or "T.N" (N, T from 1) joined by '+', as
 * the agent takes them (agent/breakalloc.c): at most 16, N under 10^15, T
 * a 32-bit thread number. */
#define BREAK_MAX 16
static bool valid_break_list(const char *s)
{
	for (int n = 1; n <= BREAK_MAX; n++) {
		int parts = 0;
		for (;;) {
			if (*s < '1' || *s > '9')
				return false;
			char *end;
			errno = 0;
			unsigned long long v = strtoull(s, &end, 10);
			if (errno || end - s > 15)
				return false;
			s = end;
			if (*s != '.' || ++parts > 1)
				break;
			if (v > UINT32_MAX)
				return false;
			s++;
		}
		if (!*s)
			return true;
		if (*s++ != '+')
			return false;
	}
	return false; /* more than BREAK_MAX */
}

/* Loads and replays a trace, printing why when it cannot. Returns 0 (a
 * damaged trace gives a warning and what was read before the damage). */
/* Options report and leaks share: the trace path, --format, --top,
 * --show-reachable, the suppression options, --, --help. */
typedef struct common_opts {
	const char *path; /* the first of paths */
	const char **paths; /* the trace, run file, directory or - arguments */
	size_t npaths;
	long pid; /* --pid, or -1 */
	const char *program; /* --program, or NULL */
	bool json, show_reachable, only_args;
	bool by_address; /* a site per stack of return addresses, not per frames */
	size_t top; /* 0: the writer's default; SIZE_MAX (--top 0): all */
	supp_opts_t so;
} common_opts_t;

enum { OPT_NOT_OURS, OPT_TAKEN, OPT_EXIT };

/* Consume argv[*i] if it is one of those. OPT_EXIT: the command ends now
 * with *status (a usage error, or --help). */
static int common_option(int argc, char **argv, int *i, const char *cmd, common_opts_t *c,
			 int *status)
{
	const char *a = argv[*i];
	const char *v;
	bool missing = false;
	char what[64];
	int sr;
	if (c->only_args || a[0] != '-' || !a[1]) {
		/* several traces, or the run files and directories of a run:
		 * argv outlives the command */
		static const char **volatile kept; /* until the command ends, whichever way */
		const char **np = realloc(c->paths, (c->npaths + 1) * sizeof *np);
		if (!np) {
			*status = 1;
			return OPT_EXIT;
		}
		c->paths = kept = np;
		c->paths[c->npaths++] = a;
		if (!c->path)
			c->path = a;
	} else if ((sr = supp_option(argc, argv, i, cmd, &c->so))) {
		if (sr == 2) {
			*status = 2;
			return OPT_EXIT;
		}
	} else if ((v = opt_value(argc, argv, i, "--pid", &missing)) || missing) {
		unsigned long long n;
		if (missing || !parse_uint(v, INT32_MAX, &n)) {
			snprintf(what, sizeof what, missing ? "%s: %%s needs a value"
							    : "%s: --pid needs a number, not '%%s'",
				 cmd);
			*status = usage_error(what, missing ? "--pid" : v);
			return OPT_EXIT;
		}
		c->pid = (long)n;
	} else if ((v = opt_value(argc, argv, i, "--program", &missing)) || missing) {
		if (missing || !*v) {
			snprintf(what, sizeof what, "%s: %%s needs a program name", cmd);
			*status = usage_error(what, "--program");
			return OPT_EXIT;
		}
		c->program = v;
	} else if (!strcmp(a, "--show-reachable")) {
		c->show_reachable = true;
	} else if (!strcmp(a, "--by-address")) {
		c->by_address = true;
	} else if (!strcmp(a, "--")) {
		c->only_args = true;
	} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
		print_help(cmd);
		*status = 0;
		return OPT_EXIT;
	} else if ((v = opt_value2(argc, argv, i, "--format", "-f", &missing)) || missing) {
		if (missing || (strcmp(v, "json") && strcmp(v, "text"))) {
			snprintf(what, sizeof what, missing ? "%s: %%s needs a value"
							    : "%s: unknown format '%%s' (text or json)",
				 cmd);
			*status = usage_error(what, missing ? "--format" : v);
			return OPT_EXIT;
		}
		c->json = !strcmp(v, "json");
	} else if ((v = opt_value2(argc, argv, i, "--top", "-n", &missing)) || missing) {
		unsigned long long n;
		if (missing || !parse_uint(v, SIZE_MAX, &n)) {
			snprintf(what, sizeof what, missing ? "%s: %%s needs a value"
							    : "%s: --top needs a number, not '%%s'",
				 cmd);
			*status = usage_error(what, missing ? "--top" : v);
			return OPT_EXIT;
		}
		c->top = n ? (size_t)n : SIZE_MAX;
	} else {
		return OPT_NOT_OURS;
	}
	return OPT_TAKEN;
}

/* The traces named by paths (runset.h: a run file, a directory, several
 * traces, - for standard input) into rs. Returns 0 with *path (to open)
 * and *shown (to print) the one process to report: the only one, or the
 * one --pid or --program picked; 3 when there are several and none was
 * picked (the whole run's view); 1 after printing why. */
#define INPUT_WHOLE_RUN 3
static int pick_input(const char *cmd, const char *const *paths, size_t npaths, long pid,
		      const char *program, ht_runset_t *rs, const char **path, const char **shown)
{
	for (size_t i = 0; i < npaths; i++)
		if (ht_runset_add(rs, cmd, paths[i]))
			return 1;
	if (rs->n == 1 && pid < 0 && !program) {
		*path = rs->p[0].path;
		*shown = rs->p[0].shown;
		return 0;
	}
	if (pid < 0 && !program)
		return INPUT_WHOLE_RUN;
	long k = ht_runset_pick(rs, cmd, pid, program);
	if (k < 0)
		return 1;
	*path = rs->p[k].path;
	*shown = rs->p[k].shown;
	return 0;
}

/* The arguments that named a run, joined by spaces, for the hint of how
 * to report one of its processes (a static buffer). */
static const char *run_args(const char *const *paths, size_t npaths)
{
	static char buf[4096];
	size_t n = 0;
	buf[0] = 0;
	for (size_t i = 0; i < npaths && n + 2 < sizeof buf; i++)
		n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s", i ? " " : "", paths[i]);
	return buf;
}

/* What one pass over a trace builds beside the model. */
typedef struct analyses {
	bool marks, functions, blocks; /* asked for */
	ht_marks_t *mk;
	ht_fn_profile_t *fp;
	ht_blocks_t *blk; /* over the timeline's buckets (the HTML report's) */
} analyses_t;

/* The name of an input for messages: standard input (`-`) is read from
 * /proc/self/fd/N (runset.c). */
static const char *input_name(const char *path)
{
	return strncmp(path, "/proc/self/fd/", 14) ? path : "(standard input)";
}

/* Loads a trace, printing why when it cannot. Returns 0 or 1. */
static int load_trace(const char *path, ht_trace_t **tp)
{
	ht_trace_t *t = NULL;
	int r = ht_reader_load_file(path, NULL, &t);
	if (r < 0) {
		if (t && t->message[0])
			fprintf(stderr, "heaptrail: %s: %s\n", HT_TEXT(input_name(path)), HT_TEXT(t->message));
		else
			fprintf(stderr, "heaptrail: %s: %s\n", HT_TEXT(input_name(path)), ht_strerror(r));
		ht_trace_free(t);
		return 1;
	}
	*tp = t;
	return 0;
}

/* A symbolizer with t's modules declared, or NULL (said on stderr): frames
 * then show addresses only. */
static ht_symbolizer_t *trace_symbolizer(const ht_trace_t *t)
{
	ht_symbolizer_t *sym = ht_symbolizer_new();
	if (sym)
		ht_trace_add_modules(t, sym);
	else
		fprintf(stderr, "heaptrail: warning: no symbolizer, frames show addresses only\n");
	return sym;
}

/* After its pass: what a damaged trace lost. */
static void trace_warnings(const char *path, const ht_trace_t *t)
{
	if (t->checksum_bad)
		fprintf(stderr, "heaptrail: warning: %s: the zstd frame at file offset %" PRIu64
				" fails its checksum: a byte changed after the trace was written; "
				"figures from decompressed offset %" PRIu64 " on may be wrong\n",
			HT_TEXT(input_name(path)), t->checksum_file_offset, t->checksum_body_offset);
	if (t->error)
		fprintf(stderr, "heaptrail: warning: %s: %s; reporting the records complete before it\n",
			HT_TEXT(input_name(path)), HT_TEXT(t->message));
}

/* Loads a trace and builds its model, and what `an` asks for, in one pass
 * (analysis/pass.h), printing why when it cannot. tl_buckets: a timeline the
 * caller will ask for (folded by the model's replay), 0 for none. want:
 * called with the loaded trace to say what to build beside the model (may
 * be NULL). *symp: the symbolizer for the writers (NULL, said on stderr,
 * when there is none), which also folds the sites by frames unless
 * by_address. Returns 0 (a damaged trace gives a warning and what was read
 * before the damage), or 1 after printing why. */
static int load_analyses(const char *path, size_t tl_buckets, bool by_address,
			 void (*want)(const ht_trace_t *t, analyses_t *an, void *ctx), void *ctx,
			 ht_trace_t **tp, ht_model_t **mp, ht_symbolizer_t **symp, analyses_t *an)
{
	ht_trace_t *t = NULL;
	int r;
	if (load_trace(path, &t))
		return 1;
	if (an && want)
		want(t, an, ctx);
	ht_symbolizer_t *sym = trace_symbolizer(t);
	ht_model_t *m = NULL;
	ht_marks_t *mk = NULL;
	ht_fn_profile_t *fp = NULL;
	ht_blocks_t *blk = NULL;
	ht_pass_t *p = NULL;
	if (!(r = ht_pass_new(t, &p)) &&
	    !(r = ht_model_attach(p, t, &tl_buckets, tl_buckets ? 1 : 0, by_address ? NULL : sym,
				  &m)) &&
	    !(r = ht_resources_attach(p, t, &m->resources)) &&
	    !(an && an->functions && (r = ht_fn_attach(p, t, &fp))) &&
	    !(an && an->marks && (r = ht_marks_attach(p, t, &mk))) &&
	    !(an && an->blocks && tl_buckets && (r = ht_blocks_attach(p, t, tl_buckets, &blk))))
		r = ht_pass_run(p);
	ht_pass_free(p);
	if (r) {
		fprintf(stderr, "heaptrail: %s: %s\n", HT_TEXT(input_name(path)), ht_strerror(r));
		ht_blocks_free(blk);
		ht_marks_free(mk);
		ht_fn_free(fp);
		ht_model_free(m);
		ht_symbolizer_free(sym);
		ht_trace_free(t);
		return 1;
	}
	if (mk && !by_address)
		ht_marks_fold_sites(mk, m);
	trace_warnings(path, t);
	*tp = t;
	*mp = m;
	*symp = sym;
	if (an) {
		an->mk = mk;
		an->fp = fp;
		an->blk = blk;
	}
	return 0;
}

static int load_model(const char *path, bool by_address, ht_trace_t **tp, ht_model_t **mp,
		      ht_symbolizer_t **symp)
{
	return load_analyses(path, 0, by_address, NULL, NULL, tp, mp, symp, NULL);
}

/* The views `report` was asked for. */
typedef struct report_views {
	bool functions, tags; /* --functions; --by-tag or --tag */
	bool html;	      /* --format html */
} report_views_t;

/* What the report's pass builds beside the model: the function profile
 * for --functions, tags and phases when the trace has them or a tag view
 * was asked for (it then says the trace has none); nothing for a summary
 * trace those views refuse. */
static void report_wants(const ht_trace_t *t, analyses_t *an, void *ctx)
{
	const report_views_t *v = ctx;
	/* the HTML report's filters: the blocks by the page's buckets */
	an->blocks = v->html && !t->have_summary;
	if ((v->functions || v->tags) && t->have_summary)
		return;
	an->functions = v->functions;
	an->marks = v->tags || (!v->functions && t->nmark_events);
}

static int cmd_report_one(const char *path, const char *shown, bool json, bool show_reachable,
			  supp_opts_t *sop, ht_report_opts_t *rop, bool functions,
			  ht_fn_report_opts_t *fop, bool by_tag, ht_tag_report_opts_t *top_, bool html,
			  const char *out_path, bool by_address);

static int cmd_report(int argc, char **argv)
{
	bool functions = false;
	ht_fn_report_opts_t fo = { NULL, HT_TIME_AUTO, false, 0 };
	bool unit_given = false;
	ht_report_opts_t ro = { NULL, 0 };
	bool by_tag = false;
	ht_tag_report_opts_t to = { NULL, NULL, 0, 1, 0 };
	bool depth_given = false, min_given = false;
	common_opts_t co = { .pid = -1 };
	bool html = false;
	const char *out_path = NULL;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v;
		bool missing = false;
		/* html and -o are the report's own (leaks has neither) */
		int j = i;
		if (!co.only_args && a[0] == '-' && (v = opt_value2(argc, argv, &j, "--format", "-f", &missing)) &&
		    !strcmp(v, "html")) {
			html = true;
			co.json = false;
			i = j;
			continue;
		}
		if (!co.only_args && a[0] == '-' &&
		    ((v = opt_value2(argc, argv, &i, "--output", "-o", &missing)) || missing)) {
			if (missing)
				return usage_error("report: %s needs a value", "--output");
			out_path = !strcmp(v, "-") || !strcmp(v, "/dev/stdout") ? NULL : v;
			continue;
		}
		missing = false;
		int st, c = common_option(argc, argv, &i, "report", &co, &st);
		if (c == OPT_EXIT)
			return st;
		if (c == OPT_TAKEN)
			continue;
		if (!strcmp(a, "--functions")) {
			functions = true;
		} else if (!strcmp(a, "--by-tag")) {
			by_tag = true;
		} else if ((v = opt_value(argc, argv, &i, "--tag", &missing)) || missing) {
			if (missing || !*v)
				return usage_error("report: %s needs a tag name", "--tag");
			to.name = v;
		} else if ((v = opt_value(argc, argv, &i, "--depth", &missing)) || missing) {
			unsigned long long n;
			if (missing)
				return usage_error("report: %s needs a value", "--depth");
			if (!parse_uint(v, HT_MAX_DEPTH * 64ULL, &n) || n < 1)
				return usage_error("report: --depth needs a number from 1 up, not '%s'", v);
			to.depth = (size_t)n;
			depth_given = true;
		} else if ((v = opt_value(argc, argv, &i, "--min-count", &missing)) || missing) {
			unsigned long long n;
			if (missing)
				return usage_error("report: %s needs a value", "--min-count");
			if (!parse_uint(v, UINT64_MAX, &n))
				return usage_error("report: --min-count needs a number, not '%s'", v);
			to.min_count = n;
			min_given = true;
		} else if (!strcmp(a, "--memory")) {
			fo.memory = true;
		} else if ((v = opt_value(argc, argv, &i, "--time-unit", &missing)) || missing) {
			if (missing)
				return usage_error("report: %s needs a value", "--time-unit");
			if (!ht_time_unit_parse(v, &fo.unit))
				return usage_error("report: --time-unit is ns, us, ms or s, not '%s'", v);
			unit_given = true;
		} else {
			return unknown_option("report", a);
		}
	}
	const char *path = co.path;
	bool json = co.json, show_reachable = co.show_reachable;
	supp_opts_t so = co.so;
	ro.top = co.top;
	if (!path)
		return usage_error("report: no trace file given%s", "");
	if (!functions && (fo.memory || unit_given))
		return usage_error("report: %s goes with --functions",
				   fo.memory ? "--memory" : "--time-unit");
	if (!to.name && (depth_given || min_given))
		return usage_error("report: %s goes with --tag", depth_given ? "--depth" : "--min-count");
	if ((by_tag || to.name) && (functions || json))
		return usage_error("report: %s is a text view of its own (the JSON report has a"
				   " \"tags\" member)", by_tag ? "--by-tag" : "--tag");
	if (by_tag && to.name)
		return usage_error("report: --by-tag and --tag %s: one view at a time", to.name);
	if (html && json)
		html = false; /* the last --format given wins, as for text and json */
	if (out_path && !html)
		return usage_error("report: %s goes with --format html", "--output");
	if (html && (functions || by_tag || to.name))
		return usage_error("report: %s is not in the HTML report",
				   functions ? "--functions" : by_tag ? "--by-tag" : "--tag");
	to.top = ro.top;
	fo.top = ro.top; /* 0: the default 10, SIZE_MAX (--top 0): all */
	/* a run: its processes together, or the one picked */
	ht_runset_t rs;
	ht_runset_init(&rs);
	const char *shown = path;
	int pk = pick_input("report", co.paths, co.npaths, co.pid, co.program, &rs, &path, &shown);
	if (pk == INPUT_WHOLE_RUN) {
		int wr;
		ht_supp_list_t rsupps;
		if (functions || by_tag || to.name || html)
			wr = usage_error("report: %s shows one process: pick it with --pid or --program",
					 functions ? "--functions" : by_tag ? "--by-tag" : to.name ? "--tag"
					 : "--format html");
		else if (supp_load(&so, &rsupps))
			wr = 1;
		else {
			wr = ht_runset_report(stdout, &rs, json, co.top == SIZE_MAX ? (size_t)1 << 30 : co.top,
					      co.by_address, &rsupps, run_args(co.paths, co.npaths),
					      false, show_reachable);
			ht_supp_free(&rsupps);
		}
		ht_runset_free(&rs);
		free(co.paths);
		return wr;
	}
	free(co.paths);
	if (pk) {
		ht_runset_free(&rs);
		return 1;
	}
	int ret = cmd_report_one(path, shown, json, show_reachable, &so, &ro, functions, &fo,
				 by_tag, &to, html, out_path, co.by_address);
	ht_runset_free(&rs);
	return ret;
}

static int cmd_report_one(const char *path, const char *shown, bool json, bool show_reachable,
			  supp_opts_t *sop, ht_report_opts_t *rop, bool functions,
			  ht_fn_report_opts_t *fop, bool by_tag, ht_tag_report_opts_t *top_, bool html,
			  const char *out_path, bool by_address)
{
	supp_opts_t so = *sop;
	ht_report_opts_t ro = *rop;
	ht_fn_report_opts_t fo = *fop;
	ht_tag_report_opts_t to = *top_;
	ro.trace_path = shown;
	fo.trace_path = shown;
	to.trace_path = shown;

	ht_trace_t *t = NULL;
	ht_model_t *m = NULL;
	/* the trace itself is never overwritten (checked on the open file too) */
	struct stat in_st;
	bool have_in = stat(path, &in_st) == 0;
	report_views_t rv = { functions, by_tag || to.name, html };
	analyses_t an = { false, false, false, NULL, NULL, NULL };
	ht_symbolizer_t *sym = NULL;
	if (load_analyses(path, html ? HT_HTML_TL_BUCKETS : ht_report_timeline_buckets(json), by_address,
			  report_wants, &rv, &t, &m, &sym, &an))
		return 1;
	if (!json && !html)
		ht_wrap_stdout(ht_text_style.width);
	FILE *hout = stdout;
	int oerr = 0;
	if (out_path && !(hout = ht_open_output(out_path, true, 0666, have_in ? &in_st : NULL, &oerr))) {
		fprintf(stderr, "heaptrail: report: cannot write %s: %s\n", HT_TEXT(out_path),
			ht_strerror(oerr));
		ht_marks_free(an.mk);
		ht_blocks_free(an.blk);
		ht_fn_free(an.fp);
		ht_symbolizer_free(sym);
		ht_model_free(m);
		ht_trace_free(t);
		return 1;
	}
	int r = 0;
	if ((by_tag || to.name || functions) && t->have_summary) {
		fprintf(stderr, "heaptrail: %s is a summary trace (heaptrail run --summary): it keeps "
				"totals per site, not the events that %s needs\n",
			HT_TEXT(shown), functions ? "--functions" : by_tag ? "--by-tag" : "--tag");
		ht_marks_free(an.mk);
		ht_blocks_free(an.blk);
		ht_fn_free(an.fp);
		ht_symbolizer_free(sym);
		ht_model_free(m);
		ht_trace_free(t);
		return 1;
	}
	ht_fn_profile_t *fp = an.fp;
	ht_marks_t *mk = an.mk;
	/* leaks by class, suppressions applied */
	ht_supp_list_t supps;
	ht_leaks_t lk;
	bool have_lk = false;
	const ht_leaks_t *lkp = NULL;
	if (supp_load(&so, &supps)) {
		ht_fn_free(fp);
		ht_marks_free(mk);
		ht_blocks_free(an.blk);
		ht_symbolizer_free(sym);
		ht_model_free(m);
		ht_trace_free(t);
		return 1;
	}
	if (!by_tag && !to.name && !(r = ht_leaks_build(m, sym, &supps, &lk))) {
		have_lk = true;
		lkp = &lk;
	}
	bool no_tag = false;
	if (html) {
		r = ht_report_html(hout, m, sym, &ro, lkp, an.blk);
		if (hout != stdout && fclose(hout) && !r)
			r = -errno;
	} else if (by_tag) {
		r = ht_report_by_tag_text(stdout, mk, path);
	} else if (to.name) {
		r = ht_report_tag_text(stdout, m, mk, sym, &to);
		if (r == -ENOENT) { /* the report says so; not a failure to write it */
			r = 0;
			no_tag = true;
		}
	} else if (functions && !json) {
		ht_emitter_t e;
		ht_emit_init(&e, stdout, HT_EMIT_TEXT);
		r = ht_section_functions(&e, fp, sym, &fo);
	} else if (lkp) {
		ht_emitter_t e;
		ht_report_parts_t parts = { lkp, show_reachable, fp, mk };
		ht_emit_init(&e, stdout, json ? HT_EMIT_JSON : HT_EMIT_TEXT);
		r = ht_report_write(&e, m, sym, &ro, &parts);
	}
	if (fflush(stdout) && !r)
		r = -errno;
	/* on stderr too, as for --functions below */
	if (!r && (by_tag || no_tag) && mk->tag_events == 0)
		fprintf(stderr, "heaptrail: %s: %s\n", HT_TEXT(shown), ht_marks_no_tags_msg);
	else if (no_tag)
		fprintf(stderr, "heaptrail: %s: no allocations carry the tag '%s'\n", HT_TEXT(shown),
			HT_TEXT(to.name));
	/* the message on stderr too: a script reading stdout for numbers
	 * should not have to parse the report to learn it got none */
	if (functions && !r && fp->nthreads == 0)
		fprintf(stderr, "heaptrail: %s: %s\n", HT_TEXT(shown), ht_fn_no_events_msg);
	ht_fn_free(fp);
	ht_marks_free(mk);
	ht_blocks_free(an.blk);
	if (have_lk)
		ht_leaks_free(&lk);
	ht_supp_free(&supps);
	ht_symbolizer_free(sym);
	ht_model_free(m);
	ht_trace_free(t);
	if (r) {
		fprintf(stderr, "heaptrail: writing the report: %s\n", ht_strerror(r));
		return 1;
	}
	return 0;
}

static int leaks_one(const char *path, const char *shown, bool json, bool show_reachable,
		     size_t top, bool growth, bool by_address, ht_supp_list_t *supps);

/* `heaptrail leaks`: the leak section alone, or the growth suspects. */
static int cmd_leaks(int argc, char **argv)
{
	bool growth = false;
	common_opts_t co = { .pid = -1 };
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int st, c = common_option(argc, argv, &i, "leaks", &co, &st);
		if (c == OPT_EXIT)
			return st;
		if (c == OPT_TAKEN)
			continue;
		if (!strcmp(a, "--growth")) {
			growth = true;
		} else {
			return unknown_option("leaks", a);
		}
	}
	const char *path = co.path;
	bool json = co.json, show_reachable = co.show_reachable;
	size_t top = co.top;
	supp_opts_t so = co.so;
	if (!path)
		return usage_error("leaks: no trace file given%s", "");
	ht_supp_list_t supps;
	if (supp_load(&so, &supps))
		return 1;
	/* a run: the table of its processes and the leaks of each that lost
	 * memory, or the one picked */
	ht_runset_t rs;
	ht_runset_init(&rs);
	const char *shown = path;
	int pk = pick_input("leaks", co.paths, co.npaths, co.pid, co.program, &rs, &path, &shown);
	if (pk == INPUT_WHOLE_RUN && growth)
		pk = usage_error("leaks: %s shows one process: pick it with --pid or --program",
				 "--growth");
	else if (pk == INPUT_WHOLE_RUN)
		pk = ht_runset_report(stdout, &rs, json, top == SIZE_MAX ? (size_t)1 << 30 : top,
				      co.by_address, &supps, run_args(co.paths, co.npaths), true,
				      show_reachable);
	else if (!pk)
		pk = leaks_one(path, shown, json, show_reachable, top, growth, co.by_address, &supps);
	ht_runset_free(&rs);
	free(co.paths);
	ht_supp_free(&supps);
	return pk;
}

static int leaks_one(const char *path, const char *shown, bool json, bool show_reachable,
		     size_t top, bool growth, bool by_address, ht_supp_list_t *supps)
{
	ht_trace_t *t = NULL;
	ht_model_t *m = NULL;
	ht_symbolizer_t *sym = NULL;
	if (load_model(path, by_address, &t, &m, &sym)) {
		return 1;
	}
	if (growth && t->have_summary) {
		/* growth is live bytes over time: "no growth" would be a guess */
		fprintf(stderr, "heaptrail: %s is a summary trace (heaptrail run --summary): it keeps "
				"totals per site, not the events that --growth needs\n",
			HT_TEXT(shown));
		ht_symbolizer_free(sym);
		ht_model_free(m);
		ht_trace_free(t);
		return 1;
	}
	if (!json)
		ht_wrap_stdout(ht_text_style.width);
	ht_leaks_t lk;
	int r = ht_leaks_build(m, sym, supps, &lk);
	if (!r && growth) {
		ht_growth_t *g = NULL;
		long ng = ht_growth_rank(m, &g);
		ht_emitter_t e;
		ht_emit_init(&e, stdout, json ? HT_EMIT_JSON : HT_EMIT_TEXT);
		if (ng < 0) {
			r = (int)ng;
		} else {
			ht_emit_printf(&e, "heaptrail growth suspects: %s\n", HT_TEXT(shown));
			ht_emit_obj_begin(&e, NULL);
			ht_emit_u64(&e, "heaptrail_leaks", 1);
			ht_emit_nl(&e, 1);
			r = ht_section_growth(&e, m, sym, g, (size_t)ng, top);
			ht_emit_obj_end(&e);
			fputc('\n', stdout);
		}
		free(g);
	} else if (!r && json) {
		ht_emitter_t e;
		ht_emit_init(&e, stdout, HT_EMIT_JSON);
		ht_emit_obj_begin(&e, NULL);
		ht_emit_u64(&e, "heaptrail_leaks", 1);
		ht_emit_nl(&e, 1);
		ht_emit_obj_begin(&e, "totals");
		ht_emit_u64(&e, "leaked_blocks", m->totals.leaked_blocks);
		ht_emit_u64(&e, "leaked_bytes", m->totals.leaked_bytes);
		ht_emit_bool(&e, "leaks_classified", lk.classified);
		ht_section_leak_totals(&e, &lk);
		ht_emit_obj_end(&e);
		ht_emit_nl(&e, 1);
		r = ht_section_leaks(&e, m, sym, &lk, top, show_reachable, NULL, NULL);
		if (!r) {
			ht_emit_nl(&e, 1);
			r = ht_section_suppressions(&e, m, &lk);
		}
		if (!r) {
			ht_emit_nl(&e, 1);
			r = ht_section_checks(&e, m, sym);
		}
		if (!r) { /* descriptors and handles still open: fd_leaks, handle_leaks */
			ht_emit_nl(&e, 1);
			r = ht_section_resources(&e, m, sym);
		}
		if (!r) { /* the newest member last */
			ht_emit_nl(&e, 1);
			r = ht_section_badfrees(&e, m, sym);
		}
		ht_emit_obj_end(&e);
		fputc('\n', stdout);
	} else if (!r) {
		printf("heaptrail leaks: %s\n", HT_TEXT(shown));
		ht_emitter_t e;
		ht_emit_init(&e, stdout, HT_EMIT_TEXT);
		r = ht_section_badfrees(&e, m, sym);
		if (!r)
			r = ht_report_leaks_text(stdout, m, sym, &lk, top, show_reachable);
		if (!r)
			r = ht_section_checks(&e, m, sym);
		if (!r) /* descriptors and handles: when the trace has any */
			r = ht_section_resources(&e, m, sym);
		fputc('\n', stdout);
	}
	if (fflush(stdout) && !r)
		r = -errno;
	ht_leaks_free(&lk); /* safe after a failed build too */
	ht_symbolizer_free(sym);
	ht_model_free(m);
	ht_trace_free(t);
	if (r) {
		fprintf(stderr, "heaptrail: writing the leak report: %s\n", ht_strerror(r));
		return 1;
	}
	return 0;
}

/* --fail-if EXPR and --junit FILE (check, diff). OPT_EXIT after a usage
 * error (printed). */
#define MAX_GATES 64
static int gate_option(int argc, char **argv, int *i, const char *cmd, ht_gate_t *gates,
		       size_t *ngates, const char **junit)
{
	bool missing = false;
	const char *v;
	char what[64], err[512];
	if ((v = opt_value(argc, argv, i, "--junit", &missing)) || missing) {
		if (missing || !*v) {
			snprintf(what, sizeof what, "%s: %%s needs a file", cmd);
			usage_error(what, "--junit");
			return OPT_EXIT;
		}
		*junit = v;
		return OPT_TAKEN;
	}
	if (!(v = opt_value(argc, argv, i, "--fail-if", &missing)) && !missing)
		return OPT_NOT_OURS;
	if (missing) {
		snprintf(what, sizeof what, "%s: %%s needs a condition", cmd);
		usage_error(what, "--fail-if");
		return OPT_EXIT;
	}
	if (*ngates >= MAX_GATES) {
		snprintf(what, sizeof what, "%s: at most %d conditions%%s", cmd, MAX_GATES);
		usage_error(what, "");
		return OPT_EXIT;
	}
	ht_gate_t *g = &gates[*ngates];
	if (ht_gate_parse(v, g, err, sizeof err)) {
		snprintf(what, sizeof what, "%s: --fail-if %%s", cmd);
		usage_error(what, err);
		return OPT_EXIT;
	}
	if (g->mode != HT_GATE_VALUE && !strcmp(cmd, "check")) {
		ht_gate_free(g);
		snprintf(what, sizeof what, "%s: --fail-if %%s", cmd);
		usage_error(what, "takes a limit, not a change (+N, +N%: heaptrail diff)");
		return OPT_EXIT;
	}
	++*ngates;
	return OPT_TAKEN;
}

static void free_gates(ht_gate_t *g, size_t n)
{
	for (size_t i = 0; i < n; i++)
		ht_gate_free(&g[i]);
}

/* The leak classes of each side, as the report builds them (the built-in
 * suppressions), then the conditions. */
static int diff_gates(ht_diff_t *d, ht_gate_t *gates, size_t ngates, const char *junit)
{
	ht_supp_list_t supps;
	supp_opts_t so = { { NULL }, 0, false };
	if (supp_load(&so, &supps))
		return 1;
	ht_leaks_t lk[2];
	ht_gate_side_t side[2];
	int r = 0, built = 0;
	for (int k = 0; k < 2 && !r; k++, built++) {
		r = ht_leaks_build(d->side[k].m, d->side[k].sym, &supps, &lk[k]);
		side[k] = (ht_gate_side_t){ d->side[k].m, d->side[k].sym, &lk[k],
					    d->side[k].temporary_known };
	}
	int ret = 1;
	if (r)
		fprintf(stderr, "heaptrail: the leaks of the conditions: %s\n", ht_strerror(r));
	else
		ret = ht_gates_run(gates, ngates, &side[HT_DIFF_BASE], &side[HT_DIFF_NEW], stderr,
				   "heaptrail diff", junit);
	for (int k = 0; k < built; k++)
		ht_leaks_free(&lk[k]);
	ht_supp_free(&supps);
	return ret;
}

/* `heaptrail check TRACE --fail-if EXPR...`: limits on one trace, its
 * figures from the same model and leak classes as its report's. */
static int cmd_check(int argc, char **argv)
{
	ht_gate_t gates[MAX_GATES];
	size_t ngates = 0;
	const char *junit = NULL, *path = NULL, *program = NULL, *v;
	supp_opts_t so = { { NULL }, 0, false };
	bool only_args = false, missing = false;
	long pid = -1;
	int ret = 0;
	for (int i = 1; i < argc && !ret; i++) {
		const char *a = argv[i];
		int r;
		if (only_args || a[0] != '-' || !a[1]) {
			if (path)
				ret = usage_error("check: more than one trace file ('%s'): a run's process "
						  "is picked with --pid or --program", a);
			path = a;
		} else if ((v = opt_value(argc, argv, &i, "--pid", &missing)) || missing) {
			unsigned long long n;
			if (missing || !parse_uint(v, INT32_MAX, &n))
				ret = usage_error("check: --pid needs a number, not '%s'", missing ? "" : v);
			pid = (long)n;
		} else if ((v = opt_value(argc, argv, &i, "--program", &missing)) || missing) {
			if (missing || !*v)
				ret = usage_error("check: %s needs a program name", "--program");
			program = v;
		} else if (!strcmp(a, "--")) {
			only_args = true;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			print_help("check");
			free_gates(gates, ngates);
			return 0;
		} else if ((r = supp_option(argc, argv, &i, "check", &so))) {
			if (r == 2)
				ret = 2;
		} else if ((r = gate_option(argc, argv, &i, "check", gates, &ngates, &junit)) !=
			   OPT_NOT_OURS) {
			if (r == OPT_EXIT)
				ret = 2;
		} else {
			ret = unknown_option("check", a);
		}
	}
	if (!ret && !path)
		ret = usage_error("check: no trace file given%s", "");
	if (!ret && !ngates)
		ret = usage_error("check: no condition given (--fail-if EXPR)%s", "");
	if (ret) {
		free_gates(gates, ngates);
		return ret;
	}
	/* one process: the trace, or the one of a run --pid or --program picks */
	ht_runset_t rs;
	ht_runset_init(&rs);
	const char *shown = path;
	int pk = pick_input("check", &path, 1, pid, program, &rs, &path, &shown);
	if (pk == INPUT_WHOLE_RUN) {
		fprintf(stderr, "heaptrail: check: %zu processes: pick the one to test with --pid or "
				"--program\n", rs.n);
		pk = 2;
	}
	if (pk) {
		ht_runset_free(&rs);
		free_gates(gates, ngates);
		return pk;
	}
	ht_supp_list_t supps;
	ht_trace_t *t = NULL;
	ht_model_t *m = NULL;
	if (supp_load(&so, &supps)) {
		ht_runset_free(&rs);
		free_gates(gates, ngates);
		return 1;
	}
	ht_symbolizer_t *sym = NULL;
	if (load_model(path, false, &t, &m, &sym)) {
		ht_supp_free(&supps);
		ht_runset_free(&rs);
		free_gates(gates, ngates);
		return 1;
	}
	ht_leaks_t lk;
	int r = ht_leaks_build(m, sym, &supps, &lk);
	if (r) {
		fprintf(stderr, "heaptrail: %s: %s\n", HT_TEXT(path), ht_strerror(r));
		ret = 1;
	} else {
		ht_gate_side_t side = { m, sym, &lk, !m->sample_rate && !t->have_summary };
		char suite[1100];
		snprintf(suite, sizeof suite, "heaptrail check %s", shown);
		ht_wrap_stdout(ht_text_style.width);
		printf("heaptrail check: %s\n", HT_TEXT(shown));
		ret = ht_gates_run(gates, ngates, NULL, &side, stdout, suite, junit);
	}
	ht_leaks_free(&lk);
	ht_supp_free(&supps);
	ht_symbolizer_free(sym);
	ht_model_free(m);
	ht_trace_free(t);
	ht_runset_free(&rs);
	free_gates(gates, ngates);
	return ret;
}

/* `heaptrail diff BASE NEW`: the two traces replayed as `report` replays
 * them, their sites matched by stack (analysis/diff.h). */
static int diff_one(const char *paths[2], const char *shown[2], ht_diff_match_t match,
		    bool by_address, bool html, bool json, const char *out_path, size_t top,
		    ht_gate_t *gates, size_t ngates, const char *junit);

static int cmd_diff(int argc, char **argv)
{
	const char *paths[2] = { NULL, NULL };
	const char *program = NULL;
	size_t npaths = 0, top = 0;
	bool json = false, html = false, only_args = false, by_address = false;
	const char *out_path = NULL;
	bool out_given = false;
	ht_diff_match_t match = HT_DIFF_BY_FUNCTION;
	ht_gate_t gates[MAX_GATES];
	size_t ngates = 0;
	const char *junit = NULL;
	int r = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v;
		bool missing = false;
		if (only_args || a[0] != '-' || !a[1]) {
			if (npaths == 2)
				return usage_error("diff: more than two trace files ('%s')", a);
			paths[npaths++] = a;
		} else if (!strcmp(a, "--")) {
			only_args = true;
		} else if (!strcmp(a, "--by-address")) {
			by_address = true;
		} else if ((v = opt_value(argc, argv, &i, "--program", &missing)) || missing) {
			if (missing || !*v)
				return usage_error("diff: %s needs a program name", "--program");
			program = v;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			print_help("diff");
			return 0;
		} else if ((v = opt_value2(argc, argv, &i, "--format", "-f", &missing)) || missing) {
			if (missing)
				return usage_error("diff: %s needs a value", "--format");
			if (strcmp(v, "json") && strcmp(v, "text") && strcmp(v, "html"))
				return usage_error("diff: unknown format '%s' (text, json or html)", v);
			json = !strcmp(v, "json");
			html = !strcmp(v, "html");
		} else if ((v = opt_value2(argc, argv, &i, "--output", "-o", &missing)) || missing) {
			if (missing)
				return usage_error("diff: %s needs a value", "--output");
			out_path = !strcmp(v, "-") || !strcmp(v, "/dev/stdout") ? NULL : v;
			out_given = true;
		} else if ((v = opt_value2(argc, argv, &i, "--top", "-n", &missing)) || missing) {
			unsigned long long n;
			if (missing)
				return usage_error("diff: %s needs a value", "--top");
			if (!parse_uint(v, SIZE_MAX, &n))
				return usage_error("diff: --top needs a number, not '%s'", v);
			top = n ? (size_t)n : SIZE_MAX;
		} else if ((v = opt_value(argc, argv, &i, "--match", &missing)) || missing) {
			if (missing)
				return usage_error("diff: %s needs a value", "--match");
			if (!strcmp(v, "function"))
				match = HT_DIFF_BY_FUNCTION;
			else if (!strcmp(v, "line"))
				match = HT_DIFF_BY_LINE;
			else
				return usage_error("diff: --match is function or line, not '%s'", v);
		} else if ((r = gate_option(argc, argv, &i, "diff", gates, &ngates, &junit)) != OPT_NOT_OURS) {
			if (r == OPT_EXIT)
				return 2;
		} else {
			return unknown_option("diff", a);
		}
	}
	r = 0;
	if (npaths < 2) {
		free_gates(gates, ngates);
		return usage_error("diff: two trace files needed, BASE and NEW%s", "");
	}
	if (junit && !ngates) {
		free_gates(gates, ngates);
		return usage_error("diff: --junit goes with --fail-if%s", "");
	}
	if (out_given && !html) {
		free_gates(gates, ngates);
		return usage_error("diff: %s goes with --format html", "--output");
	}

	/* runs: the process of --program on each side, or the table of
	 * their programs side by side */
	ht_runset_t rs[2];
	const char *shown[2] = { paths[0], paths[1] };
	int pk = 0;
	ht_runset_init(&rs[0]);
	ht_runset_init(&rs[1]);
	for (int k = 0; k < 2 && !pk; k++) {
		pk = pick_input("diff", &paths[k], 1, -1, program, &rs[k], &paths[k], &shown[k]);
		if (pk == INPUT_WHOLE_RUN && (ngates || html)) {
			pk = usage_error("diff: %s compares one process of each run: pick it with "
					 "--program", ngates ? "--fail-if" : "--format html");
		} else if (pk == INPUT_WHOLE_RUN && k == 0) {
			pk = 0;
			paths[0] = NULL;
		}
	}
	if (!pk && !paths[0]) /* BASE is a run of several: so is the comparison */
		pk = INPUT_WHOLE_RUN;
	if (pk == INPUT_WHOLE_RUN)
		pk = ht_runset_diff(stdout, &rs[0], &rs[1], json, by_address);
	if (pk || !paths[0]) {
		ht_runset_free(&rs[0]);
		ht_runset_free(&rs[1]);
		free_gates(gates, ngates);
		return pk;
	}
	int dr = diff_one(paths, shown, match, by_address, html, json, out_path, top, gates, ngates,
			  junit);
	ht_runset_free(&rs[0]);
	ht_runset_free(&rs[1]);
	return dr;
}

static int diff_one(const char *paths[2], const char *shown[2], ht_diff_match_t match,
		    bool by_address, bool html, bool json, const char *out_path, size_t top,
		    ht_gate_t *gates, size_t ngates, const char *junit)
{
	int r = 0;
	ht_diff_t d;
	memset(&d, 0, sizeof(d));
	d.match = match;
	ht_trace_t *t[2] = { NULL, NULL };
	ht_model_t *m[2] = { NULL, NULL };
	int ret = 0;
	for (int k = 0; k < 2 && !ret; k++)
		ret = load_model(paths[k], by_address, &t[k], &m[k], &d.side[k].sym);
	for (int k = 0; k < 2 && !ret; k++) {
		ht_diff_side_t *sd = &d.side[k];
		sd->path = shown[k];
		sd->m = m[k];
		sd->temporary_known = !m[k]->sample_rate && !t[k]->have_summary;
	}
	if (!ret && !json && !html)
		ht_wrap_stdout(ht_text_style.width);
	FILE *hout = stdout;
	if (!ret && out_path) {
		/* neither trace is ever overwritten (checked on the open file too) */
		struct stat in_st[2], o_st;
		int oerr = 0;
		for (int k = 0; k < 2 && !oerr; k++)
			if (stat(paths[k], &in_st[k]))
				oerr = -errno;
		/* NEW checked by name first, BASE on the opened file */
		if (!oerr && lstat(out_path, &o_st) == 0 && o_st.st_dev == in_st[1].st_dev &&
		    o_st.st_ino == in_st[1].st_ino)
			oerr = -HT_ESAME;
		if (!oerr)
			hout = ht_open_output(out_path, true, 0666, &in_st[0], &oerr);
		else
			hout = NULL;
		if (!hout) {
			fprintf(stderr, "heaptrail: diff: cannot write %s: %s\n", HT_TEXT(out_path),
				ht_strerror(oerr));
			ret = 1;
		}
	}
	if (!ret && !(r = ht_diff_build(&d))) {
		if (html) {
			r = ht_report_diff_html(hout, &d);
			if (hout != stdout && fclose(hout) && !r)
				r = -errno;
			hout = stdout;
		} else {
			ht_emitter_t e;
			ht_emit_init(&e, stdout, json ? HT_EMIT_JSON : HT_EMIT_TEXT);
			r = ht_section_diff(&e, &d, top);
		}
		if (fflush(stdout) && !r)
			r = -errno;
	}
	if (hout && hout != stdout)
		fclose(hout);
	if (r) {
		fprintf(stderr, "heaptrail: writing the diff: %s\n", ht_strerror(r));
		ret = 1;
	}
	if (!ret && ngates) /* on stderr: stdout holds the diff, perhaps JSON */
		ret = diff_gates(&d, gates, ngates, junit);
	free_gates(gates, ngates);
	ht_diff_free(&d);
	for (int k = 0; k < 2; k++) {
		ht_symbolizer_free(d.side[k].sym);
		ht_model_free(m[k]);
		ht_trace_free(t[k]);
	}
	return ret;
}

static void list_formats(FILE *out)
{
	fputs("formats:\n", out);
	for (const ht_exporter_t *e = ht_exporters; e->name; e++)
		fprintf(out, "  %-12s %s\n", e->name, e->what);
}

/* The export of t to out: one pass builds the model and what the format
 * collects beside it (its table entry says what); heaptrack's format then
 * takes its second pass (report/heaptrack.c says why). The events format is
 * written while the pass runs. Returns 0, a negative error code of the
 * writing, or 1 after printing why the trace could not be read. */
static int convert_write(FILE *out, const char *path, const ht_trace_t *t,
			 const ht_exporter_t *fmt, const ht_export_opts_t *eo, bool by_address)
{
	ht_model_t *m = NULL;
	ht_symbolizer_t *sym = trace_symbolizer(t);
	ht_activity_t *act = NULL;
	ht_fn_spans_t *spans = NULL;
	ht_events_writer_t *ew = NULL;
	ht_event_log_t elog;
	ht_hk_plan_t *plan = NULL;
	ht_heaptrack_writer_t *hw = NULL;
	size_t tl = fmt->tl_buckets;
	ht_pass_t *p = NULL;
	int r;
	/* the modules are declared before the pass: the sites fold by frames
	 * as they come, and the events format symbolizes as it goes */
	if (!(r = ht_pass_new(t, &p)) &&
	    !(r = ht_model_attach(p, t, &tl, tl ? 1 : 0, by_address ? NULL : sym, &m))) {
		if (!(r = ht_resources_attach(p, t, &m->resources)) &&
		    !((fmt->collect & HT_COLLECT_ACTIVITY) &&
		      ((r = ht_activity_attach(p, t, HT_ACTIVITY_BUCKETS, &act)) ||
		       (r = ht_fn_spans_attach(p, t, 0, &spans)))) &&
		    !((fmt->collect & HT_COLLECT_EVENTS) &&
		      ((r = ht_events_begin(out, m, sym, &ew)) ||
		       (r = ht_event_log_attach(p, t, ht_events_record, ew, &elog)))) &&
		    !((fmt->collect & HT_COLLECT_HEAPTRACK) &&
		      (r = ht_hk_plan_attach(p, t, &m->totals.peak_heap_bytes, &plan))))
			r = ht_pass_run(p);
	}
	ht_pass_free(p);
	p = NULL;
	if (r && !ferror(out)) {
		fprintf(stderr, "heaptrail: %s: %s\n", HT_TEXT(path), ht_strerror(r));
		r = 1;
	}
	if (!r)
		trace_warnings(path, t);
	if (!r && (fmt->collect & HT_COLLECT_HEAPTRACK)) {
		/* the second pass writes the file */
		if (!(r = ht_pass_new(t, &p)) && !(r = ht_heaptrack_attach(p, out, m, sym, plan, &hw)) &&
		    !(r = ht_pass_run(p)))
			r = ht_heaptrack_finish(hw);
		ht_pass_free(p);
	} else if (!r) {
		ht_export_data_t d = { tl ? &m->timelines[0] : NULL, act, spans,
				       ew ? &elog : NULL, plan };
		r = fmt->write(out, m, sym, eo, &d);
	}
	ht_heaptrack_writer_free(hw);
	ht_hk_plan_free(plan);
	ht_events_writer_free(ew);
	ht_fn_spans_free(spans);
	ht_activity_free(act);
	ht_symbolizer_free(sym);
	ht_model_free(m);
	return r;
}

static int convert_one(const ht_exporter_t *fmt, ht_export_opts_t *eop, const char *path,
		       const char *shown, const char *out_path, bool by_address);

/* The folded stacks of every process of a run, each stack under a root
 * frame naming its program and pid ("cc1 (pid 4250);main;..."), so that a
 * flame graph of the run shows which program a stack came from. */
static int convert_folded_run(const ht_exporter_t *fmt, const ht_export_opts_t *eo,
			      ht_runset_t *rs, const char *out_path, bool by_address)
{
	FILE *out = stdout;
	int oerr = 0;
	if (out_path && !(out = ht_open_output(out_path, true, 0666, NULL, &oerr))) {
		fprintf(stderr, "heaptrail: convert: cannot write %s: %s\n", HT_TEXT(out_path),
			ht_strerror(oerr));
		return 1;
	}
	ht_comp_t comp = out_path ? ht_comp_for_path(out_path) : HT_COMP_NONE;
	if (comp && !(out = ht_comp_open(out, comp, &oerr))) {
		fprintf(stderr, "heaptrail: convert: cannot compress %s: %s\n", HT_TEXT(out_path),
			ht_strerror(oerr));
		return 1;
	}
	int r = 0;
	for (size_t k = 0; k < rs->n && !r; k++) {
		ht_trace_t *t = NULL;
		if (load_trace(rs->p[k].path, &t)) {
			r = 1;
			break;
		}
		char *buf = NULL;
		size_t len = 0;
		FILE *mf = open_memstream(&buf, &len);
		ht_export_opts_t o = *eo;
		o.trace_path = rs->p[k].shown;
		r = mf ? convert_write(mf, rs->p[k].path, t, fmt, &o, by_address) : -ENOMEM;
		if (mf)
			fclose(mf);
		const char *exe = t->exe_path && *t->exe_path ? t->exe_path : t->argc ? t->argv[0] : "?";
		char root[320];
		snprintf(root, sizeof root, "%s (pid %" PRIu64 ");", ht_base_name(exe), t->pid);
		for (char *c = root; c[1]; c++) /* one frame: no separator inside */
			if (*c == ';' || *c == '\n')
				*c = '_';
		for (char *line = buf; !r && line && *line;) {
			char *nl = strchr(line, '\n');
			fputs(root, out);
			fwrite(line, 1, nl ? (size_t)(nl - line + 1) : strlen(line), out);
			line = nl ? nl + 1 : NULL;
		}
		free(buf);
		ht_trace_free(t);
	}
	if (fflush(out) && !r)
		r = -errno;
	if (out != stdout && fclose(out) && !r)
		r = -errno;
	if (r > 0)
		return 1;
	if (r) {
		fprintf(stderr, "heaptrail: writing folded: %s\n", ht_strerror(r));
		return 1;
	}
	return 0;
}

static int cmd_convert(int argc, char **argv)
{
	const ht_exporter_t *fmt = NULL;
	ht_export_opts_t eo = { NULL, HT_COST_BYTES, false };
	const char *path = NULL, *out_path = NULL, *program = NULL;
	const char **paths = NULL;
	size_t npaths = 0;
	long pid = -1;
	bool only_args = false, cost_given = false, by_address = false;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v;
		bool missing = false;
		if (only_args || a[0] != '-' || !a[1]) {
			static const char **volatile kept; /* until the command ends */
			const char **np = realloc(paths, (npaths + 1) * sizeof *np);
			if (!np)
				return 1;
			paths = kept = np;
			paths[npaths++] = a;
			path = paths[0];
		} else if ((v = opt_value(argc, argv, &i, "--pid", &missing)) || missing) {
			unsigned long long n;
			if (missing || !parse_uint(v, INT32_MAX, &n))
				return usage_error("convert: --pid needs a number, not '%s'",
						   missing ? "" : v);
			pid = (long)n;
		} else if ((v = opt_value(argc, argv, &i, "--program", &missing)) || missing) {
			if (missing || !*v)
				return usage_error("convert: %s needs a program name", "--program");
			program = v;
		} else if (!strcmp(a, "--")) {
			only_args = true;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			print_help("convert");
			return 0;
		} else if (!strcmp(a, "-o")) {
			if (i + 1 >= argc)
				return usage_error("convert: %s needs a value", "-o");
			out_path = argv[++i];
			/* the standard output by name: not a file to create (and
			 * /dev/stdout is a symbolic link, which outputs refuse) */
			if (!strcmp(out_path, "-") || !strcmp(out_path, "/dev/stdout"))
				out_path = NULL;
		} else if ((v = opt_value2(argc, argv, &i, "--format", "-f", &missing)) || missing) {
			if (missing)
				return usage_error("convert: %s needs a value", "--format");
			for (fmt = ht_exporters; fmt->name && strcmp(fmt->name, v); fmt++)
				;
			if (!fmt->name) {
				list_formats(stderr);
				return usage_error("convert: unknown format '%s'", v);
			}
		} else if ((v = opt_value(argc, argv, &i, "--cost", &missing)) || missing) {
			if (missing)
				return usage_error("convert: %s needs a value", "--cost");
			if (!ht_cost_parse(v, &eo.cost))
				return usage_error("convert: unknown cost '%s' "
						   "(bytes, allocations, peak, leaked, temporary)", v);
			cost_given = true;
		} else if (!strcmp(a, "--icicle")) {
			eo.icicle = true;
		} else if (!strcmp(a, "--by-address")) {
			by_address = true;
		} else {
			return unknown_option("convert", a);
		}
	}
	if (!fmt)
		return usage_error("convert: --format is required%s", "");
	if (!path)
		return usage_error("convert: no trace file given%s", "");
	/* an option the format ignores would look as if it had applied */
	if (cost_given && !fmt->has_cost)
		return usage_error("convert: --cost goes with folded and flamegraph, not %s",
				   fmt->name);
	if (eo.icicle && strcmp(fmt->name, "flamegraph"))
		return usage_error("convert: --icicle goes with flamegraph, not %s", fmt->name);
	/* one process of a run: the one picked, or the only one */
	ht_runset_t rs;
	ht_runset_init(&rs);
	const char *shown = path;
	int pk = pick_input("convert", paths, npaths, pid, program, &rs, &path, &shown);
	free(paths);
	if (pk == INPUT_WHOLE_RUN && !strcmp(fmt->name, "folded")) {
		int fr = convert_folded_run(fmt, &eo, &rs, out_path, by_address);
		ht_runset_free(&rs);
		return fr;
	}
	if (pk == INPUT_WHOLE_RUN) {
		fprintf(stderr, "heaptrail: convert: %zu processes: %s converts one (folded takes "
				"them all); pick one with --pid or --program:\n",
			rs.n, fmt->name);
		ht_runset_fill(&rs);
		for (size_t k = 0; k < rs.n; k++)
			fprintf(stderr, "heaptrail:   %-16s pid %-8ld %s\n",
				HT_TEXT(rs.p[k].program ? rs.p[k].program : "?"), rs.p[k].pid,
				HT_TEXT(rs.p[k].shown));
	}
	if (pk) {
		ht_runset_free(&rs);
		return pk == INPUT_WHOLE_RUN ? 2 : 1;
	}
	int cr = convert_one(fmt, &eo, path, shown, out_path, by_address);
	ht_runset_free(&rs);
	return cr;
}

static int convert_one(const ht_exporter_t *fmt, ht_export_opts_t *eop, const char *path,
		       const char *shown, const char *out_path, bool by_address)
{
	ht_export_opts_t eo = *eop;
	eo.trace_path = shown;

	ht_trace_t *t = NULL;
	struct stat in_st, out_st;
	bool have_in = stat(path, &in_st) == 0;
	if (out_path && stat(out_path, &out_st) == 0 && have_in &&
	    in_st.st_dev == out_st.st_dev && in_st.st_ino == out_st.st_ino) {
		fprintf(stderr, "heaptrail: convert: -o %s is the trace itself: not overwritten\n",
			HT_TEXT(out_path));
		return 1;
	}
	if (load_trace(path, &t))
		return 1;
	if (fmt->needs_events && t->have_summary) {
		fprintf(stderr,
			"heaptrail: %s is a summary trace (heaptrail run --summary): it holds totals per "
			"site, not the events that %s shows; convert it to pprof, folded or flamegraph\n",
			HT_TEXT(shown), fmt->name);
		ht_trace_free(t);
		return 1;
	}
	if (eo.cost == HT_COST_TEMPORARY && (t->sample_rate || t->have_summary)) {
		/* an empty graph would read as "no temporaries" */
		fprintf(stderr,
			"heaptrail: %s is a %s: it does not tell temporary allocations, which "
			"--cost temporary needs\n",
			HT_TEXT(shown), t->have_summary ? "summary trace (heaptrail run --summary)"
					      : "sampled trace (heaptrail run --sample-rate)");
		ht_trace_free(t);
		return 1;
	}
	FILE *out = stdout;
	int oerr = 0;
	/* the user named it: an existing file is replaced, but not through a
	 * symbolic link, nor if it is the trace (checked again on the open
	 * file: the name may have changed meanwhile) */
	if (out_path && !(out = ht_open_output(out_path, true, 0666, have_in ? &in_st : NULL, &oerr))) {
		fprintf(stderr, "heaptrail: convert: cannot write %s: %s\n", HT_TEXT(out_path),
			ht_strerror(oerr));
		ht_trace_free(t);
		return 1;
	}
	/* -o x.zst, -o x.gz: compressed as the name says (pprof's output is
	 * gzip already) */
	ht_comp_t comp = out_path ? ht_comp_for_path(out_path) : HT_COMP_NONE;
	if (comp == HT_COMP_GZIP && !strcmp(fmt->name, "pprof"))
		comp = HT_COMP_NONE;
	if (comp && !(out = ht_comp_open(out, comp, &oerr))) {
		fprintf(stderr, "heaptrail: convert: cannot compress %s: %s\n", HT_TEXT(out_path),
			ht_strerror(oerr));
		ht_trace_free(t);
		return 1;
	}
	int r = convert_write(out, path, t, fmt, &eo, by_address);
	if (fflush(out) && !r)
		r = -errno;
	if (out != stdout && fclose(out) && !r)
		r = -errno;
	ht_trace_free(t);
	if (r > 0)
		return 1; /* said why */
	if (r) {
		fprintf(stderr, "heaptrail: writing %s: %s\n", fmt->name, ht_strerror(r));
		return 1;
	}
	return 0;
}

static bool parse_pid(const char *s, pid_t *pid)
{
	unsigned long long n;
	if (!parse_uint(s, 4194304, &n) || n < 1)
		return false;
	*pid = (pid_t)n;
	return true;
}

static int cmd_attach(int argc, char **argv)
{
	ht_attach_opts_t o;
	memset(&o, 0, sizeof(o));
	bool have_pid = false;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v;
		bool missing = false;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			print_help("attach");
			return 0;
		}
		if (a[0] != '-') {
			if (have_pid || !parse_pid(a, &o.pid))
				return usage_error("attach: one process id, not '%s'", a);
			have_pid = true;
		} else if (!strcmp(a, "-o")) {
			if (i + 1 >= argc || !*argv[i + 1])
				return usage_error("attach: %s needs a value", "-o");
			o.output = argv[++i];
		} else if ((v = opt_value(argc, argv, &i, "--output", &missing)) || missing) {
			if (missing || !*v)
				return usage_error("attach: %s needs a value", "--output");
			o.output = v;
		} else if ((v = opt_value(argc, argv, &i, "--for", &missing)) || missing) {
			if (missing)
				return usage_error("attach: %s needs a value", "--for");
			if (!ht_parse_duration(v, &o.for_seconds))
				return usage_error("attach: --for takes a duration (10, 10s, 500ms, 2m, 1h), not '%s'", v);
		} else if ((v = opt_value(argc, argv, &i, "--depth", &missing)) || missing) {
			unsigned long long n;
			if (missing)
				return usage_error("attach: %s needs a value", "--depth");
			if (!parse_uint(v, 1024, &n) || n < 1)
				return usage_error("attach: --depth needs a number from 1 to 1024, not '%s'", v);
			o.depth = (unsigned)n;
		} else if ((v = opt_value(argc, argv, &i, "--unwind", &missing)) || missing) {
			if (missing)
				return usage_error("attach: %s needs a value", "--unwind");
			if (strcmp(v, "fp") && strcmp(v, "libunwind"))
				return usage_error("attach: --unwind is fp or libunwind, not '%s'", v);
			o.unwind = v;
		} else if ((v = opt_value(argc, argv, &i, "--sample-rate", &missing)) || missing) {
			if (missing)
				return usage_error("attach: %s needs a value", "--sample-rate");
			if (!ht_parse_size(v, 1ull << 40, &o.sample_rate) || !o.sample_rate)
				return usage_error("attach: --sample-rate needs a size (512K, 1M), not '%s'", v);
		} else if (!strcmp(a, "--no-leak-check")) {
			o.no_leak_check = true;
		} else if (!strcmp(a, "--free-stacks")) {
			o.free_stacks = true;
		} else {
			return unknown_option("attach", a);
		}
	}
	if (!have_pid)
		return usage_error("attach: no process id given%s", "");
	return ht_attach(&o);
}

static int cmd_detach(int argc, char **argv)
{
	pid_t pid = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			print_help("detach");
			return 0;
		}
		if (argv[i][0] == '-')
			return unknown_option("detach", argv[i]);
		if (pid || !parse_pid(argv[i], &pid))
			return usage_error("detach: one process id, not '%s'", argv[i]);
	}
	if (!pid)
		return usage_error("detach: no process id given%s", "");
	return ht_detach(pid, false);
}

static int cmd_run(int argc, char **argv)
{
	ht_run_opts_t o;
	memset(&o, 0, sizeof(o));
	o.leak_exitcode = -1;
	o.error_exitcode = -1;
	supp_opts_t so = { { NULL }, 0, false };
	bool no_report = false;
	int i = 1;
	for (; i < argc; i++) {
		const char *a = argv[i];
		const char *v;
		bool missing = false;
		int sr;
		if (a[0] != '-' || !a[1])
			break;
		if ((sr = supp_option(argc, argv, &i, "run", &so))) {
			if (sr == 2)
				return 2;
			continue;
		}
		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			print_help("run");
			return 0;
		}
		if (!strcmp(a, "-o") || !strncmp(a, "--output", 8)) {
			if (!strcmp(a, "-o")) {
				if (i + 1 >= argc)
					return usage_error("run: %s needs a value", "-o");
				v = argv[++i];
			} else if (!(v = opt_value(argc, argv, &i, "--output", &missing))) {
				if (missing)
					return usage_error("run: %s needs a value", "--output");
				return unknown_option("run", a);
			}
			if (!*v)
				return usage_error("run: empty output path%s", "");
			if (strchr(v, ','))
				return usage_error("run: the output path may not contain a comma ('%s')", v);
			o.output = v;
		} else if (!strncmp(a, "-o", 2)) {
			v = a + 2;
			if (strchr(v, ','))
				return usage_error("run: the output path may not contain a comma ('%s')", v);
			o.output = v;
		} else if ((v = opt_value(argc, argv, &i, "--depth", &missing)) || missing) {
			unsigned long long n;
			if (missing)
				return usage_error("run: %s needs a value", "--depth");
			if (!parse_uint(v, 1024, &n) || n < 1)
				return usage_error("run: --depth needs a number from 1 to 1024, not '%s'", v);
			o.depth = (unsigned)n;
		} else if ((v = opt_value(argc, argv, &i, "--unwind", &missing)) || missing) {
			if (missing)
				return usage_error("run: %s needs a value", "--unwind");
			if (strcmp(v, "fp") && strcmp(v, "libunwind"))
				return usage_error("run: --unwind is fp or libunwind, not '%s'", v);
			o.unwind = v;
		} else if (!strcmp(a, "--no-follow-fork")) {
			o.no_follow_fork = true;
		} else if (!strcmp(a, "--functions")) {
			o.functions = true;
		} else if (!strcmp(a, "--start-off")) {
			o.start_off = true;
		} else if (!strcmp(a, "--summary")) {
			o.summary = true;
		} else if ((v = opt_value(argc, argv, &i, "--summary-sites", &missing)) || missing) {
			unsigned long long n;
			if (missing)
				return usage_error("run: %s needs a value", "--summary-sites");
			if (!parse_uint(v, 10000000, &n) || n < 1)
				return usage_error("run: --summary-sites needs a number from 1 to 10000000, "
						   "not '%s'", v);
			o.summary = true;
			o.summary_sites = (unsigned)n;
		} else if ((v = opt_value(argc, argv, &i, "--break-alloc", &missing)) || missing) {
			if (missing)
				return usage_error("run: %s needs a value", "--break-alloc");
			if (!valid_break_list(v) || strlen(v) > 1000)
				return usage_error("run: --break-alloc takes allocation numbers N or T.N"
						   " joined by '+', not '%s'", v);
			o.break_alloc = v;
		} else if ((v = opt_value(argc, argv, &i, "--leak-exitcode", &missing)) || missing) {
			unsigned long long n;
			if (missing)
				return usage_error("run: %s needs a value", "--leak-exitcode");
			if (!parse_uint(v, 255, &n))
				return usage_error("run: --leak-exitcode needs a number 0..255, not '%s'", v);
			o.leak_exitcode = (int)n;
		} else if ((v = opt_value(argc, argv, &i, "--error-exitcode", &missing)) || missing) {
			unsigned long long n;
			if (missing)
				return usage_error("run: %s needs a value", "--error-exitcode");
			if (!parse_uint(v, 255, &n))
				return usage_error("run: --error-exitcode needs a number 0..255, not '%s'", v);
			o.error_exitcode = (int)n;
		} else if (!strcmp(a, "--no-leak-report")) {
			no_report = true;
		} else if (!strcmp(a, "--free-stacks")) {
			o.free_stacks = true;
		} else if (!strcmp(a, "--no-mmap")) {
			o.no_mmap = true;
		} else if (!strcmp(a, "--gdb")) {
			o.gdb = true;
		} else if (!strcmp(a, "--no-leak-check")) {
			o.no_leak_check = true;
		} else if ((v = opt_value(argc, argv, &i, "--sample-rate", &missing)) || missing) {
			if (missing)
				return usage_error("run: %s needs a value", "--sample-rate");
			if (!ht_parse_size(v, 1000000000ULL, &o.sample_rate))
				return usage_error("run: --sample-rate needs a size in bytes up to "
						   "1000000000 (512K, 1M), not '%s'", v);
		} else if (!strcmp(a, "--live")) {
			o.live = true;
		} else if ((v = opt_value(argc, argv, &i, "--sample-seed", &missing)) || missing) {
			if (missing)
				return usage_error("run: %s needs a value", "--sample-seed");
			if (!parse_uint(v, 1000000000ULL, &o.sample_seed))
				return usage_error("run: --sample-seed needs a number up to 1000000000, "
						   "not '%s'", v);
			o.sample_seed_set = true;
		} else {
			return unknown_option("run", a);
		}
	}
	if (o.summary && o.sample_rate)
		return usage_error("run: --summary counts every allocation; it does not go with "
				   "--sample-rate%s", "");
	if (o.error_exitcode >= 0 && (o.summary || o.sample_rate))
		return usage_error("run: --error-exitcode needs every free recorded: it does not go "
				   "with %s", o.summary ? "--summary" : "--sample-rate");
	if (o.live && o.summary)
		return usage_error("run: --live watches events; --summary writes none until the end%s", "");
	if (o.live && (!isatty(STDOUT_FILENO) || access("/dev/tty", R_OK)))
		return usage_error("run: --live needs a terminal%s", "");
	if (no_report && o.leak_exitcode < 0)
		return usage_error("run: --no-leak-report goes with --leak-exitcode%s", "");
	if (o.gdb && (o.leak_exitcode >= 0 || o.error_exitcode >= 0))
		return usage_error("run: --gdb hands the program to gdb: %s needs heaptrail run to "
				   "wait for it", o.leak_exitcode >= 0 ? "--leak-exitcode" : "--error-exitcode");
	if (i >= argc)
		return usage_error("run: no program given%s", "");
	/* refused before the program runs, not found missing after it */
	char why[4200];
	if (ht_output_dir_check(o.output, why, sizeof why)) {
		fprintf(stderr, "heaptrail: run: cannot create the trace %s%s%s: directory %s\n"
				"see heaptrail run --help for its usage\n",
			o.output ? "'" : "in the current directory", o.output ? HT_TEXT(o.output) : "",
			o.output ? "'" : "", HT_TEXT(why));
		return 2;
	}
	o.argv = argv + i;
	o.no_leak_report = no_report;
	ht_supp_list_t supps;
	if (supp_load(&so, &supps))
		return 1;
	o.supps = &supps;
	int ret = ht_run(&o);
	ht_supp_free(&supps);
	return ret;
}

static int cmd_top(int argc, char **argv)
{
	ht_top_opts_t o;
	memset(&o, 0, sizeof o);
	int i = 1;
	for (; i < argc; i++) {
		const char *a = argv[i];
		const char *v;
		bool missing = false;
		if (a[0] != '-' || !a[1])
			break;
		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			print_help("top");
			return 0;
		}
		if (!strcmp(a, "--once")) {
			o.once = true;
		} else if ((v = opt_value(argc, argv, &i, "--batch", &missing)) || missing) {
			unsigned long long n;
			if (missing)
				return usage_error("top: %s needs a value", "--batch");
			if (!parse_uint(v, 1000000, &n) || n < 1)
				return usage_error("top: --batch needs a number of frames from 1, not '%s'", v);
			o.batch = (unsigned)n;
		} else if ((v = opt_value(argc, argv, &i, "--sort", &missing)) || missing) {
			if (missing)
				return usage_error("top: %s needs a value", "--sort");
			if (!strcmp(v, "live"))
				o.sort = HT_TOP_LIVE;
			else if (!strcmp(v, "rate"))
				o.sort = HT_TOP_RATE;
			else if (!strcmp(v, "growth"))
				o.sort = HT_TOP_GROWTH;
			else
				return usage_error("top: --sort is live, rate or growth, not '%s'", v);
		} else if (!strcmp(a, "-n") || (v = opt_value(argc, argv, &i, "--top", &missing)) || missing) {
			unsigned long long n;
			if (!strcmp(a, "-n")) {
				if (i + 1 >= argc)
					return usage_error("top: %s needs a value", "-n");
				v = argv[++i];
			} else if (missing) {
				return usage_error("top: %s needs a value", "--top");
			}
			if (!parse_uint(v, 100000, &n) || n < 1)
				return usage_error("top: -n needs a number from 1, not '%s'", v);
			o.nsites = (unsigned)n;
		} else if ((v = opt_value(argc, argv, &i, "--interval", &missing)) || missing) {
			if (missing)
				return usage_error("top: %s needs a value", "--interval");
			char *end;
			double s = strtod(v, &end);
			if (end == v || *end || !(s >= 0.1 && s <= 60))
				return usage_error("top: --interval needs seconds from 0.1 to 60, not '%s'", v);
			o.interval_ms = (unsigned)(s * 1000 + 0.5);
		} else {
			return unknown_option("top", a);
		}
	}
	if (o.once && o.batch)
		return usage_error("top: --once or --batch N, not both%s", "");
	if (i >= argc)
		return usage_error("top: no PID or trace file given%s", "");
	if (i + 1 < argc)
		return usage_error("top: one PID or trace file, not '%s' too", argv[i + 1]);
	o.target = argv[i];
	return ht_top(&o);
}

static bool known_command(const char *cmd)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (!strcmp(help_of[i].cmd, cmd))
			return true;
	return false;
}

/* `heaptrail --list-options [COMMAND]`: the commands, or a command's
 * options from its help, one a line: "NAME<tab>ARG" (ARG: "" for a flag,
 * "a|b" for choices, else a word such as FILE or N). convert's FORMAT is
 * the list of formats. */
static int list_options(const char *cmd)
{
	if (!cmd) {
		for (size_t i = 0; i < NCOMMANDS; i++)
			printf("%s\n", help_of[i].cmd);
		return 0;
	}
	if (!known_command(cmd))
		return usage_error("--list-options: unknown command '%s'", cmd);
	for (size_t i = 0; i < NCOMMANDS; i++) {
		if (strcmp(help_of[i].cmd, cmd))
			continue;
		for (const char *const *s = help_of[i].sections; *s; s++) {
			ht_help_opt_t o[64];
			size_t k = ht_help_options(*s, o, 64);
			for (size_t j = 0; j < k; j++) {
				const char *arg = o[j].arg;
				char fmts[512] = "";
				if (!strcmp(cmd, "convert") && !strcmp(arg, "FORMAT")) {
					size_t len = 0;
					for (const ht_exporter_t *e = ht_exporters; e->name; e++)
						len += (size_t)snprintf(fmts + len, sizeof fmts - len,
									"%s%s", len ? "|" : "", e->name);
					arg = fmts;
				}
				if (*o[j].short_name)
					printf("%s\t%s\n", o[j].short_name, arg);
				if (*o[j].long_name)
					printf("%s\t%s\n", o[j].long_name, arg);
			}
		}
	}
	return 0;
}

/* The options of help_view, which every command that reads traces takes:
 * taken out of argv (up to a "--") before the command parses the rest, and
 * applied to the frame rules (analysis/frames.h) and the text style.
 * Returns -1, or the status to exit with. */
static int view_options(int *argcp, char **argv, const char *cmd)
{
	static const char *fold[64], *dirs[16];
	static char dirbuf[4096];
	ht_frame_opts_t fo = { 0 };
	size_t nfold = 0, ndirs = 0;
	long width = -1;
	const char *color = "auto";
	int argc = *argcp, o = 1;
	bool rest = false;
	char what[96];
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v;
		bool missing = false;
		if (rest || !strcmp(a, "--")) {
			rest = true;
			argv[o++] = argv[i];
			continue;
		}
		if (!strcmp(a, "--full-names")) {
			fo.full_names = true;
		} else if (!strcmp(a, "--no-fold")) {
			fo.no_fold = true;
		} else if ((v = opt_value(argc, argv, &i, "--width", &missing)) || missing) {
			unsigned long long n;
			if (missing || !parse_uint(v, 100000, &n)) {
				snprintf(what, sizeof what, "%s: --width needs a number of columns, not '%%s'",
					 cmd);
				return usage_error(missing ? "%s: --width needs a value" : what,
						   missing ? cmd : v);
			}
			width = (long)n;
		} else if ((v = opt_value(argc, argv, &i, "--fold-frames", &missing)) || missing) {
			if (missing || nfold == sizeof fold / sizeof fold[0])
				return usage_error(missing ? "%s: --fold-frames needs a regex"
							   : "%s: too many --fold-frames",
						   cmd);
			fold[nfold++] = v;
		} else if ((v = opt_value(argc, argv, &i, "--debug-dir", &missing)) || missing) {
			struct stat st;
			if (missing)
				return usage_error("%s: --debug-dir needs a directory", cmd);
			if (stat(v, &st) || !S_ISDIR(st.st_mode))
				return usage_error("--debug-dir: '%s' is not a directory", v);
			if (ndirs < sizeof dirs / sizeof dirs[0])
				dirs[ndirs++] = v;
		} else if ((v = opt_value(argc, argv, &i, "--color", &missing)) || missing) {
			if (missing || (strcmp(v, "auto") && strcmp(v, "always") && strcmp(v, "never")))
				return usage_error(missing ? "%s: --color needs auto, always or never"
							   : "--color: '%s' is not auto, always or never",
						   missing ? cmd : v);
			color = v;
		} else {
			argv[o++] = argv[i];
		}
	}
	argv[o] = NULL;
	*argcp = o;
	size_t used = 0;
	for (size_t k = 0; k < ndirs; k++) {
		int w = snprintf(dirbuf + used, sizeof dirbuf - used, "%s%s", k ? ":" : "", dirs[k]);
		if (w < 0 || (size_t)w >= sizeof dirbuf - used)
			return usage_error("%s: --debug-dir: the directories are too long", cmd);
		used += (size_t)w;
	}
	fo.debug_dirs = ndirs ? dirbuf : NULL;
	fo.fold_regex = fold;
	fo.nfold_regex = nfold;
	char why[300];
	if (ht_frames_configure(&fo, why, sizeof why))
		return usage_error("%s", why);
	/* a terminal gets its width and colours; a file or a pipe neither */
	bool tty = isatty(STDOUT_FILENO);
	if (width >= 0) {
		ht_text_style.width = (size_t)width;
	} else if (tty) {
		struct winsize ws;
		if (!ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) && ws.ws_col > 0)
			ht_text_style.width = ws.ws_col;
	}
	const char *nc = getenv("NO_COLOR"), *term = getenv("TERM");
	if (!strcmp(color, "always"))
		ht_text_style.color = true;
	else if (!strcmp(color, "auto"))
		ht_text_style.color = tty && !(nc && *nc) && !(term && !strcmp(term, "dumb"));
	return -1;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return usage_error("no command given%s", "");
	const char *cmd = argv[1];
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
		print_help(argc > 2 && known_command(argv[2]) ? argv[2] : NULL);
		return 0;
	}
	if (!strcmp(cmd, "--list-options")) /* for completion/: not in the help */
		return list_options(argc > 2 ? argv[2] : NULL);
	if (known_command(cmd))
		usage_cmd = cmd;
	if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V")) {
		printf("heaptrail %s (trace format %d.%d)\n", HT_VERSION, HT_FORMAT_MAJOR, HT_FORMAT_MINOR);
		return 0;
	}
	/* the commands that read whole traces: a progress line on a terminal */
	if (strcmp(cmd, "run") && strcmp(cmd, "attach") && strcmp(cmd, "detach") && strcmp(cmd, "top") && known_command(cmd)) {
		int vargc = argc - 1, st = view_options(&vargc, argv + 1, cmd);
		if (st >= 0)
			return st;
		argc = vargc + 1;
		ht_progress_enable();
	}
	if (!strcmp(cmd, "top"))
		return cmd_top(argc - 1, argv + 1);
	if (!strcmp(cmd, "report"))
		return cmd_report(argc - 1, argv + 1);
	if (!strcmp(cmd, "run"))
		return cmd_run(argc - 1, argv + 1);
	if (!strcmp(cmd, "attach"))
		return cmd_attach(argc - 1, argv + 1);
	if (!strcmp(cmd, "detach"))
		return cmd_detach(argc - 1, argv + 1);
	if (!strcmp(cmd, "convert"))
		return cmd_convert(argc - 1, argv + 1);
	if (!strcmp(cmd, "leaks"))
		return cmd_leaks(argc - 1, argv + 1);
	if (!strcmp(cmd, "diff"))
		return cmd_diff(argc - 1, argv + 1);
	if (!strcmp(cmd, "check"))
		return cmd_check(argc - 1, argv + 1);
	return usage_error("unknown command '%s'", cmd);
}
