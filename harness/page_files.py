"""Writing recordings' pages into a folder: what view.py and compare.py write with.

`write_pages(paths, folder)` writes one page per recording (harness/page.py draws it) and,
for several, `index.html`, a table of them; a recording that cannot be read or shown is an
error line, and the others are still written. Two recordings of one name get two pages.

Not here: what a page shows (harness/page.py), reading a recording (harness/recording.py).
"""

import os
import urllib.parse
from pathlib import Path

from harness.page import index_page, recording_page
from harness.recording import RECORDINGS, load
from harness.recording_checks import RecordingError

INDEX = "index.html"  # the table of the pages, written for several recordings


def write_pages(paths, folder, reserved=()):
    """Write a page per recording in `folder`, and an index of them for several; return
    ([(path, page, recording)], the index's path or None, errors). No page takes a name
    in `reserved` (names without .html: another page of the caller's).

    A recording that cannot be read, or shown, is an error line; the others are written."""
    rows, errors, taken, index_written = [], [], {"index", *reserved}, None
    docs = docs_from(folder)
    for path in paths:
        try:
            recording = load(path)
        except RecordingError as error:
            errors.append(str(error))
            continue
        try:
            # subtle: encoded before the file is opened, so a failure leaves no empty page
            data = recording_page(recording, Path(path).name, docs).encode("utf-8")
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
        index = index_page(rows)
        try:
            (folder / INDEX).write_bytes(index.encode("utf-8"))
        except OSError as error:
            errors.append(f"{folder / INDEX}: cannot be written ({error.strerror or error})")
        else:
            index_written = folder / INDEX
    return rows, index_written, errors


def docs_from(folder):
    """The address of the lab's docs/ from a page written in `folder`: a relative one, so
    that the pages and the lab can move together (a file: one where none can be made, as
    between two drives)."""
    docs = RECORDINGS.parent / "docs"
    try:
        return urllib.parse.quote(Path(os.path.relpath(docs, Path(folder).absolute())).as_posix())
    except ValueError:
        return docs.as_uri()


def unique(stem, taken):
    """`stem`, or `stem-2`, `stem-3` ... when a page of that name is already written (two
    recordings named run.json in two folders; one named index.json)."""
    name, number = stem, 1
    while name in taken:
        number += 1
        name = f"{stem}-{number}"
    taken.add(name)
    return name
