"""What each attempt of a series is doing while it runs (`record_run.py --attempts N`).

An attempt is a child record_run.py (harness/attempts.py) whose own output goes nowhere,
and one attempt of a 1.5B model can take 40 s: without this the series said nothing until
an attempt ended, which reads as a hang. The child writes one JSON line per step (a turn
begins, a tool runs, the final verdict starts) to a pipe the series opened for it, named
by the descriptor in LAB_SERIES_PROGRESS, which only the series sets. The series shows
them: on a terminal, one status line rewritten in place every second, each running
attempt with its step and how long it has taken; piped, a line per turn of each attempt.
The line is drawn as a live run's is (harness/status_line.py).

Not here: starting the attempts, their ends and figures (harness/attempts.py).
"""

import json
import os
import threading
import time

from agent_loop import MODEL_START, STOPPED, TOOL_START
from harness.status_line import StatusLine

SETTING = "LAB_SERIES_PROGRESS"  # the descriptor an attempt writes its steps to
NAME_SHOWN = 40  # characters of a tool's name shown: a model names its tools
MODEL, TOOL, FINAL, STARTING = "model", "tool", "verdict", "starting"  # a step's kind


def attempt_watch():
    """The attempt's side: a `watch` for harness/driver.drive writing each step to the
    series' pipe, or None when this record_run.py is not an attempt of a series."""
    descriptor = os.environ.get(SETTING, "")
    if not descriptor.isdigit():
        return None
    try:
        return StepWriter(os.fdopen(int(descriptor), "w", buffering=1, encoding="utf-8"))
    except OSError:
        return None  # not open here: a variable inherited from elsewhere


class StepWriter:
    """Called with each event (as drive's `watch`), writes the steps; `close()` ends them."""

    def __init__(self, pipe):
        self.pipe = pipe

    def __call__(self, event, messages):
        step = _step(event)
        if step is None:
            return
        try:
            self.pipe.write(json.dumps(step) + "\n")
        except (OSError, ValueError):
            pass  # the series has gone: the attempt goes on and saves what it did

    def close(self):
        self.pipe.close()


def _step(event):
    turn = event.get("turn")
    if event["type"] == MODEL_START:
        return {"turn": turn, "step": MODEL}
    if event["type"] == TOOL_START:
        return {"turn": turn, "step": TOOL, "name": str(event.get("name"))[:NAME_SHOWN]}
    if event["type"] == STOPPED:
        return {"turn": turn, "step": FINAL}
    return None


class Progress:
    """The series' side: what each running attempt last said, shown as it comes.

    `say(text)` prints a line of the series' own (an attempt's end, the summary), clearing
    the status line first on a terminal; `follow(number, descriptor)` reads an attempt's
    pipe (in a thread of its own); `tick()`, called about every second, redraws the status."""

    def __init__(self, out):
        self.out = out
        self.line = StatusLine(out)  # the terminal's status line, or a pipe's nothing
        self.steps = {}  # attempt number -> (its last step, when it began)
        self.lock = threading.Lock()  # the readers' threads and the series' own lines

    @property
    def closed(self):
        return self.line.closed  # stdout went away while a reader wrote

    def say(self, text):
        with self.lock:
            self.line.clear()
            self.out.write(text + "\n")  # one write per line: nothing can split it
            self.out.flush()  # a closed stdout raises here, in the series: exit 141
            self._draw()

    def follow(self, number, descriptor):
        self.steps[number] = ({"turn": None, "step": STARTING}, time.monotonic())
        with os.fdopen(descriptor, encoding="utf-8", errors="replace") as lines:
            for line in lines:
                step = _read(line)
                if step is not None:
                    self._update(number, step)
        with self.lock:
            self.steps.pop(number, None)  # its end is said by the series

    def tick(self):
        with self.lock:
            self._draw()

    def _update(self, number, step):
        with self.lock:
            self.steps[number] = (step, time.monotonic())
            if self.line.terminal:
                self._draw()
            elif step["step"] in (MODEL, FINAL):  # piped: a line per turn
                self.line.write(f"  attempt {number}: {_words(step)}\n")

    def _draw(self):
        if not self.line.terminal or not self.steps:
            return self.line.clear()
        now = time.monotonic()
        parts = [
            f"attempt {number}: {_words(step)} ({now - since:.0f} s)"
            for number, (step, since) in sorted(self.steps.items())
        ]
        self.line.draw(" · ".join(parts))


def _read(line):
    """A step the attempt wrote, or None for a line that is not one."""
    try:
        step = json.loads(line)
    except ValueError:
        return None
    if not isinstance(step, dict) or step.get("step") not in (MODEL, TOOL, FINAL):
        return None
    turn, name = step.get("turn"), step.get("name")
    turn = turn if isinstance(turn, int) and not isinstance(turn, bool) else None
    return {"turn": turn, "step": step["step"], "name": str(name)[:NAME_SHOWN]}


def _words(step):
    """'turn 3, the model' / 'turn 3, tool run_tests' / 'the final verdict' / 'starting'."""
    kind = step["step"]
    if kind == FINAL:
        return "the final verdict"
    if kind == STARTING or step["turn"] is None:
        return "starting" if kind == STARTING else kind
    doing = f"tool {step['name']}" if kind == TOOL else "the model"
    return f"turn {step['turn']}, {doing}"
