/* lifecycle.c - start-up, fork, exec, exit and fatal signals.
 *
 * The agent starts on the first allocation or in its constructor, whichever
 * comes first (library constructors may allocate before ours runs). It ends
 * exactly once, in ht_finish: from its destructor (return from main, exit),
 * from the _exit hook, or from a fatal-signal handler. A trace is complete
 * whenever the process ends in one of those ways; an exec marks the trace and
 * the new image writes its own file.
 */
#include <dlfcn.h>
#include <link.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "live.h"

_Atomic int ht_state;
uint64_t ht_start_mono_ns;
pid_t ht_pid;
_Atomic int ht_exit_code;
_Atomic bool ht_exit_code_known;

uint64_t ht_clock_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

bool ht_clock_tsc;
uint64_t ht_tsc0, ht_tsc_mult;
bool ht_tsc_rdtscp;

/* A CLOCK_MONOTONIC reading *m and the TSC at that moment *t, from a clock
 * read between two TSC reads at most 2,000 ticks apart (under a us: no
 * preemption in between); false if 100 tries all took longer. */
static bool tsc_pair(uint64_t *t, uint64_t *m)
{
#if defined(__x86_64__)
	for (int i = 0; i < 100; i++) {
		uint64_t a = __rdtsc();
		uint64_t ns = ht_clock_ns();
		uint64_t b = __rdtsc();
		if (b > a && b - a < 2000) {
			*t = a + (b - a) / 2;
			*m = ns;
			return true;
		}
	}
#endif
	(void)t;
	(void)m;
	return false;
}

/* A fork child's clock: the rate is the parent's (measuring it again cost
 * every child 200 us of busy waiting), the start its own. */
static void clock_restart(void)
{
	uint64_t t, mono;
	if (!ht_clock_tsc || !tsc_pair(&t, &mono)) {
		ht_clock_init();
		return;
	}
	ht_start_mono_ns = mono;
	ht_tsc0 = t; /* TSC ticks since the start, as ht_clock_init sets it */
}

void ht_clock_init(void)
{
	ht_start_mono_ns = ht_clock_ns();
	ht_clock_tsc = false;
#if defined(__x86_64__)
	char cs[64];
	if (ht_read_file("/sys/devices/system/clocksource/clocksource0/current_clocksource",
			 cs, sizeof cs) <= 0 || ht_strncmp(cs, "tsc\n", 4))
		return;
	/* Measure the TSC rate over 200 us of CLOCK_MONOTONIC: an error of
	 * ~0.02%, only in durations; ordering is exact whatever the rate. Each
	 * end of the interval is a clock reading bracketed by two TSC reads
	 * close together: a thread preempted between a TSC read and a clock
	 * read (a busy machine) would otherwise skew the rate without bound
	 * (a run measured 2.6 times too long). */
	uint64_t t0, m0, t1, m1;
	if (!tsc_pair(&t0, &m0))
		return;
	do {
		if (!tsc_pair(&t1, &m1))
			return;
	} while (m1 - m0 < 200000);
	if (t1 <= t0)
		return;
	ht_tsc_mult = (uint64_t)(((unsigned __int128)(m1 - m0) << 32) / (t1 - t0));
	/* Time zero stays ht_start_mono_ns: TSC ticks since m0, plus m0's offset. */
	ht_tsc0 = t0 - (uint64_t)(((unsigned __int128)(m0 - ht_start_mono_ns) << 32) / ht_tsc_mult);
	ht_clock_tsc = ht_tsc_mult != 0;
	/* RDTSCP for the ordered reads; a hypervisor may hide it */
	unsigned a, b, c, d;
	ht_tsc_rdtscp = __get_cpuid(0x80000001, &a, &b, &c, &d) && (d & (1u << 27)); /* EDX bit 27 */
#endif
}

/* ---- fatal signals ---------------------------------------------------------- */

/* Signals whose default action ends the process. We catch them only when the
 * program left them at SIG_DFL, finish the trace, and re-raise. The program
 * still reads SIG_DFL back (the sigaction/signal hooks in hooks.c), so an
 * interpreter that installs its handler only over SIG_DFL still does. */
