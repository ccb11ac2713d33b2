"""Edge cases found by a mutation pass: each test fails when the behaviour it names is
removed (the break it catches is in the comment), where the other tests did not notice.
The last section holds bugs the pass found, fixed since.
"""

import copy
import gc
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from types import SimpleNamespace

import pytest

import record_run
from agent_loop import (
    DEADLINE,
    INCOMPLETE_MODEL_TURN,
    MODEL_ERROR,
    MODEL_START,
    TASK,
    TEXT_DELTA,
    TOOL_START,
    agent_events,
)
from local_model import LocalModel, ModelError
from plumbing.exit_codes import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_NO
from plumbing.limits import Deadline, DeadlineExceeded
from plumbing.ollama_transport import _LimitedStream, _WatchedStream
from plumbing.output_path import default_output
from plumbing.pytest_report import count_results
from plumbing.pytest_run import run_pytest
from plumbing.recording import RECORDINGS, RecordingChat, RecordingError, load, save
from plumbing.replayable import shipped
from replay import CANNOT_REPLAY, DIVERGED
from repo_tools import RepoTools
from tests.helpers import LAB, altered, open_under, replay, wait_for, wait_until_gone
from tests.ollama_test_server import OllamaTestServer, call, chunk, reply
from tests.scripted_model import ScriptedChat


class HeldStream:
    """A chunk iterator that is not a generator: only an explicit close() closes it."""

    def __init__(self, chunks, on_next=None):
        self.chunks, self.on_next, self.closed = iter(chunks), on_next, False

    def __iter__(self):
        return self

    def __next__(self):
        if self.on_next:
            self.on_next()
        return next(self.chunks)

    def close(self):
        self.closed = True


# --- the loop ------------------------------------------------------------------------------------


def test_loop_closes_a_stream_it_leaves_early(repo):
    # mutation loop_no_stream_close: drop `stream.close()` in _read_turn's finally.
    # (ScriptedChat's streams are generators, which CPython closes on garbage collection,
    # so a check of ScriptedChat.closed cannot see a missing close; a HeldStream can.)
    streams = []

    def chat(messages, tools):
        streams.append(HeldStream([chunk("a"), chunk("b"), chunk("c", done=True)]))
        return streams[-1]

    events = agent_events(chat, RepoTools(repo), TASK)
    assert next(events)["type"] == MODEL_START
    assert next(events)["type"] == TEXT_DELTA
    events.close()  # what record_run.py does on Ctrl-C
    assert streams[0].closed


def test_deadline_stops_mid_stream_runs_no_tool_and_closes_the_stream(repo):
    # mutation deadline_ignored: `end = None` whatever the deadline.
    now = [0.0]

    def tick():
        now[0] += 1.0

    streams = []
    turn = [chunk(tool_calls=[call("run_tests")]), chunk("x"), chunk("y"), chunk(done=True)]

    def chat(messages, tools):
        streams.append(HeldStream(turn, on_next=tick))
        return streams[-1]

    events = list(agent_events(chat, RepoTools(repo), TASK, deadline=2.5, clock=lambda: now[0]))
    assert events[-1] == {"type": "stopped", "turn": 1, "reason": DEADLINE, "seconds": 3.0}
    assert [e for e in events if e["type"] == TOOL_START] == []
    assert len(streams) == 1 and streams[0].closed


# --- RepoTools -----------------------------------------------------------------------------------


def test_run_tests_leaves_no_cache_or_bytecode_in_the_copy(repo):
    # mutations no_dont_write_bytecode (drop PYTHONDONTWRITEBYTECODE) and wrong_pytest_cmd
    # (drop `-p no:cacheprovider`): the fixed command must leave the copy as it found it.
    RepoTools(repo).invoke("run_tests", {})
    assert list(repo.rglob("__pycache__")) == []
    assert not (repo / ".pytest_cache").exists()


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


def test_count_results_reads_only_pytests_closing_line():
    # mutation count_first_line: the first line that looks like a summary wins.
    output = "F....\nprinted by a test: 7 passed in 0.01s\n1 failed, 4 passed in 0.05s\n"
    assert count_results(output) == {"failed": 1, "passed": 4, "errors": 0}


# --- recording and replay -----------------------------------------------------------------------


def test_recording_with_a_bool_max_turns_is_refused(tmp_path, capsys):
    # mutation load_bool_ok: drop the `isinstance(..., bool)` check in load().
    outcome, _ = replay(altered(tmp_path, lambda r: r.update(max_turns=True)))
    assert outcome == CANNOT_REPLAY
    assert "field 'max_turns' has the wrong type" in capsys.readouterr().err


def test_source_hash_mismatch_is_refused(tmp_path, capsys):
    # mutation no_source_hash_check: check_sample compares only the test file.
    outcome, _ = replay(altered(tmp_path, lambda r: r.update(source_sha256="0" * 64)))
    assert outcome == CANNOT_REPLAY
    error = capsys.readouterr().err
    assert "sample_repo/path_rules.py is not the file this recording was made with" in error


