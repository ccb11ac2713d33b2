"""The lab's entry points: --help that changes nothing, and paths that work from anywhere.

Every entry point answers -h/--help with help and exit 0, and changes nothing.
A learner's first move is `--help`. It must never run a job: before this was tested,
`lab.py lock --help` rewrote requirements-lock.txt and `make_recordings.py --help` rewrote
every shipped recording.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent.parent
SCRIPTS = [
    "record_run.py",
    "replay.py",
    "ask.py",
    "tests/maintainers/make_recordings.py",
    "tests/maintainers/bench.py",
    "compare.py",
    "tests/maintainers/bench_jobs.py",
    "tests/maintainers/make_live_recording.py",
    "tests/maintainers/mutate.py",
    "tests/real_server.py",
    "tests/maintainers/make_screenshot.py",
    "tests/snapshots.py",
    "tests/maintainers/suite_cost.py",
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


# Each script's -h and --help, as `python3 SCRIPT FLAG` runs it (runpy, as __main__, its own
# folder first on sys.path, PYTHONPATH the checkout as `lab.py run` sets it), one after the
# other in one program, with what the checkout's `git status` says after each when it
# changed. One interpreter and the SDK's import for all 28, not one each.
HELPS = """
import contextlib, io, json, os, runpy, subprocess, sys
checkout, answers = sys.argv[1], []
def status():
    return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"],
                          cwd=checkout, capture_output=True, text=True).stdout
before = status()
for script, flag in json.loads(sys.argv[2]):
    path = os.path.join(checkout, script)
    saved = (list(sys.argv), list(sys.path), os.getcwd())
    sys.argv, sys.path[0] = [path, flag], os.path.dirname(path)
    out, err, code = io.StringIO(), io.StringIO(), 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            runpy.run_path(path, run_name="__main__")
    except SystemExit as exit:
        code = exit.code if isinstance(exit.code, int) else (0 if exit.code is None else 1)
    except BaseException as error:
        code, err = "raised", io.StringIO(f"{type(error).__name__}: {error}")
    sys.argv, sys.path[:], _ = saved[0], saved[1], os.chdir(saved[2])
    after = status()
    changed = "" if after == before else after
    sdk = "ollama" in sys.modules  # imported by this script's help, or by one before it
    answers.append([script, flag, code, out.getvalue(), err.getvalue(), changed, sdk])
    before = after
print(json.dumps(answers))
"""
FLAGS = ["-h", "--help"]
SHARES_THE_HELPS = pytest.mark.xdist_group("entry-point-helps")


@pytest.fixture(scope="module")
def helps(checkout):
    """{(script, flag): (exit code, stdout, stderr, git status if it changed, whether the
    `ollama` SDK had been imported by then)}."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    asked = json.dumps([[script, flag] for script in SCRIPTS for flag in FLAGS])
    finished = subprocess.run(
        [sys.executable, "-c", HELPS, str(checkout), asked],
        capture_output=True, text=True, timeout=120, env=env, cwd=checkout,
    )  # fmt: skip
    assert finished.returncode == 0, finished.stderr
    return {(s, f): tuple(rest) for s, f, *rest in json.loads(finished.stdout.splitlines()[-1])}


@SHARES_THE_HELPS
@pytest.mark.parametrize("script", SCRIPTS)
@pytest.mark.parametrize("flag", FLAGS)
def test_script_help_exits_0_and_changes_nothing(script, flag, helps):
    code, out, err, status, _ = helps[script, flag]
    assert code == 0, err
    assert "usage:" in out
    assert status == "", f"{script} {flag} changed files in the checkout:\n{status}"


@SHARES_THE_HELPS
def test_the_programs_help_never_imports_the_ollama_sdk(helps):
    # local_model.py imports the SDK when an Ollama adapter is made: help costs no 0.13 s
    # for it. subtle: one interpreter asks every help in SCRIPTS' order, and these come first
    assert SCRIPTS[:3] == ["record_run.py", "replay.py", "ask.py"]
    assert [helps[s, f][4] for s in SCRIPTS[:3] for f in FLAGS] == [False] * 6


@pytest.mark.parametrize("script", [s for s in SCRIPTS if s.startswith("tests/")])
def test_a_maintainers_script_runs_directly_from_anywhere(script, unchanged, tmp_path):
    # `.venv/bin/python tests/maintainers/bench.py --help`, not through lab.py and without
    # PYTHONPATH: once a ModuleNotFoundError traceback (issue 21)
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


