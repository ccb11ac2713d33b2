"""Offline tests that replay the shipped recordings, the failure cases and the two CLIs.

Replays run the real loop, the real tools and real pytest on temporary copies. The
recorder runs through the real SDK against ollama_test_server.py, its main() called in this
process (tests/in_process.py); only the Ctrl-C test starts it as a program, since the signal
is what it is about. A replay whose printed output several tests check is made once and
shared (a module fixture, its tests kept on one xdist worker).
"""

import io
import json
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import record_run
from agent_loop import (
    ASSISTANT_FINISHED,
    INCOMPLETE_MODEL_TURN,
    MAX_TURNS,
    MODEL_DONE,
    TASK,
    TOOL_RESULT,
    TOOL_START,
    agent_events,
)
from harness.chats import RecordingChat, ReplayChat
from harness.console import RunPrinter
from harness.model_files import QWEN_05B, QWEN_15B
from harness.recording import RECORDINGS, load, save, sha256_file
from harness.recording_checks import RecordingError
from harness.recording_format import ENDED_DONE, ENDED_WITHOUT_DONE, SOURCES
from harness.transcript import block, result_lines
from plumbing.pytest_report import count_results
from plumbing.pytest_run import run_pytest
from plumbing.sample import SAMPLE_REPO, TEST_FILE, copy_sample
from replay import CANNOT_REPLAY, DIVERGED, FULL, REPRODUCED, TURNS, parse_args
from repo_tools import RepoTools
from tests import openai_test_server as openai
from tests.helpers import (
    FAULTY_LINE,
    FIXED_LINE,
    MEASURED,
    altered,
    replay,
    sigint_default,
    wait_for,
)
from tests.in_process import run_cli
from tests.ollama_test_server import OllamaTestServer, call, chunk, reply
from tests.real_server import ANSWER_TOKENS, MODEL
from tests.scripted_model import ScriptedChat

HERE = Path(__file__).resolve().parent
SHIPPED = sorted(RECORDINGS.glob("*.json"))

# subtle: a module fixture is made once per xdist worker, so the tests that read one shared
# replay are kept on one worker (`--dist loadgroup`, lab.py's test job).
SHARES_THE_SHIPPED_REPLAYS = pytest.mark.xdist_group("shipped-replays")
SHARES_THE_OPENAI_RECORDING = pytest.mark.xdist_group("openai-recording")


@pytest.fixture(scope="module")
def shipped_replays():
    """{file name: (outcome, printed text)} of each shipped recording replayed once, with
    replay.py's default options."""
    return {path.name: replay(path) for path in SHIPPED}


# --- the shipped recordings ----------------------------------------------------------------------


@SHARES_THE_SHIPPED_REPLAYS
@pytest.mark.parametrize("path", SHIPPED, ids=[p.name for p in SHIPPED])
def test_shipped_recording_reproduces(path, shipped_replays):
    outcome, output = shipped_replays[path.name]
    assert outcome == REPRODUCED, output
    # Only the one the README names (make_live_recording.py's) is a model's output.
    assert load(path)["source"] == ("live" if path.name == MODEL.recording else "scripted")
    assert "digest" not in load(path)["model"]


def test_shipped_live_recording_names_its_model_file_server_build_and_settings():
    # covers: the real SmolLM2 attempt: which file (by SHA-256), which server, which settings
    recording = load(RECORDINGS / MODEL.recording)
    model = recording["model"]
    assert recording["api"] == "openai" and model["name"] == MODEL.alias
    assert model["gguf"] == {
        "file": MODEL.file_name,
        "bytes": MODEL.size,
        "sha256": MODEL.sha256,
        "from": MODEL.source,
    }
    assert model["server_build"].startswith("version: ") and "--jinja" in model["server_flags"]
    assert model["sampling"] == model["options"] and model["sampling"]["temperature"] == 0
    assert model["sampling"]["max_tokens"] == ANSWER_TOKENS
    assert MODEL.licence in recording["description"]


# Real attempts of a model that calls tools, recorded by make_live_recording.py against the
# real llama-server (docs/live.md): each replays as reproduced, names its model file and
# chat template by SHA-256, and made at least one real tool call.
LIVE = sorted((RECORDINGS / "live").glob("*.json"))
LIVE_MODELS = {spec.alias: spec for spec in (QWEN_05B, QWEN_15B)}


@pytest.mark.parametrize("path", LIVE, ids=[p.name for p in LIVE])
def test_a_real_tool_calling_attempt_replays_and_names_its_model_and_template(path):
    recording = load(path)
    spec = LIVE_MODELS[recording["model"]["name"]]
    assert recording["source"] == "live" and recording["api"] == "openai"
    assert recording["model"]["gguf"]["sha256"] == spec.sha256
    template = recording["model"]["chat_template"]
    assert template["sha256"] == sha256_file(spec.template_path)
    outcome, output = replay(path)
    assert outcome == REPRODUCED, output


def test_the_real_attempts_are_five_of_the_15b_model_and_one_of_the_05b_and_call_tools():
    recordings = [load(path) for path in LIVE]
    names = [recording["model"]["name"] for recording in recordings]
    assert (names.count(QWEN_15B.alias), names.count(QWEN_05B.alias)) == (5, 1)
    calls = [sum(e["type"] == TOOL_START for e in r["events"]) for r in recordings]
    assert sum(count > 0 for count in calls) >= 3  # real streamed calls, run and answered