def test_only_a_readable_copy_of_a_shipped_recording_counts_as_shipped(tmp_path):
    # replay.py trusts a shipped recording where nothing isolates the tests it runs; a path
    # it cannot read (gone, a folder) is never one, whatever recordings/SHA256SUMS lists
    mine = tmp_path / "mine.json"
    mine.write_bytes((RECORDINGS / "repair.json").read_bytes())
    assert shipped(mine) is True
    assert shipped(tmp_path / "gone.json") is False
    assert shipped(tmp_path) is False


def lab_copy(tmp_path, *folders):
    """A copy of the lab's modules (its *.py files and plumbing/), of what they read when
    they start (sample_repo/ and tasks/) and of `folders`: a lab whose recordings/ can be
    changed without touching this one's."""
    copy = tmp_path / "lab"
    for folder in dict.fromkeys(("plumbing", "sample_repo", "tasks", *folders)):
        shutil.copytree(LAB / folder, copy / folder, ignore=shutil.ignore_patterns("__pycache__"))
    for module in LAB.glob("*.py"):
        shutil.copy2(module, copy / module.name)
    return copy


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


def test_sha256sums_is_what_write_shipped_hashes_writes_for_the_shipped_recordings(tmp_path):
    # make_recordings.py rewrites recordings/SHA256SUMS with write_shipped_hashes(); without
    # the file no recording is shipped (an empty set, not an error), and the file it writes
    # is the lab's own, line for line
    lab = lab_copy(tmp_path, "recordings")
    (lab / "recordings" / "SHA256SUMS").unlink()
    script = (
        "from plumbing.recording import shipped_hashes, write_shipped_hashes\n"
        "print(shipped_hashes() == set())\n"
        "write_shipped_hashes()\n"
        "print(len(shipped_hashes()))\n"
    )
    finished = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=lab
    )
    assert finished.returncode == 0, finished.stderr
    shipped_now = sorted(RECORDINGS.rglob("*.json"))
    assert finished.stdout.split() == ["True", str(len(shipped_now))]
    written = (lab / "recordings" / "SHA256SUMS").read_text()
    assert written == (RECORDINGS / "SHA256SUMS").read_text()


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
    recording["model_calls"].append(copy.deepcopy(recording["model_calls"][-1]))
    save(tmp_path / "r.json", recording)
    finished = replay_in_child(tmp_path / "r.json")
    assert finished.returncode == EXIT_NO, finished.stdout + finished.stderr
    assert "Stop: interrupted after 1 model call, 0 tool calls" in finished.stdout
    assert "DIVERGED (1):\n  model calls: 2 recorded, 1 made\n" in finished.stdout


def test_a_cut_short_recording_holding_two_calls_past_its_cut_runs_no_tool_past_it(tmp_path):
    # At most the one request a run was waiting on is made after the cut: a second step
    # would run the edit of turn 3, which the recording never shows, and the verdict would
    # then pass on a change no event holds (it did, and the replay said "reproduced").
    recording = load(RECORDINGS / "repair.json")
    events = recording["events"]
    end = max(i for i, e in enumerate(events) if e["type"] == "tool_result" and e["turn"] == 2)
    recording["stop"] = {"type": "stopped", "turn": 2, "reason": "interrupted"}
    recording["events"] = [*events[: end + 1], recording["stop"]]
    recording["model_calls"] = recording["model_calls"][:4]  # turn 3 edits, turn 4 tests
    save(tmp_path / "r.json", recording)
    finished = replay_in_child(tmp_path / "r.json")
    assert finished.returncode == EXIT_NO, finished.stdout + finished.stderr
    assert "Independent verdict: failed" in finished.stdout
    assert "What the run changed" not in finished.stdout
    assert "  model calls: 4 recorded, 2 made\n" in finished.stdout


def test_a_stream_our_deadline_cut_is_saved_as_closed_unless_its_done_chunk_came(tmp_path):
    # The adapter raises DeadlineExceeded when our own clock cuts a stream: the call is
    # saved as "closed", as when the loop closes it; one whose done chunk came stays "done"
    late = [DeadlineExceeded("the deadline of 5 s has passed") for _ in range(2)]
    recorder = RecordingChat(ScriptedChat([[chunk("Read"), late[0]], [chunk(done=True), late[1]]]))
    for _ in range(2):
        with pytest.raises(DeadlineExceeded):
            list(recorder([], []))
    assert [call["ended"] for call in recorder.calls] == ["closed", "done"]


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
    # Unisolated: as root under bubblewrap the tests run as nobody, who cannot write them.
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


def test_model_call_without_an_end_is_refused(tmp_path, capsys):
    # mutation load_no_ended_check: load() does not check `ended`; the replay then fails
    # inside ReplayChat (KeyError -> model_error -> "diverged") instead of exit 2.
    outcome, _ = replay(altered(tmp_path, lambda r: r["model_calls"][0].pop("ended")))
    assert outcome == CANNOT_REPLAY
    assert "model_calls[0].ended' must say how the stream ended" in capsys.readouterr().err


