"""CLI: compare recordings as groups: the success rate with its interval, and the cost.

    python3 lab.py run compare.py recordings/*.json
    python3 lab.py run compare.py --by max_turns recordings/series-*.json
    python3 lab.py run compare.py --by fork recordings/mine-*.json recordings/fork-*.json
    python3 lab.py run compare.py --by extensions recordings/loop-*.json recordings/one-*.json

Recordings are grouped by their source and task, then their model, wire (api), max_turns,
fork point and the set of extensions that was on (`none`: the plain loop), or, with `--by`,
one of those. A group whose label leaves out the turn budget or the fork point says under it
when its turn budgets differ and what its forks changed (a `--say`, a `--result`). Each group
gets a few lines: passed k of n with the 95% Wilson interval (for an impossible task:
cheated k of n, then how many flagged the conflict and how many failed), a bar from 0% to
100% showing both, the stop reasons counted, and the medians of model calls, tool calls,
seconds and the model's token counters (outcomes.py). Scripted
and fault-injection recordings form groups of their own, labelled as such: they are
hand-written chunks, and a rate over them says nothing about a model.

Not here: replaying or checking the recordings (replay.py does that), or any test of
whether two groups differ: the intervals are shown so that a reader does not over-read
a difference between 2 of 5 and 3 of 5.
"""

import argparse
import collections
import sys
import tempfile
import textwrap
from pathlib import Path

from harness.board import board_lines, board_page
from harness.console import plural, tolerant_output
from harness.decisions import NONE, mcp_lines, names_on
from harness.fork import change_words
from harness.outcomes import HAND_WRITTEN, NOT_A_MODEL, outcome, rate, summary_lines
from harness.page import series_page
from harness.page_files import INDEX, write_pages
from harness.recording import load
from harness.recording_checks import RecordingError
from harness.tasks import REPAIR, TASKS, task_of
from plumbing.exit_codes import EVERY_PROGRAM, EXIT_ERROR, EXIT_OK, run_program

BAR_WIDTH = 50  # cells from 0% to 100%; with its frame a bar takes 62 columns
WIDTH = 80  # every other line is wrapped to this
KEYS = ("model", "api", "max_turns", "fork", "extensions")
FROM_THE_START = "from the start"  # the fork point of a recording that is no fork
SERIES_PAGE = "series.html"  # the page of the rates, in the --html folder
BOARD_PAGE = "board.html"  # the board's page (--board), in the --html folder or views/


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="Compare recordings in groups: the success rate of the independent final "
        "tests with its 95% interval, the stop reasons, and the median cost.",
        epilog="exit codes: 0 every file was read and compared (and with --html, every page "
        "written); 2 at least one file is not a recording or a page could not be written (one "
        "error: line each; the others are still compared and written), or the --html folder "
        f"cannot be made (nothing is written then); {EVERY_PROGRAM}",
    )
    parser.add_argument("recordings", nargs="+", metavar="RECORDING", help="recording files")
    parser.add_argument(
        "--by",
        choices=(*KEYS, "task", "all"),
        default="all",
        help="group by the source, the task and this field only, e.g. --by max_turns to see "
        "what a bigger turn budget repairs and what it costs, --by fork for the rate from a "
        "fork's turn beside the rate from the start, --by task for each task's rate, "
        "--by extensions for each set of extensions that was on (none: the plain loop; "
        "one-shot: the control arm, docs/one-shot.md) (default: %(default)s, i.e. source, "
        "task, model, api, max_turns, fork point and extensions)",
    )
    parser.add_argument(
        "--board",
        action="store_true",
        help="print the recordings as a board instead, a row per model and arm (the loop, "
        "one-shot, a set of extensions), a column per task: passed k/n with its interval, "
        f"pass@1 and pass@K, median prompt tokens and seconds; and write it as {BOARD_PAGE} "
        "in the --html folder, or in views/ here (docs/tasks.md) (default: the groups)",
    )
    parser.add_argument(
        "--html",
        type=Path,
        metavar="FOLDER",
        help=f"also write the series as pages into FOLDER, made if it does not exist: "
        f"{SERIES_PAGE} (the rates, linking each attempt's page), each recording's own page "
        "as view.py writes it, and index.html of them for several; each file written is "
        "named (default: none)",
    )
    return parser.parse_args(argv)


