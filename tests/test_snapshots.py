"""Every display of every shipped recording, and the outcome of each odd input, is as its
snapshot says (see tests/snapshots.py).

A failure shows the first lines that differ. If the change is meant, rewrite the files with
`python3 lab.py run tests/snapshots.py` and read their diff before committing it.
"""

import difflib

import pytest

from tests.snapshots import FOLDER, makers

MAKERS = makers()


def test_every_snapshot_file_is_made_and_none_is_left_over():
    assert sorted(p.name for p in FOLDER.glob("*.txt")) == sorted(MAKERS)


@pytest.mark.parametrize("name", list(MAKERS))  # cheap ones first: -x stops sooner
def test_each_display_is_as_its_snapshot(name):
    kept, made = (FOLDER / name).read_text(encoding="utf-8"), MAKERS[name]()
    if kept != made:
        diff = difflib.unified_diff(
            kept.splitlines(), made.splitlines(), "snapshot", "today", lineterm="", n=1
        )
        pytest.fail(
            "\n".join(list(diff)[:40]) + "\n(rewrite: python3 lab.py run tests/snapshots.py)"
        )