def test_ctrl_c_during_the_final_verdict_may_leave_it_null_after_another_stop(tmp_path, fresh_runs):
    # The loop stopped as assistant_finished; Ctrl-C then cut the final verdict short.
    def cut_verdict(recording, interrupted):
        recording.update(final_tests=None, interrupted=interrupted)

    assert load(altered(tmp_path, lambda r: cut_verdict(r, True)))["final_tests"] is None
    with pytest.raises(RecordingError, match="'final_tests' may be null only"):
        load(altered(tmp_path, lambda r: cut_verdict(r, False)))


def test_altered_event_alone_is_a_divergence(tmp_path):
    # mutation no_event_cmp: replay.py skips event_divergence (tools and requests still match).
    def change(recording):
        recording["events"][-1]["reason"] = "max_turns"
        recording["stop"] = recording["events"][-1]  # kept consistent, or load refuses it

    outcome, output = replay(altered(tmp_path, change))
    calls = len(load(RECORDINGS / "repair.json")["model_calls"])  # the stop is in the last one
    assert outcome == DIVERGED
    assert (
        f'model call {calls}, stopped): reason: the recording says "max_turns", '
        'today\'s run did "assistant_finished"' in output
    )


@pytest.mark.parametrize("length", [160, 161])
def test_a_divergent_value_of_160_characters_is_shown_whole_and_a_longer_one_cut(tmp_path, length):
    text = "x" * (length - 2)  # as JSON, with its two quotes: `length` characters

    def change(recording):
        recording["events"][1]["text"] = text  # the first piece of thinking

    outcome, output = replay(altered(tmp_path, change))
    assert outcome == DIVERGED
    shown = f'"{text}"' if length <= 160 else f'"{text[:156]}...'
    assert f"text: the recording says {shown}, today's run did " in output


def test_missing_recorded_event_is_a_divergence(tmp_path):
    # mutation only_common_events: event_divergence ignores a difference in length.
    outcome, output = replay(altered(tmp_path, lambda r: r["events"].pop()))
    events = len(load(RECORDINGS / "repair.json")["events"])
    assert outcome == DIVERGED
    assert f"{events - 1} events recorded, {events} replayed" in output


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


def test_adapter_left_early_hangs_up_so_the_server_stops_sending():
    # What closing the stream is for: the server notices and stops generating.
    gate = threading.Event()
    lines = [chunk("a")] + [chunk("b")] * 500 + [chunk(done=True)]
    with OllamaTestServer([reply(*lines, gate=gate)]) as server:
        stream = LocalModel(host=server.host)([{"role": "user", "content": "hi"}], [])
        assert next(stream)["message"]["content"] == "a"
        stream.close()
        gate.set()  # the server now tries to send the other 501 lines
        wait_for(lambda: server.hung_up, seconds=5)
    assert server.hung_up == 1


def test_a_chunk_the_adapter_cannot_convert_hangs_up_at_once_not_at_garbage_collection():
    # An image that is not base64 passes the SDK's check of the chunk but fails when the
    # adapter converts it, in the adapter's own code, with the SDK's stream still open.
    # Its frame then lives on in the error's traceback (a cycle), so only the explicit
    # close ends the response at once; with the collector off, nothing else would.
    bad = chunk("x")
    bad["message"]["images"] = [{"value": "nope.png"}]
    gc.disable()
    try:
        with OllamaTestServer([reply(bad, drip=(" ", 0.02))]) as server:
            with pytest.raises(ModelError):
                list(LocalModel(host=server.host)([{"role": "user", "content": "hi"}], []))
            wait_for(lambda: server.hung_up, seconds=3)
            assert server.hung_up == 1
    finally:
        gc.enable()


def test_a_request_the_sdk_refuses_before_any_stream_is_a_model_error():
    # The SDK checks the messages before it opens a stream: there is nothing to close yet,
    # and its refusal reaches the loop as a ModelError naming the field, like any other.
    with OllamaTestServer([reply(chunk("never sent", done=True))]) as server:
        with pytest.raises(ModelError, match="role"):
            list(LocalModel(host=server.host)([{"content": "a message without a role"}], []))
        assert server.chat_bodies() == []


def test_a_host_name_that_cannot_be_encoded_is_an_ollama_it_cannot_reach():
    # "a..b" fails IDNA encoding in the socket's address lookup, before any packet leaves: a
    # bare UnicodeError, a ValueError, once called "a response the SDK could not read".
    with pytest.raises(ModelError) as refused:
        LocalModel(host="http://a..b:11434").describe()
    assert str(refused.value).startswith(
        "cannot reach Ollama at http://a..b:11434: is `ollama serve` running there? (encoding "
    )


# --- bugs the mutation pass found (fixed) -----------------------------------------------------


