"""Isolated test runs: what the OS offers to keep model-edited code away from the network,
the disk and the harness.

`isolation_kind()` names the best mechanism that works on this machine (probed once:
installed is not enough), in this order:
- "bubblewrap" (`bwrap`): no capability (even when the harness runs as root), a new user
  namespace where the kernel allows one, new network, PID and IPC namespaces; a file
  system made of the system folders and the Python installation, read-only, an empty
  private /tmp, and the folders bound writable (the temporary copy and the fresh folder
  the test report goes to); a new session; it dies with the harness. Nothing else of the
  machine is there: no home folder, no /run, no Unix socket of another program (a new
  network namespace does not stop a connect() to a socket file: D-Bus or Docker's would
  reach outside). In its own PID namespace the test process sees none of the harness's
  processes (so not their `/proc/<pid>/environ`), and everything it starts dies when the
  run ends, `setsid` or not.
- "network-only" (`unshare --net`, where it works: root, or user namespaces allowed): no
  network, nothing else; the code can still write wherever you can and read your processes
  (as root: anywhere, the lab's own Python installation included).
- "none": neither works; the tests run with your permissions.
`isolation_prefix(kind, writable)` is the command prefix `run_pytest` puts before
`python -m pytest`, and `notice(isolate)` the one line a CLI prints at the start when the
tests will not run under bubblewrap.

Not a container and not a security boundary you should bet secrets on: it narrows what a
buggy or hostile edit can reach, on Linux, with tools that are usually already there.
"""

import functools
import os
import shutil
import subprocess
import sys

BUBBLEWRAP, NETWORK_ONLY, NONE = "bubblewrap", "network-only", "none"
KINDS = (BUBBLEWRAP, NETWORK_ONLY, NONE)

# What the tests need to run Python, read-only; the Python installation is added to it.
SYSTEM_FOLDERS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
BWRAP_UNSHARE = [
    # subtle: a bwrap started by root keeps every capability unless told otherwise, and
    # with CAP_SYS_ADMIN the tests could remount the read-only binds writable or mount the
    # machine's disk. Dropped, and a user namespace where the kernel allows one besides.
    "--cap-drop",
    "ALL",
    "--unshare-user-try",
    "--unshare-net",
    "--unshare-pid",
    "--unshare-ipc",
    "--die-with-parent",
    "--new-session",  # subtle: without it, the tests could push keystrokes into your terminal
]


def isolation_prefix(kind, writable=(), readable=()):
    """The command prefix running a command under `kind`, with `writable` folders writable
    and `readable` ones bound read-only.

    The first folder named is the working directory. Start the prefixed command with the
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
    for folder in map(str, readable):
        binds += ["--ro-bind", folder, folder]
    folders = [*writable, *readable]
    chdir = ["--chdir", str(folders[0])] if folders else []
    return [shutil.which("bwrap"), *bwrap_mounts(), *binds, *chdir, *BWRAP_UNSHARE, "--"]


def bwrap_mounts():
    """The sandbox's file system: system folders and this Python, read-only, a fresh /tmp.

    subtle: binding all of `/` read-only would still let the tests connect() to every Unix
    socket on the machine (D-Bus, Docker, X11): only what is mounted is there at all.
    """
    mounts = []
    for folder in SYSTEM_FOLDERS:
        mounts += ["--ro-bind-try", folder, folder]
    mounts += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    for folder in _python_folders():  # after /tmp: a checkout may live under /tmp
        mounts += ["--ro-bind", folder, folder]
    return mounts


def _python_folders():
    """The folders this interpreter and its packages live in, outside the system folders."""
    found = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    found.add(os.path.dirname(os.path.dirname(os.path.realpath(sys.executable))))
    found = {os.path.realpath(folder) for folder in found} | found
    inside = tuple(f"{folder}/" for folder in SYSTEM_FOLDERS)
    return sorted(f for f in found if os.path.isdir(f) and not f"{f}/".startswith(inside))


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
    if bwrap and _works([bwrap, *bwrap_mounts(), *BWRAP_UNSHARE, "--"]):
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
