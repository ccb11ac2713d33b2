"""Where record_run.py writes a recording: the name it makes up, and the places it refuses.

`default_output(model)` is runs/NAME-TIMESTAMP.json: the learner's own folder, never among
the lab's recordings. `output_problem(path, force)` says why `path` must not be written (a
folder; a link, a device or a FIFO; a file that exists, without --force; a place where
nothing can be made), or None. Both are asked before
anything runs, so that a live attempt is never lost for want of a place to save it.

Not here: writing the recording (harness/recording.py's `save`, atomic).
"""

import datetime
import os
import re
import stat
import tempfile
from pathlib import Path

from harness.recording import RUNS


def default_output(model):
    """runs/NAME-TIMESTAMP.json; for a model given as a file path, NAME is its stem.

    subtle: the name must never start with "-", or replay.py would take it for an option.
    """
    stem = Path(model).stem if Path(model).suffix.lower() in (".gguf", ".bin") else model
    name = re.sub(r"[^A-Za-z0-9.-]+", "-", stem).lstrip("-.") or "model"
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")
    return RUNS / f"{name}-{stamp}.json"


def output_problem(path, force):
    """Why the recording must not be written to `path` (`force`: --force), or None."""
    if path.is_dir():
        return f"{path} is a folder; give --output a file name"
    if not regular_or_new(path):  # with --force, os.replace would put a file in its place
        return (
            f"{path} is not a regular file (a link, a device or a FIFO); "
            "give --output the name of a new or a regular file"
        )
    if path.exists() and not force:
        return f"{path} exists; choose another --output or add --force"
    if not writable(path):
        return f"{path} cannot be written here; choose another --output"
    return None


def regular_or_new(path):
    """Whether `path` is absent or a regular file (not a link, a device, a FIFO)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except (FileNotFoundError, NotADirectoryError):  # new: writable() says if it can be made
        return True


def writable(path):
    """Whether `path` could be created: its nearest existing folder takes a new folder.

    Checked before anything runs, so a live attempt is never lost for want of a place."""
    folder = Path(path).absolute().parent
    while not folder.exists():
        folder = folder.parent
    try:  # subtle: os.access says yes to root everywhere; only trying tells the truth
        with tempfile.TemporaryDirectory(dir=folder, prefix=".agent-lab-check-"):
            return True
    except OSError:
        return False
