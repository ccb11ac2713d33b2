"""tool_guard.py: every bad tool request becomes a result the model can read, never a crash.

Through the real loop with a scripted chat (tests/scripted_model.py): a tool that raises,
a call whose name is empty, false or not text, arguments of any type, and a tool that hits
an OS error because the model's own code broke its file. (The walk-through of unknown
tools and malformed arguments is test_loop.py's.)
"""

import json

import pytest

from agent_loop import STOPPED, TASK, TOOL_RESULT, agent_events
from repo_tools import RepoTools
from tests.helpers import run
from tests.ollama_test_server import call, chunk
from tests.scripted_model import ScriptedChat
from tool_guard import ToolBox, function_schema

# --- a tool's exception is an error result --------------------------------------------------------


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


@pytest.mark.parametrize("name, shown", [("", '""'), (0, "0"), (False, "false")])
def test_a_call_whose_name_is_empty_or_false_is_told_that_name_back(name, shown):
    # Only a missing name (null) is "a call without a name"; "" or 0 is a name, quoted.
    chat = ScriptedChat(
        [
            [chunk(tool_calls=[{"function": {"name": name, "arguments": {}}}], done=True)],
            [chunk("No such tool.", done=True)],
        ]
    )
    events = list(agent_events(chat, Fragile(), "Divide by two.", max_turns=3))
    results = [event["result"] for event in events if event["type"] == TOOL_RESULT]
    assert results == [{"error": f"unknown tool {shown}; the offered tools are: divide"}]


# --- arguments and names of any type --------------------------------------------------------------


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


# --- a tool that hits an OS error -----------------------------------------------------------------


def test_tool_that_hits_an_os_error_is_answered_not_raised(repo):
    # Code the model wrote, run by run_tests, turns path_rules.py into a directory.
    turn_it_into_a_directory = (
        "import pathlib as _p\n_f = _p.Path(__file__); _f.unlink(); _f.mkdir()\n\n\n"
        "def python_sources("
    )
    edit = call("replace_text", old="def python_sources(", new=turn_it_into_a_directory)
    script = [
        [chunk(tool_calls=[edit, call("run_tests", index=1)], done=True)],
        [chunk(tool_calls=[call("read_file", path="path_rules.py")], done=True)],
        [chunk("done", done=True)],
    ]
    chat = ScriptedChat(script)
    events = list(agent_events(chat, RepoTools(repo), TASK))
    assert events[-1]["reason"] == "assistant_finished"
    assert "error" in json.loads(chat.requests[2][-1]["content"])
