"""Shared pytest fixtures for the lab's own tests."""

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
    from repo_tools import SAMPLE_REPO

    def snapshot():
        return {p: p.read_bytes() for p in sorted(SAMPLE_REPO.rglob("*")) if p.is_file()}

    before = snapshot()
    yield
    assert snapshot() == before, "the suite changed sample_repo/"