# One real attempt of each arm of the measurements in docs/hooks.md, context.md and
# one-shot.md (recordings/extensions/, named by the 1.5B model's SHA-256): the fork whose
# edit the syntax hook undid; a fork without the hook, from the same turn with the same seed
# as another hooked one, whose edit matched nothing; a plain attempt that re-read
# path_rules.py and resent an edit that matches nothing, five times; the same seed's turns
# with --keep-results 2, sent with the old results as their lines; a one-shot whose block
# was the file unchanged. Each is cheap and reproduces on Python 3.10, 3.11 and 3.13 (the
# fork whose edit landed does not: its tests' import traceback differs by version).
# The others replay the same way (`python3 lab.py replay PATH`); the suite does not pay.
SHA = QWEN_15B.sha256[:8]
MEASURED_REPLAYED = {  # the arm's folder: its recording, and a line its replay prints
    "syntax-fork": (f"{SHA}-syntax-3at7-3", "[syntax] undone: SyntaxError"),
    "no-hook-fork": (f"{SHA}-no-hook-3at7-2", "-> error: `old` was not found"),
    "loop": (f"{SHA}-loop-2", "-> error: `old` was not found"),
    "keep-results-2": (
        f"{SHA}-keep-results-2-2",
        "[keep-results] shortened: [read_file path_rules.py: 11 lines, sent in turn 8]",
    ),
    "one-shot": (f"{SHA}-one-shot-1", "[one-shot] written: path_rules.py is now the answer's"),
}


@pytest.mark.parametrize("arm", MEASURED_REPLAYED)
def test_a_measured_attempt_replays_and_names_its_model_by_sha256(arm):
    name, shown = MEASURED_REPLAYED[arm]
    path = MEASURED / arm / f"qwen2.5-coder-1.5b-{name}.json"
    assert load(path)["model"]["gguf"]["sha256"] == QWEN_15B.sha256
    outcome, output = replay(path)
    assert outcome == REPRODUCED, output
    assert shown in output


def run_recorded(name, tmp_path):
    """Run a shipped recording's model calls through the real loop and tools on a fresh
    copy: (what the loop yielded, the requests it made, the copy). The assertions are then
    about what the code does with those calls, not about what the JSON file says."""
    recording = load(RECORDINGS / name)
    repo = copy_sample(tmp_path)
    chat = ReplayChat(recording["model_calls"])
    tools = RepoTools(repo)
    events = list(agent_events(chat, tools, recording["task"], recording["max_turns"]))
    return events, chat.requests, repo


def test_repair_goes_from_one_failure_to_four_passed_with_tests_unchanged(tmp_path):
    # covers: the scripted repair, 5 model calls and 4 tool calls, verified independently
    assert count_results(run_pytest(copy_sample(tmp_path / "before"))["output"]) == {
        "failed": 1,
        "passed": 3,
        "errors": 0,
    }
    events, requests, repo = run_recorded("repair.json", tmp_path)
    assert [e["name"] for e in events if e["type"] == TOOL_START] == [
        "read_file",
        "read_file",
        "replace_text",
        "run_tests",
    ]
    assert events[-1]["reason"] == ASSISTANT_FINISHED and len(requests) == 5
    final = run_pytest(repo)  # independent of anything the model said
    assert final["exit_code"] == 0 and count_results(final["output"])["passed"] == 4
    assert sha256_file(repo / TEST_FILE) == sha256_file(SAMPLE_REPO / TEST_FILE)


def test_bounded_run_executes_its_one_read_then_stops_at_max_turns(tmp_path):
    # covers: --max-turns 1; the read completes, no second request is made
    events, requests, repo = run_recorded("bounded-max-turns-1.json", tmp_path)
    assert events[-1]["reason"] == MAX_TURNS and len(requests) == 1
    assert [e["name"] for e in events if e["type"] == TOOL_RESULT] == ["read_file"]
    assert run_pytest(repo)["exit_code"] == 1


def test_claimed_success_stays_failing(tmp_path):
    # covers: a final message is not a verdict; the independent tests are
    events, _, repo = run_recorded("claims-success-without-edit.json", tmp_path)
    claim = [e for e in events if e["type"] == MODEL_DONE][-1]["message"]["content"]
    assert events[-1]["reason"] == ASSISTANT_FINISHED and "tests pass" in claim
    assert [e for e in events if e["type"] == TOOL_START and e["name"] == "replace_text"] == []
    assert run_pytest(repo)["exit_code"] == 1


def test_fault_injection_first_stream_without_done_runs_no_tool(tmp_path):
    recording = load(RECORDINGS / "repair.json")
    first = recording["model_calls"][0]
    first["chunks"] = [c for c in first["chunks"] if not c.get("done")]
    first["ended"] = ENDED_WITHOUT_DONE
    repo = copy_sample(tmp_path)
    before = (repo / "path_rules.py").read_bytes()
    chat = ReplayChat(recording["model_calls"])
    events = list(agent_events(chat, RepoTools(repo), recording["task"]))
    assert events[-1]["reason"] == INCOMPLETE_MODEL_TURN
    assert [e for e in events if e["type"] == TOOL_START] == []
    assert len(chat.requests) == 1 and (repo / "path_rules.py").read_bytes() == before


