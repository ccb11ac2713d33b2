"""record_run.py, the recorder, past what test_recorded.py's end-to-end runs show: where it
may write (--output: a folder, a link, a device or a FIFO refused before any run; a name
made from any model name; by default the learner's own runs/, never recordings/), a
recording it cannot save (exit 2, not a finished attempt), and a run that rewrote the test
file (saved, and not counted). Its main() runs in the test's process (tests/in_process.py)
or `record_attempt` is called with a scripted chat; where the lab's own folders are what is
tested, a copy of the lab runs as programs.
"""

import io
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import record_run
from harness.chats import RecordingChat
from harness.output_path import default_output
from harness.recording import RECORDINGS, RUNS, load
from plumbing.exit_codes import EXIT_ERROR, EXIT_NO
from tests.helpers import failing, lab_copy, passing
from tests.in_process import run_cli
from tests.ollama_test_server import ConversationServer, call, chunk
from tests.scripted_model import ScriptedChat

# --- --output: refused before any run unless it is a new or a regular file ------------------------


@pytest.mark.parametrize("kind", ["device", "fifo", "link"])
def test_output_that_is_not_a_regular_file_is_refused_even_with_force(tmp_path, kind):
    # as root, `--output /dev/null --force` once replaced the machine's /dev/null
    target = tmp_path / "target"
    if kind == "device":
        target = Path("/dev/null")
    elif kind == "fifo":
        os.mkfifo(target)
    else:
        (tmp_path / "real.json").write_text("keep me")
        target.symlink_to(tmp_path / "real.json")
    before = os.lstat(target)
    finished = run_cli("record_run.py", "--host", "http://127.0.0.1:9", "--output", target,
                       "--force")  # fmt: skip
    assert finished.returncode == 2
    assert finished.stderr == (
        f"error: {target} is not a regular file (a link, a device or a FIFO); give --output "
        "the name of a new or a regular file\n"
    )
    after = os.lstat(target)
    assert (after.st_mode, after.st_ino, after.st_rdev) == (
        before.st_mode,
        before.st_ino,
        before.st_rdev,
    )
    if kind == "link":
        assert (tmp_path / "real.json").read_text() == "keep me"


def test_output_that_is_a_folder_is_refused_before_any_run(tmp_path):
    finished = run_cli("record_run.py", "--host", "http://127.0.0.1:9", "--output", tmp_path)
    assert finished.returncode == 2
    assert finished.stderr == f"error: {tmp_path} is a folder; give --output a file name\n"
    assert list(tmp_path.iterdir()) == []


# --- a recording it cannot save, a run it does not count ------------------------------------------


def test_a_recording_that_cannot_be_saved_exits_2_not_as_a_finished_attempt(tmp_path, capsys):
    # record_run.py refuses a folder as --output up front; one that became a folder during
    # the run makes save() fail: one error line and the set-up exit code, never 0
    script = [[chunk("All pass.", done=True)]]
    code = record_run.record_attempt(
        RecordingChat(ScriptedChat(script)), {"name": "scripted"}, tmp_path, 4, out=io.StringIO()
    )
    assert code == EXIT_ERROR
    assert f"error: the recording could not be saved to {tmp_path}: " in capsys.readouterr().err


def test_recorder_does_not_count_a_run_that_rewrote_the_test_file(tmp_path, capsys):
    # mutation rr_ignore_test_hash: `if not recording["tests_unchanged"]` never true.
    # Model-written code runs under run_tests and replaces the tests with one that passes.
    # Unisolated: as root under bubblewrap the tests run as a user of their own, who cannot
    # write them.
    rewrite = (
        "import pathlib as _p\n"
        "_p.Path(__file__).with_name('tests').joinpath('test_path_rules.py')"
        ".write_text('def test_ok():\\n    pass\\n')\n\n\n"
        "def python_sources("
    )
    edit = call("replace_text", old="def python_sources(", new=rewrite)
    script = [
        [chunk(tool_calls=[edit, call("run_tests", index=1)], done=True)],
        [chunk("All tests pass.", done=True)],
    ]
    out = io.StringIO()
    output = tmp_path / "r.json"
    code = record_run.record_attempt(
        RecordingChat(ScriptedChat(script)), {"name": "scripted"}, output, 4, isolate=False, out=out
    )
    saved = load(output)
    assert saved["final_tests"]["verdict"] == "failed"  # judged on the sample's own tests...
    assert saved["tests_unchanged"] is False
    assert code == EXIT_NO  # ...and the run does not count
    assert "the test file changed" in capsys.readouterr().err


