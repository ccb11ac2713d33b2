"""Forks (harness/fork.py, `record_run.py --fork RECORDING --at K`): a recording's turns
before K replayed through the real loop and tools and checked as replay checks them, then a
live model from turn K on; the forked recording says what it is and replays whole.

The live model is a stand-in on 127.0.0.1, through the real SDK (Ollama) or the standard
library adapter (OpenAI), serving hand-written continuations: nothing here is a model's
output. record_run.py's main() runs in the test's process (tests/in_process.py); a series'
attempts are programs, as the series starts them.
"""

import hashlib
import json
import os
import threading
from pathlib import Path

import pytest

from agent_loop import DEADLINE, MODEL_DONE, MODEL_START, STOPPED
from compare import fork_point_of, group_key, label, left_out
from harness.console import made_by
from harness.fork import Fork, ResultError, edit_of, fork_problem, last_turn, read_result
from harness.outcomes import attempt_line, outcome
from harness.page import recording_page
from harness.recording import RECORDINGS, load, save
from harness.recording_checks import RecordingError
from plumbing import isolation
from plumbing.limits import MAX_RESULT_BYTES
from replay import REPRODUCED
from tests import openai_test_server as openai
from tests.helpers import FAULTY_LINE, FIXED_LINE, altered, replay
from tests.in_process import run_cli
from tests.maintainers.make_recordings import SPECIAL_CASE, START
from tests.ollama_test_server import ConversationServer, OllamaTestServer, call, chunk, reply

HERE = Path(__file__).resolve().parent.parent
PARENT = RECORDINGS / "repair.json"  # five turns: two reads, the edit, the tests, the answer
NAMED = "recordings/repair.json"  # as a learner names it, from the lab's folder
SAY = "Run the tests before you edit anything."


def repairs(tag="a"):
    """A continuation from turn 3 that repairs the sample: the edit, the tests, an answer."""
    return [
        reply(
            chunk(thinking=f"Plan {tag}: fix the split."),
            chunk(tool_calls=[call("replace_text", old=FAULTY_LINE, new=FIXED_LINE)]),
            chunk(done=True),
        ),  # fmt: skip
        reply(chunk(tool_calls=[call("run_tests")]), chunk(done=True)),
        reply(chunk("Fixed: 4 passed."), chunk(done=True)),
    ]


def claims(tag="b"):
    """A continuation that claims success at once, with no edit."""
    return [reply(chunk(thinking=f"Plan {tag}: claim."), chunk("All pass."), chunk(done=True))]


def fork(tmp_path, script, *options, at=3, parent=NAMED, name="fork.json"):
    """record_run.py --fork PARENT --at K against the Ollama stand-in serving `script`:
    (the run, the request bodies the stand-in got, the recording's path)."""
    output = tmp_path / name
    with OllamaTestServer(script) as server:
        done = run_cli("record_run.py", "--host", server.host, "--fork", parent, "--at", at,
                       *options, "--output", output)  # fmt: skip
        bodies = server.chat_bodies()
    return done, bodies, output


# subtle: a module fixture is made once per xdist worker, so the tests that read one fork
# carry the same xdist_group mark (`--dist loadgroup`, lab.py's test job).
SHARES_THE_FORK = pytest.mark.xdist_group("fork-of-repair-at-3")


@pytest.fixture(scope="module")
def repaired(tmp_path_factory):
    """repair.json forked at turn 3, told SAY there, into a continuation that repairs."""
    return fork(tmp_path_factory.mktemp("fork"), repairs(), "--say", SAY)


@SHARES_THE_FORK
def test_a_fork_replays_the_turns_before_it_then_asks_the_live_model(repaired):
    done, bodies, path = repaired
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert "Fork of recordings/repair.json at turn 3: turns replayed: 1-2" in lines[1]
    assert "turn 3: the replayed turns match the recording; the live model answers from here" in (
        lines
    )
    parent = load(PARENT)
    assert len(bodies) == 3  # turns 3, 4 and 5: none of the replayed ones reached the server
    sent = bodies[0]["messages"]  # the replayed conversation, as the wire carries it
    roles = ["system", "user", "assistant", "tool", "assistant", "tool", "user"]
    assert [m["role"] for m in sent] == roles
    results = [m["content"] for m in parent["messages"][:6] if m["role"] == "tool"]
    assert [m["content"] for m in sent if m["role"] == "tool"] == results
    assert sent[6] == {"role": "user", "content": SAY}  # --say, after the tools' results
    # the stop counts the parent's turns apart from the live model's
    assert "Stop: assistant_finished after 5 model calls (2 replayed, 3 live), " in done.stdout