@pytest.mark.parametrize("script", ["tests/snapshots.py", "tests/maintainers/bench.py"])
def test_a_script_run_by_a_python_without_the_labs_packages_says_how_to_run_it(script, tmp_path):
    # -S: no site-packages, as a python3 without the lab's .venv/ has none of its packages
    finished = subprocess.run([sys.executable, "-S", str(HERE / script), "--help"],
                              capture_output=True, text=True, timeout=60, cwd=tmp_path)  # fmt: skip
    assert finished.returncode == 2 and finished.stdout == ""
    assert finished.stderr == (
        f"error: {script} needs the lab's packages; run python3 lab.py run {script}\n"
    )


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
        ["model", "--help"],
        ["model", "-h"],
        ["run", "tests/maintainers/make_recordings.py", "--help"],
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


@pytest.mark.parametrize("flags", [[], ["-q"], ["-qq"], ["-xq"], ["--quiet", "-q"], ["-v"]])
def test_lab_test_leaves_pytest_quiet_once_whatever_flags_are_passed(flags, tmp_path, monkeypatch):
    # lab.py adds its own -q, or a -v for each extra one: pytest drops its closing `N passed`
    # line at -qq (a verbosity of -2). What pytest makes of lab.py's arguments, read by
    # pytest's own parser here; the run below shows the line in a real `lab.py test`.
    from lab import quiet_once

    monkeypatch.chdir(tmp_path)  # no conftest.py or settings of ours in the way
    config = pytest.Config.fromdictargs({}, [*quiet_once(flags), *flags])
    assert config.get_verbosity() == (0 if flags == ["-v"] else -1)


def test_lab_test_keeps_pytests_closing_count_with_extra_quiet_flags(tmp_path):
    (tmp_path / "test_one.py").write_text("def test_one():\n    pass\n")
    finished = subprocess.run(
        [sys.executable, str(HERE / "lab.py"), "test", str(tmp_path), "-n", "0", "--quiet", "-q"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert "1 passed in " in finished.stdout.splitlines()[-1]


def test_a_worker_of_the_suite_reads_the_test_modules_the_controller_rewrote():
    # conftest.py: under xdist, the controller rewrote this module's asserts once, into the
    # session's folder, and pytest reads it from there, checked against this source; with
    # no workers pytest keeps to its own folder beside the module (and lab.py lets it write
    # nothing there)
    from _pytest.assertion import rewrite

    from conftest import REWRITTEN

    here = Path(__file__).resolve()
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        assert rewrite.get_cache_dir(here) == here.parent / "__pycache__"
        return
    kept = Path(os.environ[REWRITTEN], *here.parent.parts[1:], here.stem + rewrite.PYC_TAIL)
    assert rewrite.get_cache_dir(here) == kept.parent
    assert rewrite._read_pyc(here, kept) is not None  # whole, and made from these bytes


def test_make_live_recording_never_replaces_a_recording_without_force(
    tmp_path, capsys, monkeypatch
):
    # its default output is the model's shipped recording: refused before any server starts
    # (none could start here: if the refusal went, the error would be another, not a new file)
    from tests.maintainers.make_live_recording import main

    monkeypatch.setenv("LAB_LLAMA_SERVER", str(tmp_path / "no-server"))

    shipped = HERE / "recordings" / "smollm2-135m-live.json"
    before = shipped.read_bytes()
    assert main(["--model", "smollm2-135m-instruct"]) == 2
    assert capsys.readouterr().err == f"error: {shipped} exists; pass --force to replace it\n"
    assert shipped.read_bytes() == before
    (tmp_path / "mine-2.json").write_text("kept")  # the second of a series
    assert main(["--output", str(tmp_path / "mine.json"), "--attempts", "2"]) == 2
    assert "mine-2.json exists; pass --force" in capsys.readouterr().err
    assert (tmp_path / "mine-2.json").read_text() == "kept"


def test_what_lab_py_starts_writes_no_bytecode_into_the_installation(tmp_path):
    # .venv/ is checked against what lab.py installed (plumbing/installed_files.py): bytecode
    # written there later, as pytest's rewrite of its plugins, would be refused as planted
    script = tmp_path / "says.py"
    script.write_text("import sys\nprint(sys.dont_write_bytecode)\n")
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    finished = subprocess.run(
        [sys.executable, str(HERE / "lab.py"), "run", str(script)],
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
    )
    assert finished.returncode == 0, finished.stderr
    assert finished.stdout == "True\n"


def test_every_stamp_lab_py_writes_into_the_installation_is_its_own_note():
    # each lock lab.py installs leaves a stamp in .venv/ after the snapshot of what pip
    # installed: one the snapshot does not name as lab.py's own reads as planted, and every
    # program refuses to start (the MCP lock's stamp once did, right after its install)
    from plumbing.installed_files import OWN

    stamps = re.findall(r'VENV / "([\w.-]+\.sha256)"', (HERE / "lab.py").read_text())
    assert len(stamps) == 3 and set(stamps) <= set(OWN), stamps
