"""Isolated test runs: what the OS offers to keep model-edited code away from the network,
the disk and the harness.

`isolation_kind()` names the best mechanism that works on this machine (probed once:
installed is not enough), in this order:
- "bubblewrap" (`bwrap`): no capability and no root. A harness that is not root gets a
  new user namespace where the kernel allows one; a harness that is root runs the tests as
  a user of the run's own (a uid and gid no one else holds, drawn for each copy:
  plumbing/sandbox_user.py; `setpriv`), since uid 0 in any namespace of its own is still
  the machine's root to the kernel: it could write kernel settings in /proc/sys and read
  /etc/shadow. New network, PID and IPC namespaces; a file system made of the system
  folders and the Python installation, read-only, an empty private /tmp of 32 MB, and the
  folders bound writable (the temporary copy and the fresh folder the test report goes to;
  as root, handed to the run's user); a new session; it dies with the harness. Nothing
  else of the machine is there: no home folder, no /run, no Unix socket of another program
  (a new network namespace does not stop a connect() to a socket file: D-Bus or Docker's
  would reach outside). In its own PID namespace the test process sees none of the
  harness's processes (so not their `/proc/<pid>/environ`), and everything it starts dies
  when the run ends, `setsid` or not.
- "network-only" (`unshare --net --pid`, where it works: root, or user namespaces
  allowed): no network, and a PID namespace and /proc of its own (the code sees only its
  own processes, and all it starts dies with the run); it can still read and write
  whatever you can. A harness that is root runs it as the run's own user, who may read
  everything (READS_EVERYTHING) but writes only what anyone may (/tmp) and the folders
  handed to it: never the lab's files, its `.venv/`, a kernel setting or another run's
  folders. It protects the network and, as root, your files from writes, so a recording
  from elsewhere is not replayed under it.
- "none": neither works; the tests run with your permissions.
`isolation_prefix(kind, writable, readable, user)` is the command prefix
`child_process.run_isolated` puts before `python -m pytest` or the held-out child (as root,
as `user`, handed the run's folders: plumbing/sandbox_user.py), `notice(isolate)` the one
line a CLI prints at the start when the tests will not run under bubblewrap, and
`refused(isolate)` why a live run may not start at all (as root, where nothing isolates the
edited code); `isolation_flags(parser, help)` adds the CLIs' `--no-isolate` and `--isolate`.

Not a container and not a security boundary you should bet secrets on: it narrows what a
buggy or hostile edit can reach, on Linux, with tools that are usually already there.
"""

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

from plumbing import installed_files
from plumbing.bounds import TMP_SIZE
from plumbing.sandbox_user import as_root, fresh_user, hand_over, names

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
# subtle: as root, a user namespace maps uid 0 inside to uid 0 outside, and a write to
# /proc/sys checks only for that uid, capabilities or not. So root keeps no user namespace
# and runs the command as the run's own user (`_as_user`): bwrap keeps the three
# capabilities setpriv needs to change user and empty the bounding set; setpriv drops them.
AS_ROOT = ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP"]
NO_CAPABILITY = ["--inh-caps=-all", "--bounding-set=-all", "--"]
# subtle: in a PID namespace of its own the run's first process is its init; when it ends,
# the kernel kills every other process in it (double fork, `setsid` or not). --kill-child
# ends it when unshare is killed (the group kill ending a run), setpriv's --pdeathsig ends
# unshare when the harness dies outright; --mount-proc: a /proc of its own processes only.
UNSHARE = ["--net", "--pid", "--kill-child", "--mount-proc"]
# As root, network-only runs the code as the run's own user too (else it could write the
# lab's .venv/ and folders), keeping one capability: to read and search any folder
# (CAP_DAC_READ_SEARCH), to reach this Python under /root (pyenv's) and the harness's private
# temporary folders. Reading is what network-only never protected; it writes nothing of
# another user's (another run's folders included). No new privileges: a set-user-ID
# program it runs stays the run's user's.
READS_EVERYTHING = [
    "--no-new-privs",
    "--pdeathsig=KILL",  # subtle: --kill-child's, which the change of user above cleared
    "--inh-caps=-all,+dac_read_search",
    "--ambient-caps=+dac_read_search",
    "--bounding-set=-all,+dac_read_search",
    "--",
]