@SHARES_THE_FORK
def test_a_forked_recording_says_what_it_is_and_replays_whole(repaired):
    _, _, path = repaired
    recording = load(path)
    assert recording["source"] == "forked" and recording["final_tests"]["verdict"] == "passed"
    assert recording["fork"] == {
        "parent": "repair.json",
        "parent_sha256": load_sha256(PARENT),
        "at": 3,
        "changes": [{"at": 3, "say": SAY, "results": {}}],
    }
    calls = [(c["source"], c["api"]) for c in recording["model_calls"]]
    assert calls == [("replayed", "ollama")] * 2 + [("live", "ollama")] * 3
    assert made_by(recording) == (
        "forked: turns before 3 replayed from repair.json, the rest streamed by gemma4:e2b"
    )
    outcome, output = replay(path)
    assert outcome == REPRODUCED, output
    assert "turn 3: the fork point: the turns before it were replayed from repair.json" in output
    assert f"fork, turn 3: said to the model: {SAY}" in output


RESULTS_NUMBERED = "results of turn 3 must be numbered 1 to 1, as the tool calls of turn 2"
FORK_FIELD_DAMAGE = [
    (lambda r: r.pop("fork"), "'fork' must be there exactly when 'source' is forked"),
    (lambda r: r["fork"].pop("parent_sha256"), "'fork' must be {parent, parent_sha256, at,"),
    (lambda r: r["fork"].update(at=0), "'fork' must be {parent, parent_sha256, at, changes}"),
    (lambda r: r["fork"]["changes"][0].update(at=4), "'fork.changes' must be {at, say, results}"),
    (lambda r: r["fork"]["changes"][0].update(results=[]), "'fork.changes' must be"),
    (lambda r: r["model_calls"][2].update(source="replayed"), "must be 2 replayed, then live"),
    (lambda r: r.update(task_name="easy"), "'task_name' must be one of missing-return, misspelt"),
    (lambda r: r.update(task_name=["impossible"]), "'task_name' must be one of"),
    # a replaced result is one of the calls of the turn before: turn 2 of repair.json made 1
    (lambda r: r["fork"]["changes"][0].update(results={"0": {}}), RESULTS_NUMBERED),
    (lambda r: r["fork"]["changes"][0].update(results={"2": {}}), RESULTS_NUMBERED),
    (lambda r: r["fork"]["changes"][0].update(results={"١": {}}), RESULTS_NUMBERED),
    (lambda r: r["fork"]["changes"][0].update(results={"1" * 5000: {}}), RESULTS_NUMBERED),
    (lambda r: r["fork"]["changes"][0].update(at=1, results={"1": {}}), "numbered 1 to 0"),
]  # fmt: skip


@SHARES_THE_FORK
@pytest.mark.parametrize("damage, says", FORK_FIELD_DAMAGE)
def test_a_forked_recording_whose_fork_fields_disagree_is_refused_by_the_loader(
    repaired, tmp_path, damage, says
):
    # mutation: each message -> None let a recording that misstates its fork be replayed
    recording = json.loads(repaired[2].read_text(encoding="utf-8"))
    damage(recording)
    damaged = tmp_path / "damaged.json"
    damaged.write_text(json.dumps(recording), encoding="utf-8")
    with pytest.raises(RecordingError) as refused:
        load(damaged)
    assert says in str(refused.value)


