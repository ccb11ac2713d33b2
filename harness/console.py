"""How a run looks in a terminal: each step as it happens, and the closing summary.

`RunPrinter.show(event)` prints one loop event: streamed thinking and text as they
arrive, each tool call with its arguments, a one-line summary of each result, the stop.
record_run.py and replay.py print through it, so a live run and its replay read the same.

Not here: colour, cursor tricks or anything a plain pipe or `NO_COLOR` terminal can't show.
"""

import functools
import json
import re
import sys
import unicodedata

from agent_loop import (
    INCOMPLETE_MODEL_TURN,
    MODEL_DONE,
    MODEL_START,
    STOPPED,
    TEXT_DELTA,
    THINKING_DELTA,
    TOOL_RESULT,
    TOOL_START,
)
from plumbing.limits import MAX_CALLS_RUN
from plumbing.pytest_report import expected_tests
from plumbing.redact import LEARNED, redact, secret_values
from plumbing.sample import SAMPLE_REPO, SOURCE_FILE, final_source
from plumbing.source_diff import unified
from plumbing.text_calls import NOTE as TEXT_CALL_NOTE
from plumbing.verdict_words import PASSED, TESTS_FAILED, held_out_line, held_out_note


def tolerant_output():
    """Let stdout and stderr print any text, safely: visible, encodable, without secrets.

    subtle: text from a model, a tool result, a file name or a recording can hold terminal
    escapes (ESC[1A ESC[2K to draw a fake verdict over the real one, OSC 52 to set the
    clipboard, ESC[8m to hide what follows): every control character is printed escaped,
    as `\\x1b`, never sent raw. A server can send a lone surrogate, and a terminal may not
    encode every character: what cannot be encoded is shown escaped. And a server may echo
    the API key it was sent in an error message: every write is redacted (a secret split
    across two writes, as streamed text can be, is not caught). The CLIs call this first.
    """
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    if not isinstance(sys.stdout, SafeStream):
        sys.stdout, sys.stderr = SafeStream(sys.stdout), SafeStream(sys.stderr)


