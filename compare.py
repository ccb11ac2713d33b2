"""CLI: compare recordings as groups: the success rate with its interval, and the cost.

    python3 lab.py run compare.py recordings/*.json
    python3 lab.py run compare.py --by max_turns recordings/series-*.json

Recordings are grouped by their source, model, wire (api) and max_turns, or, with `--by`,
by their source and one of those. Each group gets a few lines: passed k of n with the 95%
Wilson interval, a bar from 0% to 100% showing both, the stop reasons counted, and the
medians of model calls, tool calls, seconds and the model's token counters (outcomes.py).
Scripted and fault-injection recordings form groups of their own, labelled as such: they
are hand-written chunks, and a rate over them says nothing about a model.

Not here: replaying or checking the recordings (replay.py does that), or any test of
whether two groups differ: the intervals are shown so that a reader does not over-read
a difference between 2 of 5 and 3 of 5.
"""

import argparse
import os
import sys
import textwrap
from pathlib import Path

from plumbing.console import plural, tolerant_output
from plumbing.outcomes import NOT_A_MODEL, outcome, rate, summary_lines
from plumbing.page import series_page
from plumbing.recording import RecordingError, load

BAR_WIDTH = 50  # cells from 0% to 100%; with its frame a bar takes 62 columns
WIDTH = 80  # every other line is wrapped to this
KEYS = ("model", "api", "max_turns")
EXIT_COMPARED, EXIT_UNREADABLE = 0, 2


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="Compare recordings in groups: the success rate of the independent final "
        "tests with its 95% interval, the stop reasons, and the median cost.",
        epilog="exit codes: 0 every file was read and compared; 2 at least one file is not a "
        "recording (one error: line each; the others are still compared)",
    )
    parser.add_argument("recordings", nargs="+", metavar="RECORDING", help="recording files")
    parser.add_argument(
        "--by",
        choices=(*KEYS, "all"),
        default="all",
        help="group by the source and this field only, e.g. --by max_turns to see what a "
        "bigger turn budget repairs and what it costs (default: %(default)s, i.e. source, "
        "model, api and max_turns)",
    )
    parser.add_argument(
        "--html",
        type=Path,
        metavar="FILE",
        help="also write the series as a page to FILE, with each recording's own page beside "
        "it (as view.py writes them), linked from the page (default: none)",
    )
    return parser.parse_args(argv)


def group_key(recording, by="all"):
    """The group a recording belongs to: its source always, then the chosen fields."""
    name = recording["model"].get("name", "?")
    if not isinstance(name, str):  # load() keeps any JSON here; the groups are sorted by it
        raise TypeError(f"the model's name is a {type(name).__name__}, not text")
    values = {
        "model": name,
        "api": recording.get("api", "ollama"),
        "max_turns": recording["max_turns"],
    }
    chosen = KEYS if by == "all" else (by,)
    return (recording["source"], *((key, values[key]) for key in chosen))


def label(key):
    """'live · gemma4:e2b · ollama · max_turns 12'"""
    source, *fields = key
    return " · ".join([source, *(f"{name} {value}" if name == "max_turns" else str(value)
                                 for name, value in fields)])  # fmt: skip


def rate_bar(k, n, interval, width=BAR_WIDTH):
    """'  0% |.....-----#-------.........| 100%': # the rate, - its interval."""
    low, high = interval
    cells = []
    for cell in range(width):
        start, end = cell / width, (cell + 1) / width
        cells.append("-" if end > low and start <= high else ".")
    cells[min(int(k / n * width), width - 1)] = "#"
    return f"  0% |{''.join(cells)}| 100%"


def group_lines(key, outcomes, width=WIDTH):
    lines = [f"{label(key)}  ({plural(len(outcomes), 'recording')})"]
    if key[0] != "live":
        lines.append(f"  {NOT_A_MODEL}")
    k, n, interval = rate(outcomes)
    summary = summary_lines(outcomes)
    lines += wrap(summary[0], width)
    if n:
        lines.append(rate_bar(k, n, interval))
    for line in summary[1:]:
        lines += wrap(line, width)
    return lines


def wrap(line, width):
    return textwrap.wrap(line, width, initial_indent="  ", subsequent_indent="    ")


def main(argv=None):
    tolerant_output()  # a recording's model name or description is printed as text, escapes visible
    args = parse_args(argv)
    groups, unreadable, pages = {}, 0, {}
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
    if groups:
        print("Rates are of the independent final tests, with their 95% Wilson interval;")
        print("bars run from 0% to 100%: # marks the rate, - the interval.")
    for key in sorted(groups):  # the same fields in each key: max_turns sorts as a number
        print()
        print("\n".join(group_lines(key, groups[key])))
    if args.html and groups:
        write_series(args.html, pages, groups)
    return EXIT_UNREADABLE if unreadable else EXIT_COMPARED


def write_series(target, pages, groups):
    """The series page at `target`, and each attempt's own page beside it, linked."""
    from view import write_pages  # the per-recording pages, as view.py writes them

    folder = target.parent
    written, errors = write_pages([p for key in sorted(pages) for p, _ in pages[key]], folder)
    for error in errors:
        print(f"error: {error}", file=sys.stderr)
    page_of = {id(path): page for path, page, _ in written}  # the name each page got
    rows = []
    for key in sorted(groups):
        attempts = zip(pages[key], groups[key], strict=True)
        shown = [(page_of[id(path)], o) for (path, _), o in attempts if id(path) in page_of]
        rows.append((label(key), shown))
    target.write_text(series_page(rows), encoding="utf-8")
    print(f"\n{target.resolve().as_uri()}")


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # the reader stopped reading (`| head`): not worth a traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(EXIT_UNREADABLE)
