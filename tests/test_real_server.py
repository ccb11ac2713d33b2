"""End to end against a real llama.cpp `llama-server` serving a real small model.

Every other live-path test talks to a stand-in written in this repository; these talk to
the real thing (found and started by real_server.py, which also names the model). The
CLIs run as subprocesses, the server on 127.0.0.1. They skip, saying why, where the server
binary or the model cannot be had; under CI (`CI=true`) conftest.py turns any skip into a
failed run. The last tests here check that rule itself; the model's fetch is
tests/test_model_files.py's. The tests that need the server are marked `real_server`: where
none can be had (a GitHub runner), `-m "not real_server"` leaves them out by name
(.github/workflows/ci.yml).

What the model does is not asserted beyond what any model must do: the exit code follows
the independent tests, the files stay unchanged, errors are one clear line.
"""

import contextlib
import hashlib
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_loop import INCOMPLETE_MODEL_TURN, MODEL_ERROR, TOOL_START
from harness.tasks import CHEATED, FAILED_ATTEMPT, FLAGGED, outcome_of
from plumbing.sample import SOURCE_FILE, copy_sample
from tests.helpers import Reader, wait_until_gone
from tests.in_process import run_cli
from tests.real_server import (
    CALLER,
    MODEL,
    SERVER,
    SUITE_THREADS,
    LlamaServer,
    Unavailable,
    health,
    model_file,
    server_binary,
    sha256_of,
    shared_server,
)

HERE = Path(__file__).resolve().parent.parent
CALLER_CONTEXT = 4096
CALLER_TOKENS = 96  # a call to a tool takes Qwen 20 to 60 tokens
# Each answer's budget: small, so the file takes about a minute on 2 busy cores. SmolLM2
# never stops by itself on the repair task, and needs about 10 tokens for the question below.
TEST_TOKENS = 48
NOT_SERVED = "no-such-model"


@contextlib.contextmanager
def real_server(**settings):
    """A running LlamaServer of this test's own, or a skip naming what is missing (a failure
    under CI): for the tests that kill their server or need other settings."""
    server = started(LlamaServer(**{"threads": SUITE_THREADS, **settings}).__enter__)
    try:
        yield server
    finally:
        server.stop()


def started(start, *args, **options):
    """`start(...)`'s server, or a skip naming what is missing (a failure under CI)."""
    try:
        return start(*args, **options)
    except Unavailable as error:
        pytest.skip(f"no real llama-server here: {error}")


def shared(spec, tmp_path_factory, context=SERVER["context"]):
    """The session's one server for `spec`, whichever worker asked first (see
    real_server.shared_server)."""
    folder, owner = tmp_path_factory.getbasetemp(), os.getpid()
    if os.environ.get("PYTEST_XDIST_WORKER"):  # the session's folder, and its main process
        folder, owner = folder.parent, os.getppid()
    return started(shared_server, spec, folder, owner, context)


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    return shared(MODEL, tmp_path_factory)


@pytest.fixture(scope="session")
def caller(tmp_path_factory):
    # the lab's system prompt and three tool schemas take about 1,000 tokens of Qwen's
    return shared(CALLER, tmp_path_factory, context=CALLER_CONTEXT)


def lab(script, *args):
    """Run a lab CLI's main() here (tests/in_process.py): (exit code, stdout, stderr)."""
    done = run_cli(script, *args)
    return done.returncode, done.stdout, done.stderr


def on(server, max_tokens=TEST_TOKENS):
    """The CLI options for `server`'s model, with an output budget per turn."""
    wire = ["--api", "openai", "--host", server.base_url, "--model", server.spec.alias]
    return wire + (["--max-tokens", str(max_tokens)] if max_tokens else [])


# subtle: a module fixture is made once per xdist worker, so the tests that share one
# live attempt are kept on one worker (`--dist loadgroup`, lab.py's test job).
SHARES_THE_LIVE_ATTEMPT = pytest.mark.xdist_group("real-server-live-attempt")
# Each test that needs the real server (and skips without it); the last test here checks
# that these are exactly the ones that skip.
NEEDS_THE_SERVER = pytest.mark.real_server


@pytest.fixture(scope="module")
def live(caller, tmp_path_factory):
    """One live attempt of the model that calls tools, recorded by record_run.py: (exit
    code, stdout, stderr, path). Two turns: a call, its result sent back, the next answer."""
    path = tmp_path_factory.mktemp("live") / "attempt.json"
    args = [*on(caller, CALLER_TOKENS), "--max-turns", "2", "--output", str(path)]
    return (*lab("record_run.py", *args), path)


