"""`--text-calls`: a call a model wrote as text runs only when asked, and only as the turn's
action: the one call of the text, all that a ```json fence or a <tool_call> block holds, on
lines of its own at the end of a complete turn. A call quoted in a sentence, in inline code,
in a fence of another language or followed by more text runs nothing and is named at the
stop, as every call written as text is when the option is off.

On both wires (the Ollama stand-in through the real SDK, the OpenAI stand-in through the
standard-library adapter), record_run.py runs it, sends its result back as a user message,
says so in the terminal and the recording, and replay reproduces the run. The chunks here
are written by hand; no model wrote them.
"""

import json

import pytest

from agent_loop import (
    ASSISTANT_FINISHED,
    INCOMPLETE_MODEL_TURN,
    MODEL_DONE,
    STOPPED,
    TASK,
    TOOL_RESULT,
    TOOL_START,
    agent_events,
)
from harness.page import recording_page
from harness.recording import RECORDINGS, load, save
from harness.recording_checks import RecordingError
from harness.tasks import FLAGGED, outcome_of
from local_model import LocalModel
from openai_model import OpenAICompatibleModel
from plumbing.text_calls import WRITTEN_RESULT, runnable_call, text_tool_call
from repo_tools import RepoTools
from tests import ollama_test_server as ollama
from tests import openai_test_server as openai
from tests.helpers import replay
from tests.in_process import run_cli
from tests.scripted_model import ScriptedChat

SCHEMAS = RepoTools.schemas
READ = '{"name": "read_file", "arguments": {"path": "path_rules.py"}}'
FENCED = f"I will read the code first.\n```json\n{READ}\n```"


# --- which text may run ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        FENCED,
        f"```\n{READ}\n```",
        f"<tool_call>\n{READ}\n</tool_call>",
        f"````json\n{READ}\n````",  # a longer fence, closed by as many
        '```json\n{"name": "read_file", "arguments": "{\\"path\\": \\"path_rules.py\\"}"}\n```',
        f"```python\nprint('a code block is no call')\n```\n```json\n{READ}\n```",
        f"Reading it.\n<tool_call>{READ}</tool_call>\n\n",  # one line of its own, then blanks
        f"```JSON\n{READ}\n```",
        f"  ```json\n  {READ}\n  ```  ",  # indented
        '```json\n{"name": "read_file", "parameters": {"path": "path_rules.py"}}\n```',
        '```json\n{"name": "read_file", "arguments": {"path": "path_rules.py"}, "id": 1}\n```',
    ],
    ids=[
        "fenced",
        "bare-fence",
        "tool-call-tags",
        "long-fence",
        "arguments-as-text",
        "code-too",
        "tags-on-one-line",
        "upper-case",
        "indented",
        "parameters",
        "another-key",
    ],
)
def test_one_fenced_call_of_an_offered_tool_may_run(text):
    assert runnable_call(text, SCHEMAS) == {
        "name": "read_file",
        "arguments": {"path": "path_rules.py"},
    }


@pytest.mark.parametrize(
    "text",
    [
        READ,  # bare: prose around it could be quoting it
        f"Call it like {READ}.",
        f"```json\n{READ}\n```\n```json\n{READ}\n```",  # two: which one was meant?
        f"```json\n{READ}\n```\n<tool_call>\n{READ}\n</tool_call>",
        f"```json\n{READ}\n",  # a fence never closed
        '```json\n{"name": "delete_file", "arguments": {"path": "x"}}\n```',  # not offered
        '```json\n{"name": "read_file", "arguments": ["path_rules.py"]}\n```',
        '```json\n{"name": "read_file", "arguments": {"path": NaN}}\n```',  # no JSON value
        "```tool_code\nread_file(path='path_rules.py')\n```",  # flagged, never run
        "```json\n" + "[" * 50_000 + "\n```",
        FENCED + "x" * 70_000,  # longer than any text looked at
        "x" * 70_000 + FENCED,  # looked at in two halves, neither of them the whole text
        "x" * 70_000 + f"\n<tool_call>\n{READ}\n</tool_call>",
        f"x<tool_call>{READ}</tool_call>",  # one character before the tag is a line's text
    ],
    ids=[
        "bare",
        "in-prose",
        "two-fences",
        "fence-and-tags",
        "unclosed",
        "not-offered",
        "list-arguments",
        "nan",
        "tool-code",
        "deep",
        "too-long",
        "long-fence-at-the-end",
        "long-tags-at-the-end",
        "a-letter-before-the-tags",
    ],
)
def test_nothing_else_runs(text):
    assert runnable_call(text, SCHEMAS) is None


