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
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import record_run
from agent_loop import TOOL_START
from harness.chats import RecordingChat
from harness.recording import RECORDINGS, load, save
from harness.recording_checks import RecordingError
from plumbing.exit_codes import EXIT_INTERRUPTED
from plumbing.pytest_run import run_pytest
from readonly_tools import SEARCH_SECONDS
from replay import REPRODUCED, replay_one
from tests.helpers import (
    LAB,
    STALL,
    Reader,
    altered,
    failing,
    live_processes,
    messages_of,
    passing,
    processes_under,
    search_children,
    sigint_default,
    start_cli,
    wait_for,
    wait_until_gone,
)
from tests.ollama_test_server import ConversationServer, OllamaTestServer, call, chunk, reply
from tests.openai_test_server import TEST_MODEL, OpenAITestServer, content
from tests.openai_test_server import reply as openai_reply
from tests.scripted_model import ScriptedChat

# --- record_run.py: a test run, the stream, the final verdict -------------------------------------


HOSTILE_OLD = '"""Path rules for a small CI helper'
HOSTILE_NEW = (
    "import subprocess, sys, time\n"
    "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
    "time.sleep(60)\n" + HOSTILE_OLD
)


def sleeping_grandchild(pid):
    try:
        return b"time.sleep(60)" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def sleeper_under(directory):
    """True once the hostile edit's sleeping grandchild runs in `directory`: the tests are
    under way (HOSTILE_NEW starts it when pytest imports the module)."""
    return any(sleeping_grandchild(pid) for pid in processes_under(directory))


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
    # the timeline counts the starting tests alone, and says so: the final ones never ran
    assert wait_for(lambda: "interrupted: the final tests were not run\n" in lines, seconds=10)
    starting = recording["starting_tests"]["seconds"]
    alone = ", the starting verdict's alone (no final verdict ran)"
    assert f"        independent tests {starting:.2f}s{alone}\n" in lines, lines
    assert "Independent verdict: not run\n" in lines


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
    assert code == EXIT_INTERRUPTED
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


# --- a series of attempts (record_run.py --attempts) ----------------------------------------------


def start_series(args, tmp_path, own_group=False):
    return start_cli([LAB / "record_run.py", *args], tmp_path, own_group)


def children_of(parent):
    """PIDs of the live processes whose parent is `parent`."""
    return live_processes(lambda entry, fields: fields[1] == str(parent))


def test_ctrl_c_mid_series_keeps_what_ended_saves_the_running_one_and_exits_130(
    tmp_path, fresh_runs
):
    gate = threading.Event()  # holds attempt 2's stream open until the test lets go
    output = tmp_path / "out" / "s.json"
    scripts = [passing("a"), failing("b", gate=gate), passing("c")]
    with ConversationServer(scripts) as server:
        args = ["--host", server.host, "--output", output, "--attempts", 3]
        process, lines = start_series(args, tmp_path)
        try:
            assert wait_for(
                lambda: any("[1/3] attempt 1: passed" in line for line in lines), seconds=60
            )
            assert wait_for(
                lambda: len(server.first_line_sent) == 3, seconds=60
            )  # attempt 2 is mid-stream
            process.send_signal(signal.SIGINT)
            code = process.wait(timeout=60)
        finally:
            gate.set()
            process.kill()
    stdout, stderr = "".join(lines), process.stderr.read()
    assert code == 130, stdout + stderr
    assert "Traceback" not in stderr
    assert "[2/3] attempt 2: no verdict · interrupted · 1 model call" in stdout
    assert "passed 1 of 1 (100%; 95% interval 21%-100%); 1 interrupted, not counted" in stdout
    assert load(output.with_name("s-1.json"))["final_tests"]["exit_code"] == 0
    second = load(output.with_name("s-2.json"))
    assert second["stop"]["reason"] == "interrupted" and second["final_tests"] is None
    assert not output.with_name("s-3.json").exists()  # never started
    assert processes_under(tmp_path) == []


