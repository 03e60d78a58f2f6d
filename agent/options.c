/* options.c - HEAPTRAIL_OPTIONS, read once at start-up.
 *
 * Format: comma-separated key=value pairs (docs/AGENT_OPTIONS.md). Read from
 * environ directly: getenv is fine in practice, but this keeps the "no libc
 * calls that may allocate" rule trivially true. A bad option is reported once
 * on stderr and ignored; the program itself always runs.
 */
#include <sys/syscall.h>
#include <unistd.h>

#include "agent.h"

char ht_opt_output[4096] = HT_DEFAULT_OUTPUT;
char ht_opt_manifest[4096];
uint64_t ht_opt_manifest_run[4];
unsigned ht_opt_depth = 64;
bool ht_opt_unwind_fp;
bool ht_opt_follow_fork = true;
unsigned ht_opt_compress = HT_COMPRESS_AUTO;
bool ht_opt_enabled = true;
bool ht_opt_functions;
bool ht_opt_stacks_shadow = true; /* used only with functions=1 */
bool ht_opt_start_off;
int ht_opt_snapshot_signal;
bool ht_opt_leak_check = true;
bool ht_opt_own_pack = true;
bool ht_opt_free_stacks;
bool ht_opt_mmap = true;
static bool leak_check_set; /* leak_check given explicitly */
bool ht_opt_summary;
unsigned ht_opt_summary_sites = 4096;
int ht_opt_leak_signal = -1; /* -1: SIGUSR2 unless the program handles it */
uint64_t ht_opt_sample_rate;
uint64_t ht_opt_sample_seed;
bool ht_opt_sample_seed_set;
static unsigned long root_pid; /* follow_fork=0: the traced process (below) */
static bool summary_sites_set;

extern char **environ;

static const char *env_value(const char *name)
{
	size_t n = ht_strlen(name);
	for (char **e = environ; e && *e; e++) {
		if (!ht_strncmp(*e, name, n) && (*e)[n] == '=')
			return *e + n + 1;
	}
	return NULL;
}

/* Parses a boolean or unsigned value of len bytes; false if malformed. */
static bool parse_uint(const char *v, size_t len, unsigned long *out)
{
	unsigned long r = 0;
	if (!len)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (v[i] < '0' || v[i] > '9' || r > 100000000ul)
			return false;
		r = r * 10 + (unsigned long)(v[i] - '0');
	}
	*out = r;
	return true;
}

/* n unsigned 64-bit numbers separated by ':', all present; false if not. */
static bool parse_u64s(const char *v, size_t len, uint64_t *out, unsigned n)
{
	unsigned k = 0;
	size_t i = 0;
	while (k < n) {
		uint64_t r = 0;
		size_t from = i;
		for (; i < len && v[i] >= '0' && v[i] <= '9'; i++) {
			if (r > (UINT64_MAX - 9) / 10)
				return false;
			r = r * 10 + (uint64_t)(v[i] - '0');
		}
		if (i == from)
			return false;
		out[k++] = r;
		if (k < n && (i >= len || v[i++] != ':'))
			return false;
	}
	return i == len;
}

static void copy_value(char *dst, size_t cap, const char *v, size_t len)
{
	if (len >= cap)
		len = cap - 1;
	for (size_t i = 0; i < len; i++)
		dst[i] = v[i];
	dst[len] = 0;
}

static bool key_is(const char *k, size_t klen, const char *name)
{
	return ht_strlen(name) == klen && !ht_strncmp(k, name, klen);
}

