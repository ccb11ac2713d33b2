"""The control arm (`record_run.py --one-shot`, extensions/one_shot.py): the model asked once,
with no tools, for the whole file; the lab writes its one fenced block and the same verdict
judges it. Recorded, replayed, shown, and counted by `compare.py --by extensions`.

The model is the Ollama stand-in on 127.0.0.1 serving hand-written answers through the real
SDK: nothing here is a model's output, and the recording the tests replay is labelled
scripted. record_run.py's and compare.py's main() run in the test's process
(tests/in_process.py); the tools, the copies, the pytest runs and the verdicts are real.
"""

import html

import pytest

from agent_loop import AgentLoop
from extensions import Extensions
from extensions.extension import Log
from extensions.one_shot import SYSTEM, TASK, OneShot
from harness import decisions
from harness.old_recordings import as_made
from harness.page import recording_page
from harness.recording import RECORDINGS, load, save
from harness.recording_checks import RecordingError
from plumbing.fenced_blocks import blocks
from plumbing.sample import SAMPLE_FILES, SOURCE_FILE, TEST_FILE
from replay import CANNOT_REPLAY, DIVERGED, REPRODUCED
from repo_tools import RepoTools
from tests.helpers import FAULTY_LINE, FIXED_LINE, record, replay
from tests.in_process import run_cli
from tests.ollama_test_server import OllamaTestServer, call, chunk, reply
from tests.scripted_model import ScriptedChat

SAMPLE = SAMPLE_FILES[SOURCE_FILE].decode("utf-8")
REPAIRED = SAMPLE.replace(FAULTY_LINE, FIXED_LINE)
WRONG = SAMPLE.replace(FAULTY_LINE, 'parts = path.split("\\\\")')  # splits on backslashes only
WRITTEN = f"path_rules.py is now the answer's block (11 lines, {len(REPAIRED.encode()):,} bytes)"


def answer(source, before="The separators must be normalised first.\n\n"):
    """A streamed answer: some words, then `source` in one fenced block."""
    text = f"{before}```python\n{source}```"
    return reply(chunk(text[:30]), chunk(text[30:]), chunk(done=True))


# subtle: a module fixture is made once per xdist worker, so the tests that read the one
# run carry the same xdist_group mark (`--dist loadgroup`, lab.py's test job).
SHARES_THE_RUN = pytest.mark.xdist_group("one-shot-run")


@pytest.fixture(scope="module")
def answered(tmp_path_factory):
    """(the run, the request bodies, the recording's path) of one one-shot attempt that
    answers the repaired file; the recording is then labelled scripted, as
    tests/maintainers/make_recordings.py labels the shipped ones."""
    output = tmp_path_factory.mktemp("one-shot") / "one-shot.json"
    with OllamaTestServer([answer(REPAIRED)]) as server:
        done = record("--host", server.host, "--one-shot", "--output", output)
        bodies = server.chat_bodies()
    recording = load(output)
    recording["source"] = "scripted"
    recording["description"] = "A scripted one-shot answer, written by hand: the fixed file."
    save(output, recording)
    return done, bodies, output


@SHARES_THE_RUN
def test_the_one_request_holds_the_task_both_files_and_the_starting_run_and_no_tools(answered):
    _, bodies, _ = answered
    assert len(bodies) == 1  # asked once
    body = bodies[0]
    assert not body.get("tools")  # the SDK sends [] for none: no tool is offered
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert body["messages"][0]["content"] == SYSTEM
    sent = body["messages"][1]["content"]
    assert sent.startswith(TASK)
    assert f"{SOURCE_FILE}:\n```python\n{SAMPLE.rstrip()}\n```" in sent
    tests = SAMPLE_FILES[TEST_FILE].decode("utf-8").rstrip()
    assert f"{TEST_FILE}:\n```python\n{tests}\n```" in sent
    # the starting run, as run_tests gives it: the one failing test and the counts
    run = sent.split("The output of run_tests, before any change:\n```\n")[1]
    assert "FAILED tests/test_path_rules.py::test_accepts_windows_separators" in run
    assert "1 failed, 3 passed" in run and run.endswith("\n```")


@SHARES_THE_RUN
def test_a_correct_block_is_written_and_passes_the_same_verdict(answered):
    done, _, path = answered
    assert done.returncode == 0, done.stdout + done.stderr
    recording = load(path)
    assert recording["final_source"] == REPAIRED
    assert recording["final_tests"]["verdict"] == "passed"
    assert recording["stop"]["reason"] == "assistant_finished"  # how the one turn ended
    # the plan says what was sent: the one-shot's own prompts, one turn
    assert (recording["task"], recording["system"], recording["max_turns"]) == (TASK, SYSTEM, 1)
    assert recording["extensions"] == {
        "on": [{"name": "one-shot", "settings": {}}],
        "decisions": [{"extension": "one-shot", "call": 0, "decision": "written", "said": WRITTEN}],
    }
    lines = done.stdout.splitlines()
    said = lines.index(f"  [one-shot] written: {WRITTEN}")  # after the answer, before the stop
    assert lines.index("Extensions on: one-shot (docs/one-shot.md)") < said
    assert lines[said - 1] == "  ```" and lines[said + 1].startswith("Stop: assistant_finished")


