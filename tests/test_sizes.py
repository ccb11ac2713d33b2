"""Every size bounded, whatever the server sends: a turn of 20,000 tool calls, or 50 MB of
argument fragments, ends as `model_error` with none of its calls run, in a recording under
8 MB, under 300 printed lines and under 300 MB of memory (the red-team once measured 169 MB,
1.9 GB and 99,968 lines for 100,000 calls). Calls past the 32 that run are one line.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agent_loop import MODEL_ERROR, TASK, TOOL_RESULT, agent_events
from plumbing.limits import ARGUMENTS_TOO_LONG, PAST_MAX_CALLS_ACCEPTED
from repo_tools import RepoTools
from tests import openai_test_server as openai
from tests.in_process import run_cli
from tests.ollama_test_server import OllamaTestServer, call, chunk, reply
from tests.scripted_model import ScriptedChat

HERE = Path(__file__).resolve().parent.parent
# subtle: the peak of this process alone, VmHWM of /proc/self/status, not getrusage's
# ru_maxrss: Linux carries the forking parent's peak over into its child at exec, so the
# child of a test worker grown past 300 MB once measured the worker, not itself.
MEASURED = """
import sys
import record_run
code = record_run.main(sys.argv[1:])
with open("/proc/self/status") as status:
    peak = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
print("peak-kib", peak, file=sys.__stderr__)
sys.exit(code)
"""


def record_measuring_peak(tmp_path, server, *extra):
    """Run record_run.py in a child that reports its own peak memory: (finished, KiB)."""
    output = tmp_path / "big.json"
    host = getattr(server, "host", None) or server.base_url  # the Ollama or the OpenAI root
    finished = subprocess.run(
        [sys.executable, "-c", MEASURED, "--host", host, "--output", str(output), *extra],
        capture_output=True, text=True, cwd=HERE, timeout=120,
    )  # fmt: skip
    peak = int(finished.stderr.split("peak-kib ")[1].split()[0])
    return finished, output, peak


def assert_bounded(finished, output, peak, error):
    assert finished.returncode == 1, finished.stdout + finished.stderr
    recording = json.loads(output.read_text())
    assert recording["stop"]["reason"] == MODEL_ERROR and error in recording["stop"]["error"]
    assert not [e for e in recording["events"] if e["type"] == TOOL_RESULT]
    assert output.stat().st_size < 8_000_000
    assert len(finished.stdout.splitlines()) < 300
    assert peak < 300_000, f"peak memory {peak} KiB"


def test_ollama_turn_of_20000_calls_ends_as_model_error_bounded(tmp_path):
    calls = [call("read_file", index=i, path="path_rules.py") for i in range(20_000)]
    with OllamaTestServer([reply(chunk(tool_calls=calls), chunk(done=True))]) as server:
        assert_bounded(*record_measuring_peak(tmp_path, server), PAST_MAX_CALLS_ACCEPTED)


def test_openai_turn_of_20000_calls_ends_as_model_error_bounded(tmp_path):
    fragments = [
        openai.tool_call(i, '{"path": "path_rules.py"}', name="read_file") for i in range(20_000)
    ]
    script = [openai.reply(*fragments, openai.finish("tool_calls"))]
    with openai.OpenAITestServer(script) as server:
        found = record_measuring_peak(
            tmp_path, server, "--api", "openai", "--model", openai.TEST_MODEL
        )
        assert_bounded(*found, PAST_MAX_CALLS_ACCEPTED)


def test_openai_50_mb_of_argument_fragments_end_as_model_error_bounded(tmp_path):
    piece = "x" * 100_000
    fragments = [openai.tool_call(0, '{"old": "', name="replace_text")]
    fragments += [openai.tool_call(0, piece) for _ in range(500)]
    script = [openai.reply(*fragments, openai.finish("tool_calls"))]
    with openai.OpenAITestServer(script) as server:
        found = record_measuring_peak(
            tmp_path, server, "--api", "openai", "--model", openai.TEST_MODEL
        )
        assert_bounded(*found, ARGUMENTS_TOO_LONG)


@pytest.mark.parametrize("count, runs", [(1000, 32), (1001, 0)])
def test_1000_calls_a_turn_are_answered_and_one_more_is_a_model_error(repo, count, runs):
    calls = [call("read_file", index=i, path="path_rules.py") for i in range(count)]
    chat = ScriptedChat([[chunk(tool_calls=calls, done=True)], [chunk("done", done=True)]])
    events = list(agent_events(chat, RepoTools(repo), TASK))
    results = [e["result"] for e in events if e["type"] == TOOL_RESULT]
    assert sum("text" in r for r in results) == runs
    assert (events[-1]["reason"] == MODEL_ERROR) == (count > 1000)


@pytest.mark.parametrize("size", [1_000_000, 1_000_001])
def test_arguments_of_1000000_characters_a_turn_pass_and_one_more_is_a_model_error(repo, size):
    # A call's arguments as raw text: the cap counts its characters, whatever they are.
    calls = [{"function": {"name": "read_file", "arguments": "x" * size}}]
    chat = ScriptedChat([[chunk(tool_calls=calls, done=True)], [chunk("done", done=True)]])
    events = list(agent_events(chat, RepoTools(repo), TASK))
    refused = size > 1_000_000  # the figure docs/defences.md gives, written out
    assert (events[-1]["reason"] == MODEL_ERROR) == refused
    assert (ARGUMENTS_TOO_LONG in events[-1].get("error", "")) == refused
    assert len([e for e in events if e["type"] == TOOL_RESULT]) == (0 if refused else 1)


def test_calls_past_the_32_that_run_are_one_printed_line(tmp_path):
    calls = [call("read_file", index=i, path="path_rules.py") for i in range(40)]
    script = [
        reply(chunk(tool_calls=calls), chunk(done=True)),
        reply(chunk("ok"), chunk(done=True)),
    ]
    with OllamaTestServer(script) as server:  # what is printed: record_run.py's main() here
        finished = run_cli("record_run.py", "--host", server.host, "--output", tmp_path / "r.json")
    lines = finished.stdout.splitlines()
    assert sum(line.startswith("turn 1: read_file") for line in lines) == 32
    assert (
        lines.count(
            "turn 1: the calls after the first 32 of this turn are not run; each is answered with "
            "an error (not shown)"
        )
        == 1
    )
    assert "Stop: assistant_finished after 2 model calls, 40 tool calls" in lines
