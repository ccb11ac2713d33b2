"""Offline tests of the models learners actually have: capabilities, calls written as text, limits.

A real Ollama refuses `think: true` for a model without `thinking` and `tools` for a model
without `tools` (HTTP 400). These tests drive record_run.py and ask.py as subprocesses through
the real SDK against ollama_test_server.py, which answers per-model capabilities and those two
400s as Ollama words them, and against openai_test_server.py for the second wire. The text-call
detector is also tested directly, on each written form, on prose, and on hostile text.
"""

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import ollama
import pytest

import openai_model
import record_run
from agent_loop import ASSISTANT_FINISHED, STOPPED, TASK, agent_events
from ask import ASK_PROMPT
from harness.recording import RUNS, load, save
from local_model import CAPABILITIES_KEPT, OPTIONS, LocalModel, ModelError
from plumbing.sample import copy_sample
from plumbing.text_calls import MAX_SCAN, MAX_SPAN, UNREADABLE, text_tool_call
from readonly_tools import ReadOnlyTools
from replay import DIVERGED, REPRODUCED
from repo_tools import RepoTools
from tests import openai_test_server as openai
from tests.helpers import record, replay
from tests.in_process import run_cli
from tests.ollama_test_server import OllamaTestServer, call, chunk, reply
from tests.scripted_model import ScriptedChat

HERE = Path(__file__).resolve().parent.parent
NO_THINKING = "qwen2.5-coder:0.5b"
NO_TOOLS = "gemma3:270m"
CAPABILITIES = {NO_THINKING: ["completion", "tools", "insert"], NO_TOOLS: ["completion"]}
MODELS = [(name, "sha256:" + "1" * 64) for name in ("gemma4:e2b", NO_THINKING, NO_TOOLS)]

# A short attempt: read the code, then a final message; the final tests still fail.
READ_THEN_ANSWER = [
    reply(chunk(tool_calls=[call("read_file", path="path_rules.py")]), chunk(done=True)),
    reply(chunk("The split ignores backslashes."), chunk(done=True)),
]
WRITTEN_CALL = '```json\n{"name": "read_file", "arguments": {"path": "tests/x.py"}}\n```'
NOTE = "the model wrote a read_file call as text; only calls sent as tool calls run"
FULL_NOTE = NOTE + (
    " — likely the chat template (llama-server: --jinja --chat-template-file FILE); "
    "--text-calls runs such a call"
)


def server(script=(), **options):
    return OllamaTestServer(script, models=MODELS, capabilities=CAPABILITIES, **options)


def record_live(tmp_path, host, *options):
    """record_run.py against `host` into tmp_path/live.json: (finished, that path)."""
    output = tmp_path / "live.json"
    return record("--host", host, "--output", output, *options), output


# --- the stand-in answers as Ollama does ------------------------------------------------------


def test_stand_in_refuses_think_and_tools_with_ollamas_exact_400s():
    with server() as stand_in:
        client = ollama.Client(host=stand_in.host)
        assert client.show(NO_THINKING).capabilities == CAPABILITIES[NO_THINKING]
        with pytest.raises(ollama.ResponseError) as thinking:
            client.chat(model=NO_THINKING, messages=[{"role": "user", "content": "hi"}], think=True)
        tools = [RepoTools.schemas[0]]
        with pytest.raises(ollama.ResponseError) as no_tools:
            client.chat(model=NO_TOOLS, messages=[{"role": "user", "content": "hi"}], tools=tools)
    assert thinking.value.status_code == 400
    assert thinking.value.error == '"qwen2.5-coder:0.5b" does not support thinking'
    assert no_tools.value.status_code == 400
    assert no_tools.value.error == "registry.ollama.ai/library/gemma3:270m does not support tools"


# --- record_run.py: preflight by capabilities -------------------------------------------------


def test_thinking_model_is_asked_to_think_and_the_recording_keeps_its_capabilities(tmp_path):
    with server(READ_THEN_ANSWER) as stand_in:
        finished, output = record_live(tmp_path, stand_in.host)
    assert finished.returncode == 1, finished.stdout + finished.stderr
    assert [body["think"] for body in stand_in.chat_bodies()] == [True, True]
    model = load(output)["model"]
    assert model["capabilities"] == ["completion", "tools", "thinking"]
    assert model["think"] is True


def test_model_without_thinking_records_and_replays_without_think(tmp_path):
    with server(READ_THEN_ANSWER) as stand_in:
        finished, output = record_live(tmp_path, stand_in.host, "--model", NO_THINKING)
    assert finished.returncode == 1, finished.stdout + finished.stderr
    assert (
        "Independent verdict: failed\n  visible tests: 3 of 4 passed, 1 failed\n"
        "  held-out checks: " in finished.stdout  # how many of 520: the run's seed says
    )
    first = stand_in.chat_bodies()[0]
    recording = load(output)
    # The exact request: no `think` at all (Ollama would answer 400 to `think: true`).
    tools = first.pop("tools")  # as the SDK re-serialises the schemas
    assert first == {
        "model": NO_THINKING,
        "messages": recording["messages"][:2],
        "stream": True,
        "options": OPTIONS,
        "keep_alive": 0,
    }
    assert [tool["function"]["name"] for tool in tools] == [
        s["function"]["name"] for s in RepoTools.schemas
    ]
    assert recording["model"]["think"] is None
    assert recording["model"]["capabilities"] == CAPABILITIES[NO_THINKING]
    outcome, replayed = replay(output)
    assert outcome == REPRODUCED, replayed


