"""replay.py past test_recorded.py's replays of the shipped recordings: what it refuses
before it runs (a recording made with another sample, no recording at all), and a
recording cut short (Ctrl-C, a deadline) that holds more model calls than its run can make:
replayed up to its cut, never past it, and a divergence once the loop has ended rather
than a wait for a request that never comes.
"""

import copy
import subprocess
import sys

import pytest

from harness.recording import RECORDINGS, load, save
from harness.transcript import ChunkLog
from plumbing.exit_codes import EXIT_ERROR, EXIT_NO
from replay import CANNOT_REPLAY, REPRODUCED
from tests.helpers import LAB, altered, lab_copy, replay

# --- what replay refuses before it runs -----------------------------------------------------------


def test_source_hash_mismatch_is_refused(tmp_path, capsys):
    # mutation no_source_hash_check: check_sample compares only the test file.
    outcome, _ = replay(altered(tmp_path, lambda r: r.update(source_sha256="0" * 64)))
    assert outcome == CANNOT_REPLAY
    error = capsys.readouterr().err
    assert "sample_repo/path_rules.py is not the file this recording was made with" in error


def test_replay_with_no_recordings_given_and_none_in_the_lab_exits_2(tmp_path):
    # `replay.py` alone replays recordings/*.json: with none there it says where it looked,
    # in one line, and exits as for a recording it cannot replay (not 0: nothing reproduced)
    lab = lab_copy(tmp_path, "sample_repo")  # no recordings/ at all
    finished = subprocess.run(
        [sys.executable, str(lab / "replay.py")], capture_output=True, text=True, cwd=lab
    )
    assert finished.returncode == EXIT_ERROR, finished.stdout + finished.stderr
    assert finished.stderr == f"error: no recordings given and none in {lab / 'recordings'}\n"
    assert "Replayed" not in finished.stdout


# --- a recording cut short (interrupted, or a deadline) replays up to its cut ---------------------


def replay_in_child(path):
    """replay.py on `path` in a child: a replay that never ends fails the test, not the suite."""
    return subprocess.run(
        [sys.executable, str(LAB / "replay.py"), str(path)],
        capture_output=True,
        text=True,
        cwd=LAB,
        timeout=60,
    )


def test_a_cut_short_recording_holding_a_call_the_run_never_makes_diverges_and_ends(tmp_path):
    # After the cut, replay makes the request a run was still waiting on while the loop
    # runs; a recording holding one more model call than the loop can make (an edited file)
    # is a divergence once the loop has ended, not a wait for a request that never comes.
    recording = load(RECORDINGS / "claims-success-without-edit.json")
    recording["stop"]["reason"] = recording["events"][-1]["reason"] = "interrupted"
    recording.update(interrupted=True, final_tests=None)  # Ctrl-C leaves no final verdict
    recording["model_calls"].append(copy.deepcopy(recording["model_calls"][-1]))
    save(tmp_path / "r.json", recording)
    finished = replay_in_child(tmp_path / "r.json")
    assert finished.returncode == EXIT_NO, finished.stdout + finished.stderr
    assert "Stop: interrupted after 1 model call, 0 tool calls" in finished.stdout
    assert "DIVERGED (1):\n  model calls: 2 recorded, 1 made\n" in finished.stdout


def test_a_cut_short_recording_holding_two_calls_past_its_cut_runs_no_tool_past_it(tmp_path):
    # At most the one request a run was waiting on is made after the cut: a second step
    # would run the edit of turn 3, which the recording never shows, and the run would
    # then end with a change no event holds (it did, and the replay said "reproduced").
    recording = load(RECORDINGS / "repair.json")
    events = recording["events"]
    end = max(i for i, e in enumerate(events) if e["type"] == "tool_result" and e["turn"] == 2)
    recording["stop"] = {"type": "stopped", "turn": 2, "reason": "interrupted"}
    recording["events"] = [*events[: end + 1], recording["stop"]]
    recording.update(interrupted=True, final_tests=None)  # Ctrl-C leaves no final verdict
    recording["model_calls"] = recording["model_calls"][:4]  # turn 3 edits, turn 4 tests
    save(tmp_path / "r.json", recording)
    finished = replay_in_child(tmp_path / "r.json")
    assert finished.returncode == EXIT_NO, finished.stdout + finished.stderr
    assert "Independent verdict: not run" in finished.stdout
    assert "What the run changed" not in finished.stdout
    assert "  model calls: 4 recorded, 2 made\n" in finished.stdout


def test_a_run_stopped_by_ctrl_c_after_its_last_answer_replays_without_the_loops_own_stop(
    tmp_path,
):
    # mutation: `cut.deadline and answered_last(...)` -> `answered_last(...)` took the
    # loop's stop past a Ctrl-C cut too; only a deadline's cut may be followed by it (Ctrl-C
    # can come before the loop's own stop, a deadline cannot)
    def interrupted_after_the_answer(recording):
        recording.update(interrupted=True, final_tests=None)
        recording["stop"] = {**recording["stop"], "reason": "interrupted"}
        recording["events"] = [e for e in recording["events"] if e["type"] != "stopped"]

    outcome, said = replay(altered(tmp_path, interrupted_after_the_answer))
    assert outcome == REPRODUCED, said
    assert "assistant_finished" not in said.split("Stop:")[-1]


# --- --chunks N: a turn's chunks where it begins, before what the loop made of them ---------------


def test_chunks_come_before_the_thinking_and_the_call_the_loop_made_of_them():
    outcome, output = replay(RECORDINGS / "repair.json", chunks=3)
    assert outcome == REPRODUCED
    lines = output.splitlines()
    head = lines.index("--- turn 3: its 12 chunks, as the adapter handed them over ---")
    assert lines[head - 1] == "  -> 18 lines of tests/test_path_rules.py"  # turn 2's end
    assert lines[head + 13].startswith("turn 3 thinking: The Windows path")
    assert output.count("--- turn 3: its") == 1


def test_chunks_of_a_call_that_failed_come_first_and_its_error_after_them():
    def failing(messages, tools):
        yield {"message": {"content": "a"}}
        raise RuntimeError("recorded: cut")

    said = []
    log = ChunkLog(failing, 1, said.append)
    stream = log([], [])
    assert next(stream) == {"message": {"content": "a"}}
    assert said[0] == "--- turn 1: its 1 chunks, as the adapter handed them over ---"
    with pytest.raises(RuntimeError, match="recorded: cut"):
        next(stream)  # where the loop met it when it was recorded: after the chunk
