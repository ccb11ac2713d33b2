"""Shared pytest fixtures for the lab's own tests, and CI's rule that nothing is skipped."""

import fnmatch
import os
import shutil
import socket
import tempfile
from pathlib import Path

import pytest

from tests import code_cache, run_memo


@pytest.fixture
def unused_port():
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(autouse=True, scope="session")
def sample_repo_is_never_modified():
    """Every run works on a copy: after the whole suite, sample_repo/ is byte-identical."""
    from plumbing.sample import SAMPLE_REPO

    def snapshot():
        return {p: p.read_bytes() for p in sorted(SAMPLE_REPO.rglob("*")) if p.is_file()}

    before = snapshot()
    yield
    assert snapshot() == before, "the suite changed sample_repo/"


# --- every skip said in plain words; under CI, a skipped test is a failure -----------------------
# A test skips when what it needs is missing here (the real llama-server, bubblewrap, root).
# On a developer's machine that is fine, and the run ends by saying what was skipped and why;
# in CI it would hide exactly what CI exists to run.


def under_ci():
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def skipped_reason(report):
    """The reason pytest gives for a skip, without its "Skipped: " prefix."""
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    return reason.removeprefix("Skipped: ")


def pytest_configure(config):
    config.addinivalue_line("markers", "waits: a test that mostly waits (spread over the run)")
    config.addinivalue_line(
        "markers", "real_server: needs the real llama-server (tests/test_real_server.py)"
    )
    # subtle: under xdist only the controller prints the summary; workers just report
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(Skips(fail=under_ci()), "lab-skips")
        temporary_files_in_memory(config)
        rewrite_test_modules_once(config)
    else:
        read_rewritten_test_modules(config)
    code_cache.start(config)  # the lab's modules compiled once a session
    run_memo.start(config)  # the suite's memo of sandboxed runs, and its one held-out seed


# --- what the real-server tests download, said before they do -----------------------------------
# Their two models (about 590 MB) are fetched by the first of them to run, inside a worker,
# where nothing it prints reaches the terminal: so once the tests are collected, before any
# runs, a run that holds one of them says what will be fetched, from where and to where.
# Under xdist each worker collects every test, so only the first says it, on its stderr,
# which is the run's; in one process the terminal's reporter writes it.


def pytest_collection_finish(session):
    worker = getattr(session.config, "workerinput", {}).get("workerid")
    if worker not in (None, "gw0"):
        return
    if not any(item.get_closest_marker("real_server") for item in session.items):
        return
    from tests.real_server import models_to_fetch

    line = models_to_fetch()
    if line and worker:
        os.write(2, f"{line}\n".encode())
    elif line:
        session.config.pluginmanager.get_plugin("terminalreporter").write_line(line)


# --- the suite's temporary files in memory -------------------------------------------------------
# The suite makes and removes some 20,000 temporary files (each test's tmp_path, each
# verdict's fresh copy, the memo), and on a virtual machine's disk each costs CPU: 5,000
# empty files took 2.9 s of CPU in /tmp on the build machine, 0.06 s in /dev/shm. So where
# /dev/shm can be written and run from, with a gigabyte free (a container's is often 64 MB
# and noexec, and tests run programs they write into tmp_path), and TMPDIR is not set, the
# controller makes one folder there before its workers start: TMPDIR for every process the
# suite starts (the sandbox's own /tmp stays its own), and pytest's tmp_path folders beneath
# it (`pytest`, unless --basetemp says where). It is removed when the run ends, so a failed
# test's tmp_path is gone too: `--basetemp=FOLDER` keeps them. subtle: the names are short:
# a few tests quote a tmp_path whole in a line cut at 300 characters, and allow for the
# length of /tmp/pytest-of-root/pytest-NNN.
MEMORY, ROOM = "/dev/shm", 2**30


def temporary_files_in_memory(config):
    if os.environ.get("TMPDIR") or not os.access(MEMORY, os.W_OK | os.X_OK):
        return
    room = os.statvfs(MEMORY)
    if room.f_flag & os.ST_NOEXEC or room.f_bavail * room.f_frsize < ROOM:
        return
    folder = tempfile.mkdtemp(prefix="lab", dir=MEMORY)
    os.chmod(folder, 0o755)  # passable, as /tmp is, to the tests run as their own user
    os.environ["TMPDIR"], tempfile.tempdir = folder, folder
    if config.option.basetemp is None:
        config.option.basetemp = os.path.join(folder, "pytest")
    config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))
    config.add_cleanup(lambda: os.environ.pop("TMPDIR", None))
    config.add_cleanup(lambda: setattr(tempfile, "tempdir", None))


