"""Isolated test runs: what the OS offers to keep model-edited code away from the network,
the disk and the harness.

`isolation_kind()` names the best mechanism that works on this machine (probed once:
installed is not enough), in this order:
- "bubblewrap" (`bwrap`): new network, PID and IPC namespaces; the whole file system
  read-only except the folders bound writable (the temporary copy and the fresh folder the
  test report goes to); a new session; it dies with the harness. In its own PID namespace
  the test process sees none of the harness's processes (so not their
  `/proc/<pid>/environ`), and everything it starts dies when the run ends, `setsid` or not.
- "network-only" (`unshare --net`, where it works: root, or user namespaces allowed): no
  network, nothing else; the code can still write wherever you can and read your processes.
- "none": neither works; the tests run with your permissions.
`isolation_prefix(kind, writable)` is the command prefix `run_pytest` puts before
`python -m pytest`, and `notice(isolate)` the one line a CLI prints at the start when the
tests will not run under bubblewrap.

Not a container and not a security boundary you should bet secrets on: it narrows what a
buggy or hostile edit can reach, on Linux, with tools that are usually already there.
"""

import functools
import shutil
import subprocess
import sys

BUBBLEWRAP, NETWORK_ONLY, NONE = "bubblewrap", "network-only", "none"
KINDS = (BUBBLEWRAP, NETWORK_ONLY, NONE)

BWRAP_BASE = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
BWRAP_UNSHARE = [
    "--unshare-net",
    "--unshare-pid",
    "--unshare-ipc",
    "--die-with-parent",
    "--new-session",  # subtle: without it, the tests could push keystrokes into your terminal
]


def isolation_prefix(kind, writable=()):
    """The command prefix running a command under `kind`, with `writable` folders writable.

    The first writable folder is the working directory. Start the prefixed command with the
    minimal environment: bubblewrap's own environment is readable inside the sandbox (it is
    `/proc/1/environ` there).
    """
    if kind == NONE:
        return []
    if kind == NETWORK_ONLY:
        return [shutil.which("unshare"), "--net", "--"]
    binds = []
    for folder in map(str, writable):
        binds += ["--bind", folder, folder]
    chdir = ["--chdir", str(writable[0])] if writable else []
    return [shutil.which("bwrap"), *BWRAP_BASE, *binds, *chdir, *BWRAP_UNSHARE, "--"]


def chosen(isolate):
    """The kind a run uses: the best one here, or "none" when isolation is turned off."""
    return isolation_kind() if isolate else NONE


def notice(isolate):
    """The line to print before the first test run when it is not under bubblewrap, or None."""
    if not isolate:
        return "tests run unisolated (--no-isolate): the edited code runs with your permissions"
    kind = isolation_kind()
    if kind == NETWORK_ONLY:
        return "tests run with only the network cut: install bubblewrap to isolate them"
    if kind == NONE:
        return "tests run unisolated: install bubblewrap to isolate them"
    return None


@functools.cache
def isolation_kind():
    """ "bubblewrap", "network-only" or "none": the first mechanism that works here."""
    bwrap, unshare = shutil.which("bwrap"), shutil.which("unshare")
    if bwrap and _works([bwrap, *BWRAP_BASE, *BWRAP_UNSHARE, "--"]):
        return BUBBLEWRAP
    if unshare and _works([unshare, "--net", "--"]):
        return NETWORK_ONLY
    return NONE


def _works(prefix):
    try:
        # the interpreter the tests will run with: `true` may not be on the PATH
        command = [*prefix, sys.executable, "-c", ""]
        return subprocess.run(command, capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False