def isolation_prefix(kind, writable=(), readable=(), user=None):
    """The command prefix running a command under `kind`, with `writable` folders writable
    and `readable` ones bound read-only; as root, as `user` (a fresh one when None), to whom
    the `writable` folders are handed.

    The first folder named is the working directory. Start the prefixed command with the
    minimal environment: bubblewrap's own environment is readable inside the sandbox (it is
    `/proc/1/environ` there).
    """
    if kind != BUBBLEWRAP:  # the code may write the installation: the next verdict looks again
        installed_files.ran_outside_bubblewrap()
    if kind == NONE:
        return []
    named = []
    if as_root():  # only inside a folder only root may enter (plumbing/sandbox_user.py)
        user = fresh_user() if user is None else user
        hand_over(writable, readable, user)
        named = [shutil.which("env") or "/usr/bin/env", *names(user)]  # its name: no passwd
    if kind == NETWORK_ONLY:
        return [*named, *_network_only(user)]
    binds = []
    for folder in map(str, writable):
        binds += [*_way_to(folder), "--bind", folder, folder]
    for folder in map(str, readable):
        binds += [*_way_to(folder), "--ro-bind", folder, folder]
    folders = [*writable, *readable]
    chdir = ["--chdir", str(folders[0])] if folders else []
    mounts = [*bwrap_mounts(), *binds, *chdir]
    return [*named, shutil.which("bwrap"), *mounts, *_unshare_and_user(user)]


def _network_only(user):
    """`unshare` (UNSHARE), dying with the harness, and as root the step down to `user`,
    who may read (READS_EVERYTHING)."""
    setpriv = shutil.which("setpriv") or "setpriv"
    unshare = [setpriv, "--pdeathsig", "KILL", "--", shutil.which("unshare"), *UNSHARE, "--"]
    if not as_root():
        return unshare
    return [*unshare, setpriv, *_as_user(user), *READS_EVERYTHING]


def _as_user(user):
    return [f"--reuid={user}", f"--regid={user}", "--clear-groups"]  # setpriv's: uid and gid


def _unshare_and_user(user):
    """What follows the mounts: the namespaces, and as root the step down to `user`; where
    this bubblewrap can (0.8.0 and later), no user namespace may be made inside."""
    if not as_root():
        if not _says("--disable-userns"):
            return [*BWRAP_UNSHARE, "--"]
        unshared = [flag for flag in BWRAP_UNSHARE if flag != "--unshare-user-try"]
        return [*unshared, "--unshare-user", "--disable-userns", "--"]
    return [*_stepped_down(user), *_no_user_namespaces()]


def _stepped_down(user):
    """As root, what follows the mounts up to the step down to `user`, included."""
    unshared = [flag for flag in BWRAP_UNSHARE if flag != "--unshare-user-try"]
    setpriv = shutil.which("setpriv") or "setpriv"
    return [*unshared, *AS_ROOT, "--", setpriv, *_as_user(user), *NO_CAPABILITY]


_second_left_out = False  # as root: whether the second bubblewrap was found not to start here


def _no_user_namespaces():
    """As root, after the step down to the run's user: a second bubblewrap, in the first
    one's file system as it is, whose only work is a user namespace in which no other can be
    made.

    subtle: the run's user may make user namespaces of its own (`unshare -Ur`), and inside
    one it holds every capability over what that namespace owns: more of the kernel to
    reach. The first bubblewrap cannot forbid it: --disable-userns needs a user namespace of
    its own, and root's would map uid 0 inside to the machine's root. The run's user's maps
    its uid, whatever the number, to itself. Left out where it cannot start (a machine that
    keeps user namespaces from users who are not root, and so from the run's user), rather
    than lose bubblewrap; `isolation_kind` finds that out.
    """
    if not _says("--disable-userns") or _second_left_out:
        return []  # bubblewrap before 0.8.0: the code may still make one (docs/defences.md)
    bwrap = shutil.which("bwrap") or "bwrap"
    return [bwrap, "--unshare-user", "--disable-userns", "--dev-bind", "/", "/", "--"]


def bwrap_mounts():
    """The sandbox's file system: system folders and this Python, read-only, a fresh /tmp.

    subtle: binding all of `/` read-only would still let the tests connect() to every Unix
    socket on the machine (D-Bus, Docker, X11): only what is mounted is there at all.
    """
    mounts = []
    for folder in SYSTEM_FOLDERS:
        mounts += ["--ro-bind-try", folder, folder]
    # /tmp as on any machine (1777): the tests may run as another user (`_as_user`); it is
    # memory, so it holds TMP_SIZE at most (bounds.py)
    mounts += ["--dev", "/dev", "--proc", "/proc", "--perms", "01777", *_sized(), "--tmpfs", "/tmp"]
    for folder in _python_folders():  # after /tmp: a checkout may live under /tmp
        mounts += [*_way_to(folder), "--ro-bind", folder, folder]
    return mounts


def _sized():
    """["--size", TMP_SIZE] where this bubblewrap can size a tmpfs (older ones cannot), else
    []: /tmp then still works, bounded by the file-size limit alone (bounds.py)."""
    return ["--size", str(TMP_SIZE)] if _says("--size") else []


def _says(option):
    """Whether this bubblewrap's --help names `option` (older ones lack some)."""
    return option.encode() in _bwrap_help(shutil.which("bwrap"))


