"""The coding tools the model may ask for, acting on a temporary copy of the sample.

`RepoTools(root)` offers exactly three tools: `read_file` (two allowlisted files),
`replace_text` (one exact, unique replacement in `path_rules.py`) and `run_tests` (a fixed
pytest command with a minimal environment, a time limit and bounded output).
`run_pytest` is the same test run for callers outside the loop: the independent
verification that alone says whether the repository passes. Its verdict counts tests in
pytest's machine-readable report (`judge`); an exit code of 0 alone is never a pass.

Not a sandbox by itself: pytest runs model-edited Python. The allowlist limits what the
model can ask for, not what the code it writes can do; the test runs are isolated by
default where the OS allows (see isolation.py), and `isolate=False` runs them with the
user's permissions.
"""

import ast
import functools
import os
import re
import select
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from xml.etree import ElementTree

from plumbing.isolation import chosen, isolation_prefix
from plumbing.redact import redact
from tool_guard import ToolBox, ToolError, function_schema

SAMPLE_REPO = Path(__file__).resolve().parent / "sample_repo"
SOURCE_FILE = "path_rules.py"
TEST_FILE = "tests/test_path_rules.py"
READABLE = (SOURCE_FILE, TEST_FILE)
EDITABLE = SOURCE_FILE
TEST_TIMEOUT = 15.0
OUTPUT_LIMIT = 4000  # characters of test output kept: the tail, where pytest's summary is
OUTPUT_KEPT = 64 * 1024  # bytes of output held while a run goes on: room for the limit
READ_LIMIT = 20000  # characters of a file returned by read_file
# subtle: --rootdir pins the names in the report (tests.test_path_rules.test_...), which
# otherwise depend on configuration files found above the temporary copy.
PYTEST_COMMAND = ("-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", ".")
REPORT_LIMIT = 1_000_000  # bytes of pytest's report read at most; the sample's is ~2 KB
PASSED, FAILED = "passed", "failed"  # the two verdicts
TESTS_FAILED = "not every test passed"  # the reason when the tests ran and some failed
NO_REPORT = "no test report: the run ended before pytest wrote it"
OUTCOME_TAGS = (("failure", "failed"), ("error", "error"), ("skipped", "skipped"))


def _snapshot(folder):
    """{relative path: bytes} of the files under `folder` (caches left out)."""
    files = sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in files}


# subtle: read once, when the harness starts. With --no-isolate the edited code can rewrite
# sample_repo/ itself; every copy, and the verdict's idea of "the unchanged tests", come
# from these bytes instead, so such a rewrite cannot pass for the original.
SAMPLE_FILES = _snapshot(SAMPLE_REPO)
PRISTINE_TESTS = SAMPLE_FILES[TEST_FILE]


def copy_sample(parent, source=None):
    """A fresh copy of the sample inside the directory `parent` (as the harness started
    with it), optionally with `source` (bytes) as its path_rules.py."""
    root = Path(parent) / "repo"
    for name, data in SAMPLE_FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(source if source is not None and name == SOURCE_FILE else data)
    return root


def minimal_env():
    # subtle: the child inherits nothing else, so no API key or token (OLLAMA_API_KEY
    # included) can reach code the model wrote.
    env = {key: os.environ[key] for key in ("PATH", "LANG", "SYSTEMROOT") if key in os.environ}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


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


def _kill_group(process):
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # the whole group is already gone


def run_pytest(root, timeout=TEST_TIMEOUT, isolate=True):
    """Run the sample's tests in `root`; return the run and its verdict (see `judge`).

    The result holds `exit_code` (None on a timeout), `output` (bounded), the counts
    `passed`, `failed`, `errors` and `collected` from pytest's report, and `verdict`
    ("passed" or "failed", with a `reason` when failed). The tests run in their own process
    group, and the group is killed when the run ends for any reason (finished, timed out,
    or Ctrl-C in the harness): a test that forks a child holding the output pipe cannot
    hang the harness. With `isolate`, the run also goes under the best isolation this
    machine offers (see isolation.py); only bubblewrap's PID namespace also ends a child
    that left the group with `setsid`.
    """
    # subtle: the report goes to a fresh folder outside the copy, so nothing the edited code
    # left behind in an earlier run can pass for it; only this folder and `root` are writable.
    with tempfile.TemporaryDirectory(
        prefix="agent-lab-report-", ignore_cleanup_errors=True
    ) as folder:
        report, settings = Path(folder) / "report.xml", Path(folder) / "pytest.ini"
        # subtle: an explicit, empty configuration: otherwise pytest looks for pytest.ini,
        # tox.ini or setup.cfg in the copy's parent folders, where an unisolated edit may
        # have left one (with addopts = -p some_plugin) for the next run to find.
        settings.write_text("[pytest]\n")
        writable = (Path(root).resolve(), Path(folder).resolve())
        prefix = isolation_prefix(chosen(isolate), writable)
        command = [*prefix, sys.executable, *PYTEST_COMMAND, "-c", str(settings)]
        command.append(f"--junitxml={report}")
        exit_code, output = _run(command, root, timeout)
        verdict = judge(root, exit_code, report, timeout)
    output = redact(output)  # before the cut, so no part of a secret survives at its edge
    return {"exit_code": exit_code, "output": tail(output), **verdict}


