"""Extensions: what coding agents add around the loop, each one a wrapper in a file of its own.

The loop takes a `chat` and `tools` (agent_loop.py). An extension is an object with the
same interface, the same `schemas` and `invoke` or the same call, that holds the real one
and decides around it, as WSGI middleware wraps an application: the loop never learns it
is there, and agent_loop.py has no line for it. Four kinds ship:

- hooks (extensions/hooks.py: `--hook syntax`, `--hook tests-after-edit`; docs/hooks.md),
  around the tools;
- permissions (extensions/permissions.py: `--approve`, `--plan`; docs/permissions.md),
  around the tools;
- context management (extensions/keep_results.py: `--keep-results N`; docs/context.md),
  around the chat;
- the control arm (extensions/one_shot.py: `--one-shot`; docs/one-shot.md), around the loop
  itself: one turn, no tools.

`Extensions` is the set a run turns on: it wraps the tools the driver makes
(harness/driver.py's `tools`), the chat it is given and its loop (`loop`), keeps every
decision in a `Log`, shows each one in the terminal as the run goes (a `watch` of the
driver's), and says what a recording keeps of them (harness/decisions.py); replay.py
builds the same set from a recording and asks no one. Above plumbing/ and beside the loop:
nothing below imports this folder.
"""

from agent_loop import ASSISTANT_FINISHED, STOPPED, TEXT_DELTA, THINKING_DELTA
from extensions.hooks import Log
from extensions.keep_results import Counted, KeepResults
from extensions.one_shot import OneShot
from extensions.permissions import Approve, PlanOnly, Terminal
from extensions.syntax import Syntax
from extensions.tests_after_edit import TestsAfterEdit
from harness.decisions import calls_made, decision_line
from harness.recording_checks import RecordingError
from harness.recording_format import NO_RELATIONS
from harness.tasks import TASKS
from plumbing.limits import is_whole, positive_int

# In the order they wrap the tools, innermost first, whatever order the flags came in: an
# edit the syntax hook undoes runs no tests; you are asked about the model's calls before
# any hook acts (and not about the tests a hook runs). keep-results wraps the chat.
TOOLS = {kind.name: kind for kind in (Syntax, TestsAfterEdit, PlanOnly, Approve)}
HOOKS = ("syntax", "tests-after-edit")
ORDER = (OneShot.name, *TOOLS, KeepResults.name)
PAGES = {"approve": "permissions", "plan": "permissions", KeepResults.name: "context",
         OneShot.name: "one-shot"}  # fmt: skip


def extension_options(parser):
    """record_run.py's --hook NAME (repeatable), --approve, --plan, --keep-results N."""
    parser.add_argument(
        "--hook", action="append", choices=HOOKS, default=[], metavar="NAME",
        help="run a hook around each tool call (repeatable): syntax (an edit that leaves "
        "path_rules.py unable to compile is undone, and the model reads the SyntaxError), "
        "tests-after-edit (after an edit that landed, the visible tests' one-line summary is "
        "added to its result) (docs/hooks.md) (default: none)",
    )  # fmt: skip
    asking = parser.add_mutually_exclusive_group()  # --plan offers nothing --approve asks about
    asking.add_argument(
        "--approve", action="store_true",
        help="before each replace_text and run_tests, show the call (an edit as its diff) and "
        "ask: allow, deny with a reason the model reads, or allow the rest of the run; "
        "read_file is allowed; with no terminal on stdin, each is denied (docs/permissions.md)",
    )  # fmt: skip
    asking.add_argument(
        "--plan", action="store_true",
        help="offer the model read_file alone: the run ends with its plan, and the verdict "
        "is run as always (docs/permissions.md)",
    )  # fmt: skip
    parser.add_argument(
        "--keep-results", type=positive_int, metavar="N",
        help="send the last N tool results whole and each older one as one line that says "
        "what it was; the conversation is kept whole (docs/context.md) (default: all whole). "
        "Each of these is kept in the recording, applied again by replay, and with --fork "
        "added to the recording's own from its first live call",
    )  # fmt: skip
    parser.add_argument(
        "--one-shot", action="store_true",
        help="the control arm: ask the model once, with no tools, for the whole corrected "
        "path_rules.py in one fenced block (the task, both files and the starting test run in "
        "one message), write the block over the copy and judge it with the same verdict; one "
        "request, so --max-turns does not apply; with none of --fork, --hook, --approve, "
        "--plan, --keep-results, --text-calls or an impossible --task (docs/one-shot.md) "
        "(default: the loop)",
    )  # fmt: skip


