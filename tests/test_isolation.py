"""Every test run is isolated (plumbing/isolation.py): bubblewrap, else `unshare --net`,
else none, said at the start; `--no-isolate` turns it off.

Extra tests planted in a copy of the sample try to reach the network, a Unix socket and a
file outside the copy: they fail under bubblewrap and succeed without it. With only the
network cut, or nothing, the run says so in its first line and records it; where nothing
isolates, replay runs only the lab's own recordings (recordings/SHA256SUMS). What the
edited code can do as root is tests/test_sandbox_as_root.py's; the verdict's own
isolation, attack by attack, tests/test_verdict.py's.
"""

import io
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from harness.chats import RecordingChat
from harness.recording import RECORDINGS, load
from harness.replayable import shipped
from plumbing import isolation
from plumbing.pytest_run import run_pytest
from record_run import record_attempt
from replay import REPRODUCED, replay_one
from repo_tools import RepoTools
from tests.helpers import lab_copy, needs_bubblewrap
from tests.in_process import run_cli
from tests.ollama_test_server import chunk
from tests.scripted_model import ScriptedChat

HERE = Path(__file__).resolve().parent.parent


# --- isolated test runs ---------------------------------------------------------------------------


@pytest.fixture
def escape_attempts(repo, tmp_path):
    """A copy whose extra tests try to reach a local server and to write outside the copy."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    outside = tmp_path / "outside.txt"
    (repo / "tests" / "test_escape.py").write_text(
        "import socket, pathlib\n"
        "def test_network():\n"
        f"    socket.create_connection(('127.0.0.1', {listener.getsockname()[1]}), timeout=2)\n"
        "def test_write_outside():\n"
        f"    pathlib.Path({str(outside)!r}).write_text('escaped')\n"
    )
    yield repo, outside
    listener.close()


def test_without_isolation_tests_reach_the_network_and_write_outside(escape_attempts):
    repo, outside = escape_attempts
    output = run_pytest(repo, isolate=False)["output"]
    assert "1 failed, 5 passed" in output  # only the sample's own failure
    assert outside.read_text() == "escaped"


def test_by_default_network_and_outside_writes_fail(escape_attempts):
    needs_bubblewrap()
    repo, outside = escape_attempts
    result = RepoTools(repo).invoke("run_tests", {})
    assert "FAILED tests/test_escape.py::test_network" in result["output"]
    # The write lands in the sandbox's own empty /tmp (or fails): either way, not here.
    assert not outside.exists()
    assert result["passed"] >= 3  # the sample's passing tests still run
    assert result["verdict"] == "failed"


@pytest.fixture
def unix_sockets(tmp_path):
    """Two listening Unix sockets of "another program": one under /tmp, one in the home
    folder, where D-Bus or Docker would keep theirs."""
    folders = [tmp_path, Path(tempfile.mkdtemp(prefix=".agent-lab-socket-", dir=Path.home()))]
    listeners = []
    for folder in folders:
        listener = socket.socket(socket.AF_UNIX)
        listener.bind(str(folder / "s"))
        listener.listen()
        listeners.append(listener)
    yield [folder / "s" for folder in folders]
    for listener in listeners:
        listener.close()
    shutil.rmtree(folders[1])


def test_by_default_tests_cannot_reach_unix_sockets(repo, unix_sockets):
    # subtle: a new network namespace does not stop connect() on a socket file; only a
    # file system without the file does (see isolation.bwrap_mounts).
    needs_bubblewrap()
    (repo / "tests" / "test_sockets.py").write_text(
        "import socket\n"
        + "".join(
            f"def test_socket_{n}():\n    socket.socket(socket.AF_UNIX).connect({str(path)!r})\n"
            for n, path in enumerate(unix_sockets)
        )
    )
    output = RepoTools(repo).invoke("run_tests", {})["output"]
    assert "FAILED tests/test_sockets.py::test_socket_0" in output
    assert "FAILED tests/test_sockets.py::test_socket_1" in output
    unisolated = run_pytest(repo, isolate=False)["output"]
    assert "test_socket_" not in unisolated  # the same tests reach both without isolation


def replay_cli(*args, path=None, script="replay.py"):
    """replay.py (or `script`), run in-process (tests/in_process.py); with `path`, as from
    a shell whose PATH is that folder alone, so it isolates with what that folder offers.

    subtle: isolation_kind() is found once a process; here it is found again under the
    replay's PATH, and again after it under the test's own."""
    if path is None:
        return run_cli(script, *args)
    isolation.isolation_kind.cache_clear()
    try:
        return run_cli(script, *args, env={**os.environ, "PATH": str(path)})
    finally:
        isolation.isolation_kind.cache_clear()


def test_network_only_isolation_cuts_the_network_but_not_writes(escape_attempts, tmp_path):
    unshare = shutil.which("unshare")
    if not unshare or subprocess.run([unshare, "--net", "true"]).returncode != 0:
        pytest.skip("`unshare --net` does not work here (needs root or user namespaces)")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "unshare").symlink_to(unshare)  # unshare on the PATH, bwrap not
    if shutil.which("setpriv"):  # as root, it runs the tests as a user of their own
        (tmp_path / "bin" / "setpriv").symlink_to(shutil.which("setpriv"))
    repo, outside = escape_attempts
    finished = replay_cli(RECORDINGS / "bounded-max-turns-1.json", path=tmp_path / "bin")
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert finished.stdout.splitlines()[0] == (
        "tests run with only the network cut, as a user of their own (the edited code can "
        "read what you can, write only what anyone may): install bubblewrap to isolate them"
        if os.geteuid() == 0
        else "tests run with only the network cut (the edited code can read and write what "
        "you can): install bubblewrap to isolate them"
    )
    # refused as where nothing isolates
    refused_from_elsewhere(tmp_path, tmp_path / "bin", "only the network would be cut")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH", str(tmp_path / "bin"))
        isolation.isolation_kind.cache_clear()
        try:
            assert isolation.isolation_kind() == isolation.NETWORK_ONLY
            output = RepoTools(repo).invoke("run_tests", {})["output"]
        finally:
            isolation.isolation_kind.cache_clear()
    assert "FAILED tests/test_escape.py::test_network" in output
    # network-only: writes still get out, where you may write; as root, where the run's
    # own user may
    # (this test's folder is root's: tests/test_sandbox_as_root.py has the rest)
    assert outside.exists() == (os.geteuid() != 0)


def test_a_bubblewrap_before_0_8_is_said_at_the_start(monkeypatch, tmp_path):
    # a bubblewrap whose --help lacks --disable-userns (before 0.8.0) isolates all the
    # same, but cannot keep the edited code from making user namespaces: said, not silent
    real = shutil.which("bwrap")
    if not real or isolation.isolation_kind() != isolation.BUBBLEWRAP:
        pytest.skip("bubblewrap does not work here (apt-get install bubblewrap)")
    older = tmp_path / "bwrap"
    older.write_text(
        "#!/bin/sh\n"
        f'[ "$1" = --help ] && {{ {real} --help 2>&1 | grep -v -- --disable-userns; exit 0; }}\n'
        f'exec {real} "$@"\n'
    )
    older.chmod(0o755)
    assert isolation.notice(True) is None  # this machine's own says nothing
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    isolation.isolation_kind.cache_clear()
    isolation._bwrap_help.cache_clear()
    try:
        assert isolation.isolation_kind() == isolation.BUBBLEWRAP
        assert isolation.notice(True) == (
            "tests run under a bubblewrap older than 0.8.0, which cannot keep the edited code "
            "from making user namespaces: install bubblewrap 0.8.0 or later to forbid them"
        )
    finally:
        isolation.isolation_kind.cache_clear()
        isolation._bwrap_help.cache_clear()


@pytest.fixture(scope="module")
def replayed_where_nothing_isolates(tmp_path_factory):
    """replay.py of a shipped recording with neither bwrap nor unshare on the PATH: one run,
    read by the two tests that carry SHARES_THE_REPLAY_WHERE_NOTHING_ISOLATES."""
    empty = tmp_path_factory.mktemp("no-programs")
    return replay_cli(RECORDINGS / "bounded-max-turns-1.json", path=empty)


SHARES_THE_REPLAY_WHERE_NOTHING_ISOLATES = pytest.mark.xdist_group("replay-where-nothing-isolates")


@SHARES_THE_REPLAY_WHERE_NOTHING_ISOLATES
def test_where_no_isolation_works_the_run_says_so_and_records_none(
    monkeypatch, tmp_path, replayed_where_nothing_isolates
):
    finished = replayed_where_nothing_isolates
    assert finished.returncode == 0, finished.stdout + finished.stderr
    first = finished.stdout.splitlines()[0]
    assert first == "tests run unisolated: install bubblewrap to isolate them"
    monkeypatch.setenv("PATH", str(tmp_path))  # neither bwrap nor unshare can be found
    isolation.isolation_kind.cache_clear()
    try:
        assert isolation.isolation_kind() == isolation.NONE
        output = tmp_path / "none.json"
        script = [[chunk("Nothing to do.", done=True)]]
        out = io.StringIO()
        record_attempt(RecordingChat(ScriptedChat(script)), {"name": "s"}, output, 2, out=out)
        assert load(output)["isolation"] == isolation.NONE
    finally:
        isolation.isolation_kind.cache_clear()


def test_as_root_where_nothing_isolates_a_live_run_is_refused_unless_no_isolate_is_said(
    tmp_path, unused_port
):
    # the model's edits would run as root: refused in one line, before any model is asked;
    # said out loud with --no-isolate, the run goes on (here to a server that is not there)
    if os.geteuid() != 0:
        pytest.skip("run as root: elsewhere the edited code runs with your own permissions")
    host, output = f"http://127.0.0.1:{unused_port}", tmp_path / "run.json"
    args = ("--host", host, "--output", output)
    refused = replay_cli(*args, path=tmp_path, script="record_run.py")  # no bwrap, no unshare
    assert (refused.returncode, refused.stdout) == (2, ""), refused.stdout + refused.stderr
    assert refused.stderr == (
        "error: nothing isolates the tests here (neither bubblewrap nor unshare works) and you "
        "are root, so the edited code would run as root: install bubblewrap (apt-get install "
        "bubblewrap), or add --no-isolate to run it as root all the same\n"
    )
    said = replay_cli("--no-isolate", *args, path=tmp_path, script="record_run.py")
    assert said.stdout.startswith("tests run unisolated (--no-isolate)"), said.stdout
    assert "nothing isolates" not in said.stderr and str(unused_port) in said.stderr


def test_a_bwrap_that_cannot_be_started_is_not_taken_for_isolation(monkeypatch, tmp_path):
    # found on the PATH is not enough: it must run the interpreter (here its exec fails)
    bwrap = tmp_path / "bwrap"
    bwrap.write_text("#!/no/such/interpreter\n")
    bwrap.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    isolation.isolation_kind.cache_clear()
    try:
        assert isolation.isolation_kind() == isolation.NONE
    finally:
        isolation.isolation_kind.cache_clear()


def test_an_installation_folder_that_does_not_exist_is_not_bound_into_the_sandbox(
    monkeypatch, tmp_path
):
    # bwrap refuses to start when a folder it is to bind is missing, and the lab would then
    # fall back to no isolation: a prefix of a moved or removed installation is left out.
    gone = str(tmp_path / "moved-away")
    monkeypatch.setattr(sys, "base_prefix", gone)
    folders = isolation._python_folders()
    assert gone not in folders
    assert os.path.realpath(sys.prefix) in folders  # the ones that exist are still bound


def test_no_isolate_is_said_in_one_line_and_isolate_is_still_accepted():
    finished = replay_cli("--no-isolate", RECORDINGS / "bounded-max-turns-1.json")
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert finished.stdout.splitlines()[0].startswith("tests run unisolated (--no-isolate)")
    finished = replay_cli("--isolate", RECORDINGS / "bounded-max-turns-1.json")
    assert finished.returncode == 0, finished.stdout + finished.stderr
    refused = replay_cli("--isolate", "--no-isolate")
    assert refused.returncode == 2 and "not allowed with" in refused.stderr


def test_replay_isolated_by_default_reproduces():
    needs_bubblewrap()
    out = io.StringIO()
    assert replay_one(RECORDINGS / "repair.json", out=out) == REPRODUCED
    assert "tests run" not in out.getvalue()  # under bubblewrap there is nothing to warn of


# --- where nothing isolates, replay runs only the lab's own recordings ----------------------------


def refused_from_elsewhere(tmp_path, path, here):
    """A recording that is not one of the lab's own, refused by replay in its one line
    (with `path` its PATH, see replay_cli)."""
    foreign = tmp_path / "from-elsewhere.json"
    foreign.write_bytes((RECORDINGS / "bounded-max-turns-1.json").read_bytes()[:-1] + b" \n")
    refused = replay_cli(foreign, path=path)
    assert refused.returncode == 2
    assert refused.stderr == (
        f"error: {foreign}: replaying a recording runs the code it holds, and {here} here; "
        "install bubblewrap (apt-get install bubblewrap), or add --no-isolate if you trust "
        "where it came from\n"
    )
    return foreign


@SHARES_THE_REPLAY_WHERE_NOTHING_ISOLATES
def test_where_nothing_isolates_replay_runs_only_the_labs_own_recordings(
    tmp_path, replayed_where_nothing_isolates
):
    # a recording from elsewhere holds code; with no isolation it would run with your
    # permissions, so it needs --no-isolate said out loud (issue 23: a shared recording once
    # planted a .pth file this way)
    # with tmp_path as the PATH, neither bwrap nor unshare can be found
    foreign = refused_from_elsewhere(tmp_path, tmp_path, "no isolation works")
    assert replayed_where_nothing_isolates.returncode == 0  # a shipped one runs
    assert replay_cli("--no-isolate", foreign, path=tmp_path).returncode == 0


def test_the_list_of_shipped_recordings_is_every_shipped_recording_as_it_is():
    from harness.recording import SHIPPED, sha256_file

    listed = dict(reversed(line.split()) for line in SHIPPED.read_text().splitlines())
    here = {p.relative_to(RECORDINGS).as_posix(): p for p in RECORDINGS.rglob("*.json")}
    assert sorted(listed) == sorted(here)
    assert all(listed[name] == sha256_file(path) for name, path in here.items())


def test_only_a_readable_copy_of_a_shipped_recording_counts_as_shipped(tmp_path):
    # replay.py trusts a shipped recording where nothing isolates the tests it runs; a path
    # it cannot read (gone, a folder) is never one, whatever recordings/SHA256SUMS lists
    mine = tmp_path / "mine.json"
    mine.write_bytes((RECORDINGS / "repair.json").read_bytes())
    assert shipped(mine) is True
    assert shipped(tmp_path / "gone.json") is False
    assert shipped(tmp_path) is False


def test_sha256sums_is_what_write_shipped_hashes_writes_for_the_shipped_recordings(tmp_path):
    # make_recordings.py rewrites recordings/SHA256SUMS with write_shipped_hashes(); without
    # the file no recording is shipped (an empty set, not an error), and the file it writes
    # is the lab's own, line for line
    lab = lab_copy(tmp_path, "recordings")
    (lab / "recordings" / "SHA256SUMS").unlink()
    script = (
        "from harness.recording import shipped_hashes, write_shipped_hashes\n"
        "print(shipped_hashes() == set())\n"
        "write_shipped_hashes()\n"
        "print(len(shipped_hashes()))\n"
    )
    finished = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=lab
    )
    assert finished.returncode == 0, finished.stderr
    shipped_now = sorted(RECORDINGS.rglob("*.json"))
    assert finished.stdout.split() == ["True", str(len(shipped_now))]
    written = (lab / "recordings" / "SHA256SUMS").read_text()
    assert written == (RECORDINGS / "SHA256SUMS").read_text()
