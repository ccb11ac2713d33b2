"""Where a replay differs from its recording, said precisely enough to act on.

`divergences(...)` lists every way a replay differs from its recording; each function it
calls compares one aspect (the event sequence, the tool calls, the requests sent to the
model, the resulting source, the final tests) and returns sentences such as "tool call 3
(model call 3, replace_text): arguments.new: the recording says ..., today's run did ...".
Before comparing,
what legitimately differs between two runs is taken out: timings are dropped, and
temporary paths, the Python installation's paths, its frames' line numbers, caret lines and
wording, and pytest's durations are normalised: a recording made on 3.11 replays on 3.13.

Not here: running anything. replay.py runs the loop and hands the results over.
"""

import itertools
import json
import re

from agent_loop import MODEL_START, TOOL_RESULT, TOOL_START
from harness.decisions import answered, as_sent, decisions_of, without_test_runs
from harness.old_recordings import keeps_hook_tests
from harness.tasks import outcome_of
from plumbing.sample import SOURCE_FILE
from plumbing.source_diff import unified
from plumbing.verdict_words import held_out_line

TIMING_KEYS = ("seconds", "first_chunk_seconds")  # differ on every run; never compared
# The final tests' fields that must match, where the recording has them.
VERDICT_KEYS = (
    "verdict", "visible", "judged", "reason", "passed", "failed", "errors", "collected",
    "held_out",
)  # fmt: skip


def divergences(recording, expected, events, requests, source, final, root, after=None):
    """Every way a replay differs from `recording`, one sentence each; empty: it reproduced.

    `expected` are the recorded events the replay must match, `events`, `requests`,
    `source` and `final` what the replay produced, in its temporary copy `root`. `after`
    holds what the replay made of the rest: its conversation (`messages`), whether the test
    file is unchanged (`tests_unchanged`), an impossible task's `outcome` and what the
    extensions decided (`extensions`, the field a recording keeps).
    """
    recorded_root = recording.get("workdir")
    # subtle: the replayed model's text is the recorded text, and a model may echo the path
    # of the copy it was run in (a test's ImportError, quoted back): today's side names that
    # folder too, so both are the run's folder there
    root = (root, recorded_root) if root and recorded_root else root
    problems = [event_divergence(expected, events, recorded_root, root)]
    problems += tool_divergences(expected, events, recorded_root, root)
    problems += request_divergences(recording, requests, root)
    problems += ending_divergences(recording, requests, after or {}, root)
    problems += decision_divergences(recording, expected, after or {}, root)
    if "final_source" in recording and recording["final_source"] != source:
        diff = unified(recording["final_source"], source, "the recording's", "today's run's")
        problems.append("\n".join([f"the resulting {SOURCE_FILE} differs:", *diff]))
    problems += final_tests_divergences(recording["final_tests"], final)
    return [p for p in problems if p]


# A traceback's frames in the Python installation (pytest's own, importlib's) name the
# folder the lab was installed in, another on each machine and in each clone.
INSTALLED = (
    (re.compile(r"""/[^\s"':]*/site-packages/"""), "<site-packages>/"),
    (re.compile(r"""/[^\s"':]*/lib/python3\.\d+/"""), "<python>/"),
    # ... and its frames differ by version: their line numbers (importlib's call is at 126
    # in 3.10 and 3.11, 90 in 3.12, 88 in 3.13; its frozen parts' too), and from 3.11 on a
    # line of carets under a call. In a request the output is JSON text, its newlines
    # written as \n: both forms.
    (re.compile(r"(<python>/[^\s\"':]+|<frozen [\w.]+>):\d+:"), r"\1:<n>:"),
    (re.compile(r"(?:\n|\\n)[ \t]*[\^~]+[ \t]*(?=\n|\\n)"), ""),
    # ... and so do some of its messages: 3.12 on adds a name to an ImportError ("... Did
    # you mean: 'x'?"), 3.13 drops the end of "maximum recursion depth exceeded while ...".
    (re.compile(r"\. Did you mean: '[^'\\]*'\?"), ""),
    (re.compile(r"(maximum recursion depth exceeded)(?: while [A-Za-z ]+)?"), r"\1"),
)


