"""Temporary folders that the edited code may have filled, removed whatever they hold.

`scratch_folder(prefix)` is `tempfile.TemporaryDirectory` for folders that tests ran in:
the edited code can leave a tree thousands of folders deep there (shutil.rmtree recurses,
and fails with RecursionError on Python 3.10 to 3.12; a path that deep is also longer than
the system allows). `remove_tree` walks down and back up one folder at a time, relative to
an open descriptor, never following a link, holding one descriptor at a time. A folder that
cannot be removed is a warning on stderr, never an exception: a run's verdict and its
recording matter more than a temporary folder.

Not here: what runs in the folders (verdict.py, record_run.py, replay.py).
"""

import contextlib
import os
import signal
import stat
import sys
import tempfile
import threading

FOLDER = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0)


@contextlib.contextmanager
def scratch_folder(prefix="agent-lab-"):
    """A new temporary folder (its path as text), removed on the way out, come what may."""
    path = tempfile.mkdtemp(prefix=prefix)
    try:
        yield path
    finally:
        try:
            with ctrl_c_held():  # a second Ctrl-C waits until the folder is gone
                remove_tree(path)
        except Exception as error:  # noqa: BLE001 -- a leftover folder must not cost a run
            print(
                f"warning: could not remove the temporary folder {path}: {error}", file=sys.stderr
            )


@contextlib.contextmanager
def ctrl_c_held():
    """Hold SIGINT back while inside (in the main thread, where Python handles it)."""
    held = threading.current_thread() is threading.main_thread() and hasattr(
        signal, "pthread_sigmask"
    )
    if held:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        if held:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def remove_tree(path):
    """Remove the folder `path` and everything in it, without recursion."""
    current = os.open(path, FOLDER)
    below = []  # the names walked down from `path`, so the way back up can remove them
    try:
        while True:
            child = _empty_but_folders(current)
            if child is not None:
                descended = os.open(child, FOLDER, dir_fd=current)
                os.close(current)
                current = descended
                below.append(child)
                continue
            if not below:
                break
            parent = os.open("..", FOLDER, dir_fd=current)
            os.close(current)
            current = parent
            os.rmdir(below.pop(), dir_fd=current)
    finally:
        os.close(current)
    os.rmdir(path)


def _empty_but_folders(folder):
    """Unlink every non-folder entry of the open `folder`; return one subfolder's name, or
    None when the folder is empty."""
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                return entry.name
            try:
                os.unlink(entry.name, dir_fd=folder)
            except PermissionError:  # a read-only folder left by the tests: make it writable
                os.chmod(folder, stat.S_IRWXU)
                os.unlink(entry.name, dir_fd=folder)
    return None