# --- the test modules' assertions rewritten once, not by each worker ------------------------------
# pytest rewrites each test module's asserts as it imports it, and keeps the result in a
# `__pycache__/` only where bytecode may be written; lab.py forbids that (.venv/ must stay as
# installed), so each of the four workers rewrote every test module again: about 2.5 s of
# CPU each, at the run's start, when all four collect at once. So the controller rewrites
# them once, before its workers start, into a folder of the session (LAB_SUITE_REWRITTEN,
# removed when the run ends), and each worker reads them from there. pytest checks each one
# against its source (modification time and size) and rewrites itself whatever is missing
# or stale. subtle: pytest names no public way to do this: the names used here are its
# own (_pytest/assertion/rewrite.py, pytest<9.2 in the locks); where one is missing, each
# worker rewrites as before. Like the run memo, the folder is trusted: only the lab's
# own code runs outside bubblewrap in the suite. A worker never reads a `__pycache__/`
# beside a test module, where a run outside bubblewrap could have planted one.
REWRITTEN = "LAB_SUITE_REWRITTEN"
# what the controller writes with and each worker reads through: all, or none is used
NEEDED = ("_rewrite_test", "_write_pyc", "assertstate_key", "PYC_TAIL", "get_cache_dir")


def rewritten_folder(folder, source):
    """Where the rewritten form of the test module `source` lives under `folder`."""
    return Path(folder, *source.parent.parts[1:])


def rewrite_test_modules_once(config):
    try:
        from _pytest.assertion import rewrite
    except ImportError:
        return
    if not getattr(config.option, "numprocesses", None) or os.environ.get(REWRITTEN) is not None:
        return  # no workers (or the run that started this one keeps its own)
    if config.getoption("assertmode") != "rewrite" or not all(hasattr(rewrite, n) for n in NEEDED):
        return
    folder = tempfile.mkdtemp(prefix="agent-lab-rewritten-")
    os.environ[REWRITTEN] = folder
    config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))
    config.add_cleanup(lambda: os.environ.pop(REWRITTEN, None))
    state = config.stash[rewrite.assertstate_key]
    for path in modules_to_rewrite(config):
        try:
            stat, code = rewrite._rewrite_test(path, config)
        except (OSError, SyntaxError, ValueError):
            continue  # the worker that imports it says what is wrong
        rewritten = rewritten_folder(folder, path) / (path.stem + rewrite.PYC_TAIL)
        rewritten.parent.mkdir(parents=True, exist_ok=True)
        rewrite._write_pyc(state, code, stat, rewritten)


def modules_to_rewrite(config):
    """The files pytest will rewrite as test modules under the run's paths."""
    patterns, pruned = config.getini("python_files"), config.getini("norecursedirs")
    for given in config.args:
        start = Path(config.invocation_params.dir, given.split("::")[0]).resolve()
        places = [(str(start.parent), [], [start.name])] if start.is_file() else os.walk(start)
        for folder, folders, files in places:
            folders[:] = sorted(
                f for f in folders if not any(fnmatch.fnmatch(f, p) for p in pruned)
            )
            for name in sorted(files):
                if any(fnmatch.fnmatch(name, pattern) for pattern in patterns):
                    yield Path(folder, name)


def read_rewritten_test_modules(config):
    folder = os.environ.get(REWRITTEN)
    if not folder:
        return  # set only where the controller found every name of NEEDED
    from _pytest.assertion import rewrite

    # the folder pytest reads a rewritten module from, and would write it into
    rewrite.get_cache_dir = lambda source: rewritten_folder(folder, source)


@pytest.fixture
def fresh_runs(monkeypatch):
    """Every sandboxed run of this test, and of the programs it starts, is a new process
    (tests/run_memo.py)."""
    monkeypatch.setenv(run_memo.SETTING, "")


