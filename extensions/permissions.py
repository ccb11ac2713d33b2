"""Permissions: `--approve` asks you before each edit and test run; `--plan` offers the model
read-only tools alone (docs/permissions.md: what the Claude Agent SDK and others do).

- `Approve`, a hook (extensions/hooks.py): before `replace_text`, `run_tests` and each call
  of an MCP server's tool (extensions/mcp_tools.py) the terminal
  shows the call (an edit as its diff, one that changes nothing said to be one:
  harness/call_preview.py) and asks allow, deny with a reason, or allow the rest of the run
  (extensions/terminal.py). A denial is the call's result, so the model reads why. No
  terminal: each is denied, said once. A replay applies the recorded decisions and asks no
  one. The seconds you took to answer are kept on the decision, apart from the tool's own
  time (harness/timeline.py).
- `PlanOnly`: only `read_file` is offered; the run ends with the model's plan, as text.

Not here: rules by pattern (the SDK's allow and deny lists), a time limit on asking.
"""

from pathlib import Path

from agent_loop import ASSISTANT_FINISHED, STOPPED
from extensions.extension import FROM_CALL
from extensions.hooks import Hook
from extensions.terminal import ALLOWED, ALLOWED_REST, DENIED
from harness.call_preview import preview
from plumbing.mcp_offer import SEPARATOR
from plumbing.sample import SOURCE_FILE

ASKED = ("replace_text", "run_tests")  # what writes or runs code; read_file is allowed
# ... and every tool an MCP server offers (SERVER__TOOL, plumbing/mcp_offer.py): it may do
# anything
READ_ONLY = ("read_file",)  # what --plan offers


def permission_flags(parser, kinds):
    """--approve or --plan, never both: --plan offers nothing --approve asks about (`kinds`:
    these two, as they wrap)."""
    asking = parser.add_mutually_exclusive_group()
    for kind in (Approve, PlanOnly):  # --approve first in --help, whatever order they wrap in
        asking.add_argument(f"--{kind.name}", action="store_true", help=kind.helps)


class Permission(Hook):
    """A hook turned on by a flag of its own, --NAME (--approve, --plan)."""

    page = "permissions"
    flag = staticmethod(permission_flags)

    @classmethod
    def chosen(cls, args):  # a switch, not a choice of --hook
        return {} if getattr(args, cls.name) else None


class Approve(Permission):
    """Asks `terminal` (None: asks no one, a replay's) before each call of ASKED or of an
    MCP server's tool, unless `recorded` ({call: (decision, said)}) already holds the answer."""

    name = "approve"
    helps = (
        "before each replace_text, run_tests and call of an MCP server's tool (--mcp), show "
        "the call (an edit as its diff) and ask: "
        "allow, deny with a reason the model reads, or allow the rest of the run; read_file "
        "is allowed; with no terminal on stdin, each is denied (docs/permissions.md)"
    )

    def __init__(self, tools, log, since, terminal, recorded):  # made by `wrapped`, below
        super().__init__(tools, log, since)
        self.terminal, self.recorded, self.rest = terminal, recorded, False

    @classmethod
    def check_options(cls, parser, args):
        if args.approve and args.attempts > 1:
            parser.error("--approve asks at the terminal, and a series' attempts have none; "
                         "give --attempts 1")  # fmt: skip

    @classmethod
    def wrapped(cls, tools, settings, extensions):
        """Asking `extensions.terminal`, answered first by the decisions it applies."""
        answers = {d["call"]: (d["decision"], d["said"]) for d in extensions.applied
                   if d["extension"] == cls.name}  # fmt: skip
        return cls(tools, extensions.log, settings.get(FROM_CALL, 1), extensions.terminal, answers)

    def around(self, name, arguments, call):
        offered = SEPARATOR in str(name) and any(  # a name no server offers runs nothing
            s["function"]["name"] == name for s in self.tools.schemas
        )
        if name not in ASKED and not offered:
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


class PlanOnly(Permission):
    """Offers the read-only tools alone (from the request after call `since` - 1 on)."""

    name = "plan"
    helps = (
        "offer the model read_file alone: the run ends with its plan, and the verdict is run "
        "as always (docs/permissions.md)"
    )

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

    @staticmethod
    def noted(event):
        if event["type"] == STOPPED and event["reason"] == ASSISTANT_FINISHED:
            return f"[plan] the model's plan is its text of turn {event['turn']}, above"
        return None