@SHARES_THE_RUN
def test_the_scripted_one_shot_replays_offline_and_reproduces(answered):
    _, _, path = answered
    outcome, output = replay(path)
    assert outcome == REPRODUCED, output
    assert "scripted" in output.splitlines()[0]
    assert f"  [one-shot] written: {WRITTEN}" in output.splitlines()


@SHARES_THE_RUN
def test_an_answer_changed_in_the_recording_replays_as_diverged(answered, tmp_path):
    recording = load(answered[2])
    for saved in recording["model_calls"][0]["chunks"]:  # the fixed line is in the second
        saved["message"]["content"] = saved["message"]["content"].replace(FIXED_LINE, FAULTY_LINE)
    save(tmp_path / "changed.json", recording)
    outcome, output = replay(tmp_path / "changed.json")
    assert outcome == DIVERGED
    assert "the resulting path_rules.py differs:" in output
    # the faulty line is the sample's: the one-shot now says its block changed nothing
    said = "the extensions' decisions: extensions.decisions[0].decision: the recording says"
    assert f'{said} "written", today\'s run did "unchanged"' in output
    assert "final tests: the recording says verdict passed, today's run gave failed" in output


@SHARES_THE_RUN
def test_the_page_shows_the_decision_under_the_answer(answered):
    page = recording_page(load(answered[2]), "one-shot.json")
    assert "one-shot: 1 decision" in page
    assert page.index("The complete turn") < page.index(
        html.escape(f"[one-shot] written: {WRITTEN}")
    )


@SHARES_THE_RUN
def test_the_one_shot_run_docs_one_shot_md_quotes_is_what_it_prints(answered):
    from tests.test_readme import appear_in_order, quoted_block

    quoted = quoted_block("Extensions on: one-shot")
    assert appear_in_order(quoted, answered[0].stdout) == []


def test_each_attempt_of_a_series_is_a_one_shot_with_its_own_seed(tmp_path):
    two = f"```python\n{REPAIRED}```\nand the tests:\n```python\nassert True\n```\n"
    script = [answer(WRONG), reply(chunk(two), chunk(done=True))]
    with OllamaTestServer(script) as server:
        done = record("--host", server.host, "--one-shot", "--attempts", 2,
                      "--output", tmp_path / "series.json")  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr  # not every attempt passed
    assert "passed 0 of 2" in done.stdout
    wrong, several = (load(tmp_path / f"series-{k}.json") for k in (1, 2))
    assert wrong["final_source"] == WRONG and wrong["final_tests"]["verdict"] == "failed"
    assert [d["decision"] for d in wrong["extensions"]["decisions"]] == ["written"]
    said = "the answer holds more than one fenced block; path_rules.py is as it was"
    assert several["extensions"]["decisions"] == [
        {"extension": "one-shot", "call": 0, "decision": "several-blocks", "said": said}
    ]
    assert several["final_source"] == SAMPLE and several["final_tests"]["verdict"] == "failed"
    assert [r["model"]["options"]["seed"] for r in (wrong, several)] == [7, 8]  # --seed N+k-1


@SHARES_THE_RUN
def test_compare_by_extensions_counts_each_set_that_was_on(answered, tmp_path):
    # the scripted one-shot passed; of the shipped scripted loops without extensions, one
    # repaired and one claimed success without an edit
    loops = [RECORDINGS / "repair.json", RECORDINGS / "claims-success-without-edit.json"]
    done = run_cli("compare.py", "--by", "extensions", answered[2], *loops)
    assert done.returncode == 0, done.stderr
    groups = done.stdout.split("\n\n")[1:]
    assert groups[0].startswith("scripted · extensions none  (2 recordings)")
    assert "passed 1 of 2 (50%; 95% interval" in groups[0]
    assert groups[1].startswith("scripted · extensions one-shot  (1 recording)")
    assert (
        "passed 1 of 1 (100%; 95% interval" in groups[1]
        and "stops: assistant_finished 1" in groups[1]
    )
    from tests.test_readme import appear_in_order, quoted_block

    assert appear_in_order(quoted_block("scripted · extensions none"), done.stdout) == []
    # by default too, beside the rest of the key; "none" is not said there
    done = run_cli("compare.py", answered[2], *loops)
    assert "scripted · gemma4:e2b · ollama · max_turns 1 · extensions one-shot  (1" in done.stdout
    assert "scripted · gemma4:e2b · ollama · max_turns 12  (2 recordings)" in done.stdout


