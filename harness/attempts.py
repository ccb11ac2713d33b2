"""A series of live attempts: what `record_run.py --attempts N [--jobs J]` does.

Each attempt is `record_run.py` itself, run as a child process with `--attempts 1` and its
own `--output` (NAME-1.json ... NAME-N.json) and its own seed (`--seed` + k - 1; at
temperature 0 the seed changes nothing): the same request settings, its own temporary
copy of the sample, its own conversation, its own recording. Up to J run at once against
the same server. As each one ends, one line is printed from its recording (the verdict, the
stop reason, model and tool calls, seconds), then the summary of the series (outcomes.py).

Why child processes and not threads: an attempt's Ctrl-C handling (close the stream, kill
the test process group, save the attempt as `interrupted`) already exists and is tested in
record_run.py, and a signal reaches only a process's main thread. Each child runs in its
own session, out of the terminal's reach, and the parent passes each Ctrl-C on to the
running children. So a Ctrl-C reaches each child exactly once, whether the terminal sent
it or a `kill -INT` of the parent: a second one could land while the child saves.

Not here: the attempt itself (record_run.py), reading the figures (outcomes.py), retries.
A failed attempt is an outcome to count, never a reason to try again.
"""

import argparse
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from harness.console import plural
from harness.outcomes import attempt_line, outcome, summary_lines
from harness.recording import load
from harness.recording_checks import RecordingError
from harness.series_progress import SETTING, Progress
from plumbing.exit_codes import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_NO, EXIT_OK
from plumbing.limits import SAMPLING_SEEDS
from plumbing.redact import credentials_of, redact


def series_paths(output, attempts):
    """[output] for one attempt; else output's name with -1 ... -N before the suffix."""
    output = Path(output)
    if attempts == 1:
        return [output]
    return [output.with_name(f"{output.stem}-{k}{output.suffix}") for k in range(1, attempts + 1)]


def _identity(path):
    """What tells a new file from an old one at `path`: a save replaces the inode."""
    try:
        status = path.stat()
    except OSError:
        return None
    return status.st_ino, status.st_mtime_ns


class Attempt:
    """One child record_run.py; a waiter thread reports its end on the series' queue."""

    def __init__(self, number, output, command, ended, progress):
        self.number, self.output = number, output
        self.before = _identity(output)  # with --force an older file may be there
        steps, step_writer = os.pipe()  # its steps as they come (harness/series_progress.py)
        try:
            self.process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,  # the transcript is in the recording: replay it
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,  # the terminal's Ctrl-C reaches the parent only
                pass_fds=(step_writer,),
                env={**os.environ, SETTING: str(step_writer)},
            )
        except BaseException:
            os.close(steps)
            raise
        finally:
            os.close(step_writer)  # the child's copy is the only one: its end ends the pipe
        self.errors = ""
        # subtle: the OS gives a process's SIGINT to any thread that does not block it. One
        # given to a waiter leaves the main thread asleep in the queue with its handler not
        # run, so waiters block SIGINT (a thread starts with its creator's signal mask).
        unblocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            threading.Thread(target=self._wait, args=(ended,), daemon=True).start()
            threading.Thread(target=progress.follow, args=(number, steps), daemon=True).start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, unblocked)

    def _wait(self, ended):
        self.errors = self.process.communicate()[1]
        ended.put(self)

    def interrupt(self):
        if self.process.poll() is None:
            try:
                self.process.send_signal(signal.SIGINT)
            except ProcessLookupError:
                pass  # it ended in the meantime

    def recorded(self):
        """Whether this attempt saved its recording (an older file at the path does not count)."""
        now = _identity(self.output)
        return now is not None and now != self.before

    def error_lines(self):
        return [line for line in self.errors.splitlines() if line.startswith("error: ")]