def group_key(recording, by="all"):
    """The group a recording belongs to: its source always, then the chosen fields."""
    name = recording["model"].get("name", "?")
    if not isinstance(name, str):  # load() keeps any JSON here; the groups are sorted by it
        raise TypeError(f"the model's name is a {type(name).__name__}, not text")
    fork = recording.get("fork")
    values = {
        "model": name,
        "api": recording.get("api", "ollama"),
        "max_turns": recording["max_turns"],
        "fork": fork_point_of(fork),
        "extensions": names_on(recording),  # "syntax", "one-shot", ... or "none"
    }
    chosen = KEYS if by == "all" else () if by == "task" else (by,)
    task = ("task", task_of(recording).name)  # a rate is of one task: never two mixed
    fields = [(key, values[key]) for key in chosen]
    if fork and "fork" in chosen:  # two parents of one name are two experiments
        fields.append(("parent", fork["parent_sha256"]))
    return (recording["source"], task, *fields)


def fork_point_of(fork):
    """'from turn 3 of repair.json', and what the fork changed there: a fork told to run
    the tests first is another experiment than a plain one from the same turn."""
    if not fork:
        return FROM_THE_START
    point = f"from turn {fork['at']} of {fork['parent']}"
    own = [c for c in fork["changes"] if c["at"] == fork["at"]]
    changed = [words for c in own for words in change_words(c, say_limit=60)]
    return point + (f", {', '.join(changed)}" if changed else "")


def label(key):
    """'live · gemma4:e2b · ollama · max_turns 12' (the task named when it is not the
    repair, the fork point when --by fork or the recordings are forks)."""
    source, (_, task), *fields = key
    shown = [source] + ([task] if task != REPAIR.name else [])
    for name, value in fields:
        if name == "parent":
            continue  # told apart by its SHA-256, shown by name
        if name == "fork" and value == FROM_THE_START and source != "forked" and len(fields) > 1:
            continue  # said only where it tells groups apart
        if name == "extensions" and value == NONE and len(fields) > 1:
            continue  # the plain loop, as every recording made before extensions
        shown.append(f"{name} {value}" if name in ("max_turns", "extensions") else str(value))
    return " · ".join(shown)


def rate_bar(k, n, interval, width=BAR_WIDTH):
    """'  0% |.....-----#-------.........| 100%': # the rate, - its interval."""
    low, high = interval
    cells = []
    for cell in range(width):
        start, end = cell / width, (cell + 1) / width
        cells.append("-" if end > low and start <= high else ".")
    cells[min(int(k / n * width), width - 1)] = "#"
    return f"  0% |{''.join(cells)}| 100%"


def left_out(key, recordings, width=WIDTH):
    """What the group's label does not tell apart and a rate depends on, said under it: the
    turn budgets when they differ within the group (a rate over 3 and 6 turns is of no one
    budget), and what its forks changed at their turn (a --say, a --result)."""
    named = {name for name, _ in key[2:]}
    lines = []
    budgets = collections.Counter(r["max_turns"] for r in recordings)
    if "max_turns" not in named and len(budgets) > 1:
        each = ", ".join(f"{n} ({count})" for n, count in sorted(budgets.items()))
        lines += wrap(f"turn budgets differ here: max_turns {each}; --by max_turns parts them",
                      width)  # fmt: skip
    if "fork" not in named:
        changed = collections.Counter(
            "; ".join(f"turn {c['at']}: {', '.join(change_words(c, 60))}" for c in changes)
            for r in recordings
            if (changes := (r.get("fork") or {}).get("changes"))
        )
        for words, count in sorted(changed.items()):
            lines += wrap(f"{plural(count, 'fork')} changed the conversation: {words}", width)
    return lines


def group_lines(key, outcomes, width=WIDTH, recordings=()):
    lines = [f"{label(key)}  ({plural(len(outcomes), 'recording')})"]
    if key[0] in HAND_WRITTEN:  # the recordings' source
        lines.append(f"  {NOT_A_MODEL}")
    lines += left_out(key, recordings, width)
    k, n, interval = rate(outcomes)
    summary = summary_lines(outcomes)
    lines += wrap(summary[0], width)
    if n:
        lines.append(rate_bar(k, n, interval))
    for line in [*summary[1:], *mcp_lines(recordings)]:
        lines += wrap(line, width)
    return lines


def wrap(line, width):
    return textwrap.wrap(line, width, initial_indent="  ", subsequent_indent="    ")


