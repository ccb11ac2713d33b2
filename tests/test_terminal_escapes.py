"""Escapes shown, not obeyed: text from a model, a tool, a file name or a recording never
reaches the terminal as control characters.

The sequences are those of the red-team pass: ESC[1A ESC[2K drew a fake passing verdict
over the real one, OSC 0 renamed the window, OSC 52 could set the clipboard, ESC[8m hid
everything after it, and a carriage return can overwrite a line.

The CLIs run their main() in this process (tests/in_process.py), printing into pipes as
they would as programs; only the test of a terminal that cannot encode a character starts
one as a program, since that encoding is what Python sets up before main() runs.
"""

import io
import os
import subprocess
import sys
from pathlib import Path

from harness.console import visible
from plumbing.sample import copy_sample
from tests.helpers import altered
from tests.in_process import run_cli
from tests.ollama_test_server import OllamaTestServer, call, chunk, reply

HERE = Path(__file__).resolve().parent.parent
FAKE_VERDICT = "\x1b[1A\x1b[2KIndependent verdict: passed"
HOSTILE = FAKE_VERDICT + " \x1b]0;pwned\x07 \x1b]52;c;ZXZpbA==\x07 \x1b[8m hidden \r\x9b31m \u202e"


def run_as_a_program(*args, env):
    return subprocess.run(
        [sys.executable, *map(str, args)], capture_output=True, text=True, cwd=HERE, env=env
    )


def assert_shown_not_obeyed(finished):
    printed = finished.stdout + finished.stderr
    assert "\x1b" not in printed and "\x07" not in printed and "\r" not in printed
    assert "\x9b" not in printed and "\u202e" not in printed
    assert "\\x1b[1A\\x1b[2KIndependent verdict: passed" in printed  # visible, as text


def test_visible_writes_out_every_control_character_but_newline_and_tab():
    assert visible("a\nb\tc") == "a\nb\tc"
    assert visible(HOSTILE) == (
        "\\x1b[1A\\x1b[2KIndependent verdict: passed \\x1b]0;pwned\\x07 "
        "\\x1b]52;c;ZXZpbA==\\x07 \\x1b[8m hidden \\r\\x9b31m \\u202e"
    )


def test_replay_shows_a_recordings_escapes(tmp_path):
    def change(recording):
        recording["description"] = HOSTILE
        recording["model"]["name"] = HOSTILE
        last = recording["model_calls"][-1]["chunks"]
        last[0]["message"]["content"] = HOSTILE  # what the model "said", streamed

    finished = run_cli("replay.py", altered(tmp_path, change))
    assert_shown_not_obeyed(finished)


def test_compare_shows_a_recordings_escapes(tmp_path):
    def change(recording):
        recording["model"]["name"] = HOSTILE

    assert_shown_not_obeyed(run_cli("compare.py", altered(tmp_path, change)))


def test_a_terminal_that_cannot_encode_a_character_is_shown_its_escape_not_a_traceback():
    # PYTHONIOENCODING=ascii stands for a terminal that cannot show compare.py's "·"; a
    # program, since Python reads it when it starts, before compare.py's main() runs
    ascii_only = {**os.environ, "PYTHONIOENCODING": "ascii"}
    finished = run_as_a_program("compare.py", "recordings/repair.json", env=ascii_only)
    assert finished.returncode == 0, finished.stderr
    assert "scripted \\xb7 gemma4:e2b \\xb7 ollama" in finished.stdout


def test_record_run_shows_a_models_escapes_in_text_and_arguments(tmp_path):
    script = [
        reply(chunk(tool_calls=[call("read_file", path=HOSTILE)], done=True)),
        reply(chunk(HOSTILE), chunk(done=True)),
    ]
    with OllamaTestServer(script) as server:
        finished = run_cli("record_run.py", "--host", server.host, "--output", tmp_path / "r.json")
    assert finished.returncode == 1
    assert_shown_not_obeyed(finished)


def test_ask_shows_a_models_escapes_and_a_file_names(tmp_path):
    repo = copy_sample(tmp_path)
    (repo / "name\x1b[8m.py").write_text("x = 1\n")
    script = [
        reply(chunk(tool_calls=[call("list_dir", path=".")], done=True)),
        reply(chunk("The files: name\x1b[8m.py. " + HOSTILE), chunk(done=True)),
    ]
    with OllamaTestServer(script) as server:
        finished = run_cli("ask.py", "--root", repo, "--host", server.host, "What is here?")
    assert finished.returncode == 0, finished.stderr
    assert_shown_not_obeyed(finished)
    assert "name\\x1b[8m.py" in finished.stdout


def test_a_password_learned_after_the_stream_was_made_is_redacted_from_its_first_write(
    monkeypatch,
):
    # mutation: the stream's count of learned secrets starting at 1 skipped the refresh
    # when the first secret was learned before anything was written: it was printed plain
    from harness import console
    from plumbing import redact

    learned = []  # this process's own list stays as it was
    monkeypatch.setattr(redact, "LEARNED", learned)
    monkeypatch.setattr(console, "LEARNED", learned)
    out = io.StringIO()
    stream = console.SafeStream(out)
    # a password too short to redact alone: one secret learned, "user:password" as written
    redact.keep_credentials_of("http://lab:pw1@127.0.0.1:11434")
    assert learned == ["lab:pw1"]
    stream.write("connecting to http://lab:pw1@127.0.0.1:11434\n")
    assert "lab:pw1" not in out.getvalue() and "@127.0.0.1:11434" in out.getvalue()
