"""Read-only tools for questions about any directory: list, read and search, nothing else.

`ReadOnlyTools(root)` offers `list_dir(path)`, `read_file(path)` and `search(pattern, path?)`
to the loop, through the same guard as `RepoTools`. Every path is relative to `root`:
`..`, absolute paths and links leading out of `root` are refused, `.git` is neither listed,
read nor searched, binary files are refused by `read_file` and skipped by `search`. Every
result is bounded (about 8,000 characters); when one is cut, a `note` tells the model how
to narrow its request, so a big repository cannot flood the conversation.

Confinement holds against a racing writer: every path is walked from a descriptor of
`root`, one component at a time, never following a link by name (confined_tree.py says
how). `search` runs in a child process killed at its budget, so no pattern (Python's `re`
backtracks, and has no time limit of its own) and no tree can hold the loop past it; the
child's memory is capped too (SEARCH_MEMORY).

Not here: anything that writes, runs or imports code from `root`; Windows (the walk needs
POSIX's `dir_fd` and O_NOFOLLOW).
"""

import json
import os
import re
import resource
import stat
import subprocess
import sys
import time
import weakref
from pathlib import Path

from plumbing.confined_tree import (
    DEPTH_LIMIT,
    GIT_REFUSED,
    OPEN_DIR,
    OUTSIDE,
    Refused,
    Tree,
    close_fd,
    decoded_text,
    printable,
    read_up_to,
    shown_path,
)
from tool_guard import ToolBox, ToolError, function_schema

RESULT_LIMIT = 8000  # characters of entries, text or matches in one result
LINE_LIMIT = 200  # characters of one matching line shown by search
SEARCH_SECONDS = 10.0  # budget of one search; its child process stops itself at this point
SEARCH_GRACE = 1.0  # ... and is killed this much later if one line's match never returns
PATTERN_LIMIT = 1000  # characters of a search pattern: enough for any real query
# Address space of the search child: Python's `re` keeps its backtracking state in memory,
# and one pattern on one 2 MB line took 370 MB within the time budget (measured).
SEARCH_MEMORY = 256 * 2**20
OUT_OF_MEMORY = "the search ran out of memory (a pattern that backtracks on a long line?)"
HERE = Path(__file__).resolve().parent  # the lab's folder
# The child's whole program: -I keeps it from importing anything from the searched tree.
CHILD_CODE = (
    "import sys; sys.path.insert(0, sys.argv[1]); import readonly_tools; "
    "readonly_tools.search_child(int(sys.argv[2]))"
)


