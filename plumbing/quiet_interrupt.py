"""Ctrl-C while a CLI is still starting: exit 130 at once, without a traceback.

record_run.py, replay.py and ask.py import this module before anything slow (the SDK and
its dependencies take about 0.3 s to import): until the CLI calls `ready()`, Ctrl-C exits
quietly with status 130, as it does once the CLI runs. `ready()` hands Ctrl-C back to
Python's KeyboardInterrupt, which each CLI lets reach `run_program` (plumbing/exit_codes.py),
or handles first where it has something to save or cancel.

Not here: anything a library user would notice. The handler is installed only when one of
those scripts is the program being run, never in a process that merely imports them.
"""

import signal
import sys
from pathlib import Path

from plumbing.exit_codes import EXIT_INTERRUPTED

CLIS = ("record_run.py", "replay.py", "ask.py")


def _exit_quietly(signum, frame):
    sys.stderr.write("\ninterrupted\n")
    raise SystemExit(EXIT_INTERRUPTED)


def ready():
    """From here on, Ctrl-C raises KeyboardInterrupt again (when it is not ignored)."""
    if signal.getsignal(signal.SIGINT) is _exit_quietly:
        signal.signal(signal.SIGINT, signal.default_int_handler)


# subtle: only where Ctrl-C is on at all; a shell's background job ignores it, and stays so.
if Path(sys.argv[0]).name in CLIS and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
    signal.signal(signal.SIGINT, _exit_quietly)