static const int fatal_signals[] = {SIGSEGV, SIGBUS,  SIGFPE,  SIGILL,
				    SIGABRT, SIGSYS,  SIGTERM, SIGINT,
				    SIGHUP,  SIGQUIT, SIGPIPE, SIGXCPU,
				    SIGXFSZ, SIGTRAP /* break=LIST without a debugger */,
				    /* and the ones a program lets kill it by forgetting a
				     * handler: an alarm() timeout, a profiling timer,
				     * a stray SIGUSR1 or SIGUSR2 (unless it is the leak
				     * signal: install_signal_handlers) */
				    SIGALRM, SIGVTALRM, SIGPROF, SIGUSR1, SIGUSR2, SIGIO,
				    SIGPWR, SIGSTKFLT};

/* Set once ht_finish has written END: a second thread dying at the same
 * time waits for the first one's flush instead of killing the process in
 * the middle of it. */
static _Atomic bool finish_done;

void ht_fatal_signal_handler(int sig)
{
	if (sig == SIGSEGV || sig == SIGBUS)
		ht_leak_scan_fault(); /* returns only if no scan faulted */
	int saved = ht_guard;
	ht_guard = 1;
	if (sig == SIGABRT)
		ht_bad_free_at_abort(); /* glibc's abort in a double free */
	ht_finish(HT_END_SIGNAL, (unsigned)sig);
	for (int ms = 0; ms < 3000 && !atomic_load(&finish_done) &&
			 atomic_load(&ht_state) == HT_STATE_FINISHED;
	     ms++) {
		struct timespec one = {0, 1000000};
		nanosleep(&one, NULL);
	}
	ht_guard = saved;
	/* Die the way the program would have died without us. The state is
	 * FINISHED now, so the sigaction hook lets SIG_DFL through. */
	signal(sig, SIG_DFL);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, sig);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	raise(sig);
}

static void install_signal_handlers(void)
{
	/* An alternate stack for the main thread, so a stack overflow still
	 * leaves a complete trace. */
	void *alt = ht_alt_stack_map();
	if (alt) {
		stack_t ss = {.ss_sp = alt, .ss_size = HT_ALT_STACK, .ss_flags = 0};
		stack_t old;
		if (sigaltstack(NULL, &old) == 0 && (old.ss_flags & SS_DISABLE))
			sigaltstack(&ss, NULL);
	}
	/* SIGUSR2 is the leak signal by default (install_leak_signal); the
	 * signals asked for as leak or snapshot signal get those handlers */
	int leak_sig = !ht_opt_leak_check ? 0 : ht_opt_leak_signal < 0 ? SIGUSR2 : ht_opt_leak_signal;
	for (int sig = 1; sig < NSIG; sig++) {
		struct sigaction old;
		if (sig == ht_opt_snapshot_signal || sig == leak_sig)
			continue;
		if (!ht_is_fatal_signal(sig) || sigaction(sig, NULL, &old) != 0 ||
		    old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO))
			continue;
		struct sigaction sa;
		ht_fatal_sigaction(&sa);
		sigaction(sig, &sa, NULL);
	}
}

bool ht_is_fatal_signal(int sig)
{
	for (size_t i = 0; i < sizeof fatal_signals / sizeof *fatal_signals; i++)
		if (fatal_signals[i] == sig)
			return true;
	return sig >= SIGRTMIN && sig <= SIGRTMAX; /* real-time: they end it too */
}

void ht_fatal_sigaction(struct sigaction *sa)
{
	memset(sa, 0, sizeof *sa);
	sa->sa_handler = ht_fatal_signal_handler;
	/* No SA_RESETHAND: a second thread dying meanwhile must reach the
	 * handler and wait for the flush, not die by SIG_DFL in the middle. */
	sa->sa_flags = SA_ONSTACK | SA_NODEFER;
	sigfillset(&sa->sa_mask);
}

/* ---- fork --------------------------------------------------------------------- */

/* Blank our path out of LD_PRELOAD in this process's environment, so that an
 * untraced child's own children are untraced too. Done in place (the child's
 * copy of the memory): no allocation, no libc lock that a vanished thread of
 * the parent could hold. */
