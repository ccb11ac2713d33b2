"""What the lab shows for each shipped recording, rendered whole, for tests/test_snapshots.py.

    python3 lab.py run tests/snapshots.py    # rewrites tests/snapshots/*.txt

A snapshot says that nothing shown changed, not that what is shown is right: each file was
read when it was written, and a diff of one is read before it is committed. The other tests
check what matters in a display (the verdict, the stop, escapes made visible); these catch
every other change, so a slip in a display's code (a bar a cell short, a line dropped, a
figure rounded otherwise) does not pass unseen.

Each recording is rendered in this process, from the recording alone (no replay, no test
run): the terminal lines RunPrinter prints for its events, the verdict lines, each request
as `--transcript` shows it and whole, the timeline at three widths, the attempt line, and
the page view.py writes. Variants of the repair recording reach the branches no shipped
one does (an interrupted run, a model error, a call written as text, a turn past the call
cap, text beyond ASCII, context counters, broken turns). The modules beside this one add
the outcomes of odd inputs (snapshot_inputs.py), of the loop and the tools
(snapshot_tools.py), and what the CLIs print (snapshot_clis.py: those replay and run
tests, and come last).
"""

import argparse
import copy
import io
import json
import sys
import tempfile
from pathlib import Path

if __name__ == "__main__":  # run directly, not through lab.py: the lab is one folder up
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.run_directly import need_lab_packages

    need_lab_packages(__file__)

from agent_loop import MODEL_DONE, PAST_MAX_CALLS_RUN, STOPPED, TOOL_RESULT, TOOL_START
from harness.console import RunPrinter, made_by, verdict_lines
from harness.outcomes import attempt_line, outcome, summary_lines
from harness.page import index_page, recording_page, series_page
from harness.recording import RECORDINGS, load, save
from harness.recording_format import ENDED_ERROR, ENDED_WITHOUT_DONE
from harness.timeline import timeline
from harness.transcript import (
    chunk_lines,
    full_request_lines,
    message_lines,
    request_lines,
)
from plumbing.limits import MAX_CALLS_RUN
from plumbing.sample import SAMPLE_FILES, SOURCE_FILE
from repo_tools import RepoTools
from tests.helpers import SHOWN
from tests.snapshot_clis import CLIS
from tests.snapshot_inputs import INPUTS, requests_of
from tests.snapshot_tools import TOOLS_AND_LOOP
from tests.snapshot_verdicts import VERDICTS

FOLDER = Path(__file__).resolve().parent / "snapshots"
SHIPPED = SHOWN  # the shipped recordings but a measurement's (tests/helpers.py)


def _interrupted(recording):
    recording["interrupted"] = True
    recording["final_tests"] = None
    recording["stop"] = {"type": "stopped", "turn": 3, "reason": "interrupted"}
    recording["events"] = [e for e in recording["events"] if e["type"] != STOPPED]


def _model_error(recording):
    recording["stop"] = {
        "type": "stopped",
        "turn": 5,
        "reason": "model_error",
        "error": "HTTP 400: model 'gemma4:e2b' does not support tools",
    }
    recording["events"] = [e for e in recording["events"] if e["type"] != STOPPED]


def _text_call(recording):
    stop = {**recording["stop"], "text_tool_call": {"name": "read_file"}}
    recording["stop"] = stop
    recording["events"] = [stop if e["type"] == STOPPED else e for e in recording["events"]]


def _past_the_cap(recording):
    """Turn 1 asks for MAX_CALLS_RUN + 2 reads: the 2 past the cap are answered with the
    loop's error."""
    start = next(e for e in recording["events"] if e["type"] == TOOL_START)
    result = next(e for e in recording["events"] if e["type"] == TOOL_RESULT)
    extra = []
    for index in range(1, MAX_CALLS_RUN + 2):
        extra.append({**start, "index": index})
        past = {"error": PAST_MAX_CALLS_RUN}  # what the loop answers a call past the cap
        ran = index < MAX_CALLS_RUN
        extra.append({**result, "index": index, "result": result["result"] if ran else past})
    at = recording["events"].index(result) + 1
    recording["events"][at:at] = extra


def _unicode(recording):
    """Text beyond ASCII in the thinking, an argument and a result: shown as itself."""
    text = json.dumps(recording, ensure_ascii=False)
    text = text.replace("before changing anything", "avant de changer quoi que ce soit ✓")
    text = text.replace("tests/test_path_rules.py", "tests/tést_path_rules.py")
    recording.update(json.loads(text))


def _context(recording):
    """Prompt counters against a known window: turns 3 to 5 at or past 90% of it, one of
    them a count that is not a number; no isolation or date recorded; fault-injection chunks."""
    recording["model"]["options"]["num_ctx"] = 1000
    counts = iter([300, True, 900, 999, 1200])
    for event in recording["events"]:
        if event["type"] == MODEL_DONE:
            event["model_counters"] = {"prompt_eval_count": next(counts), "eval_count": 7}
    recording["source"] = "fault-injection"
    recording["isolation"] = None
    recording["recorded_at"] = None


