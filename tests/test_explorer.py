"""--explorer (extensions/explorer.py): a read-only sub-agent offered as one tool, `explore`;
its child run is kept whole in the recording, replayed offline with it and shown.

The model is the Ollama stand-in on 127.0.0.1 serving hand-written turns through the real
SDK, parent's and child's in the order the loop asks for them: nothing here is a model's
output. The child's tools are ask.py's (readonly_tools.py) on the run's real copy.
"""

import json

import pytest

from extensions.explorer import ANSWER_LIMIT, CHILD_SYSTEM, answered
from harness.child_runs import summary
from harness.page import recording_page
from harness.recording import load, save
from harness.recording_checks import RecordingError
from replay import DIVERGED, REPRODUCED
from tests.helpers import FAULTY_LINE, FIXED_LINE, record, replay
from tests.ollama_test_server import OllamaTestServer, call, chunk, reply

QUESTION = "Which line of path_rules.py decides what is a Python source?"
ANSWER = "path_rules.py line 8 keeps a path when it ends with '.py'; the test wants more."


def explores_then_repairs():
    """The parent asks, the child reads (and tries to explore in turn), answers; the parent
    repairs and ends."""
    return [
        reply(chunk(tool_calls=[call("explore", question=QUESTION)]), chunk(done=True)),
        reply(  # the child's first turn: nesting, then a read
            chunk(
                tool_calls=[
                    call("explore", question="again?"),
                    call("read_file", index=1, path="path_rules.py"),
                ]
            ),  # fmt: skip
            chunk(done=True),
        ),
        reply(chunk(ANSWER), chunk(done=True)),  # the child's answer
        reply(
            chunk(tool_calls=[call("replace_text", old=FAULTY_LINE, new=FIXED_LINE)]),
            chunk(done=True),
        ),  # fmt: skip
        reply(chunk("Fixed."), chunk(done=True)),
    ]


SHARES_THE_RUN = pytest.mark.xdist_group("explorer-run")


@pytest.fixture(scope="module")
def explored(tmp_path_factory):
    """(the finished record_run.py, the request bodies, the recording's path)."""
    output = tmp_path_factory.mktemp("explorer") / "explored.json"
    with OllamaTestServer(explores_then_repairs()) as server:
        done = record("--host", server.host, "--explorer", "--output", output)
        bodies = server.chat_bodies()
    return done, bodies, output


def tool_names(body):
    return [t["function"]["name"] for t in body["tools"]]


@SHARES_THE_RUN
def test_the_child_has_a_fresh_conversation_its_own_prompt_and_no_explore(explored):
    done, bodies, _ = explored
    assert done.returncode == 0, done.stdout + done.stderr
    assert "explore" in tool_names(bodies[0])  # offered to the parent
    child = bodies[1]
    assert [(m["role"], m["content"]) for m in child["messages"]] == [
        ("system", CHILD_SYSTEM), ("user", QUESTION)]  # fmt: skip
    assert tool_names(child) == ["list_dir", "read_file", "search"]
    nested, read = [json.loads(m["content"]) for m in bodies[2]["messages"] if m["role"] == "tool"]
    assert nested["error"].startswith('unknown tool "explore"')  # nesting: refused
    assert "def python_sources" in read["text"]  # the run's own copy


@SHARES_THE_RUN
def test_only_the_answer_reaches_the_parent(explored):
    _, bodies, _ = explored
    parent = bodies[3]
    results = [json.loads(m["content"]) for m in parent["messages"] if m["role"] == "tool"]
    assert results == [{"answer": ANSWER}]
    assert CHILD_SYSTEM not in json.dumps(parent)  # none of the child's conversation