def test_ctrl_c_with_jobs_kills_the_running_test_runs_and_saves_both(tmp_path, fresh_runs):
    hanging = [reply(  # a test run that would hang for a minute, with a grandchild
        chunk(thinking="Plan h: hang."),
        chunk(tool_calls=[call("replace_text", old=HOSTILE_OLD, new=HOSTILE_NEW)]),
        chunk(tool_calls=[call("run_tests", index=1)], done=True),
    )]  # fmt: skip
    gate = threading.Event()
    output = tmp_path / "out" / "s.json"
    with ConversationServer([hanging, failing("b", gate=gate), passing("c")]) as server:
        args = ["--host", server.host, "--output", output, "--attempts", 3, "--jobs", 2]
        process, lines = start_series(args, tmp_path, own_group=True)
        try:
            assert wait_for(lambda: len(server.started) == 2, seconds=60)
            assert wait_for(
                lambda: any(sleeping_grandchild(pid) for pid in processes_under(tmp_path)),
                seconds=60,
            )
            # subtle: a terminal's Ctrl-C goes to the whole foreground process group; an
            # attempt that heard it twice could be stopped again while saving, so each
            # attempt runs in a session of its own and hears it from the series only
            attempts = children_of(process.pid)
            assert len(attempts) == 2
            assert all(os.getsid(pid) != os.getsid(process.pid) for pid in attempts)
            os.killpg(process.pid, signal.SIGINT)
            code = process.wait(timeout=60)
        finally:
            gate.set()
            process.kill()
    assert code == 130, "".join(lines) + process.stderr.read()
    assert processes_under(tmp_path) == []  # pytest and its sleeping grandchild are gone
    stops = sorted(load(p)["stop"]["reason"] for p in output.parent.glob("s-*.json"))
    assert stops == ["interrupted", "interrupted"]


def test_ctrl_c_before_an_attempt_saved_anything_never_reports_an_older_file(tmp_path):
    older = tmp_path / "s-1.json"
    older.write_bytes((RECORDINGS / "repair.json").read_bytes())  # from an earlier series
    with socket.socket() as silent:  # accepts the connection, never answers: a hung server
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        silent.settimeout(60)
        host = f"http://127.0.0.1:{silent.getsockname()[1]}"
        args = ["--host", host, "--output", tmp_path / "s.json", "--attempts", 2, "--force"]
        process, lines = start_series(args, tmp_path)
        try:
            connection, _ = silent.accept()  # attempt 1 is asking for the model list
            process.send_signal(signal.SIGINT)
            code = process.wait(timeout=60)
            connection.close()
        finally:
            process.kill()
    stdout = "".join(lines)
    assert code == 130, stdout
    assert "[1/2] attempt 1: interrupted before anything was recorded" in stdout
    assert "Summary" not in stdout and "passed" not in stdout
    assert older.read_bytes() == (RECORDINGS / "repair.json").read_bytes()


def test_ctrl_c_while_an_attempt_is_being_started_stops_that_attempt_too(tmp_path, fresh_runs):
    # subtle: a Ctrl-C that lands after the series checked for one and before it keeps the
    # new child among those it passes Ctrl-C on to must still reach that child. Here the
    # series' first look at the attempt's output path, in the middle of starting it, is
    # where the series' Ctrl-C handler runs.
    # subtle: the handler is called there directly, not through os.kill: a signal sent to
    # this process may be taken by one of its other threads (the stand-in server's, the
    # test runner's), and the handler would then run only once the main thread next wakes,
    # after the attempt has ended. record_run.py's own waiter threads block SIGINT.
    from harness.attempts import Series

    class CtrlCOnFirstLook(type(tmp_path)):
        pressed = False

        def stat(self, *args, **kwargs):
            if not CtrlCOnFirstLook.pressed:
                CtrlCOnFirstLook.pressed = True
                series._on_ctrl_c(signal.SIGINT, None)  # as the handler runs on a Ctrl-C
            return super().stat(*args, **kwargs)

    output, out = CtrlCOnFirstLook(tmp_path / "s.json"), io.StringIO()
    with ConversationServer([passing("a")]) as server:
        series = Series(LAB / "record_run.py", ["--host", server.host], [output], 1, out)
        series.run()
        assert signal.getsignal(signal.SIGINT) != series._on_ctrl_c  # handed back
    assert CtrlCOnFirstLook.pressed and series.exit_code() == 130
    assert out.getvalue() == "[1/1] attempt 1: interrupted before anything was recorded\n"
    assert not output.exists()  # the attempt stopped: it never ran to its save


# --- replay.py ------------------------------------------------------------------------------------


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


# --- ask.py: during an answer back to the prompt, else exit 130 -----------------------------------


