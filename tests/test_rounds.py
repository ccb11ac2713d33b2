"""The edit-test loop run by the lab (`record_run.py --rounds N`, extensions/rounds.py): round
1 is --one-shot's request, and while the visible tests fail the lab sends their output back
and asks again, up to N rounds. Recorded, replayed, shown on the page and the terminal.

The model is the OpenAI stand-in (tests/openai_test_server.py) serving hand-written
answers: nothing here is a model's output. record_run.py's main() runs in this process
(tests/in_process.py); the tools, the copies, the pytest runs and the verdicts are real.
"""

import html
import json

import pytest

from extensions.one_shot_request import TASK
from harness.board import arm_of
from harness.decisions import by_call
from harness.page import recording_page
from harness.recording import load, save
from harness.tasks import TASKS
from replay import CANNOT_REPLAY, REPRODUCED
from tests import openai_test_server as openai
from tests.helpers import replay
from tests.in_process import run_cli

GIVEN = TASKS["suffix-typo"].source.decode()
HALF = GIVEN.replace('endswith(".pyc")', 'endswith(".p")')  # still fails the visible tests
RIGHT = GIVEN.replace('endswith(".pyc")', 'endswith(".py")')


def answer(source):
    return openai.file_answer(source, words="Here is the file.\n\n")


def rounds(tmp_path, replies, *options):
    """record_run.py --task suffix-typo against the stand-in serving `replies`: (the finished
    run, the request bodies it sent, the recording's path)."""
    output = tmp_path / "run.json"
    with openai.OpenAITestServer(replies) as server:
        wire = ["--api", "openai", "--host", server.base_url, "--model", openai.TEST_MODEL]
        done = run_cli("record_run.py", *wire, "--task", "suffix-typo", *options,
                       "--output", output)  # fmt: skip
        bodies = server.chat_bodies()
    return done, bodies, output


def test_the_test_output_goes_back_until_the_tests_pass(tmp_path):
    replies = [answer(GIVEN), answer(HALF), answer(RIGHT)]
    done, bodies, output = rounds(tmp_path, replies, "--rounds", "3")
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(bodies) == 3
    # round 1 is the one-shot's request: the files and the test run the lab made
    first = bodies[0]["messages"][-1]["content"]
    assert first.startswith(TASK) and "path_rules.py:\n```python\n" in first
    assert "The output of run_tests, before any change:" in first
    # round 2 is told its block changed nothing, and shown the tests' failing output
    asked = bodies[1]["messages"][-1]["content"]
    assert asked.startswith("Your block was path_rules.py as it already was, byte for byte")
    assert "The tests still fail. The output of run_tests:\n```\n" in asked
    assert "3 failed, 1 passed" in asked and asked.endswith("runs the tests again.")
    # round 3 sees what round 2's answer did: the conversation only grew
    assert bodies[2]["messages"][: len(bodies[1]["messages"])] == bodies[1]["messages"]
    assert "Your block" not in bodies[2]["messages"][-1]["content"]
    said = done.stdout
    assert "[rounds] unchanged: " in said and said.count("[rounds] written: ") == 2
    assert "[rounds] round 3: the visible tests still failed" in said
    assert said.count("[rounds] round ") == 2  # before rounds 2 and 3 alone
    assert "Independent verdict: passed" in said
    recording = load(output)
    assert recording["extensions"]["on"] == [{"name": "rounds", "settings": {"rounds": 3}}]
    assert recording["max_turns"] == 3 and recording["stop"]["reason"] == "assistant_finished"
    assert [e["turn"] for e in recording["events"] if e["type"] == "stopped"] == [3]
    assert arm_of(recording) == "rounds 3"  # the board's row: another N, another arm
    # each round's decision under its own turn on the page
    assert sorted(turn for turn, _ in by_call(recording)) == [1, 2, 3]
    assert html.escape("[rounds] unchanged") in recording_page(recording, "run.json")
    outcome, replayed = replay(output)
    assert outcome == REPRODUCED, replayed
    assert "[rounds] round 2: the visible tests still failed" in replayed


def test_tests_that_pass_end_the_rounds_and_rounds_run_out(tmp_path):
    done, bodies, _ = rounds(tmp_path, [answer(RIGHT), answer(RIGHT)], "--rounds", "3")
    assert done.returncode == 0 and len(bodies) == 1  # passed after round 1: no round 2
    done, bodies, output = rounds(tmp_path / "out", [answer(HALF), answer(HALF)], "--rounds", "2")
    assert done.returncode == 1 and len(bodies) == 2  # two rounds, both failing: no third
    recording = load(output)
    assert recording["final_tests"]["verdict"] == "failed"
    assert recording["events"][-1]["type"] == "stopped"  # the last round's own stop
    assert recording["stop"]["reason"] == "assistant_finished"
    assert replay(output)[0] == REPRODUCED  # two rounds, the least --rounds takes


def test_an_answer_that_calls_a_tool_spends_its_round_and_the_next_is_asked(tmp_path):
    # no tool is offered: the call is answered with an error, and the round is over
    called = openai.reply(
        openai.tool_call(0, '{"path": "path_rules.py"}', name="read_file", call_id="c1"),
        openai.finish("tool_calls"),
    )
    done, bodies, _ = rounds(tmp_path, [called, called, answer(RIGHT)], "--rounds", "3")
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(bodies) == 3 and "no tool is offered" in json.dumps(bodies[1]["messages"])
    for body in bodies[1:]:  # a round of one turn: after its call, the lab's next request
        assert body["messages"][-1]["content"].startswith("Your answer held no complete fenced")


def test_a_round_that_ends_without_an_answer_ends_the_run(tmp_path):
    # the server's error is the run's stop: no test run, and no next round is asked
    broken = openai.reply("the model is not loaded", status=503)
    done, bodies, output = rounds(tmp_path, [broken, answer(RIGHT)], "--rounds", "2")
    assert len(bodies) == 1 and load(output)["stop"]["reason"] == "model_error"


def test_rounds_1_is_the_one_shot_arm(tmp_path):
    done, bodies, output = rounds(tmp_path, [answer(HALF)], "--rounds", "1")
    assert done.returncode == 1 and len(bodies) == 1
    assert load(output)["extensions"]["on"] == [{"name": "one-shot", "settings": {}}]


@pytest.mark.parametrize(
    "options, says",
    [
        (["--rounds", "0"], "--rounds: must be a positive whole number, got '0'"),
        (["--rounds", "2", "--one-shot"], "--one-shot is --rounds 1; give one of them"),
        (["--rounds", "2", "--hook", "syntax"], "--rounds 2 offers no tools, which --hook"),
    ],
    ids=["zero", "with-one-shot", "with-a-hook"],
)
def test_rounds_that_cannot_be_run_are_refused_in_one_line(tmp_path, options, says):
    done, bodies, _ = rounds(tmp_path, [], *options)
    assert done.returncode == 2 and bodies == []
    assert says in done.stderr and "Traceback" not in done.stderr


def test_a_recording_whose_rounds_setting_is_not_two_or_more_is_refused(tmp_path, capsys):
    done, _, output = rounds(tmp_path, [answer(HALF), answer(RIGHT)], "--rounds", "2")
    recording = load(output)
    for wrong in ({"rounds": 1}, {"rounds": 2, "from_call": 1}):
        recording["extensions"]["on"][0]["settings"] = wrong
        save(tmp_path / "bad.json", recording)
        capsys.readouterr()
        assert replay(tmp_path / "bad.json")[0] == CANNOT_REPLAY
        said = capsys.readouterr().err
        assert "the settings of extension 'rounds' must be {\"rounds\": N}, N from 2" in said