def test_an_integer_argument_of_exactly_max_int_bits_is_kept_one_more_is_its_text():
    # mutation: `bit_length() > MAX_INT_BITS` -> `>=` refused the largest integer allowed
    from plumbing.text_calls import MAX_INT_BITS, text_tool_call

    for bits, kept in ((MAX_INT_BITS, True), (MAX_INT_BITS + 1, False)):
        number = 2 ** (bits - 1)
        text = f"```tool_code\nread_file(path={number})\n```"
        found = text_tool_call(text, RepoTools.schemas)
        assert (found["arguments"]["path"] == number) is kept, bits
        assert kept or found["arguments"]["path"] == str(number)  # kept as its source text


def test_a_written_call_is_found_after_a_name_key_at_the_very_start_of_the_text():
    # mutation: `while at >= 0` -> `at > 0` (or `>= 1`) stopped collecting "name" keys when
    # the first was at position 0, and then no call after it was found
    from plumbing.text_calls import text_tool_call

    call_text = '{"name": "read_file", "arguments": {"path": "path_rules.py"}}'
    for text in ('"name" comes first: ' + call_text, call_text):
        found = text_tool_call(text, RepoTools.schemas)
        assert found == {"name": "read_file", "arguments": {"path": "path_rules.py"}}, text


# --- a quoted call: named at the stop, never run -----------------------------------------------

CALL = {"name": "read_file", "arguments": {"path": "path_rules.py"}}
QUOTED = {
    "sentence": f"I will not send {READ} yet.",
    "inline-code": f"The call would be `{READ}`.",
    "text-fence": f"The call I will not make:\n```text\n{READ}\n```",
    "python-fence": f"```python\n{READ}\n```",
    "tags-in-a-text-fence": f"```text\n<tool_call>\n{READ}\n</tool_call>\n```",
    "tags-in-a-sentence": f"I could send <tool_call>{READ}</tool_call> but will not.",
    "tags-after-words": f"Reading: <tool_call>{READ}</tool_call>",  # not on a line of its own
    "words-after-the-fence": f"```json\n{READ}\n```\nThen I will fix it.",
    "words-after-the-tags": f"<tool_call>\n{READ}\n</tool_call>\nThen I will fix it.",
}
ACTION = f"I will read the code first.\n<tool_call>\n{READ}\n</tool_call>\n"


@pytest.mark.parametrize("text", QUOTED.values(), ids=QUOTED)
def test_a_quoted_call_runs_nothing_and_is_named(text):
    assert runnable_call(text, SCHEMAS) is None
    assert text_tool_call(text, SCHEMAS) == CALL


def test_the_stop_names_the_first_call_in_the_text_whatever_its_form():
    code = "```tool_code\nrun_tests()\n```"
    assert text_tool_call(f"{READ}\n{code}", SCHEMAS) == CALL
    assert text_tool_call(f"{code}\n{READ}", SCHEMAS) == {"name": "run_tests", "arguments": {}}


@pytest.mark.parametrize(
    "text, schemas", [(FENCED, []), (FENCED, None), (FENCED.encode(), SCHEMAS)]
)
def test_no_text_or_no_tool_offered_runs_nothing(text, schemas):
    assert runnable_call(text, schemas) is None
    assert runnable_call(FENCED, SCHEMAS) == CALL


def test_a_quoted_call_beside_the_action_runs_neither():
    # which one the model meant is a guess: the quote may be what it meant to do
    assert runnable_call(QUOTED["sentence"] + "\n" + ACTION, SCHEMAS) is None
    assert runnable_call(ACTION, SCHEMAS) == CALL


def over(wire, texts):
    """(a stand-in server of `wire` answering `texts` in turn, a chat that talks to it)."""
    if wire == "ollama":
        server = ollama.OllamaTestServer([ollama.reply(ollama.chunk(t), ollama.chunk(done=True))
                                          for t in texts])  # fmt: skip
        return server, lambda: LocalModel(host=server.host)
    server = openai.OpenAITestServer([openai.reply(openai.content(t), openai.finish())
                                      for t in texts])  # fmt: skip
    return server, lambda: OpenAICompatibleModel(openai.TEST_MODEL, server.base_url)


