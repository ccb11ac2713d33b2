"""Read-only tools for questions about any directory: list, read and search, nothing else.

`ReadOnlyTools(root)` offers `list_dir(path)`, `read_file(path)` and `search(pattern, path?)`
to the loop, through the same guard as `RepoTools`. Every path is relative to `root` and is
checked after symlinks are resolved: `..`, absolute paths and links leading out of `root`
are refused, `.git` is neither listed, read nor searched, binary files are refused by
`read_file` and skipped by `search`. Every result is bounded (about 8,000 characters); when
one is cut, a `note` tells the model how to narrow its request, so a big repository cannot
flood the conversation.

Not here: anything that writes, runs or imports code from `root`; a time limit on a single
pathological regular expression (Python's `re` has none; `search` bounds only its total
work between lines and files).
"""

import codecs
import os
import re
import time
from pathlib import Path

from tool_guard import ToolBox, ToolError, function_schema

RESULT_LIMIT = 8000  # characters of entries, text or matches in one result
LINE_LIMIT = 200  # characters of one matching line shown by search
SNIFF_BYTES = 8192  # a NUL byte in the first 8 KB marks a file as binary, as git decides
SEARCH_FILE_BYTES = 2_000_000  # larger files are skipped by search (likely data, not code)
SEARCH_SECONDS = 10.0  # total budget of one search, checked between files and lines
# Directories search does not descend into unless asked to search them directly: git's
# internals (refused everywhere), and caches and environments that drown real matches.
SEARCH_PRUNED = {".git", "__pycache__", ".venv", "venv", "node_modules", ".mypy_cache",
                 ".pytest_cache", ".ruff_cache", ".tox"}  # fmt: skip


def _search_schema():
    schema = function_schema(
        "search",
        "Search text files for a pattern; returns matching lines as file:line: text. A line "
        "matches if it contains the pattern literally or matches it as a Python regular "
        "expression (case-sensitive; prefix (?i) to ignore case). .git, caches, virtual "
        "environments and binary files are skipped.",
        {
            "pattern": "Text or regular expression to look for",
            "path": "Directory or file to search, relative to the root; omit or use '.' for the "
            "whole tree",
        },
    )
    # subtle: function_schema makes every parameter required; `path` is optional here.
    schema["function"]["parameters"]["required"] = ["pattern"]
    return schema


