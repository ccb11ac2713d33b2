"""One status line at the bottom of a terminal, rewritten in place: how a long wait is shown.

A series shows each running attempt's step on it (harness/series_progress.py); a live run
its turn, what is running and what has arrived (harness/live_status.py). Both draw it the
same way: a carriage return and an erase-to-the-end (the harness's own, console.status_line)
then the text, made visible and cut to the terminal's width, so that a line that would wrap
never leaves rows behind at the next redraw. A line of the program's own clears it first.

`StatusLine` holds what is on the screen (`shown`) and whether stdout went away (`closed`);
it takes no lock: each user holds its own around every call (threads write through it).

Not here: what the line says, or when it is redrawn (the two modules above).
"""

import shutil
import unicodedata

from harness.console import status_line, visible


class StatusLine:
    """The status line of one terminal stream (`out`; `terminal`: whether it is one)."""

    def __init__(self, out):
        self.out = out
        self.terminal = callable(getattr(out, "isatty", None)) and out.isatty()
        self.shown = False  # a status line is on the screen
        self.closed = False  # stdout went away while a thread wrote

    def draw(self, text):
        """Show `text` (cut to the terminal's width) in place of the line; not on a pipe."""
        if self.terminal:
            self._status(fitted(text, shutil.get_terminal_size().columns - 1))
            self.shown = True

    def clear(self):
        """Erase the status line, if one is shown, so that the next line starts clean."""
        if self.shown:
            self._status("")
            self.shown = False

    def write(self, text):
        """Write `text` from a thread of its own: a closed stdout only sets `closed`."""
        # subtle: in a thread, a closed stdout would be a traceback of that thread; the
        # program's own next line meets it and ends the run quietly (exit_codes.py)
        if self.closed:
            return
        try:
            self.out.write(text)
            self.out.flush()
        except (BrokenPipeError, ValueError):  # ValueError: a stream already closed
            self.closed = True

    def _status(self, text):
        if not self.closed:
            try:
                status_line(self.out, text)
            except (BrokenPipeError, ValueError):
                self.closed = True


def fitted(text, columns):
    """`text` made visible (console.visible: escapes written out) and cut to `columns`
    columns, a wide character counted as two: a status line that wraps leaves its first
    rows behind at every redraw."""
    kept, used = [], 0
    for char in visible(text):
        used += 2 if unicodedata.east_asian_width(char) in "WF" else 1
        if used > columns:
            break
        kept.append(char)
    return "".join(kept)
