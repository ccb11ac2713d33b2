"""Extensions: what coding agents add around the loop, each a wrapper in a file of its own
(the same `schemas` and `invoke` as the tools, or the same call as the chat, holding the real
one and deciding around it, as WSGI middleware wraps an application: the loop never learns
it is there), and here the composer. Each extension says what the composer needs of it
(extensions/extension.py: its flag, its settings, what it wraps, its page); the composer
knows them by EXTENSIONS alone. It turns on those a run chose or a recording had (replay.py
applies them again and asks no one), wraps the driver's tools, chat and loop in them
(harness/driver.py), counts the tools' calls, and says what a recording keeps of them
(harness/decisions.py). Above harness/: nothing below imports this folder.
"""

from extensions.explorer import Explorer
from extensions.extension import Counted, Log, acting_from, recorded_problem
from extensions.keep_results import KeepResults
from extensions.mcp_tools import McpTools
from extensions.one_shot import OneShot
from extensions.permissions import Approve, PlanOnly
from extensions.rounds import Rounds
from extensions.syntax import Syntax
from extensions.terminal import Terminal
from extensions.tests_after_edit import TestsAfterEdit
from extensions.watch import watching
from harness.child_runs import recorded_children
from harness.decisions import calls_made
from harness.recording_checks import RecordingError

# The one order. They wrap in it, innermost first, whatever order the flags came in: an edit
# the syntax hook undoes runs no tests; you are asked about the model's calls before any hook
# acts (and not about the tests a hook runs). A recording lists them in it; --help shows
# their flags in it, a shared one (--hook) where the first of them stands. One-shot runs
# alone, and so does --rounds, its edit-test loop. The explorer and the MCP tools are
# innermost: --approve asks before an MCP call (the explorer only reads), and --plan offers
# read_file alone, as ever.
EXTENSIONS = (
    Explorer, McpTools, Syntax, TestsAfterEdit, PlanOnly, Approve, KeepResults, OneShot, Rounds,
)  # fmt: skip
KINDS = {kind.name: kind for kind in EXTENSIONS}


def extension_options(parser):
    """record_run.py's flags of the extensions: --hook NAME, --approve, --plan, ..."""
    for flag in dict.fromkeys(kind.flag for kind in EXTENSIONS):
        flag(parser, [kind for kind in EXTENSIONS if kind.flag is flag])


def check_options(parser, args):
    """Refuse, as argparse does, what the extension options cannot do together."""
    for kind in EXTENSIONS:
        kind.check_options(parser, args)


class Extensions:
    """The extensions of one run and what they decided in it (`log`). `names`: in any order;
    `settings`: {name: its settings} (extensions/extension.py); `terminal`: who --approve asks
    (None: no one); `applied`: the recorded decisions it applies; `says_unchanged`: whether
    one-shot says `unchanged` (false: a replay of one made before; harness/old_recordings.py)."""

    def __init__(self, names=(), settings=None, terminal=None, applied=(), says_unchanged=True):
        settings, self.kinds = settings or {}, [k for k in EXTENSIONS if k.name in names]
        self.on = [{"name": k.name, "settings": settings.get(k.name, {})} for k in self.kinds]
        self.log, self.terminal, self.applied = Log(), terminal, applied
        self.says_unchanged = says_unchanged
        self.children = recorded_children(applied)  # `of`: a replay's; record_run.py: live
        self.live = {}  # {name: what an extension started for a live run} (`start`)

    @classmethod
    def chosen(cls, args):
        """The extensions record_run.py's options turn on."""
        picked = {kind.name: kind.chosen(args) for kind in EXTENSIONS}
        picked = {name: settings for name, settings in picked.items() if settings is not None}
        return cls(picked, picked, Terminal() if Approve.name in picked else None)

    @classmethod
    def of(cls, recording, names=(), path="the recording", at=None, terminal=None,
           says_unchanged=True):  # fmt: skip
        """The extensions `recording` (at `path`) had, none when it holds no field, and
        `names` too (a list, or {name: settings}); with `at` (a fork's turn), each acts from
        its first live call at the latest (`acting_from`), and --approve asks `terminal`
        about the calls the recording did not decide. RecordingError: one it cannot have."""
        field = recording.get("extensions") or {"on": [], "decisions": []}
        had = {e["name"]: e["settings"] for e in field["on"]}
        said = recorded_problem(KINDS, recording, had, at)
        if said:
            raise RecordingError(f"{path}: {said}")
        replayed = [e for e in recording["events"] if e["turn"] < (at or 1)]  # a fork's
        since = len(calls_made(replayed)) + 1  # the first live call, where its own ones begin
        wanted = names if isinstance(names, dict) else dict.fromkeys(names, {})
        # the recording's settings (keep N) are those its turns were sent with; a fork's
        # live calls are the learner's, whatever the recording says of them
        settings = {**wanted, **had}
        if at is not None:
            settings = {n: acting_from(s, since, n in had) for n, s in settings.items()}
        decided = [d for d in field.get("decisions", []) if at is None or d["call"] < since]
        made = cls([*had, *wanted], settings, terminal, decided, says_unchanged)
        made.children = recorded_children(decided, recording.get("api", "ollama"))
        return made

    def over(self, recording, path, at):
        """These, on a fork of `recording` at turn `at` (see `of`). The live calls an
        --approve of the recording's asks about are asked at this terminal, as yours are."""
        wanted = {e["name"]: e["settings"] for e in self.on}
        return Extensions.of(recording, wanted, path, at, self.terminal or Terminal())

    def start(self):
        """Before a live run, start what each needs (the MCP servers), keeping the settings
        the recording will say; the lines they say. ExtensionError: one that cannot."""
        lines = []
        try:
            for kind, on in zip(self.kinds, self.on, strict=True):
                on["settings"], said = kind.started(on["settings"], self)
                lines += said
        except Exception:
            self.stop()  # what started before the one that could not
            raise
        return lines

    def stop(self):
        """End what `start` started."""
        for kind in self.kinds:
            kind.stopped(self)

    def tools(self, make):
        """A `tools` for drive: `make`'s tools, wrapped, and around them all the one counter
        of their calls that each extension reads (extensions/extension.py's `Counted`)."""

        def build(*args, **options):
            tools = self.wrapped("tools", make(*args, **options))
            return Counted(tools, self.log) if self.on else tools  # its own count: none

        return build

    def chat(self, chat):  # the chat the loop is given, wrapped (keep-results)
        return self.wrapped("chat", chat)

    def loop(self, make):  # a `loop` for drive: `make` (agent_loop.AgentLoop), wrapped
        return self.wrapped("loop", make)

    def planned(self, plan):
        """The driver's Plan as those on change it (one-shot: its own prompts, one turn)."""
        for kind, on in zip(self.kinds, self.on, strict=True):
            plan = kind.planned(plan, on["settings"])
        return plan

    def wrapped(self, what, inner):
        for kind, on in zip(self.kinds, self.on, strict=True):  # innermost first
            inner = kind.wrapped(inner, on["settings"], self) if kind.wraps == what else inner
        return inner

    def watch(self, then=None, out=None):  # a `watch` for drive (extensions/watch.py)
        return watching(self, then, out)

    def recorded(self):
        """The recording's `extensions` field (harness/decisions.py), or None: none on."""
        return {"on": self.on, "decisions": self.log.decisions} if self.on else None