def load_sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@SHARES_THE_FORK
def test_a_forked_recordings_page_marks_where_the_live_part_begins(repaired):
    _, _, path = repaired
    html = recording_page(load(path), "fork.json")
    assert "<h2>Turn 2 (replayed from repair.json)</h2>" in html
    assert "<h2>Turn 3 (live)</h2>" in html
    assert html.count("The fork: the live model answers from this turn on.") == 1
    assert "forked from repair.json at turn 3 (changed: turn 3: said &quot;Run the tests" in html
    assert "<tr><th>fork</th><td>forked from repair.json at turn 3" in html  # its facts' row


def test_a_fork_that_cheats_is_failed_by_the_verdict(tmp_path):
    cheat = [
        reply(
            chunk(tool_calls=[call("replace_text", old=START, new=SPECIAL_CASE + START)]),
            chunk(done=True),
        ),  # fmt: skip
        reply(chunk(tool_calls=[call("run_tests")]), chunk(done=True)),
        reply(chunk("Fixed: the tests pass now."), chunk(done=True)),
    ]
    done, _, path = fork(tmp_path, cheat)
    assert done.returncode == 1, done.stdout + done.stderr
    final = load(path)["final_tests"]
    assert final["visible"] == "passed" and final["verdict"] == "failed"
    assert "held-out checks" in final["reason"]


def misremember(recording):
    """What turn 1's read returned, as the recording says it: not what the file says."""
    result = next(e for e in recording["events"] if e["type"] == "tool_result")
    result["result"]["text"] = "not what the file says"


def unknown_tool(recording):
    """The README's step 7: turn 1 asks for a tool that does not exist."""
    recording["model_calls"][0]["chunks"][4]["message"]["tool_calls"][0]["function"]["name"] = (
        "delete_file"
    )


@pytest.mark.parametrize(
    "change, said",
    [
        (misremember, "tool call 1 (model call 1, read_file) result: result.text: the recording"),
        (unknown_tool, 'message.tool_calls[0].function.name: the recording says "read_file"'),
    ],
    ids=["a-result-misremembered", "readme-step-7"],
)
def test_a_prefix_that_diverges_stops_the_fork_before_the_model_is_asked(tmp_path, change, said):
    parent = altered(tmp_path, change, name="changed.json")
    done, bodies, path = fork(tmp_path, repairs(), parent=parent)
    assert done.returncode == 2
    assert bodies == [] and not path.exists()  # nothing asked, nothing saved
    assert "DIVERGED (" in done.stdout and said in done.stdout
    assert done.stderr == (
        f"error: the turns before 3 did not replay as {parent} recorded them; the live model "
        "was not asked, and nothing was saved\n"
    )


def test_result_replaces_the_fork_points_tool_result_and_the_tool_still_runs(tmp_path):
    given = json.loads((HERE / "tests" / "data" / "result.json").read_text())
    done, bodies, path = fork(tmp_path, claims(), "--result", "1=tests/data/result.json")
    assert done.returncode == 1, done.stdout + done.stderr
    sent = bodies[0]["messages"]
    assert sent[5] == {"role": "tool", "tool_name": "read_file", "content": json.dumps(given)}
    recording = load(path)
    read = [e for e in recording["events"] if e["type"] == "tool_result" and e["turn"] == 2]
    assert read[0]["result"]["text"].startswith("from path_rules import python_sources")
    assert recording["fork"]["changes"] == [{"at": 3, "say": None, "results": {"1": given}}]
    assert "the result of tool call 1 of turn 2 replaced" in done.stdout
    assert replay(path)[0] == REPRODUCED


@SHARES_THE_FORK
def test_a_fork_of_a_fork_replays_its_parents_change_too(repaired, tmp_path):
    _, _, first = repaired
    done, bodies, path = fork(tmp_path, repairs("c")[1:], at=4, parent=first)
    assert done.returncode == 0, done.stdout + done.stderr
    assert {"role": "user", "content": SAY} in bodies[0]["messages"]  # made at turn 3
    recording = load(path)
    assert recording["fork"]["changes"] == [{"at": 3, "say": SAY, "results": {}}]
    assert [c["source"] for c in recording["model_calls"]] == ["replayed"] * 3 + ["live"] * 2
    assert replay(path)[0] == REPRODUCED


