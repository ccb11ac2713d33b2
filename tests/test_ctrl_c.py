"""Ctrl-C in every program: record_run.py (one attempt or a series), replay.py, ask.py, and
the lab's code under them (a test run, the final verdict, a scratch folder's clean-up, the
imports before main()).

Wherever it lands, Ctrl-C ends the run with exit 130 and no traceback (ask.py during an
answer returns to its prompt), kills what the run started (pytest and the grandchildren
the edited code spawns, a search child), and saves what can be saved: a recording that
says `interrupted` and replays. A signal is about the process, so most of these start the
program as a user would (tests/helpers.py's start_cli, sigint_default) and send a real
SIGINT once an observable event says the moment has come. (The recorded Ctrl-C mid-stream
that the shipped recordings replay is test_recorded.py's.)
"""

import io
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import record_run
from agent_loop import TOOL_START
from plumbing.pytest_run import run_pytest
from plumbing.recording import RECORDINGS, RecordingChat, RecordingError, load, save
from replay import REPRODUCED, replay_one
from tests.helpers import (
    LAB,
    STALL,
    altered,
    processes_under,
    sigint_default,
    start_cli,
    wait_for,
    wait_until_gone,
)
from tests.ollama_test_server import OllamaTestServer, call, chunk, reply
from tests.openai_test_server import TEST_MODEL, OpenAITestServer, content
from tests.openai_test_server import reply as openai_reply
from tests.scripted_model import ScriptedChat

# --- a test run under way: killed, nothing left running -------------------------------------------


HOSTILE_OLD = '"""Path rules for a small CI helper'
HOSTILE_NEW = (
    "import subprocess, sys, time\n"
    "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
    "time.sleep(60)\n" + HOSTILE_OLD
)


def sleeper_under(directory):
    """True once the hostile edit's sleeping grandchild runs in `directory`: the tests are
    under way (HOSTILE_NEW starts it when pytest imports the module)."""
    for pid in processes_under(directory):
        try:
            if b"time.sleep(60)" in Path(f"/proc/{pid}/cmdline").read_bytes():
                return True
        except OSError:
            continue
    return False


def interrupted_during_tests(args, tmp_path):
    """(exit code, stderr, stdout lines) of a CLI sent SIGINT once the tests `run_tests`
    started run."""
    process, lines = start_cli(args, tmp_path)
    try:
        assert wait_for(lambda: any("run_tests {}" in line for line in lines), seconds=30)
        assert wait_for(lambda: sleeper_under(tmp_path), seconds=30)
        process.send_signal(signal.SIGINT)
        return process.wait(timeout=30), process.stderr.read(), lines
    finally:
        process.kill()


def test_ctrl_c_during_a_test_run_kills_it_and_saves_interrupted(tmp_path, fresh_runs):
    output = tmp_path / "out" / "interrupted.json"
    hostile = reply(
        chunk(tool_calls=[call("replace_text", old=HOSTILE_OLD, new=HOSTILE_NEW)]),
        chunk(tool_calls=[call("run_tests", index=1)], done=True),
    )
    with OllamaTestServer([hostile]) as server:
        args = [LAB / "record_run.py", "--host", server.host, "--output", output]
        code, err, lines = interrupted_during_tests(args, tmp_path)
    assert code == 130
    assert "Traceback" not in err
    assert processes_under(tmp_path) == []  # pytest and its sleeping grandchild are gone
    recording = load(output)
    assert recording["stop"]["reason"] == "interrupted" and recording["final_tests"] is None
    assert recording["events"][-1]["type"] == TOOL_START  # the run that was interrupted
    # the timeline counts the starting tests alone: the final ones never ran
    assert wait_for(lambda: "interrupted: the final tests were not run\n" in lines, seconds=10)
    starting = recording["starting_tests"]["seconds"]
    assert f"        independent tests {starting:.2f}s\n" in lines, lines


def test_ctrl_c_during_a_replayed_test_run_exits_130_and_leaves_nothing(tmp_path, fresh_runs):
    recording = load(RECORDINGS / "repair.json")
    for c in recording["model_calls"][2]["chunks"]:
        for tool_call in c["message"].get("tool_calls", []):
            tool_call["function"]["arguments"] = {"old": HOSTILE_OLD, "new": HOSTILE_NEW}
    save(tmp_path / "hostile.json", recording)
    code, err, _ = interrupted_during_tests(
        [LAB / "replay.py", tmp_path / "hostile.json"], tmp_path
    )
    assert code == 130
    assert "Traceback" not in err
    assert processes_under(tmp_path) == []