def test_model_without_tools_is_refused_before_the_starting_tests(tmp_path):
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    output = tmp_path / "none.json"
    with server(READ_THEN_ANSWER) as stand_in:
        options = ["--host", stand_in.host, "--model", NO_TOOLS, "--output", output]
        finished = run_cli("record_run.py", *options, env=env)
    assert finished.returncode == 2
    assert finished.stderr == (
        "error: gemma3:270m cannot use tools (its capabilities: completion); "
        "pick a model that lists `tools` in `ollama show`\n"
    )
    assert "Starting tests" not in finished.stdout
    assert stand_in.chat_bodies() == []
    assert sorted(tmp_path.iterdir()) == []  # no recording, no temporary copy


def test_think_off_sends_think_false_to_a_thinking_model(tmp_path):
    with server(READ_THEN_ANSWER) as stand_in:
        finished, output = record_live(tmp_path, stand_in.host, "--think", "off")
    assert finished.returncode == 1, finished.stderr
    assert [body["think"] for body in stand_in.chat_bodies()] == [False, False]
    assert load(output)["model"]["think"] is False


def test_think_on_for_a_model_without_thinking_is_refused_at_preflight(tmp_path):
    with server(READ_THEN_ANSWER) as stand_in:
        finished, output = record_live(
            tmp_path, stand_in.host, "--model", NO_THINKING, "--think", "on"
        )
    assert finished.returncode == 2
    assert finished.stderr.startswith("error: qwen2.5-coder:0.5b cannot think (its capabilities:")
    assert finished.stderr.count("\n") == 1 and "Traceback" not in finished.stderr
    assert stand_in.chat_bodies() == [] and not output.exists()


def test_server_without_capabilities_refuses_nothing_and_sends_no_think(tmp_path):
    # Ollama before capabilities existed: `show` has none; the run goes on without `think`.
    with OllamaTestServer(READ_THEN_ANSWER, capabilities={"gemma4:e2b": None}) as stand_in:
        finished, output = record_live(tmp_path, stand_in.host)
    assert finished.returncode == 1, finished.stderr
    assert all("think" not in body for body in stand_in.chat_bodies())
    assert load(output)["model"]["capabilities"] is None


@pytest.mark.parametrize("odd", ["completion,tools", {"tools": True}, ["tools", 5]])
def test_malformed_capabilities_are_refused_in_one_line(tmp_path, odd):
    with OllamaTestServer(READ_THEN_ANSWER, capabilities={"gemma4:e2b": odd}) as stand_in:
        finished, output = record_live(tmp_path, stand_in.host)
    assert finished.returncode == 2, finished.stderr
    assert finished.stderr.startswith("error: the server's model info for gemma4:e2b at ")
    assert "capabilities" in finished.stderr and finished.stderr.count("\n") == 1
    assert stand_in.chat_bodies() == [] and not output.exists()


@pytest.mark.parametrize(
    "status, message, expected",
    [
        (500, "unexpected end of JSON input", "refused the request (HTTP 500)"),
        (404, "model 'gemma4:e2b' not found", "run `ollama pull gemma4:e2b`"),
    ],
)
def test_a_listed_model_whose_show_is_refused_gets_the_servers_reason(status, message, expected):
    # Not "malformed": the server answered, and said why (a manifest it cannot read, or a
    # model removed between the listing and `show`).
    errors = {"gemma4:e2b": (status, message)}
    with OllamaTestServer(show_errors=errors) as stand_in, pytest.raises(ModelError) as refused:
        LocalModel(host=stand_in.host).describe()
    assert expected in str(refused.value) and message in str(refused.value)
    assert "malformed" not in str(refused.value)


def test_a_huge_capabilities_list_is_kept_short():
    listed = ["tools", "thinking", "x" * 1000] + [f"cap{n}" for n in range(200_000)]
    with OllamaTestServer(capabilities={"gemma4:e2b": listed}) as stand_in:
        info = LocalModel(host=stand_in.host).describe()
    assert info["capabilities"][:2] == ["tools", "thinking"] and info["think"] is True
    assert len(info["capabilities"]) == CAPABILITIES_KEPT
    assert max(map(len, info["capabilities"])) == CAPABILITIES_KEPT


def test_an_empty_capabilities_list_is_a_model_without_tools_not_a_server_without_the_field():
    # mutation: `capabilities is None` -> `not capabilities` let a model listing nothing run
    with OllamaTestServer(capabilities={"gemma4:e2b": []}) as stand_in:
        with pytest.raises(ModelError, match=r"cannot use tools \(its capabilities: none\)"):
            LocalModel(host=stand_in.host).describe()