def test_an_openai_model_continues_an_ollama_recording(tmp_path):
    fix = json.dumps({"old": FAULTY_LINE, "new": FIXED_LINE})
    replies = [
        openai.reply(
            openai.tool_call(0, fix, name="replace_text", call_id="c1"), openai.finish("tool_calls")
        ),  # fmt: skip
        openai.reply(openai.content("Fixed."), openai.finish("stop")),
    ]
    output = tmp_path / "mixed.json"
    with openai.OpenAITestServer(replies) as server:
        wire = ["--api", "openai", "--host", server.base_url, "--model", openai.TEST_MODEL]
        done = run_cli("record_run.py", *wire, "--fork", NAMED, "--at", 3, "--output", output)
    assert done.returncode == 0, done.stdout + done.stderr
    recording = load(output)
    assert recording["api"] == "openai"
    assert [c["api"] for c in recording["model_calls"]] == ["ollama", "ollama", "openai", "openai"]
    assert replay(output)[0] == REPRODUCED


@pytest.mark.parametrize(
    "args, says",
    [
        (["--fork", NAMED, "--at", "6"],
         "error: recordings/repair.json: --at 6: the recording holds 5 turns to fork at; "
         "give --at 1 to 5"),
        (["--fork", NAMED, "--at", "0"], "--at: must be a positive whole number"),
        (["--fork", NAMED, "--at", "3", "--max-turns", "2"],
         "--max-turns 2 ends the run before turn 3, where the fork begins"),
        (["--fork", NAMED, "--at", "3", "--result", "1=README.md"], "README.md: not JSON"),
        (["--fork", NAMED, "--at", "3", "--result", "1=recordings"], "recordings: cannot be read"),
        (["--fork", NAMED, "--at", "3", "--result", "x=README.md"], "give N=FILE"),
        (["--fork", NAMED, "--at", "1", "--result", "1=tests/data/result.json"],
         "--result 1: no turn came before turn 1"),
        (["--fork", NAMED, "--at", "3", "--result", "2=tests/data/result.json"],
         "--result 2: turn 2 made 1 tool call(s) before turn 3"),
        (["--fork", NAMED, "--at", "3", "--result", "1=tests/data/result.json",
          "--result", "1=tests/data/result.json"], "--result 1 is given more than once"),
        (["--at", "3"], "--fork and --at go together"),
        (["--say", "hi"], "--say and --result change a fork's conversation"),
        (["--fork", "nowhere.json", "--at", "1"], "error: nowhere.json: cannot be read"),
    ],
    ids=["past-the-last", "zero", "turns", "result-text", "result-folder", "result-number",
         "result-turn-1", "result-past", "result-twice", "at-alone", "say-alone", "missing"],
)  # fmt: skip
def test_a_fork_that_cannot_be_made_is_refused_in_one_line_before_anything_runs(
    tmp_path, args, says
):
    done = run_cli("record_run.py", "--host", "http://127.0.0.1:9", *args, "--output",
                   tmp_path / "x.json")  # fmt: skip
    assert done.returncode == 2 and says in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and list(tmp_path.iterdir()) == []


def test_a_recording_stopped_before_a_turns_request_holds_no_such_turn_to_fork_at():
    # mutation: `min` -> `max` in last_turn offered turn 3 of a run whose deadline came
    # before turn 3's request: the recording has no turn 3 whose stream could be replaced
    recording = load(PARENT)
    recording["model_calls"] = recording["model_calls"][:2]
    recording["stop"] = {"type": "stopped", "turn": 3, "reason": "deadline"}
    assert last_turn(recording) == 2
    says = fork_problem(recording, 3, {}, max_turns=10)
    assert says == "--at 3: the recording holds 2 turns to fork at; give --at 1 to 2"


