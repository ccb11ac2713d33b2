"""Offline tests of what the harness survives: malformed chunks, deadlines, Ctrl-C anywhere,
hostile edits, isolated test runs, and files that are damaged or too big.
"""

import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from agent_loop import DEADLINE, MODEL_DONE, MODEL_ERROR, TASK, TOOL_START, agent_events
from plumbing import isolation
from plumbing.child_process import tail
from plumbing.pytest_run import run_pytest
from plumbing.recording import RECORDINGS, RecordingChat, load, save
from record_run import record_attempt
from replay import REPRODUCED, replay_one
from repo_tools import READ_LIMIT, RepoTools
from tests.helpers import needs_bubblewrap, processes_under, start_cli, wait_for
from tests.in_process import run_cli
from tests.ollama_test_server import OllamaTestServer, call, chunk, reply
from tests.scripted_model import ScriptedChat

HERE = Path(__file__).resolve().parent.parent
HOSTILE_OLD = '"""Path rules for a small CI helper'
HOSTILE_NEW = (
    "import subprocess, sys, time\n"
    "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
    "time.sleep(60)\n" + HOSTILE_OLD
)


def run(script, repo, **options):
    chat = ScriptedChat(script)
    return chat, list(agent_events(chat, RepoTools(repo), TASK, **options))


# --- malformed chunks -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad, named",
    [
        ("not a chunk", "expected an object, got str"),
        (None, "expected an object, got NoneType"),
        ({"message": ["content"]}, "'message' is not an object"),
        ({"message": ""}, "'message' is not an object"),  # empty, yet not "no message"
        ({"message": []}, "'message' is not an object"),
        ({"message": {"content": 42}}, "message 'content' is not text"),
        ({"message": {"thinking": {"a": 1}}}, "message 'thinking' is not text"),
        ({"message": {"content": 0}}, "message 'content' is not text"),  # falsy, not absent
        ({"message": {"thinking": []}}, "message 'thinking' is not text"),
        ({"message": {"tool_calls": {"function": {}}}}, "'tool_calls' is not a list"),
        ({"message": {"tool_calls": ["read_file"]}}, "not an object with a 'function'"),
        ({"message": {"tool_calls": [{"name": "run_tests"}]}}, "not an object with a 'function'"),
    ],
)
def test_malformed_chunk_is_a_model_error_naming_it_and_runs_no_tool(repo, bad, named):
    script = [[chunk(tool_calls=[call("run_tests")]), bad, chunk(done=True)]]
    chat, events = run(script, repo)
    assert events[-1]["reason"] == MODEL_ERROR
    assert named in events[-1]["error"]
    assert [e for e in events if e["type"] == TOOL_START] == []


def test_a_chunk_without_a_message_adds_nothing_and_can_end_the_turn(repo):
    # A done chunk need not carry a message: the turn is the text that came before it.
    chat, events = run([[chunk("Done."), {"done": True}]], repo)
    assert events[-1]["reason"] == "assistant_finished"
    done = [e for e in events if e["type"] == MODEL_DONE]
    assert done[0]["message"] == {"role": "assistant", "content": "Done."}


@pytest.mark.parametrize("arguments", [None, 7, 2.5, True, ["a"], "", "[1]", "{bad"])
def test_arguments_of_any_type_become_an_error_result(repo, arguments):
    script = [
        [
            chunk(
                tool_calls=[{"function": {"name": "read_file", "arguments": arguments}}], done=True
            )
        ],
        [chunk("ok", done=True)],
    ]
    chat, events = run(script, repo)
    assert events[-1]["reason"] == "assistant_finished"
    assert "error" in json.loads(chat.requests[1][-1]["content"])


def test_a_call_with_a_non_text_name_is_an_error_result(repo):
    script = [
        [chunk(tool_calls=[{"function": {"name": ["run_tests"], "arguments": {}}}], done=True)],
        [chunk("ok", done=True)],
    ]
    chat, _ = run(script, repo)
    assert "unknown tool" in json.loads(chat.requests[1][-1]["content"])["error"]


# --- deadline ---------------------------------------------------------------------------------


