"""record_run.py, the recorder, past what test_recorded.py's end-to-end runs show: where it
may write (--output: a folder, a link, a device or a FIFO refused before any run; a name
made from any model name), a recording it cannot save (exit 2, not a finished attempt), and
a run that rewrote the test file (saved, and not counted). Its main() runs in the test's
process (tests/in_process.py) or `record_attempt` is called with a scripted chat.
"""

import os
from pathlib import Path

import pytest

from tests.in_process import run_cli

# --- --output: refused before any run unless it is a new or a regular file ------------------------


@pytest.mark.parametrize("kind", ["device", "fifo", "link"])
def test_output_that_is_not_a_regular_file_is_refused_even_with_force(tmp_path, kind):
    # as root, `--output /dev/null --force` once replaced the machine's /dev/null
    target = tmp_path / "target"
    if kind == "device":
        target = Path("/dev/null")
    elif kind == "fifo":
        os.mkfifo(target)
    else:
        (tmp_path / "real.json").write_text("keep me")
        target.symlink_to(tmp_path / "real.json")
    before = os.lstat(target)
    finished = run_cli("record_run.py", "--host", "http://127.0.0.1:9", "--output", target,
                       "--force")  # fmt: skip
    assert finished.returncode == 2
    assert finished.stderr == (
        f"error: {target} is not a regular file (a link, a device or a FIFO); give --output "
        "the name of a new or a regular file\n"
    )
    after = os.lstat(target)
    assert (after.st_mode, after.st_ino, after.st_rdev) == (
        before.st_mode,
        before.st_ino,
        before.st_rdev,
    )
    if kind == "link":
        assert (tmp_path / "real.json").read_text() == "keep me"


def test_output_that_is_a_folder_is_refused_before_any_run(tmp_path):
    finished = run_cli("record_run.py", "--host", "http://127.0.0.1:9", "--output", tmp_path)
    assert finished.returncode == 2
    assert finished.stderr == f"error: {tmp_path} is a folder; give --output a file name\n"
    assert list(tmp_path.iterdir()) == []