def normalise(text, root):
    """`text` with what legitimately differs between runs replaced: timings, temp paths (the
    run's folder, `root`: one, or several, the longest first), where Python and the lab's
    environment are installed."""
    roots = root if isinstance(root, tuple) else (root,)
    for folder in sorted((str(r) for r in roots if r), key=len, reverse=True):
        text = text.replace(folder, "<repo>")
    for pattern, name in INSTALLED:
        text = pattern.sub(name, text)
    text = re.sub(r"\bin \d+(\.\d+)?s\b", "in <t>s", text)  # pytest's "4 passed in 0.03s"
    return re.sub(r"\b\d+(\.\d+)?s \(\d+:\d+:\d+\)", "<t>s", text)  # "in 61.2s (0:01:01)"


def comparable(value, root):
    """`value` with timings dropped and run-specific text normalised, for comparison."""
    if isinstance(value, dict):
        return {k: comparable(v, root) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, list):
        return [comparable(v, root) for v in value]
    return normalise(value, root) if isinstance(value, str) else value


def short(value, limit=160):
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _Absent:
    """A key or an item one side does not have: not the same as a null."""

    def __repr__(self):
        return "<absent>"


ABSENT = _Absent()


def first_difference(want, have, path=""):
    """(path, expected, got) of the first leaf where two JSON values differ, or None;
    a side that lacks the key or the item is ABSENT there."""
    if isinstance(want, dict) and isinstance(have, dict):
        for key in {**want, **have}:
            found = first_difference(want.get(key, ABSENT), have.get(key, ABSENT), f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(want, list) and isinstance(have, list):
        for index in range(max(len(want), len(have))):
            a = want[index] if index < len(want) else ABSENT
            b = have[index] if index < len(have) else ABSENT
            found = first_difference(a, b, f"{path}[{index}]")
            if found:
                return found
        return None
    return None if want == have else (path.lstrip(".") or "value", want, have)


def shown_value(value):
    """A value as a difference shows it: short JSON, or 'nothing' where a side has none."""
    return "nothing" if value is ABSENT else short(value)


def _difference(want, have, path=""):
    where, a, b = first_difference(want, have, path)
    # subtle: "expected/got" left learners unsure which side was which; say whose it is.
    return f"{where}: the recording says {shown_value(a)}, today's run did {shown_value(b)}"


def _model_call(events, position):
    return sum(e["type"] == MODEL_START for e in events[: position + 1])


def event_divergence(expected, got, expected_root, got_root):
    """The first event where the replay differs from the recording, or None."""
    for position, (want, have) in enumerate(zip(expected, got, strict=False)):
        want, have = comparable(want, expected_root), comparable(have, got_root)
        if want != have:
            call = _model_call(expected, position)
            # subtle: both counts, side by side: a learner reads "event 28" here and
            # finds it as events[27] in the file, which counts from 0
            where = f"event {position + 1} (events[{position}] in the file; model call {call}"
            return f"{where}, {want['type']}): " + _difference(want, have)
    if len(expected) != len(got):
        position = min(len(expected), len(got))
        unmatched = got[position] if len(got) > position else expected[position]
        return (
            f"event {position + 1} (events[{position}] in the file): {len(expected)} events "
            f"recorded, {len(got)} replayed "
            f"(first unmatched: {short(comparable(unmatched, None))})"
        )
    return None


def tool_divergences(expected, got, expected_root, got_root):
    """One sentence per tool call whose name, arguments or result differ."""
    problems = []
    pairs = [
        [(i, e) for i, e in enumerate(events) if e["type"] in (TOOL_START, TOOL_RESULT)]
        for events in (expected, got)
    ]
    for (position, want), (_, have) in zip(*pairs, strict=False):
        want, have = comparable(want, expected_root), comparable(have, got_root)
        if want != have:
            number = sum(e["type"] == TOOL_START for e in expected[: position + 1])
            call = _model_call(expected, position)
            kind = "call" if want["type"] == TOOL_START else "result"
            label = f"tool call {number} (model call {call}, {want['name']}) {kind}"
            problems.append(f"{label}: {_difference(want, have)}")
    return problems


def request_divergences(recording, requests, got_root):
    """The first request that differs from the recorded one, and a count mismatch."""
    problems, saved_calls = [], recording["model_calls"]
    # subtle: each request repeats every message before it. Normalised once each, not once
    # per request, a long message costs its length once, not once for every later request
    # (64 requests after a message of 900 KB: seconds of regular expressions)
    recorded = comparable(recording["messages"], recording.get("workdir"))
    seen = {}  # id(message) -> the message normalised; the requests hold them all alive
    for number, sent in enumerate(requests[: len(saved_calls)], 1):
        want = as_sent(recording, number, recorded)  # with --keep-results' lines in place
        for message in sent:
            if id(message) not in seen:
                seen[id(message)] = comparable(message, got_root)
        have = [seen[id(message)] for message in sent]
        if want != have:
            label = f"model call {number} (its request is messages[:{len(want)}] in the file)"
            problems.append(f"{label}: {_difference(want, have, 'messages')}")
            break  # every later request carries the same difference
    if len(requests) != len(saved_calls):
        problems.append(f"model calls: {len(saved_calls)} recorded, {len(requests)} made")
    return problems


def ending_divergences(recording, requests, after, root):
    """What no request carries: the conversation after the last request (the final answer,
    where a CONFLICT: line is), whether the test file is unchanged, an impossible task's
    outcome. Each compared where the replay has it; a hand-edited file cannot move a
    recording from one outcome to another and still reproduce."""
    problems, saved = [], recording["model_calls"]
    if "messages" in after and len(requests) == len(saved):  # else the count is said
        asked, sent = (saved[-1]["request_length"], len(requests[-1])) if saved else (0, 0)
        want = comparable(recording["messages"][asked:], recording.get("workdir"))
        have = comparable(after["messages"][sent:], root)
        for index, (one, other) in enumerate(itertools.zip_longest(want, have)):
            if one != other:
                said = _difference(one, other, f"messages[{asked + index}]")
                problems.append(f"the conversation after the last request: {said}")
                break
    for key, name in (("tests_unchanged", "tests unchanged"), ("outcome", "impossible task")):
        recorded = outcome_of(recording) if key == "outcome" else recording.get(key)
        if key in after and recorded != after[key]:
            problems.append(f"{name}: the recording says {recorded}, today's run gave {after[key]}")
    return problems


def decision_divergences(recording, expected, after, root):
    """The first decision of an extension (harness/decisions.py) that differs from the
    recorded one, about the calls whose result `expected` holds (a run cut during a call may
    have decided about it; its replay stops before that call)."""
    if "extensions" not in after:
        return []
    want = comparable(answered(decisions_of(recording), expected), recording.get("workdir"))
    have = answered(decisions_of(after), expected)
    if not keeps_hook_tests(recording):  # made before the hook kept its test runs
        have = without_test_runs(have)
    have = comparable(have, root)
    if want == have:
        return []
    return [f"the extensions' decisions: {_difference(want, have, 'extensions.decisions')}"]


def final_tests_divergences(recorded, final):
    """How the final tests' exit code, verdict and counts differ from the recorded ones."""
    if recorded is None or final is None:
        return []
    problems = []

    def same(key):  # as comparable() makes them: the wording of another Python, too
        return comparable(recorded[key], None) == comparable(final.get(key), None)

    if final["exit_code"] != recorded["exit_code"]:
        problems.append(
            f"final tests: the recording says exit code {recorded['exit_code']}, "
            f"today's run gave {final['exit_code']}"
        )
    for key in VERDICT_KEYS:
        if key == "held_out" and not same(key):
            problems.append(
                f"final tests: the recording says {held_out_line(recorded[key])}, "
                f"today's run gave {held_out_line(final[key])}"
            )
        elif key in recorded and not same(key):
            problems.append(
                f"final tests: the recording says {key} {recorded[key]}, "
                f"today's run gave {final.get(key)}"
            )
    return problems
