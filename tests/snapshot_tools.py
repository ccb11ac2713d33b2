"""What the loop and the tools do with odd requests, one line per request, for
tests/snapshots.py (see tests/snapshot_inputs.py for the idea).

- seeded random conversations (tests/test_fuzz.py's streams) through agent_events -> every
  event the loop yields, timings left out;
- calls of the read-only tools on a small tree with a binary file, a big file, a long line,
  `.git`, links in and out, a FIFO and an escape in a name -> each result;
- calls of the repair tools on a copy of the sample (one run_tests) -> each result;
- texts with secrets -> what redaction leaves; counts -> Wilson intervals; pytest outputs ->
  the counts read from them.
"""

import copy
import json
import os
import random
import re
import tempfile
from pathlib import Path

from agent_loop import TASK, agent_events
from harness.divergence import divergences, first_difference
from harness.recording import RECORDINGS, load
from openai_model import _lines, chunks_from_events
from plumbing.chunk_shape import check_size
from plumbing.limits import (
    MAX_CALLS_ACCEPTED,
    MAX_LINE_BYTES,
    MAX_TURN_ARGUMENTS,
    Deadline,
    positive_int,
    positive_seconds,
)
from plumbing.ollama_transport import _LimitedStream
from plumbing.pytest_report import count_results
from plumbing.redact import LEARNED, redact, secret_values
from plumbing.sample import copy_sample
from plumbing.stats import median, wilson_interval
from readonly_tools import ReadOnlyTools
from repo_tools import RepoTools
from tests.scripted_model import ScriptedChat
from tests.snapshot_inputs import outcome_of, requests_of
from tests.test_fuzz import CountingTools, random_turn


def ticking(step=0.25):
    """A clock that moves `step` seconds each time it is read: the loop's timings become
    a count of its readings, the same on every run, so the snapshot keeps them."""
    now = [0.0]

    def clock():
        now[0] += step
        return now[0]

    return clock


def loop_runs(count=300, seed=7):
    """One block per seeded random conversation: each event, timed on a ticking clock."""
    lines = []
    for number in range(count):
        rng = random.Random(seed * 100_000 + number)
        max_turns = rng.randint(1, 4)
        turns = [random_turn(rng)[0] for _ in range(rng.randint(1, 5))]
        lines.append(f"conversation {number} (max_turns {max_turns}): {turns!r:.2000}")
        chat, tools = ScriptedChat(turns), CountingTools()
        try:
            for event in agent_events(chat, tools, TASK, max_turns=max_turns, clock=ticking()):
                lines.append("  " + json.dumps(event, ensure_ascii=False, default=repr))
        except Exception as error:  # noqa: BLE001 - part of the outcome
            lines.append(f"  raised {type(error).__name__}: {error}")
        lines.append(f"  ran {tools.ran}, sent {len(chat.requests)} requests")
    return lines


def _tree(root):
    (root / "sub" / "deep").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]\n")
    (root / "a.py").write_text("def a():\n    return 1\n\n\ndef b():\n    return 'é'\n")
    (root / "sub" / "b.txt").write_text("alpha\nbeta\ndef not_code\n")
    (root / "sub" / "deep" / "c.py").write_text("x = 1  # def in a comment\n")
    (root / "binary.dat").write_bytes(b"\x00\x01def\x02" * 10)
    (root / "big.txt").write_text("".join(f"line {n} def\n" for n in range(2000)))
    (root / "long.txt").write_text("def " + "y" * 500 + "\n")
    (root / "latin1.txt").write_bytes("café def\n".encode("latin-1"))
    (root / "empty.txt").write_text("")
    (root / "esc\x1b[2Jape.txt").write_text("def hidden\n")
    (root / "link-in").symlink_to("a.py")
    (root / "link-out").symlink_to("/etc")
    (root / "link-loop").symlink_to("link-loop")
    os.mkfifo(root / "fifo")


