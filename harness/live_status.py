"""What a live run is doing, every second, on a terminal: record_run.py's status line.

A turn of a 1.5B model on two CPU cores can take a minute or more, and over the OpenAI wire
nothing of a tool call shows until it is whole: without this a run said nothing meanwhile,
which reads as a hang. `live_status(recorder)`, when stdout is a terminal, keeps one line
at the bottom, rewritten about every second while the model works and while a tool runs:

    turn 3, the model (37 s): 412 chunks, 14.7 a second
    turn 3, the model (12 s): no chunk yet (the server reads the prompt first)
    turn 3, tool run_tests (2 s)
    turn 3, tool explore (41 s): the explorer's request 2, 118 chunks

The chunks are what the recorder (harness/chats.py's RecordingChat) has kept of the
call so far: Ollama's chunks, or the OpenAI wire's events, about one token each (a tool
call's fragments included). Neither wire counts tokens before the turn's end, so the line
counts chunks. It is drawn as a series' line is (harness/status_line.py), and every write
to stdout or stderr clears it first, so the run's own lines stay as they are. A line the
model's streamed text left open is ended (and continued below, indented as the text's own
next line would be) only after a second without output while the model works: never while
a tool runs, where the open line is `--approve`'s question.

Piped, `live_status` does nothing at all: the output is, byte for byte, what it is without.

Not here: the series' line (harness/series_progress.py), what a run prints (console.py).
"""

import contextlib
import sys
import threading
import time

from agent_loop import MODEL_DONE, MODEL_START, STOPPED, TOOL_RESULT, TOOL_START
from harness.console import plural
from harness.series_progress import NAME_SHOWN
from harness.status_line import StatusLine

TICK = 1.0  # seconds between redraws
QUIET = 1.0  # seconds without output before the model's open line is ended for the status
MODEL, TOOL, STARTING, FINAL = "the model", "tool", "the starting verdict", "the final verdict"


@contextlib.contextmanager
def live_status(recorder):
    """While the block runs, a LiveStatus (the driver's `watch`) on a terminal, else None."""
    out = sys.stdout
    status = LiveStatus(out, recorder)
    if not status.line.terminal:
        yield None
        return
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = Cleared(sys.stdout, status), Cleared(sys.stderr, status)
    ticker = threading.Thread(target=status.run, daemon=True)
    ticker.start()
    try:
        yield status
    finally:
        status.stop()
        ticker.join(timeout=5)
        sys.stdout, sys.stderr = streams


class LiveStatus:
    """What runs now (from the loop's events) and its line; `run()` redraws it each TICK."""

    def __init__(self, out, recorder):
        self.line, self.recorder = StatusLine(out), recorder
        self.lock = threading.Lock()  # the ticker's thread and every write of the run
        self.doing = (STARTING, None, time.monotonic(), 0)  # (what, turn or tool, since, call)
        self.children = 0  # the child runs made before the tool that runs now
        self.open = False  # the last write left its line unfinished
        self.broke = False  # ... and the status line ended it
        self.last_write = time.monotonic()
        self.stopped = threading.Event()

    def __call__(self, event, messages):
        """The driver's `watch`: what starts or ends with `event`."""
        kind, now = event["type"], time.monotonic()
        with self.lock:
            if kind == MODEL_START:
                self.doing = (MODEL, event["turn"], now, len(self.recorder.calls))
            elif kind == TOOL_START:
                self.doing = (TOOL, event["turn"], now, str(event["name"])[:NAME_SHOWN])
                self.children = len(self.recorder.children)  # a child this call makes is new
            elif kind in (MODEL_DONE, TOOL_RESULT):
                self.doing = None
            elif kind == STOPPED:  # the final verdict runs next, until its lines are printed
                self.doing = (FINAL, None, now, 0)

    def run(self):
        while not self.stopped.wait(TICK):
            with self.lock:
                self._draw()

    def stop(self):
        self.stopped.set()
        with self.lock:
            self.line.clear()

    def _draw(self):
        if self.doing is None:
            return
        if self.open:
            quiet = time.monotonic() - self.last_write >= QUIET
            if self.doing[0] != MODEL or not quiet:
                return  # never over a line someone is writing, or a question being asked
            self.line.write("\n")
            self.open, self.broke = False, True
        self.line.draw(self.words())

    def words(self):
        """'turn 3, the model (37 s): 412 chunks, 14.7 a second' and the like."""
        what, turn, since, detail = self.doing
        seconds = time.monotonic() - since
        if what in (STARTING, FINAL):
            return f"{what} ({seconds:.0f} s)"
        if what == TOOL:
            said = f"turn {turn}, tool {detail} ({seconds:.0f} s)"
            made = self.recorder.children[self.children :]  # --explorer's child, while it runs
            return f"{said}: {self._child(made[-1])}" if made else said
        calls = self.recorder.calls
        saved = calls[detail] if len(calls) > detail else {}
        arrived = saved.get("arrived") or []
        said = f"turn {turn}, the model ({seconds:.0f} s)"
        if not arrived:
            return f"{said}: no chunk yet (the server reads the prompt first)"
        streaming = seconds - arrived[0]
        rate = f", {len(arrived) / streaming:.1f} a second" if streaming >= TICK else ""
        return f"{said}: {plural(len(arrived), 'chunk')}{rate}"

    @staticmethod
    def _child(chat):
        """'the explorer's request 2, 118 chunks': where a child run (its chat) is now."""
        if not chat.calls:
            return "the explorer starts"
        chunks = len(chat.calls[-1].get("arrived") or [])
        return f"the explorer's request {len(chat.calls)}, {plural(chunks, 'chunk')}"

    def before(self, text):
        """`text` as it is to be written now: the status line cleared first; after a line
        the status ended, its continuation indented as streamed text's next line is."""
        self.line.clear()
        if self.broke and text:
            self.broke = False
            text = text[1:] if text.startswith("\n") else "  " + text.lstrip(" ")
        return text

    def after(self, text):
        if text:
            self.open, self.last_write = not text.endswith("\n"), time.monotonic()
            if self.doing and self.doing[0] in (STARTING, FINAL):
                self.doing = None  # the verdict's own lines say it is done


class Cleared:
    """A stream (stdout or stderr) whose every write first clears the status line."""

    def __init__(self, stream, status):
        self._stream, self._status = stream, status

    def write(self, text):
        with self._status.lock:
            text = self._status.before(text)
            written = self._stream.write(text)
            self._status.after(text)
        return written

    def __getattr__(self, name):
        return getattr(self._stream, name)