def test_run_whose_test_output_holds_its_temp_path_replays(tmp_path):
    # covers: an edit that breaks the module's syntax, so pytest's output names the copy's
    # absolute path, which is another temp folder on replay; recorded through the recorder.
    script = [
        [chunk(tool_calls=[call("replace_text", old=FAULTY_LINE, new="parts = (")], done=True)],
        [chunk(tool_calls=[call("run_tests")], done=True)],
        [chunk("I broke the syntax.", done=True)],
    ]
    output = tmp_path / "broken-syntax.json"
    recorder = RecordingChat(ScriptedChat(script))
    record_run.record_attempt(recorder, {"name": "scripted"}, output, 4, out=io.StringIO())
    recording = load(output)
    ran = [e for e in recording["events"] if e["type"] == TOOL_RESULT and e["name"] == "run_tests"]
    assert recording["workdir"] in ran[0]["result"]["output"]  # the absolute path, as printed
    outcome, shown = replay(output)
    assert outcome == REPRODUCED, shown


# --- divergences and refusals ------------------------------------------------------------------


@SHARES_THE_SHIPPED_REPLAYS
def test_replay_shows_the_description_only_after_the_verdict(shipped_replays):
    # The description says how the attempt ends: a learner predicting it reads it last.
    _, output = shipped_replays["claims-success-without-edit.json"]
    lines = output.splitlines()
    verdict = next(i for i, line in enumerate(lines) if line.startswith("Independent verdict"))
    about = next(i for i, line in enumerate(lines) if line.startswith("About this recording:"))
    assert verdict < about
    assert load(RECORDINGS / "claims-success-without-edit.json")["description"] in lines[about]


def lines_after(output, start, count):
    """The `count` lines of `output` after the first line that starts with `start`."""
    lines = output.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(start))
    return lines[at + 1 : at + 1 + count]


@SHARES_THE_SHIPPED_REPLAYS
def test_replay_shows_each_edit_and_the_whole_change_as_diffs(shipped_replays):
    _, output = shipped_replays["repair.json"]
    removed, added = f"    -        {FAULTY_LINE}", f"    +        {FIXED_LINE}"
    under_edit = lines_after(output, "  -> replaced 1 occurrence", 8)
    assert under_edit[:2] == ["    --- path_rules.py before", "    +++ after this edit"]
    assert removed in under_edit and added in under_edit
    whole = lines_after(output, "What the run changed in path_rules.py:", 8)
    assert whole[:2] == ["    --- sample_repo/path_rules.py", "    +++ after the run"]
    assert removed in whole and added in whole


@SHARES_THE_SHIPPED_REPLAYS
def test_a_run_that_changed_nothing_shows_no_diff(shipped_replays):
    _, output = shipped_replays["claims-success-without-edit.json"]
    assert "What the run changed" not in output and "+++ " not in output


def test_a_failed_edit_shows_no_diff(tmp_path):
    def change(recording):  # the edit's `old` no longer occurs: replace_text refuses it
        for c in recording["model_calls"][2]["chunks"]:
            for tool_call in c["message"].get("tool_calls", []):
                tool_call["function"]["arguments"]["old"] = "not in the file"

    _, output = replay(altered(tmp_path, change))
    assert "-> error: `old` was not found" in output
    assert "after this edit" not in output and "What the run changed" not in output


def test_an_edit_sent_as_json_text_shows_its_diff(tmp_path):
    # The guard decodes arguments sent as JSON text, so the edit runs: its diff must show.
    def change(recording):
        for c in recording["model_calls"][2]["chunks"]:
            for tool_call in c["message"].get("tool_calls", []):
                function = tool_call["function"]
                function["arguments"] = json.dumps(function["arguments"])

    _, output = replay(altered(tmp_path, change))
    under_edit = lines_after(output, "  -> replaced 1 occurrence", 8)
    assert f"    +        {FIXED_LINE}" in under_edit


def test_the_diff_under_an_edit_is_read_from_the_file_itself(repo):
    # Something besides replace_text (here the test's own hand, as edited code run by
    # run_tests could) changes the file between two edits: the second diff shows the file
    # as it really was, not as the edits alone would have left it.
    marked = "    sources = []  # changed by a test run\n"

    def chat(messages, tools):
        turn = sum(m["role"] == "assistant" for m in messages) + 1
        if turn == 2:
            text = (repo / "path_rules.py").read_text()
            (repo / "path_rules.py").write_text(text.replace("    sources = []\n", marked))
        edits = {1: (FAULTY_LINE, FIXED_LINE), 2: ("# changed by a test run", "# edited")}
        if turn in edits:
            old, new = edits[turn]
            yield chunk(tool_calls=[call("replace_text", old=old, new=new)], done=True)
        else:
            yield chunk("Done.", done=True)

    out = io.StringIO()
    printer = RunPrinter(out, repo)
    for event in agent_events(chat, RepoTools(repo), TASK, max_turns=3):
        printer.show(event)
    second = lines_after(out.getvalue(), "turn 2: replace_text", 9)
    assert "    -    sources = []  # changed by a test run" in second
    assert "    +    sources = []  # edited" in second