def test_a_model_not_described_is_sent_no_think(tmp_path):
    # A caller that skips describe() cannot know whether the model takes `think`.
    with server([reply(chunk("Hello.", done=True))]) as stand_in:
        chat = LocalModel(model=NO_THINKING, host=stand_in.host)
        events = list(agent_events(chat, RepoTools(copy_sample(tmp_path)), TASK))
    assert events[-1]["reason"] == ASSISTANT_FINISHED, events[-1]
    assert ["think" in body for body in stand_in.chat_bodies()] == [False]


def test_max_tokens_is_sent_as_num_predict_and_recorded(tmp_path):
    with server(READ_THEN_ANSWER) as stand_in:
        finished, output = record_live(tmp_path, stand_in.host, "--max-tokens", "64")
    assert finished.returncode == 1, finished.stderr
    assert {body["options"]["num_predict"] for body in stand_in.chat_bodies()} == {64}
    assert load(output)["model"]["options"]["num_predict"] == 64


@pytest.mark.parametrize("turns", ["0", "-3"])
def test_a_turn_budget_below_1_is_a_usage_error(turns, capsys):
    with pytest.raises(SystemExit) as exited:
        record_run.parse_args(["--max-turns", turns])
    assert exited.value.code == 2
    # worded as ask.py's, --attempts' and --max-tokens' (harness/shared_flags.py)
    assert f"argument --max-turns: must be a positive whole number, got '{turns}'" in (
        capsys.readouterr().err
    )


def test_model_given_as_a_path_is_named_after_its_stem():
    # llama-server lists a model by its file path; replay.py must not take the name for an option.
    for model in ("/models/qwen2.5-coder-0.5b.gguf", "-x.gguf", "--weird", "hf.co/a/b:Q4"):
        name = record_run.parse_args([f"--model={model}"]).output.name
        assert not name.startswith(("-", ".")) and "/" not in name, name
    named = record_run.parse_args(["--model", "/models/qwen.gguf"]).output
    assert named.parent == RUNS and named.name.startswith("qwen-")


# --- calls written as text ----------------------------------------------------------------------

READ = {"name": "read_file", "arguments": {"path": "path_rules.py"}}
RUN = '{"name": "run_tests", "arguments": {}}'


@pytest.mark.parametrize(
    "text",
    [
        # 100 braces more than MAX_SPAN before the only "name" key: skipped without a parse
        # each (64 of them would use up the attempts), so the call after them is found
        "{" * 100 + "x" * MAX_SPAN + RUN,
        # a brace exactly MAX_SPAN before a "name" key is still tried, once
        "{" + "x" * (MAX_SPAN - 2) + RUN,
    ],
)
def test_braces_far_from_any_name_key_cost_no_attempt_and_hide_no_call(text):
    # In a child, first in this section: a scan that stops moving forward hangs, and the
    # child's timeout turns that into a failure, not a stalled suite.
    finished = detect_in_child(text)
    assert finished.returncode == 0, finished.stderr[-500:]
    assert json.loads(finished.stdout) == {"name": "run_tests", "arguments": {}}


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "read_file", "arguments": {"path": "path_rules.py"}}',
        'Let me look.\n```json\n{"name": "read_file", "arguments": {"path": "path_rules.py"}}\n```',
        '```\n{"name": "read_file", "parameters": {"path": "path_rules.py"}}\n```',
        '<tool_call>\n{"name": "read_file", "arguments": {"path": "path_rules.py"}}\n</tool_call>',
        '{"name": "read_file", "arguments": "{\\"path\\": \\"path_rules.py\\"}"}',
        '```tool_code\nread_file(path="path_rules.py")\n```',
        '```tool_code\nprint(default_api.read_file(path="path_rules.py"))\n```',
        '```tool_code\nread_file("path_rules.py")\n```',  # positional, by the schema's order
        # doubled braces, as a template writes them: the brace that fails to parse is
        # passed over one character at a time, so the object right after it is still tried
        '{{"name": "read_file", "arguments": {"path": "path_rules.py"}}}',
    ],
)
def test_each_written_form_of_an_offered_call_is_found(text):
    assert text_tool_call(text, RepoTools.schemas) == READ


@pytest.mark.parametrize(
    "text, found",
    [
        ('```\n{"name": "run_tests"}\n```', True),
        ('```{"name": "run_tests"}```', False),  # a fence opens on a line of its own
        ('```\n{"name": "run_tests"}```', False),  # and closes on one
        ('```\n{"name": "run_tests"}\n```x', False),  # "```x" is no closing line
        ('```\n{"name": "run_tests"}\n`````', True),  # more backticks than it opened with
        ('```json here\n{"name": "run_tests"}\n```', True),  # an info string of two words
    ],
)
def test_a_fence_opens_and_closes_on_lines_of_its_own(text, found):
    expected = {"name": "run_tests", "arguments": {}} if found else None
    assert text_tool_call(text, RepoTools.schemas) == expected