def tool_result(recording):
    return next(e for e in recording["events"] if e["type"] == "tool_result")


@pytest.mark.parametrize(
    "change",
    [
        lambda r: r.update(max_turns=0),
        lambda r: r.update(final_tests={}),
        lambda r: r.update(final_tests=None),  # only an interrupted run may skip them
        lambda r: r.update(events=[1, 2]),
        lambda r: tool_result(r).pop("name"),
        lambda r: tool_result(r).update(seconds="x"),
        lambda r: r["events"][-2].update(seconds="x"),
        lambda r: r["starting_tests"].update(output=5),
        lambda r: r["stop"].update(reason="max_turns"),  # disagrees with the last event
    ],
    ids=[
        "max_turns-0",
        "final_tests-without-exit_code",
        "final_tests-null-not-interrupted",
        "events-not-objects",
        "tool-event-without-name",
        "seconds-not-a-number",
        "model-done-seconds-not-a-number",
        "tests-output-not-text",
        "stop-not-the-last-event",
    ],
)
def test_mistyped_recording_is_refused_not_a_traceback(tmp_path, change, capsys):
    outcome, _ = replay(altered(tmp_path, change))
    assert outcome == CANNOT_REPLAY
    assert "field '" in capsys.readouterr().err


def test_tool_that_hits_an_os_error_is_answered_not_raised(repo):
    # Code the model wrote, run by run_tests, turns path_rules.py into a directory.
    turn_it_into_a_directory = (
        "import pathlib as _p\n_f = _p.Path(__file__); _f.unlink(); _f.mkdir()\n\n\n"
        "def python_sources("
    )
    edit = call("replace_text", old="def python_sources(", new=turn_it_into_a_directory)
    script = [
        [chunk(tool_calls=[edit, call("run_tests", index=1)], done=True)],
        [chunk(tool_calls=[call("read_file", path="path_rules.py")], done=True)],
        [chunk("done", done=True)],
    ]
    chat = ScriptedChat(script)
    events = list(agent_events(chat, RepoTools(repo), TASK))
    assert events[-1]["reason"] == "assistant_finished"
    assert "error" in json.loads(chat.requests[2][-1]["content"])


def test_a_model_error_without_text_is_saved_under_its_type_name(tmp_path):
    # mutation: recording.py's `str(error) or type(error).__name__` without the fallback
    # saved "" as the error, and the replay then raised an error that says nothing.
    script = [[chunk("Reading "), ConnectionResetError()]]
    output = tmp_path / "r.json"
    record_run.record_attempt(
        RecordingChat(ScriptedChat(script)), {"name": "scripted"}, output, 4, out=io.StringIO()
    )
    saved = load(output)
    assert saved["model_calls"][0]["ended"] == "error"
    assert saved["model_calls"][0]["error"] == "ConnectionResetError"


def test_local_model_without_a_host_reads_ollama_host_as_ollamas_clients_do(monkeypatch):
    # mutation: `host or default_host()` without the fallback gave base_url(None), a crash,
    # for a learner who makes LocalModel() in their own script (the CLIs always pass a host).
    monkeypatch.setenv("OLLAMA_HOST", "0.0.0.0")
    assert LocalModel().host == "http://0.0.0.0:11434"
    monkeypatch.delenv("OLLAMA_HOST")
    assert LocalModel().host == "http://127.0.0.1:11434"
    assert LocalModel(host="example.org:8000/x/").host == "http://example.org:8000/x"


def test_a_name_swapped_for_a_link_or_gone_at_open_is_refused_as_changed(tmp_path):
    # mutation: the errno guard in open_nofollow made `pass`: the race's OSError then
    # reached the tool as an internal error instead of "changed while it was read"
    from plumbing.confined_tree import CHANGED, OPEN_DIR, OPEN_FILE, Refused, open_nofollow

    (tmp_path / "file.txt").write_text("x")
    (tmp_path / "link").symlink_to("file.txt")
    folder = os.open(tmp_path, OPEN_DIR)
    try:
        for name, flags in (("link", OPEN_FILE), ("gone", OPEN_FILE), ("file.txt", OPEN_DIR)):
            with pytest.raises(Refused) as refused:
                open_nofollow(name, folder, flags)
            assert refused.value.why == CHANGED, name
        with pytest.raises(IsADirectoryError):  # any other error is raised as it is
            open_nofollow(".", folder, os.O_WRONLY)
        os.close(open_nofollow("file.txt", folder, OPEN_FILE))
    finally:
        os.close(folder)


def test_a_body_that_ends_cleanly_after_the_watchdog_fired_is_the_deadline(tmp_path):
    # mutation: the check after the loop dropped: a socket shut down by the watchdog can
    # read as a clean end of the body, and the cut turn then looked like a whole one
    body = [b'{"a": 1}\n']
    assert list(_LimitedStream(body, Deadline(), SimpleNamespace(fired=False))) == body
    with pytest.raises(DeadlineExceeded):
        list(_LimitedStream(body, Deadline(5), SimpleNamespace(fired=True)))