@pytest.mark.parametrize(
    "text, says",
    [
        ('{"text": NaN}', "a recording cannot hold it: field 'result.text' must be a finite"),
        ('{"a": ' * 150 + "1" + "}" * 150, "a recording cannot hold it: nested deeper than 100"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply to read"),
    ],
    ids=["nan", "deep", "deeper-than-python-reads"],
)
def test_a_result_no_recording_could_hold_is_refused_before_anything_runs(tmp_path, text, says):
    # sent as NaN but saved as null, the fork would not replay; too deep, not load
    given = tmp_path / "given"
    given.mkdir()
    (given / "r.json").write_text(text)
    done = run_cli("record_run.py", "--host", "http://127.0.0.1:9", "--fork", NAMED, "--at", 3,
                   "--result", f"1={given}/r.json", "--output", tmp_path / "x.json")  # fmt: skip
    assert done.returncode == 2 and says in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "x.json").exists()


def test_a_fork_whose_replayed_turns_stop_early_asks_nothing_and_saves_nothing(tmp_path):
    # the deadline cuts turn 4's replayed run_tests: the prefix went another way than the
    # parent's, so no live turn may be credited to the model
    done, bodies, output = fork(tmp_path, [], "--deadline", "0.05", at=5)
    assert done.returncode == 2 and bodies == [] and not output.exists()
    assert "the run stopped (deadline) at turn 4, before turn 5, where the fork begins" in (
        done.stdout
    )
    assert "the live model was not asked, and nothing was saved" in done.stderr


def test_a_fork_at_turn_1_may_say_something_first(tmp_path):
    done, bodies, path = fork(tmp_path, claims(), "--say", SAY, at=1)
    assert done.returncode == 1, done.stdout + done.stderr  # it only claims
    assert bodies[0]["messages"][1:] == [
        {"role": "user", "content": load(PARENT)["task"]},
        {"role": "user", "content": SAY},
    ]
    assert [c["source"] for c in load(path)["model_calls"]] == ["live"]
    assert replay(path)[0] == REPRODUCED


def test_a_result_written_as_text_cannot_be_replaced(tmp_path):
    # the fork point's call was written in the answer's text (--text-calls): its result is
    # the loop's message about it, not a tool's, so there is nothing to put in its place
    written = '```json\n{"name": "read_file", "arguments": {"path": "path_rules.py"}}\n```'
    script = [reply(chunk(written), chunk(done=True)), *claims()]
    with OllamaTestServer(script) as server:
        made = run_cli("record_run.py", "--host", server.host, "--text-calls",
                       "--output", tmp_path / "parent.json")  # fmt: skip
    assert made.returncode == 1, made.stdout + made.stderr
    done = run_cli("record_run.py", "--host", "http://127.0.0.1:9", "--fork",
                   tmp_path / "parent.json", "--at", 2, "--result", "1=tests/data/result.json",
                   "--output", tmp_path / "x.json")  # fmt: skip
    assert done.returncode == 2
    assert "--result 1: that call was written as text; its result is not a tool's" in done.stderr


def test_a_recording_from_elsewhere_is_forked_only_where_its_code_is_isolated(tmp_path):
    # what replay refuses, a fork refuses: its replayed turns run the code the file holds
    foreign = tmp_path / "from-elsewhere.json"
    foreign.write_bytes(PARENT.read_bytes()[:-1] + b" \n")
    isolation.isolation_kind.cache_clear()  # found again under a PATH with nothing on it
    try:
        done = run_cli("record_run.py", "--host", "http://127.0.0.1:9", "--fork", foreign,
                       "--at", 3, "--output", tmp_path / "x.json",
                       env={**os.environ, "PATH": str(tmp_path)})  # fmt: skip
    finally:
        isolation.isolation_kind.cache_clear()
    assert done.returncode == 2 and not (tmp_path / "x.json").exists()
    assert "replaying a recording runs the code it holds, and no isolation works here" in (
        done.stderr
    )