class Series:
    """Runs the attempts, prints a line as each ends, and keeps what they recorded."""

    def __init__(self, program, argv, outputs, jobs, out, seed=0):
        # subtle: argparse lets a later option override an earlier one, so the user's own
        # --output/--attempts/--jobs/--seed (however abbreviated) give way to those added at
        # the end. Attempt k is sent seed+k-1: above temperature 0, each draws on its own.
        one = ["--attempts", "1", "--jobs", "1"]  # record_run.py refuses --jobs without a series
        seeds = [str((seed + k) % SAMPLING_SEEDS) for k in range(len(outputs))]
        self.commands = [
            [sys.executable, str(program), *argv, *one, "--seed", each, "--output", str(path)]
            for each, path in zip(seeds, outputs, strict=True)
        ]
        self.outputs, self.jobs, self.out = outputs, jobs, out
        self.outcomes = {}  # attempt number -> Outcome, for those that saved a recording
        self.setup_errors = []  # `error:` lines of attempts that could not run, once each
        self.interrupted = False
        self.running = {}  # attempt number -> Attempt, while its child runs
        self.ended = 0
        self.progress = Progress(out)  # what each running attempt is doing, as it goes

    def say(self, text):
        self.progress.say(text)

    def run(self):
        """Start up to `jobs` attempts at a time; report each as it ends; return at the end.

        Ctrl-C is taken by a handler, not as KeyboardInterrupt, so that it cannot land
        between starting a child and keeping track of it: every running child hears of it.
        """
        waiting, ended = list(enumerate(self.outputs, 1)), queue.Queue()
        previous = signal.signal(signal.SIGINT, self._on_ctrl_c)
        try:
            while waiting or self.running:
                while waiting and len(self.running) < self.jobs and not self._stopping():
                    number, path = waiting.pop(0)
                    command = self.commands[number - 1]
                    attempt = Attempt(number, path, command, ended, self.progress)
                    self.running[number] = attempt
                    if self.interrupted:  # Ctrl-C came while it was being started
                        attempt.interrupt()
                if not self.running:
                    break
                try:
                    attempt = ended.get(timeout=1)
                except queue.Empty:
                    self.progress.tick()  # a terminal's status line counts the seconds
                    continue
                del self.running[attempt.number]
                self._report(attempt, len(self.running))
        finally:
            signal.signal(signal.SIGINT, previous)

    def _on_ctrl_c(self, signum, frame):
        # subtle: every Ctrl-C is passed on, so a second one stops an attempt mid-save
        # (as it would a lone record_run.py); the first one lets each save what it did.
        self.interrupted = True
        for attempt in list(self.running.values()):
            attempt.interrupt()

    def _stopping(self):
        return self.interrupted or bool(self.setup_errors)

    def _report(self, attempt, still_running):
        self.ended += 1
        where = f"[{self.ended}/{len(self.outputs)}] attempt {attempt.number}"
        code = attempt.process.returncode
        if code in (EXIT_OK, EXIT_NO, EXIT_INTERRUPTED) and attempt.recorded():
            try:
                self.outcomes[attempt.number] = outcome(load(attempt.output))
            except RecordingError as error:
                self._setup_error(f"error: {error}")
                return
            running = f"  ({still_running} running)" if still_running else ""
            self.say(f"{where}: {attempt_line(self.outcomes[attempt.number])}{running}")
        elif self.interrupted:
            self.say(f"{where}: interrupted before anything was recorded")
        else:
            self.say(f"{where}: could not run (exit code {code})")
            for line in attempt.error_lines() or [f"error: attempt {attempt.number} failed"]:
                self._setup_error(line)

    def _setup_error(self, line):
        if line not in self.setup_errors:
            self.setup_errors.append(line)
            print(line, file=sys.stderr, flush=True)

    def exit_code(self):
        if self.interrupted:
            return EXIT_INTERRUPTED
        if self.setup_errors:
            return EXIT_ERROR
        everything = len(self.outcomes) == len(self.outputs)
        passed = everything and all(o.succeeded for o in self.outcomes.values())
        return EXIT_OK if passed else EXIT_NO