def tail(output):
    """The last OUTPUT_LIMIT characters of `output` (where pytest's summary is), saying how
    many came before them."""
    if len(output) <= OUTPUT_LIMIT:
        return output
    return f"[... {len(output) - OUTPUT_LIMIT} earlier characters cut]\n" + output[-OUTPUT_LIMIT:]


def _run(command, root, timeout):
    """(exit code or None on a timeout, the output's tail as text) of one test run.

    subtle: only the last OUTPUT_KEPT bytes are ever held: the edited code can write
    gigabytes to its output in 15 s, and the harness must not hold them all to keep 4,000
    characters.
    """
    process = subprocess.Popen(
        command,
        cwd=root,
        env=minimal_env(),  # bubblewrap's own, too: its environment is readable inside
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    tail, dropped, end = bytearray(), 0, time.monotonic() + timeout
    exit_code = None
    try:
        pipe = process.stdout.fileno()
        while (left := end - time.monotonic()) > 0:
            if not select.select([pipe], [], [], left)[0]:
                continue  # nothing yet; the loop's condition ends it at the time limit
            data = os.read(pipe, 65536)
            if not data:  # every writer closed the pipe: the run has ended
                exit_code = process.wait(timeout=max(end - time.monotonic(), 0.01))
                break
            tail += data
            if len(tail) > OUTPUT_KEPT:
                dropped += len(tail) - OUTPUT_KEPT
                del tail[: len(tail) - OUTPUT_KEPT]
    except subprocess.TimeoutExpired:
        pass  # the output ended but the process did not: a timeout like any other
    finally:
        _kill_group(process)
        process.wait()
        process.stdout.close()
    text = tail.decode("utf-8", errors="replace")
    if dropped:
        text = f"[... {dropped} earlier bytes of output dropped]\n" + text
    if exit_code is None:
        text += f"\n[timed out after {timeout:g} s; the test process group was killed]"
    return exit_code, text


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


@functools.cache
def expected_tests():
    """The tests the unchanged sample defines, as pytest's report names them.

    Read from the pristine test file's syntax tree, never from the copy, which the edited
    code can change. The sample's tests are plain top-level functions; a test file with
    classes or parametrised tests would need a collect-only run of a pristine copy instead.
    """
    tree = ast.parse(PRISTINE_TESTS)
    module = TEST_FILE.removesuffix(".py").replace("/", ".")
    return tuple(
        f"{module}.{node.name}"
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.name.startswith("test")
    )


def read_regular_file(path, limit):
    """Up to `limit` + 1 bytes of `path`, read as the edited code may have left it.

    subtle: a link is not followed, and anything but a regular file is refused before it is
    read: a FIFO put there by the tests would block the harness for good.
    """
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    descriptor = os.open(path, flags)
    with os.fdopen(descriptor, "rb") as file:
        if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
            raise OSError(f"{Path(path).name} is not a regular file")
        return file.read(limit + 1)


def tests_unchanged(root):
    """Whether the copy's test file is byte-identical to the sample's (False if unreadable)."""
    original = PRISTINE_TESTS
    try:
        return read_regular_file(Path(root) / TEST_FILE, len(original)) == original
    except OSError:
        return False


def final_source(root):
    """The copy's source as the run left it, redacted, read as carefully as the report."""
    try:
        data = read_regular_file(Path(root) / SOURCE_FILE, REPORT_LIMIT)
    except OSError as error:
        return f"[{SOURCE_FILE} cannot be read: {error.strerror or error}]"
    return redact(data[:REPORT_LIMIT].decode("utf-8", errors="replace"))


class BadReport(Exception):
    """pytest's report is missing or not one pytest wrote; the message is the reason."""


def read_report(path):
    """{test name: "passed" | "failed" | "error" | "skipped"} from the JUnit XML at `path`.

    The report is hostile input: the edited code ran in the process that wrote it, and can
    write there too. So it is read without following a link, only if it is a regular file,
    only up to REPORT_LIMIT bytes, and refused if it declares a DOCTYPE (entities could
    expand it without bound; pytest never writes one).
    """
    try:
        data = read_regular_file(path, REPORT_LIMIT)
    except FileNotFoundError:
        raise BadReport(NO_REPORT) from None
    except OSError as error:
        raise BadReport(f"the test report cannot be read ({error.strerror or error})") from None
    if len(data) > REPORT_LIMIT:
        raise BadReport(f"the test report is larger than {REPORT_LIMIT} bytes")
    if b"<!DOCTYPE" in data or b"<!ENTITY" in data:
        raise BadReport("the test report declares a DOCTYPE, which pytest never writes")
    try:
        tree = ElementTree.fromstring(data)
    except ElementTree.ParseError as error:
        raise BadReport(f"the test report is not valid XML ({error})") from None
    outcomes = {}
    for case in tree.iter("testcase"):
        if not (case.get("classname") and case.get("name")):
            continue  # not a test: pytest writes an empty case when pytest.exit stops one
        tags = {child.tag for child in case}
        outcome = next((o for tag, o in OUTCOME_TAGS if tag in tags), "passed")
        name = f"{case.get('classname')}.{case.get('name')}"
        # subtle: a test that fails and then errors in teardown can be listed twice.
        if outcomes.get(name, "passed") == "passed":
            outcomes[name] = outcome
    return outcomes


def judge(root, exit_code, report, timeout=TEST_TIMEOUT):
    """The verdict on one test run: the counts, "passed" or "failed", and why it failed.

    "passed" means: the run finished with exit code 0, pytest's report exists and lists
    exactly the tests the unchanged test file defines, every one passed, and the test file
    is byte-identical to the sample's. An exit code of 0 alone is never a pass.
    """
    counts = {"passed": 0, "failed": 0, "errors": 0, "collected": 0}
    try:
        outcomes = read_report(report)
    except BadReport as problem:
        outcomes, report_problem = {}, str(problem)
    else:
        report_problem = None
        values = list(outcomes.values())
        counts = {
            "passed": values.count("passed"),
            "failed": values.count("failed"),
            "errors": values.count("error"),
            "collected": len(values),
        }
    expected = expected_tests()
    ran = [name for name in expected if outcomes.get(name, "skipped") != "skipped"]
    unexpected = sorted(set(outcomes) - set(expected))
    if exit_code is None:
        reason = f"timed out after {timeout:g} s"
    elif not tests_unchanged(root):
        reason = f"tests changed: {TEST_FILE} is not the sample's"
    elif report_problem:
        reason = report_problem
    elif len(ran) < len(expected):
        reason = f"{len(ran)} of {len(expected)} tests ran"
    elif unexpected:
        reason = (
            f"tests changed: the report lists tests the sample does not define ({unexpected[0]}"
        )
        reason += f" and {len(unexpected) - 1} more)" if len(unexpected) > 1 else ")"
    elif any(outcomes[name] != "passed" for name in expected):
        reason = TESTS_FAILED
    elif exit_code != 0:
        reason = f"pytest exited with code {exit_code} although every test passed"
    else:
        return {**counts, "verdict": PASSED}
    return {**counts, "verdict": FAILED, "reason": reason}


def independent_tests(root, isolate=True):
    """The verdict from outside the loop: a fresh pytest run, its counts, its duration.

    subtle: not run in `root`. The edited code ran there, and may have left things behind
    that change what the next run does without touching path_rules.py (a conftest.py, a
    `path_rules/` package, a pytest.ini) and then put the source back. The run goes on a
    fresh copy of the sample holding only the bytes of root's path_rules.py; the test file
    in `root` must still be the sample's. Redacted like a tool result: a run of the edited
    code may print the harness's secrets.
    """
    started = time.monotonic()
    try:
        source = read_regular_file(Path(root) / SOURCE_FILE, REPORT_LIMIT)
    except OSError as error:
        source, unreadable = None, f"{SOURCE_FILE} cannot be read ({error.strerror or error})"
    else:
        unreadable = f"{SOURCE_FILE} is larger than {REPORT_LIMIT} bytes"
        unreadable = unreadable if len(source) > REPORT_LIMIT else None
    if unreadable:
        counts = {"passed": 0, "failed": 0, "errors": 0, "collected": 0}
        result = {"exit_code": None, "output": "", **counts, "verdict": FAILED}
        result["reason"] = unreadable
    else:
        with tempfile.TemporaryDirectory(prefix="agent-lab-verdict-") as scratch:
            fresh = copy_sample(scratch, source)
            result = run_pytest(fresh, isolate=isolate)
            # the run's own paths read as the copy's, so a replay normalises them alike
            result["output"] = result["output"].replace(str(fresh), str(Path(root).resolve()))
        if result["verdict"] == PASSED and not tests_unchanged(root):
            result.update(verdict=FAILED, reason=f"tests changed: {TEST_FILE} is not the sample's")
    return {**redact(result), "seconds": time.monotonic() - started}


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

    def __init__(self, root, test_timeout=TEST_TIMEOUT, isolate=True, deadline=None):
        self.root = Path(root).resolve()
        self.test_timeout = test_timeout
        self.isolate = isolate  # run_tests under the best isolation here (isolation.py)
        self.deadline = deadline  # a limits.Deadline: a test run never outlasts it

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
        text = redact(text)  # before the cut, so no part of a secret survives at its edge
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
        try:
            data = text.replace(old, new, 1).encode("utf-8")
        except UnicodeEncodeError as error:  # a lone surrogate: refused before anything is written
            raise ToolError(
                f"`new` cannot be written as UTF-8 (a lone surrogate at position {error.start}); "
                "send plain text"
            ) from None
        write_atomically(target, data)
        return {"path": EDITABLE, "replaced": 1}

    def run_tests(self):
        timeout = self.deadline.cap(self.test_timeout) if self.deadline else self.test_timeout
        return run_pytest(self.root, timeout=timeout, isolate=self.isolate)
