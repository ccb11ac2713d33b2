"""What one chunk may look like (plumbing/chunk_shape.py's parts()), from chunks made here:
the pieces the loop assembles are always text and a list, whatever a valid chunk leaves out."""

import pytest

from plumbing.chunk_shape import MalformedChunk, parts

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