READONLY_CALLS = [
    ("list_dir", {"path": "."}),
    ("list_dir", {"path": "sub"}),
    ("list_dir", {"path": "sub/deep/"}),
    ("list_dir", {"path": ".."}),
    ("list_dir", {"path": "/etc"}),
    ("list_dir", {"path": "a.py"}),
    ("list_dir", {"path": "nope"}),
    ("list_dir", {"path": ".git"}),
    ("list_dir", {"path": "link-out"}),
    ("list_dir", {"path": ""}),
    ("list_dir", {}),
    ("list_dir", {"path": 3}),
    ("read_file", {"path": "a.py"}),
    ("read_file", {"path": "./sub/../a.py"}),
    ("read_file", {"path": "sub/deep/c.py"}),
    ("read_file", {"path": "binary.dat"}),
    ("read_file", {"path": "big.txt"}),
    ("read_file", {"path": "long.txt"}),
    ("read_file", {"path": "latin1.txt"}),
    ("read_file", {"path": "empty.txt"}),
    ("read_file", {"path": "esc\x1b[2Jape.txt"}),
    ("read_file", {"path": "link-in"}),
    ("read_file", {"path": "link-out/hostname"}),
    ("read_file", {"path": "link-loop"}),
    ("read_file", {"path": "fifo"}),
    ("read_file", {"path": ".git/config"}),
    ("read_file", {"path": "sub"}),
    ("read_file", {"path": "missing.py"}),
    ("read_file", {"path": "a.py", "extra": 1}),
    ("search", {"pattern": "def"}),
    ("search", {"pattern": "def", "path": "sub"}),
    ("search", {"pattern": "def", "path": "a.py"}),
    ("search", {"pattern": "^x", "path": "sub/deep"}),
    ("search", {"pattern": "line 1[0-9]{2} "}),
    ("search", {"pattern": "("}),
    ("search", {"pattern": ""}),
    ("search", {"pattern": "y" * 1001}),
    ("search", {"pattern": "def", "path": ".."}),
    ("search", {"pattern": "def", "path": ".git"}),
    ("search", {"pattern": "nothing matches this"}),
    ("search", {"pattern": "café"}),
    ("unknown_tool", {}),
]


def readonly_calls():
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder).resolve()
        _tree(root)
        return _invoked(ReadOnlyTools(root), READONLY_CALLS, root)


def _invoked(tools, calls, root, tidy=lambda result: result):
    """A line per call: its name and arguments, then the result (`tidy` applied to it),
    the root folder written as ROOT."""
    lines = []
    for name, arguments in calls:
        result = tidy(json.loads(outcome_of(lambda n=name, a=arguments: tools.invoke(n, a))))
        shown = json.dumps(result, ensure_ascii=False, sort_keys=True).replace(str(root), "ROOT")
        lines.append(f"{name} {json.dumps(arguments, ensure_ascii=False)} -> {shown}")
    return lines


REPO_CALLS = [
    ("read_file", {"path": "path_rules.py"}),
    ("read_file", {"path": "tests/test_path_rules.py"}),
    ("read_file", {"path": "../outside.py"}),
    ("read_file", {"path": "/etc/hostname"}),
    ("read_file", {"path": "nope.py"}),
    ("read_file", {"path": "tests"}),
    ("read_file", {"path": ["path_rules.py"]}),
    ("read_file", {}),
    ("replace_text", {"old": "no such text", "new": "x"}),
    ("replace_text", {"old": "", "new": "x"}),
    ("replace_text", {"old": "parts", "new": "pieces"}),
    ("replace_text", {"old": 'parts = path.split("/")', "new": 'parts = path.split("/")'}),
    ("replace_text", {"old": 'parts = path.split("/")', "new": 3}),
    ("replace_text", {"old": "def ", "new": "def  ", "count": 2}),
    ("replace_text", {"old": 'path.split("/")', "new": 'path.replace("\\\\", "/").split("/")'}),
    ("run_tests", {}),
    ("run_tests", {"verbose": True}),
    ("delete_file", {"path": "path_rules.py"}),
]


def _untimed(result):
    if "output" in result:  # pytest's timing varies
        result["output"] = re.sub(r" in [\d.]+s\b", " in Ns", result["output"])
    return result


def repo_calls():
    with tempfile.TemporaryDirectory() as folder:
        root = copy_sample(Path(folder))
        return _invoked(RepoTools(root), REPO_CALLS, root, _untimed)


