"""The user and password written into a server address (plumbing/redact.py's
credentials_of), from addresses written here."""

import os

import pytest

from plumbing.recording import RECORDINGS
from plumbing.redact import credentials_of, secret_values
from tests.helpers import LAB


@pytest.mark.parametrize(
    ("address", "found"),
    [
        ("http://127.0.0.1:11434", []),  # nothing written in: nothing to redact
        ("http://[::1", []),  # an address urlsplit refuses: nothing, not a crash
        ("http://ann@127.0.0.1:1", ["ann"]),  # a user alone is still a credential
        ("http://:longpassword@h:1", [":longpassword", "longpassword"]),
        ("ann:hunter22@h:1", ["ann:hunter22", "hunter22"]),  # no scheme: http:// assumed
        ("http://a:b@c@h:1", ["a:b@c"]),  # the last @ ends the credentials
        ("http://ann:1234567@h:1", ["ann:1234567"]),  # a password of 7 alone is too short
        ("http://ann:12345678@h:1", ["ann:12345678", "12345678"]),
    ],
)
def test_the_credentials_written_into_an_address_are_found_as_written(address, found):
    assert credentials_of(address) == found


def test_an_empty_environment_given_is_that_environment_not_the_harnesss(monkeypatch):
    # secret_values(environ) reads the environment it is given (the lab's callers give
    # none: os.environ): an empty one holds no secret, whatever os.environ holds.
    monkeypatch.setenv("LAB_TEST_TOKEN", "not-in-an-empty-environment")
    assert "not-in-an-empty-environment" in secret_values()
    assert "not-in-an-empty-environment" not in secret_values({})


# --- no secret reaches a recording ----------------------------------------------------------------


def test_recordings_hold_no_environment_values():
    secrets = [v for k, v in os.environ.items() if len(v) > 8 and k not in ("PWD", "HOME")]
    for path in RECORDINGS.glob("*.json"):
        text = path.read_text()
        assert not [v for v in secrets if v in text and v not in str(LAB)], path.name
