"""Every limit holds whatever the server or the model does: deadline, line cap, call cap.

Hostile servers are the stand-ins (ollama_test_server.py, openai_test_server.py) on
127.0.0.1, scripted to stall after one chunk, trickle bytes that never end a line, send
keep-alive comments forever, or one enormous line, and a raw socket that trickles the
response's headers; hostile models are scripted turns. Each
timing test is bounded by the limits under test, with a wide margin: the deadline is a
second or two, the timeout it must beat is 30 s, and the test only asserts that the run
ended with reason `deadline` well before the timeout could have ended it.
"""

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from agent_loop import (
    AFTER_THE_END,
    ASSISTANT_FINISHED,
    DEADLINE,
    MODEL_DONE,
    MODEL_ERROR,
    MODEL_START,
    STOPPED,
    TASK,
    TOO_MANY_CALLS,
    TOOL_RESULT,
    TOOL_START,
    agent_events,
)
from local_model import LocalModel, ModelError
from openai_model import OpenAICompatibleModel
from plumbing import readonly_tools
from plumbing.confined_tree import Tree
from plumbing.limits import MAX_LINE_BYTES, Deadline, DeadlineExceeded, Watchdog
from plumbing.ollama_transport import _WatchedBackend
from plumbing.readonly_tools import SEARCH_SECONDS
from plumbing.recording import load
from plumbing.wire_errors import CONNECT_TIMEOUT
from replay import REPRODUCED, replay_one
from repo_tools import RepoTools
from tests.helpers import record, sigint_default
from tests.ollama_test_server import OllamaTestServer, call, chunk
from tests.ollama_test_server import reply as ollama_reply
from tests.openai_test_server import (
    TEST_MODEL,
    OpenAITestServer,
    content,
    finish,
    tool_call,
)
from tests.openai_test_server import reply as openai_reply
from tests.scripted_model import ScriptedChat
from tests.test_fuzz import CountingTools

# Most of these tests wait for a deadline: conftest.py spreads them over the run, so that
# the workers never all wait at once.
pytestmark = pytest.mark.waits

HERE = Path(__file__).resolve().parent.parent
STALL = 30.0  # how long a hostile server holds out; also the --timeout the deadline must beat


def run_with(chat_for, script, repo, seconds=1.0):
    """Run the loop over `script` with a `seconds` deadline shared by adapter and loop.

    Returns (events, elapsed seconds). `chat_for(deadline)` makes the adapter.
    """
    deadline = Deadline(seconds)
    chat = chat_for(deadline)
    started = time.monotonic()
    events = list(agent_events(chat, RepoTools(repo, deadline=deadline), TASK, deadline=deadline))
    return events, time.monotonic() - started


def assert_stopped_by_the_deadline(events, elapsed):
    assert events[-1]["type"] == STOPPED
    assert events[-1]["reason"] == DEADLINE, events[-1]
    # A wide margin: the deadline is 1 s, the timeout that used to end these runs is 30 s.
    assert elapsed < STALL / 2
    # The turn the deadline cut says how long it ran: never more than the whole run.
    assert 0 <= events[-1].get("seconds", 0) <= elapsed, events[-1]


def test_a_deadline_of_0_seconds_has_already_passed_not_no_deadline(repo):
    # 0 is a budget used up before the first turn; only None means no deadline.
    chat = ScriptedChat([[chunk("Done.", done=True)]])
    events = list(agent_events(chat, RepoTools(repo), TASK, deadline=0))
    assert [(e["type"], e.get("reason")) for e in events] == [(STOPPED, DEADLINE)]
    assert chat.requests == []


def ollama(server):
    return lambda deadline: LocalModel(host=server.host, timeout=STALL, deadline=deadline)


def openai(server):
    return lambda deadline: OpenAICompatibleModel(
        TEST_MODEL, server.base_url, timeout=STALL, deadline=deadline
    )


# --- the deadline caps every wait, on both wires ------------------------------------------------


def test_ollama_stall_after_one_chunk_stops_at_the_deadline_not_the_timeout(repo):
    stalled = ollama_reply(chunk("Let me"), chunk(done=True), pause_after_first=STALL)
    with OllamaTestServer([stalled]) as server:
        events, elapsed = run_with(ollama(server), None, repo)
    assert_stopped_by_the_deadline(events, elapsed)