@SHARES_THE_RUN
def test_the_child_run_is_kept_whole_apart_from_the_parents_calls(explored):
    done, _, path = explored
    recording = load(path)
    assert len(recording["model_calls"]) == 3  # the parent's turns alone
    (decision,) = recording["extensions"]["decisions"]
    run = decision["run"]
    assert (decision["extension"], decision["call"], decision["decision"]) == (
        "explorer", 1, "explored")  # fmt: skip
    assert run["question"] == QUESTION and run["stop"]["reason"] == "assistant_finished"
    assert [c["request_length"] for c in run["model_calls"]] == [2, 5]
    assert run["messages"][-1]["content"] == ANSWER
    assert f"[explorer] explored: {summary(run)}" in done.stdout  # the terminal shows it
    assert '2 calls (explore "again?", read_file "path_rules.py")' in summary(run)


@SHARES_THE_RUN
def test_a_run_with_an_explorer_replays_offline(explored):
    _, _, path = explored
    outcome, printed = replay(path)
    assert outcome == REPRODUCED, printed
    assert "[explorer] explored: 2 requests" in printed


@SHARES_THE_RUN
def test_a_replay_names_where_a_child_run_went_another_way(explored, tmp_path):
    _, _, path = explored
    recording = load(path)
    tool = recording["extensions"]["decisions"][0]["run"]["messages"][4]
    tool["content"] = tool["content"].replace("def python_sources", "def other")
    save(tmp_path / "changed.json", recording)
    outcome, printed = replay(tmp_path / "changed.json")
    assert outcome == DIVERGED
    assert "extensions.decisions[0].run.messages[4]" in printed


@SHARES_THE_RUN
def test_a_child_run_must_be_whole_and_where_the_explorer_put_it(explored, tmp_path):
    _, _, path = explored
    for change, said in (
        (lambda d: d.pop("run"), "is held by each explored decision, and no other"),
        (lambda d: d["run"].pop("stop"), "must be {messages, model_calls, question, stop}"),
        (lambda d: d["run"]["model_calls"][0].update(request_length=9), "within its messages"),
        (lambda d: d["run"]["stop"].update(reason="bored"), ".run.stop.reason' must be one of"),
        (lambda d: d.update(call=2), ".call' of the explorer's child run must be an explore"),
    ):
        recording = load(path)
        change(recording["extensions"]["decisions"][0])
        save(tmp_path / "bad.json", recording)
        with pytest.raises(RecordingError, match=said.replace(".", r"\.").replace("{", r"\{")):
            load(tmp_path / "bad.json")
    recording = load(path)
    recording["format"] = "agent-loop-recording/8"
    save(tmp_path / "old.json", recording)
    with pytest.raises(RecordingError, match="cannot hold"):
        load(tmp_path / "old.json")


@SHARES_THE_RUN
def test_the_page_shows_the_child_run_and_its_tokens_apart(explored):
    _, _, path = explored
    page = recording_page(load(path), "explored.json")
    assert "The explorer run: 2 requests," in page and "counted apart from the parent" in page
    assert "it read 576 characters of tool results" in page
    # the context chart: the requests after the call, with what the explorer read for them
    assert page.count(">the explorer read 576 characters it never held<") == 2  # requests 2, 3
    assert CHILD_SYSTEM.splitlines()[0] in page and ANSWER.replace("'", "&#x27;") in page


@SHARES_THE_RUN
def test_the_page_shows_a_hand_edited_child_run_without_failing(explored):
    _, _, path = explored
    recording = load(path)
    run = recording["extensions"]["decisions"][0]["run"]
    run["messages"][4]["content"] = 5  # a tool's result that is no text
    run["model_calls"][-1]["chunks"][-1]["prompt_eval_count"] = "many"
    page = recording_page(recording, "edited.json")
    read = len(run["messages"][3]["content"])  # the other tool result, the refused nesting
    assert "The explorer run: 2 requests, " in page
    assert f"it read {read:,} characters of tool results" in page