def test_an_integer_argument_of_exactly_max_int_bits_is_kept_one_more_is_its_text():
    # mutation: `bit_length() > MAX_INT_BITS` -> `>=` refused the largest integer allowed
    from plumbing.text_calls import MAX_INT_BITS, text_tool_call

    for bits, kept in ((MAX_INT_BITS, True), (MAX_INT_BITS + 1, False)):
        number = 2 ** (bits - 1)
        text = f"```tool_code\nread_file(path={number})\n```"
        found = text_tool_call(text, RepoTools.schemas)
        assert (found["arguments"]["path"] == number) is kept, bits
        assert kept or found["arguments"]["path"] == str(number)  # kept as its source text


def test_a_context_window_of_one_token_is_a_window():
    # mutation: `value > 0` -> `value > 1` dropped the smallest window there is
    from plumbing.timeline import context_window

    assert context_window({"options": {"num_ctx": 1}}) == (1, "num_ctx")
    assert context_window({"options": {"num_ctx": 0}}) is None
    assert context_window({"server_model": {"max_model_len": 1}}) == (1, "max_model_len")


@pytest.mark.parametrize("argument, value", [("old", 3), ("new", 3), ("old", "parts")])
def test_the_page_of_an_edit_it_cannot_redo_shows_no_diff(tmp_path, argument, value):
    # mutation: the `isinstance(old, str) and isinstance(new, str)` check weakened to one
    # side tried the edit with 3: a TypeError, and the page could not be drawn at all;
    # without `source.count(old) != 1`, an `old` found 4 times drew a diff of the first
    from plumbing.page import recording_page

    def change(recording):
        start = next(e for e in recording["events"] if e.get("name") == "replace_text")
        start["arguments"][argument] = value

    page = recording_page(load(altered(tmp_path, change)), "odd")
    assert "The diff of this edit:" not in page and "What the run changed" in page
    assert "The diff of this edit:" in recording_page(load(RECORDINGS / "repair.json"), "r")


@pytest.mark.parametrize("arguments", [["old", "new"], "old -> new"])
def test_the_page_of_an_edit_whose_arguments_are_not_an_object_shows_no_diff(tmp_path, arguments):
    # load() keeps a tool_start's arguments whatever their type: the page cannot redo an
    # edit from a list or a text, so it draws the call without its diff, not no page at all
    from plumbing.page import recording_page

    def change(recording):
        start = next(e for e in recording["events"] if e.get("name") == "replace_text")
        start["arguments"] = arguments

    page = recording_page(load(altered(tmp_path, change)), "odd")
    assert "The diff of this edit:" not in page and "What the run changed" in page


def test_the_page_of_requests_said_to_hold_no_message_is_drawn(tmp_path):
    # mutation: `max(...) or 1` without its fallback divided by zero: load() accepts a
    # request_length of 0, and then every bar of the growth chart is 0 characters long
    from plumbing.page import recording_page

    def change(recording):
        for saved in recording["model_calls"]:
            saved["request_length"] = 0

    page = recording_page(load(altered(tmp_path, change)), "empty requests")
    assert "<svg" in page and "Independent verdict" in page


def test_a_turn_cut_off_in_no_measurable_time_still_says_its_seconds(repo):
    # mutation: `self.seconds is not None` read as truthiness dropped "seconds": 0.0, so a
    # recording said nothing of how long the cut-off turn took
    events = list(agent_events(lambda m, t: iter([chunk("half")]), RepoTools(repo), TASK,
                               clock=lambda: 7.0))  # fmt: skip
    assert events[-1] == {
        "type": "stopped", "turn": 1, "reason": INCOMPLETE_MODEL_TURN, "seconds": 0.0
    }  # fmt: skip


def test_a_written_call_is_found_after_a_name_key_at_the_very_start_of_the_text():
    # mutation: `while at >= 0` -> `at > 0` (or `>= 1`) stopped collecting "name" keys when
    # the first was at position 0, and then no call after it was found
    from plumbing.text_calls import text_tool_call

    call_text = '{"name": "read_file", "arguments": {"path": "path_rules.py"}}'
    for text in ('"name" comes first: ' + call_text, call_text):
        found = text_tool_call(text, RepoTools.schemas)
        assert found == {"name": "read_file", "arguments": {"path": "path_rules.py"}}, text


def test_a_recording_is_saved_as_readable_utf8_even_when_it_holds_a_non_finite_number(tmp_path):
    # mutation: `ensure_ascii=False` -> True (either json.dumps) saved "é" as "\u00e9": it
    # loads back the same, but the file is no longer text a learner can read or diff
    from plumbing.recording import save

    for extra in ({}, {"odd": float("nan")}):
        path = tmp_path / "r.json"
        save(path, {"text": "é ✓ 漢", **extra})
        raw = path.read_bytes()
        assert "é ✓ 漢".encode() in raw and b"\\u" not in raw, extra
        # indented by 2, as the shipped recordings (whose hashes SHA256SUMS holds) are
        assert raw.startswith(b'{\n  "text": "'), raw[:20]
        strict = json.loads(raw, parse_constant=lambda c: pytest.fail(f"{c} is not JSON"))
        assert strict.get("non_finite_numbers", []) == [{"at": k, "text": "NaN"} for k in extra]