@pytest.mark.parametrize("indent, found", [(3, True), (4, False), (500, False)])
def test_a_fence_indented_four_spaces_or_more_is_no_fence(indent, found):
    # Markdown reads such lines as indented code (plumbing/fenced_blocks.py)
    text = "Run:\n" + " " * indent + '```\n{"name": "run_tests"}\n' + " " * indent + "```"
    expected = {"name": "run_tests", "arguments": {}} if found else None
    assert text_tool_call(text, RepoTools.schemas) == expected


@pytest.mark.parametrize(
    "text",
    [
        "z" * 10 + "```" + " " * 77 + '{"name": "run_tests"}```',  # ``` not at its line's start
        'Try\n{"name": "run_tests"}\n```',  # the line before is no fence at all
        "```tool_code\nx = run_tests\n```",  # a statement, not a call
        '{"name": "run_tests"}</tool_call> done',  # a closing tag, but no opening one
        '<tool_call>{"name": "run_tests"} done',  # an opening tag, but no closing one
        '<tool_call>{"name": "run_tests"}x',  # nor here: no block, however near its end
        '````\n{"name": "run_tests"}\n```',  # four backticks open a fence ``` cannot close
    ],
)
def test_what_only_looks_like_a_fenced_call_is_not_one(text):
    assert text_tool_call(text, RepoTools.schemas) is None


NAME_ALONE = '{"name": "run_tests"}'


@pytest.mark.parametrize(
    "text, found",
    [
        ("```\n" + " " * 500 + NAME_ALONE + "\n" * 500 + "```", True),
        ("<tool_call>" + " " * 500 + NAME_ALONE + "\n" * 500 + "</tool_call>", True),
        ("x```\n" + NAME_ALONE + "\n```", False),  # "x```" opens no fence
        ("```\n" + NAME_ALONE + " and more\n```", False),  # the fence holds more
        ("<tool_call>" + NAME_ALONE + ".</tool_call>", False),  # and so do the tags
    ],
)
def test_a_name_alone_is_a_call_when_it_is_all_that_a_fence_or_tags_hold(text, found):
    # Whitespace around it is no part of what they hold, however much of it there is.
    expected = {"name": "run_tests", "arguments": {}} if found else None
    assert text_tool_call(text, RepoTools.schemas) == expected


@pytest.mark.parametrize(
    "text",
    [
        "I will use read_file on path_rules.py, then run_tests.",
        'The config is {"name": "ci", "arguments": []}.',  # a JSON object, but no offered tool
        '{"name": "delete_repo", "arguments": {}}',  # a tool nobody offered
        '```python\nread_file(path="path_rules.py")\n```',  # code, not a tool_code block
        '```tool_code\nos.read_file(path="x")\n```',  # a method of something else
        '```tool_code\ndelete_repo(path="x")\n```',  # a function nobody offered
        "read_file(path='path_rules.py')",  # a call shape in prose, outside any block
        'To read, one would send {"name": "read_file"} to the server.',  # quoted in prose
        'It failed: {"name": "run_tests", "error": "boom"}',  # a report, not a call
        '```json\n{"name": "run_tests", "error": "boom"}\n```',  # other keys: no call, even fenced
        '{"name": "run_tests"} is what I would call.',  # name alone, but not alone in the text
        '{"name": ["read_file"], "arguments": {}}',  # a name that is not a string
        # a name alone after a long line of prose: no fence could open that line
        "x" * 100 + ' {"name": "run_tests"}',
        "x" * 100 + '\n```\n{"name": "run_tests"}',  # a fence, but never closed
    ],
)
def test_prose_and_other_json_are_not_flagged(text):
    assert text_tool_call(text, RepoTools.schemas) is None


@pytest.mark.parametrize(
    "text",
    [
        "{" * 300_000,
        '{"name": ' * 100_000,
        "[" * 300_000 + '{"name": "read_file"}',
        '{"name": "read_file", "arguments": ' + "[" * 5000 + "]" * 5000 + "}",
        "```tool_code\n" + "(" * 5000 + "```" + "```tool_code\n" * 10_000,
        '{"a": "' + "\\u00e9" * 100_000 + '", "name": "read_file"}' * 3,
    ],
)
def test_hostile_text_is_refused_within_bounded_work(text):
    # The hang guard is the subprocess timeout; a quadratic scan of this text would not end.
    finished = detect_in_child(text)
    assert finished.returncode == 0, finished.stderr[-500:]
    assert finished.stdout.strip() in ("null", json.dumps({"name": "read_file", "arguments": {}}))


DEEP_SUM = "```tool_code\nread_file(" + "+".join(["1"] * 2500) + ")\n```"
DEEP_JSON = '{"name": "read_file", "arguments": ' + "[" * 900 + "]" * 900 + "}"


@pytest.mark.parametrize(
    "text",
    [
        DEEP_SUM,  # ast.unparse of it raises RecursionError
        "```tool_code\nread_file(" + "not " * 900 + "x)\n```",
        "```tool_code\nread_file(path={1, 2})\n```",  # a set: json.dumps raises TypeError
        "```tool_code\nread_file(path=b'x', pattern=1j)\n```",
        "```tool_code\nread_file(path=(1, 2), more={1: 2})\n```",  # saved, then no match
        DEEP_JSON,  # deeper than a recording may nest
        '{"name": "read_file", "arguments": "' + "[" * 5000 + '"}',  # json.loads recurses
        '{"name": ["read_file"], "arguments": {}}',  # an unhashable name
    ],
)
def test_hostile_written_call_gives_what_a_recording_can_hold(text):
    finished = detect_in_child(text)
    assert finished.returncode == 0, finished.stderr[-500:]
    found = json.loads(finished.stdout)
    assert found is None or found["name"] == "read_file"