extern char **environ;
static void remove_from_ld_preload(void)
{
	Dl_info info;
	if (!dladdr((void *)&remove_from_ld_preload, &info) || !info.dli_fname)
		return;
	const char *self = info.dli_fname;
	size_t slen = ht_strlen(self);
	for (char **e = environ; e && *e; e++) {
		if (ht_strncmp(*e, "LD_PRELOAD=", 11))
			continue;
		for (char *p = *e + 11; *p;) {
			char *end = p;
			while (*end && *end != ' ' && *end != ':')
				end++;
			size_t len = (size_t)(end - p);
			const char *base = end;
			while (base > p && base[-1] != '/')
				base--;
			bool match = (len == slen && !ht_strncmp(p, self, len)) ||
				     ((size_t)(end - base) == 15 &&
				      !ht_strncmp(base, "libheaptrail.so", 15));
			if (match)
				memset(p, ' ', len);
			p = *end ? end + 1 : end;
		}
	}
}

/* Whether this thread's fork_prepare took the agent's locks: fork_parent
 * and fork_child let go of what it took, whatever the state has become
 * since. They read the state again, and an exit on another thread (state
 * FINISHED) or an exec (EXEC) during the fork left every lock held: the
 * exit waited a minute for the writer's lock and wrote no END. */
static __thread bool fork_locked;

/* glibc's, behind pthread_atfork: its last argument names the library
 * whose unloading drops the handlers. */
extern int __register_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void),
			     void *dso_handle);

static void fork_prepare(void)
{
	ht_guard++;
	fork_locked = false;
	if (atomic_load(&ht_state) != HT_STATE_RECORDING)
		return;
	/* Nothing here or in fork_child may allocate, make a thread or wait
	 * for one that allocates: another allocator's own prepare handler
	 * (jemalloc's, tcmalloc's; they may run before ours) holds its
	 * locks until the fork is over, and a helper thread started here,
	 * or a thread state made here (pthread_getattr_np), waited for them
	 * forever. The thread's events stay in its buffer: the parent ships
	 * them later, the child drops its copy (ht_thread_fork_child). */
	ht_thread_fork_prepare();
	ht_stacks_fork_prepare();
	ht_modules_fork_prepare();
	ht_lock(&ht_writer_lock);
	ht_flusher_fork_prepare();
	ht_sampling_fork_prepare(); /* leaf locks: nothing is taken under them */
	fork_locked = true;
}

/* What fork_prepare took, in the reverse order. */
static void fork_unlock(void)
{
	ht_sampling_fork_parent();
	ht_flusher_fork_parent();
	ht_unlock(&ht_writer_lock);
	ht_modules_fork_parent();
	ht_stacks_fork_parent();
	ht_thread_fork_parent();
}

static void fork_parent(void)
{
	if (fork_locked) {
		fork_locked = false;
		fork_unlock();
	}
	ht_guard--;
}

/* Set while this thread's exec holds the writer's lock (ht_before_exec
 * to ht_after_failed_exec). */
static __thread bool exec_lock_mine;

static void fork_child(void)
{
	exec_lock_mine = false; /* the parent's lock; reset with the others */
	bool locked = fork_locked;
	fork_locked = false;
	/* Forked while another thread's exec flushed (prepare then takes
	 * nothing): that exec is not the child's, whose only thread this is.
	 * Left EXEC, the child's first malloc waited for it forever. */
	int expected = HT_STATE_EXEC;
	atomic_compare_exchange_strong(&ht_state, &expected, HT_STATE_RECORDING);
	if (atomic_load(&ht_state) != HT_STATE_RECORDING) {
		if (locked)
			fork_unlock(); /* the parent stopped recording meanwhile */
	} else {
		/* The child's trace is a new file with its own clock start. The
		 * set-up resets every lock, whether prepare took it or a thread
		 * the child does not have held it (another thread's exec). */
		clock_restart();
		ht_pid = getpid();
		ht_writer_fork_child_close();
		ht_live_fork_child();
		ht_sampling_fork_child();
		ht_flusher_fork_child();
		ht_modules_fork_child();
		ht_stacks_fork_child();
		ht_thread_fork_child();
		if (!ht_opt_follow_fork) {
			atomic_store(&ht_state, HT_STATE_DISABLED);
			remove_from_ld_preload();
		} else if (ht_writer_open(true) != 0) {
			atomic_store(&ht_state, HT_STATE_DISABLED);
		} else {
			ht_modules_rewrite_all();
			ht_writer_flush(false); /* single-threaded here: no lock needed */
		}
	}
	ht_guard--;
}