def test_a_live_run_says_what_the_held_out_words_mean_under_its_starting_verdict(tmp_path):
    # the first verdict a learner meets, on the first lines of a live run, says once what
    # its held-out line counts; the final verdict does not say it again
    out = io.StringIO()
    script = [[chunk("All pass.", done=True)]]
    record_run.record_attempt(
        RecordingChat(ScriptedChat(script)), {"name": "scripted"}, tmp_path / "r.json", 4, out=out
    )
    lines = out.getvalue().splitlines()
    assert lines[0] == "Starting verdict: failed" and lines[2].startswith("  held-out checks: ")
    assert lines[3].startswith("  (held-out: inputs the model never saw, answered by its code")
    assert "; how many depends on the seed each run draws; relations: " in lines[3]
    assert sum(line.startswith("  (held-out: ") for line in lines) == 1


def test_a_runs_loop_seconds_is_the_loops_time_between_its_two_verdicts(tmp_path):
    # mutation: harness/driver.py's `time.monotonic() - started` as `+ started` saved twice
    # the machine's uptime as the loop's seconds, and nothing read it back. The loop runs
    # after the starting verdict and before the final one: its time holds every turn and
    # tool it timed, and fits with both verdicts' in the time the whole attempt took.
    script = [
        [chunk(tool_calls=[call("run_tests")], done=True)],
        [chunk("The tests ran.", done=True)],
    ]
    output = tmp_path / "r.json"
    began = time.monotonic()
    record_run.record_attempt(
        RecordingChat(ScriptedChat(script)), {"name": "scripted"}, output, 4, out=io.StringIO()
    )
    took = time.monotonic() - began
    saved = load(output)
    timed = sum(event["seconds"] for event in saved["events"] if "seconds" in event)
    verdicts = saved["starting_tests"]["seconds"] + saved["final_tests"]["seconds"]
    assert 0 < timed <= saved["loop_seconds"] <= took - verdicts


# --- the name it makes up for a recording ---------------------------------------------------------


def test_a_model_name_of_no_usable_character_still_names_its_recording():
    # mutation: the `or "model"` fallback dropped named the file "-TIMESTAMP.json", which
    # replay.py would take for an option
    assert default_output("???").name.startswith("model-")
    assert default_output("qwen3:0.6b").name.startswith("qwen3-0.6b-")


# --- the learner's runs are theirs: runs/, never among the lab's recordings ----------------------


def test_a_recording_is_named_in_the_learners_runs_folder_not_among_the_labs():
    made = default_output("qwen2.5-coder:1.5b")
    assert made.parent == RUNS and RECORDINGS not in made.parents
    ignored = (RUNS.parent / ".gitignore").read_text().splitlines()
    assert f"{RUNS.name}/" in ignored  # git never offers to commit a learner's run


def test_a_series_saves_in_runs_by_default_and_replay_with_no_argument_leaves_it_out(tmp_path):
    # A copy of the lab, run as programs: its runs/ and recordings/ are its own. A series
    # with no --output names its attempts from the default, in runs/; the walk-through
    # (the copy has none) is all that replay.py takes when given no recording.
    lab = lab_copy(tmp_path)
    with ConversationServer([passing("a"), failing("b")]) as server:
        series = subprocess.run(
            [sys.executable, str(lab / "record_run.py"), "--host", server.host, "--attempts", "2"],
            capture_output=True, text=True, cwd=tmp_path, timeout=240,
        )  # fmt: skip
    assert series.returncode == 1, series.stdout + series.stderr  # one of the two failed
    saved = sorted(p.name for p in (lab / "runs").iterdir())
    assert len(saved) == 2 and saved[0].startswith("gemma4-e2b-") and saved[0].endswith("-1.json")
    assert not (lab / "recordings").exists()
    replayed = subprocess.run(
        [sys.executable, str(lab / "replay.py")], capture_output=True, text=True, cwd=tmp_path,
        timeout=60,
    )  # fmt: skip
    assert replayed.returncode == 2
    assert replayed.stderr == f"error: no recordings given and none in {lab / 'recordings'}\n"