def numbers():
    environ = {"OPENAI_API_KEY": "sk-abc123456789", "MY_TOKEN": "tok-xyz98765", "HOME": "/root",
               "SHORT_KEY": "ab", "DB_PASSWORD": "hunter2hunter2",
               "OLLAMA_HOST": "http://ann:pa55word@127.0.0.1:11434"}  # fmt: skip
    # subtle: secret_values adds what this process learned before (LEARNED); leave that out
    secrets = [v for v in secret_values(environ) if v not in LEARNED]
    lines = [f"secrets of {sorted(environ)}: {sorted(secrets)}"]
    for text in ("key sk-abc123456789 and tok-xyz98765", "nothing here", "hunter2hunter2!",
                 {"nested": ["sk-abc123456789", 5]}, None, "ab ab"):  # fmt: skip
        lines.append(f"redact {text!r} -> {redact(text, secrets)!r}")
    for k, n in [(0, 1), (1, 1), (0, 5), (3, 5), (5, 5), (1, 20), (19, 20), (50, 100), (0, 0)]:
        lines.append(f"wilson {k} of {n} -> {outcome_of(lambda k=k, n=n: wilson_interval(k, n))}")
    lines.append(f"wilson 6 of 5 -> {outcome_of(lambda: wilson_interval(6, 5))}")
    for values in ([], [3], [1, 3], [5, 1, 3], [2.5, 1, 4, 3], [None, 2]):
        lines.append(f"median {values} -> {outcome_of(lambda v=values: median(v))}")
    for output in ("4 passed in 0.02s", "1 failed, 3 passed in 0.1s", "2 errors in 1s",
                   "no tests ran in 0.01s", "3 passed, 1 skipped, 2 warnings", "", "garbage",
                   "1 failed, 1 passed\n5 passed", "== 1 xfailed, 2 xpassed =="):  # fmt: skip
        lines.append(f"counts of {output!r} -> {outcome_of(lambda o=output: count_results(o))}")
    return lines


def _replayed(recording, root):
    """What a faithful replay in `root` hands divergences(): the recording's own results."""
    events = json.loads(json.dumps(recording["events"]).replace(recording["workdir"], root))
    for event in events:  # timings and pytest's durations differ on every run
        if isinstance(event.get("seconds"), float):
            event["seconds"] *= 2
    requests = json.loads(json.dumps(requests_of(recording)).replace(recording["workdir"], root))
    final = copy.deepcopy(recording["final_tests"])
    return events, requests, recording["final_source"], final


def _nth(events, kind, n=0):
    return [e for e in events if e["type"] == kind][n]


REPLAY_CHANGES = {
    "nothing (timings doubled, another folder)": lambda ev, rq, fin: None,
    "pytest took another time": lambda ev, rq, fin: _nth(ev, "tool_result", 3)["result"].update(
        output=_nth(ev, "tool_result", 3)["result"]["output"].replace(" in 0.", " in 9.")
    ),
    "a read returned other text": lambda ev, rq, fin: _nth(ev, "tool_result")["result"].update(
        text="other"
    ),
    "an edit had other arguments": lambda ev, rq, fin: _nth(ev, "tool_start", 2)[
        "arguments"
    ].update(new="x" * 300),
    "a tool was another": lambda ev, rq, fin: _nth(ev, "tool_start", 1).update(name="run_tests"),
    "the last event is missing": lambda ev, rq, fin: ev.pop(),
    "an event more": lambda ev, rq, fin: ev.append({"type": "model_start", "turn": 6}),
    "the first event is missing": lambda ev, rq, fin: ev.pop(0),
    "a reply said more": lambda ev, rq, fin: _nth(ev, "model_done")["message"].update(
        content="more", tool_calls=[]
    ),
    "a request held another message": lambda ev, rq, fin: rq[2].append({"role": "user"}),
    "a request was shorter": lambda ev, rq, fin: rq[3].pop(),
    "a model call fewer": lambda ev, rq, fin: rq.pop(),
    "a model call more": lambda ev, rq, fin: rq.append([]),
    "the final tests failed": lambda ev, rq, fin: fin.update(exit_code=1, verdict="failed"),
    "the held-out checks differ": lambda ev, rq, fin: fin["held_out"].update(passed=3),
    "the counts differ": lambda ev, rq, fin: fin.update(passed=3, failed=1, collected=5),
    "the final reason is new": lambda ev, rq, fin: fin.update(reason="a new reason"),
}


def replay_divergences():
    """One block per way a replay can differ from the repair recording: what it reports."""
    recording = load(RECORDINGS / "repair.json")
    root = "/tmp/lab-replay-xyz/repo"
    lines = []
    for name, change in REPLAY_CHANGES.items():
        events, requests, source, final = _replayed(recording, root)
        change(events, requests, final)
        found = divergences(recording, recording["events"], events, requests, source, final, root)
        lines += [f"--- {name}: {len(found)}", *found]
    events, requests, source, final = _replayed(recording, root)
    for label, args in (
        ("the source differs", (source.replace("def ", "def  ", 1), final)),
        ("no final tests today", (source, None)),
    ):
        found = divergences(recording, recording["events"], events, requests, *args, root)
        lines += [f"--- {label}: {len(found)}", *found]
    for want, have in (({"a": [1, {"b": 2}]}, {"a": [1, {"b": 3}]}), ([1, 2], [1]), (1, [1]),
                       ({"a": 1}, {"b": 1}), ("x" * 200, "y"), (None, None), ([], {})):  # fmt: skip
        lines.append(
            f"first_difference {want!r:.40} {have!r:.40} -> {first_difference(want, have)!r:.200}"
        )
    return lines


