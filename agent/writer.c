/* writer.c - the trace file: creation, compression, records.
 *
 * One writer per process, guarded by ht_writer_lock (taken per shipped
 * thread buffer or per module change, never per event). zstd runs on a
 * static context in an mmap'd workspace, so it never calls malloc.
 *
 * Compression has two settings (compress=1 and 2), which compress=auto,
 * the default, switches between (see "the compression level" below):
 * FAST is zstd's level 1 with larger match tables (a 2 MiB window, 2^17
 * hash entries instead of 512 KiB and 2^14): gcc's cc1 trace is a fifth
 * smaller than level 1's, sqlite3's 7%, churn's 1.5%. STRONG is zstd's
 * greedy search (level 5's tables, 32 candidates per match instead of 8):
 * traces of deep stacks 39% smaller than FAST's, sqlite3's 37%, cc1's 12%,
 * python3's 14%, for 2-5x zstd's time per byte.
 *
 * Files are created with O_CREAT|O_EXCL|O_NOFOLLOW and mode 0600: never
 * through a symlink, never over an existing file (a numeric suffix is added
 * instead), never readable by other users. A directory gets a file inside,
 * a character device (/dev/null) is written to as it is (create_exclusive).
 */
#define ZSTD_STATIC_LINKING_ONLY
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "agent.h"
#include "columns.h"
#include "live.h"

ht_lock_t ht_writer_lock;

#define HT_ZSTD_WINDOW_LOG 21
#define HT_ZSTD_HASH_LOG 17

static int out_fd = -1;
/* out_fd as the program's descriptor hooks see it (agent/descriptors.c):
 * the number they keep the program from closing or replacing. */
_Atomic int ht_trace_fd = -1;
static ZSTD_CStream *zcs;
static void *zws;
static size_t zws_size;
static uint8_t *outbuf;
static size_t outcap, outlen;
static bool frame_open;
static bool unflushed; /* bytes fed since the last flush */
static bool write_failed;

/* The file we opened, to notice a program that closed our descriptor (a
 * daemon closing every fd by a raw system call no hook sees) and maybe
 * reused its number for its own file: we never write into that, but open
 * the file again by its absolute path and go on at the end of what was
 * written (out_end), losing nothing. */
static dev_t out_dev;
static ino_t out_ino;
static bool out_regular;    /* else a character device (output=/dev/null) */
static uint64_t out_end;    /* bytes written to the file */
static char out_abs[4096 + 16]; /* its absolute path, to open it again */

bool ht_writer_fd_is_trace(int fd)
{
	struct stat st;
	return fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == out_dev && st.st_ino == out_ino;
}

static bool fd_is_ours(void)
{
	return ht_writer_fd_is_trace(out_fd);
}

static void set_out_fd(int fd)
{
	out_fd = fd;
	atomic_store_explicit(&ht_trace_fd, fd, memory_order_release);
}

void ht_writer_move_fd(int fd)
{
	ht_lock(&ht_writer_lock);
	if (out_fd == fd && fd >= 0 && fd_is_ours()) {
		int moved = fcntl(fd, F_DUPFD_CLOEXEC, fd + 1);
		if (moved >= 0)
			set_out_fd(moved);
	}
	ht_unlock(&ht_writer_lock);
}

/* The program closed the trace's descriptor by a system call (or its
 * number now names the program's file): the trace is opened again, by
 * path, at its end. The old number is the program's now and is left
 * alone. False when the path no longer names the file we created. */
