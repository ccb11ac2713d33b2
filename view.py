"""CLI: one self-contained page per recording, to see a run instead of reading it.

    python3 view.py RECORDING [RECORDING ...] [--out FOLDER]

Writes FOLDER/<recording name>.html for each recording (and FOLDER/index.html, a table of
them, when there are several) and prints each page's file:// address. A page shows the
run from the recording alone (plumbing/page.py): the conversation request by request, each
turn's chunks over time, the calls and their results, each edit's diff, why it stopped and
what decided.

Viewing is safe where replaying is not: nothing a recording holds is run (no tool, no
test), and every string of it is shown as text.
"""

import argparse
import sys
from pathlib import Path

from plumbing.console import tolerant_output
from plumbing.page import index_page, recording_page
from plumbing.recording import RecordingError, load

EXIT_WRITTEN, EXIT_UNREADABLE = 0, 2
DEFAULT_FOLDER = Path("views")
INDEX = "index.html"  # the table of the pages, written for several recordings


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="Write one self-contained HTML page per recording (and an index.html for "
        "several); nothing in a recording is run.",
        epilog="exit codes: 0 every page was written; 2 a recording could not be read or a "
        "page not written (the others are still written)",
    )
    parser.add_argument("recordings", nargs="+", type=Path, metavar="RECORDING")
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_FOLDER,
        metavar="FOLDER",
        help="where the pages go (default: views/ in the current folder)",
    )
    return parser.parse_args(argv)


def write_pages(paths, folder, reserved=()):
    """Write a page per recording in `folder`, and an index of them for several; return
    ([(path, page, recording)], the index's path or None, errors). No page takes a name
    in `reserved` (names without .html: another page of the caller's).

    A recording that cannot be read, or shown, is an error line; the others are written."""
    rows, errors, taken, index_written = [], [], {"index", *reserved}, None
    for path in paths:
        try:
            recording = load(path)
        except RecordingError as error:
            errors.append(str(error))
            continue
        try:
            # subtle: encoded before the file is opened, so a failure leaves no empty page
            data = recording_page(recording, Path(path).name).encode("utf-8")
        except Exception as error:  # a shape load() lets through and the page cannot draw
            errors.append(f"{path}: cannot be shown ({type(error).__name__}: {error})"[:300])
            continue
        page = f"{unique(Path(path).stem, taken)}.html"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / page).write_bytes(data)
        except OSError as error:
            errors.append(f"{folder / page}: cannot be written ({error.strerror or error})")
            continue
        rows.append((path, page, recording))
    if len(paths) > 1 and rows:
        index = index_page([(page, recording) for _, page, recording in rows])
        try:
            (folder / INDEX).write_bytes(index.encode("utf-8"))
        except OSError as error:
            errors.append(f"{folder / INDEX}: cannot be written ({error.strerror or error})")
        else:
            index_written = folder / INDEX
    return rows, index_written, errors


def unique(stem, taken):
    """`stem`, or `stem-2`, `stem-3` ... when a page of that name is already written (two
    recordings named run.json in two folders; one named index.json)."""
    name, number = stem, 1
    while name in taken:
        number += 1
        name = f"{stem}-{number}"
    taken.add(name)
    return name


def main(argv=None):
    tolerant_output()  # what a recording holds is printed as text, its escapes visible
    args = parse_args(argv)
    rows, index, errors = write_pages(args.recordings, args.out)
    for _, page, _ in rows:
        print((args.out / page).resolve().as_uri())
    if index:
        print(index.resolve().as_uri())
    for error in errors:
        print(f"error: {error}", file=sys.stderr)
    return EXIT_UNREADABLE if errors else EXIT_WRITTEN


if __name__ == "__main__":
    sys.exit(main())
