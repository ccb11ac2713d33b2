"""Permissions (extensions/permissions.py, `record_run.py --approve` and `--plan`): what
you answer at the terminal, or what plan mode offers, decides each call; the model reads a
denial; the recording keeps every decision and replay applies them, asking no one.

The model is the Ollama stand-in on 127.0.0.1 serving hand-written turns through the real
SDK: nothing here is a model's output. The terminal is a real pseudo-terminal (pty) on the
stdin of one real record_run.py process; the other runs are main() in this process
(tests/in_process.py), whose stdin is no terminal.
"""

import html
import io
import json
import os
import pty
import re
import subprocess
import sys
import time

import pytest

from extensions import Extensions
from extensions.terminal import NO_TERMINAL, QUESTION, Terminal
from harness.call_preview import preview
from harness.page import recording_page
from harness.recording import load, save
from harness.recording_checks import RecordingError
from plumbing.sample import SOURCE_FILE
from replay import DIVERGED, REPRODUCED
from repo_tools import RepoTools
from tests.helpers import FAULTY_LINE, FIXED_LINE, LAB, Reader, record, replay
from tests.in_process import run_cli
from tests.ollama_test_server import OllamaTestServer, call, chunk, reply

COMMENT = {"old": "sources = []", "new": "sources = []  # in order"}
REASON = "read the code first"


def turn(*calls):
    return reply(chunk(tool_calls=list(calls)), chunk(done=True))


def said(text):
    return reply(chunk(text), chunk(done=True))


def tool_results(body):
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


# subtle: a module fixture is made once per xdist worker (see tests/test_hooks.py)
SHARES_THE_RUN = pytest.mark.xdist_group("approve-on-a-terminal")