@pytest.fixture
def spawn():
    """Start ask.py; every process started is killed and reaped when the test ends."""
    started = []

    def start(*args, **options):
        process = subprocess.Popen(
            [sys.executable, str(LAB / "ask.py"), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=sigint_default,
            **options,
        )
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
        process.communicate()


def test_ctrl_c_during_the_model_check_exits_130_without_traceback(spawn, tmp_path):
    # A server that takes the connection and never answers: the check before the first
    # question waits on it, and Ctrl-C must end ask.py there as it does during an answer.
    with socket.create_server(("127.0.0.1", 0)) as silent:
        silent.settimeout(30)  # only a broken build waits it out
        host = f"http://127.0.0.1:{silent.getsockname()[1]}"
        process = spawn("--root", str(tmp_path), "--host", host, "Question?")
        connection, _ = silent.accept()  # the check has begun
        with connection:
            process.send_signal(signal.SIGINT)
            out, err = process.communicate(timeout=15)
    assert process.returncode == 130
    assert out == b"" and err == b"\ninterrupted\n"


def test_ctrl_c_during_an_answer_returns_to_the_prompt(spawn, tmp_path):
    gate = threading.Event()
    script = [
        reply(chunk("Partial"), chunk(" rest", done=True), gate=gate),  # held after "Partial"
        reply(chunk("Second answer.", done=True)),
    ]
    with OllamaTestServer(script) as server:
        process = spawn("--root", str(tmp_path), "--host", server.host)
        out, err = Reader(process.stdout), Reader(process.stderr)
        process.stdin.write(b"First question?\n")
        process.stdin.flush()
        after = out.wait_for("Partial")
        process.send_signal(signal.SIGINT)
        out.wait_for("ask> ", start=after)  # back at the prompt
        gate.set()  # let the server's handler finish; the client has hung up already
        process.stdin.write(b"Second question?\n")
        process.stdin.flush()
        out.wait_for("Second answer.", start=after)
        process.stdin.write(b"exit\n")
        process.stdin.flush()
        assert process.wait(timeout=15) == 0
        bodies = server.chat_bodies()
    assert len(bodies) == 2
    # The cancelled question was left out: the next request starts from a clean history.
    assert messages_of(bodies[1])[1:] == [("user", "Second question?")]
    err.wait_for("cancelled")
    assert b" rest" not in out.data and b"Traceback" not in out.data + err.data


def test_ctrl_c_during_one_question_exits_130_without_traceback(spawn, tmp_path):
    gate = threading.Event()
    script = [reply(chunk("Partial"), chunk(" rest", done=True), gate=gate)]
    with OllamaTestServer(script) as server:
        process = spawn("--root", str(tmp_path), "--host", server.host, "Question?")
        out, err = Reader(process.stdout), Reader(process.stderr)
        out.wait_for("Partial")
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=15) == 130
        gate.set()
    err.wait_for("interrupted")
    assert b"Traceback" not in err.data


def test_ctrl_c_during_a_search_ends_the_search_child_too(spawn, tmp_path):
    # The search child runs in its own session, so Ctrl-C reaches ask.py alone: ask.py must
    # end the child, not wait for a backtracking pattern that would run for hours.
    (tmp_path / "a.txt").write_text("a" * 40 + "!\n")
    script = [reply(chunk(tool_calls=[call("search", pattern="(a+)+$")], done=True))]
    with OllamaTestServer(script) as server:
        process = spawn("--root", str(tmp_path), "--host", server.host, "Where?")
        Reader(process.stdout).wait_for("> search")
        assert wait_for(lambda: search_children(process.pid))
        (child,) = search_children(process.pid)
        try:
            process.send_signal(signal.SIGINT)
            code = process.wait(timeout=SEARCH_SECONDS)  # the child's own budget, unused
        finally:
            gone = wait_until_gone(child, seconds=1)
            if not gone:  # a broken build left it running: end it here
                os.kill(child, signal.SIGKILL)
    assert code == 130 and gone


# --- every program, while it is still importing ---------------------------------------------------


@pytest.mark.parametrize(
    "script, argument",
    [("record_run.py", "--help"), ("ask.py", "--help"), ("replay.py", "recordings/repair.json")],
)
def test_ctrl_c_during_the_imports_prints_no_traceback(script, argument):
    # python -v reports each import as it happens: interrupt as the CLI's own imports begin.
    # Whatever the signal then lands on (the imports, or the run itself after them),
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