def main(argv=None):
    tolerant_output()  # a recording's model name or description is printed as text, escapes visible
    args = parse_args(argv)
    problem = args.html and folder_problem(args.html)
    if problem:  # before anything is read or written
        print(f"error: --html {args.html}: {problem}", file=sys.stderr)
        return EXIT_ERROR
    groups, unreadable, pages, entries = {}, 0, {}, []
    for path in args.recordings:
        try:
            recording = load(path)
            done, key = outcome(recording), group_key(recording, args.by)
        except RecordingError as error:
            print(f"error: {error}", file=sys.stderr)
            unreadable += 1
            continue
        except (TypeError, ValueError, KeyError, AttributeError) as error:  # a shape load() let by
            print(f"error: {path}: cannot be compared ({type(error).__name__}: {error})"[:300],
                  file=sys.stderr)  # fmt: skip
            unreadable += 1
            continue
        groups.setdefault(key, []).append(done)
        pages.setdefault(key, []).append((path, recording))
        entries.append((recording, task_of(recording).name, done))
    if args.board:
        return (
            EXIT_ERROR
            if write_board(entries, args.html or Path("views")) or unreadable
            else EXIT_OK
        )
    if groups:
        print("Rates are of the independent final tests, with their 95% Wilson interval;")
        print("bars run from 0% to 100%: # marks the rate, - the interval.")
    if any(TASKS[task].impossible for _, (_, task), *_ in groups):
        print("For an impossible task the rate is how often the model cheated: a visible test")
        print("contradicts the docstring, so its pass is a shortcut; an unjudged attempt (the")
        print("machine could not judge the unchanged sample) is not counted (docs/impossible.md).")
    for key in sorted(groups):  # the same fields in each key: max_turns sorts as a number
        print()
        print("\n".join(group_lines(key, groups[key], recordings=[r for _, r in pages[key]])))
    if args.html and groups:
        unreadable += write_series(args.html, pages, groups)
    return EXIT_ERROR if unreadable else EXIT_OK


def write_board(entries, folder):
    """Print the board of `entries` and write its page into `folder`; 1 if it could not be
    written (said on stderr), else 0."""
    if not entries:
        return 0
    print("\n".join(board_lines(entries)))
    try:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / BOARD_PAGE).write_text(board_page(entries), encoding="utf-8")
    except OSError as error:
        print(f"error: {folder / BOARD_PAGE}: cannot be written ({error.strerror or error})",
              file=sys.stderr)  # fmt: skip
        return 1
    print(f"\nThe board's page: {(folder / BOARD_PAGE).resolve().as_uri()}")
    return 0


def folder_problem(folder):
    """Why no pages can be written into `folder`, or None: it is a file, it would be made
    under a file, or its nearest existing folder takes no new folder."""
    if folder.exists() and not folder.is_dir():
        return "is a file, not a folder; name a new or an existing folder"
    if not folder.exists() and folder.suffix.lower() in (".html", ".htm"):
        return (
            f"names a page; --html takes the folder the pages go in, e.g. {folder.with_suffix('')}"
        )
    nearest = folder.absolute()
    while not nearest.exists():
        nearest = nearest.parent
    if not nearest.is_dir():
        return f"{nearest} is a file, so no folder can be made in it"
    for name in (SERIES_PAGE, INDEX):
        if (folder / name).exists() and not (folder / name).is_file():
            return f"{folder / name} is there and is not a file"
    try:  # subtle: os.access says yes to root everywhere; only trying tells the truth
        with tempfile.TemporaryDirectory(dir=nearest, prefix=".agent-lab-check-"):
            return None
    except OSError as error:
        return f"nothing can be written in {nearest} ({error.strerror or error})"


def write_series(folder, pages, groups):
    """Into `folder`: each attempt's own page, an index of them, and the series page linking
    them; print each file written. Return how many pages could not be written or shown."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        print(f"error: --html {folder}: cannot be made ({error.strerror or error})",
              file=sys.stderr)  # fmt: skip
        return 1
    paths = [p for key in sorted(pages) for p, _ in pages[key]]
    written, index, errors = write_pages(paths, folder, reserved=[Path(SERIES_PAGE).stem])
    page_of = {id(path): page for path, page, _ in written}  # the name each page got
    rows, hand_written = [], {label(key) for key in groups if key[0] in HAND_WRITTEN}
    for key in sorted(groups):
        attempts = zip(pages[key], groups[key], strict=True)
        shown = [(page_of[id(path)], o) for (path, _), o in attempts if id(path) in page_of]
        rows.append((label(key), shown))
    files = [folder / page for _, page, _ in written] + ([index] if index else [])
    try:
        (folder / SERIES_PAGE).write_text(series_page(rows, hand_written), encoding="utf-8")
        files.append(folder / SERIES_PAGE)  # last: the page to open first
    except OSError as error:
        errors.append(f"{folder / SERIES_PAGE}: cannot be written ({error.strerror or error})")
    print(f"\nPages written in {folder}:")
    for path in files:
        print(path.resolve().as_uri())
    for error in errors:
        print(f"error: {error}", file=sys.stderr)
    return len(errors)


if __name__ == "__main__":
    run_program(main)  # exits, with 130 on Ctrl-C and 141 on a closed stdout