def on_a_terminal(script, answers, output, *options):
    """(stdout, exit code, request bodies) of record_run.py --approve OPTIONS, its stdin a
    pseudo-terminal holding `answers`, against the stand-in serving `script`."""
    leader, follower = pty.openpty()
    # a terminal's line discipline hands the program one line per read: the answers wait
    os.write(leader, answers.encode())
    with OllamaTestServer(script) as server:
        done = subprocess.run(
            [sys.executable, "record_run.py", "--host", server.host, "--approve",
             *map(str, options), "--output", output],  # fmt: skip
            cwd=LAB, stdin=follower, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        bodies = server.chat_bodies()
    os.close(follower)
    os.close(leader)
    return done.stdout, done.returncode, bodies


@pytest.fixture(scope="module")
def approved(tmp_path_factory):
    """(stdout, exit code, request bodies, recording's path) of one run with --approve whose
    stdin is a pseudo-terminal holding the answers: n (with a reason), y, a."""
    output = tmp_path_factory.mktemp("approve") / "approved.json"
    script = [
        turn(call("run_tests")),  # denied, with the reason
        turn(call("replace_text", old=FAULTY_LINE, new=FIXED_LINE)),  # allowed
        turn(call("run_tests")),  # allowed, and the rest of the run too
        turn(call("replace_text", **COMMENT)),  # allowed without asking
        turn(call("read_file", path=SOURCE_FILE)),  # never asked about
        said("Fixed."),
    ]
    return *on_a_terminal(script, f"n\n{REASON}\ny\na\n", output), output


@SHARES_THE_RUN
def test_a_denial_is_the_calls_result_and_the_model_reads_the_reason(approved):
    stdout, code, bodies, path = approved
    assert code == 0, stdout
    denied = json.loads(tool_results(bodies[1])[0])  # what the model read before turn 2
    assert denied == {"error": f"The user denied this call: {REASON}"}
    lines = stdout.splitlines()
    at = next(
        i for i, line in enumerate(lines) if line.startswith(f"  [approve] denied: {REASON} (")
    )
    assert lines[at - 1] == f"  -> error: The user denied this call: {REASON}"


@SHARES_THE_RUN
def test_an_edit_is_shown_as_its_diff_before_you_are_asked(approved):
    stdout = approved[0]
    shown = stdout.index(f"  replace_text would change {SOURCE_FILE}:")
    assert stdout.index(f"    +        {FIXED_LINE}", shown) > shown
    assert "  run_tests would run the visible tests" in stdout
    assert stdout.count(QUESTION) == 3  # run_tests, the edit, run_tests; then no more asking


@SHARES_THE_RUN
def test_allow_the_rest_allows_every_later_call_and_read_file_is_never_asked(approved):
    recording = load(approved[3])
    assert recording["final_tests"]["verdict"] == "passed"
    decisions = recording["extensions"]["decisions"]
    # the seconds you took, on each answer typed at the terminal (not on the one `a` gave)
    assert [d.pop("seconds", None) is not None for d in decisions] == [True, True, True, False]
    assert recording["extensions"] == {
        "on": [{"name": "approve", "settings": {}}],
        "decisions": [
            {"extension": "approve", "call": 1, "decision": "denied", "said": REASON},
            {"extension": "approve", "call": 2, "decision": "allowed", "said": "by the user"},
            {"extension": "approve", "call": 3, "decision": "allowed-rest", "said": "by the user"},
            {"extension": "approve", "call": 4, "decision": "allowed",
             "said": "the rest of the run was allowed"},
        ],
    }  # fmt: skip
    assert "Extensions on: approve (docs/permissions.md)" in approved[0]


@SHARES_THE_RUN
def test_replay_applies_the_recorded_answers_and_a_changed_one_diverges(approved, tmp_path):
    outcome, output = replay(approved[3])  # nobody is asked: stdin here is no terminal
    assert outcome == REPRODUCED, output
    # nobody was asked: the line says the recorded decision, and no time of today's
    assert QUESTION not in output and f"  [approve] denied: {REASON}" in output.splitlines()
    recording = load(approved[3])
    recording["extensions"]["decisions"][1].update(decision="denied", said="no")
    save(tmp_path / "changed.json", recording)
    outcome, output = replay(tmp_path / "changed.json")
    assert outcome == DIVERGED
    assert "tool call 2 (model call 2, replace_text) result" in output


@SHARES_THE_RUN
def test_the_page_shows_each_answer_under_its_call(approved):
    page = recording_page(load(approved[3]), "approved.json")
    assert f"[approve] denied: {REASON}" in page
    assert (
        page.index("[approve] denied")
        < page.index('id="turn-2"')
        < page.index("[approve] allowed: by the user")
    )


def test_with_no_terminal_each_asked_call_is_denied_and_it_is_said_once(tmp_path):
    script = [
        turn(call("replace_text", old=FAULTY_LINE, new=FIXED_LINE), call("run_tests")),
        said("I could not."),
    ]
    with OllamaTestServer(script) as server:
        done = record("--host", server.host, "--approve", "--output", tmp_path / "n.json")
        results = tool_results(server.chat_bodies()[1])
    assert done.returncode == 1
    assert done.stdout.count(f"[approve] {NO_TERMINAL}: each replace_text and run_tests") == 1
    assert results == [json.dumps({"error": f"The user denied this call: {NO_TERMINAL}"})] * 2
    decisions = load(tmp_path / "n.json")["extensions"]["decisions"]
    assert [(d["call"], d["decision"]) for d in decisions] == [(1, "denied"), (2, "denied")]


def test_plan_offers_read_only_tools_and_the_run_ends_with_the_plan(tmp_path):
    script = [
        turn(call("read_file", path=SOURCE_FILE), call("replace_text", **COMMENT)),
        said("Plan: turn backslashes into slashes before splitting."),
    ]
    with OllamaTestServer(script) as server:
        done = record("--host", server.host, "--plan", "--output", tmp_path / "plan.json")
        bodies = server.chat_bodies()
    assert done.returncode == 1  # nothing was repaired: the verdict is run and says so
    offered = [[t["function"]["name"] for t in body["tools"]] for body in bodies]
    assert offered == [["read_file"], ["read_file"]]
    refused = json.loads(tool_results(bodies[1])[1])["error"]
    assert refused.startswith("Plan mode: only read_file is offered, and replace_text is not run")
    assert "  [plan] the model's plan is its text of turn 2, above" in done.stdout.splitlines()
    assert "Independent verdict: failed" in done.stdout
    recording = load(tmp_path / "plan.json")
    assert recording["final_source"] == (LAB / "sample_repo" / SOURCE_FILE).read_text()
    assert replay(tmp_path / "plan.json")[0] == REPRODUCED


@pytest.mark.parametrize(
    "flags, says",
    [
        (["--approve", "--plan"], "argument --plan: not allowed with argument --approve"),
        (["--approve", "--attempts", "2"], "--approve asks at the terminal, and a series'"),
    ],
)
def test_flags_that_cannot_go_together_are_refused_in_one_line(flags, says):
    done = record(*flags)
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and says in errors[0]


def test_a_terminal_asks_again_until_it_understands_and_end_of_input_denies(repo):
    leader, follower = pty.openpty()
    os.write(leader, b"maybe\ny\nn\n\n")  # a word it does not know; then no reason given
    with open(follower, encoding="utf-8", closefd=True) as stdin:
        terminal = Terminal(stdin, out=io.StringIO())
        assert terminal.ask(["a call"])[:2] == ("allowed", "by the user")
        assert terminal.ask(["a call"])[:2] == ("denied", "no reason given")
    os.close(leader)
    tools = Extensions(["approve"]).tools(RepoTools)(repo)  # a replay's: no one asked
    assert "no decision was recorded" in tools.invoke("run_tests", {})["error"]
    assert "text" in tools.invoke("read_file", {"path": SOURCE_FILE})


@SHARES_THE_RUN
def test_the_run_docs_permissions_md_quotes_is_what_it_prints(approved):
    from tests.test_readme import appear_in_order, quoted_block

    assert appear_in_order(quoted_block("Extensions on: approve"), approved[0]) == []


# --- a fork: your --approve asks about each of its live calls, whatever its parent says -------

RUNS_THE_TESTS = [turn(call("run_tests")), said("Done.")]


def approving_fork(tmp_path):
    """repair.json forked at turn 3 with --approve and no terminal (its live run_tests denied):
    a recording whose approve acts from call 3."""
    output = tmp_path / "approving-fork.json"
    with OllamaTestServer(RUNS_THE_TESTS) as server:
        done = run_cli("record_run.py", "--host", server.host, "--fork", "recordings/repair.json",
                       "--at", 3, "--approve", "--output", output)  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert load(output)["extensions"]["on"] == [{"name": "approve", "settings": {"from_call": 3}}]
    return output


def asked_about(stdout, path, number):
    """Whether the run asked once, about call `number`, and kept the answer (y)."""
    decisions = [(d["call"], d["decision"], d["said"]) for d in
                 load(path)["extensions"]["decisions"]]  # fmt: skip
    return stdout.count(QUESTION) == 1 and (number, "allowed", "by the user") in decisions


@pytest.mark.parametrize(
    "from_call, at",
    [(None, 2), (4, 3)],
    ids=["a-fork-of-a-fork-at-an-earlier-turn", "a-parent-naming-the-largest-call-load-accepts"],
)
def test_a_forks_approve_asks_about_its_first_live_call_whatever_its_parent_says(
    tmp_path, from_call, at
):
    # the parent's approve acts from call 3 (or, edited, from call 4: one past its last call,
    # the most a file may say); forked at an earlier call, the live run_tests is yours to allow
    parent = approving_fork(tmp_path)
    if from_call:
        recording = load(parent)
        recording["extensions"]["on"][0]["settings"]["from_call"] = from_call
        save(parent, recording)
    output = tmp_path / "again.json"
    stdout, code, _ = on_a_terminal(RUNS_THE_TESTS, "y\n", output, "--fork", parent, "--at", at)
    assert code == 1, stdout  # the repair was never made
    assert asked_about(stdout, output, at), stdout
    assert load(output)["extensions"]["on"] == [{"name": "approve",
                                                 "settings": {"from_call": at}}]  # fmt: skip
    assert replay(output)[0] == REPRODUCED


def test_a_fork_keeps_its_parents_approve_and_asks_you_about_its_live_calls(tmp_path):
    # told no --approve: the parent's still decides, and asks whoever runs the fork (here no
    # one: stdin is no terminal, so the live run_tests is denied, and it says why)
    output = tmp_path / "kept.json"
    with OllamaTestServer(RUNS_THE_TESTS) as server:
        done = record("--host", server.host, "--fork", approving_fork(tmp_path), "--at", 3,
                      "--output", output)  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.count(f"[approve] {NO_TERMINAL}: each replace_text and run_tests") == 1
    (decision,) = load(output)["extensions"]["decisions"]
    assert (decision["call"], decision["decision"], decision["said"]) == (3, "denied", NO_TERMINAL)


@SHARES_THE_RUN
def test_a_fork_after_allow_the_rest_asks_about_its_own_live_calls(approved, tmp_path):
    # `a` at call 3 allowed the rest of that run; a fork of it at turn 5 is another run
    output = tmp_path / "after-the-rest.json"
    stdout, code, _ = on_a_terminal(RUNS_THE_TESTS, "y\n", output, "--fork", approved[3],
                                    "--at", 5)  # fmt: skip
    assert code == 0, stdout  # turn 2's repair was replayed
    assert asked_about(stdout, output, 5), stdout
    assert replay(output)[0] == REPRODUCED


def test_a_parent_whose_approve_acts_from_call_999_is_refused_and_never_obeyed(tmp_path, repo):
    recording = load(approving_fork(tmp_path))
    recording["extensions"]["on"][0]["settings"]["from_call"] = 999  # every live call unasked
    save(tmp_path / "hostile.json", recording)
    says = "field 'extensions.on[0].settings.from_call' is 999, past the calls the tools ran"
    with pytest.raises(RecordingError, match=re.escape(says)):
        load(tmp_path / "hostile.json")
    done = record("--host", "http://127.0.0.1:9", "--fork", tmp_path / "hostile.json", "--at", 2,
                  "--approve", "--output", tmp_path / "never.json")  # fmt: skip
    assert done.returncode == 2 and says in done.stderr and done.stderr.count("error:") == 1
    assert not (tmp_path / "never.json").exists()
    # read without load()'s checks, it is still your --approve that decides its live calls
    leader, follower = pty.openpty()
    os.write(leader, f"n\n{REASON}\n".encode())
    with open(follower, encoding="utf-8", closefd=True) as stdin:
        terminal = Terminal(stdin, out=io.StringIO())
        extensions = Extensions.of(recording, ["approve"], at=2, terminal=terminal)
        tools = extensions.tools(RepoTools)(repo)
        assert "text" in tools.invoke("read_file", {"path": SOURCE_FILE})  # call 1, replayed
        denied = tools.invoke("run_tests", {})  # call 2: the fork's first live call
    os.close(leader)
    assert denied == {"error": f"The user denied this call: {REASON}"}
    assert [(d["call"], d["decision"]) for d in extensions.log.decisions] == [(2, "denied")]


THINKING = 1.5  # seconds the learner takes to answer, in the test below


@pytest.mark.waits
def test_a_no_op_edit_is_said_to_be_one_and_your_time_is_not_the_tools(tmp_path):
    # the edit names most of the file twice: shown as its arguments it was cut at 300
    # characters, and `new` equal to `old` could not be seen. The learner answers after
    # THINKING seconds: the loop's clock puts them in the call, the timeline takes them out.
    whole = (LAB / "sample_repo" / SOURCE_FILE).read_text()
    same = whole[whole.index("def python_sources") :]
    output = tmp_path / "no-op.json"
    script = [turn(call("replace_text", old=same, new=same)), said("Done.")]
    leader, follower = pty.openpty()
    with OllamaTestServer(script) as server:
        process = subprocess.Popen(
            [sys.executable, "record_run.py", "--host", server.host, "--approve",
             "--output", output],  # fmt: skip
            cwd=LAB, stdin=follower, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        out = Reader(process.stdout)
        out.wait_for(QUESTION, timeout=60)
        time.sleep(THINKING)  # the learner reads, then answers: the time under test
        os.write(leader, b"y\n")
        assert process.wait(timeout=60) == 1, process.stderr.read()
    os.close(follower)
    os.close(leader)
    stdout = out.data.decode()
    lines = (
        "  replace_text would change nothing: its new text equals its old text (8 lines, "
        f"{len(same)} characters):\n    def python_sources(changed_paths):\n"
    )
    assert lines in stdout and "more characters]" not in stdout
    recording = load(output)
    (decision,) = recording["extensions"]["decisions"]
    assert decision["seconds"] >= THINKING
    took = f"[approve] allowed: by the user (you took {decision['seconds']:.1f} s to decide)"
    assert f"  {took}\n" in stdout
    result = next(e for e in recording["events"] if e["type"] == "tool_result")
    assert result["seconds"] >= THINKING  # the loop's clock ran while you were asked
    row = next(line for line in stdout.splitlines() if line.startswith("turn 1  model"))
    tools = float(row.split("| tools")[1].split("s")[0].strip(" #."))
    assert tools < THINKING and row.endswith(f"replace_text · you {decision['seconds']:.2f}s")
    assert f"· you deciding {decision['seconds']:.2f}s" in stdout
    page = recording_page(recording, "no-op.json")
    assert html.escape(took) in page and f"you {decision['seconds']:.2f}s" in page


def test_an_edit_that_would_be_refused_shows_the_change_it_asks_for(repo):
    source = repo / SOURCE_FILE
    for old, where in (("nowhere", "is not in"), ("path", "is found 4 times in")):
        lines = preview("replace_text", {"old": old, "new": "else"}, source)
        assert lines[0] == (
            f"  replace_text would be refused: its old text {where} path_rules.py (it must be "
            "found once). The change it asks for:"
        )
        assert f"    -{old}" in lines and "    +else" in lines
