"""What a live run shows while it waits (harness/live_status.py): on a terminal, one status
line rewritten about every second while the model works and while a tool runs, cleared
before every line of the run's own; piped, nothing. A real record_run.py on a pseudo-terminal
against the Ollama stand-in, whose model pauses mid-turn and whose edit makes the tests slow
(both hand-written); and the line's rules, on a stream that says it is a terminal."""

import io
import re

import pytest

from agent_loop import MODEL_DONE, MODEL_START, STOPPED, TOOL_START
from harness.chats import RecordingChat
from harness.child_runs import live_children
from harness.console import SafeStream
from harness.live_status import Cleared, LiveStatus
from tests.helpers import record, record_run_on_a_terminal
from tests.ollama_test_server import OllamaTestServer, call, chunk, reply

REDRAW = "\r\x1b[K"  # the status line's own carriage return and erase-to-the-end
DOC = '"""Path rules for a small CI helper: which changed files should the Python checks see?"""'
SLOW = DOC + "\nimport time\ntime.sleep(2)"  # each test run now takes two seconds more


def script():
    """Turn 1 pauses after its thinking; turn 2's run_tests runs the slow edit of turn 1;
    turn 3 undoes it, so that the final verdict is quick again."""
    return [
        reply(
            chunk(thinking="Slow."),
            chunk(tool_calls=[call("replace_text", old=DOC, new=SLOW)]),
            chunk(done=True),
            pause_after_first=2.5,
        ),
        reply(chunk(tool_calls=[call("run_tests")]), chunk(done=True)),
        reply(chunk(tool_calls=[call("replace_text", old=SLOW, new=DOC)]), chunk(done=True)),
        reply(chunk("Done."), chunk(done=True)),
    ]


def transcript(text):
    """The lines from the first turn to the stop."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("turn 1 "))
    end = next(i for i, line in enumerate(lines) if line.startswith("Stop: "))
    return lines[start : end + 1]


@pytest.mark.waits
def test_on_a_terminal_the_model_and_a_slow_tool_are_never_silent(tmp_path):
    with OllamaTestServer(script()) as server:
        code, shown, errors = record_run_on_a_terminal(
            "--host", server.host, "--output", tmp_path / "tty.json"
        )
    text = shown.decode().replace("\r\n", "\n")  # the terminal's own line ends
    assert code == 1, text + errors.decode()
    drawn = re.findall(r"\r\x1b\[K([^\r\n]+)(?=\r\x1b\[K)", text)  # each status, as drawn
    waiting = [line for line in drawn if line.startswith("turn 1, the model (")]
    assert waiting and all(line.endswith(": 1 chunk") or "1 chunk, " in line for line in waiting)
    running = {line for line in drawn if line.startswith("turn 2, tool run_tests (")}
    assert {"turn 2, tool run_tests (1 s)"} <= running, drawn  # redrawn as the seconds pass
    # every status was cleared before the run's next line: the lines read as piped
    plain = re.sub(r"\r\x1b\[K[^\r\n]*(?=\r\x1b\[K)", "", text).replace(REDRAW, "")
    with OllamaTestServer(script()) as server:
        piped = record("--host", server.host, "--output", tmp_path / "piped.json")
    assert "\r" not in piped.stdout and "\x1b" not in piped.stdout  # piped: nothing drawn
    assert transcript(plain) == transcript(piped.stdout)


class Terminal(io.StringIO):
    def isatty(self):
        return True


def status_on_a_terminal():
    screen = Terminal()
    status = LiveStatus(SafeStream(screen), RecordingChat(None))
    return screen, status, Cleared(SafeStream(screen), status)


def test_a_line_of_the_models_text_is_ended_only_after_a_quiet_second_and_continued_below():
    screen, status, out = status_on_a_terminal()
    status({"type": MODEL_START, "turn": 2}, [])
    out.write("turn 2 says: I will")
    status._draw()  # at once: the model is still writing its line, which is not ended
    assert screen.getvalue() == "turn 2 says: I will"
    status.last_write -= 2  # a quiet second and more
    status._draw()
    assert screen.getvalue() == (
        f"turn 2 says: I will\n{REDRAW}turn 2, the model (0 s): no chunk yet (the server reads "
        "the prompt first)"
    )
    out.write(" read it.")  # the text goes on, indented as its next line would be
    out.write("\n")
    assert screen.getvalue().endswith(f"first){REDRAW}  read it.\n")


def test_a_question_left_open_during_a_tool_is_never_drawn_over():
    # --approve's question ends without a newline while its call's tool_start is the last
    # event: the status must wait for the answer, however long it takes
    screen, status, out = status_on_a_terminal()
    status({"type": TOOL_START, "turn": 1, "name": "replace_text\x1b[2J"}, [])
    status._draw()
    assert screen.getvalue() == f"{REDRAW}turn 1, tool replace_text\\x1b[2J (0 s)"
    out.write("  Allow? y = yes, n = no: ")
    status.last_write -= 60
    status._draw()
    assert screen.getvalue().endswith(f"{REDRAW}  Allow? y = yes, n = no: ")


def test_the_verdicts_are_named_and_nothing_is_drawn_between_a_turns_end_and_the_next():
    # before the first turn, the starting verdict runs; after the stop, the final one; in
    # between two of the loop's events (a turn ended, a tool's result came) nothing runs
    # that the line could name, so it stays as it was
    screen, status, _ = status_on_a_terminal()
    status._draw()
    assert screen.getvalue() == f"{REDRAW}the starting verdict (0 s)"
    status({"type": MODEL_START, "turn": 1}, [])
    status({"type": MODEL_DONE, "turn": 1}, [])
    drawn = screen.getvalue()
    status._draw()
    assert screen.getvalue() == drawn
    status({"type": STOPPED, "reason": "assistant_finished"}, [])
    status._draw()
    assert screen.getvalue().endswith(f"{REDRAW}the final verdict (0 s)")


def test_a_child_run_shows_where_it_is_while_its_call_runs():
    screen, status, _ = status_on_a_terminal()
    status.recorder.children.append(RecordingChat(None))  # an earlier call's child
    status({"type": TOOL_START, "turn": 3, "name": "explore"}, [])
    assert status.words() == "turn 3, tool explore (0 s)"  # no child of its own yet
    child = live_children(status.recorder)(2)
    assert status.words() == "turn 3, tool explore (0 s): the explorer starts"
    child.calls.append({"arrived": [0.1, 0.2]})
    child.calls.append({"arrived": [0.5]})
    assert status.words() == "turn 3, tool explore (0 s): the explorer's request 2, 1 chunk"