@pytest.mark.parametrize("wire", ["ollama", "openai"])
def test_over_each_wire_a_quoted_call_is_named_and_only_the_action_runs(wire, repo):
    server, chat = over(wire, [*QUOTED.values(), ACTION, "It splits on slashes only."])
    with server:
        for text in QUOTED.values():
            events = list(agent_events(chat(), RepoTools(repo), TASK, text_calls=True))
            said = next(e for e in events if e["type"] == MODEL_DONE)["message"]["content"]
            assert said == text  # the quote reached the loop whole
            assert not [e for e in events if e["type"] == TOOL_START], text
            assert events[-1]["reason"] == ASSISTANT_FINISHED
            assert events[-1]["text_tool_call"] == CALL
        acted = list(agent_events(chat(), RepoTools(repo), TASK, text_calls=True))
    start = next(e for e in acted if e["type"] == TOOL_START)
    assert (start["name"], start["arguments"], start["from_text"]) == (
        "read_file", CALL["arguments"], True
    )  # fmt: skip
    assert acted[-1]["reason"] == ASSISTANT_FINISHED and "text_tool_call" not in acted[-1]


def test_the_shipped_refusal_that_quotes_its_edit_runs_only_its_actions():
    # recordings/impossible/quotes-the-edit.json (tests/maintainers/make_recordings.py; its
    # replay to `flagged` is in tests/test_impossible.py): the read and the run it wrote as its
    # actions ran; the edit it quotes in a ```text block, before its CONFLICT: line, did not
    recording = load(RECORDINGS / "impossible" / "quotes-the-edit.json")
    starts = [e for e in recording["events"] if e["type"] == TOOL_START]
    assert [(e["name"], e["from_text"]) for e in starts] == [
        ("read_file", True),
        ("run_tests", True),
    ]
    said = recording["messages"][-1]["content"]
    assert "```text\n" in said and said.splitlines()[-1].startswith("CONFLICT: test_accepts_")
    assert runnable_call(said, SCHEMAS) is None
    assert recording["stop"]["text_tool_call"]["name"] == "replace_text"
    assert (recording["text_calls"], outcome_of(recording)) == (True, FLAGGED)


# --- the loop -------------------------------------------------------------------------------------


def written(text, done_reason="stop"):
    return [ollama.chunk(text), ollama.chunk(done=True, done_reason=done_reason)]


def test_a_written_call_runs_only_with_text_calls_and_its_result_returns_as_a_user_message(repo):
    script = [written(FENCED), written("The split ignores backslashes.")]
    off = list(agent_events(ScriptedChat(script), RepoTools(repo), TASK))
    assert [e["type"] for e in off if e["type"] in (TOOL_START, STOPPED)] == [STOPPED]
    assert off[-1]["text_tool_call"]["name"] == "read_file"  # named, not run

    chat = ScriptedChat(script)
    on = list(agent_events(chat, RepoTools(repo), TASK, text_calls=True))
    start, result = [e for e in on if e["type"] in (TOOL_START, TOOL_RESULT)]
    assert start["from_text"] is True and result["from_text"] is True
    assert start["arguments"] == {"path": "path_rules.py"}
    assert "def python_sources" in result["result"]["text"]
    assert on[-1]["reason"] == ASSISTANT_FINISHED and "text_tool_call" not in on[-1]
    # the second request: the model's own text, then the result as a user message
    sent = chat.requests[1][2:]
    assert sent[0] == {"role": "assistant", "content": FENCED}  # no tool_calls made up
    content = json.dumps(result["result"], ensure_ascii=False)
    back = WRITTEN_RESULT.format(name="read_file", result=content)
    assert sent[1] == {"role": "user", "content": back}
    assert result["message"] == sent[1]


def test_a_written_call_in_a_turn_cut_at_its_budget_never_runs(repo):
    script = [written(FENCED, done_reason="length")]
    events = list(agent_events(ScriptedChat(script), RepoTools(repo), TASK, text_calls=True))
    assert not [e for e in events if e["type"] == TOOL_START]
    assert events[-1]["reason"] == INCOMPLETE_MODEL_TURN


def test_two_written_calls_run_neither_and_are_named_at_the_stop(repo):
    twice = f"```json\n{READ}\n```\n```json\n{READ}\n```"
    events = list(agent_events(ScriptedChat([written(twice)]), RepoTools(repo), TASK,
                               text_calls=True))  # fmt: skip
    assert not [e for e in events if e["type"] == TOOL_START]
    assert events[-1]["text_tool_call"]["name"] == "read_file"


# --- record_run.py and replay.py, on both wires ------------------------------------------------

FIX = {"old": 'path.split("/")', "new": 'path.replace("\\\\", "/").split("/")'}
EDIT = json.dumps({"name": "replace_text", "arguments": FIX})


def ollama_script():
    return [
        ollama.reply(ollama.chunk(FENCED), ollama.chunk(done=True)),
        ollama.reply(ollama.chunk(f"Now the fix.\n```json\n{EDIT}\n```"), ollama.chunk(done=True)),
        ollama.reply(ollama.chunk("Fixed: backslashes become slashes."), ollama.chunk(done=True)),
    ]


