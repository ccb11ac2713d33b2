"""A directory tree that can be walked only inside its root, even against a racing writer.

`Tree(root, root_fd)` sees the tree only through a descriptor of its root: nothing is
checked by name and then opened by name. `open(parts)` walks a path one component at a
time from that descriptor, each opened with O_NOFOLLOW relative to the one before, so a
folder swapped for a link between two steps fails the open instead of leading out. A link
met on the way is read (`os.readlink`) and its target walked again from the root under the
same rules: links that stay inside work, links that leave are refused (`Refused`, with
why). `files(parts)` lists the regular files below a path for search, one descriptor per
level, never following a folder link, skipping `.git` (a folder, or a worktree's file),
caches and environments.

Not here: the tools and their limits (readonly_tools.py), anything that writes; Windows
(the walk needs POSIX's `dir_fd` and O_NOFOLLOW).
"""

import codecs
import errno
import os
import stat
import unicodedata
from pathlib import Path

SNIFF_BYTES = 8192  # a NUL byte in the first 8 KB marks a file as binary, as git decides
SEARCH_FILE_BYTES = 2_000_000  # larger files are skipped by search (likely data, not code)
DEPTH_LIMIT = 100  # folders below the searched one that search descends into
LINK_HOPS = 40  # links followed in one path before it counts as a loop (Linux's limit)
# Directories search does not descend into unless asked to search them directly: git's
# internals (refused everywhere), and caches and environments that drown real matches.
SEARCH_PRUNED = {".git", "__pycache__", ".venv", "venv", "node_modules", ".mypy_cache",
                 ".pytest_cache", ".ruff_cache", ".tox"}  # fmt: skip
OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# subtle: O_NONBLOCK so that nothing can block in open(); only regular files are opened.
OPEN_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
CONTROLS = ("Cc", "Zl", "Zp")  # Unicode categories escaped in shown names: they break lines
GIT_REFUSED = ".git holds git's internals; it is not listed, read or searched"
# Why a path cannot be used, completed by the path as the model wrote it.
OUTSIDE = "leads outside the root (through a symlink); it is refused"
LOOP = "cannot be resolved (a symlink loop?)"
MISSING = "does not exist; use list_dir or search to find files"
CHANGED = "changed while it was being opened; try again"


class Refused(Exception):
    """A path that cannot be used; `why` is GIT_REFUSED, OUTSIDE, LOOP, MISSING or CHANGED."""

    def __init__(self, why):
        super().__init__(why)
        self.why = why


class Tree:
    """A directory tree seen only through a descriptor of its root (see the module docstring)."""

    def __init__(self, root, root_fd):
        self.root = root  # its resolved path: absolute link targets are read against it
        self.root_fd = root_fd

    def open(self, parts, follow=True):
        """Walk `parts` (names below root) from root; return (fd, real names, stat).

        `fd` is open on the final file or folder (the caller closes it), or None for what
        is neither (a FIFO, a device: never opened); `real` are the names actually walked,
        links resolved. Raises Refused (or OSError where the file system refused).
        With `follow=False`, any link on the way is refused as CHANGED.
        """
        pending, real, hops = list(parts), [], 0
        folder, final = os.dup(self.root_fd), None
        try:
            while pending:
                name = pending.pop(0)
                if name in ("", "."):
                    continue
                if name == "..":  # only from a link's target: a model's own '..' is refused
                    if not real:
                        raise Refused(OUTSIDE)
                    real.pop()
                    os.close(folder)
                    folder = None
                    folder = self._reopen(real)
                    continue
                if name.lower() == ".git":
                    raise Refused(GIT_REFUSED)
                try:
                    info = os.stat(name, dir_fd=folder, follow_symlinks=False)
                except (FileNotFoundError, NotADirectoryError):
                    raise Refused(MISSING) from None
                if stat.S_ISLNK(info.st_mode):
                    hops += 1
                    if not follow:
                        raise Refused(CHANGED)
                    if hops > LINK_HOPS:
                        raise Refused(LOOP)
                    target = read_link(name, folder)
                    if os.path.isabs(target):
                        if not Path(target).is_relative_to(self.root):
                            raise Refused(OUTSIDE)
                        target = Path(target).relative_to(self.root).as_posix()
                        real = []
                        os.close(folder)
                        folder = None
                        folder = os.dup(self.root_fd)
                    pending[:0] = target.split("/")
                    continue
                real.append(name)
                if stat.S_ISDIR(info.st_mode):
                    child = open_nofollow(name, folder, OPEN_DIR)
                    os.close(folder)
                    folder = child
                elif pending:
                    raise Refused(MISSING)  # a file used as a folder
                elif stat.S_ISREG(info.st_mode):
                    final = open_nofollow(name, folder, OPEN_FILE)
                else:
                    return None, real, info
            if final is None:
                final, folder = folder, None
            return final, real, os.fstat(final)
        finally:
            close_fd(folder)

    def _reopen(self, real):
        """The folder `real` (names of folders, no links), opened again from root."""
        folder = os.dup(self.root_fd)
        try:
            for name in real:
                child = open_nofollow(name, folder, OPEN_DIR)
                os.close(folder)
                folder = child
        except BaseException:
            os.close(folder)
            raise
        return folder

    def files(self, parts, counts):
        """(shown path, bytes or None) for each regular file under `parts`, in sorted order.

        Iterative, one open descriptor per level: a tree of any depth costs no recursion
        and at most DEPTH_LIMIT descriptors; folders deeper are counted in counts["deep"].
        Folder links are not followed (as os.walk); file links are, when they stay inside.
        None stands for a file that is too large or could not be read.
        """
        fd, real, info = self.open(parts, follow=False)
        if fd is None:
            return
        if not stat.S_ISDIR(info.st_mode):
            try:
                yield shown_path(real), head_or_none(fd, info)
            finally:
                os.close(fd)
            return
        stack = [(fd, real, None)]
        try:
            while stack:
                folder, where, subfolders = stack[-1]
                if subfolders is None:  # first visit: its files now, its subfolders after
                    subfolders = []
                    for name in _names(folder):
                        # subtle: a git worktree's `.git` is a file; skip it whatever it is
                        info = None if name.lower() == ".git" else _lstat(name, folder)
                        if info is None:
                            continue
                        if stat.S_ISDIR(info.st_mode):
                            if name.lower() not in SEARCH_PRUNED:
                                subfolders.append(name)
                        elif stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode):
                            data = self._file(folder, [*where, name], info)
                            if data is not False:
                                yield shown_path([*where, name]), data
                    stack[-1] = (folder, where, iter(subfolders))
                    continue
                name = next(subfolders, None)
                if name is None:
                    os.close(folder)
                    stack.pop()
                elif len(stack) > DEPTH_LIMIT:
                    counts["deep"] += 1
                else:
                    try:  # O_NOFOLLOW: a folder swapped for a link since it was listed is skipped
                        stack.append((os.open(name, OPEN_DIR, dir_fd=folder), [*where, name], None))
                    except OSError:
                        pass
        finally:
            for folder, _, _ in stack:
                os.close(folder)

    def _file(self, folder, parts, info):
        """The bytes of one listed file (None: too large or unreadable; False: not a file)."""
        try:
            if stat.S_ISLNK(info.st_mode):
                fd, _, info = self.open(parts)  # a link inside root to a file inside it
            else:
                fd = open_nofollow(parts[-1], folder, OPEN_FILE)
                info = os.fstat(fd)
        except Refused as refused:
            return None if refused.why == CHANGED else False
        except OSError:
            return None
        try:
            return head_or_none(fd, info) if stat.S_ISREG(info.st_mode) else False
        finally:
            close_fd(fd)