def test_a_source_divergence_shows_the_recorded_and_todays_file_as_a_diff(tmp_path):
    def change(recording):
        recording["final_source"] = recording["final_source"].replace(FIXED_LINE, "parts = []")

    outcome, output = replay(altered(tmp_path, change))
    assert outcome == DIVERGED
    assert "DIVERGED (1):" in output  # nothing else differs
    diff = lines_after(output, "  the resulting path_rules.py differs:", 8)
    assert diff[:2] == ["    --- the recording's", "    +++ today's run's"]
    assert "    -        parts = []" in diff and f"    +        {FIXED_LINE}" in diff


def test_altered_tool_argument_is_reported_with_model_call_and_tool_call(tmp_path):
    def change(recording):
        third = recording["model_calls"][2]["chunks"]
        for c in third:
            for tool_call in c["message"].get("tool_calls", []):
                tool_call["function"]["arguments"]["new"] = 'parts = path.split("\\\\")'

    outcome, output = replay(altered(tmp_path, change))
    assert outcome == DIVERGED
    assert "tool call 3 (model call 3, replace_text) call: arguments.new: the recording" in output
    assert (
        "model call 4 (its request is messages[:8] in the file): "
        "messages[6].tool_calls[0].function.arguments.new" in output
    )
    assert "final tests: the recording says exit code 0, today's run gave 1" in output


def test_event_missing_a_key_is_named_not_a_crash(tmp_path):
    # The comparison walks the keys of both sides: a key only the replay has is named.
    def change(recording):
        done = next(e for e in recording["events"] if e["type"] == "model_done")
        del done["done_reason"]

    outcome, output = replay(altered(tmp_path, change))
    assert outcome == DIVERGED
    assert 'model_done): done_reason: the recording says nothing, today\'s run did "stop"' in output


def test_list_recorded_as_another_type_is_named_not_a_crash(tmp_path):
    # A list compared with text is a difference at that key, not an index walk. (A
    # model_done's tool_calls recorded as a number is refused by load() since.)
    def change(recording):
        done = next(e for e in recording["events"] if e["type"] == "model_done")
        done["message"]["content"] = [5]

    outcome, output = replay(altered(tmp_path, change))
    assert outcome == DIVERGED
    assert 'message.content: the recording says [5], today\'s run did ""' in output


def test_recorded_conversation_shorter_than_a_request_is_named_not_a_crash(tmp_path):
    # The comparison walks the longer of two lists: a message only the replay sent is named.
    def change(recording):
        del recording["messages"][-2:]  # the last request was 10 messages long; 9 are kept

    outcome, output = replay(altered(tmp_path, change))
    assert outcome == DIVERGED
    assert 'messages[9]: the recording says nothing, today\'s run did {"role": "tool"' in output


def test_extra_model_call_is_a_divergence_not_a_crash(tmp_path):
    def change(recording):
        recording["model_calls"].pop()  # the final answer is gone

    outcome, output = replay(altered(tmp_path, change))
    calls = len(load(RECORDINGS / "repair.json")["model_calls"])
    assert outcome == DIVERGED
    assert f"model calls: {calls - 1} recorded, {calls} made" in output
    assert f"the loop asked for model call {calls}, but only {calls - 1} were recorded" in output


def test_recording_of_an_unknown_source_is_refused(tmp_path, capsys):
    # `source` says whether a recording is a model's output: only the known labels replay.
    outcome, _ = replay(altered(tmp_path, lambda r: r.update(source="a-real-model")))
    assert outcome == CANNOT_REPLAY
    assert f"field 'source' must be one of {', '.join(SOURCES)}" in capsys.readouterr().err


def test_sample_hash_mismatch_is_refused(tmp_path, capsys):
    outcome, _ = replay(altered(tmp_path, lambda r: r.update(tests_sha256="0" * 64)))
    assert outcome == CANNOT_REPLAY
    assert "tests/test_path_rules.py is not the file this recording was made with" in (
        capsys.readouterr().err
    )


@pytest.mark.parametrize(
    "content, expected",
    [
        ("not json at all", "not a JSON recording"),
        ("[1, 2]", "expected a JSON object"),
        ('{"format": "something-else/1"}', "field 'format' must be"),
        ('{"format": "agent-loop-recording/2"}', "field 'source' is missing"),
        (
            '{"format": "agent-loop-recording/1"}',
            "format 'agent-loop-recording/1' was made by the lab before",
        ),
    ],
)
def test_malformed_recording_exits_2_with_one_clear_line(tmp_path, content, expected):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    finished = run_cli("replay.py", bad)
    assert finished.returncode == 2
    error = finished.stderr.strip()
    assert len(error.splitlines()) == 1 and error.startswith("error: ") and expected in error


def test_recording_with_wrong_shape_names_the_field(tmp_path, capsys):
    path = altered(tmp_path, lambda r: r["model_calls"][1].pop("chunks"))
    outcome, _ = replay(path)
    assert outcome == CANNOT_REPLAY
    assert "model_calls[1].chunks' must be a list" in capsys.readouterr().err


def first_event(recording, kind):
    return next(e for e in recording["events"] if e["type"] == kind)