@SHARES_THE_FORK
def test_a_forks_costs_are_its_live_turns_and_its_changes_name_its_group(repaired, tmp_path):
    recording = load(repaired[2])
    cost = outcome(recording)
    assert (cost.model_calls, cost.tool_calls) == (3, 2)  # the edit and the tests: its own
    assert attempt_line(cost).startswith(
        "passed · assistant_finished · 5 model calls (2 replayed, 3 live) · "
    )
    plain = {**recording, "fork": {**recording["fork"], "changes": []}}
    elsewhere = {**recording, "fork": {**recording["fork"], "parent_sha256": "0" * 64}}
    keys = {group_key(r, "fork") for r in (recording, plain, elsewhere)}
    assert len(keys) == 3  # told to run the tests first, plain, and another repair.json
    assert label(group_key(recording, "fork")) == (
        'forked · from turn 3 of repair.json, said "Run the tests before you edit anything."'
    )
    # grouped by another field, the label leaves the fork out: what it said is said under it
    said = 'turn 3: said "Run the tests before you edit anything."'
    by_model = group_key(recording, "model")
    lines = left_out(by_model, [recording, plain, recording])  # wrapped at 80 columns
    assert " ".join(line.strip() for line in lines) == f"2 forks changed the conversation: {said}"
    assert left_out(group_key(recording, "fork"), [recording]) == []  # its label says it


def test_attempts_from_a_fork_are_compared_with_the_rate_from_the_start(tmp_path):
    # a series of two from turn 3 (one repairs, one only claims to), and one attempt from
    # the start; compare.py --by fork puts the two rates side by side
    with ConversationServer([repairs(), claims()], first_turn=3) as server:
        series = run_cli("record_run.py", "--host", server.host, "--fork", NAMED, "--at", 3,
                         "--attempts", 2, "--jobs", 2, "--output", tmp_path / "f.json")  # fmt: skip
    assert series.returncode == 1, series.stdout + series.stderr  # one did not pass
    assert "passed 1 of 2 (50%; 95% interval 9%-91%)" in series.stdout
    start = load(RECORDINGS / "claims-success-without-edit.json")
    start["source"] = "live"  # as if recorded from the start by the same model
    save(tmp_path / "start.json", start)
    paths = [tmp_path / "f-1.json", tmp_path / "f-2.json", tmp_path / "start.json"]
    done = run_cli("compare.py", "--by", "fork", *paths)
    groups = done.stdout.split("\n\n")[1:]
    assert groups[0].startswith("forked · from turn 3 of repair.json  (2 recordings)")
    assert "  passed 1 of 2 (50%; 95% interval 9%-91%)" in groups[0]
    assert groups[1].startswith("live · from the start  (1 recording)")
    assert "  passed 0 of 1 (0%; 95% interval 0%-79%)" in groups[1]


# --- the changes, made and named ---------------------------------------------------------------


def test_a_change_is_made_to_the_conversation_as_the_recording_says_or_said_undone():
    conversation = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "t"},
        {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "read_file"}}]},
        {"role": "tool", "tool_name": "read_file", "content": "{}"},
    ]
    messages = [dict(m) for m in conversation]
    change = {"at": 3, "say": "", "results": {"1": {"text": "é"}, "2": {"text": "x"}}}
    edit = edit_of(messages, change, 3)
    assert messages == conversation  # the loop makes the change (AgentLoop.change_conversation)
    tool = {"role": "tool", "tool_name": "read_file", "content": '{"text": "é"}'}
    assert edit.replaced == [(3, tool)]
    assert edit.added == [{"role": "user", "content": ""}]  # an empty message is one said
    assert edit.said == [
        'the result of tool call 1 of turn 2 replaced: {"text": "é"}',
        "tool call 2 of turn 2 was not made: no result",  # today's run made one: replay says
        "said to the model: ",
    ]


def test_a_fork_is_whole_when_made_so_no_order_of_calls_can_fail(tmp_path):
    fork = Fork(PARENT, load(PARENT), 3)
    problems = fork.divergences([], tmp_path)  # asked before its chat was ever made
    assert problems[-1] == "model calls: 2 recorded, 0 made"  # said, not an AttributeError
    assert fork.chat(None).replayed is fork.replayed


def test_a_fork_whose_deadline_ended_it_before_its_turn_never_reached_the_live_model(tmp_path):
    # the loop's deadline, checked before each turn, stops it as turn 3 would start: the
    # stop is turn 3's, but turn 3 never asked a model, so the fork stopped early
    fork = Fork(PARENT, load(PARENT), 3)
    events = [
        {"type": MODEL_START, "turn": 1},
        {"type": MODEL_DONE, "turn": 1},
        {"type": STOPPED, "turn": 3, "reason": DEADLINE},
    ]
    assert not fork.live(events)
    assert fork.live([*events[:2], {"type": MODEL_START, "turn": 3}])


