"""The run's deadline and its watchdog (plumbing/limits.py), on a clock made here: a budget
of 0 is one already spent, an end at 0.0 is an end, and the watchdog shuts only a socket."""

import socket

from plumbing.limits import Deadline, Watchdog
from tests.helpers import wait_for


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
