"""Shared pytest fixtures for the lab's own tests, and CI's rule that nothing is skipped."""

import os
import socket

import pytest


@pytest.fixture
def unused_port():
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(autouse=True, scope="session")
def sample_repo_is_never_modified():
    """Every run works on a copy: after the whole suite, sample_repo/ is byte-identical."""
    from plumbing.sample import SAMPLE_REPO

    def snapshot():
        return {p: p.read_bytes() for p in sorted(SAMPLE_REPO.rglob("*")) if p.is_file()}

    before = snapshot()
    yield
    assert snapshot() == before, "the suite changed sample_repo/"


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


@pytest.fixture
def repo(tmp_path):
    """A fresh copy of sample_repo/ (the faulty repository) under the test's tmp_path."""
    from plumbing.sample import copy_sample

    return copy_sample(tmp_path)