def test_ollama_trickle_that_never_ends_a_line_cannot_stretch_the_deadline(repo):
    trickle = ollama_reply(chunk("Let me"), drip=(b"x", 0.2))
    with OllamaTestServer([trickle]) as server:
        events, elapsed = run_with(ollama(server), None, repo)
    assert_stopped_by_the_deadline(events, elapsed)


def test_ollama_silence_before_the_first_byte_stops_at_the_deadline(repo):
    # The server reads the prompt and sends nothing, not even its headers.
    silent = ollama_reply(chunk("late"), chunk(done=True), pause_before=STALL)
    with OllamaTestServer([silent]) as server:
        events, elapsed = run_with(ollama(server), None, repo)
    assert_stopped_by_the_deadline(events, elapsed)


def test_ollama_server_that_never_accepts_the_connection_stops_at_the_deadline(repo):
    # The watchdog starts with the request's first byte; the connect before it is held to
    # the deadline by its own timeout, capped like every other wait (CONNECT_TIMEOUT is 10 s).
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        queued = []
        while True:  # fill the accept queue (nobody accepts): the kernel drops later SYNs
            probe = socket.socket()
            probe.settimeout(0.5)
            try:
                probe.connect(listener.getsockname())
            except TimeoutError:
                probe.close()
                break
            queued.append(probe)
        host = "http://{}:{}".format(*listener.getsockname())
        model = lambda deadline: LocalModel(host=host, timeout=STALL, deadline=deadline)  # noqa: E731
        events, elapsed = run_with(model, None, repo)
        for probe in queued:
            probe.close()
    assert_stopped_by_the_deadline(events, elapsed)
    assert elapsed < CONNECT_TIMEOUT / 2


def test_ollama_read_timeout_of_0_seconds_still_waits_for_the_server(repo):
    # subtle: a socket timeout of 0 means non-blocking, so a read would fail at once as a
    # cut connection; every wait gets the same floor (1 ms) as one the deadline capped, and
    # a server that sends nothing is reported as stalled.
    silent = ollama_reply(chunk("late"), chunk(done=True), pause_before=STALL)
    with OllamaTestServer([silent]) as server:
        chat = LocalModel(host=server.host, timeout=0)
        with pytest.raises(ModelError, match="sent nothing for 0 s"):
            list(chat([{"role": "user", "content": "hi"}], []))


def test_openai_stall_after_one_event_stops_at_the_deadline_not_the_timeout(repo):
    stalled = openai_reply(content("Let me"), finish(), pause_after_first=STALL)
    with OpenAITestServer([stalled]) as server:
        events, elapsed = run_with(openai(server), None, repo)
    assert_stopped_by_the_deadline(events, elapsed)


def test_openai_keep_alive_comments_cannot_stretch_the_deadline(repo):
    comments = openai_reply(content("Let me"), drip=(": keep-alive\n\n", 0.2))
    with OpenAITestServer([comments]) as server:
        events, elapsed = run_with(openai(server), None, repo)
    assert_stopped_by_the_deadline(events, elapsed)


def test_openai_trickle_of_a_partial_line_cannot_stretch_the_deadline(repo):
    trickle = openai_reply(content("Let me"), drip=("x", 0.2))
    with OpenAITestServer([trickle]) as server:
        events, elapsed = run_with(openai(server), None, repo)
    assert_stopped_by_the_deadline(events, elapsed)


