"""What one chunk may look like (plumbing/chunk_shape.py's parts()), from chunks made here:
the pieces the loop assembles are always text and a list, whatever a valid chunk leaves out;
then through the loop, where a malformed chunk ends the turn as `model_error`, naming what
is wrong, and none of its tools runs."""

import pytest

from agent_loop import MODEL_DONE, MODEL_ERROR, TOOL_START
from plumbing.chunk_shape import MalformedChunk, parts
from tests.helpers import run
from tests.ollama_test_server import call, chunk

CALL = {"function": {"name": "run_tests", "arguments": {}}}


@pytest.mark.parametrize(
    ("chunk", "pieces"),
    [
        ({"done": False}, ("", "", ())),  # no message at all (a counters-only chunk)
        ({"message": None}, ("", "", ())),
        ({"message": {}}, ("", "", ())),
        ({"message": {"content": None, "thinking": None}}, ("", "", ())),
        ({"message": {"content": "", "thinking": ""}}, ("", "", ())),
        ({"message": {"content": "hi", "thinking": "hm"}}, ("hi", "hm", ())),
        ({"message": {"content": None, "tool_calls": [CALL]}}, ("", "", [CALL])),
        ({"message": {"thinking": "hm", "tool_calls": []}}, ("", "hm", [])),
    ],
)
def test_a_valid_chunks_pieces_are_text_and_a_list_of_calls(chunk, pieces):
    assert parts(chunk) == pieces  # text, never None: the loop joins the pieces


@pytest.mark.parametrize(
    ("message", "problem"),
    [
        ({"content": ""}, None),
        ({"content": 0}, "message 'content' is not text"),
        ({"thinking": False}, "message 'thinking' is not text"),
        ({"tool_calls": {}}, "'tool_calls' is not a list"),
        ({"tool_calls": [CALL, "x"]}, "a tool call is not an object with a 'function' object"),
        ({"tool_calls": [{"function": "x"}]}, "a tool call is not an object"),
    ],
)
def test_a_wrong_shape_is_named_and_falsy_values_are_no_exception(message, problem):
    # `0` and `False` are not text either: "not None" decides, not truthiness.
    if problem is None:
        assert parts({"message": message}) == ("", "", ())
        return
    with pytest.raises(MalformedChunk, match=problem):
        parts({"message": message})


@pytest.mark.parametrize("message", ["", 0, [], "hi"])
def test_a_message_that_is_not_an_object_is_named_even_when_falsy(message):
    with pytest.raises(MalformedChunk, match="^malformed chunk: 'message' is not an object$"):
        parts({"message": message})


# --- through the loop: a malformed chunk ends the turn and runs no tool ---------------------------


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


def test_a_chunk_without_text_or_thinking_gives_empty_text_for_both():
    # mutation: `thinking or ""` without its fallback gave None where parts() promises text
    from plumbing.chunk_shape import parts

    assert parts({"message": {"role": "assistant"}, "done": True}) == ("", "", ())
    assert parts({"message": {"content": None, "thinking": None}}) == ("", "", ())