# Control characters a terminal acts on (C0 but the newline and the tab the output itself
# uses, DEL, C1), and characters that draw nothing: format characters (Cf: zero-width
# spaces and joiners, bidi controls, U+FEFF, tag characters), unassigned and private-use
# code points, lone surrogates, the line and paragraph separators, and the rest of what
# Unicode calls default-ignorable (variation selectors, Hangul fillers, ...). Each can
# hide text or carry a hidden message; written out, it is seen.
HIDDEN_CATEGORIES = ("Cc", "Cf", "Cn", "Co", "Cs", "Zl", "Zp")
DRAWS_NOTHING = re.compile(  # Default_Ignorable_Code_Point (Unicode's DerivedCoreProperties)
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f"
    "\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)
CANDIDATES = re.compile("[^\t\n\x20-\x7e]+")  # runs of what is not plain printable ASCII


def visible(text):
    """`text` with every control character a terminal would act on, and every character
    that draws nothing, written out: ESC as `\\x1b`, a carriage return as `\\r`, a
    right-to-left override as `\\u202e`, a zero-width space as `\\u200b`."""
    return CANDIDATES.sub(_shown, text)


def _shown(match):
    run = match.group()
    # str.isprintable() is False for every hidden category (and for spaces such as U+00A0,
    # which are kept): a run of printable text, the usual case, is passed over at C speed
    if run.isprintable() and not DRAWS_NOTHING.search(run):
        return run
    return "".join(map(_shown_char, run))


@functools.lru_cache(maxsize=4096)  # bounded: a hostile text may hold every code point
def _shown_char(char):
    if unicodedata.category(char) in HIDDEN_CATEGORIES or DRAWS_NOTHING.match(char):
        return char.encode("unicode_escape").decode("ascii")
    return char


def status_line(stream, text):
    """Write `text` over the terminal's current line, made visible as every write is: the
    carriage return and the erase-to-the-end before it are the harness's own, never text
    from a model, a tool or a recording."""
    raw = stream._stream if isinstance(stream, SafeStream) else stream
    raw.write("\r\x1b[K")
    stream.write(text)
    stream.flush()


class SafeStream:
    """A text stream whose every write is redacted (see redact.py) and made visible (see
    `visible`); the rest is the stream's."""

    def __init__(self, stream):
        self._stream, self._secrets, self._learned = stream, secret_values(), 0

    def write(self, text):
        if len(LEARNED) != self._learned:  # a --host with credentials, parsed after start
            self._secrets, self._learned = secret_values(), len(LEARNED)
        return self._stream.write(visible(redact(text, self._secrets)))

    def __getattr__(self, name):
        return getattr(self._stream, name)


def test_line(result):
    """'1 failed · 3 passed' for a test run whose tests ran; else the verdict's reason.

    An exit code of 0 without the tests having run reads as what it is: a failed verdict.
    """
    counts = " · ".join(f"{result[k]} {k}" for k in ("failed", "passed", "errors") if result.get(k))
    if counted(result):
        return counts
    reason = f"failed: {result.get('reason', 'no verdict')}"
    return f"{reason} ({counts})" if counts else reason


def counted(result):
    """Whether a verdict's visible tests ran as the sample defines them, so that their counts
    say what happened: they passed (whatever the held-out checks said), or some failed.
    Read from its facts (harness/recording_checks.py gives older recordings theirs); TESTS_FAILED
    is a code compared whole, never a sentence searched."""
    if result.get("tests_changed") or result.get("judged") is False:
        return False
    visible = result.get("visible", result.get("verdict"))
    return visible == PASSED or result.get("reason") == TESTS_FAILED


def verdict_lines(label, result, explained=False):
    """An independent verdict, then each of its two parts on a line of its own:

    Independent verdict: failed
      visible tests: 4 of 4 passed
      held-out checks: 9 of 10 passed (first failure: ...)

    `explained`: the first verdict a command prints, which adds what the held-out words
    mean (verdict_words.held_out_note) under them.
    """
    if result is None:
        return [f"{label}: not run"]
    held_out = result["held_out"]
    if counted(result):
        visible = f"{result['passed']} of {len(expected_tests())} passed"
        visible += "".join(f", {result[k]} {k}" for k in ("failed", "errors") if result.get(k))
    else:
        visible = f"failed: {result.get('reason')}"
    return [
        f"{label}: {result['verdict']}",
        f"  visible tests: {visible}",
        f"  {held_out_line(held_out).replace(' checks ', ' checks: ', 1)}",
        *([f"  {held_out_note(held_out)}"] if explained else []),
    ]


def made_by(recording):
    """Who made a recording's chunks, said so that hand-written ones never read as a
    model's output."""
    model = recording["model"].get("name", "?")
    if recording["source"] == "live":
        return f"live: streamed by {model}"
    if recording["source"] == "scripted":
        return f"scripted: chunks written by hand, not a model's output (as {model} would send)"
    fork = recording.get("fork")
    if recording["source"] == "forked" and isinstance(fork, dict):
        return (
            f"forked: turns before {fork.get('at')} replayed from {fork.get('parent')}, "
            f"the rest streamed by {model}"
        )
    return f"{recording['source']}: derived from a recording of {model}"


ARGUMENTS_SHOWN = 2_000  # characters of a call's arguments printed; an edit's diff follows


def cut(text, most):
    """`text`, or its first `most` characters and how many more there were."""
    if len(text) <= most:
        return text
    return f"{text[:most]} [... {len(text) - most:,} more characters]"


def plural(count, noun):
    return f"{count} {noun}" + ("" if count == 1 else "s")


def result_line(name, result):
    if "error" in result:
        return f"error: {result['error']}"
    # subtle: a recording's result is any object; a field missing is shown, not a KeyError
    if name == "read_file" and isinstance(result.get("text"), str):
        return f"{len(result['text'].splitlines())} lines of {result.get('path', '?')}"
    if name == "replace_text" and "replaced" in result:
        line = f"replaced {result['replaced']} occurrence in {result.get('path', '?')}"
        if "lines_removed" in result:  # repo_tools.py says what an edit changed (edits_told)
            removed = result["lines_removed"]
            removed = plural(removed, "line") if isinstance(removed, int) else removed
            line += f" ({removed} removed, {result.get('lines_added')} added)"
        return line
    if name == "run_tests" and "exit_code" in result:
        return f"exit {result['exit_code']} ({test_line(result)})"
    return json.dumps(result)[:100]


class RunPrinter:
    """Prints a run's events as they come; `stop_line` prints a stop the loop never yielded.

    Given the copy the tools act on (`root`), it prints under each edit that succeeded the
    diff of that edit, read from the file itself before and after it; `changes(final)`
    prints what the whole run changed, from the sample's file to `final`. Given the chat's
    `last_turn` (plumbing/stop_cause.py), a stop `incomplete_model_turn` says its cause.
    """

    def __init__(self, out=None, root=None, replayed=0, last_turn=None):
        self.out = out or sys.stdout  # looked up now: the CLIs redact it at start (see above)
        self.streaming = None  # "thinking" or "text" while a delta line is open
        self.model_calls = 0
        self.replayed = replayed  # a fork's: its first model calls, replayed from its parent
        self.tool_calls = 0
        self.root, self.before_edit = root, None
        self.last_turn = last_turn

    def _print(self, text="", end="\n"):
        self.out.write(text + end)
        self.out.flush()

    def _close_stream(self):
        if self.streaming:
            self._print()
            self.streaming = None

    def show(self, event):
        kind = event["type"]
        if kind == MODEL_START:
            self.model_calls += 1
        elif kind in (THINKING_DELTA, TEXT_DELTA):
            label = "thinking" if kind == THINKING_DELTA else "says"
            if self.streaming != label:
                self._close_stream()
                self._print(f"turn {event['turn']} {label}: ", end="")
                self.streaming = label
            self._print(event["text"].replace("\n", "\n  "), end="")
        elif kind == MODEL_DONE:
            self._close_stream()
        elif kind in (TOOL_START, TOOL_RESULT) and event["index"] >= MAX_CALLS_RUN:
            # past the cap none runs and each gets the same error: one line says it all
            self.tool_calls += kind == TOOL_START
            if kind == TOOL_START and event["index"] == MAX_CALLS_RUN:
                self._close_stream()
                self._print(
                    f"turn {event['turn']}: the calls after the first {MAX_CALLS_RUN} of this "
                    "turn are not run; each is answered with an error (not shown)"
                )
        elif kind == TOOL_START:
            self._close_stream()
            self.tool_calls += 1
            # redacted before the cut, so that no part of a secret survives at its edge
            arguments = json.dumps(event["arguments"], ensure_ascii=False)
            arguments = cut(redact(arguments), ARGUMENTS_SHOWN)
            written = " (written as text; --text-calls ran it)" if event.get("from_text") else ""
            self._print(f"turn {event['turn']}: {event['name']} {arguments}{written}")
            if event["name"] == "replace_text" and self.root is not None:
                # subtle: read now, before the tool runs: the loop yields this event first.
                self.before_edit = final_source(self.root)
        elif kind == TOOL_RESULT:
            self._print(f"  -> {result_line(event['name'], event['result'])}")
            if self.before_edit is not None and "error" not in event["result"]:
                after = final_source(self.root)
                for line in unified(
                    self.before_edit, after, f"{SOURCE_FILE} before", "after this edit"
                ):
                    self._print(line)
            self.before_edit = None
        elif kind == STOPPED:
            self._close_stream()
            self.stop_line(event)

    def changes(self, final, given=None, where=f"sample_repo/{SOURCE_FILE}"):
        """What the run changed in the source, from what it was given (`given`, text: the
        sample's when None, found at `where`) to `final`; nothing when unchanged."""
        if given is None:
            given = (SAMPLE_REPO / SOURCE_FILE).read_text(encoding="utf-8")
        lines = unified(given, final, where, "after the run")
        if lines:
            self._print(f"What the run changed in {SOURCE_FILE}:")
            for line in lines:
                self._print(line)

    def stop_line(self, stop):
        self._close_stream()
        calls = plural(self.model_calls, "model call")
        if self.replayed:  # a fork's own model said only what came after them
            replayed = min(self.replayed, self.model_calls)
            calls += f" ({replayed} replayed, {self.model_calls - replayed} live)"
        calls += f", {plural(self.tool_calls, 'tool call')}"
        self._print(f"Stop: {stop['reason']} after {calls}")
        if stop.get("error"):
            self._print(f"  model error: {stop['error']}")
        if stop["reason"] == INCOMPLETE_MODEL_TURN and self.last_turn is not None:
            for line in self.last_turn.cause_lines():
                self._print(f"  {line}")
        if stop.get("text_tool_call"):
            self._print(f"  note: {TEXT_CALL_NOTE.format(name=stop['text_tool_call']['name'])}")
