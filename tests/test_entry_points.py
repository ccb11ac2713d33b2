"""The lab's entry points: --help that changes nothing, and paths that work from anywhere.

Every entry point answers -h/--help with help and exit 0, and changes nothing.
A learner's first move is `--help`. It must never run a job: before this was tested,
`lab.py lock --help` rewrote requirements-lock.txt and `make_recordings.py --help` rewrote
every shipped recording.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent.parent
SCRIPTS = [
    "record_run.py",
    "replay.py",
    "ask.py",
    "tests/make_recordings.py",
    "tests/bench.py",
    "compare.py",
    "tests/bench_jobs.py",
    "tests/make_live_recording.py",
    "tests/mutate.py",
    "tests/real_server.py",
    "tests/make_screenshot.py",
    "tests/snapshots.py",
    "tests/suite_cost.py",
    "view.py",
]


def git(folder, *args):
    return subprocess.run(
        ["git", "-c", "user.name=lab", "-c", "user.email=lab@localhost", *args],
        cwd=folder,
        capture_output=True,
        check=True,
    ).stdout


@pytest.fixture(scope="module")
def checkout(tmp_path_factory):
    """A throwaway git checkout of the lab's tracked files, sharing this one's .venv/.

    subtle: a broken --help rewrites files; here it can only damage the copy.
    """
    if not (HERE / ".git").exists():
        pytest.skip("not a git checkout: the tracked files are unknown")
    copy = tmp_path_factory.mktemp("checkout")
    for name in git(HERE, "ls-files", "-z").decode().split("\0"):
        if name and (HERE / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            (copy / name).write_bytes((HERE / name).read_bytes())
    if (HERE / ".venv").exists():
        (copy / ".venv").symlink_to(HERE / ".venv")
    git(copy, "init", "-q")
    (copy / ".git" / "info" / "exclude").write_text(".venv\n")  # the link, not a folder
    git(copy, "add", "-A")
    git(copy, "commit", "-q", "-m", "as tested")
    return copy


@pytest.fixture
def unchanged(checkout):
    yield checkout
    assert git(checkout, "status", "--porcelain", "--untracked-files=all") == b"", (
        "--help changed files in the checkout"
    )


@pytest.mark.parametrize("script", SCRIPTS)
@pytest.mark.parametrize("flag", ["-h", "--help"])
def test_script_help_exits_0_and_changes_nothing(script, flag, unchanged):
    # as `lab.py run` starts them: the scripts in tests/ import the lab's packages
    env = {**os.environ, "PYTHONPATH": str(unchanged)}
    finished = subprocess.run(
        [sys.executable, str(unchanged / script), flag],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert finished.returncode == 0, finished.stderr
    assert "usage:" in finished.stdout


@pytest.mark.parametrize("script", [s for s in SCRIPTS if s.startswith("tests/")])
def test_a_maintainers_script_runs_directly_from_anywhere(script, unchanged, tmp_path):
    # `.venv/bin/python tests/bench.py --help`, not through lab.py and without PYTHONPATH:
    # once a ModuleNotFoundError traceback (issue 21)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    finished = subprocess.run(
        [sys.executable, str(unchanged / script), "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
    )
    assert finished.returncode == 0 and "Traceback" not in finished.stderr, finished.stderr
    assert "usage:" in finished.stdout


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["-h"],
        ["lock", "--help"],
        ["lint", "--help"],
        ["run", "--help"],
        ["test", "--help"],
        ["replay", "--help"],
        ["run", "tests/make_recordings.py", "--help"],
    ],
)
def test_lab_help_exits_0_and_changes_nothing(argv, unchanged):
    finished = subprocess.run(
        [sys.executable, str(unchanged / "lab.py"), *argv],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert finished.returncode == 0, finished.stderr
    assert "usage" in finished.stdout.lower()  # help, not the job's own output


def test_lab_names_an_unknown_job():
    finished = subprocess.run(
        [sys.executable, str(HERE / "lab.py"), "replya"], capture_output=True, text=True
    )
    assert finished.returncode == 2
    assert "error: unknown job 'replya'" in finished.stderr
    assert "replay" in finished.stderr


def test_lab_replay_finds_the_labs_recordings_from_another_folder(tmp_path):
    finished = subprocess.run(
        [sys.executable, str(HERE / "lab.py"), "replay", "recordings/bounded-max-turns-1.json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert "1 reproduced" in finished.stdout
