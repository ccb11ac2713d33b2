"""The caps every run keeps whatever the server or the model does (plumbing/limits.py): the
8 MB line cap on both wires, the 32 calls a turn that run, and nothing acted on after the
end of a turn. Hostile servers are the stand-ins (ollama_test_server.py,
openai_test_server.py) on 127.0.0.1, sending one enormous line or a call after the turn's
end; hostile models are scripted turns. (The deadline, the third limit, is
tests/test_deadline.py's; a turn of 20,000 calls or 50 MB of arguments,
tests/test_sizes.py's.)
"""

import json

import pytest

from agent_loop import (
    AFTER_DONE_CHUNK,
    ASSISTANT_FINISHED,
    MODEL_ERROR,
    PAST_MAX_CALLS_RUN,
    TASK,
    TOOL_RESULT,
    TOOL_START,
    agent_events,
)
from plumbing.limits import MAX_LINE_BYTES
from tests.helpers import ollama_chat, openai_chat, run_with
from tests.ollama_test_server import OllamaTestServer, call, chunk
from tests.ollama_test_server import reply as ollama_reply
from tests.openai_test_server import OpenAITestServer, content, finish, tool_call
from tests.openai_test_server import reply as openai_reply
from tests.scripted_model import ScriptedChat
from tests.test_fuzz import CountingTools

# Most of these tests wait for a stand-in's pause: conftest.py spreads them over the run,
# so that the workers never all wait at once.
pytestmark = pytest.mark.waits


# --- memory and calls are bounded ----------------------------------------------------------------


def test_ollama_line_over_the_cap_ends_the_turn_naming_the_cap(repo):
    huge = b'{"message": {"role": "assistant", "content": "' + b"x" * (MAX_LINE_BYTES + 1)
    with OllamaTestServer([ollama_reply(chunk("a"), huge + b'"}}\n')]) as server:
        events, _ = run_with(ollama_chat(server), None, repo, seconds=60)
    assert events[-1]["reason"] == MODEL_ERROR
    assert "8 MB" in events[-1]["error"]


def test_ollama_line_of_exactly_the_cap_is_read_when_its_newline_comes_apart(repo):
    # The cap is on a line longer than MAX_LINE_BYTES, counted up to its newline: a newline
    # arriving in a piece of its own ends a line of exactly the cap (kept), and the count
    # starts again from nothing after it.
    empty = json.dumps(chunk("")).encode()
    padding = b"x" * (MAX_LINE_BYTES - len(empty))
    first = empty.replace(b'"content": ""', b'"content": "' + padding + b'"')
    assert len(first) == MAX_LINE_BYTES
    done = json.dumps(chunk(done=True)).encode() + b"\n"
    with OllamaTestServer([ollama_reply(first, b"\n", done, pause_each=0.3)]) as server:
        events, _ = run_with(ollama_chat(server), None, repo, seconds=60)
    assert events[-1]["reason"] == ASSISTANT_FINISHED, events[-1]


def test_openai_line_over_the_cap_ends_the_turn_naming_the_cap(repo):
    huge = "data: " + "x" * (MAX_LINE_BYTES + 1) + "\n\n"
    with OpenAITestServer([openai_reply(content("a"), huge)]) as server:
        events, _ = run_with(openai_chat(server), None, repo, seconds=60)
    assert events[-1]["reason"] == MODEL_ERROR
    assert "8 MB" in events[-1]["error"]


def test_calls_past_the_cap_get_an_error_each_and_none_runs():
    # 32, the README's figure, written out: a test through MAX_CALLS_RUN passes whatever it is.
    calls = [call("ping", index=i) for i in range(40)]
    chat = ScriptedChat([[chunk(tool_calls=calls, done=True)], [chunk("done", done=True)]])
    tools = CountingTools()
    events = list(agent_events(chat, tools, TASK))
    results = [e["result"] for e in events if e["type"] == TOOL_RESULT]
    assert len(tools.ran) == 32
    assert results[32:] == [{"error": PAST_MAX_CALLS_RUN}] * 8
    sent_back = [m for m in chat.requests[1] if m["role"] == "tool"]
    assert len(sent_back) == 40  # every call is answered


# --- nothing after the end of a turn is acted on --------------------------------------------------


def test_ollama_call_after_done_never_runs():
    late = [chunk("ok", done=True), chunk(tool_calls=[call("ping")])]
    chat, tools = ScriptedChat([late]), CountingTools()
    events = list(agent_events(chat, tools, TASK))
    assert events[-1]["reason"] == MODEL_ERROR and events[-1]["error"] == AFTER_DONE_CHUNK
    assert tools.ran == []


def test_openai_call_after_finish_reason_never_runs(repo):
    late = openai_reply(content("ok"), finish(), tool_call(0, "{}", name="run_tests"))
    with OpenAITestServer([late]) as server:
        events, _ = run_with(openai_chat(server), None, repo, seconds=60)
    assert events[-1]["reason"] == MODEL_ERROR
    assert "after the end of the turn" in events[-1]["error"]
    assert [e for e in events if e["type"] == TOOL_START] == []


def test_openai_usage_after_finish_reason_is_still_a_complete_turn(repo):
    usage = {"prompt_tokens": 5, "completion_tokens": 2}
    turn = openai_reply(content("ok"), finish(), {"choices": [], "usage": usage})
    with OpenAITestServer([turn]) as server:
        events, _ = run_with(openai_chat(server), None, repo, seconds=60)
    assert events[-1]["reason"] == "assistant_finished"
    assert json.loads(json.dumps(events[-2]["model_counters"]))["eval_count"] == 2