def _search_schema():
    schema = function_schema(
        "search",
        "Search text files for a pattern; returns matching lines as file:line: text. A line "
        "matches if it contains the pattern literally or matches it as a Python regular "
        "expression (case-sensitive; prefix (?i) to ignore case). .git, caches, virtual "
        "environments and binary files are skipped.",
        {
            "pattern": "Text or regular expression to look for (at most 1,000 characters)",
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

    def __init__(self, root, deadline=None):
        self.deadline = deadline  # a limits.Deadline: a search never outlasts it
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            raise ValueError(f"{root} is not a directory")
        root_fd = os.open(self.root, OPEN_DIR)
        weakref.finalize(self, os.close, root_fd)
        self.tree = Tree(self.root, root_fd)
        self.search_seconds = SEARCH_SECONDS  # tests shrink it

    def handlers(self):
        return {"list_dir": self.list_dir, "read_file": self.read_file, "search": self.search}

    def _open(self, path):
        """`path` opened inside root: (fd or None, real names, stat), or ToolError saying why."""
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
            os.fsencode(path)
        except UnicodeEncodeError:
            raise ToolError(
                f"{path!r} cannot be a file name (it holds a lone surrogate); send plain text"
            ) from None
        try:
            return self.tree.open(Path(path).parts)
        except Refused as refused:
            raise ToolError(
                refused.why if refused.why == GIT_REFUSED else f"{path!r} {refused.why}"
            ) from None

    # --- the tools --------------------------------------------------------------------------

    def list_dir(self, path):
        fd, real, info = self._open(path)
        try:
            if not stat.S_ISDIR(info.st_mode):
                what = (
                    "is a file; use read_file" if stat.S_ISREG(info.st_mode) else _not_a_file(info)
                )
                raise ToolError(f"{path!r} {what}")
            try:
                names = sorted(os.listdir(fd))
            except OSError as error:
                raise ToolError(f"{path!r} cannot be listed ({error.strerror})") from None
            names = [name for name in names if name.lower() != ".git"]
            entries, size = [], 0
            for name in names:
                entry = self._entry(fd, real, name)
                size += len(entry) + 1
                if size > RESULT_LIMIT:
                    return {
                        "path": shown_path(real),
                        "entries": entries,
                        "note": f"cut after {len(entries)} of {len(names)} entries; narrow the "
                        "request: list a subdirectory, or search for the file you want",
                    }
                entries.append(entry)
            return {"path": shown_path(real), "entries": entries}
        finally:
            close_fd(fd)

    def _entry(self, folder, real, name):
        shown = printable(name)
        try:
            info = os.stat(name, dir_fd=folder, follow_symlinks=False)
            if stat.S_ISLNK(info.st_mode):
                fd, _, info = self.tree.open([*real, name])
                close_fd(fd)
        except Refused as refused:
            if refused.why == OUTSIDE:
                return f"{shown} (symlink leading outside the root; refused)"
            if refused.why == GIT_REFUSED:
                return f"{shown} (symlink into .git; refused)"
            return f"{shown} (unreadable)"  # a broken link, a symlink loop
        except OSError:  # no permission, or gone since it was listed
            return f"{shown} (unreadable)"
        if stat.S_ISDIR(info.st_mode):
            return f"{shown}/"
        return f"{shown} ({info.st_size} bytes)"

    def read_file(self, path):
        fd, real, info = self._open(path)
        try:
            if not stat.S_ISREG(info.st_mode):  # subtle: a FIFO is never opened: it would block
                raise ToolError(f"{path!r} {_not_a_file(info)}")
            try:
                # Enough bytes for RESULT_LIMIT characters of UTF-8, and one more to see a cut.
                head = read_up_to(fd, 4 * RESULT_LIMIT + 1)
            except OSError as error:
                raise ToolError(f"{path!r} cannot be read ({error.strerror})") from None
        finally:
            close_fd(fd)
        total = info.st_size
        text = decoded_text(head, final=len(head) == total)
        if text is None:
            raise ToolError(f"{path!r} is binary (or not UTF-8 text); only text can be read")
        result = {"path": shown_path(real), "text": text[:RESULT_LIMIT]}
        if len(text) > RESULT_LIMIT or len(head) < total:
            result["note"] = (
                f"cut after {RESULT_LIMIT} characters of a {total}-byte file; narrow the "
                "request: search this path for a pattern to find the lines you need"
            )
        return result

    def search(self, pattern, path="."):
        if not pattern:
            raise ToolError("the pattern is empty; send the text or expression to look for")
        if len(pattern) > PATTERN_LIMIT:
            raise ToolError(
                f"the pattern has {len(pattern)} characters; send at most {PATTERN_LIMIT} "
                "(a shorter, more specific pattern)"
            )
        fd, real, info = self._open(path)
        close_fd(fd)
        if not (stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode)):
            raise ToolError(f"{path!r} {_not_a_file(info)}")
        return self._search_in_child(pattern, path, real)

    def _search_in_child(self, pattern, path, real):
        """Run `search_child` in a fresh interpreter; kill it if it outlives the budget.

        subtle: Python's `re` cannot be interrupted inside one match, and `(a+)+$` on 34
        a's would run for hours; only a process can be stopped from outside. The child
        walks from the same root descriptor (inherited), so it sees what was checked here.
        """
        request = {"root": str(self.root), "pattern": pattern, "parts": real}
        seconds, kill_after = self.search_seconds, self.search_seconds + SEARCH_GRACE
        if self.deadline is not None:  # the run's deadline caps the search and its grace
            seconds, kill_after = self.deadline.cap(seconds), self.deadline.cap(kill_after)
        request["seconds"] = seconds
        child = subprocess.Popen(
            [sys.executable, "-I", "-c", CHILD_CODE, str(HERE), str(self.tree.root_fd)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=(self.tree.root_fd,),
            cwd="/",
            start_new_session=True,  # Ctrl-C reaches the harness, which then ends the child
        )
        killed = False
        try:
            out, err = child.communicate(json.dumps(request).encode(), timeout=kill_after)
        except subprocess.TimeoutExpired:
            child.kill()
            killed = True
            out, err = child.communicate()
        finally:
            if child.poll() is None:
                child.kill()
            child.wait()
        matches, counts, cut = [], {"searched": 0, "skipped": 0, "deep": 0}, None
        finished = False
        for line in out.decode("ascii", "replace").splitlines():
            try:
                item = json.loads(line)
            except ValueError:
                break  # the last line, cut by the kill
            counts = {key: item[key] for key in counts}
            if "match" in item:
                matches.append(item["match"])
            elif "refused" in item:
                raise ToolError(f"{path!r} {item['refused']}")
            else:
                cut, finished = item["cut"], True
        if killed:
            cut = "the search ran out of time (one line took too long: a pattern that backtracks?)"
        elif not finished:
            why = err.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
            raise ToolError(
                f"the search failed ({why[0]}); try a simpler pattern or a smaller path"
            )
        return _found(matches, counts, cut)


def search_child(root_fd):
    """The search itself, run by CHILD_CODE: a JSON request on stdin, JSON lines on stdout.

    Each match is one line `{"match": ..., <counts>}`, flushed at once, so that what was
    found before a kill still reaches the harness; the last line is `{"cut": ..., <counts>}`
    (None, or why the search stopped early: out of time or of its SEARCH_MEMORY), or
    `{"refused": why}` if the path changed since the harness checked it.
    """
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    memory = SEARCH_MEMORY if hard == resource.RLIM_INFINITY else min(SEARCH_MEMORY, hard)
    resource.setrlimit(resource.RLIMIT_AS, (memory, hard))  # past it, re raises MemoryError
    request = json.load(sys.stdin)
    # subtle: the harness kills a search that overruns; a harness killed itself leaves no
    # one to, and a pattern stuck in the regex engine would run on for good. Its CPU time
    # cannot pass its wall time, so this limit ends only such an orphan (SIGXCPU).
    cpu = int(request["seconds"] + SEARCH_GRACE) + 2
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    tree = Tree(Path(request["root"]), root_fd)
    counts = {"searched": 0, "skipped": 0, "deep": 0}

    def send(item):
        sys.stdout.write(json.dumps({**item, **counts}) + "\n")
        sys.stdout.flush()

    stop_at = time.monotonic() + request["seconds"]
    try:
        send({"cut": _search(tree, request["pattern"], request["parts"], stop_at, counts, send)})
    except Refused as refused:
        send({"refused": refused.why})
    except MemoryError:  # the matches sent so far stand; the memory is free again
        send({"cut": OUT_OF_MEMORY})


def _search(tree, pattern, parts, stop_at, counts, send):
    """Send each matching line under `parts`; return why the search stopped early, or None."""
    try:
        expression = re.compile(pattern)
    except (re.error, OverflowError, RecursionError):
        expression = None  # not an expression Python accepts: a literal search only
    size = 0
    for shown, data in tree.files(parts, counts):
        text = None if data is None else decoded_text(data, final=True)
        if text is None:
            counts["skipped"] += 1
        else:
            counts["searched"] += 1
            for number, line in enumerate(text.splitlines(), 1):
                if pattern in line or (expression is not None and expression.search(line)):
                    match = f"{shown}:{number}: {line.strip()[:LINE_LIMIT]}"
                    size += len(match) + 1
                    if size > RESULT_LIMIT:
                        return "the results were cut"
                    send({"match": match})
                if time.monotonic() > stop_at:
                    break
        # subtle: skipped files count too: 200,000 binary files must not outrun the budget.
        if time.monotonic() > stop_at:
            return "the search ran out of time"
    return None


def _found(matches, counts, cut):
    result = {"matches": matches, "files_searched": counts["searched"]}
    if counts["skipped"]:
        result["files_skipped"] = f"{counts['skipped']} (binary, too large or unreadable)"
    if counts["deep"]:
        result["folders_skipped"] = f"{counts['deep']} (more than {DEPTH_LIMIT} levels deep)"
    if cut:
        result["note"] = (
            f"{cut} after {len(matches)} matches; narrow the request with a more specific "
            "pattern or a smaller path"
        )
    return result


def _not_a_file(info):
    if stat.S_ISDIR(info.st_mode):
        return "is a directory; use list_dir on it"
    return "is not a regular file"