def run_series(program, argv, args, out=None):
    """record_run.py --attempts N: run the series of `program` (record_run.py, which hands
    its own path: harness/ starts no program it names); print the lines and the summary; exit
    code."""
    out = out or sys.stdout  # looked up now, not at import: tolerant_output() replaces it
    outputs = series_paths(args.output, args.attempts)
    jobs = min(args.jobs, args.attempts)
    host = redact(args.host, credentials_of(args.host))  # the server, as a single run names it
    out.write(
        f"Model: {args.model} (live, {host})  |  {plural(args.attempts, 'attempt')}, "
        f"up to {jobs} at once\nRecordings: {outputs[0]} ... {outputs[-1].name}\n"
    )
    out.flush()
    series = Series(program, argv, outputs, jobs, out, args.seed)
    started = time.monotonic()
    try:
        series.run()
    finally:
        seconds = time.monotonic() - started
    outcomes = [series.outcomes[n] for n in sorted(series.outcomes)]
    if outcomes:
        series.say(f"Summary of {plural(len(outcomes), 'recorded attempt')}:")
        for line in summary_lines(outcomes):
            series.say(f"  {line}")
        series.say(f"  wall time of the series: {seconds:.1f} s, up to {jobs} at once")
    if series.interrupted:
        series.say("interrupted: the attempts not yet started were not run")
    return series.exit_code()


def tasks_named(parser, args):
    """The tasks `--tasks` names, in the ladder's order for `all`; [] without it. A wrong
    name, or --tasks with --task or --fork, is refused as argparse refuses (`parser`)."""
    from harness.tasks import LADDER, TASKS  # the tasks of a run are record_run.py's

    if not args.tasks:
        return []
    if args.task or args.fork is not None:
        parser.error("--tasks runs each task it names; leave out --task and --fork")
    names = [t.name for t in LADDER] if args.tasks == "all" else args.tasks.split(",")
    unknown = [name for name in names if name not in TASKS]
    if unknown or not names:
        parser.error(f"--tasks: {unknown[0] if unknown else '(none)'!r:.60} is not a task "
                     "(all, or names from python3 lab.py tasks, separated by commas)")  # fmt: skip
    return list(dict.fromkeys(names))


def run_tasks(program, argv, args, out=None):
    """record_run.py --tasks: the series of each task in turn, into one folder; the worst
    exit code of them (an interruption stops them all)."""
    out = out or sys.stdout
    folder = args.output.with_suffix("") if args.output.suffix == ".json" else args.output
    paths = {name: folder / f"{name}.json" for name in args.tasks}
    for path in [p for name in args.tasks for p in series_paths(paths[name], args.attempts)]:
        if path.exists() and not args.force:
            out.write(f"error: {path} exists; add --force to replace it\n")
            return EXIT_ERROR
    folder.mkdir(parents=True, exist_ok=True)
    codes = []
    for number, name in enumerate(args.tasks, start=1):
        out.write(f"\nTask {number} of {len(args.tasks)}: {name}\n")
        out.flush()
        # subtle: a later option overrides an earlier one, and an empty --tasks is none
        each = [*argv, "--tasks", "", "--task", name, "--output", str(paths[name])]
        task_args = argparse.Namespace(**{**vars(args), "output": paths[name]})
        code = (
            run_series(program, each, task_args, out) if args.attempts > 1 else _one(each, program)
        )
        codes.append(code)
        if code == EXIT_INTERRUPTED:
            return code
    out.write(f"\nThe board: python3 lab.py run compare.py --board {folder}/*.json\n")
    return EXIT_ERROR if EXIT_ERROR in codes else max(codes, default=EXIT_OK)


def _one(argv, program):
    """One attempt of a task: this script again, as a series runs each attempt."""
    return subprocess.run([sys.executable, str(program), *argv]).returncode
