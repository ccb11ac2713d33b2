"""A fork: a recording's first turns replayed through the real loop, then a live model.

`record_run.py --fork RECORDING --at K` asks "what would my model do from here?": turns 1
to K-1 are the recording's, fed to the real loop as replay feeds them, their tools run for
real on a fresh copy; when the loop reaches turn K, what happened so far is compared with
the recording exactly as replay compares it (harness/divergence.py), and only if nothing
differs does the live model get the conversation, from turn K on. As a LangGraph fork
can, the conversation may be changed at that point first: `--say TEXT` adds a user
message, `--result N=FILE` puts FILE's JSON in place of the result of the fork point's Nth
tool call (the last replayed turn's; the tool still ran, and its event keeps what it
returned).

A forked recording says what it is: `source: "forked"`, `fork` (the parent's file name and
SHA-256, the turn, every change to the conversation, a parent's own included), and each
model call's `source` ("replayed" or "live") and `api`. It replays whole, as any recording
does: replay.py makes the same changes at the same turns (`make_changes`).

Not here: the live model (record_run.py opens it), comparing (divergence.py), printing a
run (console.py). The loop alone changes its conversation: a fork's changes reach it through
`AgentLoop.change_conversation`, between two turns, as its recording says.
"""

import argparse
import hashlib
import json
from pathlib import Path
from typing import NamedTuple

from agent_loop import MODEL_START, TOOL_START
from harness.chats import ReplayChat
from harness.divergence import event_divergence, request_divergences, tool_divergences
from harness.old_recordings import as_made
from harness.recording import load
from harness.recording_checks import RecordingError, held_problem
from harness.recording_format import LIVE, REPLAYED, call_api
from harness.replayable import check_isolation, check_sample
from harness.tasks import task_of
from plumbing.limits import MAX_RESULT_BYTES
from plumbing.sample import read_regular_file
from plumbing.text_calls import written_result

RESULT_DEPTH = 5  # a replaced result's depth in a recording: fork.changes[i].results[N]


class ResultError(ValueError):
    """A --result FILE that cannot be a tool result; the message names the file and why."""


def result_argument(text):
    """An argparse type: `--result N=FILE` as (N, FILE); the file is read by `open_fork`."""
    number, equals, name = text.partition("=")
    if not (equals and number.isascii() and number.isdigit() and int(number) >= 1 and name):
        raise argparse.ArgumentTypeError(f"{text!r}: give N=FILE, N a tool call's number from 1")
    return int(number), name


def read_result(name):
    """The JSON object in the file `name` (`--result N=FILE`), or ResultError saying why not.

    subtle: only a regular file is read, never blocking, and at most MAX_RESULT_BYTES of it:
    a FIFO would hold the program for good, /dev/zero fill its memory, and a result of 150 MB
    be printed whole by the fork and again by every replay.
    """
    try:
        data = read_regular_file(name, MAX_RESULT_BYTES)
    except OSError as error:
        why = error.strerror or "not a regular file: a FIFO, a device or a folder"
        raise ResultError(f"{name}: cannot be read ({why})") from None
    if len(data) > MAX_RESULT_BYTES:
        raise ResultError(
            f"{name}: larger than {MAX_RESULT_BYTES:,} bytes, the most a tool result given "
            "to a fork may hold"
        )
    try:
        value = json.loads(data.decode("utf-8"))
    except ValueError as error:  # UnicodeDecodeError among them
        raise ResultError(f"{name}: not JSON ({error})") from None
    except RecursionError:
        raise ResultError(f"{name}: nested too deeply to read") from None
    if not isinstance(value, dict):
        raise ResultError(f"{name}: a tool result is a JSON object, not this")
    # it is kept at fork.changes[i].results[N] of the new recording, 5 levels down
    problem = held_problem(value, "result", RESULT_DEPTH)
    if problem:
        raise ResultError(f"{name}: a recording cannot hold it: {problem}")
    return value


def last_turn(recording):
    """The last turn a fork may start at: the recording's last model call, or the turn its
    stop cut off, whichever comes first (the turns before it are whole)."""
    return min(len(recording["model_calls"]), recording["stop"]["turn"])


def fork_problem(recording, at, results, max_turns):
    """Why `recording` cannot be forked at turn `at` with these `results` changed, or None."""
    last = last_turn(recording)
    if not 1 <= at <= last:
        held = f"{last} turn" + ("" if last == 1 else "s")
        return f"--at {at}: the recording holds {held} to fork at; give --at 1 to {last}"
    if max_turns < at:
        return f"--max-turns {max_turns} ends the run before turn {at}, where the fork begins"
    calls = [e for e in recording["events"] if e["type"] == TOOL_START and e["turn"] == at - 1]
    for number in results:
        if number > len(calls):
            made = f"turn {at - 1} made {len(calls)} tool call(s)" if at > 1 else "no turn came"
            return f"--result {number}: {made} before turn {at}"
        if calls[number - 1].get("from_text"):
            return f"--result {number}: that call was written as text; its result is not a tool's"
    return None


