"""Shared pytest fixtures for the lab's own tests."""

import signal
import socket
import time

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
