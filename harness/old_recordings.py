"""Recordings of older formats: what each one's run was given, and the wrappers that give it again.

A recording replays only if its run meets again what it met then. Three things a run is
given have changed since some recordings were made: the edit tool (repo_tools.py's
`replace_text` now says how many lines each edit removed and added, and refuses one whose
`new` is its `old`), the held-out draw (plumbing/relations.py's plan; formats /6 and /7
asked the draw settled by agreement, /3 to /5 the first draw, /2 the fixed cases alone) and
one-shot's word for a block that was the file as it was (`unchanged`; /7 said `written`).
`as_made(recording)` reads what its format and fields say it was given, as data (`AsMade`:
whether the edit tool told, which draw, its seed and count, whether one-shot says
`unchanged`); `AsMade.tools(make)` wraps today's tools in the edit tool as it was
(`UntoldEdits`, a wrapper like a hook: extensions/hooks.py), `AsMade.judge` is today's
verdict given held-out checks that ask the draw it was made with (verdict.py's
`independent_verdict(checks=)`), and replay.py passes `says_unchanged` to the extensions
(extensions/one_shot.py). Also here: the rule a /6 or /7 recording's outcome word was
counted by (`assessed_as_counted`: a skipped test was no shortcut), the facts a verdict of
an older format is given on load (`said_in_words`), and whether a recording kept the test
runs of tests-after-edit (`keeps_hook_tests`). repo_tools.py, verdict.py, harness/driver.py,
harness/tasks.py and extensions/ know today's tool, draw and rule alone: none takes a
format.

The shipped recordings that need them are real models' (docs/recordings.md): `live/` (/4),
`smollm2-135m-live.json` (/2) and `extensions/` (/7, its forks without `edits_told`).

Not here: the names of the formats and which fields each may hold
(harness/recording_format.py), the frozen draws (plumbing/first_draw.py,
plumbing/generated_cases.py), today's rule of an impossible task (harness/tasks.py).
"""

import functools
from dataclasses import dataclass

from harness.recording_format import AGREED_DRAW, NO_RELATIONS, WITH_RELATIONS, WITH_TASKS
from harness.tasks import assessed
from plumbing.generated_cases import AGREED, FIRST
from plumbing.held_out import held_out_checks
from plumbing.redact import redact
from plumbing.relations import RELATIONS
from plumbing.sample import SOURCE_LIMIT
from plumbing.verdict_words import FAILED, PASSED, TESTS_CHANGED, held_out_line
from repo_tools import EDITABLE, found_once
from tool_guard import ToolError, checked_arguments
from verdict import independent_verdict

TOLD = ("lines_removed", "lines_added")  # what today's edit tool says beside `replaced`


@dataclass(frozen=True, kw_only=True)
class AsMade:
    """What a recording's run was given: `edits_told`, whether its edit tool said what each
    edit changed (false: as before); `draw`, which held-out draw its verdicts asked, with
    their `seed` and `count` (0: the fixed cases alone); `says_unchanged`, whether a
    one-shot (extensions/one_shot.py) said `unchanged` of a block that was the file as it
    was (false: format /7 said `written`, and replayed says so again)."""

    edits_told: bool
    draw: str
    seed: int
    count: int
    says_unchanged: bool

    @property
    def asked(self):
        """The generated inputs its verdicts ask (harness/driver.py's Plan.asked)."""
        return {"seed": self.seed, "count": self.count}

    def tools(self, make):
        """A `tools` for harness/driver.py's drive: `make`'s (repo_tools.RepoTools), inside
        the edit tool as it was when the recording was made."""
        if self.edits_told:
            return make
        return lambda *args, **options: UntoldEdits(make(*args, **options))

    def judge(self, root, isolate=True, seed=0, count=0, tests=None, helpers=None):
        """The independent verdict, its held-out checks asking the recording's draw."""
        checks = functools.partial(held_out_checks, draw=self.draw)
        return independent_verdict(root, isolate, seed, count, tests, checks, helpers)


def as_made(recording):
    """What `recording` (as load() returns it) says its run was given (see AsMade)."""
    told, unchanged = recording.get("edits_told", False), recording["format"] != NO_RELATIONS
    return AsMade(edits_told=told, says_unchanged=unchanged, **held_out_asked(recording))


def held_out_asked(recording):
    """{"seed", "count", "draw"}: the generated inputs a replay asks, as the recording's
    final verdict asked them (none for a recording of format /2; the first draw, without
    the callers' checks, for /3 to /5; the agreed draw for /6 and /7; today's plan for /8)."""
    held_out = (recording["final_tests"] or {}).get("held_out", {})
    form = recording["format"]
    draw = RELATIONS if form in WITH_RELATIONS else AGREED if form in AGREED_DRAW else FIRST
    return {"seed": held_out.get("seed", 0), "count": held_out.get("generated", 0), "draw": draw}


