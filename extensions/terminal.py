"""The person `--approve` asks (extensions/permissions.py): `Terminal.ask` shows a call and
reads allow, deny with a reason, or allow the rest of the run, from stdin.

With no terminal on stdin, each call asked about is denied, and that is said once: the run
goes on, and the model reads each denial as its call's result. What it shows of a call is
model-written text: control characters made visible, the harness's secrets redacted.

Not here: which calls are asked about, or what a recorded answer does (permissions.py).
"""

import sys
import time

from harness.console import visible
from plumbing.redact import redact

ALLOWED, ALLOWED_REST, DENIED = "allowed", "allowed-rest", "denied"
NO_TERMINAL = "no terminal to ask: stdin is not a TTY"
REASON = "  Reason (the model reads it): "
QUESTION = "  Allow? y = yes, n = no (then a reason), a = allow the rest of the run: "


class Terminal:
    """The person at the terminal: `ask` shows a call and reads the answer from stdin."""

    def __init__(self, stdin=None, out=None):
        self.stdin, self.out, self.told = stdin, out, False  # None: sys's, when asked

    def ask(self, lines):
        """(decision, said, the seconds from the question to the answer; None: not asked)."""
        stdin, out = self.stdin or sys.stdin, self.out or sys.stdout
        if not stdin.isatty():
            if not self.told:  # once: the run goes on, and each denial is its call's result
                print(f"  [approve] {NO_TERMINAL}: each replace_text and run_tests is denied",
                      file=out)  # fmt: skip
                self.told = True
            return DENIED, NO_TERMINAL, None
        print("\n".join(visible(redact(line)) for line in lines), file=out)  # model-written
        asked = time.monotonic()
        decision, said = self.decision(stdin, out)
        return decision, said, time.monotonic() - asked

    def decision(self, stdin, out):
        while True:
            said = self.answer(QUESTION, stdin, out)
            if said is None:  # end of input: nobody is there to allow it
                return DENIED, "no answer (end of input)"
            if said.lower() in ("y", "a"):
                return (ALLOWED if said.lower() == "y" else ALLOWED_REST), "by the user"
            if said.lower() == "n":
                return DENIED, self.answer(REASON, stdin, out) or "no reason given"

    def answer(self, question, stdin, out):
        """One line typed after `question`, stripped; None at the end of input."""
        print(question, end="", file=out, flush=True)
        said = stdin.readline()
        if not out.isatty():  # the terminal echoed it on its own screen: say it here too
            print(visible(said.strip()), file=out)
        return said.strip() if said else None