class Edit(NamedTuple):
    """One change of a fork's, as `AgentLoop.change_conversation` takes it: the messages
    `replaced` ((index, message) pairs) and `added`, and what it did, in words."""

    replaced: list
    added: list
    said: list


def edit_of(messages, change, turn):
    """What `change`, made before `turn`'s request, does to the conversation `messages`
    (changed by none of this): results first, then a message said."""
    replaced, added, said = [], [], []
    results = sorted(change.get("results", {}).items(), key=lambda x: int(x[0]))
    # the last answer's results follow it
    answers = [i for i, m in enumerate(messages) if m.get("role") == "assistant"]
    for number, value in results:
        where = answers[-1] + int(number) if answers else len(messages)
        if where >= len(messages):  # today's run made fewer calls: replay says where
            said.append(f"tool call {number} of turn {turn - 1} was not made: no result")
            continue
        content = json.dumps(value, ensure_ascii=False)
        if messages[where].get("role") == "tool":
            name = messages[where].get("tool_name")
            replaced.append((where, {"role": "tool", "tool_name": name, "content": content}))
        else:  # subtle: refused when forking; a recording may still hold one
            replaced.append((where, written_result("?", content)))
        said.append(f"the result of tool call {number} of turn {turn - 1} replaced: {content}")
    if change.get("say") is not None:
        added.append({"role": "user", "content": change["say"]})
        said.append(f"said to the model: {change['say']}")
    return Edit(replaced, added, said)


def make_changes(loop, changes, turn):
    """Make the changes a fork made before `turn`'s request, through `loop` (an AgentLoop,
    which alone changes its conversation); return what they did, each line as the terminal
    shows it ("fork, turn 3: ...")."""
    lines = []
    for change in (c for c in changes if c["at"] == turn):
        edit = edit_of(loop.messages, change, turn)
        loop.change_conversation(edit.replaced, edit.added)
        lines += [f"fork, turn {turn}: {line}" for line in edit.said]
    return lines


class ForkChat:
    """Requests 1 to K-1 answered from the parent's saved calls, as replay answers them;
    from request K on, by the live model (a RecordingChat, which keeps what it streams)."""

    def __init__(self, replayed, live, at):
        self.replayed, self.live, self.at = replayed, live, at

    def __call__(self, messages, tools):
        if len(self.replayed.requests) < self.at - 1:
            return self.replayed(messages, tools)
        return self.live(messages, tools)


def open_fork(path, at, say, result_files, max_turns, isolate, assemble=None):
    """(the Fork of the recording `path` at turn `at`, the recording's task), or
    RecordingError saying why it cannot be: a --result file that cannot be sent (read
    first, before the recording), a recording that may not run here, or a turn or a result
    it does not hold. `result_files` is --result's (N, FILE) pairs."""
    try:
        results = [(number, read_result(name)) for number, name in result_files]
    except ResultError as error:
        raise RecordingError(str(error)) from None
    parent = load(path)
    check_sample(parent, path)  # what replay refuses, a fork refuses
    check_isolation(path, isolate)
    problem = fork_problem(parent, at, [n for n, _ in results], max_turns)
    if problem:
        raise RecordingError(f"{path}: {problem}")
    return Fork(path, parent, at, say, results, assemble), task_of(parent)


class ForkDiverged(Exception):
    """A fork's replayed turns went another way than its parent's: the live model must not be
    asked, and nothing is saved. `problems` says where, as replay says it."""

    def __init__(self, problems):
        super().__init__("; ".join(problems))
        self.problems = problems

    def lines(self):
        return [f"DIVERGED ({len(self.problems)}):", *(f"  {p}" for p in self.problems)]


