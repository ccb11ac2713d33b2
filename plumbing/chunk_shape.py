"""What a model chunk may look like, checked once per chunk before the loop reads it.

A stream can yield anything: a chunk that is not an object, a `message` that is not an
object, `content`/`thinking` that is not text, `tool_calls` that is not a list, a call that
is not an object with a `function` object. `parts(chunk)` returns the pieces the loop
assembles, or raises `MalformedChunk` naming what is wrong; the loop then ends the turn as
`model_error` and runs none of its tools. A call with a missing or unknown name, or
arguments of a wrong type, is not checked here: the tools' guard (tool_guard.py) answers
it with an error result the model can read.

`check_size` ends a turn with more calls than MAX_CALLS_ACCEPTED, or more argument
characters than MAX_TURN_ARGUMENTS, the same way.

Not here: assembling a turn (agent_loop.py).
"""

import json

from plumbing.limits import (
    ARGUMENTS_TOO_LONG,
    MAX_CALLS_ACCEPTED,
    MAX_TURN_ARGUMENTS,
    PAST_MAX_CALLS_ACCEPTED,
)

# A chunk after the `done` one, in the loop's chunks whatever the wire (the OpenAI wire's
# own end, its finish_reason, is plumbing/openai_wire.py's AFTER_FINISH_REASON).
AFTER_DONE_CHUNK = "the model sent data after the end of the turn (after its done chunk)"


class MalformedChunk(Exception):
    """The stream yielded something that is not an Ollama-shaped chunk."""


def parts(chunk):
    """(content, thinking, tool_calls) of one chunk; MalformedChunk if its shape is wrong."""
    # subtle: this runs once per chunk, so it is written for speed (bench.py measures it).
    if not isinstance(chunk, dict):
        raise MalformedChunk(f"malformed chunk: expected an object, got {type(chunk).__name__}")
    message = chunk.get("message")
    if message is None:
        return "", "", ()
    if not isinstance(message, dict):
        raise MalformedChunk("malformed chunk: 'message' is not an object")
    content, thinking = message.get("content"), message.get("thinking")
    if content is not None and not isinstance(content, str):
        raise MalformedChunk("malformed chunk: message 'content' is not text")
    if thinking is not None and not isinstance(thinking, str):
        raise MalformedChunk("malformed chunk: message 'thinking' is not text")
    calls = message.get("tool_calls")
    if calls is None:
        return content or "", thinking or "", ()
    if not isinstance(calls, list):
        raise MalformedChunk("malformed chunk: 'tool_calls' is not a list")
    for call in calls:
        if not isinstance(call, dict) or not isinstance(call.get("function"), dict):
            raise MalformedChunk(
                "malformed chunk: a tool call is not an object with a 'function' object"
            )
    return content or "", thinking or "", calls


def check_size(calls, new_calls, size):
    """The turn's argument characters so far, after `new_calls` joined `calls`; raises
    MalformedChunk when the turn has more calls, or longer arguments, than a turn may."""
    if len(calls) > MAX_CALLS_ACCEPTED:
        raise MalformedChunk(PAST_MAX_CALLS_ACCEPTED)
    for call in new_calls:
        arguments = call["function"].get("arguments")
        size += len(arguments if isinstance(arguments, str) else json.dumps(arguments))
    if size > MAX_TURN_ARGUMENTS:
        raise MalformedChunk(ARGUMENTS_TOO_LONG)
    return size
