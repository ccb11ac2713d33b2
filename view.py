"""CLI: one self-contained page per recording, to see a run instead of reading it.

    python3 view.py RECORDING [RECORDING ...] [--out FOLDER]

Writes FOLDER/<recording name>.html for each recording (and FOLDER/index.html, a table of
them, when there are several: harness/page_files.py) and prints each page's file://
address. A page shows the run from the recording alone (harness/page.py): the conversation
request by request, each turn's chunks over time, the calls and their results, each edit's
diff, why it stopped and what decided.

Viewing is safe where replaying is not: nothing a recording holds is run (no tool, no
test), and every string of it is shown as text.
"""

import argparse
import sys
from pathlib import Path

from harness.console import tolerant_output
from harness.page_files import write_pages  # each page from harness/page.py
from plumbing.exit_codes import EVERY_PROGRAM, EXIT_ERROR, EXIT_OK, run_program

DEFAULT_FOLDER = Path("views")


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="Write one self-contained HTML page per recording (and an index.html for "
        "several); nothing in a recording is run.",
        epilog="exit codes: 0 every page was written; 2 a recording could not be read or a "
        f"page not written (the others are still written); {EVERY_PROGRAM}",
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
    return EXIT_ERROR if errors else EXIT_OK


if __name__ == "__main__":
    run_program(main)  # exits, with 130 on Ctrl-C and 141 on a closed stdout
