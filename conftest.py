"""Shared pytest fixtures for the lab's own tests, and CI's rule that nothing is skipped."""

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest


def sigint_default():
    """For Popen(preexec_fn=...): a child that Ctrl-C reaches even if the suite ignores it.

    subtle: a shell runs background jobs with SIGINT ignored, a child inherits that, and
    Python then installs no KeyboardInterrupt handler; the Ctrl-C tests would hang or lie.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture
def unused_port():
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(autouse=True, scope="session")
def sample_repo_is_never_modified():
    """Every run works on a copy: after the whole suite, sample_repo/ is byte-identical."""
    from repo_tools import SAMPLE_REPO

    def snapshot():
        return {p: p.read_bytes() for p in sorted(SAMPLE_REPO.rglob("*")) if p.is_file()}

    before = snapshot()
    yield
    assert snapshot() == before, "the suite changed sample_repo/"


def wait_until_gone(pid, seconds=5.0):
    """True once `pid` has exited (a zombie waiting for init to reap it counts as gone)."""
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


# --- under CI, a skipped test is a failure -------------------------------------------------------
# A test skips when what it needs is missing here (the real llama-server, bubblewrap). On a
# developer's machine that is fine; in CI it would hide exactly what CI exists to run.


def under_ci():
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def skipped_reason(report):
    """The reason pytest gives for a skip, without its "Skipped: " prefix."""
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    return reason.removeprefix("Skipped: ")


def pytest_configure(config):
    if under_ci():
        config.pluginmanager.register(SkipsFailUnderCI(), "skips-fail-under-ci")


class SkipsFailUnderCI:
    """Collects every skip (collection skips included); any at all fails the run."""

    def __init__(self):
        self.skipped = []  # (test id, reason)

    def pytest_runtest_logreport(self, report):
        # subtle: an expected failure (xfail) is also reported as skipped; it is not a skip.
        if report.skipped and not hasattr(report, "wasxfail"):
            self.skipped.append((report.nodeid, skipped_reason(report)))

    def pytest_collectreport(self, report):
        if report.skipped:
            self.skipped.append((report.nodeid, skipped_reason(report)))

    def pytest_sessionfinish(self, session):
        if self.skipped and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter):
        if self.skipped:
            title = f"CI=true: {len(self.skipped)} skipped test(s) fail this run"
            terminalreporter.section(title, red=True, bold=True)
            for nodeid, reason in self.skipped:
                terminalreporter.line(f"SKIPPED {nodeid}: {reason}", red=True)


# --- shared by several test files (issue 15): one definition each --------------------------------

# The line of sample_repo/path_rules.py that holds the bug, and the line that fixes it.
FAULTY_LINE = 'parts = path.split("/")'
FIXED_LINE = 'parts = path.replace("\\\\", "/").split("/")'


@pytest.fixture
def repo(tmp_path):
    """A fresh copy of sample_repo/ (the faulty repository) under the test's tmp_path."""
    from repo_tools import copy_sample

    return copy_sample(tmp_path)


def wait_for(condition, seconds=10.0):
    """True once `condition()` holds, False after `seconds`: for events another thread
    causes (a server noticing a hang-up). The bound is generous; only a failure waits it out."""
    until = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > until:
            return False
        time.sleep(0.02)
    return True


def replay(path, **options):
    """(outcome, printed text) of replaying the recording at `path`, as replay.py does."""
    import io

    from replay import replay_one

    out = io.StringIO()
    return replay_one(path, out=out, **options), out.getvalue()


def altered(tmp_path, change, name="altered.json"):
    """A copy of the shipped repair recording with `change(recording)` applied."""
    from recording import RECORDINGS, load, save

    recording = load(RECORDINGS / "repair.json")
    change(recording)
    save(tmp_path / name, recording)
    return tmp_path / name


# --- processes and pipes, for the tests that run the CLIs as a user would ------------------


def processes_under(directory):
    """PIDs of live (not zombie) processes whose working directory is inside `directory`.

    Read from the host's /proc, so it sees processes in bubblewrap's PID namespace too."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cwd = os.readlink(entry / "cwd")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if cwd.startswith(str(directory)) and state != "Z":
            found.append(int(entry.name))
    return found


def start_cli(args, tmp_path, own_group=False):
    """(process, lines): a lab CLI (`args[0]` the script) running with its temporary copies
    in `tmp_path`, Ctrl-C reaching it, and its stdout lines collected as they come."""
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    process = subprocess.Popen(
        [sys.executable, *map(str, args)],
        cwd=Path(__file__).resolve().parent,
        env=env,
        preexec_fn=sigint_default,
        start_new_session=own_group,  # then the test can press Ctrl-C as a terminal does
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines = []
    threading.Thread(target=lambda: lines.extend(process.stdout), daemon=True).start()
    return process, lines


class Reader:
    """Collects a pipe's bytes in a thread, so a test can wait for text without blocking."""

    def __init__(self, pipe):
        self.data, self.pipe = b"", pipe
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        while piece := os.read(self.pipe.fileno(), 4096):
            self.data += piece

    def wait_for(self, text, start=0, timeout=15):
        """The offset just after `text`, first found at or after `start`."""
        until = time.monotonic() + timeout
        while (found := self.data.find(text.encode(), start)) < 0:
            assert time.monotonic() < until, f"{text!r} never came; got {self.data!r}"
            time.sleep(0.02)
        return found + len(text)
