"""Extensions: what coding agents add around the loop, each one a wrapper in a file of its own.

The loop takes a `chat` and `tools` (agent_loop.py). An extension is an object with the
same interface, the same `schemas` and `invoke` or the same call, that holds the real one
and decides around it, as WSGI middleware wraps an application: the loop never learns it
is there, and agent_loop.py has no line for it. Today the hooks (extensions/hooks.py:
`--hook syntax`, `--hook tests-after-edit`; docs/hooks.md); a permission check would wrap
the tools the same way, a context policy the chat. The control arm `--one-shot`
(extensions/one_shot.py; docs/one-shot.md) wraps the loop itself: one turn, no tools.

`Extensions` is the set a run turns on: it wraps the tools the driver makes
(plumbing/driver.py's `tools`) or its loop (`loop`), keeps every decision in a `Log`,
shows each one in the terminal as the run goes (a `watch` of the driver's), and says what
a recording keeps of them (plumbing/decisions.py); replay.py builds the same set from a
recording. Above plumbing/ and beside the loop: nothing below imports this folder.
"""

from extensions.hooks import Log
from extensions.one_shot import OneShot
from extensions.syntax import Syntax
from extensions.tests_after_edit import TestsAfterEdit
from plumbing.decisions import calls_made, decision_line
from plumbing.recording import RecordingError
from plumbing.tasks import TASKS

# In the order they wrap the tools, innermost first, whatever order the flags came in:
# an edit the syntax hook undoes runs no tests.
HOOKS = {hook.name: hook for hook in (Syntax, TestsAfterEdit)}
KNOWN = {OneShot.name: OneShot, **HOOKS}  # each has its `page` in docs/


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


def one_shot_option(parser):
    """record_run.py's `--one-shot`; check_one_shot refuses what it cannot go with."""
    parser.add_argument(
        "--one-shot",
        action="store_true",
        help="the control arm: ask the model once, with no tools, for the whole corrected "
        "path_rules.py in one fenced block (the task, both files and the starting test run in "
        "one message), write the block over the copy and judge it with the same verdict; one "
        "request, so --max-turns does not apply; not with --fork, --hook, --text-calls or an "
        "impossible --task (docs/one-shot.md) (default: the loop)",
    )


def check_one_shot(parser, args):
    """Refuse with one `error:` line, before anything runs, a flag --one-shot cannot take:
    each needs a loop that offers tools."""
    task = args.task and TASKS[args.task]
    given = {
        "--fork": args.fork is not None,  # a one-shot has no turns to replay
        "--hook": args.hook,  # a hook acts around a tool call
        "--text-calls": args.text_calls,  # a call written as text runs a tool
        f"--task {args.task}": task and task.impossible,  # flagged: after it read the tests
    }
    refused = [flag for flag, on in given.items() if on]
    if args.one_shot and refused:
        parser.error(f"--one-shot offers no tools, which {refused[0]} needs; leave one out")


class Extensions:
    """The extensions of one run and what they decided in it (`log`). `names`: in any order;
    `settings`: {name: its settings} for those that have any. The one setting today is
    `from_call` N: the hook lets the calls before the Nth pass untouched (a fork's own hook
    acts from its first live call: the turns it replays must go as its parent's went)."""

    def __init__(self, names=(), settings=None):
        self.on = [
            {"name": n, "settings": (settings or {}).get(n, {})} for n in KNOWN if n in names
        ]
        self.one_shot = OneShot.name in names
        self.log = Log()

    @classmethod
    def chosen(cls, args):
        """The extensions record_run.py's flags turn on (--hook, --one-shot)."""
        return cls([*args.hook, *[OneShot.name] * args.one_shot])

    @classmethod
    def of(cls, recording, names=(), path="the recording", at=None):
        """The extensions `recording` (at `path`) had, none when it holds no field, and
        `names` too; with `at` (a fork's turn), those of `names` it did not have act from
        the first call of that turn. RecordingError for one this lab does not have."""
        had = {e["name"]: e["settings"] for e in (recording.get("extensions") or {"on": []})["on"]}
        for name, settings in had.items():
            if name not in KNOWN:
                raise RecordingError(f"{path}: extension {name!r:.100} is not one this lab has")
            if set(settings) - {"from_call"} or not all(map(_whole, settings.values())):
                raise RecordingError(f'{path}: the settings of extension {name!r} must be {{}} '
                                     'or {"from_call": N}, N from 1')  # fmt: skip
        if OneShot.name in had and (len(had) > 1 or recording.get("fork") or at):
            raise RecordingError(f"{path}: a one-shot run has one turn and no tools: it is no "
                                 "fork, has no other extension, and cannot be forked")  # fmt: skip
        replayed = [e for e in recording["events"] if e["turn"] < (at or 1)]  # a fork's
        since = len(calls_made(replayed)) + 1  # the first live call, where its own hooks begin
        added = {name: {"from_call": since} if since > 1 else {} for name in names}
        return cls([*had, *added], {**added, **had})

    def tools(self, make):
        """A `tools` for plumbing/driver.py's drive: `make`'s tools, wrapped in the hooks."""

        def build(*args, **options):
            tools = make(*args, **options)
            for hook in (h for h in self.on if h["name"] in HOOKS):  # innermost first
                tools = HOOKS[hook["name"]](tools, self.log, hook["settings"].get("from_call", 1))
            return tools

        return build

    def loop(self, make):
        """A `loop` for drive: `make` (agent_loop.AgentLoop), or with --one-shot a OneShot
        around it; `planned(plan)` is the plan it is given (one_shot.py's prompts, one turn)."""
        if not self.one_shot:
            return make
        return lambda *args, **options: OneShot(make, self.log, *args, **options)

    def planned(self, plan):
        return OneShot.planned(plan) if self.one_shot else plan

    def watch(self, then=None, out=None):
        """A `watch` for drive that says which are on at the first event, prints each new
        decision after the event that follows it (the call's result), then calls `then`
        (another watch, or None)."""
        if not self.on:
            return then
        on = [h["name"] + "".join(f" ({k} {v})" for k, v in h["settings"].items()) for h in self.on]
        pages = ", ".join(dict.fromkeys(KNOWN[h["name"]].page for h in self.on))
        heading, shown = f"Extensions on: {', '.join(on)} ({pages})", 0

        def watch(event, messages):
            nonlocal heading, shown
            if heading:  # at the first event, before anything of turn 1
                print(heading, file=out)  # out None: sys.stdout, as the printer's
                heading = None
            for decision in self.log.decisions[shown:]:
                print(f"  {decision_line(decision)}", file=out)
            shown = len(self.log.decisions)
            if then:
                then(event, messages)

        return watch

    def recorded(self):
        """The recording's `extensions` field (plumbing/decisions.py), or None: none on."""
        return {"on": self.on, "decisions": self.log.decisions} if self.on else None


def _whole(number):
    return isinstance(number, int) and not isinstance(number, bool) and number >= 1