def _context_one(recording):
    """One request exactly at 90% of a vLLM window, the others well under it."""
    recording["model"] = {"name": "some/model", "server_model": {"max_model_len": 2000}}
    counts = iter([100, 200, 1800, 400, 0])
    for event in recording["events"]:
        if event["type"] == MODEL_DONE:
            event["model_counters"] = {"prompt_eval_count": next(counts)}


def _broken_turns(recording):
    """A turn with no arrival times, one that ended in an error, a failed edit, a long
    result, a tool the terminal has no line of its own for, a turn cut off, a test file
    changed. Not a run the harness could make (turn 5 both ends and is cut off): load()
    accepts it, so every display must still show it without an exception."""
    calls = recording["model_calls"]
    del calls[0]["arrived"]
    calls[1]["ended"], calls[1]["error"] = ENDED_ERROR, "connection reset by peer"
    calls[2]["ended"] = ENDED_WITHOUT_DONE
    for event in recording["events"]:
        if event["type"] == TOOL_RESULT and event["name"] == "replace_text":
            event["result"] = {"error": "old text not found in path_rules.py"}
        elif event["type"] == TOOL_RESULT and event["turn"] == 2:
            event["result"] = {**event["result"], "text": "long line\n" * 150}
        elif event["type"] in (TOOL_START, TOOL_RESULT) and event["name"] == "run_tests":
            event["name"] = "search"  # an ask.py tool: its result is shown as cut JSON
            if event["type"] == TOOL_RESULT:
                event["result"] = {"matches": [f"path_rules.py:{n}: parts" for n in range(9)]}
        elif event["type"] == STOPPED:
            event.update(reason="incomplete_model_turn", seconds=12.5)
        elif event["type"] == MODEL_DONE and event["turn"] == 5:
            del event["seconds"]
    recording["stop"] = next(e for e in recording["events"] if e["type"] == STOPPED)
    recording["tests_unchanged"] = False
    recording["loop_seconds"] = None


VARIANTS = {
    "variant-interrupted": _interrupted,
    "variant-model-error": _model_error,
    "variant-text-call": _text_call,
    "variant-past-the-cap": _past_the_cap,
    "variant-unicode": _unicode,
    "variant-context": _context,
    "variant-context-one": _context_one,
    "variant-broken-turns": _broken_turns,
}


def recordings():
    """(name, recording) of every case: the shipped recordings, then the variants."""
    found = [(str(p.relative_to(RECORDINGS).with_suffix("")), load(p)) for p in SHIPPED]
    repair = load(RECORDINGS / "repair.json")
    with tempfile.TemporaryDirectory() as folder:
        for name, change in VARIANTS.items():
            variant = copy.deepcopy(repair)
            change(variant)
            # saved and loaded back: a variant is a recording load() accepts, nothing else
            save(Path(folder) / "variant.json", variant)
            found.append((name, load(Path(folder) / "variant.json")))
    return found


def terminal(recording, root=None):
    """What RunPrinter prints for the recording's events. Given `root` (a folder with the
    sample's source), each successful edit is made there between its start and its result,
    as the tool would, so that the printer shows the diff of each edit."""
    out = io.StringIO()
    printer = RunPrinter(out, root)
    starts = {}
    for event in recording["events"]:
        if root and event["type"] == TOOL_START:
            starts[event["index"]] = event
        elif root and event["type"] == TOOL_RESULT and event["name"] == "replace_text":
            if "error" not in event["result"]:
                arguments, file = starts[event["index"]]["arguments"], root / SOURCE_FILE
                text = file.read_text(encoding="utf-8")
                file.write_text(text.replace(arguments["old"], arguments["new"], 1), "utf-8")
        printer.show(event)
    if not any(e["type"] == STOPPED for e in recording["events"]):
        printer.stop_line(recording["stop"])
    if recording.get("final_source"):
        printer.changes(recording["final_source"])
    return out.getvalue().splitlines()


TESTS = ("starting_tests", "final_tests")


def every_display(recording):
    """Each display the CLIs make of a loaded recording, in this process: name -> a call."""
    requests, events, tests = requests_of(recording), recording["events"], TESTS
    return {
        "page": lambda: recording_page(recording, "x"),
        "index": lambda: index_page([("x.json", "x.html", recording)]),
        "outcome": lambda: (attempt_line(outcome(recording)), summary_lines([outcome(recording)])),
        "terminal": lambda: (terminal(recording), with_edits(recording), made_by(recording)),
        "verdicts": lambda: [verdict_lines("v", recording[f]) for f in tests],
        "timeline": lambda: timeline(events, events, 1.0, 80, recording["model"]),
        "requests": lambda: [request_lines(n, m, None) for n, m in enumerate(requests, 1)]
        + full_request_lines(recording, requests, RepoTools.schemas),
    }  # fmt: skip


def with_edits(recording):
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / SOURCE_FILE).write_bytes(SAMPLE_FILES[SOURCE_FILE])
        return terminal(recording, root)


def slower(events, factor=3.0):
    """The same events, each span `factor` times as long: a replay beside its recording."""
    return [
        {**e, "seconds": e["seconds"] * factor} if isinstance(e.get("seconds"), float) else e
        for e in events
    ]


