"""The limits that hold whatever a server or a model does, defined once.

`Deadline(seconds)` is one absolute end on a monotonic clock. The CLI makes one and hands
it to the loop, the wire adapter and the tools, so that every wait ends with it: the loop
checks it between steps, each read's timeout is `cap(--timeout)` (the smaller of the two),
each test run's limit is `cap(15 s)`, and a `Watchdog` shuts a streaming socket down when
time is up, so a server that sends keep-alive comments or one byte at a time cannot stretch
the budget. Whoever notices first raises `DeadlineExceeded`; the loop stops with `deadline`.
`MAX_LINE_BYTES` bounds one line of a stream (the memory one line can cost). Two limits
count a turn's tool calls: `MAX_CALLS_RUN`, how many of them run (each call past it is
answered with an error), and `MAX_CALLS_ACCEPTED`, how many a turn may hold at all (past
it, the whole turn is refused and none runs). `positive_seconds` and `positive_int` read a
limit from the command line, for every CLI alike.

Not here: what happens at a limit (agent_loop.py and the adapters decide that).
"""

import argparse
import math
import socket
import threading
import time


def positive_seconds(text):
    """An argparse type: a finite number of seconds above 0 (`inf` and `nan` are refused)."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text!r}")
    return value


def positive_int(text):
    """An argparse type: a whole number of at least 1."""
    value = int(text) if text.strip().isdigit() else 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive whole number, got {text!r}")
    return value


def sampling_temperature(text):
    """An argparse type: a sampling temperature, a finite number from 0 to 2."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 2:  # subtle: nan compares false both ways, so it is refused too
        raise argparse.ArgumentTypeError(f"must be a number from 0 to 2, got {text!r}")
    return value


SAMPLING_SEEDS = 2**31  # a seed both wires take (llama.cpp's is 32 bits)


def sampling_seed(text):
    """An argparse type: a sampling seed, a whole number from 0 below SAMPLING_SEEDS."""
    value = int(text) if text.strip().isdigit() else -1
    if not 0 <= value < SAMPLING_SEEDS:
        raise argparse.ArgumentTypeError(f"must be a whole number from 0 to {SAMPLING_SEEDS - 1}")
    return value


MAX_LINE_BYTES = 8 * 1024 * 1024  # one NDJSON or SSE line; a real chunk is a few hundred bytes
MAX_CALLS_RUN = 32  # per turn; each call past it is answered with an error, none of them runs
# A turn past either of these is not a turn a model means: it ends as model_error, and
# none of its calls runs (so a hostile server cannot fill memory, a recording or a screen).
MAX_CALLS_ACCEPTED = 1000
# A number a recording holds: finite and below this in size (what a 64-bit reader holds).
# A counter or a time past it is saved as null (recording.py), and a file holding one is
# refused: a 401-digit number of seconds or tokens cannot be turned into a float to show.
LARGEST_NUMBER = 2**63
MAX_TURN_ARGUMENTS = 1_000_000  # characters of all the calls' arguments in one turn
# Bytes of a tool result given to a fork as a file (`record_run.py --result N=FILE`), at
# most: the lab's tools return far less (read_file's 20,000 characters are 120 KB as JSON
# at worst), and the fork's recording and every replay of it print the result whole.
MAX_RESULT_BYTES = 1_000_000
PAST_MAX_CALLS_ACCEPTED = (
    f"the model sent more than {MAX_CALLS_ACCEPTED} tool calls in one turn; none of them ran"
)
ARGUMENTS_TOO_LONG = (
    f"the tool-call arguments of one turn are longer than {MAX_TURN_ARGUMENTS:,} characters; "
    "none of the calls ran"
)
LINE_TOO_LONG = (
    f"the server sent a line longer than {MAX_LINE_BYTES >> 20} MB without ending it; "
    "the turn was abandoned (the lab's cap on one line of a stream)"
)


class DeadlineExceeded(Exception):
    """The run's time is up: the loop stops with reason `deadline`."""


class LineTooLong(Exception):
    """One line of a stream went past MAX_LINE_BYTES."""

    def __init__(self):
        super().__init__(LINE_TOO_LONG)


class Deadline:
    """An absolute end on `clock` (None: no end), shared by everything that waits."""

    def __init__(self, seconds=None, clock=time.monotonic):
        self.clock = clock
        self.seconds = seconds
        self.restart()

    def restart(self):
        """Count the budget from now (the CLIs start it when the loop starts)."""
        self.end = None if self.seconds is None else self.clock() + self.seconds
        return self

    def left(self):
        """Seconds until the end (0 once it has passed; infinity without a deadline)."""
        return math.inf if self.end is None else max(0.0, self.end - self.clock())

    def expired(self, margin=0.0):
        """Whether the end has passed (or is less than `margin` seconds away)."""
        return self.end is not None and self.clock() + margin >= self.end

    def cap(self, seconds):
        """`seconds`, or the time left if that is shorter: the longest any wait may take."""
        return min(seconds, self.left())

    def error(self):
        return DeadlineExceeded(f"the deadline of {self.seconds:g} s has passed")

    def check(self):
        if self.expired():
            raise self.error()


class Watchdog:
    """Shuts `sock` down when `deadline` passes, ending whatever read is waiting on it.

    subtle: a read's timeout counts from the last byte, so a server that sends one byte
    now and then would never trip it; only a timer on the absolute end holds the budget.
    Always `cancel()` it (in a `finally`) once the response is over.
    """

    def __init__(self, deadline, sock):
        self.fired = False
        self._timer = None
        if deadline.end is not None and sock is not None:
            self._timer = threading.Timer(deadline.left(), self._fire, (sock,))
            self._timer.daemon = True
            self._timer.start()

    def _fire(self, sock):
        self.fired = True
        try:
            sock.shutdown(socket.SHUT_RDWR)  # the blocked read returns at once
        except OSError:
            pass  # already closed: the response ended on its own

    def cancel(self):
        if self._timer is not None:
            self._timer.cancel()


def is_whole(value, least=0):
    """Whether a value read from JSON is a whole number of at least `least` (a bool is not)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= least