static bool reopen_trace(void)
{
	if (!out_abs[0])
		return false;
	int fd = (int)syscall(SYS_openat, AT_FDCWD, out_abs,
			      O_WRONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return false;
	struct stat st;
	if (fstat(fd, &st) != 0 || st.st_dev != out_dev || st.st_ino != out_ino ||
	    (out_regular && lseek(fd, (off_t)out_end, SEEK_SET) != (off_t)out_end)) {
		syscall(SYS_close, fd);
		return false;
	}
	set_out_fd(ht_fd_move_high(fd));
	return true;
}

/* Why a call failed, by hand: strerror may allocate. */
static const char *errno_text(int e)
{
	static const struct {
		int err;
		const char *text;
	} why[] = { { ENOENT, "No such file or directory" },
		    { ENOTDIR, "Not a directory" },
		    { EACCES, "Permission denied" },
		    { EPERM, "Operation not permitted" },
		    { EROFS, "Read-only file system" },
		    { ENOSPC, "No space left on device" },
		    { EDQUOT, "Disk quota exceeded" },
		    { EFBIG, "File too large" },
		    { EIO, "Input/output error" },
		    { EBADF, "Bad file descriptor" },
		    { EISDIR, "Is a directory" },
		    { EMFILE, "Too many open files" },
		    { ENAMETOOLONG, "File name too long" },
		    { ELOOP, "a symbolic link is in the way" },
		    { EEXIST, "1000 files of that name exist" } };
	for (size_t i = 0; i < sizeof why / sizeof why[0]; i++)
		if (why[i].err == e)
			return why[i].text;
	return NULL;
}

/* "what PATH: why; recording stops" on stderr. */
static void log_write_failure(const char *what, const char *why)
{
	char msg[4096 + 160];
	size_t k = ht_append_str(msg, 0, sizeof msg, out_abs);
	k = ht_append_str(msg, k, sizeof msg, ": ");
	k = ht_append_str(msg, k, sizeof msg, why ? why : "error");
	ht_append_str(msg, k, sizeof msg, "; recording stops");
	ht_log(what, msg);
}

static void write_all(const uint8_t *p, size_t n)
{
	if (!n || write_failed)
		return;
	/* A child made by a raw clone() (no fork handlers ran) shares our
	 * descriptor and offset: it must not write into the parent's file. */
	if (getpid() != ht_pid) {
		write_failed = true;
		return;
	}
	if (!fd_is_ours() && !reopen_trace()) {
		write_failed = true;
		log_write_failure("the program closed the trace file and it cannot be opened again: ",
				  "the path names another file now");
		return;
	}
	unsigned reopens = 0;
	while (n) {
		/* the system call, not glibc's write: a cancellation point,
		 * and a program's pthread_cancel must not act inside malloc */
		ssize_t w = syscall(SYS_write, out_fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		/* closed between the check and the write: nothing was written */
		if (w < 0 && errno == EBADF && reopens++ < 3 && reopen_trace())
			continue;
		if (w <= 0) {
			/* Disk full or similar: stop writing, keep the program
			 * running. What was written stays readable. */
			write_failed = true;
			const char *why = w < 0 ? errno_text(errno) : "nothing written";
			log_write_failure(out_end ? "cannot write the trace file "
						  : "cannot write the trace file's header: ",
					  why ? why : "error");
			return;
		}
		p += w;
		n -= (size_t)w;
		out_end += (uint64_t)w;
	}
}

static void drain_out(void)
{
	if (outlen) {
		write_all(outbuf, outlen);
		outlen = 0;
	}
}

/* ---- the compression level -------------------------------------------------
 * compress=auto starts each trace STRONG and looks again after every
 * HT_SEGMENT bytes of records, at the record boundary that follows: the
 * writer thread goes FAST when it was busy more than 90% of the segment's
 * time, or when producers had to do a helper's work themselves (a queue
 * full, or no helper thread: the program's threads then digest or run
 * zstd, and the process is short of CPU); it goes back
 * to STRONG when its busy time plus twice its time in zstd and writing
 * (about what STRONG would add) stays under 75%. A single-threaded zstd cannot change its
 * parameters inside a frame, so a change ends the frame and the next one
 * starts with the new ones (the reader decodes frames one after another).
 * So a program that allocates faster than the writer can compress
 * strongly (churn, threads, realloc: each event costs the writer more than
 * the program) keeps FAST's speed, and one whose writer has time to spare
 * (deep stacks, sqlite3, cc1) gets the smaller trace. */
/* One full batch: a program that keeps the writer busy pays STRONG's extra
 * time for its first batch only (~30 ms of zstd for realloc's). */
#define HT_SEGMENT ((uint64_t)2 << 20)

static unsigned level_now; /* HT_COMPRESS_FAST or _STRONG: the frame's */
/* A trace's first frame compresses with small tables: zstd clears its
 * tables at each frame's start, and STRONG's 3 MiB (FAST's 512 KiB) of
 * them cost a short-lived process about 1.5 ms of page faults, which a
 * shell script of a hundred commands pays a hundred times. Tables larger
 * than the data find nothing more: past HT_SMALL_FRAME bytes the frame
 * ends and the next has the level's own. */
#define HT_SMALL_TABLES_LOG 14
#define HT_SMALL_FRAME ((uint64_t)256 << 10)
static bool tables_small;
static uint64_t small_in; /* bytes fed into the small-table frame */
static struct {
	uint64_t start, in, zstd_ns, idle_ns, self_writes;
} seg;

/* A program thread's own frame under compress=auto (agent/packer.c):
 * zstd's level 3 (a double hash, FAST's window and tables). A frame per
 * batch starts with an empty window, where the writer's one stream had
 * the previous batch: at FAST, mailbox's trace was ~0.5% larger than the
 * writer's; level 3 makes it ~1% smaller than that, for ~6% more zstd
 * instructions (~20 a recorded event). */
#define HT_COMPRESS_OWN_FRAME 4

static ZSTD_compressionParameters zstd_params(unsigned level)
{
	if (level == HT_COMPRESS_OWN_FRAME) {
		ZSTD_compressionParameters cp = ZSTD_getCParams(3, 0, 0);
		cp.windowLog = HT_ZSTD_WINDOW_LOG;
		cp.hashLog = HT_ZSTD_HASH_LOG;
		return cp;
	}
	if (level == HT_COMPRESS_STRONG)
		return (ZSTD_compressionParameters){.windowLog = HT_ZSTD_WINDOW_LOG,
						    .chainLog = 18,
						    .hashLog = 19,
						    .searchLog = 5,
						    .minMatch = 5,
						    .targetLength = 2,
						    .strategy = ZSTD_greedy};
	ZSTD_compressionParameters cp = ZSTD_getCParams(1, 0, 0);
	cp.windowLog = HT_ZSTD_WINDOW_LOG;
	cp.hashLog = HT_ZSTD_HASH_LOG;
	return cp;
}

static void cctx_configure(ZSTD_CCtx *c, ZSTD_compressionParameters cp)
{
	ZSTD_CCtx_setParameter(c, ZSTD_c_windowLog, (int)cp.windowLog);
	ZSTD_CCtx_setParameter(c, ZSTD_c_chainLog, (int)cp.chainLog);
	ZSTD_CCtx_setParameter(c, ZSTD_c_hashLog, (int)cp.hashLog);
	ZSTD_CCtx_setParameter(c, ZSTD_c_searchLog, (int)cp.searchLog);
	ZSTD_CCtx_setParameter(c, ZSTD_c_minMatch, (int)cp.minMatch);
	ZSTD_CCtx_setParameter(c, ZSTD_c_targetLength, (int)cp.targetLength);
	ZSTD_CCtx_setParameter(c, ZSTD_c_strategy, (int)cp.strategy);
	/* a checksum per frame: a damaged byte is then reported by the
	 * reader, not read as other figures (4 bytes a frame) */
	ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
}

static void zstd_configure(unsigned level)
{
	ZSTD_compressionParameters cp = zstd_params(level);
	if (tables_small) {
		if (cp.hashLog > HT_SMALL_TABLES_LOG)
			cp.hashLog = HT_SMALL_TABLES_LOG;
		if (cp.chainLog > HT_SMALL_TABLES_LOG)
			cp.chainLog = HT_SMALL_TABLES_LOG;
	}
	cctx_configure(zcs, cp);
	level_now = level;
}

void ht_writer_zstd_configure(ZSTD_CCtx *c, unsigned level)
{
	cctx_configure(c, zstd_params(level));
}

size_t ht_writer_cstream_size(void)
{
	size_t size = 0;
	const unsigned levels[] = {HT_COMPRESS_FAST, HT_COMPRESS_STRONG, HT_COMPRESS_OWN_FRAME};
	for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++) {
		size_t k = ZSTD_estimateCStreamSize_usingCParams(zstd_params(levels[i]));
		size = k > size ? k : size;
	}
	return size;
}

static void segment_start(void)
{
	seg.start = ht_clock_ns();
	seg.in = seg.zstd_ns = 0;
	seg.idle_ns = ht_flusher_idle_ns();
	seg.self_writes = ht_flusher_self_writes();
}

static void zstd_finish(ZSTD_EndDirective how);
static void level_check(void);

/* At a record boundary: the level for what follows (compress=auto). */
static void segment_check(void)
{
	if (tables_small && zcs && small_in >= HT_SMALL_FRAME) {
		zstd_finish(ZSTD_e_end);
		tables_small = false;
		zstd_configure(level_now);
	}
	level_check();
}

/* compress=auto: the level for what follows, once a segment is done. */
static void level_check(void)
{
	if (ht_opt_compress != HT_COMPRESS_AUTO || !zcs || seg.in < HT_SEGMENT)
		return;
	uint64_t wall = ht_clock_ns() - seg.start;
	uint64_t idle = ht_flusher_idle_ns() - seg.idle_ns;
	uint64_t busy = wall > idle ? wall - idle : 0;
	unsigned want = level_now;
	if (ht_flusher_self_writes() != seg.self_writes || busy * 10 > wall * 9)
		want = HT_COMPRESS_FAST;
	else if ((busy + 2 * seg.zstd_ns) * 4 < wall * 3)
		want = HT_COMPRESS_STRONG;
	if (want != level_now) {
		zstd_finish(ZSTD_e_end);
		zstd_configure(want);
	}
	segment_start();
}

bool ht_writer_frame_level(unsigned *level)
{
	if (ht_opt_compress == HT_COMPRESS_RAW || !zcs)
		return false;
	/* A program thread packing its own blocks compresses at level 3
	 * (HT_COMPRESS_OWN_FRAME) unless told otherwise: it pays for STRONG
	 * in its own time. The writer's lock holder (the writer thread, or a
	 * producer doing its work) goes by the writer's level, which
	 * compress=auto sets. */
	*level = ht_opt_compress == HT_COMPRESS_STRONG ? HT_COMPRESS_STRONG
		 : ht_opt_compress == HT_COMPRESS_FAST	 ? HT_COMPRESS_FAST
		 : ht_lock_held(&ht_writer_lock)	 ? level_now
							 : HT_COMPRESS_OWN_FRAME;
	return true;
}

void ht_writer_frame_done(uint64_t in, uint64_t zstd_ns)
{
	if (!ht_lock_held(&ht_writer_lock))
		return;
	seg.in += in;
	seg.zstd_ns += zstd_ns;
	level_check();
}

/* Feeds n bytes of record data to the compressor (or the raw buffer). */
static void feed(const void *data, size_t n)
{
	if (out_fd < 0 || write_failed)
		return;
	if (!zcs) {
		const uint8_t *p = data;
		while (n) {
			size_t k = outcap - outlen < n ? outcap - outlen : n;
			memcpy(outbuf + outlen, p, k);
			outlen += k;
			p += k;
			n -= k;
			if (outlen == outcap)
				drain_out();
		}
		return;
	}
	unflushed = true;
	ZSTD_inBuffer in = {data, n, 0};
	frame_open = true;
	uint64_t t0 = ht_clock_ns();
	seg.in += n;
	small_in += n;
	while (in.pos < in.size) {
		ZSTD_outBuffer out = {outbuf, outcap, outlen};
		size_t r = ZSTD_compressStream2(zcs, &out, &in, ZSTD_e_continue);
		outlen = out.pos;
		if (ZSTD_isError(r)) {
			write_failed = true;
			ht_log("compression failed: ", ZSTD_getErrorName(r));
			return;
		}
		if (outlen == outcap)
			drain_out();
	}
	seg.zstd_ns += ht_clock_ns() - t0;
	if (outlen > outcap / 2)
		drain_out();
}

/* A record of nparts pieces. */
static void record_parts(uint8_t tag, const void *const *part, const size_t *len, size_t nparts)
{
	size_t total = 0;
	for (size_t i = 0; i < nparts; i++)
		total += len[i];
	segment_check();
	uint8_t hdr[1 + HT_VARINT_MAX];
	size_t n = 0;
	hdr[n++] = tag;
	n += ht_varint_put(hdr + n, total);
	feed(hdr, n);
	for (size_t i = 0; i < nparts; i++)
		if (len[i])
			feed(part[i], len[i]);
}

void ht_writer_recordv(uint8_t tag, const void *const *part, const size_t *len, size_t nparts)
{
	/* the packers' batches hold older events: they go first, so that a
	 * trace's last records are its last */
	if (tag == HT_REC_EXEC || tag == HT_REC_END)
		ht_packers_emit_locked(0);
	record_parts(tag, part, len, nparts);
}

void ht_writer_record2(uint8_t tag, const void *head, size_t head_len,
		       const void *body, size_t body_len)
{
	const void *part[2] = {head, body};
	const size_t len[2] = {head_len, body_len};
	ht_writer_recordv(tag, part, len, 2);
}

bool ht_writer_dirty(void)
{
	return unflushed || outlen;
}

void ht_writer_record(uint8_t tag, const void *payload, size_t len)
{
	ht_writer_record2(tag, payload, len, NULL, 0);
}

/* Ends the frame (ZSTD_e_end) or makes what was fed decodable
 * (ZSTD_e_flush), and writes it out. */
static void zstd_finish(ZSTD_EndDirective how)
{
	if (zcs && frame_open && !write_failed) {
		ZSTD_inBuffer in = {NULL, 0, 0};
		size_t left;
		do {
			ZSTD_outBuffer out = {outbuf, outcap, outlen};
			left = ZSTD_compressStream2(zcs, &out, &in, how);
			outlen = out.pos;
			if (ZSTD_isError(left))
				break;
			drain_out();
		} while (left);
		if (how == ZSTD_e_end)
			frame_open = false;
	}
	unflushed = false;
	drain_out();
}

void ht_writer_flush(bool end_frame)
{
	if (out_fd < 0)
		return;
	ht_packers_emit_locked(0);
	zstd_finish(end_frame ? ZSTD_e_end : ZSTD_e_flush);
}

void ht_writer_put_frame(const uint8_t *data, size_t n)
{
	if (out_fd < 0 || write_failed)
		return;
	/* whole frames only: the writer's own ends first */
	if (zcs && frame_open)
		zstd_finish(ZSTD_e_end);
	drain_out();
	write_all(data, n);
}

/* ---- reading /proc without stdio ------------------------------------------ */

uint64_t ht_read_rss(void)
{
	char buf[128];
	if (ht_read_proc("statm", buf, sizeof buf) <= 0)
		return 0;
	const char *p = buf;
	while (*p && *p != ' ')
		p++;
	uint64_t pages = 0;
	while (*p == ' ')
		p++;
	while (*p >= '0' && *p <= '9')
		pages = pages * 10 + (uint64_t)(*p++ - '0');
	return pages * (uint64_t)sysconf(_SC_PAGESIZE);
}

static uint64_t read_peak_rss(void)
{
	static char buf[4096];
	if (ht_read_proc("status", buf, sizeof buf) <= 0)
		return 0;
	for (const char *p = buf; *p; p++) {
		if ((p == buf || p[-1] == '\n') && !ht_strncmp(p, "VmHWM:", 6)) {
			p += 6;
			while (*p == ' ' || *p == '\t')
				p++;
			uint64_t kb = 0;
			while (*p >= '0' && *p <= '9')
				kb = kb * 10 + (uint64_t)(*p++ - '0');
			return kb * 1024;
		}
	}
	return 0;
}

/* ---- opening --------------------------------------------------------------- */

/* basename of the running executable, for %n */
static void program_name(char *out, size_t cap)
{
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	exe[n > 0 ? n : 0] = 0;
	const char *base = exe;
	for (const char *p = exe; *p; p++)
		if (*p == '/')
			base = p + 1;
	ht_strlcpy(out, *base ? base : "program", cap);
}

static size_t expand_output(const char *pattern, char *out, size_t cap)
{
	char name[256];
	program_name(name, sizeof name);
	size_t n = 0;
	out[0] = 0;
	for (const char *p = pattern; *p; p++) {
		if (p[0] == '%' && p[1] == 'p') {
			n = ht_append_u64(out, n, cap, (uint64_t)ht_pid);
			p++;
		} else if (p[0] == '%' && p[1] == 'n') {
			n = ht_append_str(out, n, cap, name);
			p++;
		} else if (p[0] == '%' && p[1] == '%') {
			n = ht_append_str(out, n, cap, "%");
			p++;
		} else if (n + 1 < cap) {
			out[n++] = *p;
			out[n] = 0;
		}
	}
	return n;
}

/* Why create_exclusive failed when errno cannot say it. */
static const char *create_why;

/* Opens the trace at path (cap bytes, for a suffix or a name):
 * - a new file: created with O_EXCL, never through a symbolic link;
 * - an existing file: never overwritten, ".1", ".2"... are added;
 * - a directory (or a path ending in '/'): a file of the default name
 *   inside it;
 * - a character device named directly (/dev/null, to discard the trace):
 *   written to as it is;
 * - a FIFO, a socket or a block device: refused. */
static int create_exclusive(char *path, size_t cap)
{
	struct stat st;
	size_t base = ht_strlen(path);
	if ((base && path[base - 1] == '/') || (stat(path, &st) == 0 && S_ISDIR(st.st_mode))) {
		if (!base || path[base - 1] != '/')
			base = ht_append_str(path, base, cap, "/");
		char name[4096];
		expand_output(HT_DEFAULT_OUTPUT, name, sizeof name);
		base = ht_append_str(path, base, cap, name);
	}
	create_why = NULL;
	for (unsigned i = 0; i < 1000; i++) {
		if (i) {
			size_t n = ht_append_str(path, base, cap, ".");
			ht_append_u64(path, n, cap, i);
		}
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			      0600);
		if (fd >= 0) {
			/* the program's umask (0777 before a fork or an
			 * exec) must not leave its owner a file it cannot read */
			fchmod(fd, 0600);
			return fd;
		}
		if (errno != EEXIST)
			return -1;
		if (i || lstat(path, &st) != 0 || S_ISREG(st.st_mode))
			continue;
		if (S_ISLNK(st.st_mode)) {
			/* never followed: a link to a file gets a suffix like
			 * the file; to a device it is refused (/dev/stdout) */
			if (stat(path, &st) != 0 || S_ISREG(st.st_mode))
				continue;
			create_why = "a symbolic link to a device or FIFO (name the device itself)";
			errno = EINVAL;
			return -1;
		}
		if (S_ISCHR(st.st_mode))
			return open(path, O_WRONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
		create_why = S_ISDIR(st.st_mode) ? "Is a directory" :
			     S_ISFIFO(st.st_mode) ? "a FIFO: give a regular file, a directory or a character device" :
			     S_ISBLK(st.st_mode) ? "a block device: give a regular file, a directory or a character device" :
			     "not a regular file, a directory or a character device";
		errno = EINVAL;
		return -1;
	}
	errno = EEXIST;
	return -1;
}

/* The path of the open trace, for the manifest's END line. */
static char out_path[4096 + 16];

/* heaptrail run's manifest, kept open from the first line on: a fork child
 * inherits the descriptor, so a child whose trace took its last free
 * descriptor (a program that lowered RLIMIT_NOFILE) still lists it. Moved
 * high and close-on-exec like the trace's (an exec'd image opens its own);
 * when it cannot be moved high it would take a number the program counts
 * on, and is opened for each line instead. A descriptor the program closed
 * (a daemon closing every one) and maybe reused is never written to, nor
 * closed: the path is opened again. */
static _Atomic int man_fd = -1;
static uint64_t man_dev, man_ino;
static bool man_id_known;

/* The manifest's identity: given by heaptrail run (manifest_run), else the
 * first file opened. */
static bool man_is(const struct stat *st)
{
	if (ht_opt_manifest_run[0])
		return (uint64_t)st->st_dev == ht_opt_manifest_run[2] &&
		       (uint64_t)st->st_ino == ht_opt_manifest_run[3];
	if (!man_id_known) {
		man_dev = (uint64_t)st->st_dev;
		man_ino = (uint64_t)st->st_ino;
		man_id_known = true;
	}
	return (uint64_t)st->st_dev == man_dev && (uint64_t)st->st_ino == man_ino;
}

/* A descriptor of the manifest, or -1 with errno set; *transient: the
 * caller closes it after writing. */
static int manifest_fd(bool *transient)
{
	*transient = false;
	int held = atomic_load(&man_fd);
	struct stat st;
	if (held >= 0 && fstat(held, &st) == 0 && man_is(&st))
		return held;
	/* No O_NOFOLLOW: heaptrail run names its descriptor's /proc link, and
	 * no file is created, only one that exists appended to. */
	int fd = (int)syscall(SYS_openat, AT_FDCWD, ht_opt_manifest, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0 || !man_is(&st)) {
		/* not this run's (its pid reused by another process) */
		syscall(SYS_close, fd);
		errno = ESTALE;
		return -1;
	}
	int high = ht_fd_move_high(fd);
	if (high == fd) {
		*transient = true;
		return fd;
	}
	if (!atomic_compare_exchange_strong(&man_fd, &held, high)) {
		/* another thread opened one meanwhile */
		syscall(SYS_close, high);
		return held;
	}
	return high;
}

/* An opening (or error) line that could not be written: written before the
 * next line of this process that can be. */
static char man_pending[4096 + 4096 + 32];
static pid_t man_pending_pid;

/* Tells heaptrail run that a trace of this process is missing from the
 * manifest (what 0) or was added after all (1): it then says its list may
 * be incomplete. Only to the process that holds the manifest, checked by
 * the path's identity (no descriptor needed), so that no other process
 * that got run's pid is signalled. */
static void manifest_notify(int what)
{
	const uint64_t *r = ht_opt_manifest_run;
	struct stat st;
	if (!r[0] || stat(ht_opt_manifest, &st) != 0 || !man_is(&st))
		return;
	sigqueue((pid_t)r[0], (int)r[1], (union sigval){ .sival_int = what });
}

static bool write_line(int fd, const char *line, size_t n)
{
	return syscall(SYS_write, fd, line, n) == (long)n;
}

/* Appends "pid<TAB>path[<TAB>tail]" to the manifest (heaptrail run's side
 * channel: which traces exist, and the totals of each at its end).
 * essential: the line that lists the trace (or says it could not be
 * created); when it cannot be written the user and heaptrail run are told,
 * and it is tried again with the next line. The others can be lost: run
 * reads what it needs from the trace instead. */
static void append_manifest(const char *path, const char *tail, bool essential)
{
	if (!ht_opt_manifest[0])
		return;
	int e = errno;
	char line[4096 + 4096 + 32];
	size_t n = ht_append_u64(line, 0, sizeof line, (uint64_t)ht_pid);
	n = ht_append_str(line, n, sizeof line, "\t");
	if (path[0] != '/') {
		char cwd[4096];
		if (getcwd(cwd, sizeof cwd)) {
			n = ht_append_str(line, n, sizeof line, cwd);
			n = ht_append_str(line, n, sizeof line, "/");
		}
	}
	n = ht_append_str(line, n, sizeof line, path);
	if (tail) {
		n = ht_append_str(line, n, sizeof line, "\t");
		n = ht_append_str(line, n, sizeof line, tail);
	}
	n = ht_append_str(line, n, sizeof line, "\n");
	bool transient;
	int fd = manifest_fd(&transient);
	bool pending = man_pending[0] && man_pending_pid == ht_pid;
	if (fd >= 0 && pending && write_line(fd, man_pending, ht_strlen(man_pending))) {
		man_pending[0] = 0;
		manifest_notify(1);
		ht_log("the trace is listed for heaptrail run after all: ", path);
	}
	bool ok = fd >= 0 && write_line(fd, line, n);
	int why = fd < 0 ? errno : ok ? 0 : EIO;
	if (transient)
		syscall(SYS_close, fd);
	if (!ok && essential && !man_pending[0]) {
		ht_strlcpy(man_pending, line, sizeof man_pending);
		man_pending_pid = ht_pid;
		char msg[4096 + 64];
		size_t k = ht_append_str(msg, 0, sizeof msg, path);
		k = ht_append_str(msg, k, sizeof msg,
				  why == EMFILE	? " (too many open files)"
				  : why == ENOENT || why == ESTALE ? " (heaptrail run has ended)"
								     : " (the list cannot be opened)");
		ht_log("cannot list this trace for heaptrail run, whose summary may miss it: ", msg);
		manifest_notify(0);
	}
	errno = e;
}

static void note_field(const char *key, const char *value);

static void put_string(uint8_t *rec, size_t *n, size_t cap, const char *s, size_t len)
{
	if (*n + HT_VARINT_MAX + len > cap)
		len = 0;
	*n += ht_varint_put(rec + *n, len);
	memcpy(rec + *n, s, len);
	*n += len;
}

static void write_process_record(bool forked)
{
	static uint8_t rec[40000];
	static char cmdline[32768];
	size_t n = 0, cap = sizeof rec - HT_VARINT_MAX; /* room for sample_rate */
	n += ht_varint_put(rec + n, HT_FORMAT_MAJOR);
	n += ht_varint_put(rec + n, HT_FORMAT_MINOR);
	put_string(rec, &n, cap, HT_VERSION, ht_strlen(HT_VERSION));
	n += ht_varint_put(rec + n, (uint64_t)ht_pid);
	n += ht_varint_put(rec + n, (uint64_t)getppid());
	struct timespec rt;
	clock_gettime(CLOCK_REALTIME, &rt);
	n += ht_varint_put(rec + n, (uint64_t)rt.tv_sec * 1000000000ull + (uint64_t)rt.tv_nsec);
	n += ht_varint_put(rec + n, ht_start_mono_ns);
	n += ht_varint_put(rec + n, (uint64_t)sysconf(_SC_PAGESIZE));
	unsigned flags = (forked ? HT_PROC_FORKED : 0) | (ht_opt_unwind_fp ? HT_PROC_UNWIND_FP : 0) |
			 (ht_opt_functions ? HT_PROC_FUNCTIONS : 0) |
			 (ht_opt_functions && ht_opt_stacks_shadow ? HT_PROC_STACKS_SHADOW : 0) |
			 (ht_opt_start_off ? HT_PROC_START_OFF : 0) |
			 (ht_opt_summary ? HT_PROC_SUMMARY : 0) |
			 (ht_opt_sample_rate ? HT_PROC_SAMPLED : 0) |
			 (ht_attaching ? HT_PROC_ATTACHED : 0);
	n += ht_varint_put(rec + n, flags);
	n += ht_varint_put(rec + n, ht_opt_depth);
	char exe[4096];
	ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 1);
	put_string(rec, &n, cap, exe, el > 0 ? (size_t)el : 0);
	long cl = ht_read_file("/proc/self/cmdline", cmdline, sizeof cmdline);
	uint64_t argc = 0;
	for (long i = 0; i < cl; i++)
		argc += cmdline[i] == 0;
	n += ht_varint_put(rec + n, argc);
	for (long i = 0; i < cl;) {
		size_t len = ht_strlen(cmdline + i);
		put_string(rec, &n, cap, cmdline + i, len);
		i += (long)len + 1;
	}
	if (ht_opt_sample_rate)
		n += ht_varint_put(rec + n, ht_opt_sample_rate);
	ht_writer_record(HT_REC_PROCESS, rec, n);
}

