"""`python3 lab.py tasks`: the ladder with each task's card and how it has gone so far;
`python3 lab.py tasks check NAME` (or a folder's path): whether a folder is a task.

A folder is a task when its card reads (harness/task_folders.py) and, each judged by the
verdict every run gets (verdict.py: the visible tests it gives, then the held-out checks of
the docstring's contract, one seed for all, isolated as a run is):
- the code it gives fails;
- the visible tests that fail are exactly the ones its card names under `Fails`;
- the reference (the harness's own answer, plumbing/generated_cases.py) and every correct
  style of repair (plumbing/correct_styles/) pass, with its tests (after the first that
  fails, the rest are not judged: one is enough to say no).

How a task has gone: the live recordings of it in recordings/ and runs/, passed k of n, by
model. A task nobody has run says so.

Not here: reading a folder (harness/task_folders.py), or giving a task to a run
(harness/tasks.py, record_run.py --task).
"""

import inspect
import os
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

from harness.board import arm_of
from harness.console import visible
from harness.recording import RECORDINGS, RUNS, load
from harness.recording_checks import RecordingError
from harness.task_folders import TaskFolderError, read_folder
from harness.tasks import LADDER, LADDER_PROBLEMS, TASKS, TASKS_FOLDER
from plumbing.exit_codes import EVERY_PROGRAM, EXIT_ERROR, EXIT_NO, EXIT_OK, run_program
from plumbing.generated_cases import STYLES, new_seed, reference
from plumbing.sample import PRISTINE_TESTS, SAMPLE_FILES, SOURCE_FILE, copy_sample
from plumbing.verdict_words import PASSED
from verdict import independent_verdict

USAGE = "usage: python3 lab.py tasks [check NAME_OR_FOLDER ... | check all]"
HELP = f"""{USAGE}

With no argument (or `list`), print the ladder: each task's card, and how the live
recordings in recordings/ and runs/ went on it. `check NAME` (a folder of tasks/) or
`check FOLDER` (a path), several, or `all` of the ladder: judge the code each folder gives
and every correct repair with its tests, as a run's verdict would, and say whether it is a
task (docs/tasks.md says what makes one). Nothing is changed.

exit codes: 0 listed, or every folder is a task; 1 one is not; 2 a wrong call;
{EVERY_PROGRAM}"""


def reference_source():
    """The reference as a path_rules.py: the harness's own answer, under the sample's name."""
    code = inspect.getsource(reference).replace("def reference(", "def python_sources(", 1)
    return code.encode()


def repairs():
    """{name: path_rules.py source} of every repair that keeps the contract."""
    styles = {path.stem: path.read_bytes() for path in sorted(STYLES.glob("*.py"))}
    return {"the reference": reference_source(), **styles}


def check(folder, out, isolate=True, seed=None, judged=None):
    """Print whether `folder` is a task, a line a check; True when it is. `judged`: the
    verdicts of earlier checks with the same `seed`, by source, tests and helpers, to ask
    again."""
    try:
        task = read_folder(folder)
    except (TaskFolderError, OSError, UnicodeDecodeError) as error:
        print(f"not a task: {error}", file=out)
        return False
    seed, tests = new_seed() if seed is None else seed, task.tests or PRISTINE_TESTS
    judged = {} if judged is None else judged
    print(f"Checking {folder}: {task.card.title} (rung {task.card.rung}, seed {seed})", file=out)
    source, helpers = task.source or SAMPLE_FILES[SOURCE_FILE], task.helpers
    start = _verdict(source, tests, helpers, seed, isolate)
    failing = sorted(n for n, outcome in start.get("by_test", {}).items() if outcome != PASSED)
    results = [
        _said(out, start["verdict"] != PASSED, f"the code it gives fails ({_counts(start)})"),
        _said(
            out,
            failing == sorted(task.card.fails),
            f"the tests that fail are the card's: {', '.join(failing) or 'none'}"
            + (
                ""
                if failing == sorted(task.card.fails)
                else f" (the card says {', '.join(task.card.fails)})"
            ),  # fmt: skip
        ),
    ]
    every = repairs()
    for number, (name, repair) in enumerate(every.items(), start=1):
        # subtle: the same code on the same tests with the same seed: the same verdict, so
        # checking the whole ladder judges each repair once for each test file it gives
        if (repair, tests, helpers) not in judged:
            judged[repair, tests, helpers] = _verdict(repair, tests, helpers, seed, isolate)
        verdict = judged[repair, tests, helpers]
        why = "" if verdict["verdict"] == PASSED else f": {verdict.get('reason', '')}"[:200]
        results.append(_said(out, verdict["verdict"] == PASSED, f"{name} passes{why}"))
        if verdict["verdict"] != PASSED and number < len(every):  # one is enough to say no
            print(f"  (the other {len(every) - number} repairs are not judged)", file=out)
            break
    ok = all(results)
    end = "is a task" if ok else f"is not a task: {results.count(False)} checks failed"
    print(f"{folder} {end}.", file=out)
    return ok