@functools.cache
def _bwrap_help(bwrap):
    """What `bwrap --help` prints, for the bwrap at that path (b"" when none runs).

    subtle: kept for each bwrap found, not once: a test that empties the PATH for a while
    would otherwise leave every later sandbox of its process without the options."""
    try:
        said = subprocess.run([bwrap or "bwrap", "--help"], capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):  # no bwrap: no option is needed
        return b""
    return said.stdout + said.stderr


def _way_to(folder):
    """Folders the sandbox makes, open to all, on the way down to where `folder` is bound.

    subtle: bwrap gives a folder it makes on the way the mode of the machine's own, and
    /root or a pytest temporary folder is 0700: the run's user could not reach a Python
    installed under /root, nor a copy under /tmp/pytest-of-root. The sandbox's own are empty
    but for the mount points, so nothing of the machine's is opened by this.
    """
    made = ("/", "/tmp", "/dev", "/proc", *SYSTEM_FOLDERS)
    ancestors = [str(parent) for parent in reversed(Path(folder).parents)]
    inside = tuple(f"{system}/" for system in SYSTEM_FOLDERS)
    way = []
    for ancestor in ancestors:
        if ancestor not in made and not f"{ancestor}/".startswith(inside):
            way += ["--perms", "0755", "--dir", ancestor]
    return way


def _python_folders():
    """The folders this interpreter and its packages live in, outside the system folders."""
    found = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    found.add(os.path.dirname(os.path.dirname(os.path.realpath(sys.executable))))
    found = {os.path.realpath(folder) for folder in found} | found
    inside = tuple(f"{folder}/" for folder in SYSTEM_FOLDERS)
    return sorted(f for f in found if os.path.isdir(f) and not f"{f}/".startswith(inside))


def isolation_flags(parser, help):
    """--no-isolate and --isolate, for a program that runs tests (record_run.py, replay.py):
    `help` says what --no-isolate runs with the user's permissions and what the default
    does, in the program's words."""
    isolation = parser.add_mutually_exclusive_group()
    isolation.add_argument("--no-isolate", dest="isolate", action="store_false", help=help)
    isolation.add_argument(
        "--isolate", action="store_true", help="the default; kept so older commands still work"
    )
    parser.set_defaults(isolate=True)


def chosen(isolate):
    """The kind a run uses: the best one here, or "none" when isolation is turned off."""
    return isolation_kind() if isolate else NONE


def notice(isolate):
    """The line to print before the first test run when it is not under bubblewrap, or None."""
    if not isolate:
        return "tests run unisolated (--no-isolate): the edited code runs with your permissions"
    kind = isolation_kind()
    if kind == NETWORK_ONLY and as_root():
        return (
            "tests run with only the network cut, as a user of their own (the edited code can "
            "read what you can, write only what anyone may): install bubblewrap to isolate them"
        )
    if kind == NETWORK_ONLY:
        return (
            "tests run with only the network cut (the edited code can read and write what you "
            "can): install bubblewrap to isolate them"
        )
    if kind == NONE:
        return "tests run unisolated: install bubblewrap to isolate them"
    if not _says("--disable-userns"):  # see _no_user_namespaces
        return (
            "tests run under a bubblewrap older than 0.8.0, which cannot keep the edited code "
            "from making user namespaces: install bubblewrap 0.8.0 or later to forbid them"
        )
    return None


def refused(isolate):
    """Why a live run may not start here, or None: as root, where nothing isolates the
    tests and --no-isolate was not said, the edited code would run as root."""
    if isolate and as_root() and isolation_kind() == NONE:
        return (
            "nothing isolates the tests here (neither bubblewrap nor unshare works) and you "
            "are root, so the edited code would run as root: install bubblewrap (apt-get "
            "install bubblewrap), or add --no-isolate to run it as root all the same"
        )
    return None


@functools.cache
def isolation_kind():
    """ "bubblewrap", "network-only" or "none": the first mechanism that works here."""
    global _second_left_out
    bwrap, unshare = shutil.which("bwrap"), shutil.which("unshare")
    _second_left_out = False
    try:
        user = fresh_user() if as_root() else None  # one as a run would have
    except OSError:  # a user namespace that maps no id to step down to (root's alone)
        return NONE
    if bwrap and _works([bwrap, *bwrap_mounts(), *_unshare_and_user(user)]):
        return BUBBLEWRAP
    if bwrap and as_root() and _no_user_namespaces():  # the second one may not start here
        if _works([bwrap, *bwrap_mounts(), *_stepped_down(user)]):
            _second_left_out = True
            return BUBBLEWRAP
    if unshare and _works(_network_only(user)):
        return NETWORK_ONLY
    return NONE


def _works(prefix):
    try:
        # the interpreter the tests will run with: `true` may not be on the PATH
        command = [*prefix, sys.executable, "-c", ""]
        return subprocess.run(command, capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False