@pytest.mark.parametrize(
    "change, says",
    [
        (lambda r: r["final_tests"].update(reason=5), "'final_tests.reason' must be text"),
        (lambda r: r["messages"].append("text"), "'messages' must be objects with a 'role'"),
        (lambda r: r["events"][0].update(turn=0), "'events[0].turn' must be a positive int"),
        (lambda r: r["events"][0].update(turn="1"), "'events[0].turn' must be a positive int"),
        (lambda r: first_event(r, MODEL_DONE).update(message="text"), ".message' must be an"),
        (lambda r: first_event(r, TOOL_START).pop("index"), ".index' and '.name' are needed"),
        (lambda r: first_event(r, MODEL_DONE).update(seconds="1"), ".seconds' must be a number"),
        (lambda r: first_event(r, MODEL_DONE).update(seconds=-1), ".seconds' must be a number"),
    ],
    ids=["reason", "messages", "turn-0", "turn-text", "message", "index", "seconds", "negative"],
)
def test_a_recorded_field_of_the_wrong_type_is_named_in_one_line(tmp_path, capsys, change, says):
    outcome, _ = replay(altered(tmp_path, change))
    assert outcome == CANNOT_REPLAY
    assert says in capsys.readouterr().err


@pytest.mark.parametrize("source", [5, ["a"], None], ids=["int", "list", "null"])
def test_a_final_source_that_is_not_text_is_refused_in_one_line(tmp_path, capsys, source):
    outcome, _ = replay(altered(tmp_path, lambda r: r.update(final_source=source)))
    assert outcome == CANNOT_REPLAY
    assert "'final_source' must be text" in capsys.readouterr().err


@pytest.mark.parametrize("exit_code", ["0", 1.5, True], ids=["text", "float", "bool"])
def test_recorded_test_run_with_a_mistyped_exit_code_names_it(tmp_path, capsys, exit_code):
    outcome, _ = replay(altered(tmp_path, lambda r: r["final_tests"].update(exit_code=exit_code)))
    assert outcome == CANNOT_REPLAY
    assert "'final_tests.exit_code' must be an int or null" in capsys.readouterr().err


def test_stopped_event_with_an_unknown_reason_is_refused_naming_the_event(tmp_path, capsys):
    def change(recording):
        recording["events"][-1]["reason"] = "gave_up"

    outcome, _ = replay(altered(tmp_path, change))
    assert outcome == CANNOT_REPLAY
    last = len(load(RECORDINGS / "repair.json")["events"]) - 1  # as the file indexes it
    assert f"field 'events[{last}].reason' must be one of" in capsys.readouterr().err


def test_highest_exit_code_applies_across_recordings(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    finished = run_cli("replay.py", RECORDINGS / "repair.json", bad)
    assert finished.returncode == 2
    assert "1 reproduced, 0 diverged, 1 could not be replayed" in finished.stdout


def test_transcript_full_prints_each_request_as_the_model_received_it():
    outcome, output = replay(RECORDINGS / "bounded-max-turns-1.json", transcript=FULL)
    assert outcome == REPRODUCED
    assert "--- request 1: 2 messages, as the loop passed them to the adapter" in output
    assert '"additionalProperties": false' in output  # the tool schemas are shown too
    assert '"role": "system"' in output
    assert 'adapter (the SDK leaves out empty fields) ---\n[\n  {\n    "role": "system",' in output


@SHARES_THE_SHIPPED_REPLAYS
def test_a_test_run_is_shown_as_its_exit_code_and_counts(shipped_replays):
    outcome, output = shipped_replays["repair.json"]
    assert outcome == REPRODUCED
    assert "\n  -> exit 0 (4 passed)\n" in output


def test_a_tool_result_that_is_not_an_object_is_shown_as_its_text():
    # A hostile recording's tool message may hold any JSON; it is shown, never dropped.
    assert result_lines({"role": "tool", "content": "[1, 2]"}) == block("[1, 2]")


def test_transcript_shows_each_request_where_its_turn_starts_with_only_what_is_new():
    outcome, output = replay(RECORDINGS / "repair.json", transcript=TURNS)
    assert outcome == REPRODUCED
    lines = output.splitlines()
    request_2 = lines.index("--- request 2: 4 messages, the first 2 as in request 1, then: ---")
    assert lines[request_2 - 2 : request_2] == [
        'turn 1: read_file {"path": "path_rules.py"}',
        "  -> 11 lines of path_rules.py",
    ]
    assert lines[request_2 + 4] == "  tool result of read_file:"
    # the file the model read, as text: no escaped quotes
    source = (SAMPLE_REPO / "path_rules.py").read_text().splitlines()
    shown = lines[request_2 + 7 : request_2 + 7 + len(source)]
    assert shown == [f"        {line}" if line else "" for line in source]
    assert '\\"\\"\\"Path' not in output  # nor as a JSON string, escaped
    assert lines.count("  system:") == 1  # the system prompt once, not in every request
    _, full = replay(RECORDINGS / "repair.json", transcript=FULL)
    assert len(output.splitlines()) < len(full.splitlines()) / 2


@pytest.mark.parametrize(
    "argv, transcript, recordings",
    [
        (["--transcript", "recordings/repair.json"], TURNS, ["recordings/repair.json"]),
        (["recordings/repair.json", "--transcript"], TURNS, ["recordings/repair.json"]),
        (["--transcript=full", "recordings/repair.json"], FULL, ["recordings/repair.json"]),
        (["--transcript", "full"], FULL, []),
        (["--transcript=turns", "--", "--transcript"], TURNS, ["--transcript"]),
        ([], None, []),
    ],
)
def test_transcript_never_takes_a_recording_for_its_value(argv, transcript, recordings):
    args = parse_args(argv)
    assert (args.transcript, [str(p) for p in args.recordings]) == (transcript, recordings)


def test_transcript_refuses_an_abbreviated_flag_rather_than_misread_it(capsys):
    with pytest.raises(SystemExit):
        parse_args(["--trans", "recordings/repair.json"])
    assert "unrecognized arguments" in capsys.readouterr().err


def test_chunks_of_an_openai_recording_are_the_assembled_chunks_the_loop_saw():
    outcome, output = replay(RECORDINGS / "smollm2-135m-live.json", chunks=1)
    assert outcome == REPRODUCED
    lines = output.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("--- turn 1: its "))
    first = json.loads(lines[head + 1])
    assert set(first) == {"message", "done"} and first["done"] is False  # a chunk, not an event


