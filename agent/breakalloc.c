/* breakalloc.c - the break=LIST option: SIGTRAP when a chosen allocation is
 * made and when it is freed, so that a debugger stops at the creation site
 * (docs/AGENT_OPTIONS.md).
 *
 * Allocations are numbered as common/trace_format.h defines it: the n-th
 * ALLOC, REALLOC or PALLOC event of a thread, threads numbered 1 for the
 * main thread, then in the order their states are created (thread.c). The
 * count only runs when the option is set: hooks test one global flag.
 * Everything here is async-signal-safe and allocates nothing.
 */
#include <signal.h>
#include <unistd.h>

#include "agent.h"

#define HT_BREAK_MAX 16

bool ht_break_on;
static struct {
	uint32_t thread;
	uint64_t seq;
	_Atomic uintptr_t addr; /* the block once made, until freed */
} targets[HT_BREAK_MAX];
static unsigned ntargets;

/* Parses one decimal number from v[*i] up to a '.', '+' or the end: 1 and
 * up, at most 10^15. */
static bool parse_num(const char *v, size_t len, size_t *i, uint64_t *out)
{
	uint64_t r = 0;
	size_t start = *i;
	for (; *i < len && v[*i] >= '0' && v[*i] <= '9'; ++*i) {
		if (r > 100000000000000ull)
			return false;
		r = r * 10 + (uint64_t)(v[*i] - '0');
	}
	*out = r;
	return *i > start && r > 0;
}

/* "N" or "T.N" joined by '+'; false when malformed or too many. */
bool ht_break_parse(const char *v, size_t len)
{
	size_t i = 0;
	ntargets = 0;
	while (i < len) {
		uint64_t a, b;
		if (ntargets >= HT_BREAK_MAX || !parse_num(v, len, &i, &a))
			return false;
		targets[ntargets].thread = 1;
		targets[ntargets].seq = a;
		if (i < len && v[i] == '.') {
			i++;
			if (a > UINT32_MAX || !parse_num(v, len, &i, &b))
				return false;
			targets[ntargets].thread = (uint32_t)a;
			targets[ntargets].seq = b;
		}
		ntargets++;
		if (i < len && v[i++] != '+')
			return false;
		if (i == len && v[len - 1] == '+')
			return false;
	}
	ht_break_on = ntargets > 0;
	return ht_break_on;
}

static size_t append_hex(char *d, size_t len, size_t cap, uint64_t v)
{
	char tmp[16];
	int n = 0;
	do {
		tmp[n++] = "0123456789abcdef"[v & 0xf];
		v >>= 4;
	} while (v);
	len = ht_append_str(d, len, cap, "0x");
	while (n > 0 && len + 1 < cap)
		d[len++] = tmp[--n];
	d[len] = 0;
	return len;
}

bool ht_break_traced_only;

/* A debugger is attached to this process (TracerPid in /proc/self/status). */
static bool traced(void)
{
	char st[4096];
	if (ht_read_file("/proc/self/status", st, sizeof st) <= 0)
		return true; /* cannot tell: trap as asked */
	for (const char *l = st; *l;) {
		if (!ht_strncmp(l, "TracerPid:", 10)) {
			const char *v = l + 10;
			while (*v == ' ' || *v == '\t')
				v++;
			return *v && *v != '0';
		}
		while (*l && *l != '\n')
			l++;
		if (*l)
			l++;
	}
	return true;
}

/* "heaptrail: allocation N (0x...) made: SIGTRAP" on stderr, then the trap;
 * with break_traced=1 (heaptrail run --gdb) only under a debugger: the
 * children of the program gdb debugs run on without one, and a trap there
 * would end them. */
static void trap(unsigned i, uintptr_t p, const char *what)
{
	bool stop = !ht_break_traced_only || traced();
	char line[160];
	size_t n = ht_append_str(line, 0, sizeof line, "heaptrail: allocation ");
	if (targets[i].thread != 1) {
		n = ht_append_u64(line, n, sizeof line, targets[i].thread);
		n = ht_append_str(line, n, sizeof line, ".");
	}
	n = ht_append_u64(line, n, sizeof line, targets[i].seq);
	n = ht_append_str(line, n, sizeof line, " (");
	n = append_hex(line, n, sizeof line, p);
	n = ht_append_str(line, n, sizeof line, ") ");
	n = ht_append_str(line, n, sizeof line, what);
	n = ht_append_str(line, n, sizeof line,
			  stop ? ": SIGTRAP\n" : " (no debugger attached to this process: not stopped)\n");
	ssize_t w = write(2, line, n);
	(void)w;
	if (stop)
		raise(SIGTRAP);
}

void ht_break_alloc(ht_thread_t *t, void *p)
{
	uint64_t n = ++t->alloc_seq;
	for (unsigned i = 0; i < ntargets; i++) {
		if (targets[i].seq == n && targets[i].thread == t->ordinal) {
			atomic_store(&targets[i].addr, (uintptr_t)p);
			trap(i, (uintptr_t)p, "made");
		}
	}
}

void ht_break_free(void *p)
{
	for (unsigned i = 0; i < ntargets; i++) {
		uintptr_t a = (uintptr_t)p;
		/* once: the address may be reused by a later, unrelated block */
		if (a && atomic_compare_exchange_strong(&targets[i].addr, &a, 0))
			trap(i, a, "freed");
	}
}