def check_options(parser, args):
    """Refuse, as argparse does, what the extension options cannot do together."""
    if args.approve and args.attempts > 1:
        parser.error("--approve asks at the terminal, and a series' attempts have none; "
                     "give --attempts 1")  # fmt: skip
    task = args.task and TASKS[args.task]
    given = {  # each needs the loop's tools or turns, which --one-shot has not
        "--fork": args.fork is not None,  # a one-shot has no turns to replay
        "--hook": args.hook,  # a hook acts around a tool call
        "--approve": args.approve,  # asks about tool calls
        "--plan": args.plan,  # offers read_file
        "--keep-results": args.keep_results,  # shortens tool results
        "--text-calls": args.text_calls,  # a call written as text runs a tool
        f"--task {args.task}": task and task.impossible,  # flagged: after it read the tests
    }
    refused = [flag for flag, on in given.items() if on]
    if args.one_shot and refused:
        parser.error(f"--one-shot offers no tools, which {refused[0]} needs; leave one out")


class Extensions:
    """The extensions of one run and what they decided in it (`log`). `names`: in any order;
    `settings`: {name: its settings} for those that have any: `keep` N (keep-results), and
    `from_call` N (the extension lets the calls before the Nth pass untouched: on a fork,
    each acts from its first live call at the latest, and one only the fork turned on from
    there, since the turns it replays must go as its parent's went).
    `terminal`: who --approve asks (None: no one); `recorded`: the decisions it applies."""

    def __init__(self, names=(), settings=None, terminal=None, recorded=()):
        settings = settings or {}
        self.on = [{"name": n, "settings": settings.get(n, {})} for n in ORDER if n in names]
        self.log, self.terminal = Log(), terminal
        self.one_shot = OneShot.name in names
        self.names_unchanged = True  # a one-shot's block that changes nothing is said so
        self.answers = {d["call"]: (d["decision"], d["said"]) for d in recorded
                        if d["extension"] == Approve.name}  # fmt: skip

    @classmethod
    def chosen(cls, args):
        """The extensions record_run.py's options turn on."""
        keep = {KeepResults.name: {"keep": args.keep_results}} if args.keep_results else {}
        names = [*args.hook, *(n for n in ("approve", "plan") if getattr(args, n)), *keep]
        names += [OneShot.name] * args.one_shot
        return cls(names, keep, Terminal() if args.approve else None)

    @classmethod
    def of(cls, recording, names=(), path="the recording", at=None, terminal=None):
        """The extensions `recording` (at `path`) had, none when it holds no field, and
        `names` too (a list, or {name: settings}); with `at` (a fork's turn), each acts from
        the first call of that turn at the latest (see `acting_from`), and --approve asks
        `terminal` about the calls the recording did not decide. RecordingError for an
        extension this lab does not have, or settings it does not take."""
        field = recording.get("extensions") or {"on": [], "decisions": []}
        had = {e["name"]: e["settings"] for e in field["on"]}
        for name, settings in had.items():
            settings_problem(name, settings, path)
        if OneShot.name in had and (len(had) > 1 or recording.get("fork") or at):
            raise RecordingError(f"{path}: a one-shot run has one turn and no tools: it is no "
                                 "fork, has no other extension, and cannot be forked")  # fmt: skip
        replayed = [e for e in recording["events"] if e["turn"] < (at or 1)]  # a fork's
        since = len(calls_made(replayed)) + 1  # the first live call, where its own ones begin
        wanted = names if isinstance(names, dict) else dict.fromkeys(names, {})
        # the recording's settings (keep N) are those its turns were sent with; a fork's
        # live calls are the learner's, whatever the recording says of them
        settings = {**wanted, **had}
        if at is not None:
            settings = {n: acting_from(s, since, n in had) for n, s in settings.items()}
        decided = [d for d in field.get("decisions", []) if at is None or d["call"] < since]
        made = cls([*had, *wanted], settings, terminal, decided)  # a fork's: its past
        # subtle: a one-shot of format /7 said `written` of a block that changed nothing;
        # replayed, it decides as it did then, or it would no longer reproduce
        made.names_unchanged = recording.get("format") != NO_RELATIONS
        return made

    def over(self, recording, path, at):
        """These, on a fork of `recording` at turn `at` (see `of`). The live calls an
        --approve of the recording's asks about are asked at this terminal, as yours are."""
        wanted = {e["name"]: e["settings"] for e in self.on}
        return Extensions.of(recording, wanted, path, at, self.terminal or Terminal())

    def tools(self, make):
        """A `tools` for harness/driver.py's drive: `make`'s tools, wrapped."""

        def build(*args, **options):
            tools = make(*args, **options)
            for on in self.on:  # innermost first
                kind, since = TOOLS.get(on["name"]), on["settings"].get("from_call", 1)
                if kind is Approve:
                    tools = Approve(tools, self.log, since, self.terminal, self.answers)
                elif kind:
                    tools = kind(tools, self.log, since)
            if self.on and self.log.outermost is None:  # the chat's decisions count calls
                Counted(tools, self.log)
            return self.log.outermost or tools

        return build

    def chat(self, chat):
        """The chat the loop is given: `chat`, wrapped in keep-results when it is on."""
        for on in self.on:
            if on["name"] == KeepResults.name:
                since = on["settings"].get("from_call", 1)
                return KeepResults(chat, on["settings"]["keep"], self.log, since)
        return chat

    def loop(self, make):
        """A `loop` for drive: `make` (agent_loop.AgentLoop), or with --one-shot a OneShot
        around it; `planned(plan)` is the plan it is given (one_shot.py's prompts, one turn)."""
        if not self.one_shot:
            return make
        unchanged = self.names_unchanged
        return lambda *args, **options: OneShot(make, self.log, *args, **options,
                                                names_unchanged=unchanged)  # fmt: skip

    def planned(self, plan):
        return OneShot.planned(plan) if self.one_shot else plan

    def watch(self, then=None, out=None):
        """A `watch` for drive that says which are on at the first event, prints each new
        decision after the next event that is not streamed text (a call's result, a turn's
        end), says where --plan's plan is, then calls `then` (another watch, or None)."""
        if not self.on:
            return then
        on = [h["name"] + "".join(f" ({k} {v})" for k, v in h["settings"].items()) for h in self.on]
        pages = dict.fromkeys(f"docs/{PAGES.get(h['name'], 'hooks')}.md" for h in self.on)
        heading, shown = f"Extensions on: {', '.join(on)} ({', '.join(pages)})", 0
        planning = any(h["name"] == PlanOnly.name for h in self.on)

        def watch(event, messages):
            nonlocal heading, shown
            if heading:  # at the first event, before anything of turn 1
                print(heading, file=out)  # out None: sys.stdout, as the printer's
                heading = None
            if event["type"] not in (THINKING_DELTA, TEXT_DELTA):  # never inside a stream
                for decision in self.log.decisions[shown:]:
                    print(f"  {decision_line(decision)}", file=out)
                shown = len(self.log.decisions)
            if planning and event["type"] == STOPPED and event["reason"] == ASSISTANT_FINISHED:
                print(f"  [plan] the model's plan is its text of turn {event['turn']}, above",
                      file=out)  # fmt: skip
            if then:
                then(event, messages)

        return watch

    def recorded(self):
        """The recording's `extensions` field (harness/decisions.py), or None: none on."""
        return {"on": self.on, "decisions": self.log.decisions} if self.on else None