def detect_in_child(text):
    """The detector run on `text` in a child that prints its result as a recording saves it,
    and fails unless reading that back gives the same value (as replay recomputes it)."""
    code = "import json, sys, repo_tools\nfrom plumbing import text_calls\n"
    code += "found = text_calls.text_tool_call(sys.stdin.read(), repo_tools.RepoTools.schemas)\n"
    code += "saved = json.dumps(found, allow_nan=False)\n"
    code += "assert json.loads(saved) == found, saved[:200]\n"
    code += "print(saved)\n"
    return subprocess.run(
        [sys.executable, "-c", code], input=text, capture_output=True, text=True, cwd=HERE,
        timeout=60,
    )  # fmt: skip


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "run_tests"}',
        '  {"name": "run_tests"}\n',
        'Running them now.\n```json\n{"name": "run_tests"}\n```',
        '```\n{"name": "run_tests"}\n```\nThen I will look.',
        # what follows the fence is no part of the window before the name, however long
        '```\n{"name": "run_tests"}\n```\n' + "Then I will look at the failure. " * 4,
        '<tool_call>\n{"name": "run_tests"}\n</tool_call>',
        '``` json\n{"name": "run_tests"}\n```',  # Markdown allows spaces before the language
        '````json\n{"name": "run_tests"}\n````',  # a longer fence, closed by as many
    ],
)
def test_a_bare_name_is_a_call_when_it_is_the_whole_message_or_fenced(text):
    assert text_tool_call(text, RepoTools.schemas) == {"name": "run_tests", "arguments": {}}


@pytest.mark.parametrize(
    "argument, kept",
    [
        ('"path_rules.py"', "path_rules.py"),
        ('["a", 1, 2.5, True, None, {"k": "v"}]', ["a", 1, 2.5, True, None, {"k": "v"}]),
        ("{1, 2}", "{1, 2}"),  # a set: JSON has none
        ("b'x'", "b'x'"),
        ("1j", "1j"),
        ("(1, 2)", "(1, 2)"),  # a tuple would be saved as a list and no longer match
        ("{1: 2}", "{1: 2}"),  # and an int key as a string
        ("1e400", "1e309"),  # infinity, as ast writes it back
        ("[" * 20 + "]" * 20, "[" * 20 + "]" * 20),  # deeper than MAX_DEPTH
        ("[" * 16 + "]" * 16, json.loads("[" * 16 + "]" * 16)),  # MAX_DEPTH (16): kept
        ("[" * 17 + "]" * 17, "[" * 17 + "]" * 17),  # one level more: its text
        ("0x" + "f" * 2500, 2**10_000 - 1),  # MAX_INT_BITS (10,000 bits): kept
        ("0x1" + "0" * 2500, str(2**10_000)),  # one bit more: its text, in decimal
        ("()", "()"),  # empty, so falsy, and still no JSON value
        ("b''", "b''"),
        ("0j", "0j"),
        ("0x" + "f" * 4000, UNREADABLE),  # too long to write back as decimal digits
    ],
)
def test_written_arguments_json_cannot_hold_are_kept_as_their_source_text(argument, kept):
    text = f"```tool_code\nread_file(path={argument})\n```"
    found = text_tool_call(text, RepoTools.schemas)
    assert found == {"name": "read_file", "arguments": {"path": kept}}
    assert json.loads(json.dumps(found, allow_nan=False)) == found  # saved = recomputed


def test_written_json_arguments_too_deep_or_not_finite_are_kept_as_the_calls_text():
    for arguments in ["[" * 900 + "]" * 900, '{"path": Infinity}', '{"path": NaN}']:
        text = '{"name": "read_file", "arguments": ' + arguments + "}"
        assert text_tool_call(text, RepoTools.schemas) == {"name": "read_file", "arguments": text}


def test_a_call_after_a_long_message_is_still_found_at_its_end():
    text = "x" * (3 * MAX_SCAN) + '{"name": "run_tests", "arguments": {}}'
    assert text_tool_call(text, RepoTools.schemas) == {"name": "run_tests", "arguments": {}}


@pytest.mark.parametrize(
    "length, at, found",
    [
        (64_000, 31_990, True),  # a message of 64,000 characters is looked at whole
        (64_001, 31_990, False),  # one more: its first and last 32,000, not the middle one
        (192_000, 32_000 - len(RUN), True),  # ends with the first 32,000 characters
        (192_000, 32_001 - len(RUN), False),  # one past them
        (192_000, 192_000 - 32_000, True),  # starts with the last 32,000
        (192_000, 192_000 - 32_001, False),  # one before them
    ],
)
def test_a_long_message_is_looked_at_only_in_its_first_and_last_32000_characters(length, at, found):
    # MAX_SCAN (64,000) bounds the work on untrusted text; a model writes its call at the
    # start or the end of a message. At the exact limits: the call (at `at`) whole, or cut.
    text = "x" * at + RUN + "x" * (length - at - len(RUN))
    assert len(text) == length
    expected = {"name": "run_tests", "arguments": {}} if found else None
    assert text_tool_call(text, RepoTools.schemas) == expected


