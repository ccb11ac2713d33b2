"""What the model was sent, and what it streamed back: `replay.py --transcript` and `--chunks`.

The loop only appends to its conversation, so each request is the one before plus a few
new messages. The turn-by-turn view (`--transcript`) prints a request where the turn
starts, as "N messages: the first M as in request K-1, then:" and only the new messages,
a tool's result shown as the text it holds. `--transcript=full` prints every request whole
after the run, as close to the wire as the recording's API allows. `--chunks N` prints turn
N's chunks one per line, as the adapter handed them to the loop.

Not here: running anything. replay.py calls these at the right moments.
"""

import json

from harness.console import plural
from plumbing.openai_wire import SAMPLING, request_body

INDENT = "    "


def request_lines(number, messages, previous):
    """Request `number`, showing only what is new since `previous` (the request before it)."""
    same = len(previous) if previous and messages[: len(previous)] == previous else 0
    if same:
        head = f"the first {same} as in request {number - 1}, then:"
    else:
        head = "all of them new:" if number == 1 else f"not request {number - 1} continued:"
    lines = [f"--- request {number}: {len(messages)} messages, {head} ---"]
    for message in messages[same:]:
        lines += message_lines(message)
    return lines


def message_lines(message):
    """One message as a learner reads it: whose it is, then its text as text."""
    role = message.get("role", "?")
    if role == "tool":
        return [f"  tool result of {message.get('tool_name', '?')}:", *result_lines(message)]
    lines = []
    for key in ("thinking", "content"):
        if message.get(key):
            label = f"{role} (thinking)" if key == "thinking" else role
            lines += [f"  {label}:", *block(message[key])]
    for call in message.get("tool_calls") or []:
        function = call.get("function", {})
        arguments = json.dumps(function.get("arguments"), ensure_ascii=False)
        lines.append(f"  {role} asks for: {function.get('name')} {arguments}")
    return lines or [f"  {role}: (empty)"]


def result_lines(message):
    """A tool result's fields, each text field as its own lines rather than one escaped string.

    subtle: the content is the JSON text the model read; shown decoded, `\\"` becomes `"`."""
    content = message.get("content", "")
    try:
        result = json.loads(content)
    except (TypeError, ValueError):
        return block(str(content))
    if not isinstance(result, dict):
        return block(content)
    lines = []
    for key, value in result.items():
        if isinstance(value, str) and "\n" in value:
            lines += [f"{INDENT}{key}:", *block(value, INDENT * 2)]
        else:
            lines.append(f"{INDENT}{key}: {json.dumps(value, ensure_ascii=False)}")
    return lines


def block(text, indent=INDENT):
    return [indent + line if line else "" for line in str(text).splitlines()] or [indent]


class ChunkLog:
    """A chat that keeps the chunks it hands to the loop, call by call (for `--chunks N`).

    Given `shown` (a model call's number) and `say` (prints a line), it prints that call's
    chunks as the call begins, before the loop shows anything of its turn: on the wire the
    chunks come first, and the turn's thinking and text are what the loop made of them.

    subtle: these are the chunks after the adapter's assembly: for an OpenAI-compatible
    recording that is what `chunks_from_events` made of the raw events, as the loop saw it.
    A replay's chunks are all recorded, so the shown call is read whole first; an error the
    recording holds is raised after its chunks, where the loop met it when it was recorded.
    """

    def __init__(self, chat, shown=None, say=None):
        self.chat, self.calls, self.shown, self.say = chat, [], shown, say

    def __call__(self, messages, tools):
        kept = []
        self.calls.append(kept)
        stream = self.chat(messages, tools)
        if len(self.calls) != self.shown:
            for chunk in stream:
                kept.append(chunk)
                yield chunk
            return
        error = None
        try:
            kept.extend(stream)
        except Exception as failed:  # a recorded error: raised again after its chunks
            error = failed
        for line in chunk_lines(self.shown, self.calls):
            self.say(line)
        yield from kept
        if error is not None:
            raise error


def chunk_lines(number, calls):
    """Turn `number`'s chunks (`calls`: a ChunkLog's), one JSON object a line, as they came."""
    if not 1 <= number <= len(calls):
        made = plural(len(calls), "model call")
        return [f"--- no turn {number} to show: this replay made {made} ---"]
    chunks = calls[number - 1]
    lines = [f"--- turn {number}: its {len(chunks)} chunks, as the adapter handed them over ---"]
    return lines + [INDENT + json.dumps(c, ensure_ascii=False) for c in chunks]


def full_request_lines(recording, requests, schemas):
    """Every request whole, after the run: the exact view (`--transcript=full`)."""

    def shown(value):
        return json.dumps(value, indent=2, ensure_ascii=False).splitlines()

    if recording.get("api") == "openai":
        name, options = recording["model"].get("name", "?"), recording["model"].get("options")
        sampling = options if isinstance(options, dict) else SAMPLING  # --max-tokens as recorded
        lines = []
        for number, messages in enumerate(requests, 1):
            lines.append(f"--- request {number}: the body of POST /chat/completions ---")
            lines += shown(request_body(name, messages, schemas, sampling))
        return lines
    lines = ["--- the tool schemas, sent with every request ---", *shown(schemas)]
    for number, messages in enumerate(requests, 1):
        lines.append(
            f"--- request {number}: {len(messages)} messages, as the loop passed them to the "
            "adapter (the SDK leaves out empty fields) ---"
        )
        lines += shown(messages)
    return lines