def tree_digest(root):
    """One hash of every path and its bytes under `root`."""
    digest = hashlib.sha256()
    for path in sorted(Path(root).rglob("*")):
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def is_one_error_line(err):
    """Whether `err` is one `error:` line and no traceback."""
    return err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err


# --- record_run.py and replay.py ---------------------------------------------------------------


@NEEDS_THE_SERVER
@SHARES_THE_LIVE_ATTEMPT
def test_record_run_saves_a_live_recording_whose_exit_code_is_the_independent_tests(live):
    code, out, err, path = live
    recording = json.loads(path.read_text(encoding="utf-8"))
    assert recording["source"] == "live" and recording["api"] == "openai"
    assert recording["model"]["name"] == CALLER.alias
    assert CALLER.alias in recording["model"]["server_models"]
    assert recording["final_tests"]["verdict"] in ("passed", "failed")
    assert code == (0 if recording["final_tests"]["verdict"] == "passed" else 1), out + err
    assert f"Saved: {path}" in out and "Traceback" not in err


@NEEDS_THE_SERVER
@SHARES_THE_LIVE_ATTEMPT
def test_a_real_streamed_tool_call_is_assembled_run_and_its_result_sent_back(live):
    *_, path = live
    recording = json.loads(path.read_text(encoding="utf-8"))
    first = recording["model_calls"][0]["events"]
    fragments = [
        call
        for event in first
        for choice in event.get("choices") or []
        for call in (choice.get("delta") or {}).get("tool_calls") or []
    ]
    assert len(fragments) > 1, "the call came whole, not streamed in fragments"
    started = [e for e in recording["events"] if e["type"] == TOOL_START and e["turn"] == 1]
    assert started, "the model made no tool call in its first turn"
    assert [e["name"] for e in started] == [f["function"]["name"] for f in fragments if "id" in f]
    # the second request carried the first turn's calls and one result for each of them
    second = recording["messages"][: recording["model_calls"][1]["request_length"]]
    assert [m["role"] for m in second[2:]] == ["assistant", *["tool"] * len(started)]
    assert [m["tool_name"] for m in second[3:]] == [e["name"] for e in started]
    assert recording["stop"]["reason"] != MODEL_ERROR  # the server took the results back


@NEEDS_THE_SERVER
@SHARES_THE_LIVE_ATTEMPT
def test_live_recording_replays_offline(live):
    *_, path = live
    code, out, err = lab("replay.py", str(path))
    assert code == 0, out + err
    assert "reproduced" in out.splitlines()


@NEEDS_THE_SERVER
def test_spent_output_budget_stops_with_incomplete_model_turn_and_runs_no_tool(server, tmp_path):
    output = tmp_path / "budget.json"
    args = [*on(server, max_tokens=8), "--max-turns", "1", "--output", str(output)]
    code, out, err = lab("record_run.py", *args)
    assert code == 1, out + err
    recording = json.loads(output.read_text(encoding="utf-8"))
    assert recording["model"]["options"]["max_tokens"] == 8
    assert recording["stop"]["reason"] == INCOMPLETE_MODEL_TURN
    usage = [e for e in recording["model_calls"][0]["events"] if e.get("usage")]
    assert usage[-1]["usage"]["completion_tokens"] == 8  # the server honoured the budget
    assert not [e for e in recording["events"] if e["type"] == TOOL_START]
    assert recording["final_source"] == (HERE / "sample_repo" / SOURCE_FILE).read_text()


@NEEDS_THE_SERVER
def test_a_fork_into_the_real_model_after_turn_2_replays_as_recorded(server, tmp_path):
    # repair.json's two reads replayed, then SmolLM2 from turn 3: whatever it says there
    output = tmp_path / "fork.json"
    fork = ["--fork", "recordings/repair.json", "--at", "3", "--max-turns", "3"]
    code, out, err = lab("record_run.py", *on(server, max_tokens=16), *fork, "--output", output)
    assert code in (0, 1), out + err
    recording = json.loads(output.read_text(encoding="utf-8"))
    assert recording["source"] == "forked" and recording["fork"]["at"] == 3
    assert [c["source"] for c in recording["model_calls"]][:3] == ["replayed", "replayed", "live"]
    assert recording["model_calls"][2]["api"] == "openai"  # the real server's raw events
    code, out, err = lab("replay.py", output)
    assert code == 0 and out.rstrip().endswith("1 reproduced, 0 diverged, 0 could not be replayed")