@pytest.mark.parametrize("span, found", [(8_000, True), (8_001, False)])
def test_a_written_call_may_span_8000_characters(span, found):
    # MAX_SPAN bounds each parse: a call one character longer is never read whole.
    head, tail = '{"name": "read_file", "arguments": {"path": "', '"}}'
    path = "p" * (span - len(head) - len(tail))
    text = head + path + tail
    assert len(text) == span
    expected = {"name": "read_file", "arguments": {"path": path}} if found else None
    assert text_tool_call(text, RepoTools.schemas) == expected


@pytest.mark.parametrize("lines, found", [(1331, True), (1333, False)])
def test_a_tool_code_block_is_read_to_8000_characters(lines, found):
    # MAX_SPAN bounds the code parsed, closed or not: 6 characters a line, then the call.
    code = "x = 1\n" * lines + "run_tests()\n"
    assert (len(code) <= MAX_SPAN) is found
    expected = {"name": "run_tests", "arguments": {}} if found else None
    assert text_tool_call(f"```tool_code\n{code}```", RepoTools.schemas) == expected


@pytest.mark.parametrize("before", ["", "Reading it:\n"])
def test_a_tool_code_block_never_closed_is_read_to_the_end_of_its_span(before):
    # A model cut off by its token limit leaves the block open: the call in it is still one.
    text = before + '```tool_code\nread_file(path="path_rules.py")'
    assert text_tool_call(text, RepoTools.schemas) == READ


JSON_DECOY, JSON_CALL = '{"name": "x"} ', RUN
CODE_DECOY, CODE_CALL = "```tool_code\nx = 1\n```\n", "```tool_code\nrun_tests()\n```"


@pytest.mark.parametrize(
    "decoy, call",
    [(JSON_DECOY, JSON_CALL), (CODE_DECOY, CODE_CALL), (CODE_DECOY, JSON_CALL)],
    ids=["json", "tool_code", "shared"],
)
@pytest.mark.parametrize("decoys, found", [(63, True), (64, False)])
def test_a_message_gets_64_parses_for_both_forms_together(decoy, call, decoys, found):
    # MAX_ATTEMPTS (64) bounds the parses of one message: after 63 objects or blocks that
    # are no call, the 64th is still parsed; after 64, nothing more is. tool_code blocks are
    # parsed first, wherever they are, so 64 of them leave no parse for a JSON call.
    text = decoy * decoys + call
    expected = {"name": "run_tests", "arguments": {}} if found else None
    assert text_tool_call(text, RepoTools.schemas) == expected


def test_only_text_is_searched_and_only_a_named_function_schema_offers_a_tool():
    # Anything but text holds no written call; a schema without a function object, or
    # whose name is not text, offers no tool and hides none of the well-formed ones.
    text = '{"name": "read_file", "arguments": {"path": "path_rules.py"}}'
    assert text_tool_call(None, RepoTools.schemas) is None
    assert text_tool_call(text.encode(), RepoTools.schemas) is None
    odd = ["read_file", {"type": "function"}, {"function": "read_file"}]
    odd += [{"function": {"name": 5}}, {"function": {"parameters": {}}}]
    assert text_tool_call(text, odd) is None
    assert text_tool_call(text, odd + RepoTools.schemas) == READ


@pytest.mark.parametrize(
    "function",
    [
        {"name": "run"},  # no parameters at all
        {"name": "run", "parameters": None},
        {"name": "run", "parameters": {"type": "object"}},  # no properties
        {"name": "run", "parameters": {"properties": ["path"]}},  # properties not an object
        {"name": "run", "parameters": ["path"]},  # parameters not an object
        {"name": "run", "parameters": "path"},
    ],
)
def test_a_tool_whose_schema_names_no_parameters_is_offered_and_takes_keywords_only(function):
    # A schema that names no parameters, however it fails to, still offers its tool: a
    # written call of it is flagged, not a crash. Only a keyword argument has a name to be
    # kept under; a positional one has none.
    text = '```tool_code\nrun("a", path="b")\n```'
    schemas = [{"type": "function", "function": function}]
    assert text_tool_call(text, schemas) == {"name": "run", "arguments": {"path": "b"}}


def test_with_no_tool_offered_a_written_call_is_not_even_parsed():
    # No tool, no call to find: the text is not scanned, so Python's parser (which warns of
    # an invalid escape such as \d in a tool_code block) never sees it. With a tool
    # offered the block is parsed, and the parser's warning shows that it was.
    text = '```tool_code\nread_file("\\d")\n```'
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert text_tool_call(text, []) is None
        assert text_tool_call(text, None) is None
        assert caught == []
        text_tool_call(text, RepoTools.schemas)
        assert caught, "the parser warns once the block is parsed"


