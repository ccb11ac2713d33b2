"""Hooks: code that runs around a tool call, as a wrapper of the loop's tools.

The Claude Agent SDK runs a `PreToolUse` hook before a tool (it may refuse the call, with a
reason the model reads) and a `PostToolUse` hook after it (it may check or add to the
result). Here a hook is one object with the loop's own interface, `schemas` and `invoke`,
that holds the tools it wraps (repo_tools.RepoTools, or another hook) and decides around
each call in `around`: what it does before `call()` is its pre-tool part, what it does
with the result its post-tool part, and not calling at all is a refusal. The loop never
learns that a hook is there; it sees tools.

Every decision is kept in the run's `Log`, numbered by the call it was about (the Nth call
the tools ran, counted outside every hook: extensions/extension.py's `Counted`), so that a
recording can say what each hook decided and a replay can check it decides the same. Each
hook is a choice of `--hook NAME`, its `helps` a part of that flag's help; its place in the
composer's list (extensions/__init__.py) is where it wraps (docs/hooks.md).

Not here: a hook itself (extensions/syntax.py, extensions/tests_after_edit.py).
"""

from extensions.extension import Extension
from plumbing.redact import redact


def hook_flag(parser, hooks):
    """--hook NAME, repeatable, a choice for each of `hooks` (the composer's, in order)."""
    said = ", ".join(f"{hook.name} ({hook.helps})" for hook in hooks)
    parser.add_argument(
        "--hook", action="append", choices=[hook.name for hook in hooks], default=[],
        metavar="NAME", help=f"run a hook around each tool call (repeatable): {said} "
        "(docs/hooks.md) (default: none)",
    )  # fmt: skip


class Hook(Extension):
    """Base of a hook: the wrapped tools' `schemas` and an `invoke` that runs `around`."""

    name = ""  # as `--hook NAME` and a recording name it
    helps = ""  # what it does, in words, in the help of --hook
    flag = staticmethod(hook_flag)  # one flag for every hook

    @classmethod
    def chosen(cls, args):
        return {} if cls.name in args.hook else None

    def __init__(self, tools, log, since=1):
        self.tools, self.log, self.root = tools, log, tools.root  # the copy the tools act on
        self.since = since  # the first call it acts on (a fork's own hook: its first live one)

    @property
    def schemas(self):
        return self.tools.schemas  # a hook offers the model no tool of its own

    def invoke(self, name, arguments):
        """As ToolBox.invoke (tool_guard.py): always a JSON-ready dict, never an exception."""
        if self.log.calls < self.since:  # counted already, outside every hook
            return self.tools.invoke(name, arguments)
        try:
            result = self.around(name, arguments, lambda: self.tools.invoke(name, arguments))
        except Exception as error:  # a hook's own failure must not end the run either
            said = f"{type(error).__name__}: {error}"
            self.decide("failed", said)
            result = {"error": f"the {self.name} hook failed ({said}); the call may have run"}
        return redact(result)  # every tool result passes here, as through ToolBox.invoke

    def around(self, name, arguments, call):
        """Run the call (`call()` returns its result) and decide around it; a subclass's."""
        raise NotImplementedError

    def decide(self, decision, said, seconds=None, **kept):
        """Keep one decision about the call being run: a word, what it said in words, and
        what else the recording keeps of it (`kept`: tests-after-edit's test run); with
        `seconds`, how long a person took to make it (--approve's, at a terminal)."""
        entry = {"extension": self.name, "call": self.log.calls, "decision": decision}
        timed = {} if seconds is None else {"seconds": round(seconds, 3)}
        self.log.decisions.append({**entry, "said": said, **kept, **timed})


def landed(name, result):
    """Whether a call was a `replace_text` that changed path_rules.py."""
    return name == "replace_text" and "error" not in result and result.get("replaced") == 1