def test_chunks_shows_one_turns_chunks_as_they_arrived_inside_that_turn():
    outcome, output = replay(RECORDINGS / "repair.json", chunks=3)
    assert outcome == REPRODUCED
    chunks = load(RECORDINGS / "repair.json")["model_calls"][2]["chunks"]
    lines = output.splitlines()
    head = lines.index(f"--- turn 3: its {len(chunks)} chunks, as the adapter handed them over ---")
    assert lines[head - 1] == "  -> 18 lines of tests/test_path_rules.py"  # turn 2 ended
    assert [json.loads(line) for line in lines[head + 1 : head + 1 + len(chunks)]] == chunks
    assert lines[head + 1 + len(chunks)].startswith("turn 3 thinking: The Windows path")
    assert lines[head + 2 + len(chunks)].startswith("turn 3: replace_text")
    assert output.count("--- turn 3: its ") == 1  # a finished turn's: not again at the end
    _, missing = replay(RECORDINGS / "repair.json", chunks=9)
    assert "--- no turn 9 to show: this replay made 5 model calls ---" in missing


# --- record_run.py end to end, through the real SDK over real HTTP ------------------------------

REPAIR_SCRIPT = [
    reply(
        chunk(thinking="Look first."),
        chunk(tool_calls=[call("read_file", path="path_rules.py")]),
        chunk(done=True),
    ),
    reply(
        chunk(
            tool_calls=[
                call(
                    "replace_text",
                    old='path.split("/")',
                    new='path.replace("\\\\", "/").split("/")',
                ),
                call("run_tests", index=1),
            ]
        ),
        chunk(done=True),
    ),
    reply(chunk("Fixed; run_tests exit 0."), chunk(done=True)),
]


def test_recorder_writes_a_recording_that_replays_to_the_same_outcome(tmp_path):
    output = tmp_path / "live.json"
    secret = "sk-ollama-secret-4711"  # the SDK sends it to the server; it must not be saved
    env = {**os.environ, "OLLAMA_API_KEY": secret}
    with OllamaTestServer(REPAIR_SCRIPT) as server:
        finished = run_cli("record_run.py", "--host", server.host, "--output", output, env=env)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert "Starting verdict: failed\n  visible tests: 3 of 4 passed, 1 failed" in finished.stdout
    assert "turn 2: replace_text" in finished.stdout
    assert re.search(
        r"Independent verdict: passed\n  visible tests: 4 of 4 passed\n"
        r"  held-out checks: (\d+) of \1 passed \(500 generated inputs asked with their relations",
        finished.stdout,
    )  # how many inputs are asked: the run's seed says
    assert "What the run changed in path_rules.py:" in finished.stdout
    assert '    +        parts = path.replace("\\\\", "/").split("/")' in finished.stdout
    recording = load(output)
    assert recording["source"] == "live" and recording["model"]["digest"].startswith("sha256:")
    assert recording["model"]["server_version"] == "0.0.0-test"
    assert [c["request_length"] for c in recording["model_calls"]] == [2, 4, 7]
    assert [c["ended"] for c in recording["model_calls"]] == [ENDED_DONE] * 3  # each stream whole
    done = [e for e in recording["events"] if e["type"] == "model_done"]
    assert done[0]["model_counters"]["eval_count"] == 10  # the server's counters are kept
    assert secret not in output.read_text() and "OLLAMA_API_KEY" not in output.read_text()
    outcome, replayed = replay(output)
    assert outcome == REPRODUCED, replayed


def test_recorded_mid_stream_error_replays_to_the_same_error(tmp_path):
    output = tmp_path / "error.json"
    broken = reply(chunk(thinking="Let me"), {"error": "model runner has unexpectedly stopped"})
    with OllamaTestServer([REPAIR_SCRIPT[0], broken]) as server:
        finished = run_cli("record_run.py", "--host", server.host, "--output", output)
    assert finished.returncode == 1  # the final tests fail: nothing was repaired
    recording = load(output)
    assert recording["stop"]["reason"] == "model_error"
    assert recording["model_calls"][1]["ended"] == "error"
    outcome, replayed = replay(output)
    assert outcome == REPRODUCED, replayed
    assert "model runner has unexpectedly stopped" in replayed