def test_arrival_times_are_kept_to_a_tenth_of_a_millisecond():
    # mutation: `round(..., 4)` -> 5 kept noise the page cannot draw and the file must carry
    def slow(messages, tools):
        for n in range(12):
            time.sleep(0.0013)
            yield chunk(str(n))

    chat = RecordingChat(slow)
    list(chat([{"role": "user", "content": "x"}], []))
    arrived = chat.calls[0]["arrived"]
    assert len(arrived) == 12 and arrived == sorted(arrived)
    # 5 decimals leaves a fifth one on about 9 of 10 values: on all 12, about once in 10^12
    assert all(a == round(a, 4) for a in arrived), arrived


def test_a_chat_that_empties_its_done_chunk_cannot_slip_a_call_in_after_the_end(repo):
    # mutation: `if final is not None` read as truthiness let a chat that empties the
    # chunk it yielded (the loop holds that very dict) send a call after the end, and it ran
    def chat(messages, tools):
        done = chunk("a", done=True)
        yield done
        done.clear()
        yield chunk(tool_calls=[call("run_tests")], done=True)

    events = list(agent_events(chat, RepoTools(repo), TASK))
    assert [e["type"] for e in events if e["type"] == TOOL_START] == []
    assert events[-1]["reason"] == MODEL_ERROR and "after" in events[-1]["error"], events[-1]


def test_a_model_name_of_no_usable_character_still_names_its_recording():
    # mutation: the `or "model"` fallback dropped named the file "-TIMESTAMP.json", which
    # replay.py would take for an option
    assert default_output("???").name.startswith("model-")
    assert default_output("qwen3:0.6b").name.startswith("qwen3-0.6b-")


def test_read_up_to_reads_exactly_its_limit_of_a_longer_file(tmp_path):
    # mutation: a size counted from 1 read one byte less than the limit
    from plumbing.confined_tree import read_up_to

    (tmp_path / "f").write_bytes(b"abcdef")
    fd = os.open(tmp_path / "f", os.O_RDONLY)
    try:
        assert read_up_to(fd, 4) == b"abcd" and read_up_to(fd, 4) == b"ef"
    finally:
        os.close(fd)


def test_a_stream_whose_chunks_all_arrived_at_once_is_drawn_in_their_order():
    # mutations: `max(arrived) or 0.001` without its fallback divided by zero; on the time
    # scale both marks fell at the start, one on the other
    from plumbing.page import stream_chart

    chart = stream_chart({"arrived": [0.0, 0.0], "chunks": [chunk("a"), chunk(done=True)]})
    assert "first chunk after 0.000 s, the last after 0.000 s" in chart  # what happened
    assert chart.count('x1="10" x2="10"') == 1 and chart.count('x1="690" x2="690"') == 1


def test_a_result_of_up_to_1200_characters_is_shown_open_a_longer_one_folded():
    # mutations: `len(shown) <= FOLD_AFTER` -> `<`, and FOLD_AFTER 1200 -> 1201 (the figure
    # docs/recordings.md gives)
    from plumbing.page import result_block
    from plumbing.transcript import message_lines

    def shown(n):
        content = json.dumps({"path": "path_rules.py", "text": "x" * n})
        return len("\n".join(message_lines({"role": "tool", "content": content})[1:]))

    n = next(n for n in range(2000) if shown(n) == 1200)
    assert shown(n + 1) == 1201
    opened = result_block({"result": {"path": "path_rules.py", "text": "x" * n}})
    folded = result_block({"result": {"path": "path_rules.py", "text": "x" * (n + 1)}})
    assert opened.startswith("<p>Result:</p>") and folded.startswith("<details>")


def test_a_test_report_of_exactly_the_limit_is_read_one_byte_more_is_refused(tmp_path):
    # mutation: `len(data) > REPORT_LIMIT` -> `>=` refused a report of exactly the limit
    from plumbing.pytest_report import REPORT_LIMIT, BadReport, read_report

    report = b'<testsuites><testsuite><testcase classname="t" name="a"/></testsuite></testsuites>'
    path = tmp_path / "report.xml"
    path.write_bytes(report + b" " * (REPORT_LIMIT - len(report)))
    assert read_report(path) == {"t.a": "passed"}
    path.write_bytes(report + b" " * (REPORT_LIMIT + 1 - len(report)))
    with pytest.raises(BadReport, match="larger than"):
        read_report(path)


