"""The coding tools the model may ask for, acting on a temporary copy of the sample.

`RepoTools(root)` offers exactly three tools: `read_file` (two allowlisted files),
`replace_text` (one exact, unique replacement in `path_rules.py`) and `run_tests` (a fixed
pytest command with a minimal environment, a time limit and bounded output).
`run_pytest` is the same test run for callers outside the loop: the independent
verification that alone says whether the repository passes.

Not a sandbox: pytest runs model-edited Python with the user's permissions. The
allowlist limits what the model can ask for, not what the code it writes can do;
`isolate=True` narrows that where the OS allows (see isolation.py).
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from isolation import isolation_prefix
from tool_guard import ToolBox, ToolError, function_schema

SAMPLE_REPO = Path(__file__).resolve().parent / "sample_repo"
SOURCE_FILE = "path_rules.py"
TEST_FILE = "tests/test_path_rules.py"
READABLE = (SOURCE_FILE, TEST_FILE)
EDITABLE = SOURCE_FILE
TEST_TIMEOUT = 15.0
OUTPUT_LIMIT = 4000  # characters of test output kept: the tail, where pytest's summary is
READ_LIMIT = 20000  # characters of a file returned by read_file
PYTEST_COMMAND = ("-m", "pytest", "-q", "-p", "no:cacheprovider")


def copy_sample(parent):
    """A fresh copy of `sample_repo/` inside the directory `parent`; the original is never used."""
    ignore = shutil.ignore_patterns("__pycache__", ".pytest_cache")
    return Path(shutil.copytree(SAMPLE_REPO, Path(parent) / "repo", ignore=ignore))


def minimal_env():
    # subtle: the child inherits nothing else, so no API key or token (OLLAMA_API_KEY
    # included) can reach code the model wrote.
    env = {key: os.environ[key] for key in ("PATH", "LANG", "SYSTEMROOT") if key in os.environ}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _kill_group(process):
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # the whole group is already gone


def run_pytest(root, timeout=TEST_TIMEOUT, isolate=False):
    """Run the sample's tests in `root`; return {"exit_code", "output"} (output bounded).

    The tests run in their own process group, and the group is killed when the run ends
    for any reason (finished, timed out, or Ctrl-C in the harness): a test that forks a
    child holding the output pipe can neither hang the harness nor outlive it. With
    `isolate`, the run also gets no network and a read-only world (see isolation.py).
    """
    prefix = isolation_prefix(root)[0] if isolate else []
    process = subprocess.Popen(
        [*prefix, sys.executable, *PYTEST_COMMAND],
        cwd=root,
        env=minimal_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        output, _ = process.communicate(timeout=timeout)
        exit_code = process.returncode
    except subprocess.TimeoutExpired:
        _kill_group(process)
        output, _ = process.communicate()
        output += f"\n[timed out after {timeout:g} s; the test process group was killed]".encode()
        exit_code = None
    finally:
        _kill_group(process)
        process.wait()
    text = output.decode("utf-8", errors="replace")
    if len(text) > OUTPUT_LIMIT:
        text = f"[... {len(text) - OUTPUT_LIMIT} earlier characters cut]\n" + text[-OUTPUT_LIMIT:]
    return {"exit_code": exit_code, "output": text}


def count_results(output):
    """The counts from pytest's summary line, e.g. {"failed": 1, "passed": 3, "errors": 0}."""
    counts = {"failed": 0, "passed": 0, "errors": 0}
    # subtle: only pytest's closing line counts; a test's own output may say "3 passed".
    for line in reversed(output.splitlines()):
        if re.search(r"\bin [\d.]+s\b", line):
            for number, word in re.findall(r"(\d+) (passed|failed|errors?)\b", line):
                counts["errors" if word.startswith("error") else word] += int(number)
            break
    return counts


def independent_tests(root, isolate=False):
    """The verdict from outside the loop: a fresh pytest run, with its counts."""
    started = time.monotonic()
    result = run_pytest(root, isolate=isolate)
    return {**result, **count_results(result["output"]), "seconds": time.monotonic() - started}


class RepoTools(ToolBox):
    """The lab's three tools, confined to `root` (a temporary copy of `sample_repo/`)."""

    schemas = [
        function_schema(
            "read_file",
            "Read one file of the repository: path_rules.py or tests/test_path_rules.py.",
            {"path": "Relative path: path_rules.py or tests/test_path_rules.py"},
        ),
        function_schema(
            "replace_text",
            "Replace text in path_rules.py. `old` must occur exactly once in the file.",
            {"old": "Exact text to replace (must occur once)", "new": "Replacement text"},
        ),
        function_schema("run_tests", "Run the repository's tests with pytest.", {}),
    ]

    def __init__(self, root, test_timeout=TEST_TIMEOUT, isolate=False):
        self.root = Path(root).resolve()
        self.test_timeout = test_timeout
        self.isolate = isolate  # run_tests without network, read-only outside root

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
        if os.path.isabs(path) or ".." in Path(path).parts:
            raise ToolError(
                f"use a relative path without '..'; readable files: {', '.join(READABLE)}"
            )
        if path not in READABLE:
            raise ToolError(f"{path} is not readable here; readable files: {', '.join(READABLE)}")
        target = self._inside(path)
        try:
            text = target.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ToolError(f"{path} does not exist") from None
        except UnicodeDecodeError:
            raise ToolError(f"{path} is not UTF-8 text") from None
        if len(text) > READ_LIMIT:
            text = text[:READ_LIMIT] + f"\n[... cut: the file has {len(text)} characters]"
        return {"path": path, "text": text}

    def replace_text(self, old, new):
        if not old:
            raise ToolError("`old` must be non-empty text copied exactly from path_rules.py")
        target = self._inside(EDITABLE)
        try:
            text = target.read_text(encoding="utf-8")
        except (FileNotFoundError, UnicodeDecodeError):
            raise ToolError(f"{EDITABLE} is missing or not UTF-8 text") from None
        found = text.count(old)
        if found != 1:
            where = "was not found" if found == 0 else f"occurs {found} times"
            raise ToolError(
                f"`old` {where} in {EDITABLE}; it must occur exactly once. "
                "Read the file again and copy a unique piece of it exactly."
            )
        target.write_text(text.replace(old, new, 1), encoding="utf-8")
        return {"path": EDITABLE, "replaced": 1}

    def run_tests(self):
        return run_pytest(self.root, timeout=self.test_timeout, isolate=self.isolate)