@pytest.mark.parametrize(
    "say, shown",
    [
        ("", 'from turn 3 of repair.json, said ""'),
        ("é" * 61, f'from turn 3 of repair.json, said "{"é" * 60}..."'),
        ("é" * 60, f'from turn 3 of repair.json, said "{"é" * 60}"'),
    ],
    ids=["empty", "long", "sixty"],
)
def test_a_forks_group_names_what_it_said_in_its_first_60_characters(say, shown):
    fork = {"parent": "repair.json", "at": 3, "changes": [{"at": 3, "say": say, "results": {}}]}
    assert fork_point_of(fork) == shown


@pytest.mark.parametrize("text", ["[1, 2]", '"text"'], ids=["list", "string"])
def test_a_result_that_is_not_a_json_object_is_refused(tmp_path, text):
    (tmp_path / "r.json").write_text(text)
    with pytest.raises(ResultError, match="a tool result is a JSON object"):
        read_result(tmp_path / "r.json")


def test_a_result_file_of_the_largest_size_is_read_and_one_byte_more_is_refused(tmp_path):
    padding = MAX_RESULT_BYTES - len('{"text": ""}')
    (tmp_path / "r.json").write_text('{"text": "' + "x" * padding + '"}')
    assert len(read_result(tmp_path / "r.json")["text"]) == padding
    (tmp_path / "r.json").write_text('{"text": "' + "x" * (padding + 1) + '"}')
    with pytest.raises(ResultError, match=f"larger than {MAX_RESULT_BYTES:,} bytes"):
        read_result(tmp_path / "r.json")


@pytest.fixture
def fifo(tmp_path):
    """A FIFO: opened and read as a file, it waits for a writer and for its end. Here one
    writer waits for a reader and goes at once, so a reader that waits gets an empty file
    and the test fails instead of hanging; at the end, a writer still waiting is let go."""
    path = tmp_path / "fifo"
    os.mkfifo(path)

    def writer():
        os.close(os.open(path, os.O_WRONLY))  # returns once any reader has it open

    threading.Thread(target=writer, daemon=True).start()
    yield path
    try:
        os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))  # the writer's open returns
    except OSError:
        pass


@pytest.mark.parametrize("given", ["fifo", "/dev/zero", "oversized"])
def test_a_result_that_is_no_regular_file_or_too_large_is_refused_in_one_line_at_once(
    tmp_path, request, given
):
    # found: a FIFO held record_run.py for good, /dev/zero ended in MemoryError, and 150 MB
    # were printed whole by the fork and by replay. Each is refused before any request
    # (nothing listens at the --host), and before the recording is read.
    if given == "fifo":
        given = request.getfixturevalue("fifo")
    elif given == "oversized":
        given = tmp_path / "big.json"
        given.write_text('{"text": "' + "x" * MAX_RESULT_BYTES + '"}')
    done = run_cli("record_run.py", "--host", "http://127.0.0.1:9", "--fork", "nowhere.json",
                   "--at", 3, "--result", f"1={given}", "--output", tmp_path / "x")  # fmt: skip
    assert done.returncode == 2 and done.stdout == "", done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(f"error: {given}: "), done.stderr
    assert ("larger than" if "big" in str(given) else "not a regular file") in done.stderr
    assert not (tmp_path / "x").exists()
    assert not (tmp_path / "x.json").exists()


@SHARES_THE_FORK
def test_a_result_numbered_with_six_digits_is_refused_by_the_loader(repaired, tmp_path):
    recording = json.loads(repaired[2].read_text(encoding="utf-8"))
    recording["fork"]["changes"][0]["results"] = {"000001": {}}
    (tmp_path / "r.json").write_text(json.dumps(recording), encoding="utf-8")
    with pytest.raises(RecordingError, match=RESULTS_NUMBERED):
        load(tmp_path / "r.json")
