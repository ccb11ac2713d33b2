"""Extensions: what coding agents add around the loop, each one a wrapper in a file of its own.

The loop takes a `chat` and `tools` (agent_loop.py). An extension is an object with the
same interface, the same `schemas` and `invoke` or the same call, that holds the real one
and decides around it, as WSGI middleware wraps an application: the loop never learns it
is there, and agent_loop.py has no line for it. Today the hooks (extensions/hooks.py:
`--hook syntax`, `--hook tests-after-edit`; docs/hooks.md); a permission check would wrap
the tools the same way, a context policy the chat.

`Extensions` is the set a run turns on: it wraps the tools the driver makes
(plumbing/driver.py's `tools`), keeps every decision in a `Log`, shows each one in the
terminal as the run goes (a `watch` of the driver's), and says what a recording keeps of
them (plumbing/decisions.py); replay.py builds the same set from a recording. Above
plumbing/ and beside the loop: nothing below imports this folder.
"""

import sys

from extensions.hooks import Log
from extensions.syntax import Syntax
from extensions.tests_after_edit import TestsAfterEdit
from plumbing.decisions import decision_line
from plumbing.recording import RecordingError

# In the order they wrap the tools, innermost first, whatever order the flags came in:
# an edit the syntax hook undoes runs no tests.
HOOKS = {hook.name: hook for hook in (Syntax, TestsAfterEdit)}


def hook_option(parser):
    """record_run.py's `--hook NAME` (repeatable)."""
    parser.add_argument(
        "--hook",
        action="append",
        choices=tuple(HOOKS),
        default=[],
        metavar="NAME",
        help="run a hook around each tool call (repeatable): syntax (an edit that leaves "
        "path_rules.py unable to compile is undone, and the model reads the SyntaxError), "
        "tests-after-edit (after an edit that landed, the visible tests' one-line summary is "
        "added to its result); kept in the recording, applied again by replay, and with "
        "--fork added to the recording's own (docs/hooks.md) (default: none)",
    )


class Extensions:
    """The extensions of one run, by name (`names`: a recording's or the flags', in any
    order), and what they decided in it (`log`)."""

    def __init__(self, names=()):
        self.on = [name for name in HOOKS if name in names]
        self.log = Log()

    @classmethod
    def of(cls, recording, names=(), path="the recording"):
        """The extensions `recording` (at `path`) had, none when it holds no field, and
        `names` too: a fork's replayed turns must run as its parent's did. RecordingError
        for one this lab does not have."""
        had = [e["name"] for e in (recording.get("extensions") or {"on": []})["on"]]
        unknown = sorted(set(had) - set(HOOKS))
        if unknown:
            raise RecordingError(f"{path}: extension {unknown[0]!r} is not one this lab has")
        return cls([*had, *names])

    def tools(self, make):
        """A `tools` for plumbing/driver.py's drive: `make`'s tools, wrapped in the hooks."""
        if not self.on:
            return make

        def build(*args, **options):
            tools = make(*args, **options)
            for name in self.on:
                tools = HOOKS[name](tools, self.log)
            return tools

        return build

    def watch(self, then=None, out=None):
        """A `watch` for drive that prints each new decision after the event that follows
        it (the call's result), then calls `then` (another watch, or None)."""
        if not self.on:
            return then
        shown = None  # no line yet: the first says which are on

        def watch(event, messages):
            nonlocal shown
            if shown is None:
                print(
                    f"Extensions on: {', '.join(self.on)} (docs/hooks.md)", file=out or sys.stdout
                )
            for decision in self.log.decisions[shown or 0 :]:
                print(f"  {decision_line(decision)}", file=out or sys.stdout)
            shown = len(self.log.decisions)
            if then is not None:
                then(event, messages)

        return watch

    def recorded(self):
        """The recording's `extensions` field (plumbing/decisions.py), or None: none on."""
        if not self.on:
            return None
        on = [{"name": name, "settings": {}} for name in self.on]
        return {"on": on, "decisions": self.log.decisions}
