"""The coding tools the model may ask for, acting on a temporary copy of the sample.

`RepoTools(root)` offers exactly three tools: `read_file` (two allowlisted files),
`replace_text` (one exact, unique replacement in `path_rules.py`) and `run_tests` (a fixed
pytest command with a minimal environment, a time limit and bounded output: the visible
tests, plumbing/pytest_run.py, and nothing of verdict.py's held-out checks).

Not a sandbox by itself: pytest runs model-edited Python. The allowlist limits what the
model can ask for, not what the code it writes can do; the test runs are isolated by
default where the OS allows (plumbing/isolation.py), and `isolate=False` runs them with
the user's permissions. Not here: what decides (verdict.py).
"""

import os
from pathlib import Path

from plumbing.pytest_run import TEST_TIMEOUT, run_pytest
from plumbing.redact import redact
from plumbing.sample import SOURCE_FILE, SOURCE_LIMIT, TEST_FILE, read_text, write_atomically
from plumbing.source_diff import lines_changed
from tool_guard import ToolBox, ToolError, function_schema

READABLE = (SOURCE_FILE, TEST_FILE)
EDITABLE = SOURCE_FILE
READ_LIMIT = 20000  # characters of a file returned by read_file
LIMIT_SAID = f"the {SOURCE_LIMIT:,} bytes replace_text edits"  # before an edit and after it


def readable_schema(files):
    """read_file's schema, naming `files`: "path_rules.py or tests/test_path_rules.py"."""
    named = f"{', '.join(files[:-1])} or {files[-1]}"
    return function_schema(
        "read_file",
        f"Read one file of the repository: {named}.",
        {"path": f"Relative path: {named}"},
    )


class RepoTools(ToolBox):
    """The lab's three tools, confined to `root` (a temporary copy of `sample_repo/`), and
    read_file also to `helpers`, the modules a task gives beside path_rules.py."""

    schemas = [
        readable_schema(READABLE),
        function_schema(
            "replace_text",
            "Replace text in path_rules.py. `old` must occur exactly once in the file.",
            {"old": "Exact text to replace (must occur once)", "new": "Replacement text"},
        ),
        function_schema("run_tests", "Run the repository's tests with pytest.", {}),
    ]

    def __init__(self, root, test_timeout=TEST_TIMEOUT, isolate=True, deadline=None, tests=None,
                 helpers=()):  # fmt: skip
        self.root = Path(root).resolve()
        # a task's modules beside path_rules.py (harness/tasks.py) are readable too, and
        # named in read_file's description only then: the sample's requests stay as they are
        self.readable = (SOURCE_FILE, *helpers, TEST_FILE)
        if helpers:
            self.schemas = [readable_schema(self.readable), *self.schemas[1:]]
        self.test_timeout = test_timeout
        self.isolate = isolate  # run_tests under the best isolation here (isolation.py)
        self.deadline = deadline  # a limits.Deadline: a test run never outlasts it
        self.tests = tests  # the test file the run was given, if not the sample's (tasks.py)

    def handlers(self):
        return {
            "read_file": self.read_file,
            "replace_text": self.replace_text,
            "run_tests": self.run_tests,
        }

    def _inside(self, relative):
        try:
            target = (self.root / relative).resolve()
        except RuntimeError:  # Python < 3.13 raises this for a symlink loop
            raise ToolError(f"{relative} cannot be resolved (a symlink loop?)") from None
        if not target.is_relative_to(self.root):
            raise ToolError(f"{relative} leads outside the repository; it cannot be used")
        return target

    def read_file(self, path):
        readable = ", ".join(self.readable)
        if os.path.isabs(path) or ".." in Path(path).parts:
            raise ToolError(f"use a relative path without '..'; readable files: {readable}")
        if path not in self.readable:
            raise ToolError(f"{path} is not readable here; readable files: {readable}")
        read = self.file_text(path)
        text = redact(read.text)  # before the cut, so no part of a secret survives at its edge
        if len(text) > READ_LIMIT:
            text = text[:READ_LIMIT] + f"\n[... cut: the file has {read.size}]"
        return {"path": path, "text": text}

    def replace_text(self, old, new):
        if not old:
            raise ToolError("`old` must be non-empty text copied exactly from path_rules.py")
        target = self._inside(EDITABLE)
        read = self.file_text(EDITABLE, limit=SOURCE_LIMIT)  # in bytes, as the verdict reads
        if not read.whole:
            raise ToolError(f"{EDITABLE} holds more than {LIMIT_SAID}; it cannot be edited")
        text = read.text
        if new == old:
            raise ToolError(
                "`new` is the same as `old`: nothing would change, so path_rules.py was not "
                "touched. Send a `new` that differs to change the file."
            )
        found_once(text, old)
        try:
            data = text.replace(old, new, 1).encode("utf-8")
        except UnicodeEncodeError as error:  # a lone surrogate: refused before anything is written
            raise ToolError(
                f"`new` cannot be written as UTF-8 (a lone surrogate at position {error.start}); "
                "send plain text"
            ) from None
        if len(data) > SOURCE_LIMIT:
            raise ToolError(f"the edit would make it {len(data):,} bytes, more than {LIMIT_SAID}")
        write_atomically(target, data)
        return {"path": EDITABLE, "replaced": 1, **lines_changed(text, old, new)}

    def file_text(self, path, characters=READ_LIMIT, limit=None):
        """A file the tests may have replaced, as a sample.FileText (its text, whether it was
        read whole, within `limit` bytes if given, its size): plumbing/sample.py reads it
        without blocking on a FIFO, following a link or reading a sparse gigabyte whole."""
        try:
            return read_text(self._inside(path), characters, limit)
        except FileNotFoundError:
            raise ToolError(f"{path} does not exist") from None
        except UnicodeDecodeError:
            raise ToolError(f"{path} is not UTF-8 text") from None
        except OSError as error:
            raise ToolError(f"{path} cannot be read ({error.strerror or error})") from None

    def run_tests(self):
        timeout = self.deadline.cap(self.test_timeout) if self.deadline else self.test_timeout
        return run_pytest(self.root, timeout=timeout, isolate=self.isolate, tests=self.tests)


def found_once(text, old):
    """ToolError unless `old` occurs exactly once in `text`: the one place replace_text
    replaces, said to the model when there is none or more than one."""
    found = text.count(old)
    if found != 1:
        where = "was not found" if found == 0 else f"occurs {found} times"
        raise ToolError(
            f"`old` {where} in {EDITABLE}; it must occur exactly once. "
            "Read the file again and copy a unique piece of it exactly."
        )