@NEEDS_THE_SERVER
def test_the_real_model_at_the_impossible_task_gets_an_outcome_that_replays(server, tmp_path):
    output = tmp_path / "impossible.json"
    args = [*on(server, max_tokens=16), "--task", "impossible", "--max-turns", "1"]
    code, out, err = lab("record_run.py", *args, "--output", output)
    recording = json.loads(output.read_text(encoding="utf-8"))
    outcome = outcome_of(recording)
    assert outcome in (CHEATED, FLAGGED, FAILED_ATTEMPT) and recording["task_name"] == "impossible"
    assert code == (0 if outcome == FLAGGED else 1), out + err
    assert f"Impossible task: {outcome} (" in out
    code, out, err = lab("replay.py", output)
    assert code == 0 and out.rstrip().endswith("1 reproduced, 0 diverged, 0 could not be replayed")


@NEEDS_THE_SERVER
def test_unlisted_model_is_refused_by_record_run_before_anything_runs(server, tmp_path):
    output = tmp_path / "never.json"
    args = ["--api", "openai", "--host", server.base_url, "--model", NOT_SERVED]
    code, out, err = lab("record_run.py", *args, "--output", str(output))
    assert code == 2 and is_one_error_line(err), err
    assert f"model {NOT_SERVED!r} is not served" in err and MODEL.alias in err
    assert not output.exists() and "Starting tests" not in out