def head_or_none(fd, info):
    """A regular file's bytes, or None when too large or binary (judged from its head)."""
    if info.st_size > SEARCH_FILE_BYTES:
        return None
    try:
        head = read_up_to(fd, SNIFF_BYTES)
        if b"\0" in head:
            return None  # binary: the rest is never read
        return head + read_up_to(fd, SEARCH_FILE_BYTES)
    except OSError:
        return None


def read_up_to(fd, limit):
    """At most `limit` bytes from the open `fd`, as bytes, never None.

    subtle: files are opened non-blocking, and a special file that looks regular
    (/proc/kmsg) has nothing to give until the kernel logs something: a buffered read then
    returns None, which once ended a search with a TypeError. What is there now is read.
    """
    pieces, size = [], 0
    while size < limit:
        try:
            piece = os.read(fd, min(limit - size, 1 << 20))
        except BlockingIOError:
            break
        if not piece:
            break
        pieces.append(piece)
        size += len(piece)
    return b"".join(pieces)


def open_nofollow(name, folder, flags):
    """Open `name` in `folder` without following a link; Refused(CHANGED) if it became one."""
    try:
        return os.open(name, flags, dir_fd=folder)
    except OSError as error:
        # ELOOP/ENOTDIR: swapped for a link (or a file) since it was looked at; ENOENT: gone.
        if error.errno in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT):
            raise Refused(CHANGED) from None
        raise


def read_link(name, folder):
    """The target of the link `name` in `folder`; Refused(CHANGED) if it is one no more."""
    try:
        return os.readlink(name, dir_fd=folder)
    except OSError as error:
        # EINVAL: swapped for a file or folder since it was looked at; ENOENT: gone.
        if error.errno in (errno.EINVAL, errno.ENOENT):
            raise Refused(CHANGED) from None
        raise


def _names(folder):
    try:
        return sorted(os.listdir(folder))
    except OSError:
        return []


def _lstat(name, folder):
    try:
        return os.stat(name, dir_fd=folder, follow_symlinks=False)
    except OSError:
        return None


def close_fd(fd):
    if fd is not None:
        os.close(fd)


def shown_path(real):
    """Names walked, as the model should write them: relative, with forward slashes."""
    return "/".join(printable(name) for name in real) or "."


def printable(name):
    """A file name as text that always encodes: bytes that are not UTF-8 as \\xNN, and
    control and line-breaking characters escaped the same way (\\n, \\x1b, \\u2028).

    subtle: os.listdir hands such bytes over as lone surrogates, which no JSON encoder
    or HTTP client can send; the SDK failed on the next request with them. And a name
    holding a newline could fake extra `file:line:` results or entries.
    """
    text = os.fsencode(name).decode("utf-8", "backslashreplace")
    if text.isprintable():  # the common case, checked at C speed: nothing to escape
        return text
    return "".join(_escaped(c) if unicodedata.category(c) in CONTROLS else c for c in text)


def _escaped(character):
    return character.encode("unicode_escape").decode("ascii")


def decoded_text(data, final):
    """`data` decoded as UTF-8, or None if it looks binary (a NUL byte, invalid UTF-8)."""
    if b"\0" in data[:SNIFF_BYTES]:
        return None
    try:
        # An incremental decoder: a character cut at the end of a partial read is not an error.
        return codecs.getincrementaldecoder("utf-8")().decode(data, final=final)
    except UnicodeDecodeError:
        return None
