"""Shared pytest fixtures for the lab's own tests."""

import socket

import pytest


@pytest.fixture
def unused_port():
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