def test_an_edit_that_changes_nothing_is_refused_recorded_and_replayed_so(tmp_path):
    output = tmp_path / "same.json"
    same = call("replace_text", old='path.split("/")', new='path.split("/")')
    script = [reply(chunk(tool_calls=[same]), chunk(done=True)), reply(chunk(content="Done."))]
    with OllamaTestServer(script) as server:
        finished = run_cli("record_run.py", "--host", server.host, "--output", output)
    assert finished.returncode == 1, finished.stderr
    recording = load(output)
    assert (
        recording["edits_told"] is True
        and recording["final_source"] == (SAMPLE_REPO / "path_rules.py").read_text()
    )
    assert "nothing would change" in recording["messages"][3]["content"]  # what the model saw
    outcome, replayed = replay(output)
    assert outcome == REPRODUCED, replayed
    # the same recording said to be made before: the edit ran, and replay says so
    del recording["edits_told"]
    save(tmp_path / "old.json", recording)
    outcome, replayed = replay(tmp_path / "old.json")
    assert outcome == DIVERGED and "replaced 1 occurrence" in replayed
    # a format made before the field cannot hold it: an older lab would not know to refuse
    save(
        tmp_path / "six.json", {**recording, "format": "agent-loop-recording/6", "edits_told": True}
    )
    with pytest.raises(RecordingError, match="'edits_told' is a field format .*/6' cannot hold"):
        load(tmp_path / "six.json")


def test_a_recording_saved_into_folders_that_do_not_exist_yet_makes_them(tmp_path):
    # `--output runs/2026-11-29/gemma.json` on a fresh checkout: the folders are made.
    recording = load(RECORDINGS / "repair.json")
    save(tmp_path / "runs" / "today" / "x.json", recording)
    assert load(tmp_path / "runs" / "today" / "x.json") == recording


def test_recorder_refuses_to_overwrite_without_force(tmp_path):
    output = tmp_path / "exists.json"
    output.write_text("keep me")
    finished = run_cli("record_run.py", "--host", "http://127.0.0.1:9", "--output", output)
    assert finished.returncode == 2 and "--force" in finished.stderr
    assert output.read_text() == "keep me"


@pytest.mark.parametrize(
    "options, expected",
    [
        (["--host", "http://[::1"], "error: --host http://[::1:"),
        (["--api", "openai", "--host", "ftp://x"], "error: --host ftp://x:"),
        (["--timeout", "0"], "must be a positive number of seconds"),
        (["--deadline", "-1"], "must be a positive number of seconds"),
    ],
)
def test_recorder_bad_options_exit_2_with_one_line(tmp_path, options, expected):
    finished = run_cli("record_run.py", *options, "--output", tmp_path / "r.json")
    assert finished.returncode == 2, finished.stderr
    assert expected in finished.stderr and "Traceback" not in finished.stderr
    assert not (tmp_path / "r.json").exists()


