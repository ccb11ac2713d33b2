"""The run's deadline (`--deadline`, plumbing/limits.py's Deadline): one budget of seconds
that caps every wait of a run, on both wires, and ends it with the stop reason `deadline`.

First the Deadline and its watchdog on a clock made here (a budget of 0 is one already
spent; the watchdog shuts only a socket). Then the loop, which checks it before each
request and cuts a stream or a test run; every wait on the wire, against hostile
stand-ins on 127.0.0.1 that stall, trickle bytes that never end a line or the headers,
send keep-alives forever, or never accept; the watchdog below the Ollama SDK; recordings
of a run the deadline stopped, which replay; and ask.py (its main() in this process,
tests/in_process.py: a deadline is no signal). Each timing test is bounded by
the limits under test with a wide margin: the deadline is a second or two, the timeout it
must beat is 30 s (STALL), and the test asserts only that the run ended with `deadline`
well before that. Most of these wait: they carry the `waits` mark, and conftest.py spreads
them over the run.
"""

import contextlib
import json
import os
import socket
import threading
import time
from types import SimpleNamespace

import pytest

import openai_model
from agent_loop import (
    DEADLINE,
    MODEL_DONE,
    MODEL_START,
    STOPPED,
    TASK,
    TEXT_DELTA,
    TOOL_RESULT,
    TOOL_START,
    agent_events,
)
from harness.chats import RecordingChat
from harness.recording import load
from local_model import LocalModel
from openai_model import OpenAICompatibleModel
from plumbing.limits import Deadline, DeadlineExceeded, Watchdog
from plumbing.ollama_transport import _LimitedStream, _WatchedBackend, _WatchedStream
from plumbing.wire_errors import CONNECT_TIMEOUT, translated
from readonly_tools import SEARCH_SECONDS
from replay import REPRODUCED, replay_one
from repo_tools import RepoTools
from tests.helpers import (
    STALL,
    HeldStream,
    ask,
    of_type,
    ollama_chat,
    openai_chat,
    record,
    run_with,
    wait_for,
)
from tests.in_process import run_cli
from tests.ollama_test_server import OllamaTestServer, call, chunk
from tests.ollama_test_server import reply as ollama_reply
from tests.openai_test_server import (
    TEST_MODEL,
    OpenAITestServer,
    UnframedStream,
    content,
    finish,
    run_against,
    tool_call,
)
from tests.openai_test_server import reply as openai_reply
from tests.scripted_model import ScriptedChat

# --- the Deadline and its watchdog, on a clock made here ------------------------------------------


def test_a_budget_of_0_is_spent_at_once_and_none_never_ends():
    spent = Deadline(0, clock=lambda: 0.0)  # its end is at 0.0: falsy, and still an end
    assert (spent.end, spent.left(), spent.expired()) == (0.0, 0.0, True)
    endless = Deadline(None, clock=lambda: 0.0)
    assert (endless.end, endless.left(), endless.expired()) == (None, float("inf"), False)


def test_restart_counts_from_now_and_gives_the_deadline_back():
    now = [10.0]
    deadline = Deadline(5, clock=lambda: now[0])
    now[0] = 12.0
    assert deadline.restart() is deadline  # the CLIs write Deadline(seconds).restart()
    assert deadline.end == 17.0


def test_the_watchdog_shuts_the_socket_at_an_end_of_0_0_and_ignores_a_missing_one():
    # An end at exactly 0.0 on this clock is a deadline like any other.
    deadline = Deadline(0.05, clock=lambda: -0.05)
    here, there = socket.socketpair()
    with here, there:
        dog = Watchdog(deadline, here)
        assert wait_for(lambda: dog.fired)
        assert dog._timer.daemon  # an armed watchdog never keeps the process alive
        # No deadline: nothing to watch for, so no timer (one of infinite length would fail).
        assert Watchdog(Deadline(None), here)._timer is None
        assert here.recv(1) == b""  # shut down: the blocked read returns at once
    # No socket (the connection never opened): nothing to shut, no timer at all.
    quiet = Watchdog(Deadline(0.0), None)
    assert (quiet.fired, quiet._timer) == (False, None)