/* ---- start and end ---------------------------------------------------------- */

static _Atomic int init_started;

/* The leak-check signal: asked for (leak_signal=N) it replaces what the
 * signal did; by default SIGUSR2, only if the program left it at SIG_DFL
 * (a handler the program installs later replaces ours). */
static void install_leak_signal(void)
{
	int sig = ht_opt_leak_signal;
	if (!ht_opt_leak_check || sig == 0)
		return;
	if (sig < 0) {
		struct sigaction cur;
		sig = SIGUSR2;
		if (ht_opt_snapshot_signal == sig || sigaction(sig, NULL, &cur) != 0 ||
		    (cur.sa_flags & SA_SIGINFO) || cur.sa_handler != SIG_DFL)
			return;
	} else if (sig == ht_opt_snapshot_signal) {
		ht_log("leak_signal and snapshot_signal are the same signal: no leak signal", NULL);
		return;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = ht_leak_signal_handler;
	sa.sa_flags = SA_RESTART;
	sigaction(sig, &sa, NULL);
}

/* quick_exit: after the program's at_quick_exit handlers (quick_exit's
 * hook took the status). */
static void quick_finish(void)
{
	ht_finish(HT_END_EXIT, (unsigned)atomic_load(&ht_exit_code));
}

/* The object whose malloc the program calls instead of the agent's, or "". */
static char malloc_elsewhere[512];

/* An executable that defines malloc itself (Chromium's PartitionAlloc), or
 * a library preloaded ahead of the agent (LD_PRELOAD=libjemalloc.so.2:
 * libheaptrail.so), comes first in the lookup order: the program's calls
 * go to its malloc, and the agent sees none of them. Say so, in the trace
 * (END's flags: the report warns), to heaptrail run (the manifest) and,
 * without it, on stderr at the end, rather than report nothing. */
static void note_own_malloc(void)
{
	void *m = dlsym(RTLD_DEFAULT, "malloc");
	Dl_info theirs, ours;
	const ElfW(Sym) *sym = NULL;
	/* A non-PIE executable that takes malloc's address makes its PLT
	 * entry malloc's address everywhere: an undefined symbol there, not
	 * a definition. */
	if (m && dladdr1(m, &theirs, (void **)&sym, RTLD_DL_SYMENT) && sym &&
	    sym->st_shndx != SHN_UNDEF && dladdr((void *)&note_own_malloc, &ours) &&
	    theirs.dli_fbase != ours.dli_fbase) {
		atomic_fetch_or(&ht_agent_flags, HT_AGENT_MALLOC_ELSEWHERE);
		ht_strlcpy(malloc_elsewhere, theirs.dli_fname && theirs.dli_fname[0]
					     ? theirs.dli_fname : "the executable",
			   sizeof malloc_elsewhere);
		ht_writer_note_own_malloc(theirs.dli_fname);
	}
}

/* At the end, outside heaptrail run (which says it itself, from the
 * manifest): the trace is empty of the program's allocations, and why. */
static void warn_malloc_elsewhere(void)
{
	if (!malloc_elsewhere[0] || ht_opt_manifest[0])
		return;
	char msg[1024];
	size_t n = ht_append_str(msg, 0, sizeof msg, "note: ");
	n = ht_append_str(msg, n, sizeof msg, malloc_elsewhere);
	ht_append_str(msg, n, sizeof msg,
		      " defines malloc and comes before libheaptrail.so in the lookup order: the "
		      "program's allocations go there, and the trace holds none of them (list "
		      "libheaptrail.so first in LD_PRELOAD)");
	ht_log(msg, NULL);
}

void ht_init(void)
{
	int expected = 0;
	if (!atomic_compare_exchange_strong(&init_started, &expected, 1))
		return;
	ht_guard++;
	ht_options_parse();
	bool untraced_child = ht_options_untraced_child();
	if (untraced_child)
		remove_from_ld_preload(); /* its own children neither */
	if (!ht_opt_enabled || untraced_child) {
		atomic_store(&ht_state, HT_STATE_DISABLED);
		ht_guard--;
		return;
	}
	ht_clock_init();
	ht_pid = getpid();
	atomic_store(&ht_recording_on, !ht_opt_start_off);
	atomic_store(&ht_recording_was_on, !ht_opt_start_off);
	ht_sample_fast_update();
	ht_sfilter_init();
	ht_modules_init();
	ht_stacks_init();
	ht_thread_init_process();
	if (!ht_opt_unwind_fp)
		ht_unwind_init();
	if (ht_writer_open(false) != 0) {
		atomic_store(&ht_state, HT_STATE_DISABLED);
		ht_guard--;
		return;
	}
	ht_modules_refresh();
	if (!ht_attaching) /* attached, the global scope is the process's alone */
		note_own_malloc();
	/* The header, PROCESS and module records reach the disk now: even a
	 * program killed at once leaves a readable (empty) trace. */
	ht_lock(&ht_writer_lock);
	ht_writer_flush(false);
	ht_unlock(&ht_writer_lock);
	/* Not pthread_atfork: it ties the handlers to this library, and
	 * glibc's exit drops them with its destructors (__cxa_finalize),
	 * before the trace ends. A fork on another thread in between ran
	 * fork_prepare but no fork_parent (every lock of ours held: the
	 * exit waited a minute and wrote no END), and later forks ran no
	 * handler at all. With no library named, they stay for the
	 * process's life, as the agent does. */
	__register_atfork(fork_prepare, fork_parent, fork_child, NULL);
	at_quick_exit(quick_finish); /* the first registered: run last */
	/* Attached, the agent leaves the signals as the program set them: its
	 * sigaction hook is not in front of the program's to hide them. */
	if (!ht_attaching)
		install_signal_handlers();
	if (ht_opt_snapshot_signal) {
		/* Asked for explicitly: it replaces whatever the signal did. */
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = ht_snapshot_signal_handler;
		sa.sa_flags = SA_RESTART;
		sigaction(ht_opt_snapshot_signal, &sa, NULL);
	}
	if (!ht_attaching)
		install_leak_signal();
	atomic_store(&ht_state, HT_STATE_RECORDING);
	ht_guard--;
}

static uintptr_t exit_sp;
static pid_t exit_tid;

/* How long the program's threads may wait in their hooks for the finish
 * at most (ht_thread_park_begin): what a finish that needs a lock one of
 * them holds would lose. */
#define HT_PARK_MS 1000

void ht_note_exit_sp(uintptr_t sp)
{
	/* the first one counts (exit() from an atexit handler does not move
	 * it); a vfork child, on our memory, must not set it */
	if (!exit_sp && getpid() == ht_pid) {
		exit_tid = (pid_t)syscall(SYS_gettid);
		exit_sp = sp;
	}
}

void ht_finish(unsigned how, unsigned status)
{
	/* A vfork child shares our memory: it must not touch the parent's
	 * state or trace (its _exit comes through here). */
	if (getpid() != ht_pid)
		return;
	/* Another thread's exec may be flushing (HT_STATE_EXEC: this thread's
	 * own holds the signals back until it is done). The trace is whole
	 * again, and this finish's to end, once that flush is over, unless
	 * it takes seconds (that thread waiting for a lock this one holds). */
	int expected = HT_STATE_RECORDING;
	for (int waited = 0;
	     !atomic_compare_exchange_strong(&ht_state, &expected, HT_STATE_FINISHED);
	     expected = HT_STATE_RECORDING) {
		if (expected != HT_STATE_EXEC || waited++ >= 2000)
			return;
		struct timespec ms = {0, 1000000};
		syscall(SYS_nanosleep, &ms, NULL); /* not glibc's: a cancellation point */
	}
	/* a handler that interrupted the agent, or anything (dlclose halfway
	 * through unmapping a library): the end skips what may wait or fault */
	bool in_agent = ht_guard != 0 || ht_in_handler;
	ht_guard++;
	/* A signal now (SIGTERM sent to a process that is exiting) would land
	 * in our handler, which waits for this very finish: it stays pending
	 * until the trace is complete. */
	sigset_t async, saved_mask;
	ht_async_signals(&async);
	pthread_sigmask(SIG_BLOCK, &async, &saved_mask);
	/* The program's callee-saved registers may hold its last pointer to a
	 * block: spill them into this frame, which the leak scan reads (from
	 * just below the frame address, where they are pushed). */
	__builtin_unwind_init();
	uintptr_t sp = (uintptr_t)__builtin_frame_address(0) - 64;
	if (exit_sp && exit_tid == (pid_t)syscall(SYS_gettid))
		sp = exit_sp; /* the exit path's frames are not the program's */
	/* the loader's locks and the check's own, and every library's
	 * memory: not in a fatal signal's handler, nor in a handler at all
	 * (an _exit in one that interrupted dlclose's check would wait for
	 * itself; one that interrupted dlclose's unmapping faulted) */
	if (how != HT_END_SIGNAL && how != HT_END_DETACH && !in_agent)
		ht_modules_check_bypass(NULL);
	/* The process ends with this finish: the program's threads that keep
	 * calling malloc record nothing more, and wait in their hooks rather
	 * than take the CPUs from it; they end with the process. Not before the loader's lock is done
	 * with: a thread may hold it around a malloc (a constructor in
	 * dlopen). */
	if (how != HT_END_DETACH) /* a detach: the process goes on */
		ht_thread_park_begin(HT_PARK_MS);
	/* Then the threads in the middle of an event end it, before the
	 * writer's lock is taken: one may be waiting for that lock (a module
	 * record). Unless this thread's exec holds it: flush_all waits then. */
	if (!exec_lock_mine)
		ht_thread_quiesce(2000);
	/* Exit and _exit wait as long as it takes; a signal handler must not
	 * hang if the crashing thread holds the lock itself. But a handler's
	 * exit while this thread's exec holds the lock (the exec failed, or
	 * the signal came just before it) finds the writer between records:
	 * the trace is this thread's to end. */
	bool mine = exec_lock_mine;
	if (mine || ht_lock_timed(&ht_writer_lock, how == HT_END_SIGNAL ? 2000 : 60000)) {
		ht_thread_flush_all();
		if (!ht_opt_summary)
			ht_thread_write_names();
		/* a crash inside the agent may leave the table's lock held
		 * (by this thread: then the table may be half changed) */
		if (ht_lock_timed(&ht_live_lock, how == HT_END_SIGNAL ? 2000 : 60000)) {
			if (ht_opt_leak_check && how != HT_END_SIGNAL && how != HT_END_DETACH)
				ht_leak_check(HT_LEAK_AT_EXIT, 0, sp);
			if (ht_opt_summary)
				ht_summary_write();
			ht_unlock(&ht_live_lock);
		}
		if (how == HT_END_EXIT && !atomic_load(&ht_exit_code_known))
			atomic_fetch_or(&ht_agent_flags, HT_AGENT_EXIT_CODE_UNKNOWN);
		ht_writer_finish(how, status);
		if (!mine) /* else ht_after_failed_exec lets go, if it comes */
			ht_unlock(&ht_writer_lock);
	}
	atomic_store(&finish_done, true);
	warn_malloc_elsewhere();
	pthread_sigmask(SIG_SETMASK, &saved_mask, NULL);
	ht_guard--;
}

bool ht_before_exec(const char *path)
{
	if (getpid() != ht_pid)
		return false; /* vfork child: nothing of ours to flush */
	/* inside the agent, or in a handler that interrupted this thread's
	 * own exec (it holds the writer's lock): the exec goes as it is */
	if (ht_guard || ht_lock_held(&ht_writer_lock))
		return false;
	/* A handler that ends the process (an _exit on a timer) waits for the
	 * flush, as in ht_finish: it then finds the writer between records.
	 * Blocked before the state says EXEC: a handler's finish that found
	 * it so gave up, and the trace ended at the previous exec's EXEC
	 * without END (1 run in 80 of tests/programs/exit_in_exec.c). */
	sigset_t async, saved_mask;
	ht_async_signals(&async);
	pthread_sigmask(SIG_BLOCK, &async, &saved_mask);
	for (;;) {
		int expected = HT_STATE_RECORDING;
		if (atomic_compare_exchange_strong(&ht_state, &expected, HT_STATE_EXEC))
			break;
		if (expected != HT_STATE_EXEC) { /* finished or disabled: nothing to flush */
			pthread_sigmask(SIG_SETMASK, &saved_mask, NULL);
			return false;
		}
		ht_exec_flush_wait(); /* another thread's exec flushes: this one waits its turn */
	}
	ht_guard++;
	ht_lock(&ht_writer_lock);
	ht_thread_flush_all();
	/* the sites so far: if the exec fails, the ones written at the end
	 * replace them (docs/FORMAT.md, SITES) */
	if (ht_opt_summary) {
		ht_lock(&ht_live_lock);
		ht_summary_write();
		ht_unlock(&ht_live_lock);
	}
	uint8_t rec[HT_VARINT_MAX * 2 + 4096];
	size_t n = ht_varint_put(rec, ht_now());
	size_t len = path ? ht_strlen(path) : 0;
	if (len > 4096)
		len = 4096;
	n += ht_varint_put(rec + n, len);
	memcpy(rec + n, path, len);
	n += len;
	ht_writer_record(HT_REC_EXEC, rec, n);
	/* End the zstd frame: if exec succeeds the file is complete as is. */
	ht_writer_flush(true);
	ht_writer_note_exec(path);
	/* Until the exec is done, the other threads record again: a failed
	 * exec must not cost their events (a program trying execs along its
	 * PATH while its threads work lost nearly all of them: their hooks
	 * waited only for the flush above, HT_STATE_EXEC). Nothing is
	 * written meanwhile: the writer's lock stays held, so that a
	 * successful exec leaves the file ending with the frame just closed,
	 * and this thread keeps its guard, or it might ship a block and wait
	 * for the lock it holds. ht_after_failed_exec lets both go (another
	 * thread's exec waits for the lock meanwhile). */
	exec_lock_mine = true;
	atomic_store(&ht_state, HT_STATE_RECORDING);
	pthread_sigmask(SIG_SETMASK, &saved_mask, NULL);
	return true;
}

void ht_after_failed_exec(bool flushed)
{
	if (!flushed)
		return;
	/* An _exit in a handler between the two lines below would find the
	 * lock held by its own thread but no longer "mine", and end without
	 * END: the signal waits for both. */
	sigset_t async, saved_mask;
	ht_async_signals(&async);
	pthread_sigmask(SIG_BLOCK, &async, &saved_mask);
	exec_lock_mine = false;
	ht_unlock(&ht_writer_lock);
	ht_guard--;
	pthread_sigmask(SIG_SETMASK, &saved_mask, NULL);
}

__attribute__((constructor)) static void agent_constructor(void)
{
	if (ht_attach_loaded_late())
		return; /* heaptrail attach starts it (attach.c) */
	ht_init();
}

/* The trace ends after every destructor: glibc runs the ELF destructors
 * (_dl_fini) as its last exit handler, ours among the first of them, and a
 * library's destructor may still free what its constructor allocated.
 * Registered from inside _dl_fini, late_finish runs once it returns
 * (exit handlers added during exit are run). */
extern int __cxa_atexit(void (*fn)(void *), void *arg, void *dso_handle);

static void late_finish(void *arg)
{
	(void)arg;
	ht_finish(HT_END_EXIT, (unsigned)atomic_load(&ht_exit_code));
}

__attribute__((destructor)) static void agent_destructor(void)
{
	if (atomic_load(&ht_state) != HT_STATE_RECORDING)
		return;
	ht_guard++; /* a new block of exit handlers would be a calloc of ours */
	int failed = __cxa_atexit(late_finish, NULL, NULL);
	ht_guard--;
	if (failed)
		ht_finish(HT_END_EXIT, (unsigned)atomic_load(&ht_exit_code));
}
