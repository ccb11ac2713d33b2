"""Offline tests of the tools against hostile input: nothing a model sends crashes a run,
leaks a file from outside the root, runs past the search budget or half-writes a file.

Each test builds its own small files in `tmp_path`. The search cases that would run for
hours on a backtracking engine run in a child Python process with a timeout, so a broken
budget fails the test instead of hanging the suite. `ask.py` runs as a real subprocess
against the Ollama-protocol test server on 127.0.0.1, through the real `ollama` SDK.
"""

import os
import stat

from agent_loop import STOPPED, TOOL_RESULT, agent_events
from ollama_test_server import call, chunk
from repo_tools import EDITABLE, RepoTools, copy_sample
from scripted_model import ScriptedChat
from tool_guard import ToolBox, function_schema

# --- 1. a tool's exception is an error result ---------------------------------------------------


class Fragile(ToolBox):
    """A tool set whose one tool fails the way a bug would: not an expected error type."""

    schemas = [function_schema("divide", "Divide one by a number.", {"by": "The divisor"})]

    def handlers(self):
        return {"divide": lambda by: {"result": 1 / float(by)}}


def test_any_exception_from_a_tool_becomes_an_error_result_and_the_loop_goes_on():
    chat = ScriptedChat(
        [
            [chunk(tool_calls=[call("divide", by="0")], done=True)],
            [chunk("Dividing by zero failed.", done=True)],
        ]
    )
    events = list(agent_events(chat, Fragile(), "Divide by zero.", max_turns=3))
    results = [event["result"] for event in events if event["type"] == TOOL_RESULT]
    assert results == [{"error": "divide failed: ZeroDivisionError: float division by zero"}]
    assert events[-1]["type"] == STOPPED and events[-1]["reason"] == "assistant_finished"
    assert len(chat.requests) == 2  # the model read the error and answered


# --- 6. replace_text never half-writes ----------------------------------------------------------


def test_replace_text_refuses_unencodable_text_before_writing(tmp_path):
    repo = copy_sample(tmp_path)
    before = (repo / EDITABLE).read_bytes()
    result = RepoTools(repo).invoke("replace_text", {"old": "def ", "new": "def \ud800"})
    assert "UTF-8" in result["error"]
    assert (repo / EDITABLE).read_bytes() == before
    assert sorted(os.listdir(repo)) == sorted(os.listdir(copy_sample(tmp_path / "fresh")))


def test_replace_text_replaces_the_file_atomically_keeping_its_mode(tmp_path):
    repo = copy_sample(tmp_path)
    target = repo / EDITABLE
    target.chmod(0o640)
    before = target.read_bytes()
    os.link(target, tmp_path / "old-inode")  # an in-place write would change this one too
    old = before.decode().splitlines()[0]
    result = RepoTools(repo).invoke("replace_text", {"old": old, "new": "# edited"})
    assert result == {"path": EDITABLE, "replaced": 1}
    assert target.read_bytes() == before.replace(old.encode(), b"# edited", 1)
    assert (tmp_path / "old-inode").read_bytes() == before  # a new file took its place
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(os.listdir(repo)) == sorted(os.listdir(copy_sample(tmp_path / "fresh")))