@pytest.mark.waits
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


def test_a_failure_within_50_ms_of_the_deadline_is_the_deadline():
    # A wait that failed this close to the end ran into it: the loop stops with `deadline`,
    # not with a wire error the deadline caused; further from it, the adapter's failure.
    now = [100.0]
    deadline = Deadline(10, clock=lambda: now[0])
    failure = RuntimeError("the adapter's")
    now[0] = 109.9
    assert translated(OSError(), deadline, failure) is failure
    assert isinstance(translated(OSError(), deadline, failure, cut=True), DeadlineExceeded)
    now[0] = 109.96
    assert isinstance(translated(OSError(), deadline, failure), DeadlineExceeded)
    now[0] = 109.94
    assert translated(OSError(), deadline, failure) is failure


# --- the loop keeps it: before each request, mid-stream, during test runs -------------------------


def assert_stopped_by_the_deadline(events, elapsed):
    assert events[-1]["type"] == STOPPED
    assert events[-1]["reason"] == DEADLINE, events[-1]
    # A wide margin: the deadline is 1 s, the timeout that used to end these runs is 30 s.
    assert elapsed < STALL / 2
    # The turn the deadline cut says how long it ran: never more than the whole run.
    assert 0 <= events[-1].get("seconds", 0) <= elapsed, events[-1]


@pytest.mark.waits
def test_a_deadline_of_0_seconds_has_already_passed_not_no_deadline(repo):
    # 0 is a budget used up before the first turn; only None means no deadline.
    chat = ScriptedChat([[chunk("Done.", done=True)]])
    events = list(agent_events(chat, RepoTools(repo), TASK, deadline=0))
    assert [(e["type"], e.get("reason")) for e in events] == [(STOPPED, DEADLINE)]
    assert chat.requests == []