# --- a program started with Ctrl-C ignored --------------------------------------------------------


def test_a_cli_started_with_ctrl_c_ignored_keeps_ignoring_it(tmp_path, fresh_runs):
    # A shell starts a background job with SIGINT ignored: the CLI must not take Ctrl-C back.
    process = subprocess.Popen(
        [sys.executable, str(LAB / "replay.py"), RECORDINGS / "bounded-max-turns-1.json"],
        cwd=LAB,
        env={**os.environ, "TMPDIR": str(tmp_path)},
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # Ctrl-C once its tests run in its temporary copy: well past the point where the CLI
        # hands Ctrl-C back to Python (quiet_interrupt.ready), and still replaying
        assert wait_for(lambda: processes_under(tmp_path), seconds=60), "no test run started"
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode == 0, err
    assert "Replayed 1 recording(s): 1 reproduced" in out


# --- a scratch folder's clean-up ------------------------------------------------------------------


def run_in_lab(child):
    """Run the Python text `child` in the lab's folder, Ctrl-C reaching it (see helpers)."""
    return subprocess.run(
        [sys.executable, "-c", child], capture_output=True, text=True, timeout=30,
        cwd=LAB, preexec_fn=sigint_default,
    )  # fmt: skip


def test_a_second_ctrl_c_during_cleanup_waits_until_the_folder_is_gone(tmp_path):
    # once in 13 double Ctrl-C runs an empty temporary folder was left behind
    child = (
        "import os, signal, sys\n"
        "from plumbing import scratch\n"
        "real = scratch.remove_tree\n"
        "def interrupted(path):\n"
        "    os.kill(os.getpid(), signal.SIGINT)  # the second Ctrl-C, mid-cleanup\n"
        "    real(path)\n"
        "scratch.remove_tree = interrupted\n"
        "try:\n"
        "    with scratch.scratch_folder(prefix='agent-lab-test-') as path:\n"
        "        print(path, flush=True)\n"
        "        open(os.path.join(path, 'f'), 'w').close()\n"
        "        raise KeyboardInterrupt  # the first Ctrl-C\n"
        "except KeyboardInterrupt:\n"
        "    sys.exit(130)\n"
    )
    finished = run_in_lab(child)
    assert finished.returncode == 130, finished.stderr
    assert not os.path.exists(finished.stdout.strip())


def test_ctrl_c_works_again_once_a_scratch_folder_is_removed():
    # the cleanup holds Ctrl-C back, and must let it through again: else nothing after the
    # first verdict could be interrupted
    child = (
        "import os, signal\n"
        "from plumbing.scratch import scratch_folder\n"
        "with scratch_folder(prefix='agent-lab-test-'):\n"
        "    pass\n"
        "try:\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "    print('not interrupted')\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted')\n"
    )
    finished = run_in_lab(child)
    assert finished.stdout == "interrupted\n", finished.stdout + finished.stderr


# --- while a program is still importing -----------------------------------------------------------


@pytest.mark.parametrize(
    "script, argument",
    [("record_run.py", "--help"), ("ask.py", "--help"), ("replay.py", "recordings/repair.json")],
)
def test_ctrl_c_during_the_imports_prints_no_traceback(script, argument):
    # python -v reports each import as it happens: interrupt as the CLI's own imports begin.
    # Whatever the signal then lands on (the SDK's imports, or the run itself after them),
    # the CLI must exit 130 without a traceback.
    command = [sys.executable, "-v", str(LAB / script), argument]
    process = subprocess.Popen(
        command, cwd=LAB, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        preexec_fn=sigint_default,
    )  # fmt: skip
    seen = []
    for line in process.stderr:
        seen.append(line)
        if b"import 'agent_loop'" in line:  # the CLI's own imports have begun
            process.send_signal(signal.SIGINT)
            break
    rest = process.stderr.read()
    process.wait()
    assert b"Traceback" not in rest, rest.decode(errors="replace")[-2000:]
    assert process.returncode == 130


# --- the loop and the final verdict, under record_run.py ------------------------------------------


def test_ctrl_c_during_run_tests_kills_the_test_process_group(repo, fresh_runs):
    # mutation no_kill_in_finally: run_pytest kills the group only on its own timeout.
    (repo / "tests" / "test_hang.py").write_text(
        "import subprocess, sys, time, pathlib\n"
        "def test_hang():\n"
        "    child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
        "    pathlib.Path('grandchild.pid').write_text(str(child.pid))\n"
        "    time.sleep(30)\n"
        "    pathlib.Path('finished').write_text('the run was waited for')\n"
    )
    main = threading.get_ident()
    pid_file = repo / "grandchild.pid"

    def press_ctrl_c():  # once the grandchild runs: the tests are under way
        wait_for(lambda: pid_file.exists() and pid_file.read_text(), seconds=30)
        signal.pthread_kill(main, signal.SIGINT)

    # subtle: a runner started in the background may ignore SIGINT; install Python's own.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        threading.Thread(target=press_ctrl_c, daemon=True).start()
        with pytest.raises(KeyboardInterrupt):
            run_pytest(repo, timeout=60, isolate=False)  # the host's pid is known
    finally:
        signal.signal(signal.SIGINT, previous)
    pid = int((repo / "grandchild.pid").read_text())
    try:
        assert not (repo / "finished").exists()  # did not wait for the tests to finish
        assert wait_until_gone(pid), f"grandchild {pid} outlived the interrupted run"
    finally:
        try:
            os.kill(pid, signal.SIGKILL)  # only matters when the assertion failed
        except ProcessLookupError:
            pass


class CtrlCOnce(io.StringIO):
    """A terminal where Ctrl-C is pressed while `word` is being printed."""

    def __init__(self, word):
        super().__init__()
        self.word, self.pressed = word, False

    def write(self, text):
        if not self.pressed and self.word in text:
            self.pressed = True
            raise KeyboardInterrupt
        return super().write(text)


def test_ctrl_c_between_chunks_saves_the_stream_as_closed(tmp_path):
    # mutation rr_no_loop_close_on_ctrlc: record_attempt does not close the loop on Ctrl-C,
    # so the half-read stream is still open (and saved as "without_done") when it saves.
    chat = ScriptedChat([[chunk("Reading "), chunk("the file"), chunk(done=True)]])
    out, output = CtrlCOnce("Reading"), tmp_path / "r.json"
    code = record_run.record_attempt(RecordingChat(chat), {"name": "scripted"}, output, 4, out=out)
    assert code == record_run.EXIT_INTERRUPTED
    saved = load(output)
    assert saved["stop"]["reason"] == "interrupted" and saved["final_tests"] is None
    assert saved["model_calls"][0]["ended"] == "closed"


def test_ctrl_c_during_the_final_verdict_may_leave_it_null_after_another_stop(tmp_path, fresh_runs):
    # The loop stopped as assistant_finished; Ctrl-C then cut the final verdict short.
    def cut_verdict(recording, interrupted):
        recording.update(final_tests=None, interrupted=interrupted)

    assert load(altered(tmp_path, lambda r: cut_verdict(r, True)))["final_tests"] is None
    with pytest.raises(RecordingError, match="'final_tests' may be null only"):
        load(altered(tmp_path, lambda r: cut_verdict(r, False)))


# --- a model call before its first event: recorded, and replayed ----------------------------------


@pytest.mark.waits
def test_recording_of_ctrl_c_before_any_event_of_a_call_replays_the_same_requests(tmp_path):
    output = tmp_path / "ctrl-c-before-any-event.json"
    silent = openai_reply(": reading the prompt\n\n", content("late"), pause_after_first=STALL)
    with OpenAITestServer([silent]) as server:
        options = ["--api", "openai", "--model", TEST_MODEL, "--host", server.base_url]
        command = [sys.executable, str(LAB / "record_run.py"), *options, "--output", output]
        process = subprocess.Popen(
            command, cwd=LAB, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            preexec_fn=sigint_default,
        )  # fmt: skip
        try:
            until = time.monotonic() + STALL  # wait for the observable event: the request
            while not (server.chat_bodies() and server.events_sent) and time.monotonic() < until:
                time.sleep(0.02)
            process.send_signal(signal.SIGINT)
            _, err = process.communicate(timeout=STALL)
        finally:
            process.kill()
    assert process.returncode == 130 and b"Traceback" not in err, err
    recording = load(output)
    assert recording["stop"]["reason"] == "interrupted"
    assert recording["model_calls"] == [
        {"request_length": 2, "events": [], "ended": "closed", "arrived": []}
    ]
    assert replay_one(output, out=open(os.devnull, "w")) == REPRODUCED
