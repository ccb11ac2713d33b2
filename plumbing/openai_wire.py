"""The OpenAI chat-completions wire as data: streamed events into the loop's chunks, and
the loop's conversation into a request.

`chunks_from_events` turns the streamed events into chunks of the loop's (Ollama) shape,
assembling tool calls that arrive as fragments of a JSON string; `request_body` turns the
loop's Ollama-shaped conversation back into an OpenAI request (ids for calls,
`tool_call_id` for results). Both are pure: the adapter (openai_model.py) runs them on a
live stream, replay and the summaries of recordings (harness/outcomes.py,
harness/transcript.py) on the events a recording kept, so every reader assembles a turn
with the same code and none imports the adapter.

Not here: HTTP, Server-Sent Events or any failure of the connection (openai_model.py).
"""

import json

from plumbing.limits import (
    ARGUMENTS_TOO_LONG,
    LARGEST_NUMBER,
    MAX_CALLS_ACCEPTED,
    MAX_TURN_ARGUMENTS,
    PAST_MAX_CALLS_ACCEPTED,
    DeadlineExceeded,
)

# local_model.OPTIONS where the OpenAI API has an equivalent; the context size (num_ctx)
# is the server's setting here, and thinking has no standard switch.
SAMPLING = {"temperature": 0, "seed": 7, "max_tokens": 2048}
# Token counts on a last event: llama-server and Ollama's /v1 send none unless asked.
STREAM_OPTIONS = {"include_usage": True}
# The token counts, under the names the loop keeps from Ollama's final chunk.
USAGE_COUNTERS = {"prompt_eval_count": "prompt_tokens", "eval_count": "completion_tokens"}

# What a stream's events can do wrong, in the words the user reads; the tests import them.
STREAM_ERROR = "the server reported an error mid-response: {detail}"
# An event after the one with a finish_reason (the loop's own check of its chunks, after
# `done`, is plumbing/chunk_shape.py's AFTER_DONE_CHUNK).
AFTER_FINISH_REASON = (
    "the server sent data after the end of the turn (after its finish_reason): {detail}"
)
MALFORMED_EVENT = "the server sent an event of the wrong shape: {detail}"


class OpenAIModelError(Exception):
    """A model request failed; the message says what went wrong and what to do."""


def chunks_from_events(events):
    """Yield loop-shaped chunks from parsed stream events (the `data:` objects, no `[DONE]`).

    Content and reasoning pieces are yielded as they arrive. Tool calls are assembled by
    `index` and yielded, complete, only on the final `done: True` chunk, after the last
    event: a call's arguments are a JSON string that can be parsed only once it is whole.
    A stream that ends without any `finish_reason` yields no `done` chunk at all; one with a
    `finish_reason` is complete even if `[DONE]` never came (some servers omit it), or if
    the deadline cut the wait for it. After the `finish_reason`, only events without text or
    calls (a usage report) may come: anything else is an error, so it can never run.
    """
    calls = {}  # index -> {"name": ..., "pieces": [argument fragments]}
    finish_reason, usage, size = None, None, 0  # size: the calls' argument characters
    try:
        for event in events:
            if not isinstance(event, dict):
                raise OpenAIModelError(MALFORMED_EVENT.format(detail=f"{event!r:.200}"))
            if "error" in event:
                raise OpenAIModelError(STREAM_ERROR.format(detail=error_text(event["error"])))
            usage = event.get("usage") or usage  # may come on its own event, after the finish
            choice, delta = _choice(event)
            text = delta.get("content")
            # subtle: some servers send the same text under both names; take one, never both.
            thought = delta.get("reasoning_content") or delta.get("reasoning")
            if finish_reason is not None and (text or thought or delta.get("tool_calls")):
                raise OpenAIModelError(AFTER_FINISH_REASON.format(detail=f"{event!r:.200}"))
            if text or thought:
                message = {"role": "assistant", "content": text or ""}
                if thought:
                    message["thinking"] = thought
                yield {"message": message, "done": False}
            for fragment in delta.get("tool_calls") or []:
                size += _add_fragment(calls, fragment)
                if len(calls) > MAX_CALLS_ACCEPTED or size > MAX_TURN_ARGUMENTS:
                    raise OpenAIModelError(
                        PAST_MAX_CALLS_ACCEPTED
                        if len(calls) > MAX_CALLS_ACCEPTED
                        else ARGUMENTS_TOO_LONG
                    )
            finish_reason = choice.get("finish_reason") or finish_reason
    except DeadlineExceeded:
        if finish_reason is None:
            raise
        # subtle: the turn was whole; the loop keeps it and runs none of its tools.
    if finish_reason is None:
        return  # subtle: no done chunk, so the loop stops with incomplete_model_turn
    final = {
        "message": {"role": "assistant", "content": ""},
        "done": True,
        "done_reason": "length" if finish_reason == "length" else "stop",
        "finish_reason": finish_reason,  # the wire's own word, kept for the curious
    }
    if calls:
        final["message"]["tool_calls"] = [_complete_call(calls[i]) for i in sorted(calls)]
    if isinstance(usage, dict):
        for ours, theirs in USAGE_COUNTERS.items():
            count = usage.get(theirs)
            # subtle: a count a recording can hold, or none: a hostile server's 10**400
            # would be saved as null, and its replay then differ from the recording
            if isinstance(count, int) and abs(count) < LARGEST_NUMBER:
                final[ours] = count
    yield final


