"""test_signals.py - traces of programs ended by signals are complete, and
the agent's signal handlers are invisible to the program."""

import os
import signal
import struct
import subprocess
import time

from harness import HT, PROGS, heaptrail_run, need_tools, report, scratch_dir, text, tail


def default_signals():
    """Child set-up: the dispositions a program started from a terminal
    has. A suite run in the background inherits SIGINT ignored (the shell
    does that for `&`), which the programs here would rightly report."""
    for s in (signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, signal.SIG_DFL)


def run_and_signal(t, args, sig, wait_for=b"ready\n", delay=0.0, to_heaptrail=False, proc=None):
    """Starts `heaptrail run -- args`, waits for the program to print
    wait_for, sleeps delay seconds, sends sig to the program (to heaptrail
    itself with to_heaptrail), and returns (exit status of heaptrail, trace
    path). proc, a list, gets the Popen (for its stderr)."""
    out = scratch_dir("sig") / "x.ht"
    child = []
    p = subprocess.Popen([str(HT), "run", "-o", str(out), "--"] + args,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=default_signals)
    if proc is not None:
        proc.append(p)
    try:
        line = p.stdout.readline()
        if line != wait_for:
            p.kill()
            t.fatal("program printed %r, expected %r; stderr: %s" % (line, wait_for, tail(p.stderr.read())))
        time.sleep(delay)
        child = subprocess.run(["pgrep", "-P", str(p.pid)], capture_output=True, text=True).stdout.split()
        if not child:
            p.kill()
            t.fatal("cannot find the traced program under heaptrail run")
        subprocess.run(["kill", "-%d" % sig, str(p.pid) if to_heaptrail else child[0]])
        rc = p.wait(30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        # heaptrail killed (not exited): its program may run on, orphaned,
        # holding the pipes open; otherwise heaptrail reaped it already
        if child and p.returncode < 0:
            subprocess.run(["kill", "-KILL", child[0]], stderr=subprocess.DEVNULL)
    return rc, out


def t_sigterm_complete(t):
    need_tools(t)
    rc, out = run_and_signal(t, [str(PROGS / "signals"), "wait"], signal.SIGTERM)
    t.eq("heaptrail run's exit status after SIGTERM", 128 + signal.SIGTERM, rc)
    r = report(out)
    if r.err:
        t.fatal(r.err)
    t.eq("program.signal", int(signal.SIGTERM), r.data["program"]["signal"])
    t.eq("program.exit_code", None, r.data["program"]["exit_code"])
    t.eq("allocations", 11, r.data["totals"]["allocations"])
    t.eq("leaked_bytes", 1100, r.data["totals"]["leaked_bytes"])
    t.check(not r.data.get("truncated"), "trace of a SIGTERM'd program is marked truncated")


def t_signal_to_heaptrail(t, sig):
    # A process manager stops the pid it started: `heaptrail run`. The
    # signal goes on to the program, which dies of it with a complete
    # trace, and heaptrail still sums it up and exits as the program did.
    need_tools(t)
    proc = []
    rc, out = run_and_signal(t, [str(PROGS / "signals"), "wait"], sig, to_heaptrail=True, proc=proc)
    t.eq("heaptrail run's exit status after %s sent to it" % signal.Signals(sig).name, 128 + sig, rc)
    err = text(proc[0].stderr.read())
    t.check("killed by signal %d" % sig in err and "11 allocations" in err,
            "no summary of the program's end on stderr: %s" % err[-300:])
    r = report(out)
    if r.err:
        t.fatal(r.err)
    t.eq("program.signal", int(sig), r.data["program"]["signal"])
    t.eq("allocations", 11, r.data["totals"]["allocations"])
    t.check(not r.data.get("truncated"), "trace marked truncated")


def t_handler_during_first_event(t):
    # The main thread's first event comes from open(); a SIGALRM handler
    # that allocates runs every 50 us. Creating the thread's state calls
    # malloc (pthread_getattr_np): a handler landing there crashed or hung
    # about one run in six. Eight runs must all end well.
    need_tools(t)
    for i in range(8):
        tr = heaptrail_run([str(PROGS / "signal_open")], out_name="so%d.ht" % i, timeout=60)
        t.eq("run %d: heaptrail run's exit status" % i, 0, tr.proc.rc)
        if tr.proc.rc != 0:
            break


def t_sigkill_keeps_shipped(t):
    # SIGKILL cannot be caught: what matters is that blocks older than half
    # a second are already on disk, so the allocations made before are there.
    need_tools(t)
    rc, out = run_and_signal(t, [str(PROGS / "signals"), "wait"], signal.SIGKILL, delay=1.5)
    t.eq("heaptrail run's exit status after SIGKILL", 128 + signal.SIGKILL, rc)
    r = report(out)
    if r.data is None:
        t.fatal("no report for a SIGKILL'd program's trace: %s" % r.err)
    t.eq("allocations on disk (the 11th event shipped the block)", 11, r.data["totals"]["allocations"])
    t.check(r.data.get("truncated") or "cut short" in text(r.proc.err).lower() or r.data.get("warnings"),
            "a SIGKILL'd trace (no END record) is not reported as cut short")


def t_sigkill_steady_rate(t):
    # A program that ships a block every few hundred milliseconds never
    # leaves the writer idle for 200 ms: the writer used to hold its batch
    # until then, and a SIGKILL after 3 s lost every event. Now what it
    # holds is written once 500 ms old, and a thread ships its block once
    # its first event is 500 ms old: the events older than 1.5 s before the
    # kill (five eighths of them) must be on disk.
    need_tools(t)
    count_path = scratch_dir("sig") / "count"
    delay = 4.0
    rc, out = run_and_signal(t, [str(PROGS / "steady"), str(count_path)], signal.SIGKILL,
                             delay=delay)
    t.eq("heaptrail run's exit status after SIGKILL", 128 + signal.SIGKILL, rc)
    made = struct.unpack("<q", count_path.read_bytes()[:8])[0]
    r = report(out)
    if r.data is None:
        t.fatal("no report for a SIGKILL'd program's trace: %s" % r.err)
    got = r.data["totals"]["allocations"]
    t.check(got >= made * (delay - 1.5) / delay,
            "allocations on disk %d of %d made before the kill (want at least %d)" %
            (got, made, int(made * (delay - 1.5) / delay)))


def t_default_deadly_signals(t):
    # Signals whose default action ends the process but that the agent
    # did not catch: SIGALRM (a forgotten alarm()), SIGUSR1, SIGPROF, the
    # real-time ones. The trace was left unfinished and empty.
    need_tools(t)
    # SIGUSR2 too when it is not the leak signal (leak_signal=0, or no
    # leak check: sampled runs).
    for sig, opts in ((signal.SIGALRM, ""), (signal.SIGUSR1, ""), (signal.SIGPROF, ""),
                      (signal.SIGRTMIN + 2, ""), (signal.SIGUSR2, "leak_signal=0")):
        out = scratch_dir("sig") / "x.ht"
        p = subprocess.run([str(HT), "run", "-o", str(out), "--", str(PROGS / "raise_sig"),
                            str(int(sig))], capture_output=True, timeout=60,
                           preexec_fn=default_signals,
                           env=dict(os.environ, HEAPTRAIL_OPTIONS=opts))
        t.eq("signal %d: exit status" % sig, 128 + int(sig), p.returncode)
        r = report(out)
        if r.err or r.data is None:
            t.check(False, "signal %d: report: %s" % (sig, r.err))
            continue
        tot = r.data["totals"]
        t.eq("signal %d: allocations, frees, leaked blocks, ending signal" % sig,
             (100, 99, 1, int(sig)), (tot["allocations"], tot["frees"], tot["leaked_blocks"],
                                      r.data["program"].get("signal")))


def t_handlers_invisible(t):
    need_tools(t)
    out = scratch_dir("sig") / "x.ht"
    p = subprocess.run([str(HT), "run", "-o", str(out), "--", str(PROGS / "signals"), "dfl"],
                       capture_output=True, timeout=60, preexec_fn=default_signals)
    t.eq("signals dfl: exit status (0 = every fatal signal reads back SIG_DFL, else the signal)", 0, p.returncode)


def t_signal_mask_through_unwinds(t):
    # The agent blocks signals while it unwinds (libunwind's locks want
    # them blocked) and puts the mask back after each unwind; the program
    # must never see the change.
    need_tools(t)
    out = scratch_dir("sig") / "x.ht"
    p = subprocess.run([str(HT), "run", "-o", str(out), "--", str(PROGS / "signals"), "mask"],
                       capture_output=True, timeout=60, preexec_fn=default_signals)
    t.eq("signals mask: exit status (0 = mask intact, SIGUSR1 held then delivered once, "
         "EINVAL kept; else the failed check)", 0, p.returncode)
    r = report(out)
    if r.err:
        t.fatal(r.err)
    t.eq("allocations (64 chains x 4 rounds)", 256, r.data["totals"]["allocations"])
    t.eq("distinct allocation stacks", 64, len(r.data["sites"]))


def t_sigprof_handler_unwinds(t):
    # A CPU profiler's pattern: a SIGPROF handler that walks the stack with
    # libunwind while the agent unwinds the program's (each allocation from a
    # chain the stack cache cannot hold). Nothing may hang, the handler must
    # keep running, and the program's mask must come back intact.
    need_tools(t)
    out = scratch_dir("sig") / "x.ht"
    try:
        p = subprocess.run([str(HT), "run", "-o", str(out), "--", str(PROGS / "sigprof_unwind")],
                           capture_output=True, timeout=120, preexec_fn=default_signals)
    except subprocess.TimeoutExpired:
        t.fatal("sigprof_unwind hung under the agent")
    t.eq("sigprof_unwind: exit status (0 = handler ran, SIGPROF unblocked after; "
         "1 handler starved, 2 SIGPROF left blocked)", 0, p.returncode)
    r = report(out)
    if r.err:
        t.fatal(r.err)
    tot = r.data["totals"]
    t.check(tot["allocations"] >= 2048, "only %d allocations" % tot["allocations"])
    t.eq("frees = allocations (each block freed at once)", tot["allocations"], tot["frees"])
    t.eq("leaked bytes", 0, tot["leaked_bytes"])


def t_program_sets_dfl_then_dies(t):
    need_tools(t)
    out = scratch_dir("sig") / "x.ht"
    p = subprocess.run([str(HT), "run", "-o", str(out), "--", str(PROGS / "signals"), "reraise"],
                       capture_output=True, timeout=60, preexec_fn=default_signals)
    t.eq("exit status", 128 + signal.SIGTERM, p.returncode)
    r = report(out)
    if r.err:
        t.fatal(r.err)
    t.eq("program.signal", int(signal.SIGTERM), r.data["program"]["signal"])
    t.eq("allocations", 3, r.data["totals"]["allocations"])
    t.check(not r.data.get("truncated"), "trace marked truncated: %s" % tail(p.stderr))


def t_python_keyboard_interrupt(t):
    # Python installs its KeyboardInterrupt handler only over SIG_DFL; under
    # heaptrail it must still do so, and its death by SIGINT after the
    # uncaught exception must leave a complete trace.
    need_tools(t)
    out = scratch_dir("sig") / "x.ht"
    code = ("import os, signal, sys\n"
            "sys.stdout.write(repr(signal.getsignal(signal.SIGINT)) + '\\n'); sys.stdout.flush()\n"
            "os.kill(os.getpid(), signal.SIGINT)\n"
            "import time; time.sleep(5)\n")
    p = subprocess.run([str(HT), "run", "-o", str(out), "--", "/usr/bin/python3", "-c", code],
                       capture_output=True, timeout=120, preexec_fn=default_signals)
    t.check("default_int_handler" in text(p.stdout),
            "python does not see its own SIGINT handler: %r" % text(p.stdout))
    t.check("KeyboardInterrupt" in text(p.stderr), "no KeyboardInterrupt: %s" % tail(p.stderr))
    t.eq("exit status", 128 + signal.SIGINT, p.returncode)
    r = report(out)
    if r.err:
        t.fatal(r.err)
    t.eq("program.signal", int(signal.SIGINT), r.data["program"]["signal"])
    t.check(not r.data.get("truncated"), "trace marked truncated")


def t_threads_abort_together(t):
    # Three threads abort at once: without care the second abort kills the
    # process in the middle of the first one's flush (truncated trace).
    need_tools(t)
    for attempt in range(3):
        out = scratch_dir("sig") / "x.ht"
        p = subprocess.run([str(HT), "run", "-o", str(out), "--", str(PROGS / "crash_threads")],
                           capture_output=True, timeout=120, preexec_fn=default_signals)
        t.eq("exit status (run %d)" % attempt, 128 + signal.SIGABRT, p.returncode)
        r = report(out)
        if r.err:
            t.fatal(r.err)
        t.eq("program.signal (run %d)" % attempt, int(signal.SIGABRT), r.data["program"]["signal"])
        t.check(not r.data.get("truncated"), "run %d: trace truncated" % attempt)
        own = sum(s["allocations"] for s in r.data["sites"]
                  if any(f.get("function") == "churn" for f in s["stack"][:1]))
        t.eq("allocations made by churn() (run %d)" % attempt, 300000, own)


def t_readback_as_plain(t):
    """Every way of setting a disposition returns, and sigaction reads
    back, what it does without the agent (handlers run behind the agent's
    trampoline; the fatal signals it catches read back as SIG_DFL)."""
    need_tools(t)
    plain = subprocess.run([str(PROGS / "sigreadback")], capture_output=True, timeout=60,
                           preexec_fn=default_signals)
    t.eq("plain exit status", 0, plain.returncode)
    out = scratch_dir("sig") / "x.ht"
    p = subprocess.run([str(HT), "run", "-o", str(out), "--", str(PROGS / "sigreadback")],
                       capture_output=True, timeout=60, preexec_fn=default_signals)
    t.eq("exit status", 0, p.returncode)
    t.eq("output under heaptrail == plain", text(plain.stdout), text(p.stdout))


def t_crash_resethand(t):
    """A crash handler installed with SA_RESETHAND that returns: the fault
    repeats under the SIG_DFL the kernel put back, which the agent now
    takes over, so the trace is complete."""
    need_tools(t)
    out = scratch_dir("sig") / "x.ht"
    p = subprocess.run([str(HT), "run", "-o", str(out), "--", str(PROGS / "crash_resethand")],
                       capture_output=True, timeout=60, preexec_fn=default_signals)
    t.eq("exit status", 128 + signal.SIGSEGV, p.returncode)
    r = report(out)
    if r.err:
        t.fatal(r.err)
    t.eq("allocations, ending signal, truncated",
         (100, int(signal.SIGSEGV), False),
         (r.data["totals"]["allocations"], r.data["program"].get("signal"),
          bool(r.data.get("truncated"))))


TESTS = [
    ("signals.readback_as_plain", t_readback_as_plain),
    ("signals.crash_handler_resethand", t_crash_resethand),
    ("signals.threads_abort_together", t_threads_abort_together),
    ("signals.sigterm_complete", t_sigterm_complete),
    ("signals.sigterm_to_heaptrail", lambda t: t_signal_to_heaptrail(t, signal.SIGTERM)),
    ("signals.sighup_to_heaptrail", lambda t: t_signal_to_heaptrail(t, signal.SIGHUP)),
    ("signals.sigkill_keeps_shipped", t_sigkill_keeps_shipped),
    ("signals.sigkill_steady_rate", t_sigkill_steady_rate),
    ("signals.handler_during_first_event", t_handler_during_first_event),
    ("signals.default_deadly", t_default_deadly_signals),
    ("signals.handlers_invisible", t_handlers_invisible),
    ("signals.program_sets_dfl", t_program_sets_dfl_then_dies),
    ("signals.mask_through_unwinds", t_signal_mask_through_unwinds),
    ("signals.sigprof_handler_unwinds", t_sigprof_handler_unwinds),
    ("signals.python_keyboard_interrupt", t_python_keyboard_interrupt),
]