static bool set_option(const char *k, size_t klen, const char *v, size_t vlen)
{
	unsigned long u;
	if (key_is(k, klen, "output")) {
		if (!vlen)
			return false;
		copy_value(ht_opt_output, sizeof ht_opt_output, v, vlen);
	} else if (key_is(k, klen, "manifest")) {
		if (!vlen)
			return false;
		copy_value(ht_opt_manifest, sizeof ht_opt_manifest, v, vlen);
	} else if (key_is(k, klen, "manifest_run")) {
		/* pid:signal:dev:inode (agent.h) */
		uint64_t f[4];
		if (!parse_u64s(v, vlen, f, 4) || !f[0] || f[0] > INT32_MAX || f[1] < 1 ||
		    f[1] > 64 || f[1] == SIGKILL || f[1] == SIGSTOP)
			return false;
		for (unsigned i = 0; i < 4; i++)
			ht_opt_manifest_run[i] = f[i];
	} else if (key_is(k, klen, "depth")) {
		if (!parse_uint(v, vlen, &u) || u < 1 || u > HT_MAX_DEPTH)
			return false;
		ht_opt_depth = (unsigned)u;
	} else if (key_is(k, klen, "unwind")) {
		if (vlen == 2 && !ht_strncmp(v, "fp", 2))
			ht_opt_unwind_fp = true;
		else if (vlen == 9 && !ht_strncmp(v, "libunwind", 9))
			ht_opt_unwind_fp = false;
		else
			return false;
	} else if (key_is(k, klen, "follow_fork")) {
		if (!parse_uint(v, vlen, &u) || u > 1)
			return false;
		ht_opt_follow_fork = u;
	} else if (key_is(k, klen, "root_pid")) {
		if (!parse_uint(v, vlen, &u) || u == 0)
			return false;
		root_pid = u;
	} else if (key_is(k, klen, "compress")) {
		if (vlen == 4 && !ht_strncmp(v, "auto", 4))
			ht_opt_compress = HT_COMPRESS_AUTO;
		else if (parse_uint(v, vlen, &u) && u <= HT_COMPRESS_STRONG)
			ht_opt_compress = (unsigned)u;
		else
			return false;
	} else if (key_is(k, klen, "functions")) {
		if (!parse_uint(v, vlen, &u) || u > 1)
			return false;
		ht_opt_functions = u;
	} else if (key_is(k, klen, "stacks")) {
		if (vlen == 6 && !ht_strncmp(v, "shadow", 6))
			ht_opt_stacks_shadow = true;
		else if (vlen == 6 && !ht_strncmp(v, "unwind", 6))
			ht_opt_stacks_shadow = false;
		else
			return false;
	} else if (key_is(k, klen, "start")) {
		if (vlen == 3 && !ht_strncmp(v, "off", 3))
			ht_opt_start_off = true;
		else if (vlen == 2 && !ht_strncmp(v, "on", 2))
			ht_opt_start_off = false;
		else
			return false;
	} else if (key_is(k, klen, "snapshot_signal")) {
		/* SIGKILL and SIGSTOP cannot be caught */
		if (!parse_uint(v, vlen, &u) || u < 1 || u > 64 || u == SIGKILL || u == SIGSTOP)
			return false;
		ht_opt_snapshot_signal = (int)u;
	} else if (key_is(k, klen, "leak_check")) {
		if (!parse_uint(v, vlen, &u) || u > 1)
			return false;
		ht_opt_leak_check = u;
		leak_check_set = true;
	} else if (key_is(k, klen, "own_pack")) {
		if (!parse_uint(v, vlen, &u) || u > 1)
			return false;
		ht_opt_own_pack = u;
	} else if (key_is(k, klen, "mmap")) {
		if (!parse_uint(v, vlen, &u) || u > 1)
			return false;
		ht_opt_mmap = u;
	} else if (key_is(k, klen, "free_stacks")) {
		if (!parse_uint(v, vlen, &u) || u > 1)
			return false;
		ht_opt_free_stacks = u;
	} else if (key_is(k, klen, "summary")) {
		if (!parse_uint(v, vlen, &u) || u > 1)
			return false;
		ht_opt_summary = u;
	} else if (key_is(k, klen, "summary_sites")) {
		if (!parse_uint(v, vlen, &u) || u < 1 || u > 10000000)
			return false;
		ht_opt_summary_sites = (unsigned)u;
		summary_sites_set = true;
	} else if (key_is(k, klen, "leak_signal")) {
		if (!parse_uint(v, vlen, &u) || u > 64 || u == SIGKILL || u == SIGSTOP)
			return false;
		ht_opt_leak_signal = (int)u; /* 0: none */
	} else if (key_is(k, klen, "break")) {
		if (!ht_break_parse(v, vlen))
			return false;
	} else if (key_is(k, klen, "break_traced")) {
		if (vlen != 1 || (v[0] != '0' && v[0] != '1'))
			return false;
		ht_break_traced_only = v[0] == '1';
	} else if (key_is(k, klen, "sample_rate")) {
		if (!parse_uint(v, vlen, &u))
			return false;
		ht_opt_sample_rate = u;
	} else if (key_is(k, klen, "sample_seed")) {
		if (!parse_uint(v, vlen, &u))
			return false;
		ht_opt_sample_seed = u;
		ht_opt_sample_seed_set = true;
	} else if (key_is(k, klen, "enabled")) {
		if (!parse_uint(v, vlen, &u) || u > 1)
			return false;
		ht_opt_enabled = u;
	} else {
		return false;
	}
	return true;
}

/* path made absolute against the working directory now, in place; false
 * when it cannot be (no working directory, too long). A pattern's '%' in
 * the directory is doubled. getcwd by the system call, into the stack. */
