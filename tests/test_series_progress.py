"""What a series shows while its attempts run (harness/series_progress.py): on a terminal,
one status line rewritten in place every second; piped, a line per turn (that case is
tests/test_attempts.py's, in the series it runs). A real series of record_run.py children
in a pseudo-terminal, against the Ollama stand-in; and the two sides of the pipe, real,
with a model's tool name that holds an escape."""

import io
import os
import threading

import pytest

from agent_loop import MODEL_START, STOPPED, TOOL_START
from harness.console import SafeStream
from harness.series_progress import SETTING, Progress, attempt_watch
from tests.helpers import record_run_on_a_terminal, wait_for
from tests.ollama_test_server import ConversationServer, chunk, reply

REDRAW = "\r\x1b[K"  # the status line's own carriage return and erase-to-the-end


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_a_status_line_is_rewritten_in_place_and_a_tools_escape_is_shown_not_obeyed(
    monkeypatch,
):
    screen = Terminal()
    progress = Progress(SafeStream(screen))
    steps, writer = os.pipe()
    monkeypatch.setenv(SETTING, str(writer))
    watch = attempt_watch()  # what the attempt's driver calls after each event
    reader = threading.Thread(target=progress.follow, args=(1, steps))
    reader.start()
    watch({"type": MODEL_START, "turn": 2}, [])
    watch({"type": TOOL_START, "turn": 2, "name": "run_tests\x1b[2J"}, [])
    assert wait_for(lambda: "run_tests" in screen.getvalue())
    assert screen.getvalue().endswith(f"{REDRAW}attempt 1: turn 2, tool run_tests\\x1b[2J (0 s)")
    progress.say("[1/1] attempt 1: passed")  # the status is cleared first, then drawn again
    assert f"{REDRAW}[1/1] attempt 1: passed\n{REDRAW}attempt 1: turn 2," in screen.getvalue()
    watch({"type": STOPPED, "turn": 2, "reason": "assistant_finished"}, [])
    assert wait_for(
        lambda: screen.getvalue().endswith(f"{REDRAW}attempt 1: the final verdict (0 s)")
    )
    watch.close()  # the attempt ends: its pipe with it
    reader.join(timeout=10)
    assert not reader.is_alive() and progress.steps == {}


def test_an_attempt_outside_a_series_reports_nothing(monkeypatch):
    monkeypatch.delenv(SETTING, raising=False)
    assert attempt_watch() is None
    monkeypatch.setenv(SETTING, "not a descriptor")
    assert attempt_watch() is None


@pytest.mark.waits
def test_on_a_terminal_a_long_turn_is_never_silent(tmp_path):
    # both attempts' model answers after 3 s: the status line says so every second meanwhile
    slow = [reply(chunk(thinking="Hm."), chunk(content="Done."), chunk(done=True),
                  pause_after_first=3)]  # fmt: skip
    with ConversationServer([slow, list(slow)]) as server:
        code, shown, _ = record_run_on_a_terminal(
            "--host", server.host, "--attempts", "2", "--jobs", "2",
            "--output", tmp_path / "slow.json",
        )  # fmt: skip
    text = shown.decode()
    assert code == 1, text  # neither repaired anything
    waiting = [part for part in text.split(REDRAW) if "attempt 1: turn 1, the model (" in part]
    assert len(waiting) >= 3, text  # drawn again each second, not once per step
    seconds = {part.split("the model (")[1].split(" s)")[0] for part in waiting}
    assert {"1", "2"} <= seconds, text
    assert "[2/2] attempt" in text and "passed 0 of 2" in text


def follow_steps(out, events, monkeypatch):
    """What a Progress writing to `out` shows of `events`, sent through a real pipe."""
    progress = Progress(out)
    steps, writer = os.pipe()
    monkeypatch.setenv(SETTING, str(writer))
    watch = attempt_watch()
    reader = threading.Thread(target=progress.follow, args=(1, steps))
    reader.start()
    for event in events:
        watch(event, [])
    watch.close()  # the attempt's end closes its pipe
    reader.join(timeout=10)
    assert not reader.is_alive()
    return progress


def test_a_tool_named_like_a_step_never_passes_for_one(monkeypatch):
    piped = io.StringIO()
    named = {"type": TOOL_START, "turn": 1, "name": "the final verdict"}
    follow_steps(piped, [{"type": MODEL_START, "turn": 1}, named], monkeypatch)
    assert piped.getvalue() == "  attempt 1: turn 1, the model\n"  # a tool is no turn's line


def test_the_status_line_fits_the_terminal_in_columns_once_made_visible(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    for name in ("\x1b" * 40, "\u202e" * 40, "漢" * 40):
        screen = Terminal()
        progress = Progress(SafeStream(screen))
        progress.steps[1] = ({"turn": 1, "step": "tool", "name": name}, 0.0)
        progress.tick()
        shown = screen.getvalue().rsplit(REDRAW, 1)[1]
        columns = sum(2 if "\u4e00" <= char <= "\u9fff" else 1 for char in shown)
        assert 0 < columns <= 79, (name[:1], shown)


class Closed(io.StringIO):
    def write(self, text):
        raise BrokenPipeError(32, "Broken pipe")


def test_a_closed_stdout_stops_the_readers_quietly(monkeypatch):
    # the series' own next line meets it and exits 141 (exit_codes.py); a reader's thread
    # must not die with a traceback first
    raised = []
    monkeypatch.setattr(threading, "excepthook", raised.append)
    progress = follow_steps(Closed(), [{"type": MODEL_START, "turn": 1}], monkeypatch)
    assert raised == [] and progress.closed
