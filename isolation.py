"""Isolated test runs: what the OS offers to keep model-edited code off the network and the disk.

`isolation_prefix(root)` returns the command prefix that `run_pytest` puts before
`python -m pytest` when isolation is asked for, and a sentence saying what it enforces:
- bubblewrap (`bwrap`), where installed: no network (a new network namespace), the whole
  file system read-only except the temporary copy (`/tmp` included), its own process
  namespace (when the run is killed, everything in it dies);
- else `unshare --net`, where it works (root, or user namespaces allowed): no network
  only; the code can still write anywhere you can.
Where neither works, `IsolationUnavailable` says so: pretending would be worse.

Not a container and not a security boundary you should bet secrets on: it narrows what a
buggy or hostile edit can reach, on Linux, with tools that are usually already there.
"""

import functools
import shutil
import subprocess

BWRAP_BASE = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
BWRAP_UNSHARE = ["--unshare-net", "--unshare-pid", "--die-with-parent"]
BWRAP_ENFORCES = (
    "bubblewrap: no network; everything read-only except the copy (/tmp included); "
    "own process namespace"
)
UNSHARE_ENFORCES = "unshare: no network only; the tests can still write wherever you can"


class IsolationUnavailable(Exception):
    """Isolation was asked for, and this machine offers no way to provide it."""


def isolation_prefix(root):
    """(command prefix, what it enforces) for running tests in `root` in isolation."""
    kind, program = _mechanism()
    if kind == "bwrap":
        root = str(root)
        bind = ["--bind", root, root, "--chdir", root]
        return [program, *BWRAP_BASE, *bind, *BWRAP_UNSHARE, "--"], BWRAP_ENFORCES
    return [program, "--net", "--"], UNSHARE_ENFORCES


@functools.cache
def _mechanism():
    """The first mechanism that actually works here (probed once: installed is not enough)."""
    bwrap, unshare = shutil.which("bwrap"), shutil.which("unshare")
    if bwrap and _works([bwrap, *BWRAP_BASE, *BWRAP_UNSHARE, "--"]):
        return "bwrap", bwrap
    if unshare and _works([unshare, "--net", "--"]):
        return "unshare", unshare
    raise IsolationUnavailable(
        "--isolate needs bubblewrap (Debian/Ubuntu: apt-get install bubblewrap) or a "
        "working `unshare --net` (root or unprivileged user namespaces); neither works here"
    )


def _works(prefix):
    try:
        return subprocess.run([*prefix, "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False
