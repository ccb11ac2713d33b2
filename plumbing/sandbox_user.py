"""The sandbox user: as root, the edited code runs as `nobody` (isolation.py); what a run
hands to that user, and what else of that user could reach it.

What a run may write is made `nobody`'s for the run, so another process of `nobody` could
write it too if it found a way there. Three things keep every way closed:
- `hand_over(writable, readable)` gives a run its folders, and only folders that sit inside
  a folder only root may enter (what `tempfile.mkdtemp` makes): no path leads to them for
  anyone but root and the run's own sandbox.
- `one_at_a_time(alone)`: a network-only run (which may search every folder) holds the
  machine's sandbox lock for itself, so no other run of the lab is live beside it.
- `outsider()` is why a run fails when a process of `nobody` runs outside every
  sandbox: the kernel lets a process into the working folder of another of its own user's
  through /proc/<pid>/cwd, whatever folder holds it.

Not here: how the code becomes `nobody` (isolation.py), how a run is bounded and killed
(child_process.py).
"""

import contextlib
import fcntl
import os
import stat
from pathlib import Path

SANDBOX_USER = 65534  # nobody
# One lock for the machine, where only root may make it: not under /tmp, where `nobody`
# could make the file first and hold it.
LOCK = Path("/run/agent-lab-sandbox.lock")


def as_root():
    return hasattr(os, "geteuid") and os.geteuid() == 0


def hand_over(writable, readable):
    """Make each `writable` folder the sandbox user's and each `readable` one readable by
    all, once each is found inside a folder only root may enter (ValueError if one is not).

    subtle: the sandbox's own way in, through that root-only folder: under bubblewrap the
    folder is bound at its path and the folders on the way down are made anew inside, open
    to all (isolation._way_to); under network-only the code keeps CAP_DAC_READ_SEARCH
    (isolation.NOBODY_WHO_READS), which searches any folder. Every other `nobody` stops at it.
    """
    for folder in (*writable, *readable):
        if not any(map(_root_only, Path(os.path.realpath(folder)).parents)):
            raise ValueError(f"{folder} is handed to the tests, so it must sit inside a "
                             "folder only root may enter (mode 0700, root's)")  # fmt: skip
    for folder in writable:
        _hand_to_sandbox_user(folder)
    for folder in readable:
        if stat.S_ISDIR(os.lstat(folder).st_mode):
            os.chmod(folder, 0o755)  # still root's: the run reads it and writes nothing there


def _root_only(folder):
    """Whether no one but root may enter `folder` (one such folder on the way is enough)."""
    info = os.lstat(folder)
    return info.st_uid == 0 and not info.st_mode & 0o077


def _hand_to_sandbox_user(folder):
    """Make `folder` itself `nobody`'s, so the tests may create files in it (what it holds
    stays as it is: readable, not writable, unless the tests made it).

    subtle: the folder only, never what it holds: a hard link that an unisolated run left
    in the copy may be /etc/shadow, and handing that to `nobody` would give it away.
    """
    info = os.lstat(folder)
    if stat.S_ISDIR(info.st_mode) and info.st_uid != SANDBOX_USER:
        # group root: bwrap itself, uid 0 without its capabilities, must still enter it
        os.chown(folder, SANDBOX_USER, 0, follow_symlinks=False)
        os.chmod(folder, 0o770, follow_symlinks=False)


@contextlib.contextmanager
def one_at_a_time(alone):
    """As root with `alone` (a network-only run), hold the machine's sandbox lock while
    inside: no two such runs are live at once.

    subtle: a network-only run's `nobody` may search every folder (CAP_DAC_READ_SEARCH), so
    the root-only folder that stops every other `nobody` does not stop it: beside another
    live run it could write that run's copy. Bubblewrap's runs see no folder but their own
    and take no lock; where the lock cannot be made (no /run), the runs go on without it."""
    if not (alone and as_root()):
        yield
        return
    try:
        held = os.open(LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError:
        held = None
    try:
        if held is not None:
            fcntl.flock(held, fcntl.LOCK_EX)  # released when closed
        yield
    finally:
        if held is not None:
            os.close(held)


def outsider():
    """Why a test run fails, as root, while a process of the sandbox user runs in
    this harness's own PID namespace: outside every sandbox, since each run's processes
    live in a PID namespace of its own and die with it. None when there is none.

    subtle: such a process reaches a live run whatever folder holds it: /proc/<pid>/cwd of
    a test process of the same user is its copy (the kernel checks the user, not the path).
    Found after each run, so a run it was alive to change cannot pass; it may be a
    service the machine runs as `nobody`, which can reach the runs all the same.
    """
    if not as_root():
        return None  # the sandbox user is then the harness's own user: nothing to tell apart
    try:
        own = os.readlink("/proc/self/ns/pid")
    except OSError:  # no /proc: no PID namespace either
        return None
    for entry in os.scandir("/proc"):
        try:
            if not entry.name.isdigit() or os.readlink(f"{entry.path}/ns/pid") != own:
                continue
            status = Path(entry.path, "status").read_text(errors="replace").splitlines()
        except OSError:  # it ended while it was looked at
            continue
        fields = dict(line.split(":", 1) for line in status if ":" in line)
        if str(SANDBOX_USER) in fields.get("Uid", "").split():  # real, effective, saved, fs
            name = fields.get("Name", "").strip()
            return (
                f"a process of the sandbox user nobody runs outside the sandbox (pid "
                f"{entry.name}, {name}): it could change what a run's tests see, so no run "
                "passes while it lives; stop it and run again"
            )
    return None