class Clock:
    """A clock that advances one second each time it is read."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        self.now += 1.0
        return self.now


def test_deadline_is_checked_before_each_request(repo):
    reads = [[chunk(tool_calls=[call("read_file", path="path_rules.py")], done=True)]] * 20
    chat = ScriptedChat(reads)
    events = list(
        agent_events(chat, RepoTools(repo), TASK, max_turns=20, deadline=12, clock=Clock())
    )
    assert events[-1]["reason"] == DEADLINE
    assert 1 <= len(chat.requests) < 20
    assert sum(e["type"] == MODEL_DONE for e in events) == len(chat.requests)


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


@pytest.mark.waits
def test_a_test_run_never_outlasts_the_deadline(repo):
    # Collection now takes 30 s; run_tests would wait its full 15 s without the deadline.
    source = repo / "path_rules.py"
    source.write_text("import time\ntime.sleep(30)\n" + source.read_text())
    chat = ScriptedChat([[chunk(tool_calls=[call("run_tests")], done=True)]])
    events, elapsed = run_with(lambda deadline: chat, None, repo)
    assert_stopped_by_the_deadline(events, elapsed)
    assert [e["type"] for e in events].count(TOOL_START) == 1
    assert [e for e in events if e["type"] == TOOL_RESULT] == []  # cut short: not kept


@pytest.mark.waits
def test_a_turn_asking_for_many_test_runs_stops_at_the_deadline(repo):
    many = [call("run_tests", index=i) for i in range(40)]
    chat = ScriptedChat([[chunk(tool_calls=many, done=True)]])
    events, elapsed = run_with(lambda deadline: chat, None, repo)  # 1 s: a few runs
    assert_stopped_by_the_deadline(events, elapsed)
    assert sum(e["type"] == TOOL_RESULT for e in events) < 40


# --- it caps every wait on the wire, on both wires ------------------------------------------------


@pytest.mark.waits
def test_ollama_stall_after_one_chunk_stops_at_the_deadline_not_the_timeout(repo):
    stalled = ollama_reply(chunk("Let me"), chunk(done=True), pause_after_first=STALL)
    with OllamaTestServer([stalled]) as server:
        events, elapsed = run_with(ollama_chat(server), None, repo)
    assert_stopped_by_the_deadline(events, elapsed)


@pytest.mark.waits
def test_ollama_trickle_that_never_ends_a_line_cannot_stretch_the_deadline(repo):
    trickle = ollama_reply(chunk("Let me"), drip=(b"x", 0.2))
    with OllamaTestServer([trickle]) as server:
        events, elapsed = run_with(ollama_chat(server), None, repo)
    assert_stopped_by_the_deadline(events, elapsed)


@pytest.mark.waits
def test_ollama_silence_before_the_first_byte_stops_at_the_deadline(repo):
    # The server reads the prompt and sends nothing, not even its headers.
    silent = ollama_reply(chunk("late"), chunk(done=True), pause_before=STALL)
    with OllamaTestServer([silent]) as server:
        events, elapsed = run_with(ollama_chat(server), None, repo)
    assert_stopped_by_the_deadline(events, elapsed)


@pytest.mark.waits
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


@pytest.mark.waits
def test_openai_stall_after_one_event_stops_at_the_deadline_not_the_timeout(repo):
    stalled = openai_reply(content("Let me"), finish(), pause_after_first=STALL)
    with OpenAITestServer([stalled]) as server:
        events, elapsed = run_with(openai_chat(server), None, repo)
    assert_stopped_by_the_deadline(events, elapsed)


@pytest.mark.waits
def test_openai_keep_alive_comments_cannot_stretch_the_deadline(repo):
    comments = openai_reply(content("Let me"), drip=(": keep-alive\n\n", 0.2))
    with OpenAITestServer([comments]) as server:
        events, elapsed = run_with(openai_chat(server), None, repo)
    assert_stopped_by_the_deadline(events, elapsed)


@pytest.mark.waits
def test_openai_trickle_of_a_partial_line_cannot_stretch_the_deadline(repo):
    trickle = openai_reply(content("Let me"), drip=("x", 0.2))
    with OpenAITestServer([trickle]) as server:
        events, elapsed = run_with(openai_chat(server), None, repo)
    assert_stopped_by_the_deadline(events, elapsed)


@pytest.mark.waits
def test_a_connect_that_hangs_is_held_until_the_deadline_then_the_run_stops_there(repo):
    # A server whose queue of new connections is full never completes a connect: the
    # adapter waits for it until the deadline (not a moment less), so the run stops with
    # `deadline` rather than a "cannot reach" that the deadline did not cause.
    with socket.create_server(("127.0.0.1", 0), backlog=0) as listener:
        # subtle: with a backlog of 0, Linux queues one connection; the next one hangs.
        with socket.create_connection(listener.getsockname()):
            base_url = "http://{}:{}/v1".format(*listener.getsockname())
            deadline = Deadline(0.5)
            chat = OpenAICompatibleModel(TEST_MODEL, base_url, deadline=deadline)
            events = list(agent_events(chat, RepoTools(repo), TASK, deadline=deadline))
    assert events[-1]["reason"] == DEADLINE, events[-1]


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


@pytest.mark.waits
def test_ollama_trickle_of_the_headers_cannot_stretch_the_deadline(repo):
    # subtle: the per-read timeout restarts with every byte; only the deadline ends this.
    with HeaderTrickler() as server:
        events, elapsed = run_with(ollama_chat(server), None, repo)
        assert_stopped_by_the_deadline(events, elapsed)
        assert server.hung_up.wait(STALL)  # the client let go, not the server


@pytest.mark.waits
def test_ollama_trickle_of_the_headers_on_a_reused_connection_cannot_stretch_the_deadline(repo):
    # The first turn asks for a tool over a keep-alive connection; the second request goes
    # out on that same connection (no new connect), and its headers trickle.
    turn = chunk(tool_calls=[call("read_file", path="README.md")], done=True)
    with HeaderTrickler(first=json.dumps(turn).encode() + b"\n") as server:
        events, elapsed = run_with(ollama_chat(server), None, repo, seconds=2.0)
        assert_stopped_by_the_deadline(events, elapsed)
        assert server.hung_up.wait(STALL)  # the client let go, not the server
    assert [e["type"] for e in events].count(MODEL_START) == 2  # the second turn was cut


@pytest.mark.waits
def test_openai_trickle_of_the_headers_cannot_stretch_the_deadline(repo):
    with HeaderTrickler() as server:
        model = lambda deadline: OpenAICompatibleModel(  # noqa: E731
            TEST_MODEL, f"http://{server.host}/v1", timeout=STALL, deadline=deadline
        )
        events, elapsed = run_with(model, None, repo)
        assert_stopped_by_the_deadline(events, elapsed)
        assert server.hung_up.wait(STALL)  # the client let go, not the server


@pytest.mark.waits
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


class DrippingUnframedStream(UnframedStream):
    """HTTP/1.0, neither a length nor chunks: one event, then a keep-alive comment every
    0.1 s until the client hangs up (at most 10 s), so no read ever times out."""

    def do_POST(self):
        self.start_stream()
        try:
            self.wfile.write(f"data: {json.dumps(content('Let me'))}\n\n".encode())
            for _ in range(100):
                self.wfile.write(b": still here\n\n")
                self.wfile.flush()
                time.sleep(0.1)
        except OSError:
            pass  # the client hung up


@pytest.mark.waits
def test_an_unframed_stream_ended_by_the_watchdog_is_the_deadline_not_an_unfinished_turn(repo):
    # The watchdog's shutdown reads as a clean end of a body that only the connection's
    # end frames; the turn was cut by the deadline, not left unfinished by the server.
    # subtle: the deadline's clock never moves, so it never reads as passed: each read waits
    # at most its 2 s (longer than the drip's 0.1 s), and only the watchdog's real timer,
    # 2 s after the start (time for the first event even on a loaded machine), ends the drip.
    deadline = Deadline(2.0, clock=lambda: 0.0)
    _, events = run_against(repo, DrippingUnframedStream, deadline=deadline)
    assert events[-1]["reason"] == DEADLINE, events[-1]
    assert of_type(events, TEXT_DELTA)[0]["text"] == "Let me"


# --- a turn complete when time runs out is kept, and runs no tool ---------------------------------


@pytest.mark.waits
def test_a_turn_complete_when_time_runs_out_is_kept_and_runs_no_tool(repo):
    # The done chunk arrives, then the server holds the stream open past the deadline.
    tools = [call("run_tests")]
    held = ollama_reply(chunk(tool_calls=tools, done=True), pause_after_first=STALL)
    with OllamaTestServer([held]) as server:
        events, elapsed = run_with(ollama_chat(server), None, repo)
    assert_stopped_by_the_deadline(events, elapsed)
    done = [e for e in events if e["type"] == MODEL_DONE]
    assert len(done) == 1 and done[0]["message"]["tool_calls"][0]["function"]["name"] == "run_tests"
    assert [e for e in events if e["type"] == TOOL_START] == []


@pytest.mark.waits
def test_openai_turn_complete_before_the_deadline_cut_is_kept_and_runs_no_tool(repo):
    events_ = [tool_call(0, "{}", name="run_tests"), finish("tool_calls")]
    # The finish event, then no [DONE] and no end: the deadline cuts the wait for it.
    held = openai_reply(*events_, drip=(": still here\n\n", 0.2))
    with OpenAITestServer([held]) as server:
        events, elapsed = run_with(openai_chat(server), None, repo)
    assert_stopped_by_the_deadline(events, elapsed)
    assert sum(e["type"] == MODEL_DONE for e in events) == 1
    assert [e for e in events if e["type"] == TOOL_START] == []


def deadline_in_stream(first):
    """Read a stream whose first piece is `first` (held there by the server), then let the
    deadline pass: the chunks of the turn, or the DeadlineExceeded that ended it."""
    now, gate = [0.0], threading.Event()
    with OpenAITestServer([openai_reply(first, content("late"), finish(), gate=gate)]) as server:
        deadline = openai_model.Deadline(10, clock=lambda: now[0])
        chat = OpenAICompatibleModel(TEST_MODEL, server.base_url, deadline=deadline)
        stream = chat([{"role": "user", "content": "hi"}], [])
        try:
            chunks = [next(stream)]  # the first piece's text: the server now holds the rest
            now[0] = 11.0  # the deadline passes before the next read
            return chunks + list(stream)
        finally:
            stream.close()
            gate.set()


@pytest.mark.waits
def test_deadline_after_the_finish_reason_keeps_the_turn_and_before_it_stops_the_run():
    # A turn whose finish_reason came is whole, even if the deadline cut the wait for
    # [DONE]: it ends with its done chunk. Before the finish_reason, the deadline stops the
    # run (reason `deadline`), never a quietly incomplete turn.
    whole = f"data: {json.dumps(content('Hi'))}\n\ndata: {json.dumps(finish())}\n\n"
    chunks = deadline_in_stream(whole)
    assert [c["done"] for c in chunks] == [False, True]
    assert chunks[-1]["done_reason"] == "stop" and chunks[-1]["finish_reason"] == "stop"
    with pytest.raises(openai_model.DeadlineExceeded, match="the deadline of 10 s has passed"):
        deadline_in_stream(content("Hi"))


# --- the watchdog below the Ollama SDK (plumbing/ollama_transport.py) -----------------------------


@pytest.mark.waits
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


@pytest.mark.waits
def test_a_server_closing_a_connection_no_request_armed_is_an_ordinary_end():
    # A pooled connection the server closes between requests: no watchdog, no deadline error.
    with socket.create_server(("127.0.0.1", 0)) as server:
        stream = _WatchedBackend(lambda: Deadline(0.2)).connect_tcp(*server.getsockname())
        server.accept()[0].close()
        try:
            assert stream.read(1024, timeout=5.0) == b""
        finally:
            stream.close()


def test_a_body_that_ends_cleanly_after_the_watchdog_fired_is_the_deadline(tmp_path):
    # mutation: the check after the loop dropped: a socket shut down by the watchdog can
    # read as a clean end of the body, and the cut turn then looked like a whole one
    body = [b'{"a": 1}\n']
    assert list(_LimitedStream(body, Deadline(), SimpleNamespace(fired=False))) == body
    with pytest.raises(DeadlineExceeded):
        list(_LimitedStream(body, Deadline(5), SimpleNamespace(fired=True)))


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


def test_a_closed_connection_that_never_sent_a_request_closes_quietly():
    # a connection the pool opened but never used has no watchdog to cancel: disarm must
    # check for one (the watchdog's own mutants are the next test's)
    closed = []
    inner = SimpleNamespace(close=lambda: closed.append(True))
    _WatchedStream(inner, deadline_of=lambda: Deadline(5)).close()
    assert closed == [True]


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


# --- recorded, then replayed (issue 12's real-server shapes) --------------------------------------


def test_recorder_deadline_keeps_everything_and_replays(tmp_path):
    output = tmp_path / "deadline.json"
    read = ollama_reply(
        chunk(tool_calls=[call("read_file", path="path_rules.py")]), chunk(done=True)
    )
    slow = ollama_reply(
        chunk("Let me"), chunk(" think"), chunk(" more", done=True), pause_after_first=1
    )
    with OllamaTestServer([read, slow]) as server:
        options = ["--host", server.host, "--deadline", 0.5, "--output", output]
        finished = run_cli("record_run.py", *options)
    assert finished.returncode == 1, finished.stdout + finished.stderr
    recording = load(output)
    assert recording["stop"]["reason"] == DEADLINE
    assert recording["model_calls"][1]["ended"] == "closed"
    assert recording["final_tests"]["exit_code"] == 1
    outcome = replay_one(output, out=open(os.devnull, "w"))
    assert outcome == REPRODUCED


def test_a_stream_our_deadline_cut_is_saved_as_closed_unless_its_done_chunk_came(tmp_path):
    # The adapter raises DeadlineExceeded when our own clock cuts a stream: the call is
    # saved as "closed", as when the loop closes it; one whose done chunk came stays "done"
    late = [DeadlineExceeded("the deadline of 5 s has passed") for _ in range(2)]
    recorder = RecordingChat(ScriptedChat([[chunk("Read"), late[0]], [chunk(done=True), late[1]]]))
    for _ in range(2):
        with pytest.raises(DeadlineExceeded):
            list(recorder([], []))
    assert [call["ended"] for call in recorder.calls] == ["closed", "done"]


@pytest.mark.waits
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


@pytest.mark.waits
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


@pytest.mark.waits
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


# --- ask.py takes the same deadline ---------------------------------------------------------------


@pytest.mark.waits
@pytest.mark.parametrize("api", ["ollama", "openai"])
def test_ask_stops_a_stalled_answer_at_its_deadline(tmp_path, api):
    if api == "ollama":
        server = OllamaTestServer([ollama_reply(chunk("Let"), pause_after_first=STALL)])
        where = ["--host", server.host]
    else:
        server = OpenAITestServer([openai_reply(content("Let"), pause_after_first=STALL)])
        where = ["--api", "openai", "--model", TEST_MODEL, "--host", server.base_url]
    limits = ["--deadline", "1", "--timeout", str(STALL)]
    with server:
        # a broken build waits out the stand-in's STALL at most
        code, _, err = ask("--root", tmp_path, *where, *limits, "Hi?")
    assert code == 1, err
    assert err.startswith("error: stopped without an answer: deadline")


@pytest.mark.waits
def test_ask_stops_a_backtracking_search_at_its_deadline(tmp_path):
    # the search child's own 10 s budget once outlasted --deadline 3 (11.4 s in all)
    (tmp_path / "a.txt").write_text("a" * 40 + "!\n")
    search = call("search", pattern="(a+)+$")
    server = OllamaTestServer([ollama_reply(chunk(tool_calls=[search]), chunk(done=True))])
    with server:
        started = time.monotonic()
        code, _, err = ask("--root", tmp_path, "--deadline", "1", "--host", server.host, "Where?")
        took = time.monotonic() - started
    assert code == 1, err
    assert err.startswith("error: stopped without an answer: deadline")
    assert took < SEARCH_SECONDS  # the search child's own budget, which it once ran out


@pytest.mark.waits
def test_ask_session_gives_each_answer_the_whole_deadline(tmp_path):
    # The first answer stalls until --deadline stops it; the second gets a budget of its
    # own, not what the first left of one counted from the start (nothing).
    gate = threading.Event()  # holds the first stream until the test ends
    first = ollama_reply(chunk("Let"), chunk(done=True), gate=gate)
    server = OllamaTestServer([first, ollama_reply(chunk("Yes.", done=True))])
    with server:
        code, out, err = ask("--root", tmp_path, "--deadline", "1", "--host", server.host,
                             stdin="First?\nSecond?\n")  # fmt: skip
        gate.set()
    assert code == 0, err
    assert err.count("stopped without an answer: deadline") == 1, err
    assert "ask> Yes.\n" in out