@NEEDS_THE_SERVER
def test_server_killed_mid_stream_gives_model_error_and_the_recording_replays(tmp_path):
    output = tmp_path / "cut.json"
    with real_server() as killed:
        # No --max-tokens: the answer must still be streaming when the server is killed.
        command = [sys.executable, str(HERE / "record_run.py"), *on(killed, max_tokens=None)]
        process = subprocess.Popen(
            [*command, "--output", str(output)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        try:
            out = Reader(process.stdout)
            out.wait_for(
                " says: ", timeout=120
            )  # the model's first words have streamed: mid-answer
            killed.stop()
            assert process.wait(timeout=120) == 1  # the final tests still fail
        finally:
            if process.poll() is None:
                process.kill()
            process.wait()
    recording = json.loads(output.read_text(encoding="utf-8"))
    assert recording["stop"]["reason"] == MODEL_ERROR
    assert "was cut mid-response" in recording["stop"]["error"]
    code, replayed, err = lab("replay.py", str(output))
    assert code == 0, replayed + err


@NEEDS_THE_SERVER
def test_make_live_recording_adds_the_model_and_server_facts_and_replays(tmp_path):
    output = tmp_path / "live.json"
    try:
        server_binary(), model_file()
    except Unavailable as error:
        pytest.skip(f"no real llama-server here: {error}")
    args = ["--max-tokens", "16", "--threads", str(SUITE_THREADS), "--output", str(output)]
    code, out, err = lab("tests/maintainers/make_live_recording.py", *args)
    assert code == 0, out + err
    recording = json.loads(output.read_text(encoding="utf-8"))
    model = recording["model"]
    assert recording["source"] == "live" and model["name"] == MODEL.alias
    assert model["gguf"]["sha256"] == sha256_of(model_file())
    assert model["server_build"].startswith("version: ")
    assert model["server_flags"][:1] == ["--jinja"] and model["sampling"]["max_tokens"] == 16
    assert f"stopped with {recording['stop']['reason']}" in recording["description"]
    code, replayed, err = lab("replay.py", str(output))
    assert code == 0, replayed + err


# --- ask.py -----------------------------------------------------------------------------------


@NEEDS_THE_SERVER
def test_ask_answers_one_question_and_changes_nothing(server, tmp_path):
    root = copy_sample(tmp_path)
    before = tree_digest(root)
    question = "In one word: which programming language is path_rules.py written in?"
    code, out, err = lab("ask.py", *on(server), "--root", str(root), question)
    assert code == 0, err
    assert out.strip() and "Traceback" not in out + err
    assert tree_digest(root) == before


@NEEDS_THE_SERVER
def test_unlisted_model_is_refused_by_ask_before_any_question(server, tmp_path):
    args = ["--api", "openai", "--host", server.base_url, "--model", NOT_SERVED]
    code, out, err = lab("ask.py", *args, "--root", str(tmp_path), "Hello?")
    assert code == 2 and out == "" and is_one_error_line(err), err
    assert NOT_SERVED in err and MODEL.alias in err


@NEEDS_THE_SERVER
def test_a_question_longer_than_the_context_gives_one_clear_error_line(server, tmp_path):
    # longer than the shared server's whole context, whatever the model's own prompt adds
    question = "Please read all of this before you answer. " * 300 + "What is here?"
    code, out, err = lab("ask.py", *on(server), "--root", str(tmp_path), question)
    assert code == 2 and out == "" and is_one_error_line(err), err
    assert "(HTTP 400)" in err and "context" in err


@NEEDS_THE_SERVER
def test_server_is_killed_when_its_block_ends_even_by_an_exception():
    with pytest.raises(RuntimeError), real_server() as started:
        pid = started.process.pid
        raise RuntimeError("the test failed inside the block")
    assert wait_until_gone(pid)


@NEEDS_THE_SERVER
def test_a_shared_server_is_started_once_and_killed_when_its_owner_ends(tmp_path):
    owner = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                             stdin=subprocess.PIPE)  # fmt: skip
    try:
        first = started(shared_server, MODEL, tmp_path, owner.pid)
        again = shared_server(MODEL, tmp_path, owner.pid)  # what a second worker gets
        keeper = json.loads((tmp_path / f"llama-server-{MODEL.alias}.json").read_text())["keeper"]
        assert again == first and health(first.port) == 200
    finally:
        owner.stdin.close()  # the session's main process ends, however it ends
        owner.wait()
    assert wait_until_gone(keeper)
    assert health(first.port) is None  # the server went with its keeper


# --- conftest.py's rule: under CI a skip is a failure -----------------------------------------


@pytest.mark.parametrize("ci, expected", [("true", 1), ("", 0)])
def test_a_skipped_test_fails_the_run_under_ci_only(tmp_path, ci, expected):
    (tmp_path / "test_one.py").write_text(
        "import pytest\n\n"
        "def test_runs():\n    pass\n\n"
        "def test_needs_a_server():\n    pytest.skip('no llama-server at /nowhere')\n\n"
        "@pytest.mark.xfail(reason='a known bug')\n"
        "def test_known_bug():\n    assert False\n"
    )
    command = [sys.executable, "-m", "pytest", "-q", "-p", "conftest", "-c", os.devnull]
    env = {**os.environ, "CI": ci, "PYTHONPATH": str(HERE)}
    done = subprocess.run(
        [*command, "--rootdir", str(tmp_path), str(tmp_path / "test_one.py")],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == expected, done.stdout + done.stderr
    # the reason is said in plain words either way; only CI fails the run for it
    lines = done.stdout.splitlines()
    at = lines.index("1 skipped: no llama-server at /nowhere")
    assert lines[at + 1] == "    test_one.py::test_needs_a_server"
    assert ("CI=true: 1 skipped test(s) fail this run" in done.stdout) == bool(ci)
    assert "test_known_bug" not in done.stdout  # an expected failure is not a skip


def test_lab_test_says_which_tests_it_skipped_and_why_as_the_readme_quotes_it(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["LAB_LLAMA_SERVER"] = "/nowhere"  # as the README's example has it
    done = subprocess.run(
        [sys.executable, str(HERE / "lab.py"), "test", "-n", "0", "tests/test_real_server.py",
         "-k", "not skipped_and_why and not under_ci"],  # not this test, which would run
        # itself again, nor the ones that start a pytest of their own: they skip nothing
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=240,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    quoted = next(
        line.strip()
        for line in (HERE / "README.md").read_text().splitlines()
        if "skipped: no real llama-server here" in line
    )
    count = quoted.split()[0]
    assert f"{count} test(s) skipped: what they need is not on this machine" in done.stdout
    assert quoted in done.stdout.splitlines()
    assert int(count) > 1  # every test that needs the server, not one picked out
    # the tests marked as needing the server are exactly those that skipped without one, so
    # `-m "not real_server"` leaves out no other test, and lets none of them skip
    lines = done.stdout.splitlines()
    listed = itertools.takewhile(
        lambda line: line.startswith("    "), lines[lines.index(quoted) + 1 :]
    )
    skipped = {line.strip().split("::")[1].split("@")[0] for line in listed}
    # subtle: a copy of the module's names: getattr on one of them may import, adding names
    marks = {
        name: {m.name for m in getattr(test, "pytestmark", [])}
        for name, test in list(globals().items())
    }
    assert skipped == {name for name, named in marks.items() if "real_server" in named}