static bool make_absolute(char *path, size_t cap, bool pattern)
{
	if (path[0] == '/')
		return true;
	char cwd[4096], out[4096];
	long r = syscall(SYS_getcwd, cwd, sizeof cwd);
	if (r <= 1 || cwd[0] != '/') /* "(unreachable)/...": outside our root */
		return false;
	size_t n = 0;
	for (const char *c = cwd; *c; c++) {
		if (n + 3 > sizeof out)
			return false;
		if (pattern && *c == '%')
			out[n++] = '%';
		out[n++] = *c;
	}
	if (n > 1)
		out[n++] = '/';
	out[n] = 0;
	if (ht_append_str(out, n, sizeof out, path) + 1 >= sizeof out ||
	    ht_strlen(out) + 1 > cap)
		return false;
	ht_strlcpy(path, out, cap);
	return true;
}

/* HEAPTRAIL_OPTIONS with the output made absolute, for the images this
 * process execs (the entry's pointer is replaced, nothing allocated). */
static char output_entry[sizeof "HEAPTRAIL_OPTIONS=" + 8192 + sizeof ",output=" + 4096];

/* A relative output= (or the default name) is relative to the directory
 * the process starts in, once: a child forked or an image exec'd after a
 * chdir writes beside its parent's trace. */
static void output_absolute(void)
{
	bool relative = ht_opt_output[0] != '/';
	if (!make_absolute(ht_opt_output, sizeof ht_opt_output, true))
		return;
	if (ht_opt_manifest[0])
		make_absolute(ht_opt_manifest, sizeof ht_opt_manifest, false);
	if (!relative)
		return;
	for (const char *c = ht_opt_output; *c; c++)
		if (*c == ',')
			return; /* cannot be an option's value */
	static const char key[] = "HEAPTRAIL_OPTIONS=";
	for (char **e = environ; e && *e; e++) {
		if (ht_strncmp(*e, key, sizeof key - 1))
			continue;
		size_t len = ht_strlcpy(output_entry, *e, sizeof output_entry);
		len = ht_append_str(output_entry, len, sizeof output_entry, ",output=");
		len = ht_append_str(output_entry, len, sizeof output_entry, ht_opt_output);
		if (len + 1 < sizeof output_entry)
			*e = output_entry;
		break;
	}
}

void ht_options_parse(void)
{
	const char *s = ht_attach_options ? ht_attach_options : env_value("HEAPTRAIL_OPTIONS");
	if (!s) {
		output_absolute();
		return;
	}
	while (*s) {
		const char *end = s;
		while (*end && *end != ',')
			end++;
		const char *eq = s;
		while (eq < end && *eq != '=')
			eq++;
		if (end > s) {
			char item[128];
			copy_value(item, sizeof item, s, (size_t)(end - s));
			if (eq == end)
				ht_log("ignoring option without '=': ", item);
			else if (!set_option(s, (size_t)(eq - s), eq + 1,
					     (size_t)(end - eq - 1)))
				ht_log("ignoring bad option: ", item);
		}
		s = *end ? end + 1 : end;
	}
	/* A sampled run is for production: the scan at exit reads all of the
	 * program's memory to classify the few sampled blocks. Ask for it. */
	if (ht_opt_sample_rate && !leak_check_set)
		ht_opt_leak_check = false;
	if (summary_sites_set && !ht_opt_summary)
		ht_log("summary_sites without summary=1: ignored", NULL);
	if (ht_opt_summary && ht_opt_sample_rate) {
		/* summary rows count what they see: they would need the weights */
		ht_log("summary=1 records every allocation: sample_rate ignored", NULL);
		ht_opt_sample_rate = 0;
	}
	output_absolute();
}

/* follow_fork=0 must also leave untraced the children that never run the
 * agent's fork handler: posix_spawn, system and popen (glibc clones and
 * execs inside libc), vfork then exec, or an exec given a copy of the
 * environment taken before the fork. Only the new image can tell, so the
 * first traced image appends root_pid=PID to HEAPTRAIL_OPTIONS in its own
 * environment (the entry's pointer is replaced, nothing allocated: the
 * string lives here), and an image of another pid is a descendant. An exec
 * keeps the pid, so the traced process's own new image is still traced. */
static char root_entry[sizeof output_entry + 32];

bool ht_options_untraced_child(void)
{
	if (ht_opt_follow_fork)
		return false;
	pid_t self = getpid();
	if (root_pid)
		return root_pid != (unsigned long)self;
	static const char key[] = "HEAPTRAIL_OPTIONS=";
	for (char **e = environ; e && *e; e++) {
		if (ht_strncmp(*e, key, sizeof key - 1))
			continue;
		size_t len = ht_strlcpy(root_entry, *e, sizeof root_entry);
		len = ht_append_str(root_entry, len, sizeof root_entry, ",root_pid=");
		len = ht_append_u64(root_entry, len, sizeof root_entry, (uint64_t)self);
		if (len + 1 >= sizeof root_entry) {
			ht_log("HEAPTRAIL_OPTIONS too long: follow_fork=0 covers forked children only", NULL);
			return false;
		}
		*e = root_entry;
		break;
	}
	return false;
}
