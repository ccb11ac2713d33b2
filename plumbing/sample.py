"""The sample repository as the harness started with it, and careful file access to copies.

`copy_sample(parent)` makes the fresh temporary copy every run works on, from the bytes
read when the harness started (`SAMPLE_FILES`). `read_regular_file` and
`write_atomically` are how the harness reads and writes a file that code it ran may have
tampered with.

Not here: the tools (repo_tools.py) or the verdict (verdict.py). Nothing ever writes to
`sample_repo/` itself.
"""

import codecs
import os
import stat
import sys
import tempfile
from pathlib import Path
from typing import NamedTuple

from plumbing.redact import redact

SAMPLE_REPO = Path(__file__).resolve().parent.parent / "sample_repo"
SOURCE_FILE = "path_rules.py"
TEST_FILE = "tests/test_path_rules.py"
SOURCE_LIMIT = 1_000_000  # bytes of path_rules.py judged, and edited by replace_text, at most
# subtle: a helper named like a module Python or pytest imports would be found first, from
# the copy's folder, by the runs of the tests: a task may not shadow them, nor the tests/
# package its test file is collected from; and pytest collects a `test_*.py` or `*_test.py`
# beside path_rules.py as a test file of its own (its tests are not the task's)
NOT_HELPERS = {
    "conftest", "path_rules", "tests", "pytest", "_pytest", "py", "pluggy", "iniconfig",
    "packaging", "pygments", "colorama", "tomli", "exceptiongroup",
    "typing_extensions",  # exceptiongroup's, imported by pytest's start on Python 3.10
}  # fmt: skip


def _snapshot(folder):
    """{relative path: bytes} of the files under `folder` (caches left out)."""
    files = sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in files}


# subtle: read once, when the harness starts. With --no-isolate the edited code can rewrite
# sample_repo/ itself; every copy, and the verdict's idea of "the unchanged tests", come
# from these bytes instead, so such a rewrite cannot pass for the original.
SAMPLE_FILES = _snapshot(SAMPLE_REPO)
PRISTINE_TESTS = SAMPLE_FILES[TEST_FILE]


def copy_sample(parent, source=None, tests=None, helpers=None):
    """A fresh copy of the sample inside the directory `parent` (as the harness started
    with it), optionally with `source` (bytes) as its path_rules.py, `tests` (bytes, a
    task's: harness/tasks.py) as its test file, and `helpers` ({name: bytes}, a task's
    modules beside path_rules.py) written beside it."""
    root = Path(parent) / "repo"
    given = {SOURCE_FILE: source, TEST_FILE: tests}
    for name, data in SAMPLE_FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data if given.get(name) is None else given[name])
    for name, data in (helpers or {}).items():
        (root / name).write_bytes(data)
    return root


def helper_name(file_name):
    """Whether `file_name` may be a task's module beside path_rules.py: `NAME.py`, NAME a
    plain lower-case identifier that names no module of Python's and none pytest needs or
    collects."""
    stem, dot, suffix = file_name.partition(".")
    return (
        dot == "." and suffix == "py" and stem.isidentifier() and stem.isascii()
        and stem == stem.lower() and stem not in NOT_HELPERS
        and stem not in sys.stdlib_module_names
        and not stem.startswith("test_") and not stem.endswith("_test")
    )  # fmt: skip


def read_regular_file(path, limit):
    """Up to `limit` + 1 bytes of `path`, read as the edited code may have left it.

    subtle: a link is not followed, and anything but a regular file is refused before it is
    read: a FIFO put there by the tests would block the harness for good.
    """
    return _read_with_size(path, limit)[0]


def _read_with_size(path, limit):
    """(up to `limit` + 1 bytes, the size in bytes), both of the one file opened."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    descriptor = os.open(path, flags)
    with os.fdopen(descriptor, "rb") as file:
        status = os.fstat(file.fileno())
        if not stat.S_ISREG(status.st_mode):
            raise OSError(f"{Path(path).name} is not a regular file")
        return file.read(limit + 1), status.st_size


class FileText(NamedTuple):
    """What `read_text` read of a file."""

    text: str
    whole: bool  # the whole file was read
    size: str  # the file's size for a reader: "N characters" when whole, else "N bytes"


def read_text(path, characters, limit=None):
    """A FileText: at most the first `characters` + 1 characters of the UTF-8 file `path`,
    read as `read_regular_file` reads (never a link, never anything but a regular file,
    never blocking), whether that was the whole file, and the file's size in words.
    UnicodeDecodeError when the part read is not UTF-8. With `limit`, the file is whole
    only when it holds at most that many bytes, whatever its characters (replace_text's
    SOURCE_LIMIT).

    subtle: at most 4 bytes a character plus one are read: a sparse file of a gigabyte
    costs no more than a small one.
    """
    limit = 4 * (characters + 1) if limit is None else limit
    # subtle: the size is the opened file's, not another lookup of `path`, which the
    # edited code's leftovers could have replaced with a link in between
    data, size = _read_with_size(path, limit)
    if len(data) <= limit:
        text = data.decode("utf-8")
        return FileText(text, True, f"{len(text)} characters")
    # an incremental decoder keeps a character cut at the limit back instead of failing
    text = codecs.getincrementaldecoder("utf-8")().decode(data[:limit], final=False)
    return FileText(text, False, f"{size} bytes")


def write_atomically(target, data):
    """Replace `target` with `data`, keeping its mode: readers see the old file or the new one.

    subtle: a plain write truncates first; anything failing after that (an encoding error, a
    full disk, Ctrl-C) would leave a half-written or empty file behind.
    """
    mode = stat.S_IMODE(os.stat(target).st_mode)
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        os.unlink(temporary)
        raise


def tests_unchanged(root, tests=None):
    """Whether the copy's test file is byte-identical to the one the run was given: `tests`
    (bytes), else the sample's (False if unreadable)."""
    original = PRISTINE_TESTS if tests is None else tests
    try:
        return read_regular_file(Path(root) / TEST_FILE, len(original)) == original
    except OSError:
        return False


def final_source(root):
    """The copy's source as the run left it, redacted, read as carefully as the report."""
    try:
        data = read_regular_file(Path(root) / SOURCE_FILE, SOURCE_LIMIT)
    except OSError as error:
        return f"[{SOURCE_FILE} cannot be read: {error.strerror or error}]"
    return redact(data[:SOURCE_LIMIT].decode("utf-8", errors="replace"))