class _Response:
    """A body handed over in fixed pieces, for openai_model._lines."""

    def __init__(self, pieces):
        self.pieces = list(pieces)

    def read1(self, size):
        return self.pieces.pop(0) if self.pieces else b""


def limits():
    """Each limit at its edge: the last value it allows and the first it refuses."""
    lines = []
    for text in ("1", "0.5", "0", "-1", "inf", "nan", "x", "1e-9", " 2 "):
        lines.append(
            f"positive_seconds {text!r} -> {outcome_of(lambda t=text: positive_seconds(t))}"
        )
    for text in ("1", "2", "0", "-1", "1.5", " 3 ", "x", "007"):
        lines.append(f"positive_int {text!r} -> {outcome_of(lambda t=text: positive_int(t))}")
    now = [100.0]
    deadline = Deadline(10, clock=lambda: now[0])
    for at in (100.0, 109.0, 109.5, 110.0, 111.0):
        now[0] = at
        facts = (deadline.left(), deadline.expired(), deadline.expired(margin=0.5),
                 deadline.cap(5), outcome_of(deadline.check))  # fmt: skip
        lines.append(f"deadline of 10 s at {at - 100:g} s -> {facts}")
    endless = Deadline(None, clock=lambda: now[0])
    lines.append(f"no deadline -> {endless.left()}, {endless.expired(1e9)}, {endless.cap(7)}")
    lines.append(f"an expired one says: {Deadline(2.5).error()}")
    call = '{"index": %d, "id": "c%d", "function": {"name": "n", "arguments": "%s"}}'
    for count in (MAX_CALLS_ACCEPTED, MAX_CALLS_ACCEPTED + 1):
        fragments = [json.loads(call % (i, i, "")) for i in range(count)]
        events = [{"choices": [{"delta": {"tool_calls": fragments}}]}, {"choices": [
            {"delta": {}, "finish_reason": "tool_calls"}]}]  # fmt: skip
        made = outcome_of(
            lambda e=events: len(list(chunks_from_events(e))[-1]["message"]["tool_calls"])
        )
        lines.append(f"openai: {count} calls in a turn -> {made}")
        shaped = [{"function": {"name": "n", "arguments": {}}}] * count
        checked = outcome_of(lambda c=shaped: check_size(c, [], 0))
        lines.append(f"ollama: {count} calls in a turn -> {checked}")
    for size in (MAX_TURN_ARGUMENTS, MAX_TURN_ARGUMENTS + 1):
        fragment = {"index": 0, "function": {"name": "n", "arguments": "a" * size}}
        events = [{"choices": [{"delta": {"tool_calls": [fragment]}, "finish_reason": "stop"}]}]
        made = outcome_of(lambda e=events: len(list(chunks_from_events(e))))
        lines.append(f"openai: {size:,} argument characters -> {made}")
        shaped = [{"function": {"name": "n", "arguments": "a" * size}}]
        checked = outcome_of(lambda c=shaped: check_size(c, c, 0))
        lines.append(f"ollama: {size:,} argument characters -> {checked}")
    for size in (MAX_LINE_BYTES, MAX_LINE_BYTES + 1):
        for pieces in (
            [b"x" * size + b"\n"],
            [b"x" * (size - 1), b"x\n"],
            [b"x" * size],
            [b"a\n" + b"x" * (size - 2), b"xx\nb"],
            [b"a\nb\n" + b"x" * (size - 1), b"x"],
        ):
            read = outcome_of(lambda p=pieces: [len(x) for x in _lines(_Response(p))])
            wire = _LimitedStream(pieces, Deadline(), _Network())
            streamed = outcome_of(lambda w=wire: [len(x) for x in w])
            shown = [len(x) for x in pieces]
            lines.append(f"a line of {size:,} bytes in pieces {shown} -> openai {read}")
            lines.append(f"  ollama {streamed}")
    return lines


class _Network:
    fired = False

    def disarm(self):
        pass


# file name -> the function that makes its lines
TOOLS_AND_LOOP = {
    "loop-runs.txt": loop_runs,
    "readonly-tools.txt": readonly_calls,
    "repo-tools.txt": repo_calls,
    "numbers.txt": numbers,
    "limits.txt": limits,
    "replay-divergences.txt": replay_divergences,
}