def acting_from(settings, since, had):
    """The settings of an extension on a fork whose first live call is the `since`th: it
    acts from there at the latest. One the parent `had` acts on the replayed calls as it
    did there (from its `from_call`, else 1); one only the fork turned on acts from `since`.

    subtle: never from a later call, whatever the parent says: a `from_call` past the
    fork point would let the live calls through untouched (an --approve asking nothing)."""
    first = min(settings.get("from_call", 1) if had else since, since)
    settings = {k: v for k, v in settings.items() if k != "from_call"}
    return {**settings, "from_call": first} if first > 1 else settings


def settings_problem(name, settings, path):
    """RecordingError unless `name` is an extension this lab has, with settings it takes."""
    if name not in ORDER:
        raise RecordingError(f"{path}: extension {name!r:.100} is not one this lab has")
    keys = {"keep", "from_call"} if name == KeepResults.name else {"from_call"}
    whole = all(is_whole(n, 1) for n in settings.values()) and set(settings) <= keys
    if name == KeepResults.name and not (whole and "keep" in settings):
        raise RecordingError(f'{path}: the settings of extension {name!r} must be {{"keep": N}}'
                             ' or {"keep": N, "from_call": M}, N and M from 1')  # fmt: skip
    if not whole:
        raise RecordingError(f'{path}: the settings of extension {name!r} must be {{}} '
                             'or {"from_call": N}, N from 1')  # fmt: skip