int ht_writer_open(bool forked)
{
	char path[4096 + 16];
	expand_output(ht_opt_output, path, sizeof path - 300);
	set_out_fd(ht_fd_move_high(create_exclusive(path, sizeof path - 8)));
	if (out_fd < 0) {
		/* why, for the user here and for heaptrail run (the manifest) */
		const char *text = create_why ? create_why : errno_text(errno);
		if (!text)
			text = "cannot open it";
		char msg[4096 + 128];
		size_t k = ht_append_str(msg, 0, sizeof msg, path);
		k = ht_append_str(msg, k, sizeof msg, ": ");
		ht_append_str(msg, k, sizeof msg, text);
		ht_log("cannot create the trace file ", msg);
		char tail[160];
		k = ht_append_str(tail, 0, sizeof tail, "error\t");
		ht_append_str(tail, k, sizeof tail, text);
		append_manifest(path, tail, true);
		return -1;
	}
	struct stat st;
	if (fstat(out_fd, &st) == 0) {
		out_dev = st.st_dev;
		out_ino = st.st_ino;
		out_regular = S_ISREG(st.st_mode);
	}
	out_end = 0;
	/* the absolute path, to open the file again (ht_opt_output is made
	 * absolute at start; this is for a start-up without a working
	 * directory) */
	if (path[0] == '/') {
		ht_strlcpy(out_abs, path, sizeof out_abs);
	} else if (syscall(SYS_getcwd, out_abs, sizeof out_abs) > 1 && out_abs[0] == '/') {
		size_t k = ht_append_str(out_abs, ht_strlen(out_abs), sizeof out_abs, "/");
		ht_append_str(out_abs, k, sizeof out_abs, path);
	} else {
		out_abs[0] = 0; /* not reopened */
	}
	write_failed = false;
	frame_open = false;
	if (!outbuf) {
		outcap = ZSTD_CStreamOutSize();
		outbuf = ht_mmap(outcap);
	}
	outlen = 0;
	zcs = NULL;
	if (ht_opt_compress != HT_COMPRESS_RAW) {
		unsigned first = ht_opt_compress == HT_COMPRESS_FAST ? HT_COMPRESS_FAST : HT_COMPRESS_STRONG;
		if (!zws) {
			/* room for either setting (auto may use both) */
			size_t fast = ZSTD_estimateCStreamSize_usingCParams(zstd_params(HT_COMPRESS_FAST));
			size_t strong = ZSTD_estimateCStreamSize_usingCParams(zstd_params(first));
			zws_size = fast > strong ? fast : strong;
			zws = ht_mmap(zws_size);
		}
		if (zws)
			zcs = ZSTD_initStaticCStream(zws, zws_size);
		tables_small = true;
		small_in = 0;
		if (zcs)
			zstd_configure(first);
		segment_start();
	}
	if (!outbuf) {
		close(out_fd);
		set_out_fd(-1);
		return -1;
	}
	uint8_t hdr[HT_FILE_HEADER_LEN] = HT_FILE_MAGIC;
	hdr[8] = HT_FORMAT_MAJOR & 0xff;
	hdr[9] = HT_FORMAT_MAJOR >> 8;
	hdr[10] = HT_FORMAT_MINOR & 0xff;
	hdr[11] = HT_FORMAT_MINOR >> 8;
	hdr[12] = zcs ? HT_FILE_ZSTD : 0;
	write_all(hdr, sizeof hdr);
	write_process_record(forked);
	ht_strlcpy(out_path, path, sizeof out_path);
	append_manifest(path, NULL, true);
	/* who this process is, for heaptrail run's list of the run's
	 * processes (the trace's PROCESS record says it too, but run would
	 * have to read every trace back) */
	char who[4096 + 32];
	size_t k = ht_append_u64(who, 0, sizeof who, (uint64_t)getppid());
	k = ht_append_str(who, k, sizeof who, forked ? " forked " : " started ");
	program_name(who + k, sizeof who - k);
	note_field("proc", who);
	return 0;
}