class Fork:
    """A recording forked at turn `at`, with the changes asked for at that turn.

    Made whole at once: the parent's turns are served by its own ReplayChat, whose
    requests `divergences` compares, whenever it is asked. `assemble` turns the parent's
    raw OpenAI events into chunks (openai_model.chunks_from_events), for a parent that
    holds them. Run it once: the replayed chat answers each saved call once.
    """

    def __init__(self, path, recording, at, say=None, results=(), assemble=None):
        self.path, self.parent, self.at = Path(path), recording, at
        self.made = as_made(recording)  # its edit tool, as it was (harness/old_recordings.py)
        self.sha256 = hashlib.sha256(self.path.read_bytes()).hexdigest()
        own = {"at": at, "say": say, "results": {str(n): v for n, v in results}}
        # a parent that is itself a fork changed its conversation too: those changes made
        # before this fork's turn are part of the turns replayed here
        inherited = [c for c in (recording.get("fork") or {}).get("changes", []) if c["at"] < at]
        self.changes = inherited + ([own] if say is not None or results else [])
        api = recording.get("api", "ollama")
        self.replayed = ReplayChat(recording["model_calls"][: at - 1], assemble, api)

    def chat(self, live):
        """The chat the loop talks to: the parent's turns, then `live`."""
        return ForkChat(self.replayed, live, self.at)

    def reached(self, events, root):
        """At turn `at`, before the live model is asked: the line that says the replayed
        turns match the parent's, or ForkDiverged saying how they do not."""
        problems = self.divergences(events, root)
        if problems:
            raise ForkDiverged(problems)
        return (
            f"turn {self.at}: the replayed turns match the recording; "
            "the live model answers from here"
        )

    def live(self, events):
        """Whether the run reached turn `at`, where the live model answers."""
        return any(e["type"] == MODEL_START and e["turn"] == self.at for e in events)

    def ended(self, events, root):
        """After the loop: ForkDiverged when the run stopped before turn `at` (a tool the
        deadline cut, ...): the parent went on to turn `at`, so no live turn is the model's."""
        if not self.live(events):
            raise ForkDiverged(self.stopped_early(events, root))

    def divergences(self, events, root):
        """How the replayed turns differ from the parent's, compared as replay compares
        them: events, tool calls and results, requests. Empty: the fork may go on."""
        expected = [e for e in self.parent["events"] if e["turn"] < self.at]
        workdir = self.parent.get("workdir")
        problems = [event_divergence(expected, events, workdir, root)]
        problems += tool_divergences(expected, events, workdir, root)
        asked = {**self.parent, "model_calls": self.parent["model_calls"][: self.at - 1]}
        problems += request_divergences(asked, self.replayed.requests, root)
        return [p for p in problems if p]

    def stopped_early(self, events, root):
        """Why a run that ended before turn `at` is no fork: where it stopped, and how its
        replayed turns differ from the parent's (the parent went on to turn `at`)."""
        stop = events[-1]  # the loop's last event is always its stop
        where = f"({stop['reason']}) at turn {stop['turn']}"
        first = f"the run stopped {where}, before turn {self.at}, where the fork begins"
        return [first, *self.divergences(events, root)]

    def model_calls(self, live_calls, live_api):
        """The new recording's model calls: the parent's replayed ones, then the live ones,
        each saying where it came from and over which wire."""
        replayed = [
            {**saved, "source": REPLAYED, "api": call_api(self.parent, saved)}
            for saved in self.parent["model_calls"][: self.at - 1]
        ]
        return replayed + [{**saved, "source": LIVE, "api": live_api} for saved in live_calls]

    def record(self):
        """What the new recording says of the fork (its `fork` field)."""
        return {
            "parent": self.path.name,
            "parent_sha256": self.sha256,
            "at": self.at,
            "changes": self.changes,
        }

    def opening_line(self, model):
        replayed = "none" if self.at == 1 else f"1-{self.at - 1}" if self.at > 2 else "1"
        return (
            f"Fork of {self.path} at turn {self.at}: turns replayed: {replayed}, each checked "
            f"as replay checks it; from turn {self.at} on, {model} answers live"
        )


class RecordedFork:
    """A forked recording's fork, as replay.py runs it again: its changes, made at the turns
    they name, and the line that says where its live part began. Nothing is checked here:
    replay compares the whole run afterwards."""

    def __init__(self, fork):
        self.fork, self.at, self.changes = fork, fork.get("at"), fork.get("changes", [])

    def reached(self, events, root):
        return f"turn {self.at}: {fork_point(self.fork)}"

    def ended(self, events, root):
        """Nothing: a replay that stopped before the fork's turn diverges where it differs."""


def fork_point(fork):
    """What a replay says where a forked recording's live part began."""
    return (
        f"the fork point: the turns before it were replayed from {fork['parent']} when this "
        "was recorded; this one and the rest were the live model's"
    )


def change_words(change, say_limit=None):
    """What one change did, in words: "result N replaced" for each result, then `said
    "TEXT"`, its TEXT cut after `say_limit` characters (marked "...") when one is given."""
    words = [f"result {n} replaced" for n in sorted(change.get("results", {}), key=int)]
    say = change.get("say")
    if say is not None:
        if say_limit is not None and say[say_limit:]:
            say = say[:say_limit] + "..."
        words.append(f"said {json.dumps(say, ensure_ascii=False)}")
    return words


def fork_line(fork):
    """A forked recording's fork, in words (for a page, the terminal, compare.py)."""
    changed = "; ".join(f"turn {c['at']}: " + ", ".join(change_words(c)) for c in fork["changes"])
    line = f"forked from {fork['parent']} at turn {fork['at']}"
    return line + (f" (changed: {changed})" if changed else "")