def test_a_wrong_call_starts_no_child(tmp_path):
    turns = [
        reply(chunk(tool_calls=[call("explore", topic="x")]), chunk(done=True)),
        reply(chunk(tool_calls=[call("explore", question=" ")]), chunk(done=True)),
        reply(chunk("Done."), chunk(done=True)),
    ]
    with OllamaTestServer(turns) as server:
        done = record("--host", server.host, "--explorer", "--output", tmp_path / "r.json")
        bodies = server.chat_bodies()
    assert len(bodies) == 3, done.stdout + done.stderr  # no child asked anything
    wrong, empty = [json.loads(m["content"]) for m in bodies[2]["messages"] if m["role"] == "tool"]
    assert "unexpected parameter(s): topic" in wrong["error"]
    assert "one question of 1 to 1,000 characters" in empty["error"]
    assert load(tmp_path / "r.json")["extensions"]["decisions"] == []


def test_the_answer_is_bounded_and_a_stop_without_one_says_so():
    long = [{"role": "assistant", "content": "x" * (ANSWER_LIMIT + 5)}]
    result = answered(long, {"reason": "assistant_finished"})
    assert len(result["answer"]) == ANSWER_LIMIT and "cut at 2,000 of 2,005" in result["note"]
    cut = answered([{"role": "tool", "content": "{}"}], {"reason": "max_turns"})
    assert cut == {"error": "the explorer stopped (max_turns) without an answer; ask again, "
                   "more narrowly, or read the files yourself"}  # fmt: skip


@pytest.mark.parametrize(
    ("other", "said"),
    [
        (["--one-shot"], "--one-shot offers no tools, which --explorer needs"),
        (["--fork", "recordings/repair.json", "--at", "2"], "--explorer cannot go with --fork"),
    ],
)
def test_explorer_is_refused_where_it_cannot_run(other, said):
    done = record("--explorer", *other)
    assert done.returncode == 2 and said in done.stderr.splitlines()[-1], done.stderr


def test_the_line_of_a_child_run_names_its_first_four_calls_and_its_answer():
    asked = [{"function": {"name": f"read_file{i}", "arguments": {"path": "x" * 80}}}
             for i in range(5)]  # fmt: skip
    asked.append({"function": {"name": "search", "arguments": '{"pattern": "os.sep"}'}})
    asked.append({"function": {"name": "list_dir", "arguments": "not json"}})
    run = {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "",
                                                            "tool_calls": asked}],
           "model_calls": [{}], "stop": {"reason": "max_turns"}}  # fmt: skip
    said = summary(run)
    first = f"read_file0 {json.dumps('x' * 80)[:40]}"[:60]
    assert said == (f"1 request, 7 calls ({first}, {first.replace('0', '1', 1)}, "
                    f"{first.replace('0', '2', 1)}, {first.replace('0', '3', 1)} and 3 more); "
                    "stopped: max_turns; answer of 0 characters")  # fmt: skip
    run["messages"][-1] = {"role": "assistant", "content": "yes",
                           "tool_calls": asked[5:]}  # fmt: skip
    run["model_calls"] = [{}, {}]
    assert summary(run).startswith('2 requests, 2 calls (search "os.sep", list_dir not json);')
    assert summary(run).endswith("answer of 3 characters")
    named = {"function": {"name": "n" * 30, "arguments": {"path": "p" * 50}}}
    for calls, more in ((4, ""), (5, " and 1 more")):
        run["messages"][-1] = {"role": "assistant", "content": None, "tool_calls": [named] * calls}
        shown = ", ".join([f"{'n' * 30} {json.dumps('p' * 50)[:40]}"[:60]] * 4)
        assert summary(run) == (f"2 requests, {calls} calls ({shown}{more}); stopped: "
                                "max_turns; answer of 0 characters")  # fmt: skip
    run["messages"].append({"role": "tool", "content": "an answer is never a tool's"})
    assert summary(run).endswith("answer of 0 characters")


def test_a_forked_recording_with_an_explorer_is_refused():
    from extensions.explorer import Explorer
    from harness.recording_format import FORMAT

    assert "cannot be forked" in Explorer.recording_problem(
        {"fork": {"at": 2}, "format": FORMAT}, None
    )
    assert "cannot be forked" in Explorer.recording_problem({"format": FORMAT}, 3)
    assert Explorer.recording_problem({"format": FORMAT}, None) is None
