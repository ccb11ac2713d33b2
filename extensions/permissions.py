"""Permissions: `--approve` asks you before each edit and test run; `--plan` offers the model
read-only tools alone (docs/permissions.md: what the Claude Agent SDK and others do).

- `Approve`, a hook (extensions/hooks.py): before `replace_text` and `run_tests` the terminal
  shows the call (an edit as its diff, one that changes nothing said to be one:
  harness/call_preview.py) and asks allow, deny with a reason, or allow the rest of the run.
  A denial is the call's result, so the model reads why. No terminal: each is denied, said
  once. A replay applies the recorded decisions and asks no one. The seconds you took to
  answer are kept on the decision, apart from the tool's own time (harness/timeline.py).
- `PlanOnly`: only `read_file` is offered; the run ends with the model's plan, as text.

Not here: rules by pattern (the SDK's allow and deny lists), a time limit on asking.
"""

import sys
import time
from pathlib import Path

from extensions.hooks import Hook
from harness.call_preview import preview
from harness.console import visible
from plumbing.redact import redact
from plumbing.sample import SOURCE_FILE

ASKED = ("replace_text", "run_tests")  # what writes or runs code; read_file is allowed
READ_ONLY = ("read_file",)  # what --plan offers
ALLOWED, ALLOWED_REST, DENIED = "allowed", "allowed-rest", "denied"
NO_TERMINAL = "no terminal to ask: stdin is not a TTY"
REASON = "  Reason (the model reads it): "
QUESTION = "  Allow? y = yes, n = no (then a reason), a = allow the rest of the run: "


class Approve(Hook):
    """Asks `terminal` (None: asks no one, a replay's) before each call of ASKED, unless
    `recorded` ({call: (decision, said)}) already holds the answer."""

    name = "approve"

    def __init__(self, tools, log, since=1, terminal=None, recorded=None):
        super().__init__(tools, log, since)
        self.terminal, self.recorded, self.rest = terminal, recorded or {}, False

    def around(self, name, arguments, call):
        if name not in ASKED:
            return call()
        decision, said, seconds = self.answer(name, arguments)
        self.decide(decision, said, seconds)
        if decision == DENIED:
            return {"error": f"The user denied this call: {said}"}
        return call()

    def answer(self, name, arguments):
        """(decision, said, seconds you took to answer, None when no one was asked)."""
        if self.log.calls in self.recorded:  # a replay, or the turns a fork replays
            return (*self.recorded[self.log.calls], None)
        if self.rest:
            return ALLOWED, "the rest of the run was allowed", None
        if self.terminal is None:
            return DENIED, "no decision was recorded for this call", None
        asked = preview(name, arguments, Path(self.root) / SOURCE_FILE)
        decision, said, seconds = self.terminal.ask(asked)
        # subtle: only an answer given in this run allows the rest of it: a recorded `a`
        # allowed the rest of the run it was given in, not a fork's live calls
        self.rest = decision == ALLOWED_REST
        return decision, said, seconds


class PlanOnly(Hook):
    """Offers the read-only tools alone (from the request after call `since` - 1 on)."""

    name = "plan"

    @property
    def schemas(self):
        if self.log.calls + 1 < self.since:
            return self.tools.schemas
        return [s for s in self.tools.schemas if s["function"]["name"] in READ_ONLY]

    def around(self, name, arguments, call):
        if name in READ_ONLY:
            return call()
        self.decide(DENIED, f"{name} is not offered in plan mode")
        return {"error": f"Plan mode: only {', '.join(READ_ONLY)} is offered, and {name} is "
                "not run. Read what you need, then answer with your plan as text."}  # fmt: skip


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