def test_recorder_refuses_an_output_it_could_not_write_before_running(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    finished = run_cli(
        "record_run.py", "--host", "http://127.0.0.1:9", "--output", blocker / "r.json"
    )
    assert finished.returncode == 2
    assert finished.stderr.startswith("error: ") and "cannot be written here" in finished.stderr
    assert "cannot reach Ollama" not in finished.stderr  # refused before asking the server


def test_recorder_with_server_down_exits_2_and_writes_nothing(tmp_path, unused_port):
    output = tmp_path / "none.json"
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    host = f"http://127.0.0.1:{unused_port}"
    finished = run_cli("record_run.py", "--host", host, "--output", output, env=env)
    assert finished.returncode == 2
    assert (
        finished.stderr.startswith("error: cannot reach Ollama")
        and "ollama serve" in finished.stderr
    )
    assert "Traceback" not in finished.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no recording, no temporary copy


def test_recorder_with_model_missing_exits_2_and_writes_nothing(tmp_path):
    output = tmp_path / "none.json"
    with OllamaTestServer() as server:
        options = ["--host", server.host, "--model", "nope:1b", "--output", output]
        finished = run_cli("record_run.py", *options)
    assert finished.returncode == 2
    assert "ollama pull nope:1b" in finished.stderr and not output.exists()


def test_ctrl_c_mid_stream_saves_an_interrupted_recording_and_exits_130(tmp_path):
    output = tmp_path / "interrupted.json"
    gate = threading.Event()  # holds the second stream open until the test lets go
    script = [REPAIR_SCRIPT[0], reply(chunk("Now I will"), chunk(" edit"), gate=gate)]
    with OllamaTestServer(script) as server:
        command = [sys.executable, str(HERE / "record_run.py"), "--host", server.host]
        process = subprocess.Popen(
            [*command, "--output", str(output)],
            cwd=HERE,
            preexec_fn=sigint_default,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        printed = []  # raw reads, not lines: streamed text comes without a newline

        def read():
            for piece in iter(lambda: os.read(process.stdout.fileno(), 4096), b""):
                printed.append(piece)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        try:
            # The first chunk of the held stream has reached the recorder once it is printed.
            wait_for(lambda: b"Now I will" in b"".join(printed), seconds=30)
            process.send_signal(signal.SIGINT)
            process.wait(timeout=20)
            reader.join(timeout=20)
            stdout, stderr = b"".join(printed).decode(), process.stderr.read()
        finally:
            gate.set()
            process.kill()
    assert process.returncode == 130, stdout + stderr
    assert "Traceback" not in stderr
    assert f"Saved: {output}" in stdout
    recording = load(output)
    assert recording["stop"]["reason"] == "interrupted" and recording["final_tests"] is None
    assert recording["model_calls"][1]["ended"] == "closed"
    outcome, replayed = replay(output)  # replays up to the point of interruption
    assert outcome == REPRODUCED, replayed


# --- the OpenAI-compatible wire: recorded raw events, replayed through the same normaliser -----

ARGUMENT_PIECES = ['{"ol', 'd": "parts = path.split(\\"/\\")", "new": "parts = path.rep', (
    'lace(\\"\\\\\\\\\\", \\"/\\").split(\\"/\\")"}')]  # fmt: skip


@pytest.fixture(scope="module")
def openai_recording(tmp_path_factory):
    """One attempt recorded by record_run.py over the OpenAI-compatible wire: its path. The
    tests that use it read it or change a copy, never the file itself."""
    output = tmp_path_factory.mktemp("openai") / "openai.json"
    fragments = [openai.tool_call(0, name="replace_text", call_id="call_a")]
    fragments += [openai.tool_call(0, piece) for piece in ARGUMENT_PIECES]
    script = [
        openai.reply(openai.reasoning("Fix the split."), *fragments,
                     openai.tool_call(1, "{}", name="run_tests"), openai.finish("tool_calls")),
        openai.reply(openai.content("Fixed: "), openai.content("4 passed."), openai.finish()),
    ]  # fmt: skip
    env = {**os.environ, "OPENAI_API_KEY": "sk-openai-secret-4711"}
    with openai.OpenAITestServer(script) as server:
        options = ["--api", "openai", "--host", server.base_url, "--model", openai.TEST_MODEL]
        options += ["--output", output]
        finished = run_cli("record_run.py", *options, env=env)
        sent = [request["headers"].get("Authorization") for request in server.requests]
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert "Bearer sk-openai-secret-4711" in sent  # the key went to the server...
    assert "sk-openai-secret-4711" not in output.read_text()  # ...and not into the recording
    return output


@SHARES_THE_OPENAI_RECORDING
def test_openai_recording_replays_through_the_adapters_normaliser(openai_recording):
    recording = load(openai_recording)
    assert recording["api"] == "openai" and "chunks" not in recording["model_calls"][0]
    raw = recording["model_calls"][0]["events"]
    assert [e["choices"][0]["delta"].get("tool_calls") is not None for e in raw].count(True) == 5
    outcome, output = replay(openai_recording, transcript=FULL)
    assert outcome == REPRODUCED, output
    assert re.search(
        r"Independent verdict: passed\n  visible tests: 4 of 4 passed\n"
        r"  held-out checks: (\d+) of \1 passed \(500 generated inputs asked with their relations",
        output,
    )
    assert "--- request 2: the body of POST /chat/completions ---" in output
    assert '"tool_call_id": "t0001c000"' in output  # the wire's own shape, not the loop's


@SHARES_THE_OPENAI_RECORDING
def test_openai_altered_argument_fragment_is_a_divergence(openai_recording, tmp_path):
    path = tmp_path / "altered.json"  # a copy: the shared recording stays as recorded
    recording = load(openai_recording)
    for event in recording["model_calls"][0]["events"]:
        for fragment in event["choices"][0]["delta"].get("tool_calls") or []:
            arguments = fragment.get("function", {}).get("arguments", "")
            fragment.setdefault("function", {})["arguments"] = arguments.replace("rep", "rap")
    save(path, recording)
    outcome, output = replay(path)
    assert outcome == DIVERGED
    assert "tool call 1 (model call 1, replace_text) call: arguments.new: the recording" in output


def test_a_recording_of_the_previous_format_is_refused_in_one_line_naming_it():
    # tests/data/repair-format-1.json is recordings/repair.json as the lab shipped it before
    # the held-out checks: its verdicts cannot be compared with today's two-part ones, and
    # replay says so instead of blaming today's run for a divergence.
    earlier = HERE / "tests" / "data" / "repair-format-1.json"
    finished = run_cli("replay.py", earlier)
    assert finished.returncode == 2
    error = finished.stderr.strip()
    assert len(error.splitlines()) == 1
    assert "format 'agent-loop-recording/1' was made by the lab before the held-out checks" in error
    assert "record the attempt again" in error and "DIVERGED" not in finished.stdout


@SHARES_THE_SHIPPED_REPLAYS
def test_a_scripted_recording_says_first_that_no_model_wrote_it(shipped_replays):
    # Once its first line read "Model: gemma4:e2b (scripted)", which a learner took for
    # Gemma's output (issue 21).
    _, output = shipped_replays["repair.json"]
    first = output.splitlines()[0]
    assert first.startswith("Recording: recordings/repair.json  |  scripted: ")
    assert "chunks written by hand, not a model's output" in first
    _, output = shipped_replays["smollm2-135m-live.json"]
    assert output.splitlines()[0].endswith("live: streamed by smollm2-135m-instruct")