def test_loop_flags_a_written_call_and_runs_nothing_from_text(tmp_path):
    repo = copy_sample(tmp_path)
    chat = ScriptedChat([[{"message": {"content": WRITTEN_CALL}, "done": True}]])
    events = list(agent_events(chat, RepoTools(repo), TASK))
    assert [e["type"] for e in events][-1] == STOPPED
    assert events[-1]["reason"] == ASSISTANT_FINISHED
    assert events[-1]["text_tool_call"] == {
        "name": "read_file",
        "arguments": {"path": "tests/x.py"},
    }
    assert not any(e["type"] == "tool_start" for e in events)


def test_recorded_written_call_is_shown_and_replayed(tmp_path):
    script = [READ_THEN_ANSWER[0], reply(chunk(WRITTEN_CALL), chunk(done=True))]
    with server(script) as stand_in:
        finished, output = record_live(tmp_path, stand_in.host)
    assert finished.returncode == 1, finished.stderr
    lines = finished.stdout.splitlines()
    stop = next(n for n, line in enumerate(lines) if line.startswith("Stop: assistant_finished"))
    assert lines[stop + 1] == f"  note: {FULL_NOTE}"  # said once, right after the stop
    recording = load(output)
    assert recording["stop"]["text_tool_call"]["name"] == "read_file"
    outcome, replayed = replay(output)
    assert outcome == REPRODUCED, replayed
    assert NOTE in replayed
    # Replay recomputes the flag: a recording without it no longer matches.
    del recording["stop"]["text_tool_call"], recording["events"][-1]["text_tool_call"]
    save(output, recording)
    outcome, replayed = replay(output)
    assert outcome == DIVERGED and "text_tool_call" in replayed


@pytest.mark.parametrize("text", [DEEP_SUM, DEEP_JSON, "```tool_code\nread_file((1, 2))\n```"])
def test_recorded_hostile_written_call_is_saved_and_reproduced(tmp_path, text):
    with server([reply(chunk(text), chunk(done=True))]) as stand_in:
        finished, output = record_live(tmp_path, stand_in.host)
    assert finished.returncode == 1, finished.stderr[-500:]  # the final tests still fail
    assert load(output)["stop"]["text_tool_call"]["name"] == "read_file"
    outcome, replayed = replay(output)
    assert outcome == REPRODUCED, replayed


# --- ask.py: the same preflight, before the first question ------------------------------------


def test_ask_session_with_no_server_exits_2_before_the_prompt(tmp_path, unused_port):
    host = f"http://127.0.0.1:{unused_port}"
    finished = run_cli("ask.py", "--root", tmp_path, "--host", host, stdin="Hello?\n")
    assert finished.returncode == 2
    assert finished.stdout == ""  # no banner, no prompt
    assert finished.stderr.startswith(f"error: cannot reach Ollama at {host}")
    assert finished.stderr.count("\n") == 1


def test_ask_with_a_host_no_failure_message_foresees_names_the_error_itself(tmp_path):
    # No row of the adapter's table of failures fits a host of another protocol: the one
    # error line then gives the error's own type and text.
    finished = run_cli("ask.py", "--root", tmp_path, "--host", "ftp://127.0.0.1:1", "Hello?")
    assert finished.returncode == 2 and finished.stdout == ""
    unsupported = "UnsupportedProtocol: Request URL has an unsupported protocol 'ftp://'."
    assert finished.stderr == f"error: {unsupported}\n"


def test_ask_refuses_a_model_without_tools_before_asking_anything(tmp_path):
    with server([reply(chunk("Hi.", done=True))]) as stand_in:
        options = ["--root", tmp_path, "--host", stand_in.host, "--model", NO_TOOLS]
        one_shot = run_cli("ask.py", *options, "Hello?")
        in_session = run_cli("ask.py", *options, stdin="Hello?\n")
    for finished in (one_shot, in_session):
        assert finished.returncode == 2 and finished.stdout == ""
        assert finished.stderr.startswith("error: gemma3:270m cannot use tools")
    assert stand_in.chat_bodies() == []


def test_ask_sends_no_think_to_a_model_without_thinking_and_notes_a_written_call(tmp_path):
    with server([reply(chunk(WRITTEN_CALL), chunk(done=True))]) as stand_in:
        options = ["--root", tmp_path, "--host", stand_in.host, "--model", NO_THINKING]
        finished = run_cli("ask.py", *options, "--max-tokens", "99", "What is here?")
    assert finished.returncode == 0, finished.stderr
    (body,) = stand_in.chat_bodies()
    assert "think" not in body and body["options"]["num_predict"] == 99
    assert body["messages"][0] == {"role": "system", "content": ASK_PROMPT}
    assert finished.stderr == f"note: {FULL_NOTE}\n"


