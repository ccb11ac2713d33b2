"""The run's deadline and its watchdog (plumbing/limits.py), on a clock made here: a budget
of 0 is one already spent, an end at 0.0 is an end, and the watchdog shuts only a socket."""

import os
import socket

from agent_loop import DEADLINE, MODEL_DONE, TASK, agent_events
from plumbing.limits import Deadline, Watchdog
from plumbing.recording import load
from replay import REPRODUCED, replay_one
from repo_tools import RepoTools
from tests.helpers import wait_for
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