class ReadOnlyTools(ToolBox):
    """Three read-only tools confined to `root` (any directory)."""

    schemas = [
        function_schema(
            "list_dir",
            "List a directory: subdirectories end with '/', files show their size.",
            {"path": "Directory relative to the root; use '.' for the root itself"},
        ),
        function_schema(
            "read_file",
            "Read a text file (the first 8,000 characters; use search to find later lines).",
            {"path": "File path relative to the root, e.g. src/app.py"},
        ),
        _search_schema(),
    ]

    def __init__(self, root):
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            raise ValueError(f"{root} is not a directory")

    def handlers(self):
        return {"list_dir": self.list_dir, "read_file": self.read_file, "search": self.search}

    # --- confinement ------------------------------------------------------------------------

    def _resolve(self, path):
        """The real path of `path` inside root, or ToolError saying why it cannot be used."""
        path = path.strip() or "."
        if "\0" in path:
            raise ToolError("the path contains a NUL character; send a plain relative path")
        if os.path.isabs(path) or path.startswith(("/", "\\", "~")):
            raise ToolError(
                f"{path!r} is not a relative path; paths are relative to the root "
                "(use '.' for the root itself)"
            )
        if ".." in Path(path).parts:
            raise ToolError(f"{path!r} contains '..'; only paths inside the root can be used")
        try:
            target = (self.root / path).resolve()
        except (OSError, RuntimeError):  # the error's text would show the absolute root
            raise ToolError(f"{path!r} cannot be resolved (a symlink loop?)") from None
        # Checked after resolving: a symlink inside root may lead anywhere, .git included.
        if not target.is_relative_to(self.root):
            raise ToolError(f"{path!r} leads outside the root (through a symlink); it is refused")
        if _in_git(target.relative_to(self.root)) or _in_git(Path(path)):
            raise ToolError(".git holds git's internals; it is not listed, read or searched")
        return target

    def _shown(self, target):
        """A resolved path as the model should write it: relative, with forward slashes."""
        return target.relative_to(self.root).as_posix() or "."

    # --- the tools --------------------------------------------------------------------------

    def list_dir(self, path):
        target = self._resolve(path)
        if not target.is_dir():
            what = "is a file; use read_file" if target.is_file() else _not_a_file(target)
            raise ToolError(f"{path!r} {what}")
        try:
            children = sorted(target.iterdir(), key=lambda child: child.name)
        except OSError as error:
            raise ToolError(f"{path!r} cannot be listed ({error.strerror})") from None
        entries, size = [], 0
        for child in children:
            if child.name.lower() == ".git":
                continue
            entry = self._entry(child)
            size += len(entry) + 1
            if size > RESULT_LIMIT:
                return {
                    "path": self._shown(target),
                    "entries": entries,
                    "note": f"cut after {len(entries)} of {len(children)} entries; narrow the "
                    "request: list a subdirectory, or search for the file you want",
                }
            entries.append(entry)
        return {"path": self._shown(target), "entries": entries}

    def _entry(self, child):
        try:
            real = child.resolve()
            if not real.is_relative_to(self.root):
                return f"{child.name} (symlink leading outside the root; refused)"
            if _in_git(real.relative_to(self.root)):
                return f"{child.name} (symlink into .git; refused)"
            if real.is_dir():
                return f"{child.name}/"
            return f"{child.name} ({real.stat().st_size} bytes)"
        except (OSError, RuntimeError):  # a broken link, a symlink loop, no permission
            return f"{child.name} (unreadable)"

    def read_file(self, path):
        target = self._resolve(path)
        if not target.is_file():  # subtle: also refuses a FIFO, whose open() would block
            raise ToolError(f"{path!r} {_not_a_file(target)}")
        try:
            with open(target, "rb") as file:
                # Enough bytes for RESULT_LIMIT characters of UTF-8, and one more to see a cut.
                head = file.read(4 * RESULT_LIMIT + 1)
                total = os.fstat(file.fileno()).st_size
        except OSError as error:
            raise ToolError(f"{path!r} cannot be read ({error.strerror})") from None
        text = _text(head, final=len(head) == total)
        if text is None:
            raise ToolError(f"{path!r} is binary (or not UTF-8 text); only text can be read")
        result = {"path": self._shown(target), "text": text[:RESULT_LIMIT]}
        if len(text) > RESULT_LIMIT or len(head) < total:
            result["note"] = (
                f"cut after {RESULT_LIMIT} characters of a {total}-byte file; narrow the "
                "request: search this path for a pattern to find the lines you need"
            )
        return result

    def search(self, pattern, path="."):
        if not pattern:
            raise ToolError("the pattern is empty; send the text or expression to look for")
        target = self._resolve(path)
        if not target.exists():
            raise ToolError(f"{path!r} {_not_a_file(target)}")
        try:
            expression = re.compile(pattern)
        except re.error:
            expression = None  # not a valid expression: a literal search only
        matches, size, searched, skipped = [], 0, 0, 0
        stop_at = time.monotonic() + SEARCH_SECONDS
        for file in self._files(target):
            lines = self._lines(file)
            if lines is None:
                skipped += 1
                continue
            searched += 1
            for number, line in enumerate(lines, 1):
                if pattern in line or (expression is not None and expression.search(line)):
                    match = f"{self._shown(file)}:{number}: {line.strip()[:LINE_LIMIT]}"
                    size += len(match) + 1
                    if size > RESULT_LIMIT:
                        return self._found(matches, searched, skipped, "the results were cut")
                    matches.append(match)
            if time.monotonic() > stop_at:
                return self._found(matches, searched, skipped, "the search ran out of time")
        return self._found(matches, searched, skipped)

    def _found(self, matches, searched, skipped, cut=None):
        result = {"matches": matches, "files_searched": searched}
        if skipped:
            result["files_skipped"] = f"{skipped} (binary, too large or unreadable)"
        if cut:
            result["note"] = (
                f"{cut} after {len(matches)} matches; narrow the request with a more specific "
                "pattern or a smaller path"
            )
        return result

    def _files(self, target):
        """The files under `target` (or `target` itself), in order, confined to root."""
        if target.is_file():
            yield target
            return
        for folder, subfolders, files in os.walk(target):  # never follows directory links
            subfolders[:] = sorted(d for d in subfolders if d.lower() not in SEARCH_PRUNED)
            for name in sorted(files):
                try:
                    real = Path(folder, name).resolve()
                except (OSError, RuntimeError):
                    continue  # a symlink loop: nothing to read
                # subtle: a file link inside root may lead out of it, or into .git; and only
                # regular files are read (opening a FIFO would block the search).
                inside = real.is_relative_to(self.root)
                if inside and not _in_git(real.relative_to(self.root)) and real.is_file():
                    yield Path(folder, name)

    def _lines(self, file):
        """The lines of a text file, or None for a binary, too large or unreadable one."""
        try:
            if file.stat().st_size > SEARCH_FILE_BYTES:
                return None
            text = _text(file.read_bytes(), final=True)
        except OSError:
            return None
        return None if text is None else text.splitlines()


def _not_a_file(target):
    if target.is_dir():
        return "is a directory; use list_dir on it"
    if target.exists():
        return "is not a regular file"
    return "does not exist; use list_dir or search to find files"


def _in_git(relative):
    return any(part.lower() == ".git" for part in relative.parts)


def _text(data, final):
    """`data` decoded as UTF-8, or None if it looks binary (a NUL byte, invalid UTF-8)."""
    if b"\0" in data[:SNIFF_BYTES]:
        return None
    try:
        # An incremental decoder: a character cut at the end of a partial read is not an error.
        return codecs.getincrementaldecoder("utf-8")().decode(data, final=final)
    except UnicodeDecodeError:
        return None
