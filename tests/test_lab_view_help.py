"""`python3 lab.py view --help` says what `lab.py view` does, not what view.py does: with no
RECORDING it writes the pages of every recording the lab ships and of the learner's own in
runs/ (view.py needs one)."""

import pytest

from tests.in_process import run_cli


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_lab_view_help_shows_lab_view_usage_with_recordings_optional(flag):
    finished = run_cli("lab.py", "view", flag)
    assert finished.returncode == 0 and finished.stderr == ""
    usage = finished.stdout.splitlines()[0]
    assert usage == "usage: python3 lab.py view [RECORDING ...] [--out FOLDER]"
    said = " ".join(finished.stdout.split())  # as one line, however the help is wrapped
    assert "every recording the lab ships" in said
    assert "every one of your own in runs/" in said  # it takes them too, and says so
    assert "view.py [-h]" not in finished.stdout  # not view.py's own, RECORDING required


def test_lab_view_help_answers_after_a_recording_too():
    finished = run_cli("lab.py", "view", "recordings/repair.json", "--help")
    assert finished.stdout.startswith("usage: python3 lab.py view ")