def test_the_set_is_the_names_in_order_whoever_ran_them_a_fork_or_a_series():
    from compare import group_key

    fork = load(RECORDINGS / "repair.json")
    fork.update(source="forked", extensions={"on": [
        {"name": "tests-after-edit", "settings": {"from_call": 3}},
        {"name": "syntax", "settings": {}}], "decisions": []})  # fmt: skip
    assert decisions.names_on(fork) == "syntax + tests-after-edit"
    assert group_key(fork, "extensions")[2] == ("extensions", "syntax + tests-after-edit")
    assert decisions.names_on(load(RECORDINGS / "repair.json")) == "none"


@pytest.mark.parametrize(
    "flags, needs",
    [
        (["--hook", "syntax"], "--hook"),
        (["--text-calls"], "--text-calls"),
        (["--plan"], "--plan"),
        (["--keep-results", "2"], "--keep-results"),
        (["--task", "impossible"], "--task impossible"),
        (["--fork", "recordings/repair.json", "--at", "2"], "--fork"),
    ],
)
def test_a_flag_that_needs_tools_is_refused_before_anything_runs(flags, needs):
    done = record("--one-shot", *flags)
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if "error:" in line]
    assert errors == [f"record_run.py: error: --one-shot offers no tools, which {needs} needs; "
                      "leave one out"]  # fmt: skip


@SHARES_THE_RUN
def test_a_one_shot_recording_is_no_fork_and_has_no_other_extension(answered, tmp_path):
    done = record("--fork", answered[2], "--at", 1, "--output", tmp_path / "fork.json")
    assert done.returncode == 2
    assert "a one-shot run has one turn and no tools: it is no fork" in done.stderr
    recording = load(answered[2])
    recording["extensions"]["on"].append({"name": "syntax", "settings": {}})
    save(tmp_path / "both.json", recording)
    assert replay(tmp_path / "both.json")[0] == CANNOT_REPLAY
    with pytest.raises(RecordingError, match="it is no fork, has no other extension"):
        Extensions.of({**load(answered[2]), "fork": {"at": 1}})


ODD = [
    ("No fence at all: " + "x" * 2_000_000, "no-block", "no complete fenced block"),
    ("```python\nprint(1)\n", "no-block", "no complete fenced block"),  # never closed
    ("    ```python\nprint(1)\n    ```\n", "no-block", "no complete"),  # indented code
    ("````\n" + "```\n" * 500_000, "no-block", "no complete"),  # one pass, never closed
    ("```\na = 1\n```\n```\nb = 2\n```\n", "several-blocks", "more than one fenced block"),
    ("```\n```\n" * 500_000, "several-blocks", "more than one"),  # stops at the second
    ("```python\n" + "x = 1\n" * 200_000 + "```", "too-large", "1,200,000 bytes, more than"),
    ("```python\nx = '\ud800'\n```", "unwritable", "UnicodeEncodeError: 'utf-8' codec"),
]


@pytest.mark.parametrize("text, word, says", ODD)
def test_an_odd_answer_leaves_path_rules_as_it_was_with_one_decision(repo, text, word, says):
    log = Log()
    before = (repo / SOURCE_FILE).read_bytes()
    OneShot(AgentLoop, log, None, RepoTools(repo), TASK).take(text)
    assert (repo / SOURCE_FILE).read_bytes() == before
    [decision] = log.decisions
    assert (decision["decision"], decision["call"]) == (word, 0)
    assert says in decision["said"] and decision["said"].endswith("; path_rules.py is as it was")


def test_a_block_is_taken_whole_as_it_stands_between_its_fences(repo):
    log = Log()
    one_shot = OneShot(AgentLoop, log, None, RepoTools(repo), TASK)
    # a fence of four holds a line of three; a part of the file is written as it is
    one_shot.take("Here:\n````py\nX = '''\n```\n'''\n````\nDone.")
    assert (repo / SOURCE_FILE).read_text() == "X = '''\n```\n'''\n"
    # a line of three backticks in a string closes a block opened with three: the rest of the
    # answer opens a block never closed, so the one block is the part before it
    one_shot.take("```python\nX = '''\n```\n'''\n```python\n")
    assert (repo / SOURCE_FILE).read_text() == "X = '''\n"
    assert [d["decision"] for d in log.decisions] == ["written", "written"]
    assert blocks("```\r\na\r\n```\r\n") == ["a\r\n"]  # a Windows answer keeps its endings
    assert blocks("```\n```\n") == [""]  # an empty block is a block: it empties the file
    # a line with backticks after its fence is inline code, not a fence
    assert blocks("```x = 1``` would do:\n```python\nx = 1\n```\n") == ["x = 1\n"]
    assert len(blocks("```\n```\n" * 5)) == 2  # two tell one from several: it stops there