def test_ask_openai_refuses_a_model_the_server_does_not_list(tmp_path):
    with openai.OpenAITestServer([openai.reply(openai.content("Hi"), openai.finish())]) as srv:
        options = ["--api", "openai", "--root", tmp_path, "--host", srv.base_url]
        one_shot = run_cli("ask.py", *options, "Hello?")  # the default model, not served
        in_session = run_cli("ask.py", *options, stdin="Hello?\n")
    for finished in (one_shot, in_session):
        assert finished.returncode == 2 and finished.stdout == ""
        assert "is not served at" in finished.stderr and "test-model" in finished.stderr
        assert finished.stderr.count("\n") == 1
    assert srv.chat_bodies() == []


def test_think_is_refused_for_the_openai_wire(tmp_path):
    for command in (["record_run.py"], ["ask.py", "q"]):
        finished = run_cli(*command, "--api", "openai", "--think", "off")
        assert finished.returncode == 2 and "--think applies to --api ollama" in finished.stderr


# --- the OpenAI wire: default host, output budget, token counts -------------------------------


def test_openai_base_url_is_the_default_host_of_both_clis(tmp_path):
    script = [openai.reply(openai.content("Short."), openai.finish())] * 2
    with openai.OpenAITestServer(script) as srv:
        env = {**os.environ, "OPENAI_BASE_URL": srv.base_url}
        options = ["--api", "openai", "--model", openai.TEST_MODEL]
        recorded = run_cli("record_run.py", *options, "--output", tmp_path / "r.json", env=env)
        asked = run_cli("ask.py", *options, "--root", tmp_path, "Hello?", env=env)
    assert recorded.returncode == 1, recorded.stderr  # answered; the final tests still fail
    assert load(tmp_path / "r.json")["model"]["base_url"] == srv.base_url
    assert f"(live, {srv.base_url})" in recorded.stdout  # the server said, where no digest is
    assert asked.returncode == 0 and asked.stdout.strip() == "Short.", asked.stderr
    assert len(srv.chat_bodies()) == 2
    for script in ("record_run.py", "ask.py"):
        assert "$OPENAI_BASE_URL" in run_cli(script, "--help").stdout


@pytest.mark.parametrize("value", [None, ""])
def test_without_openai_base_url_the_default_is_llama_servers_address(monkeypatch, value):
    if value is None:
        monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    else:
        monkeypatch.setenv("OPENAI_BASE_URL", value)  # set but empty: as if unset
    assert openai_model.default_base_url() == "http://127.0.0.1:8080/v1"  # as docs/wires.md says


def test_openai_requests_carry_max_tokens_and_ask_for_usage(tmp_path):
    usage = {"choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 3}}
    script = [openai.reply(openai.content("Short."), openai.finish(), usage)] * 2
    with openai.OpenAITestServer(script) as srv:
        options = ["--api", "openai", "--host", srv.base_url, "--model", openai.TEST_MODEL]
        options += ["--max-tokens", "77"]
        run_cli("record_run.py", *options, "--output", tmp_path / "r.json")
        asked = run_cli("ask.py", *options, "--root", tmp_path, "Hello?")
    assert asked.returncode == 0, asked.stderr
    for body in srv.chat_bodies():
        assert body["max_tokens"] == 77 and body["stream_options"] == {"include_usage": True}
    recording = load(tmp_path / "r.json")
    assert recording["model"]["options"]["max_tokens"] == 77
    done = [e for e in recording["events"] if e["type"] == "model_done"]
    assert done[0]["model_counters"] == {"prompt_eval_count": 50, "eval_count": 3}
    outcome, replayed = replay(tmp_path / "r.json", transcript="full")
    assert outcome == REPRODUCED, replayed
    assert '"max_tokens": 77' in replayed  # the bodies shown are the ones that were sent
    assert '"include_usage": true' in replayed


def test_ask_tool_set_is_offered_to_the_detector():
    # ask.py's tools differ from the repair tools: a written `search` call is one of them.
    text = '<tool_call>{"name": "search", "arguments": {"pattern": "TODO"}}</tool_call>'
    assert text_tool_call(text, ReadOnlyTools.schemas)["name"] == "search"
    assert text_tool_call(text, RepoTools.schemas) is None


# --- a slow machine -----------------------------------------------------------------------------


def test_stalled_message_says_the_prompt_may_still_be_read_and_to_raise_timeout(repo_copy):
    script = [reply(chunk("Thinking"), chunk(" more", done=True), pause_after_first=2)]
    with OllamaTestServer(script) as stand_in:
        chat = LocalModel(host=stand_in.host, timeout=0.3)
        events = list(agent_events(chat, RepoTools(repo_copy), TASK))
    stalled = [openai.reply(openai.content("a"), openai.finish(), pause_after_first=2)]
    with openai.OpenAITestServer(stalled) as srv:
        from openai_model import OpenAICompatibleModel

        chat = OpenAICompatibleModel(openai.TEST_MODEL, srv.base_url, timeout=0.3)
        events += list(agent_events(chat, RepoTools(repo_copy), TASK))
    errors = [e["error"] for e in events if e["type"] == STOPPED]
    assert len(errors) == 2
    for error in errors:
        assert "sent nothing for 0.3 s" in error
        assert "still be reading the prompt" in error and "raise --timeout" in error


@pytest.fixture
def repo_copy(tmp_path):
    return copy_sample(tmp_path)