def _choice(event):
    """(choice, delta) of an event's first choice; empty dicts for a usage-only event."""
    choices = event.get("choices") or []
    choice = choices[0] if isinstance(choices, list) and choices else {}
    delta = (choice.get("delta") or {}) if isinstance(choice, dict) else None
    if not isinstance(choices, list) or not isinstance(delta, dict):
        raise OpenAIModelError(MALFORMED_EVENT.format(detail=f"{event!r:.200}"))
    if not isinstance(delta.get("tool_calls") or [], list):
        raise OpenAIModelError(MALFORMED_EVENT.format(detail=f"tool_calls in {event!r:.200}"))
    return choice, delta


def _add_fragment(calls, fragment):
    """Add one streamed piece of a tool call to `calls` (index -> call under assembly);
    return how many characters of arguments it brought."""
    if not isinstance(fragment, dict) or not isinstance(fragment.get("function", {}), dict):
        raise OpenAIModelError(MALFORMED_EVENT.format(detail=f"tool call {fragment!r:.200}"))
    index = fragment.get("index")
    if index is not None and (isinstance(index, bool) or not isinstance(index, int)):
        raise OpenAIModelError(MALFORMED_EVENT.format(detail=f"tool call index {index!r:.50}"))
    if index is None:
        # Without `index`, a fragment with a new id starts a call (some send "id": "" after).
        starts = bool(fragment.get("id")) or not calls
        index = len(calls) if starts else max(calls)
    call = calls.setdefault(index, {"name": None, "pieces": []})
    function = fragment.get("function") or {}
    name = function.get("name")
    if name and not isinstance(name, str):
        raise OpenAIModelError(MALFORMED_EVENT.format(detail=f"tool call name {name!r:.50}"))
    if name and call["name"] is None:
        call["name"] = name
    elif name and name != call["name"]:
        # subtle: some servers repeat the whole name in every fragment (kept once); others
        # split it ("read_", "file"), and the pieces make the name
        call["name"] += name
    piece = function.get("arguments")
    if piece:
        if not isinstance(piece, str):
            raise OpenAIModelError(MALFORMED_EVENT.format(detail=f"arguments {piece!r:.200}"))
        call["pieces"].append(piece)  # joined once at the end: linear in the stream
        return len(piece)
    return 0


def _complete_call(call):
    """The call in the loop's shape; arguments a dict, or the raw text if it is not one."""
    text = "".join(call["pieces"])
    arguments = {}  # some servers send no arguments at all for a call without parameters
    if text.strip():
        try:
            arguments = json.loads(text)
        except json.JSONDecodeError:
            arguments = text
        if not isinstance(arguments, dict):
            # The raw text goes on, so the tools' guard can tell the model what to fix.
            arguments = text
    return {"function": {"name": call["name"], "arguments": arguments}}


def error_text(error):
    """The text of a server's `error` value: its `message`, else the whole of it."""
    if isinstance(error, dict):
        return str(error.get("message") or json.dumps(error))
    return str(error)


def call_id(turn, k):
    """The id of call `k` (from 0) of assistant message `turn` (from 1): the same every time.

    subtle: nine letters and digits, because Mistral chat templates (in llama-server with
    --jinja, and in vLLM) reject any other tool-call id.
    """
    return f"t{turn:04d}c{k:03d}"


def request_body(model, messages, tools, sampling=SAMPLING):
    """The chat-completions request for the loop's Ollama-shaped `messages`.

    Assistant calls get ids from their position, `"type": "function"` and their arguments
    as JSON text; each tool message gets the id of the matching call, paired in order.
    Thinking is not sent back, and `content` is never null.
    """
    converted, pending, turn = [], [], 0
    for message in messages:
        role = message["role"]
        if role == "assistant":
            turn += 1
            # subtle: some servers reject "content": null on an assistant message.
            out = {"role": "assistant", "content": message.get("content") or ""}
            calls = message.get("tool_calls")
            if calls:
                pending = [call_id(turn, k) for k in range(len(calls))]
                out["tool_calls"] = [
                    {
                        "id": pending[k],
                        "type": "function",
                        "function": {
                            "name": call["function"].get("name") or "",
                            "arguments": _arguments_text(call["function"].get("arguments")),
                        },
                    }
                    for k, call in enumerate(calls)
                ]
            converted.append(out)
        elif role == "tool":
            if not pending:
                raise ValueError("a tool message follows no unanswered tool call")
            converted.append(
                {"role": "tool", "tool_call_id": pending.pop(0), "content": message["content"]}
            )
        else:
            converted.append({"role": role, "content": message.get("content") or ""})
    body = {"model": model, "messages": converted, "stream": True, **sampling}
    body["stream_options"] = dict(STREAM_OPTIONS)
    if tools:  # an empty list is refused by some servers; no tools means no key
        body["tools"] = list(tools)
    return body


def _arguments_text(arguments):
    """A call's arguments as JSON text that is always valid JSON."""
    if isinstance(arguments, dict):
        return json.dumps(arguments, ensure_ascii=False)
    if isinstance(arguments, str):
        try:
            if isinstance(json.loads(arguments), dict):
                return arguments
        except json.JSONDecodeError:
            pass
    # subtle: llama-server refuses the whole request (HTTP 500) when a call sent back has
    # invalid JSON arguments. The tool result beside it already told the model what was wrong.
    return "{}"
