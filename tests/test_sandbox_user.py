"""What a run hands to the tests, as root (plumbing/sandbox_user.py): only folders inside a
folder only root may enter, so no process of `nobody` outside the run finds a way to them.
"""

import os
import tempfile
from pathlib import Path

import pytest

from plumbing import isolation


@pytest.fixture(scope="module")
def as_root():
    if os.geteuid() != 0:
        pytest.skip("run as root to test the sandbox user (CI does)")


def test_a_folder_is_handed_to_the_tests_only_inside_a_folder_only_root_may_enter(
    as_root, tmp_path
):
    # a folder every user may enter, with no folder only root may enter on the way to it
    open_to_all = Path(tempfile.mkdtemp(prefix="agent-lab-open-"))
    try:
        os.chmod(open_to_all, 0o755)
        with pytest.raises(ValueError, match="must sit inside a folder only root may enter"):
            isolation.isolation_prefix(isolation.BUBBLEWRAP, (open_to_all / "copy",))
    finally:
        open_to_all.rmdir()
    writable, readable = tmp_path / "copy", tmp_path / "held-out"  # tmp_path is root's, 0700
    writable.mkdir(mode=0o700)
    readable.mkdir(mode=0o700)
    isolation.isolation_prefix(isolation.BUBBLEWRAP, (writable,), (readable,))
    assert (writable.stat().st_uid, writable.stat().st_mode & 0o777) == (65534, 0o770)
    # read, never written: still root's, and open to read
    assert (readable.stat().st_uid, readable.stat().st_mode & 0o777) == (0, 0o755)
