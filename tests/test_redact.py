"""Secrets stay out of what the lab keeps and prints (plumbing/redact.py): the user and
password written into a server address (credentials_of, from addresses written here; then
through record_run.py, from --host and OLLAMA_HOST), and no environment value of the
harness in a shipped recording."""

import os

import pytest

from harness.recording import RECORDINGS
from plumbing.redact import credentials_of, secret_values
from tests.helpers import LAB
from tests.in_process import run_cli
from tests.ollama_test_server import OllamaTestServer, chunk
from tests.ollama_test_server import reply as ollama_reply


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


@pytest.mark.parametrize("via", ["--host", "OLLAMA_HOST"])
def test_a_user_and_password_in_the_address_are_neither_saved_nor_printed(tmp_path, via):
    output = tmp_path / "r.json"
    with OllamaTestServer([ollama_reply(chunk("hello"), chunk(done=True))]) as server:
        address = server.host.replace("http://", "http://lab-user:sekret-password-99@")
        args = ["--host", address] if via == "--host" else []
        env = {**os.environ, "OLLAMA_HOST": address} if via == "OLLAMA_HOST" else None
        finished = run_cli("record_run.py", *args, "--output", output, env=env)
    assert finished.returncode == 1, finished.stdout + finished.stderr
    saved = output.read_text()
    for shown in (saved, finished.stdout, finished.stderr):
        assert "sekret-password-99" not in shown and "lab-user" not in shown
    assert "[redacted]@127.0.0.1" in saved