def test_a_block_that_is_the_file_as_it_was_is_named_unchanged_and_nothing_is_written(repo):
    # a model that answers the sample back unrepaired: said so, not only "written (11 lines)"
    log, path = Log(), repo / SOURCE_FILE
    before = path.stat().st_mtime_ns, path.stat().st_ino
    OneShot(AgentLoop, log, None, RepoTools(repo), TASK).take(f"Here:\n```python\n{SAMPLE}```")
    size = f"11 lines, {len(SAMPLE.encode()):,} bytes"
    assert log.decisions == [{"extension": "one-shot", "call": 0, "decision": "unchanged",
                              "said": f"the answer's block is {SOURCE_FILE} as it was, byte "
                                      f"for byte ({size})"}]  # fmt: skip
    assert (path.stat().st_mtime_ns, path.stat().st_ino) == before  # not even rewritten
    # one byte more is a change, written and said as one
    OneShot(AgentLoop, log, None, RepoTools(repo), TASK).take(f"```python\n{SAMPLE}\n```")
    assert log.decisions[1]["decision"] == "written" and path.read_text() == SAMPLE + "\n"


def test_a_one_shot_of_format_7_replays_an_unchanged_block_as_written_as_it_said(repo):
    # the shipped attempts of /7 whose block was the sample said `written`: replayed, their
    # one-shot decides as it did then, so they still reproduce (test_recorded.py replays one)
    shipped = sorted((RECORDINGS / "extensions" / "one-shot").glob("*.json"))
    unchanged = [load(p) for p in shipped if load(p)["final_source"] == SAMPLE]
    assert unchanged and all(r["format"] == "agent-loop-recording/7" for r in unchanged)
    made = as_made(unchanged[0])  # as replay.py chooses it (harness/old_recordings.py)
    assert made.says_unchanged is False
    log_of = Extensions.of(unchanged[0], says_unchanged=made.says_unchanged)
    one_shot = log_of.loop(AgentLoop)(None, RepoTools(repo), TASK)
    one_shot.take(f"```python\n{SAMPLE}```")
    assert [d["decision"] for d in log_of.log.decisions] == ["written"]
    assert unchanged[0]["extensions"]["decisions"][0]["decision"] == "written"
    today = as_made({**unchanged[0], "format": "agent-loop-recording/8"})
    assert today.says_unchanged is True
    of_today = Extensions.of(unchanged[0], says_unchanged=today.says_unchanged)
    of_today.loop(AgentLoop)(None, RepoTools(repo), TASK).take(f"```python\n{SAMPLE}```")
    assert [d["decision"] for d in of_today.log.decisions] == ["unchanged"]


def test_a_tool_the_model_calls_anyway_runs_nothing_and_spends_its_one_turn(repo):
    asks = [chunk(tool_calls=[call("replace_text", old=FAULTY_LINE, new=FIXED_LINE)]),
            chunk(done=True)]  # fmt: skip
    chat = ScriptedChat([asks])
    log = Log()
    one_shot = OneShot(AgentLoop, log, chat, RepoTools(repo), TASK, 12)
    events = list(one_shot.events())
    assert chat.tools == [[]]  # the one request offered no tool
    assert [e["type"] for e in events][-3:] == ["tool_start", "tool_result", "stopped"]
    assert events[-2]["result"] == {"error": "no tool is offered: this run asks once "
                                             "(--one-shot); nothing ran"}  # fmt: skip
    assert events[-1]["reason"] == "max_turns"  # one turn, whatever max_turns it was given
    assert (repo / SOURCE_FILE).read_text() == SAMPLE  # the edit it asked for never ran
    assert [d["decision"] for d in log.decisions] == ["no-block"]


def test_a_decision_about_the_answer_comes_before_every_calls_decision():
    start = {"type": "tool_start", "turn": 1, "index": 0}
    answer_first = [{"extension": "x", "call": c, "decision": "d", "said": ""} for c in (0, 1)]
    data = {"events": [start], "extensions": {"on": [{"name": "x", "settings": {}}]}}
    data["extensions"]["decisions"] = answer_first
    assert decisions.extensions_problem(data, holds=True) is None
    data["extensions"]["decisions"] = answer_first[::-1]
    assert decisions.extensions_problem(data, holds=True) == (
        "'extensions.decisions[1].call' must be a call the tools ran, 1 to 1, in order"
    )