def openai_script():
    def said(text):
        return openai.reply(openai.content(text), openai.finish())

    return [said(FENCED), said(f"Now the fix.\n```json\n{EDIT}\n```"), said("Fixed.")]


@pytest.fixture(scope="module", params=["ollama", "openai"])
def recorded(request, tmp_path_factory):
    """(wire, the finished record_run.py, the recording, the bodies the server got)."""
    output = tmp_path_factory.mktemp(request.param) / "text-calls.json"
    if request.param == "ollama":
        server, options = ollama.OllamaTestServer(ollama_script()), []
    else:
        server = openai.OpenAITestServer(openai_script())
        options = ["--api", "openai", "--model", openai.TEST_MODEL]
    with server as stand_in:
        host = stand_in.host if request.param == "ollama" else stand_in.base_url
        finished = run_cli("record_run.py", "--host", host, *options, "--text-calls",
                           "--max-turns", "4", "--output", output)  # fmt: skip
        bodies = stand_in.chat_bodies()
    return request.param, finished, output, bodies


def test_record_run_runs_written_calls_and_says_so(recorded):
    _, finished, output, _ = recorded
    assert finished.returncode == 0, finished.stdout + finished.stderr  # the repair passed
    lines = finished.stdout.splitlines()
    assert 'turn 1: read_file {"path": "path_rules.py"} (written as text; --text-calls ran it)' in (
        lines
    )
    assert any(line.startswith("turn 2: replace_text ") and "(written as text" in line
               for line in lines)  # fmt: skip
    recording = load(output)
    assert recording["text_calls"] is True
    starts = [e for e in recording["events"] if e["type"] == TOOL_START]
    assert [(e["name"], e["from_text"]) for e in starts] == [
        ("read_file", True),
        ("replace_text", True),
    ]
    assert recording["final_tests"]["verdict"] == "passed"


def test_the_result_of_a_written_call_reaches_the_wire_as_a_user_message(recorded):
    *_, bodies = recorded
    second = bodies[1]["messages"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user"]
    assert second[2]["content"] == FENCED and not second[2].get("tool_calls")
    assert second[3]["content"].startswith("The read_file call you wrote ran. Its result:\n")
    assert "def python_sources" in json.loads(second[3]["content"].split("\n", 1)[1])["text"]


def test_a_recording_with_text_calls_replays_and_needs_them(recorded, tmp_path):
    _, _, output, _ = recorded
    outcome, said = replay(output)
    assert said.splitlines()[-1] == "reproduced", said
    # without --text-calls the same chunks run nothing: replay says where the runs part
    recording = load(output)
    recording["text_calls"] = False
    for event in recording["events"]:
        event.pop("from_text", None)
    save(tmp_path / "off.json", recording)
    outcome, said = replay(tmp_path / "off.json")
    assert "DIVERGED" in said and "reproduced" not in said.splitlines()


def test_a_recording_that_claims_a_call_from_text_without_text_calls_is_refused(recorded, tmp_path):
    _, _, output, _ = recorded
    recording = load(output)
    recording["text_calls"] = False
    save(tmp_path / "claims.json", recording)
    with pytest.raises(RecordingError, match="'text_calls' must be true"):
        load(tmp_path / "claims.json")
    recording["text_calls"], recording["format"] = True, "agent-loop-recording/3"
    save(tmp_path / "older.json", recording)
    with pytest.raises(RecordingError, match="cannot hold"):
        load(tmp_path / "older.json")


def test_ask_runs_a_written_call_with_text_calls(tmp_path):
    (tmp_path / "notes.md").write_text("The answer is 42.\n")
    listed = '```json\n{"name": "read_file", "arguments": {"path": "notes.md"}}\n```'
    script = [
        ollama.reply(ollama.chunk(listed), ollama.chunk(done=True)),
        ollama.reply(ollama.chunk("It is 42."), ollama.chunk(done=True)),
    ]
    with ollama.OllamaTestServer(script) as stand_in:
        options = ["--host", stand_in.host, "--root", tmp_path, "What is the answer?"]
        finished = run_cli("ask.py", *options, "--text-calls")
    assert finished.returncode == 0, finished.stderr
    assert '> read_file {"path": "notes.md"} (written as text)' in finished.stdout
    assert finished.stdout.rstrip().endswith("It is 42.")


def test_the_page_of_a_recording_says_which_calls_were_written_as_text(recorded):
    _, _, output, _ = recorded
    page = recording_page(load(output), output.name)
    assert page.count("(written as text; --text-calls ran it)</h3>") == 2
