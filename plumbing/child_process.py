"""Running a child process of model-edited code without letting it hold up the harness.

`run_bounded(command, cwd, timeout)` runs one child (pytest, or the held-out checks) with
the minimal environment, in its own process group, and returns its exit code (None on a
timeout) and the tail of its output. The group is killed when the run ends for any reason
(finished, timed out, or Ctrl-C in the harness): a child that forks a grandchild holding
the output pipe cannot hang the harness. `run_isolated(...)` runs one under an isolation
(plumbing/isolation.py) with the folders it may read and write, as root as a user of its
own, and says when a process of that user outlived it (plumbing/sandbox_user.py).

Each child starts under the file-size and memory limits of bounds.py.

Not here: what is run (plumbing/pytest_run.py, plumbing/held_out.py) or how it is isolated
(plumbing/isolation.py).
"""

import os
import select
import signal
import subprocess
import time
from typing import NamedTuple

from plumbing import sandbox_user
from plumbing.bounds import set_limits
from plumbing.isolation import NONE, isolation_prefix

OUTPUT_LIMIT = 4000  # characters of test output kept: the tail, where pytest's summary is
OUTPUT_KEPT = 64 * 1024  # bytes of output held while a run goes on: room for the limit
READ = 65536  # bytes asked of the pipe at a time: all a pipe holds
# subtle: the held-out child writes a line per case, some 1,700 a check; read as each comes,
# that is as many wake-ups of the harness, and a fifth of the check's CPU time. After a read
# that emptied the pipe, waiting this long lets the next lines pile up and come in one read;
# a read that filled READ (a flood) is followed by the next at once.
GATHER = 0.003  # seconds


def minimal_env():
    # subtle: the child inherits nothing else, so no API key or token (OLLAMA_API_KEY
    # included) can reach code the model wrote.
    env = {key: os.environ[key] for key in ("PATH", "LANG", "SYSTEMROOT") if key in os.environ}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def tail(output):
    """The last OUTPUT_LIMIT characters of `output` (where pytest's summary is), saying how
    many came before them."""
    if len(output) <= OUTPUT_LIMIT:
        return output
    return f"[... {len(output) - OUTPUT_LIMIT} earlier characters cut]\n" + output[-OUTPUT_LIMIT:]


def _kill_group(process):
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # the whole group is already gone


def run_bounded(command, cwd, timeout, stderr=subprocess.STDOUT, keep=OUTPUT_KEPT):
    """(exit code or None on a timeout, the output's tail as text) of one child run."""
    return bounded_run(command, cwd, timeout, stderr, keep)[:2]


class BoundedRun(NamedTuple):
    exit_code: int | None  # None on a timeout
    output: str  # the output's tail, marked where earlier bytes were dropped
    dropped: int  # how many bytes of output were dropped: a fact, never read from the mark


def bounded_run(command, cwd, timeout, stderr=subprocess.STDOUT, keep=OUTPUT_KEPT):
    """The BoundedRun of one child: run_bounded's, and how much output it dropped.

    subtle: only the last `keep` bytes (OUTPUT_KEPT) are ever held: the edited code can write
    gigabytes to its output in 15 s, and the harness must not hold them all to keep 4,000
    characters.
    """
    process = subprocess.Popen(
        command,
        cwd=cwd,
        env=minimal_env(),  # bubblewrap's own, too: its environment is readable inside
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=stderr,
        start_new_session=True,
        preexec_fn=set_limits,  # bounds.py: a file-size and a memory limit, for all it starts
    )
    kept, dropped, end = bytearray(), 0, time.monotonic() + timeout
    exit_code = None
    try:
        pipe = process.stdout.fileno()
        while (left := end - time.monotonic()) > 0:
            if not select.select([pipe], [], [], left)[0]:
                continue  # nothing yet; the loop's condition ends it at the time limit
            data = os.read(pipe, READ)
            if not data:  # every writer closed the pipe: the run has ended
                exit_code = process.wait(timeout=max(end - time.monotonic(), 0.01))
                break
            kept += data
            if len(data) < READ:
                time.sleep(min(GATHER, max(end - time.monotonic(), 0)))
            if len(kept) > keep:
                dropped += len(kept) - keep
                del kept[: len(kept) - keep]
    except subprocess.TimeoutExpired:
        pass  # the output ended but the process did not: a timeout like any other
    finally:
        _kill_group(process)
        process.wait()
        process.stdout.close()
    text = kept.decode("utf-8", errors="replace")
    if dropped:
        text = f"[... {dropped} earlier bytes of output dropped]\n" + text
    if exit_code is None:
        text += f"\n[timed out after {timeout:g} s; the test process group was killed]"
    return BoundedRun(exit_code, text, dropped)


class IsolatedRun(NamedTuple):
    exit_code: int | None  # None on a timeout
    output: str  # the output's tail
    outsider: str | None  # why the run cannot pass (sandbox_user.outsider), or None


def run_isolated(kind, command, cwd, timeout, *, reads=(), writes=(), results=(), **kwargs):
    """The IsolatedRun of `command` run in `cwd` under the isolation `kind`: its exit code
    and output's tail as run_bounded gives them (`kwargs`: its `stderr` and `keep`), and
    whether a process of its user outlived it outside its sandbox.

    `reads`: folders bound read-only; `writes`: folders it may change (`cwd` is the first
    of these, or of `reads`); `results`: writable folders it only writes its results into.
    As root the run is a user of its own, drawn for the folder it works in and kept for
    every later run there (plumbing/sandbox_user.py `user_for`).
    """
    root = sandbox_user.as_root() and kind != NONE
    user = sandbox_user.user_for((*writes, *results, cwd)[0]) if root else None
    prefix = isolation_prefix(kind, writable=(*writes, *results), readable=reads, user=user)
    try:
        exit_code, output = run_bounded([*prefix, *command], cwd, timeout, **kwargs)
    except BaseException:  # Ctrl-C: what the run started is gone before the harness goes
        if user:
            sandbox_user.outsider(user)
        raise
    # after the run: a process of its user alive outside its sandbox could have changed it
    return IsolatedRun(exit_code, output, sandbox_user.outsider(user) if user else None)