class Clock:
    """A clock that advances one second each time it is read."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        self.now += 1.0
        return self.now


def test_deadline_is_checked_before_each_request(repo):
    reads = [[chunk(tool_calls=[call("read_file", path="path_rules.py")], done=True)]] * 20
    chat = ScriptedChat(reads)
    events = list(
        agent_events(chat, RepoTools(repo), TASK, max_turns=20, deadline=12, clock=Clock())
    )
    assert events[-1]["reason"] == DEADLINE
    assert 1 <= len(chat.requests) < 20
    assert sum(e["type"] == MODEL_DONE for e in events) == len(chat.requests)


def test_recorder_deadline_keeps_everything_and_replays(tmp_path):
    output = tmp_path / "deadline.json"
    read = reply(chunk(tool_calls=[call("read_file", path="path_rules.py")]), chunk(done=True))
    slow = reply(chunk("Let me"), chunk(" think"), chunk(" more", done=True), pause_after_first=1)
    with OllamaTestServer([read, slow]) as server:
        options = ["--host", server.host, "--deadline", 0.5, "--output", output]
        finished = run_cli("record_run.py", *options)
    assert finished.returncode == 1, finished.stdout + finished.stderr
    recording = load(output)
    assert recording["stop"]["reason"] == DEADLINE
    assert recording["model_calls"][1]["ended"] == "closed"
    assert recording["final_tests"]["exit_code"] == 1
    outcome = replay_one(output, out=open(os.devnull, "w"))
    assert outcome == REPRODUCED


# --- Ctrl-C anywhere, and nothing left running -------------------------------------------------


def sleeper_under(directory):
    """True once the hostile edit's sleeping grandchild runs in `directory`: the tests are
    under way (HOSTILE_NEW starts it when pytest imports the module)."""
    for pid in processes_under(directory):
        try:
            if b"time.sleep(60)" in Path(f"/proc/{pid}/cmdline").read_bytes():
                return True
        except OSError:
            continue
    return False


def interrupted_during_tests(args, tmp_path):
    """(exit code, stderr, stdout lines) of a CLI sent SIGINT once the tests `run_tests`
    started run."""
    process, lines = start_cli(args, tmp_path)
    try:
        assert wait_for(lambda: any("run_tests {}" in line for line in lines), seconds=30)
        assert wait_for(lambda: sleeper_under(tmp_path), seconds=30)
        process.send_signal(signal.SIGINT)
        return process.wait(timeout=30), process.stderr.read(), lines
    finally:
        process.kill()


def test_ctrl_c_during_a_test_run_kills_it_and_saves_interrupted(tmp_path, fresh_runs):
    output = tmp_path / "out" / "interrupted.json"
    hostile = reply(
        chunk(tool_calls=[call("replace_text", old=HOSTILE_OLD, new=HOSTILE_NEW)]),
        chunk(tool_calls=[call("run_tests", index=1)], done=True),
    )
    with OllamaTestServer([hostile]) as server:
        args = [HERE / "record_run.py", "--host", server.host, "--output", output]
        code, err, lines = interrupted_during_tests(args, tmp_path)
    assert code == 130
    assert "Traceback" not in err
    assert processes_under(tmp_path) == []  # pytest and its sleeping grandchild are gone
    recording = load(output)
    assert recording["stop"]["reason"] == "interrupted" and recording["final_tests"] is None
    assert recording["events"][-1]["type"] == TOOL_START  # the run that was interrupted
    # the timeline counts the starting tests alone: the final ones never ran
    assert wait_for(lambda: "interrupted: the final tests were not run\n" in lines, seconds=10)
    starting = recording["starting_tests"]["seconds"]
    assert f"        independent tests {starting:.2f}s\n" in lines, lines


def test_ctrl_c_during_a_replayed_test_run_exits_130_and_leaves_nothing(tmp_path, fresh_runs):
    recording = load(RECORDINGS / "repair.json")
    for c in recording["model_calls"][2]["chunks"]:
        for tool_call in c["message"].get("tool_calls", []):
            tool_call["function"]["arguments"] = {"old": HOSTILE_OLD, "new": HOSTILE_NEW}
    save(tmp_path / "hostile.json", recording)
    code, err, _ = interrupted_during_tests(
        [HERE / "replay.py", tmp_path / "hostile.json"], tmp_path
    )
    assert code == 130
    assert "Traceback" not in err
    assert processes_under(tmp_path) == []


def test_a_cli_started_with_ctrl_c_ignored_keeps_ignoring_it(tmp_path, fresh_runs):
    # A shell starts a background job with SIGINT ignored: the CLI must not take Ctrl-C back.
    process = subprocess.Popen(
        [sys.executable, str(HERE / "replay.py"), RECORDINGS / "bounded-max-turns-1.json"],
        cwd=HERE,
        env={**os.environ, "TMPDIR": str(tmp_path)},
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # Ctrl-C once its tests run in its temporary copy: well past the point where the CLI
        # hands Ctrl-C back to Python (quiet_interrupt.ready), and still replaying
        assert wait_for(lambda: processes_under(tmp_path), seconds=60), "no test run started"
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode == 0, err
    assert "Replayed 1 recording(s): 1 reproduced" in out


# --- isolated test runs ------------------------------------------------------------------------


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


def replay_cli(*args, path=None):
    """replay.py, run in-process (tests/in_process.py); with `path`, as from a shell whose
    PATH is that folder alone, so it isolates with what that folder offers.

    subtle: isolation_kind() is found once a process; here it is found again under the
    replay's PATH, and again after it under the test's own."""
    if path is None:
        return run_cli("replay.py", *args)
    isolation.isolation_kind.cache_clear()
    try:
        return run_cli("replay.py", *args, env={**os.environ, "PATH": str(path)})
    finally:
        isolation.isolation_kind.cache_clear()


def test_network_only_isolation_cuts_the_network_but_not_writes(escape_attempts, tmp_path):
    unshare = shutil.which("unshare")
    if not unshare or subprocess.run([unshare, "--net", "true"]).returncode != 0:
        pytest.skip("`unshare --net` does not work here (needs root or user namespaces)")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "unshare").symlink_to(unshare)  # unshare on the PATH, bwrap not
    if shutil.which("setpriv"):  # as root, it runs the tests as nobody
        (tmp_path / "bin" / "setpriv").symlink_to(shutil.which("setpriv"))
    repo, outside = escape_attempts
    finished = replay_cli(RECORDINGS / "bounded-max-turns-1.json", path=tmp_path / "bin")
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert finished.stdout.splitlines()[0] == (
        "tests run with only the network cut, as nobody (the edited code can read what you "
        "can and write only what anyone may): install bubblewrap to isolate them"
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
    # network-only: writes still get out, where you may write; as root, where nobody may
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


# --- files and data ----------------------------------------------------------------------------


def test_a_crash_mid_save_leaves_the_old_recording_intact(tmp_path):
    path = tmp_path / "keep.json"
    save(path, {"format": "old"})
    with pytest.raises(TypeError):
        save(path, {"format": "new", "broken": object()})  # json.dump fails halfway
    assert json.loads(path.read_text()) == {"format": "old"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.json"]  # no temp file left


def test_recordings_hold_no_environment_values():
    secrets = [v for k, v in os.environ.items() if len(v) > 8 and k not in ("PWD", "HOME")]
    for path in RECORDINGS.glob("*.json"):
        text = path.read_text()
        assert not [v for v in secrets if v in text and v not in str(HERE)], path.name


def test_read_file_of_a_huge_file_is_bounded(repo):
    (repo / "path_rules.py").write_text("x = 1\n" * 100_000)
    result = RepoTools(repo).invoke("read_file", {"path": "path_rules.py"})
    assert len(result["text"]) < READ_LIMIT + 100
    assert "cut: the file has 600000 bytes" in result["text"]  # read up to its limit only


# The sizes the README promises, pinned by their values: a test through the constant would
# pass whatever the constant became.


def test_read_file_returns_20000_characters_whole_and_cuts_one_more(repo):
    (repo / "path_rules.py").write_text("x" * 20_000)
    whole = RepoTools(repo).invoke("read_file", {"path": "path_rules.py"})["text"]
    assert whole == "x" * 20_000
    (repo / "path_rules.py").write_text("x" * 20_001)
    cut = RepoTools(repo).invoke("read_file", {"path": "path_rules.py"})["text"]
    assert cut == "x" * 20_000 + "\n[... cut: the file has 20001 characters]"


def test_test_output_keeps_its_last_4000_characters():
    assert tail("x" * 4_000) == "x" * 4_000
    assert tail("y" + "x" * 4_000) == "[... 1 earlier characters cut]\n" + "x" * 4_000


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
    from plumbing.recording import SHIPPED, sha256_file

    listed = dict(reversed(line.split()) for line in SHIPPED.read_text().splitlines())
    here = {p.relative_to(RECORDINGS).as_posix(): p for p in RECORDINGS.rglob("*.json")}
    assert sorted(listed) == sorted(here)
    assert all(listed[name] == sha256_file(path) for name, path in here.items())


def test_a_child_that_closes_its_output_and_then_ends_gives_its_exit_code():
    # mutation: `max(time left, 0.01)` -> `min` waited 10 ms for the exit once the output
    # ended, and called a run that took longer to exit a timeout
    from plumbing.child_process import run_bounded

    command = [sys.executable, "-c", "import os, time; os.close(1); os.close(2); time.sleep(0.3)"]
    assert run_bounded(command, cwd=HERE, timeout=30) == (0, "")


def test_a_chunk_without_text_or_thinking_gives_empty_text_for_both():
    # mutation: `thinking or ""` without its fallback gave None where parts() promises text
    from plumbing.chunk_shape import parts

    assert parts({"message": {"role": "assistant"}, "done": True}) == ("", "", ())
    assert parts({"message": {"content": None, "thinking": None}}) == ("", "", ())


def test_a_silent_child_is_stopped_at_its_time_limit_not_when_it_ends():
    # mutation: the `continue` after a select that saw nothing dropped: the harness then
    # blocked in read() until the child ended, far past the limit
    from plumbing.child_process import run_bounded

    command = [sys.executable, "-c", "import time; time.sleep(20)"]
    # a timeout has no exit code; the mutant waits the 20 s out and returns the child's 0
    assert run_bounded(command, cwd=HERE, timeout=0.5)[0] is None