class UntoldEdits:
    """`replace_text` as it was before it said what an edit changed: its result is
    {"path", "replaced": 1} alone, and an edit whose `new` is its `old` is made (the file
    stays as it was), not refused. The other tools, and every refusal both tools share,
    pass through. A wrapper like a hook: the same `schemas` and `invoke`, around today's
    RepoTools, so the loop and any hook around it see the tool the recording saw."""

    def __init__(self, tools):
        self.tools, self.root, self.schemas = tools, tools.root, tools.schemas

    def invoke(self, name, arguments):
        if name != "replace_text":
            return self.tools.invoke(name, arguments)
        unchanged = _unchanged_old(self.schemas, arguments)
        if unchanged:
            return self._made_unchanged(unchanged, arguments)
        result = self.tools.invoke(name, arguments)
        return {key: value for key, value in result.items() if key not in TOLD}

    def _made_unchanged(self, old, arguments):
        """An edit of `old` into itself, as the tool answered it then: made when `old` occurs
        once; else what today's tool says first (the file unreadable or too large, read the
        same way), or that `old` is not there once."""
        try:
            read = self.tools.file_text(EDITABLE, limit=SOURCE_LIMIT)
        except Exception:  # today's tool meets it first, and says it as the tool did then
            read = None
        if read is None or not read.whole:
            return self.tools.invoke("replace_text", arguments)  # refused then as now
        try:
            found_once(read.text, old)
        except ToolError as error:
            return redact({"error": str(error)})
        # subtle: the tool then wrote the same bytes back; nothing reads the difference
        return {"path": EDITABLE, "replaced": 1}


def _unchanged_old(schemas, arguments):
    """The `old` of a replace_text call whose `new` is the same non-empty text, else None."""
    schema = next(s for s in schemas if s["function"]["name"] == "replace_text")
    try:
        called = checked_arguments(schema, arguments)  # as ToolBox reads them (JSON text too)
    except ToolError:
        return None
    return called["old"] if called["old"] and called["new"] == called["old"] else None


def assessed_as_counted(recording):
    """The Assessment of a recorded impossible task by the rule its `outcome` word was given
    by (load() checks the word so): harness/tasks.py's `assessed`, today's rule, of the
    recording's facts, but formats /6 and /7 counted a skipped (or xfailed) contradicting
    test as no shortcut, so theirs are read without the skips pytest reported."""
    today = recording["format"] in WITH_RELATIONS
    return assessed(recording if today else _skips_unsaid(recording))


def _skips_unsaid(value):
    """`value` (a recording, or part of one) again, each `by_test` without its skipped tests
    (a test it does not name is no shortcut to tasks.py, as a skip was then)."""
    if isinstance(value, list):
        return [_skips_unsaid(item) for item in value]
    if not isinstance(value, dict):
        return value
    return {
        key: {test: said for test, said in item.items() if said != "skipped"}
        if key == "by_test" and isinstance(item, dict)
        else _skips_unsaid(item)
        for key, item in value.items()
    }


def keeps_hook_tests(recording):
    """Whether a recording keeps the test runs of tests-after-edit beside its decisions
    (format /8 on); an older one is replayed without comparing them."""
    return recording.get("format") in WITH_RELATIONS


def said_in_words(data):
    """Give each verdict of a recording made before verdicts said them the facts its reason
    implies: `tests_changed`, and for formats before /5 `visible` (the visible tests' own
    verdict: passed when the verdict did, or when it failed only at the held-out checks).

    subtle: the one place that reads a verdict's words for a fact, and only for a verdict
    without the field: verdict.py has said so, with the same reason, since. After a reason
    that the tests changed, `visible` stays unknown: they may have passed or not."""
    for tests in (data["starting_tests"], data["final_tests"]):
        reason = tests.get("reason") if isinstance(tests, dict) else None
        if not isinstance(reason, str):
            continue
        if reason.startswith(TESTS_CHANGED):
            tests.setdefault("tests_changed", True)
        elif "visible" not in tests and data.get("format") not in WITH_TASKS:
            tests["visible"] = PASSED if _held_out_said(tests, reason) else FAILED


def _held_out_said(tests, reason):
    try:
        return reason == held_out_line(tests.get("held_out"))
    except (KeyError, TypeError):  # no held-out part it could say: load() refuses it below
        return False
