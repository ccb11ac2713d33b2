"""What one run of the test suite costs: wall time, CPU seconds and process starts.

    python3 lab.py run tests/maintainers/suite_cost.py [--no-count] [pytest options...]

Runs the README's test command (`python3 lab.py test`) once and reports its wall time, its
CPU seconds and how many programs it started, by program. The CPU is the whole machine's
busy time over the run (/proc/stat), beside what getrusage counts for the processes that
were waited for (less: a sandbox's processes are reaped inside its own PID namespace).
On an idle machine the first is the suite's. Run it idle, beside
`../shared/` and with `CI=true` as `.ci/run` does, for the figure the suite's budget is
about (docs/costs.md). Not a test: nothing here passes or fails.

subtle: the count comes from a second run under `strace -f -e trace=execve` (ptrace slows
what it traces, so the timings come from the first run alone): every program started,
whoever started it, sandboxed or not, counts once per exec. Without strace on the machine,
or with --no-count, only the first run is made.
"""

import argparse
import collections
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[2]
STRACE = shutil.which("strace")
# every successful or failed execve of every process, nothing else (seccomp-bpf: no stops
# on the other system calls), its argv cut at 64 characters a word
STRACE_EXECS = ("-f", "-qq", "--seccomp-bpf", "-e", "trace=execve", "-e", "signal=none", "-s", "64")


def label(argv):
    """A short name for what a process was: its program, and for Python what it ran."""
    name = Path(argv[0]).name if argv else "?"
    if not name.startswith("python"):
        return name
    rest = [word for word in argv[1:] if word not in ("-I", "-u", "-B", "-X", "utf8")]
    if rest[:2] == ["-m", "pytest"]:
        return "python -m pytest"
    if rest and rest[0] == "-c":
        return "python -c (inline code)"
    return f"python {Path(rest[0]).name}" if rest else "python"


def machine_busy():
    """CPU seconds every core of the machine has spent busy since boot (/proc/stat)."""
    fields = [int(word) for word in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle and iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def run_suite(extra, trace=None):
    """(seconds, (machine CPU seconds, waited-for CPU seconds), what pytest printed last):
    one run of `lab.py test`, under `strace -o trace` when `trace` is a path."""
    command = [sys.executable, str(HERE / "lab.py"), "test", "-p", "no:cacheprovider", *extra]
    if trace is not None:
        command = [STRACE, *STRACE_EXECS, "-o", str(trace), *command]
    before, busy_before = resource.getrusage(resource.RUSAGE_CHILDREN), machine_busy()
    started = time.perf_counter()
    done = subprocess.run(command, cwd=HERE, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    after, busy = resource.getrusage(resource.RUSAGE_CHILDREN), machine_busy() - busy_before
    waited = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    failures = [line for line in done.stdout.splitlines() if line.startswith(("FAILED", "ERROR"))]
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "?"
    return seconds, (busy, waited), "\n  ".join([*failures, summary])


def starts_in(trace):
    """Counter of successful execs in an strace log, by label."""
    starts = collections.Counter()
    for line in Path(trace).read_text(encoding="utf-8", errors="replace").splitlines():
        if "execve(" not in line or not line.rstrip().endswith("= 0"):
            continue  # a failed exec (PATH lookups try several folders) started nothing
        argv = line.split("[", 1)[1].split("]", 1)[0] if "[" in line else ""
        starts[label([word.strip(' "') for word in argv.split('", "')])] += 1
    return starts


def cost_line(seconds, cpu):
    """The wall time and both CPU figures, in one line."""
    busy, waited = cpu
    return (
        f"  wall {seconds:.1f} s; CPU {busy:.1f} s busy on the whole machine "
        f"({busy / seconds:.2f} of {os.cpu_count()} cores), {waited:.1f} s of it in "
        "processes waited for"
    )


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="any other option or path is passed to pytest; exit code 0 whenever it ran to "
        "the end (a failing suite is reported, not an error of this script)",
    )
    parser.add_argument("--no-count", action="store_true", help="skip the run under strace")
    args, extra = parser.parse_known_args(argv)
    print(f"suite cost on {os.cpu_count()} cores, CI={os.environ.get('CI', '')!r}: lab.py test")
    seconds, cpu, summary = run_suite(extra)
    print(f"  {summary}")
    print(cost_line(seconds, cpu))
    if args.no_count:
        return 0
    if STRACE is None:
        print("  process starts: not counted (no strace on this machine)")
        return 0
    with tempfile.TemporaryDirectory(prefix="suite-cost-") as scratch:
        trace = Path(scratch) / "execs.txt"
        traced_seconds, _, traced_summary = run_suite(extra, trace)
        starts = starts_in(trace)
    print(f"  a second run under strace ({traced_seconds:.1f} s): {traced_summary}")
    print(f"  {sum(starts.values())} process starts (execs), the most started:")
    for name, times in starts.most_common(12):
        print(f"    {times:>5}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