class Skips:
    """Collects every skip (collection skips included), says each reason at the end, and
    with `fail` turns a run that skipped anything into a failed one."""

    def __init__(self, fail):
        self.fail = fail
        self.skipped = []  # (test id, reason)

    def pytest_runtest_logreport(self, report):
        # subtle: an expected failure (xfail) is also reported as skipped; it is not a skip.
        if report.skipped and not hasattr(report, "wasxfail"):
            self.skipped.append((report.nodeid, skipped_reason(report)))

    def pytest_collectreport(self, report):
        if report.skipped:
            self.skipped.append((report.nodeid, skipped_reason(report)))

    def pytest_sessionfinish(self, session):
        if self.fail and self.skipped and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter):
        if not self.skipped:
            return
        reasons = {}
        for nodeid, reason in self.skipped:
            reasons.setdefault(reason, []).append(nodeid)
        if self.fail:
            title = f"CI=true: {len(self.skipped)} skipped test(s) fail this run"
        else:
            title = f"{len(self.skipped)} test(s) skipped: what they need is not on this machine"
        terminalreporter.section(title, red=self.fail, bold=True, yellow=not self.fail)
        for reason, nodeids in reasons.items():
            terminalreporter.line(f"{len(nodeids)} skipped: {reason}", red=self.fail)
            for nodeid in nodeids:
                terminalreporter.line(f"    {nodeid}")


# --- tests that share one costly run stay on one worker -----------------------------------------
# A module fixture is made once per xdist worker, so the tests that share one (a live
# attempt, a replay whose output several tests read) carry the same xdist_group mark, and
# `lab.py test` runs `--dist loadgroup`, which puts them on one worker by writing the group
# into their node ids. Where that silently stops working (pytest 9.2 with pytest-xdist 3.8:
# pytest-dev/pytest-xdist#1386), each worker would make the shared run again: refused.


# --- the longest units of work first, the waiting ones spread out -------------------------------
# `--dist loadgroup` hands out work in collection order, a test or a group at a time, so the
# workers move through the files side by side. A group that keeps one worker busy for half
# a minute must start first, or it is the run's tail. And tests that mostly wait (for a
# deadline, a stand-in's pause: marked `waits`) are spread evenly over the first four
# fifths of the run, between files, or every worker would wait at once while the cores
# stood idle; the last fifth is left to work that keeps a core busy, which the workers
# share to the end (a 4 s wait last was the run's tail).
FIRST = ("real-server-live-attempt", "browser")


def group_of(item):
    marker = item.get_closest_marker("xdist_group")
    return (marker.args or [marker.kwargs.get("name")])[0] if marker else None


def pytest_collection_modifyitems(config, items):
    first = [i for i in items if group_of(i) in FIRST]
    first.sort(key=lambda item: FIRST.index(group_of(item)))
    waiting = [i for i in items if i.get_closest_marker("waits") and group_of(i) not in FIRST]
    chosen = {id(i) for i in first + waiting}
    rest = [i for i in items if id(i) not in chosen]
    # subtle: only between two files, never inside one: a worker that left a file and came
    # back would make that file's module fixtures a second time
    ends = [n for n in range(1, len(rest)) if rest[n].path != rest[n - 1].path] + [len(rest)]
    spread, placed = [], 0
    for number, item in enumerate(rest, 1):
        spread.append(item)
        if number not in ends:
            continue
        share = min(len(waiting), (ends.index(number) + 1) * len(waiting) * 5 // (4 * len(ends)))
        spread += waiting[placed:share]
        placed = share
    items[:] = first + spread + waiting[placed:]


def pytest_runtest_setup(item):
    if not getattr(item.config.option, "loadgroup", False):
        return  # not a --dist loadgroup worker
    if item.get_closest_marker("xdist_group") and "@" not in item.nodeid:
        pytest.fail(
            "--dist loadgroup did not group this test: this pytest-xdist cannot mark this "
            "pytest's node ids (pytest-dev/pytest-xdist#1386); use the versions in the locks",
            pytrace=False,
        )


# --- short test ids for long parameters -------------------------------------------------------
# pytest names a parametrized test after its values, and puts that name in the environment
# of the test (PYTEST_CURRENT_TEST): a hostile input of 300,000 characters then makes every
# program the test starts fail with "Argument list too long". Past IDS_LONG characters, the
# id is the value's start and its length.
IDS_LONG = 60


def pytest_make_parametrize_id(config, val, argname):
    if isinstance(val, (str, bytes)) and len(val) > IDS_LONG:
        start = val[:24] if isinstance(val, bytes) else val[:24].encode("unicode_escape")
        return f"{start.decode('ascii', 'backslashreplace')}...({len(val):,} long)"
    return None


@pytest.fixture
def repo(tmp_path):
    """A fresh copy of sample_repo/ (the faulty repository) under the test's tmp_path."""
    from plumbing.sample import copy_sample

    return copy_sample(tmp_path)
