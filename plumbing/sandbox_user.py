"""The sandbox user: as root, the edited code runs as `nobody` (isolation.py); what a run
hands to that user, and what else of that user could reach it.

What a run may write is made `nobody`'s for the run, so another process of `nobody` could
write it too if it found a way there. `hand_over(writable, readable)` gives a run its
folders, and only folders that sit inside a folder only root may enter (what
`tempfile.mkdtemp` makes): no path leads to them for anyone but root and the run's own
sandbox.

Not here: how the code becomes `nobody` (isolation.py), how a run is bounded and killed
(child_process.py).
"""

import os
import stat
from pathlib import Path

SANDBOX_USER = 65534  # nobody


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