def _verdict(source, tests, helpers, seed, isolate):
    with tempfile.TemporaryDirectory(prefix="agent-lab-task-") as scratch:
        root = copy_sample(scratch, source, tests, dict(helpers))
        return independent_verdict(root, isolate, seed=seed, tests=tests, helpers=dict(helpers))


def _counts(verdict):
    held_out = verdict.get("held_out") or {}
    return (
        f"{verdict.get('passed', 0)} of {verdict.get('collected', 0)} visible tests passed, "
        f"held-out {held_out.get('passed', 0)} of {held_out.get('total', 0)}"
    )


def _said(out, ok, what):
    print(f"  {'ok  ' if ok else 'FAIL'} {what}", file=out)
    return ok


def how_it_went(folders=(RECORDINGS, RUNS)):
    """{task name: {"model, arm": Counter(passed=k, attempts=n)}} from the live recordings
    (an arm as the board says it: harness/board.py)."""
    found = defaultdict(lambda: defaultdict(Counter))
    for path in sorted(p for folder in folders if folder.is_dir() for p in folder.rglob("*.json")):
        try:
            recording = load(path)
        except (RecordingError, OSError, ValueError):
            continue  # not a recording this lab reads: replay.py says why
        final = recording.get("final_tests") or {}
        if recording.get("source") != "live" or not final:
            continue
        name = recording.get("task_name", "repair")
        model = f"{(recording.get('model') or {}).get('name', '?')}, {arm_of(recording)}"
        found[name][model]["attempts"] += 1
        found[name][model]["passed"] += final.get("verdict") == PASSED
    return found


def listing(out, went=None):
    """Print the ladder: each task's card and how it has gone."""
    went = how_it_went() if went is None else went
    print(f"The ladder of tasks ({TASKS_FOLDER.name}/; docs/tasks.md):", file=out)
    for task in LADDER:
        card = task.card
        title = card.title if card else "(no card)"
        print(f"\n{card.rung if card else '?':>2}  {task.name}: {title}", file=out)
        if card:
            print(f"    What is wrong: {card.wrong}", file=out)
            print(f"    Fails: {', '.join(card.fails)}", file=out)
            print(f"    Easy or hard: {card.ease}", file=out)
        runs = went.get(task.name, {})
        print("    Measured:" + ("" if runs else " not run live yet"), file=out)
        for model, counted in sorted(runs.items()):
            print(f"      {model}: passed {counted['passed']} of {counted['attempts']}", file=out)
    others = [t.name for t in TASKS.values() if t.impossible]
    print(f"\nImpossible tasks (docs/impossible.md): {', '.join(others)}", file=out)
    for name, why in LADDER_PROBLEMS.items():
        print(f"Not a task: {name}: {why}", file=out)


class Visible:
    """`out`, each text written with what a terminal would act on written out (console.py's
    `visible`): a folder's file names, a card, a recording's model name are a learner's."""

    def __init__(self, out):
        self.out = out

    def write(self, text):
        return self.out.write(visible(text))

    def flush(self):
        self.out.flush()


def main(argv=None, out=None):
    out = Visible(out or sys.stdout)
    argv = sys.argv[1:] if argv is None else argv
    if argv in ([], ["list"]):
        listing(out)
        return EXIT_OK
    if any(flag in argv for flag in ("-h", "--help")):
        print(HELP, file=out)
        return EXIT_OK
    if argv[0] == "check" and len(argv) > 1:
        if "all" in argv[1:] and len(argv) > 2:
            print(f"error: `check all` is the whole ladder, alone; {USAGE}", file=sys.stderr)
            return EXIT_ERROR
        names = [task.name for task in LADDER] if argv[1:] == ["all"] else argv[1:]
        seed, judged, ok = new_seed(), {}, True
        for name in names:
            # a name is a folder of tasks/; anything with a separator, or a folder here, a path
            named = not (Path(name).is_dir() or "/" in name or os.sep in name)
            ok &= check(TASKS_FOLDER / name if named else Path(name), out, seed=seed, judged=judged)
        return EXIT_OK if ok else EXIT_NO
    print(f"error: {USAGE}", file=sys.stderr)
    return EXIT_ERROR


if __name__ == "__main__":
    run_program(main)