/* Appends "key<TAB>value" to the trace's manifest line, the value made one
 * field of one line. */
static void note_field(const char *key, const char *value)
{
	char tail[4096 + 16];
	size_t k = ht_append_str(tail, 0, sizeof tail, key);
	k = ht_append_str(tail, k, sizeof tail, "\t");
	size_t from = k;
	k = ht_append_str(tail, k, sizeof tail, value ? value : "");
	for (size_t i = from; i < k; i++)
		if (tail[i] == '\t' || tail[i] == '\n')
			tail[i] = ' ';
	append_manifest(out_path, tail, false);
}

void ht_writer_note_own_malloc(const char *object)
{
	note_field("ownmalloc", object);
}

void ht_writer_note_bypass(const char *object)
{
	note_field("bypass", object);
}

void ht_writer_note_exec(const char *target)
{
	note_field("exec", target);
}

void ht_writer_finish(unsigned how, unsigned status)
{
	if (out_fd < 0)
		return;
	uint8_t rec[8 * HT_VARINT_MAX];
	size_t n = 0;
	unsigned flags = atomic_load(&ht_agent_flags);
	uint64_t now = ht_now(), allocs, frees, bytes;
	ht_thread_totals(&allocs, &frees, &bytes);
	n += ht_varint_put(rec + n, now);
	n += ht_varint_put(rec + n, how);
	n += ht_varint_put(rec + n, status);
	n += ht_varint_put(rec + n, read_peak_rss());
	n += ht_varint_put(rec + n, flags);
	n += ht_varint_put(rec + n, allocs);
	n += ht_varint_put(rec + n, frees);
	n += ht_varint_put(rec + n, bytes);
	ht_writer_record(HT_REC_END, rec, n);
	ht_writer_flush(true);
	if (fd_is_ours()) /* else the number is the program's now */
		close(out_fd);
	set_out_fd(-1);
	/* "end <allocs> <frees> <bytes> <ns>" for heaptrail run's summary, then
	 * "exact" and the figures of the reader's replay when the digest can
	 * give them (agent/live.h): run prints them without reading the trace */
	char tail[384];
	size_t k = ht_append_str(tail, 0, sizeof tail, "end\t");
	k = ht_append_u64(tail, k, sizeof tail, allocs);
	k = ht_append_str(tail, k, sizeof tail, "\t");
	k = ht_append_u64(tail, k, sizeof tail, frees);
	k = ht_append_str(tail, k, sizeof tail, "\t");
	k = ht_append_u64(tail, k, sizeof tail, bytes);
	k = ht_append_str(tail, k, sizeof tail, "\t");
	k = ht_append_u64(tail, k, sizeof tail, now);
	ht_live_summary_t ls;
	bool exact = false;
	if (ht_lock_timed(&ht_live_lock, 2000)) {
		exact = ht_live_summary(&ls);
		ht_unlock(&ht_live_lock);
	}
	if (write_failed) {
		/* the file holds the events up to the failure: run reads it
		 * back and says so, whoever closed stderr */
		k = ht_append_str(tail, k, sizeof tail, "\tlost");
	} else if (exact) {
		const uint64_t fig[] = {ls.allocs,     ls.frees,	ls.bytes,    ls.peak_bytes,
					ls.live_bytes, ls.live_blocks, ls.temporary};
		k = ht_append_str(tail, k, sizeof tail, "\texact");
		for (size_t i = 0; i < sizeof fig / sizeof fig[0]; i++) {
			k = ht_append_str(tail, k, sizeof tail, "\t");
			k = ht_append_u64(tail, k, sizeof tail, fig[i]);
		}
	}
	/* how it ended (HT_END_*) and the status or signal */
	k = ht_append_str(tail, k, sizeof tail, "\thow\t");
	k = ht_append_u64(tail, k, sizeof tail, how);
	k = ht_append_str(tail, k, sizeof tail, "\t");
	k = ht_append_u64(tail, k, sizeof tail, status);
	append_manifest(out_path, tail, false);
}

/* In a fork child the inherited descriptor and compressor state belong to
 * the parent's file: forget them without writing anything. */
void ht_writer_fork_child_close(void)
{
	if (out_fd >= 0 && fd_is_ours())
		close(out_fd);
	set_out_fd(-1);
	outlen = 0;
	frame_open = false;
	ht_lock_reset(&ht_writer_lock);
}
