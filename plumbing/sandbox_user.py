"""The sandbox user: as root, each isolated run's code runs as a user of its own (isolation.py
steps down to it), drawn for the folder it works in (`user_for`: the runs in one copy are
one user); what a run hands to that user, and what of it is left after the run.

No process outside a run holds the run's user, so none reaches what the run was handed:
- `fresh_user()` draws a uid (and the gid of the same number) that no passwd or group entry
  names and no process holds. The kernel lets a process into another's working folder
  through /proc/<pid>/cwd only when both are one user (or it holds CAP_SYS_PTRACE): a
  process of `nobody`, or another run's, is another user and stops there.
- `hand_over(writable, readable, user)` gives a run its folders, made that user's, and only
  folders that sit inside a folder only root may enter (what `tempfile.mkdtemp` makes): no
  path leads to them for anyone but root and the run's own sandbox (network-only's code,
  which may search and read every folder, still writes none of another user's).
- `outsider(user)` is why a run fails when a process of its user is alive after it outside
  its sandbox: each run's processes live in a PID namespace of their own and die with it,
  so none should be.

Not here: how the code becomes its user (isolation.py), how a run is bounded and killed
(child_process.py).
"""

import grp
import os
import pwd
import secrets
import stat
import time
from pathlib import Path

# Ids systemd leaves unused below 2**31 (past it, tools that take an id as signed break):
# above the users', the dynamic ones, nobody, and the ranges given to containers
# (systemd.io/UIDS-GIDS). Where this user namespace maps none of them (a container that
# maps 65,536 ids), any id it maps from LOWEST up, but nobody's and (uid_t) -1 of 16 bits.
FIRST, LAST = 0x70000000, 0x7FFDFFFF
LOWEST, NOBODY = 1000, (65534, 65535)


def as_root():
    return hasattr(os, "geteuid") and os.geteuid() == 0


def fresh_user():
    """An id for one run, as its uid and its gid: mapped in this user namespace, named by no
    passwd or group entry, and held by no process (as real, effective, saved or file-system
    uid or gid). OSError when none is found in 64 draws.

    subtle: named by no entry, not only held by no process: under network-only, the code may
    search every folder, and it could write whatever files a user of that id owns.
    """
    mapped = _common(_mapped("uid_map"), _mapped("gid_map"))
    spans = _common(mapped, [(FIRST, LAST)]) or _common(mapped, [(LOWEST, LAST)])
    held = {i for _, fields in _processes() for k in ("Uid", "Gid") for i in fields.get(k, ())}
    for _ in range(64 if spans else 0):
        first, last = spans[secrets.randbelow(len(spans))]
        user = first + secrets.randbelow(last - first + 1)
        if user not in NOBODY and str(user) not in held and not _named(user):
            return user
    raise OSError("no user id is free to run the tests as")


DYING = 2.0  # seconds a run's own processes may take to be gone after it
_USERS = {}  # folder -> the id of the runs in it, for this process's life


def user_for(folder):
    """The id the runs in `folder` run as: drawn (`fresh_user`) for its first run, kept for
    the later ones. subtle: per folder, not per run: the tools' copy is one folder over a
    whole live run, and what one run_tests leaves there (a cache, a file the code writes)
    the next must be able to change; another copy, a verdict's or another run's, is another
    user, so none reaches the other's."""
    key = os.path.realpath(folder)
    if key not in _USERS:
        user = fresh_user()
        while user in _USERS.values():  # free of processes, but another folder's
            user = fresh_user()
        _USERS[key] = user
    return _USERS[key]


def names(user):
    """USER and LOGNAME for `user`'s environment: getpass reads them before the passwd entry
    the user has none of (pytest names its tmp_path folder so).

    subtle: a name of its own: network-only's /tmp is the machine's, and pytest refuses a
    /tmp/pytest-of-NAME that another user made."""
    return [f"USER=sandbox-{user}", f"LOGNAME=sandbox-{user}"]


def _mapped(name):
    """[(first, last)] of the ids this user namespace maps (/proc/self/uid_map or gid_map)."""
    try:
        rows = [line.split() for line in Path("/proc/self", name).read_text().splitlines()]
    except OSError:  # no user namespaces here: every id is the machine's
        return [(0, 2**32 - 2)]
    return [(int(row[0]), int(row[0]) + int(row[2]) - 1) for row in rows if len(row) == 3]


def _common(spans, others):
    """The ids both lists of spans hold, as spans."""
    both = [(max(a, c), min(b, d)) for a, b in spans for c, d in others]
    return [(first, last) for first, last in both if first <= last]