def rendered(name, recording):
    """Every view of one recording, as one text with a heading per view."""
    requests = requests_of(recording)
    chunks = [c.get("chunks", c.get("events", [])) for c in recording["model_calls"]]
    tests = recording["starting_tests"], recording["final_tests"]
    sections = {
        "made by": [made_by(recording)],
        "terminal": terminal(recording),
        "terminal, with each edit's diff": with_edits(recording),
        "verdicts": verdict_lines("Starting verdict (recorded)", tests[0])
        + verdict_lines("Independent verdict", tests[1]),
        "requests": [line for n, m in enumerate(requests, 1)
                     for line in request_lines(n, m, requests[n - 2] if n > 1 else None)],
        "chunks of turn 1 and past the last": chunk_lines(1, chunks)
        + chunk_lines(len(chunks) + 1, chunks),
        "whole requests": full_request_lines(recording, requests, RepoTools.schemas),
        "timeline, 100 wide, three times as slow as recorded": timeline(
            slower(recording["events"]), recording["events"], 1.5, 100, recording["model"]
        ),
        "timeline, 60 wide": timeline(recording["events"], tests_seconds=None, width=60),
        "timeline, 30 wide": timeline(recording["events"], width=30, model_info=recording["model"]),
        "attempt": [attempt_line(outcome(recording))],
        "page": recording_page(recording, name).splitlines(),
    }  # fmt: skip
    parts = []
    for heading, lines in sections.items():
        parts += [f"===== {name}: {heading}", *lines]
    return "\n".join(parts) + "\n"


def corner_cases():
    """Displays of things no recording here holds: empty groups, odd messages."""
    lines = ["===== summary of no attempt", *summary_lines([])]
    lines += ["===== messages the transcript must still show"]
    for message in (
        {"role": "assistant"},
        {"role": "assistant", "content": "", "thinking": "", "tool_calls": None},
        {"role": "tool", "tool_name": "read_file", "content": "not JSON\nat all"},
        {"role": "tool", "content": "[1, 2]"},
        {"role": "tool", "content": None},
        {"role": "tool", "content": '{"text": "two\\n\\nlines", "n": 3, "é": "ü"}'},
        {"content": "no role"},
    ):
        lines += message_lines(message)
    first = [{"role": "user", "content": "one"}]
    other = [{"role": "user", "content": "another"}, {"role": "assistant", "content": "two"}]
    lines += request_lines(1, first, None) + request_lines(2, other, first)
    lines += request_lines(3, other + first, other)
    return lines


def series(cases):
    """The index and series pages and the summary over every case, then corner cases."""
    outcomes = [(f"{name}.html", outcome(r)) for name, r in cases]
    groups = [
        ("scripted", [row for row in outcomes if "live" not in row[0]]),
        ("live", [row for row in outcomes if "live" in row[0]]),
        ("interrupted only", [row for row in outcomes if row[1].interrupted]),
    ]
    parts = ["===== summary of every case", *summary_lines([o for _, o in outcomes])]

    def path(name):  # a shipped recording in its folder's group, a variant in variants/
        shipped = RECORDINGS / f"{name}.json"
        return shipped if shipped.exists() else Path("variants", f"{name}.json")

    rows = [(path(n), f"{n}.html", r) for n, r in cases]
    parts += ["===== index page", *index_page(rows).splitlines()]
    parts += ["===== series page", *series_page(groups, {"scripted"}).splitlines()]
    return "\n".join(parts + corner_cases()) + "\n"


def makers():
    """{file name: a function that makes its text}, so that each snapshot is made only by
    the test that compares it (the damaged recordings take seconds)."""
    cases = recordings()
    made = {
        f"{name.replace('/', '--')}.txt": (lambda n=name, r=recording: rendered(n, r))
        for name, recording in cases
    }
    made["series.txt"] = lambda: series(cases)
    more = {**INPUTS, **TOOLS_AND_LOOP, **VERDICTS}
    slow = ["damaged-recordings.txt", "loop-runs.txt"]  # seconds each; the CLIs' come last
    for name, lines in [*((n, more[n]) for n in more if n not in slow),
                        *((n, more[n]) for n in slow), *CLIS.items()]:  # fmt: skip
        made[name] = lambda lines=lines: "\n".join(lines()) + "\n"
    return made


def snapshots():
    """{file name: text} of every snapshot: the displays, then the odd inputs'."""
    return {name: make() for name, make in makers().items()}


def main():
    argparse.ArgumentParser(
        description="Rewrite tests/snapshots/*.txt: every display of every shipped "
        "recording and of its variants, rendered in this process."
    ).parse_args()
    FOLDER.mkdir(exist_ok=True)
    made = snapshots()
    for old in FOLDER.glob("*.txt"):
        if old.name not in made:
            old.unlink()
    for name, text in made.items():
        (FOLDER / name).write_text(text, encoding="utf-8")
    print(f"wrote {len(made)} snapshots to {FOLDER}")


if __name__ == "__main__":
    main()