def test_a_body_that_fails_once_the_deadline_passed_is_the_deadline_not_a_wire_error():
    # mutation: `network.fired or deadline.expired(...)` without its second half showed a
    # connection reset at the deadline (before the watchdog fired) as a wire error
    def cut():
        yield b'{"a": 1}\n'
        raise ConnectionResetError("reset by peer")

    now = [0.0]
    deadline = Deadline(5, clock=lambda: now[0])
    with pytest.raises(ConnectionResetError):  # in time: the error is the wire's
        list(_LimitedStream(cut(), deadline, SimpleNamespace(fired=False)))
    now[0] = 5.0
    with pytest.raises(DeadlineExceeded):
        list(_LimitedStream(cut(), deadline, SimpleNamespace(fired=False)))


def test_a_socket_call_that_fails_after_the_watchdog_fired_is_the_deadline():
    # mutation: the `if self.fired` check dropped showed the watchdog's own shutdown of the
    # socket as the server's failure
    def broken(*args):
        raise OSError("Bad file descriptor")

    stream = _WatchedStream(SimpleNamespace(read=broken), deadline_of=lambda: Deadline(5))
    stream.deadline = Deadline(5)
    with pytest.raises(OSError, match="Bad file descriptor"):  # no watchdog: as it is
        stream.read(10)
    stream.watchdog = SimpleNamespace(fired=True, cancel=lambda: None)
    with pytest.raises(DeadlineExceeded):
        stream.read(10)


def test_a_page_draws_chunks_that_are_not_objects_as_text(tmp_path):
    # mutations: _kind's guards for an item or a message that is not an object dropped (an
    # AttributeError: no page at all), or its "text" made None (a mark coloured var(--None));
    # load() keeps such chunks, as a malformed stream's recording holds them
    from plumbing.page import recording_page

    def change(recording):
        call = recording["model_calls"][0]
        call["chunks"][0] = {"message": "hi"}
        call["chunks"].insert(1, "junk")
        call["arrived"].insert(1, call["arrived"][0])

    page = recording_page(load(altered(tmp_path, change)), "odd chunks")
    marks = re.findall(r'y1="8" y2="34" stroke="var\(--(\w+)\)"', page)
    assert marks[:2] == ["text", "text"] and "var(--None)" not in page


def test_a_request_that_adds_no_message_says_so_on_its_page(tmp_path):
    # mutation: `new_text or "(nothing new)"` without its fallback drew an empty block
    from plumbing.page import recording_page

    def change(recording):
        calls = recording["model_calls"]
        calls[1]["request_length"] = calls[0]["request_length"]

    page = recording_page(load(altered(tmp_path, change)), "no new message")
    assert 'Request 2: 2 messages, 0 new</h3>\n<pre class="">(nothing new)</pre>' in page


@pytest.mark.parametrize(
    "calls, note",
    [(100, ""), (101, "... and 1 more calls of this turn, not shown (a page shows 100 a turn)")],
    ids=["100", "101"],
)
def test_a_page_draws_100_calls_of_a_turn_and_counts_the_rest(tmp_path, calls, note):
    # mutations: the cap's guard dropped, or its closing line made `pass`, drew all 101 or
    # left the 101st unsaid; the note's `shown > CALLS_SHOWN` -> `>=` said "... and 0 more"
    # of exactly 100; the loop caps a turn at 32 calls, a hand-made file need not
    from plumbing.page import recording_page

    def change(recording):
        events = recording["events"]
        at = next(i for i, e in enumerate(events) if e["type"] == TOOL_START)
        start, result = events[at], events[at + 1]
        more = [dict(e, index=n) for n in range(1, calls) for e in (start, result)]
        events[at + 2 : at + 2] = more

    page = recording_page(load(altered(tmp_path, change)), f"{calls} calls")
    turn_1 = page.split('id="turn-1"')[1].split('id="turn-2"')[0]
    assert turn_1.count("<h3>Call ") == 100 and "<h3>Call 101:" not in turn_1
    assert ("more calls of this turn" in turn_1) == bool(note) and note in turn_1


def test_a_series_page_shows_a_count_of_0_as_0_and_only_a_missing_one_as_n_a():
    # mutation: `"n/a" if v is None` read as truthiness showed 0 model calls and 0 tokens
    # (an attempt cut off before its first answer) as "n/a"
    from plumbing.outcomes import Outcome
    from plumbing.page import series_page

    cut = Outcome(False, True, "interrupted", 0, 0, 0, None, 1.5)
    page = series_page([("live · max_turns 12", [("a-1.html", cut)])])
    cells = re.findall(r"<td>([^<]*)</td>", page.split("a-1</a>")[1])
    assert cells == ["interrupted", "0", "1.5", "0", "n/a"]


def test_the_stop_of_a_turn_cut_off_in_no_measurable_time_says_0_00_s():
    # mutation: `stop.get("seconds") is not None` read as truthiness dropped the line
    from plumbing.page import stop_block

    block = stop_block({"type": "stopped", "turn": 1, "reason": "deadline", "seconds": 0.0})
    assert "the turn it cut off took 0.00 s" in block
    assert "took" not in stop_block({"type": "stopped", "turn": 1, "reason": "deadline"})


