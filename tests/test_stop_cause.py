"""Every stop `incomplete_model_turn` says its cause (plumbing/stop_cause.py): the server's
token budget (with the flag that raises it) or a stream that ended before its final chunk,
and, when the text so far holds a call written as text, the likely reason it was no call.
record_run.py against both stand-in servers, in this process (tests/in_process.py); its
recording replayed prints the same lines; ask.py says the same on stderr."""

import pytest

from harness.page import recording_page
from harness.recording import load
from plumbing.stop_cause import BROKEN, LENGTH, WRITTEN
from replay import REPRODUCED
from tests import ollama_test_server as ollama
from tests import openai_test_server as openai
from tests.helpers import ask, record, replay

# a call written as text in a fence, then more text until the budget ran out
WRITTEN_CALL = (
    'I will read it.\n```json\n{"name": "read_file", "arguments": {"path": "path_rules.py"}}'
    "\n```\nThen I"
)
NOTE = WRITTEN.format(name="read_file")


def stop_lines(output):
    """The stop line and the lines under it that say why."""
    lines = output.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("Stop: "))
    return [lines[at]] + [line for line in lines[at + 1 : at + 3] if line.startswith("  ")]


def ollama_turn(content, ended):
    if ended == "length":
        return ollama.reply(ollama.chunk(content), ollama.chunk(done=True, done_reason="length"))
    return ollama.reply(ollama.chunk(content))  # a clean end, and no done chunk


def openai_turn(content, ended):
    if ended == "length":
        return openai.reply(openai.content(content), openai.finish("length"))
    return openai.reply(openai.content(content), end="no-done")  # no finish_reason either


@pytest.mark.parametrize("wire", ["ollama", "openai"])
@pytest.mark.parametrize(
    "ended, text, said",
    [
        ("length", WRITTEN_CALL, [LENGTH, NOTE]),
        ("broken", "Let me think about the", [BROKEN]),
    ],
    ids=["length", "broken"],
)
def test_an_incomplete_turn_says_why_live_and_in_its_replay(tmp_path, wire, ended, text, said):
    output = tmp_path / "cut.json"
    if wire == "ollama":
        with ollama.OllamaTestServer([ollama_turn(text, ended)]) as server:
            done = record("--host", server.host, "--output", output)
    else:
        with openai.OpenAITestServer([openai_turn(text, ended)]) as server:
            done = record("--api", "openai", "--host", server.base_url, "--model",
                          openai.TEST_MODEL, "--output", output)  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    expected = ["Stop: incomplete_model_turn after 1 model call, 0 tool calls"]
    expected += [f"  {line}" for line in said]
    assert stop_lines(done.stdout) == expected
    outcome, replayed = replay(output)
    assert outcome == REPRODUCED, replayed
    assert stop_lines(replayed) == expected  # the recording keeps what the cause is read from
    page = recording_page(load(output), "cut.json")
    assert ("its token budget" in page) == (ended == "length")


def test_prose_that_names_a_tool_is_no_written_call(tmp_path):
    turn = ollama_turn("I should use read_file on path_rules.py and then", "length")
    with ollama.OllamaTestServer([turn]) as server:
        code, out, err = ask("--root", str(tmp_path), "--host", server.host, "Q?")
    assert code == 1
    assert err.splitlines()[-1:] == [f"  {LENGTH}"]  # no note: prose, not a written call


def test_ask_says_why_an_answer_was_cut_off(tmp_path):
    turn = openai_turn(WRITTEN_CALL.replace("path_rules.py", "README.md"), "broken")
    with openai.OpenAITestServer([turn]) as server:
        code, out, err = ask("--root", str(tmp_path), "--api", "openai", "--host",
                             server.base_url, "--model", openai.TEST_MODEL, "Q?")  # fmt: skip
    assert code == 1
    lines = err.splitlines()
    at = lines.index(
        "error: stopped without an answer: incomplete_model_turn (the model's response was "
        "cut off before it ended; the next line says why)"
    )
    assert lines[at + 1 :] == [f"  {BROKEN}", f"  {NOTE}"]
