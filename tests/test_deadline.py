"""The run's deadline and its watchdog (plumbing/limits.py), on a clock made here: a budget
of 0 is one already spent, an end at 0.0 is an end, and the watchdog shuts only a socket."""

import os
import socket
import threading
from types import SimpleNamespace

import pytest

from agent_loop import DEADLINE, MODEL_DONE, TASK, TOOL_START, agent_events
from plumbing.limits import Deadline, DeadlineExceeded, Watchdog
from plumbing.ollama_transport import _LimitedStream, _WatchedStream
from plumbing.recording import RecordingChat, load
from replay import REPRODUCED, replay_one
from repo_tools import RepoTools
from tests.helpers import HeldStream, wait_for
from tests.in_process import run_cli
from tests.ollama_test_server import OllamaTestServer, call, chunk
from tests.ollama_test_server import reply as ollama_reply
from tests.scripted_model import ScriptedChat


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


# --- the loop checks the deadline before each request ---------------------------------------------


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


# --- the recorder keeps a run the deadline stopped, and it replays --------------------------------


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


# --- the deadline cuts a stream: no tool runs, the stream is closed and saved as closed -----------


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


def test_a_stream_our_deadline_cut_is_saved_as_closed_unless_its_done_chunk_came(tmp_path):
    # The adapter raises DeadlineExceeded when our own clock cuts a stream: the call is
    # saved as "closed", as when the loop closes it; one whose done chunk came stays "done"
    late = [DeadlineExceeded("the deadline of 5 s has passed") for _ in range(2)]
    recorder = RecordingChat(ScriptedChat([[chunk("Read"), late[0]], [chunk(done=True), late[1]]]))
    for _ in range(2):
        with pytest.raises(DeadlineExceeded):
            list(recorder([], []))
    assert [call["ended"] for call in recorder.calls] == ["closed", "done"]


# --- the watchdog below the Ollama SDK (plumbing/ollama_transport.py) -----------------------------


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