def _named(user):
    """Whether a passwd entry names `user` as a uid or a group entry names it as a gid."""
    for lookup in (pwd.getpwuid, grp.getgrgid):
        try:
            lookup(user)
            return True
        except KeyError:
            pass
    return False


def hand_over(writable, readable, user):
    """Make each `writable` folder the run's `user`'s and each `readable` one readable by
    all, once each is found inside a folder only root may enter (ValueError if one is not).

    subtle: the sandbox's own way in, through that root-only folder: under bubblewrap the
    folder is bound at its path and the folders on the way down are made anew inside, open
    to all (isolation._way_to); under network-only the code keeps CAP_DAC_READ_SEARCH
    (isolation.READS_EVERYTHING), which searches any folder. Every other user stops at it.
    """
    for folder in (*writable, *readable):
        if not any(map(_root_only, Path(os.path.realpath(folder)).parents)):
            raise ValueError(f"{folder} is handed to the tests, so it must sit inside a "
                             "folder only root may enter (mode 0700, root's)")  # fmt: skip
    for folder in writable:
        _hand_to(folder, user)
    for folder in readable:
        if stat.S_ISDIR(os.lstat(folder).st_mode):
            os.chmod(folder, 0o755)  # still root's: the run reads it and writes nothing there


def _root_only(folder):
    """Whether no one but root may enter `folder` (one such folder on the way is enough)."""
    info = os.lstat(folder)
    return info.st_uid == 0 and not info.st_mode & 0o077


def _hand_to(folder, user):
    """Make `folder` itself `user`'s, so the tests may create files in it (what it holds
    stays as it is: readable, not writable, unless an earlier run's tests made it).

    subtle: the folder only, never what it holds: a hard link that an unisolated run left
    in the copy may be /etc/shadow, and handing that to the run would give it away. Its mode
    again too: an earlier run's code may have opened its folder to all.
    """
    if stat.S_ISDIR(os.lstat(folder).st_mode):
        # group root: bwrap itself, uid 0 without its capabilities, must still enter it
        os.chown(folder, user, 0, follow_symlinks=False)
        os.chmod(folder, 0o770, follow_symlinks=False)


def outsider(user, seconds=DYING):
    """Why a test run fails, as root, while a process of its `user` runs in this harness's
    own PID namespace after it: outside the run's sandbox, since each run's processes live in
    a PID namespace of their own and die with it. None when there is none.

    subtle: processes the kernel is still killing in the run's own namespace (bubblewrap may
    end before they are reaped) are waited for, up to `seconds`: when the harness goes on, or
    exits on Ctrl-C, nothing of the run is alive. One in this namespace would have left its
    sandbox, and could reach the folders the run was handed while it lasts.
    """
    if not as_root():
        return None  # the run's user is then the harness's own: nothing to tell apart
    try:
        own = os.readlink("/proc/self/ns/pid")
    except OSError:  # no /proc: no PID namespace either
        return None
    end = time.monotonic() + seconds
    while True:
        dying = False
        for pid, fields in _processes():
            if str(user) not in fields.get("Uid", ()):  # real, effective, saved, file system
                continue
            try:
                if os.readlink(f"/proc/{pid}/ns/pid") != own:
                    dying = True  # in the run's own namespace: the kernel is ending it
                    continue
            except OSError:  # it ended while it was looked at
                continue
            name = " ".join(fields.get("Name", ()))
            return (
                f"a process of this run's sandbox user (uid {user}) outlived the run outside "
                f"its sandbox (pid {pid}, {name}): it could have changed what the tests saw, "
                "so the run does not pass"
            )
        if not dying or time.monotonic() > end:
            return None
        time.sleep(0.01)


def _processes():
    """(pid, {"Name", "Uid", "Gid": their words}) of each process /proc shows.

    subtle: asked twice around every sandboxed run, of every process on the machine, so
    read as cheaply as it can be (half the time of a Path's read_text and every line
    split): one read of the file's start, and its lines only up to Gid, which follows
    Name and Uid in every kernel's status file."""
    for pid in filter(str.isdigit, os.listdir("/proc") if os.path.isdir("/proc") else ()):
        try:
            status = os.open(f"/proc/{pid}/status", os.O_RDONLY)
            try:
                start = os.read(status, 4096)  # Name, Uid and Gid are in its first lines
            finally:
                os.close(status)
        except OSError:  # not a process, or it ended while it was read
            continue
        fields = {}
        for line in start.decode(errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key in ("Name", "Uid", "Gid"):
                fields[key] = value.split()
                if key == "Gid":
                    break
        yield pid, fields