def test_a_malformed_answer_with_one_problem_is_named_without_a_count_of_more():
    # mutation: `len(problems) > 1` -> `>=` added "(and 0 more problems)" to the one line
    import ollama
    import pydantic

    from local_model import _one_line

    for bad, line in (
        ({"model_info": {}, "capabilities": 5}, "capabilities: Input should be a valid list"),
        ({"capabilities": 5}, "model_info: Field required (and 1 more problems)"),
    ):
        with pytest.raises(pydantic.ValidationError) as error:
            ollama.ShowResponse.model_validate(bad)
        assert _one_line(error.value) == line


def test_walking_a_link_whose_target_climbs_with_dotdot_leaks_no_descriptor(tmp_path):
    # mutation: the folder's `os.close` before reopening at ".." removed: one descriptor
    # lost per "..", and a long session of reads through such a link runs out of them; the
    # same for each folder the reopen from the root passes on its way down (a/c/up's "..")
    from plumbing.confined_tree import Tree

    (tmp_path / "a" / "c").mkdir(parents=True)
    (tmp_path / "b.txt").write_text("x")
    (tmp_path / "a" / "up").symlink_to("../b.txt")
    (tmp_path / "a" / "c" / "up").symlink_to("../../b.txt")  # reopens a/ from the root
    root_fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        tree = Tree(tmp_path.resolve(), root_fd)
        before = open_under(tmp_path)
        for parts in [["a", "up"], ["a", "c", "up"]] * 20:
            fd, real, _info = tree.open(parts)
            os.close(fd)
        assert real == ["b.txt"] and open_under(tmp_path) == before
    finally:
        os.close(root_fd)


def test_a_closed_connection_that_never_sent_a_request_closes_quietly():
    # a connection the pool opened but never used has no watchdog to cancel: disarm must
    # check for one (the watchdog's own mutants are the next test's)
    closed = []
    inner = SimpleNamespace(close=lambda: closed.append(True))
    _WatchedStream(inner, deadline_of=lambda: Deadline(5)).close()
    assert closed == [True]


def test_an_outcome_is_a_value_it_cannot_be_changed_and_can_be_a_key():
    # mutation: `@dataclass(frozen=True)` -> False made outcomes changeable in place and
    # unhashable: a summary could then alter the outcome another display reads
    import dataclasses

    from plumbing.outcomes import Outcome

    outcome = Outcome(True, False, "assistant_finished", 3, 2, 900, 120, 4.2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        outcome.passed = False
    assert {outcome: "a"}[Outcome(True, False, "assistant_finished", 3, 2, 900, 120, 4.2)]


def test_a_model_turn_recorded_without_its_seconds_counts_as_0_in_the_timeline():
    # mutation: `event.get("seconds", 0.0)` -> 1.0 made up a second for a turn whose
    # recording (load() accepts it) does not say how long it took
    from plumbing.timeline import timeline

    events = [
        {"type": "model_start", "turn": 1},
        {"type": "model_done", "turn": 1, "message": {"role": "assistant", "content": "hi"}},
    ]
    assert "total   model 0.00s · tools 0.00s" in timeline(events, width=80)


def test_a_connection_back_in_the_pool_is_not_shut_down_when_the_deadline_passes():
    # mutation: disarm's `if self.watchdog is not None` made never true: the watchdog kept
    # running after the response, and at the deadline shut down a connection the pool had
    # taken back for the next request
    shut = threading.Event()
    sock = SimpleNamespace(shutdown=lambda how: shut.set())
    inner = SimpleNamespace(get_extra_info=lambda name: sock, close=lambda: None)
    stream = _WatchedStream(inner, deadline_of=lambda: Deadline(0.2))
    stream.arm()  # a request starts
    stream.disarm()  # the response is over
    assert not shut.wait(1.0)  # five times the deadline: the watchdog is gone
    stream.arm()  # the next request, with a deadline of its own, is still watched
    assert shut.wait(5.0) and stream.fired


def test_a_connection_upgraded_to_tls_is_watched_like_a_plain_one():
    # https: the TLS stream the handshake gives back is wrapped too, so the request it then
    # carries arms a watchdog on the TLS socket, which shuts it down at the deadline
    shut, written = threading.Event(), []
    sock = SimpleNamespace(shutdown=lambda how: shut.set())
    tls = SimpleNamespace(
        get_extra_info=lambda name: sock,
        write=lambda buffer, timeout: written.append(buffer),
        close=lambda: None,
    )
    plain = SimpleNamespace(start_tls=lambda context, server_hostname, timeout: tls)
    stream = _WatchedStream(plain, deadline_of=lambda: Deadline(0.2)).start_tls(None)
    stream.write(b"POST /api/chat")
    assert written == [b"POST /api/chat"]
    assert shut.wait(5.0) and stream.fired
    stream.close()