class HeaderTrickler:
    """A raw server on 127.0.0.1 that reads a request, then sends its status line and a
    header one byte every 0.2 s, never ending the headers (for STALL seconds at most).

    `first` (bytes of a whole NDJSON body): answer the first request with it, keeping the
    connection open, and trickle the answer to the next request on that same connection.
    http.server (the stand-ins) writes headers whole, so this one is a plain socket.
    `hung_up` is set when the client closes the connection while bytes still trickle.
    """

    def __init__(self, first=None):
        self.first = first
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.host = f"127.0.0.1:{self.listener.getsockname()[1]}"
        self.hung_up = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.listener.close()
        self.thread.join(STALL)

    def _serve(self):
        connection, _ = self.listener.accept()
        self.listener.close()  # one connection: a request on a new one would be refused
        with connection:
            if self.first is not None:
                self._read_request(connection)
                head = "HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\n"
                head += f"Content-Length: {len(self.first)}\r\n\r\n"
                connection.sendall(head.encode() + self.first)
            self._read_request(connection)
            trickle = b"HTTP/1.1 200 OK\r\nX-Trickle: " + b"a" * int(STALL / 0.2)
            connection.settimeout(0.2)  # the pace: wait for the client to hang up, then a byte
            for byte in trickle:
                try:
                    if connection.recv(1) == b"":
                        self.hung_up.set()
                        return
                except TimeoutError:
                    pass
                except OSError:  # reset: the client hung up too
                    self.hung_up.set()
                    return
                connection.sendall(bytes([byte]))

    @staticmethod
    def _read_request(connection):
        request = b""
        while b"\r\n\r\n" not in request:
            request += connection.recv(65536)
        head, _, body = request.partition(b"\r\n\r\n")
        length = next(
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        while len(body) < length:
            body += connection.recv(65536)


def test_openai_body_without_framing_ended_by_the_watchdog_is_the_deadline(repo):
    # A body with neither a length nor chunks ends when the connection does, so the
    # watchdog's shutdown reads as a clean end: the adapter must still report the deadline,
    # not a turn the server left unfinished. subtle: the deadline's clock never moves, so
    # each read may wait its full second and only the watchdog's (real) timer ends the drip.
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
    first = f"data: {json.dumps(content('Let me'))}\n\n".encode()

    def serve(listener):
        connection, _ = listener.accept()
        with connection:
            HeaderTrickler._read_request(connection)
            connection.sendall(head + first)
            with contextlib.suppress(OSError):  # until the client hangs up
                for _ in range(int(STALL / 0.2)):
                    connection.sendall(b": still here\n\n")
                    time.sleep(0.2)

    with socket.create_server(("127.0.0.1", 0)) as listener:
        server = threading.Thread(target=serve, args=(listener,), daemon=True)
        server.start()
        deadline = Deadline(1.0, clock=lambda: 0.0)
        base_url = "http://{}:{}/v1".format(*listener.getsockname())
        chat = OpenAICompatibleModel(TEST_MODEL, base_url, timeout=STALL, deadline=deadline)
        events = list(agent_events(chat, RepoTools(repo), TASK, deadline=deadline))
        server.join(STALL)
    assert events[-1]["reason"] == DEADLINE, events[-1]


def test_ollama_trickle_of_the_headers_cannot_stretch_the_deadline(repo):
    # subtle: the per-read timeout restarts with every byte; only the deadline ends this.
    with HeaderTrickler() as server:
        events, elapsed = run_with(ollama(server), None, repo)
        assert_stopped_by_the_deadline(events, elapsed)
        assert server.hung_up.wait(STALL)  # the client let go, not the server


def test_ollama_trickle_of_the_headers_on_a_reused_connection_cannot_stretch_the_deadline(repo):
    # The first turn asks for a tool over a keep-alive connection; the second request goes
    # out on that same connection (no new connect), and its headers trickle.
    turn = chunk(tool_calls=[call("read_file", path="README.md")], done=True)
    with HeaderTrickler(first=json.dumps(turn).encode() + b"\n") as server:
        events, elapsed = run_with(ollama(server), None, repo, seconds=2.0)
        assert_stopped_by_the_deadline(events, elapsed)
        assert server.hung_up.wait(STALL)  # the client let go, not the server
    assert [e["type"] for e in events].count(MODEL_START) == 2  # the second turn was cut


def test_openai_trickle_of_the_headers_cannot_stretch_the_deadline(repo):
    with HeaderTrickler() as server:
        model = lambda deadline: OpenAICompatibleModel(  # noqa: E731
            TEST_MODEL, f"http://{server.host}/v1", timeout=STALL, deadline=deadline
        )
        events, elapsed = run_with(model, None, repo)
        assert_stopped_by_the_deadline(events, elapsed)
        assert server.hung_up.wait(STALL)  # the client let go, not the server


def test_a_test_run_never_outlasts_the_deadline(repo):
    # Collection now takes 30 s; run_tests would wait its full 15 s without the deadline.
    source = repo / "path_rules.py"
    source.write_text("import time\ntime.sleep(30)\n" + source.read_text())
    chat = ScriptedChat([[chunk(tool_calls=[call("run_tests")], done=True)]])
    events, elapsed = run_with(lambda deadline: chat, None, repo)
    assert_stopped_by_the_deadline(events, elapsed)
    assert [e["type"] for e in events].count(TOOL_START) == 1
    assert [e for e in events if e["type"] == TOOL_RESULT] == []  # cut short: not kept


def test_a_turn_asking_for_many_test_runs_stops_at_the_deadline(repo):
    many = [call("run_tests", index=i) for i in range(40)]
    chat = ScriptedChat([[chunk(tool_calls=many, done=True)]])
    events, elapsed = run_with(lambda deadline: chat, None, repo, seconds=2.0)
    assert_stopped_by_the_deadline(events, elapsed)
    assert sum(e["type"] == TOOL_RESULT for e in events) < 40


def test_a_turn_complete_when_time_runs_out_is_kept_and_runs_no_tool(repo):
    # The done chunk arrives, then the server holds the stream open past the deadline.
    tools = [call("run_tests")]
    held = ollama_reply(chunk(tool_calls=tools, done=True), pause_after_first=STALL)
    with OllamaTestServer([held]) as server:
        events, elapsed = run_with(ollama(server), None, repo)
    assert_stopped_by_the_deadline(events, elapsed)
    done = [e for e in events if e["type"] == MODEL_DONE]
    assert len(done) == 1 and done[0]["message"]["tool_calls"][0]["function"]["name"] == "run_tests"
    assert [e for e in events if e["type"] == TOOL_START] == []


def test_openai_turn_complete_before_the_deadline_cut_is_kept_and_runs_no_tool(repo):
    events_ = [tool_call(0, "{}", name="run_tests"), finish("tool_calls")]
    # The finish event, then no [DONE] and no end: the deadline cuts the wait for it.
    held = openai_reply(*events_, drip=(": still here\n\n", 0.2))
    with OpenAITestServer([held]) as server:
        events, elapsed = run_with(openai(server), None, repo)
    assert_stopped_by_the_deadline(events, elapsed)
    assert sum(e["type"] == MODEL_DONE for e in events) == 1
    assert [e for e in events if e["type"] == TOOL_START] == []


# --- the deadline through the real recorder, then replayed (issue 12's real-server shapes) -------


def test_recording_of_a_model_call_cut_before_any_event_replays_the_same_requests(tmp_path):
    # llama-server on a CPU sends nothing while it reads the prompt; the deadline lands then.
    output = tmp_path / "cut-before-any-event.json"
    read = openai_reply(tool_call(0, '{"path": "path_rules.py"}', name="read_file"), finish())
    silent = openai_reply(": reading the prompt\n\n", content("late"), pause_after_first=STALL)
    with OpenAITestServer([read, silent]) as server:
        options = ["--api", "openai", "--model", TEST_MODEL, "--host", server.base_url]
        finished = record(*options, "--deadline", 3, "--timeout", STALL, "--output", output)
    assert finished.returncode == 1, finished.stdout + finished.stderr
    recording = load(output)
    assert recording["stop"]["reason"] == DEADLINE
    assert recording["model_calls"][1]["events"] == []
    assert recording["model_calls"][1]["ended"] == "closed"
    assert recording["events"][-2]["type"] == MODEL_START
    assert replay_one(output, out=open(os.devnull, "w")) == REPRODUCED


def test_recording_of_a_deadline_on_the_completing_event_keeps_the_turn_and_replays(tmp_path):
    output = tmp_path / "deadline-on-completing-event.json"
    turn = [tool_call(0, '{"path": "path_rules.py"}', name="read_file"), finish("tool_calls")]
    held = openai_reply(*turn, drip=(": still here\n\n", 0.2))
    with OpenAITestServer([held]) as server:
        options = ["--api", "openai", "--model", TEST_MODEL, "--host", server.base_url]
        finished = record(*options, "--deadline", 2, "--timeout", STALL, "--output", output)
    assert finished.returncode == 1, finished.stdout + finished.stderr
    recording = load(output)
    kinds = [e["type"] for e in recording["events"]]
    assert kinds == [MODEL_START, MODEL_DONE, STOPPED]
    assert recording["stop"]["reason"] == DEADLINE
    assert replay_one(output, out=open(os.devnull, "w")) == REPRODUCED


def test_recording_of_a_deadline_among_many_test_runs_replays(tmp_path):
    # Twenty test runs take longer than the deadline: it lands during one or between two.
    output = tmp_path / "deadline-during-tools.json"
    many = ollama_reply(
        chunk(tool_calls=[call("run_tests", index=i) for i in range(20)], done=True)
    )
    with OllamaTestServer([many]) as server:
        finished = record("--host", server.host, "--deadline", 1, "--output", output)
    assert finished.returncode == 1, finished.stdout + finished.stderr
    recording = load(output)
    assert recording["stop"]["reason"] == DEADLINE
    assert sum(e["type"] == TOOL_RESULT for e in recording["events"]) < 20
    assert replay_one(output, out=open(os.devnull, "w")) == REPRODUCED


def test_recording_of_ctrl_c_before_any_event_of_a_call_replays_the_same_requests(tmp_path):
    output = tmp_path / "ctrl-c-before-any-event.json"
    silent = openai_reply(": reading the prompt\n\n", content("late"), pause_after_first=STALL)
    with OpenAITestServer([silent]) as server:
        options = ["--api", "openai", "--model", TEST_MODEL, "--host", server.base_url]
        command = [sys.executable, str(HERE / "record_run.py"), *options, "--output", output]
        process = subprocess.Popen(
            command, cwd=HERE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
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


# --- memory and calls are bounded --------------------------------------------------------------


def test_ollama_line_over_the_cap_ends_the_turn_naming_the_cap(repo):
    huge = b'{"message": {"role": "assistant", "content": "' + b"x" * (MAX_LINE_BYTES + 1)
    with OllamaTestServer([ollama_reply(chunk("a"), huge + b'"}}\n')]) as server:
        events, _ = run_with(ollama(server), None, repo, seconds=60)
    assert events[-1]["reason"] == MODEL_ERROR
    assert "8 MB" in events[-1]["error"]


def test_ollama_line_of_exactly_the_cap_is_read_when_its_newline_comes_apart(repo):
    # The cap is on a line longer than MAX_LINE_BYTES, counted up to its newline: a newline
    # arriving in a piece of its own ends a line of exactly the cap (kept), and the count
    # starts again from nothing after it.
    empty = json.dumps(chunk("")).encode()
    padding = b"x" * (MAX_LINE_BYTES - len(empty))
    first = empty.replace(b'"content": ""', b'"content": "' + padding + b'"')
    assert len(first) == MAX_LINE_BYTES
    done = json.dumps(chunk(done=True)).encode() + b"\n"
    with OllamaTestServer([ollama_reply(first, b"\n", done, pause_each=0.3)]) as server:
        events, _ = run_with(ollama(server), None, repo, seconds=60)
    assert events[-1]["reason"] == ASSISTANT_FINISHED, events[-1]


def test_openai_line_over_the_cap_ends_the_turn_naming_the_cap(repo):
    huge = "data: " + "x" * (MAX_LINE_BYTES + 1) + "\n\n"
    with OpenAITestServer([openai_reply(content("a"), huge)]) as server:
        events, _ = run_with(openai(server), None, repo, seconds=60)
    assert events[-1]["reason"] == MODEL_ERROR
    assert "8 MB" in events[-1]["error"]


def test_a_cancelled_watchdog_leaves_the_socket_alone():
    # Once the response is over, the watchdog's timer must not shut a socket down later.
    ours, theirs = socket.socketpair()
    with ours, theirs:
        watchdog = Watchdog(Deadline(0.1), ours)
        watchdog.cancel()
        theirs.settimeout(1.0)  # ten times the deadline: a live timer would have fired
        with pytest.raises(TimeoutError):
            theirs.recv(1)  # a shutdown would end this read with b"" at once
    assert not watchdog.fired


def test_a_read_the_watchdog_ended_raises_the_deadline_not_an_empty_answer():
    # The watchdog's shutdown ends a waiting read with b"", just as a server closing would:
    # the watched socket must say it was the deadline (mutation: `fired` -> None).
    deadline = Deadline(0.2)
    with socket.create_server(("127.0.0.1", 0)) as server:  # listens, never answers
        stream = _WatchedBackend(lambda: deadline).connect_tcp(*server.getsockname())
        try:
            stream.write(b"POST /api/chat HTTP/1.1\r\n\r\n")  # a request's first byte arms it
            with pytest.raises(DeadlineExceeded):
                stream.read(1024, timeout=5.0)  # 25 times the deadline
        finally:
            stream.close()


def test_a_server_closing_a_connection_no_request_armed_is_an_ordinary_end():
    # A pooled connection the server closes between requests: no watchdog, no deadline error.
    with socket.create_server(("127.0.0.1", 0)) as server:
        stream = _WatchedBackend(lambda: Deadline(0.2)).connect_tcp(*server.getsockname())
        server.accept()[0].close()
        try:
            assert stream.read(1024, timeout=5.0) == b""
        finally:
            stream.close()


def test_calls_past_the_cap_get_an_error_each_and_none_runs():
    # 32, the README's figure, written out: a test through MAX_TOOL_CALLS passes whatever it is.
    calls = [call("ping", index=i) for i in range(40)]
    chat = ScriptedChat([[chunk(tool_calls=calls, done=True)], [chunk("done", done=True)]])
    tools = CountingTools()
    events = list(agent_events(chat, tools, TASK))
    results = [e["result"] for e in events if e["type"] == TOOL_RESULT]
    assert len(tools.ran) == 32
    assert results[32:] == [{"error": TOO_MANY_CALLS}] * 8
    sent_back = [m for m in chat.requests[1] if m["role"] == "tool"]
    assert len(sent_back) == 40  # every call is answered


# --- nothing after the end of a turn is acted on --------------------------------------------------


def test_ollama_call_after_done_never_runs():
    late = [chunk("ok", done=True), chunk(tool_calls=[call("ping")])]
    chat, tools = ScriptedChat([late]), CountingTools()
    events = list(agent_events(chat, tools, TASK))
    assert events[-1]["reason"] == MODEL_ERROR and events[-1]["error"] == AFTER_THE_END
    assert tools.ran == []


def test_openai_call_after_finish_reason_never_runs(repo):
    late = openai_reply(content("ok"), finish(), tool_call(0, "{}", name="run_tests"))
    with OpenAITestServer([late]) as server:
        events, _ = run_with(openai(server), None, repo, seconds=60)
    assert events[-1]["reason"] == MODEL_ERROR
    assert "after the end of the turn" in events[-1]["error"]
    assert [e for e in events if e["type"] == TOOL_START] == []


def test_openai_usage_after_finish_reason_is_still_a_complete_turn(repo):
    usage = {"prompt_tokens": 5, "completion_tokens": 2}
    turn = openai_reply(content("ok"), finish(), {"choices": [], "usage": usage})
    with OpenAITestServer([turn]) as server:
        events, _ = run_with(openai(server), None, repo, seconds=60)
    assert events[-1]["reason"] == "assistant_finished"
    assert json.loads(json.dumps(events[-2]["model_counters"]))["eval_count"] == 2


# --- ask.py takes the same limits -------------------------------------------------------------


@pytest.mark.parametrize("api", ["ollama", "openai"])
def test_ask_stops_a_stalled_answer_at_its_deadline(tmp_path, api):
    if api == "ollama":
        server = OllamaTestServer([ollama_reply(chunk("Let"), pause_after_first=STALL)])
        where = ["--host", server.host]
    else:
        server = OpenAITestServer([openai_reply(content("Let"), pause_after_first=STALL)])
        where = ["--api", "openai", "--model", TEST_MODEL, "--host", server.base_url]
    limits = ["--deadline", "1", "--timeout", str(STALL)]
    command = [sys.executable, str(HERE / "ask.py"), "--root", str(tmp_path), *where, *limits]
    with server:
        # The subprocess timeout only keeps a broken build from hanging the suite.
        finished = subprocess.run([*command, "Hi?"], capture_output=True, text=True, timeout=STALL)
    assert finished.returncode == 1, finished.stderr
    assert finished.stderr.startswith("error: stopped without an answer: deadline")


STOP_AT = 1000.0  # a search's end on the stand-in clock below


def test_ask_stops_a_backtracking_search_at_its_deadline(tmp_path):
    # the search child's own 10 s budget once outlasted --deadline 3 (11.4 s in all)
    (tmp_path / "a.txt").write_text("a" * 40 + "!\n")
    search = call("search", pattern="(a+)+$")
    server = OllamaTestServer([ollama_reply(chunk(tool_calls=[search]), chunk(done=True))])
    command = [sys.executable, str(HERE / "ask.py"), "--root", str(tmp_path), "--deadline", "1"]
    with server:
        started = time.monotonic()
        finished = subprocess.run(
            [*command, "--host", server.host, "Where?"], capture_output=True, text=True, timeout=30
        )
        took = time.monotonic() - started
    assert finished.returncode == 1, finished.stderr
    assert finished.stderr.startswith("error: stopped without an answer: deadline")
    assert took < SEARCH_SECONDS  # the search child's own budget, which it once ran out


def test_ask_session_gives_each_answer_the_whole_deadline(tmp_path):
    # The first answer stalls until --deadline stops it; the second gets a budget of its
    # own, not what the first left of one counted from the start (nothing).
    gate = threading.Event()  # holds the first stream until the test ends
    first = ollama_reply(chunk("Let"), chunk(done=True), gate=gate)
    server = OllamaTestServer([first, ollama_reply(chunk("Yes.", done=True))])
    command = [sys.executable, str(HERE / "ask.py"), "--root", str(tmp_path), "--deadline", "1"]
    with server:
        finished = subprocess.run(
            [*command, "--host", server.host],
            input="First?\nSecond?\n", capture_output=True, text=True, timeout=STALL,
        )  # fmt: skip
        gate.set()
    assert finished.returncode == 0, finished.stderr
    assert finished.stderr.count("stopped without an answer: deadline") == 1, finished.stderr
    assert "ask> Yes.\n" in finished.stdout


@pytest.mark.parametrize(
    ("a_py", "readings", "searched", "matches"),
    [
        # a line check reads exactly the end: not yet out of time, the next line is read
        ("hit 1\nhit 2\nhit 3\n", [STOP_AT], 1, ["a.py:1: hit 1", "a.py:2: hit 2"]),
        # the check after a file reads exactly the end: the next file is searched too
        ("hit 1\n", [STOP_AT - 1, STOP_AT], 2, ["a.py:1: hit 1"]),
    ],
    ids=["line", "file"],
)
def test_a_clock_reading_equal_to_the_end_of_the_search_budget_is_not_yet_out_of_time(
    tmp_path, monkeypatch, a_py, readings, searched, matches
):
    # The search stops once the clock is PAST its end. On a 1 ns monotonic clock a check
    # lands exactly on the end in about one of 800 searches that run out of time (measured
    # in the review of this boundary); a clock that stands still there shows it each time.
    (tmp_path / "a.py").write_text(a_py)
    (tmp_path / "b.py").write_text("no\n")
    clock = iter([*readings, *[STOP_AT + 1] * 10])
    monkeypatch.setattr(readonly_tools, "time", SimpleNamespace(monotonic=lambda: next(clock)))
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    sent, counts = [], {"searched": 0, "skipped": 0, "deep": 0}
    try:
        cut = readonly_tools._search(Tree(tmp_path, fd), "hit", [], STOP_AT, counts, sent.append)
    finally:
        os.close(fd)
    assert cut == "the search ran out of time"
    assert (counts["searched"], [item["match"] for item in sent]) == (searched, matches)
