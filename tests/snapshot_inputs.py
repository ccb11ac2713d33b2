"""What the lab makes of odd inputs, one line per input, for tests/snapshots.py.

Each corpus is built here, deterministically (fixed seeds, no clock, no path of this
machine), and each input's outcome is one line: what the code returned, or the error it
raised. The tests of each module pin the cases that matter by name; these catch a change to
any other case:

- a shipped recording damaged at each of its fields, in each of a few ways -> load()'s
  verdict (accepted, or the one line of its RecordingError);
- seeded random OpenAI-wire event streams -> the chunks chunks_from_events assembles, or
  its error; Server-Sent Events framings -> the events sse_events reads;
- seeded random texts mixing prose, JSON calls, fences and tool_code blocks ->
  text_tool_call's answer;
- conversations -> request_body's JSON.
"""

import json
import random
import tempfile
from pathlib import Path

from harness.recording import RECORDINGS, load
from harness.recording_checks import RecordingError
from openai_model import chunks_from_events, request_body, sse_events
from plumbing.text_calls import text_tool_call
from repo_tools import RepoTools

DAMAGES = {
    "removed": None,  # the field is deleted
    "null": None,
    "-1": -1,
    "0": 0,
    "1": 1,
    "true": True,
    "1.5": 1.5,
    "text": "x",
    "list": [],
    "object": {},
}


def outcome_of(make):
    """`make()`'s value as one line of JSON, or its exception as `ExceptionName: text`."""
    try:
        value = make()
        if hasattr(value, "__next__"):
            value = list(value)
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=repr)
    except Exception as error:  # noqa: BLE001 - every exception is part of the outcome
        return f"{type(error).__name__}: {error}"


def requests_of(recording):
    """The messages of each request the run sent, rebuilt from the final conversation."""
    return [recording["messages"][: c["request_length"]] for c in recording["model_calls"]]


def _places(data):
    """(label, container, key) of each field worth damaging: every top-level field, each
    field of the objects under it, and the fields of the first event of each type, of the
    first model call and of the first message of each role."""
    places = [(key, data, key) for key in data]
    for key, value in data.items():
        if isinstance(value, dict):
            places += [(f"{key}.{k}", value, k) for k in value]
            for k, inner in value.items():
                if isinstance(inner, dict):
                    places += [(f"{key}.{k}.{j}", inner, j) for j in inner]
    firsts = {}
    for name in ("events", "messages", "model_calls"):
        for number, item in enumerate(data.get(name) or []):
            kind = item.get("type") or item.get("role") or "call"
            if (name, kind) not in firsts:
                firsts[name, kind] = number
                places += [(f"{name}[{number}].{k}", item, k) for k in item]
    return places


def _smaller(shipped):
    """The shipped recording with each model call cut to its first two chunks: every field
    is still there, and the thousands of damaged copies load quicker."""
    data = json.loads((RECORDINGS / shipped).read_text(encoding="utf-8"))
    for call in data["model_calls"]:
        for key in ("chunks", "events", "arrived"):
            if key in call:
                call[key] = call[key][:2]
    return json.dumps(data)


def damaged(shipped, within=("",)):
    """(label, damage, JSON text) of the shipped recording damaged at each place whose label
    starts with one of `within`, each way."""
    data = json.loads(_smaller(shipped))
    for label, container, key in _places(data):
        if not label.startswith(within):
            continue
        # one copy, each damage made and then undone (the container's keys put back in
        # their order): not the recording read again for each of the ten
        kept = list(container.items())
        for damage, value in DAMAGES.items():
            if damage == "removed":
                del container[key]
            else:
                container[key] = value
            yield label, damage, json.dumps(data)
            container.clear()
            container.update(kept)


# The repair recording at every place; the live OpenAI-wire one where it differs from it.
DAMAGED_FROM = {"repair.json": ("",), "smollm2-135m-live.json": ("api", "model", "model_calls")}


def damaged_recordings():
    """One line per (field, damage): load()'s error, path left out; or, for a copy load()
    accepts, that every display the CLIs make of it was shown, or which one raised what."""
    from tests.snapshots import every_display  # that module imports this one

    lines = []
    with tempfile.TemporaryDirectory() as folder:
        target = Path(folder) / "damaged.json"
        for shipped, within in DAMAGED_FROM.items():
            for label, damage, text in damaged(shipped, within):
                target.write_text(text, encoding="utf-8")
                try:
                    recording = load(target)
                except RecordingError as error:
                    lines.append(
                        f"{shipped} {label} {damage}: {str(error).replace(str(target), 'FILE')}"
                    )
                    continue
                said = "accepted, every display shown"
                for name, show in every_display(recording).items():
                    try:
                        show()
                    except Exception as error:  # noqa: BLE001 - any exception is the finding
                        said = f"accepted, but {name} raised {type(error).__name__}: {error}"
                        break
                lines.append(f"{shipped} {label} {damage}: {said}")
    return lines


def _fragment(rng):
    function = {}
    if rng.random() < 0.7:
        function["name"] = rng.choice(["read_file", "read_", "file", "run_tests", "", 7])
    if rng.random() < 0.8:
        function["arguments"] = rng.choice(
            ['{"path": "a.py"}', '{"pa', 'th": "b.py"}', "", "[1]", "{}", "not json", 3]
        )
    fragment = {"function": function}
    if rng.random() < 0.7:
        fragment["index"] = rng.choice([0, 0, 1, 2, None, "0", True])
    if rng.random() < 0.4:
        fragment["id"] = rng.choice(["c1", "c2", None])
    return rng.choice([fragment] * 12 + ["junk", {"function": "f"}])


def _event(rng):
    delta = {}
    roll = rng.random()
    if roll < 0.3:
        delta["content"] = rng.choice(["Hel", "lo", "", "é✓", None])
    elif roll < 0.45:
        delta[rng.choice(["reasoning_content", "reasoning"])] = rng.choice(["hm", "", "so"])
    elif roll < 0.75:
        delta["tool_calls"] = [_fragment(rng) for _ in range(rng.choice([1, 1, 2]))]
    elif roll < 0.8:
        delta["tool_calls"] = rng.choice([{"index": 0}, "x"])
    choice = {"delta": delta}
    if rng.random() < 0.2:
        choice["finish_reason"] = rng.choice(["stop", "length", "tool_calls", None])
    event = {"choices": [choice]}
    roll = rng.random()
    if roll < 0.05:
        event = {"choices": [], "usage": {"prompt_tokens": 11, "completion_tokens": 5}}
    elif roll < 0.08:
        event = {"error": rng.choice([{"message": "overloaded"}, {"code": 5}, "busy"])}
    elif roll < 0.1:
        event = rng.choice([[1], "text", {"choices": "x"}, {"choices": [{"delta": 3}]}])
    return event


def random_streams(count=400, seed=20261201):
    """One line per seeded random stream: its events' seed, then the chunks or the error."""
    rng = random.Random(seed)
    lines = []
    for number in range(count):
        events = [_event(rng) for _ in range(rng.randint(0, 8))]
        if rng.random() < 0.6:  # most streams end as a server ends them
            finish = rng.choice(["stop", "tool_calls", "length"])
            events.append({"choices": [{"delta": {}, "finish_reason": finish}]})
        if rng.random() < 0.3:
            events.append({"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 2}})
        lines.append(f"stream {number}: {json.dumps(events, ensure_ascii=False)}")
        lines.append(f"  -> {outcome_of(lambda events=events: chunks_from_events(events))}")
    return lines


SSE_FRAMINGS = [
    [b"data: {}\n", b"\n"],
    [b'data: {"a":\n', b"data: 1}\n", b"\n"],
    [b"data:{}\r\n", b"\r\n", b"data: [DONE]\n", b"\n", b"data: {}\n", b"\n"],
    [b": a comment\n", b"event: x\n", b"data: {}\n", b"\n"],
    [b'error: {"message": "slot busy"}\n', b"\n"],
    [b"data: {}\n"],
    [b"data: [DONE]"],
    [b"data: not json\n", b"\n"],
    [b"\n", b"\n", b"data:  {}\n", b"\n"],
    [b"id: 3\n", b"retry: 10\n", b"\n"],
    [b"data: \xff\n", b"\n"],
]


def sse_framings():
    return [
        f"{lines!r} -> {outcome_of(lambda lines=lines: sse_events(lines))}"
        for lines in SSE_FRAMINGS
    ]


TEXT_PIECES = [
    "I will read the file.",
    '{"name": "read_file", "arguments": {"path": "path_rules.py"}}',
    '{"name": "read_file", "parameters": {"path": "a.py"}}',
    '{"name": "run_tests"}',
    '{"name": "run_tests", "why": "check"}',
    '{"name": "delete_all", "arguments": {}}',
    '{"name": "replace_text", "arguments": {"old": "a", "new": "b"}}',
    '{"name": "read_file", "arguments": "path_rules.py"}',
    '{"name": "read_file", "arguments": {"n": 1e400, "m": [1, {"k": null}]}}',
    "```json\n",
    "```\n",
    "```tool_code\nread_file(path='x.py')\n```",
    "```tool_code\nrun_tests()\n```",
    "```tool_code\nprint(read_file(path=b'x', extra={1, 2}))\n```",
    "```tool_code\nread_file('positional')\n```",
    "```tool_code\nimport os\n```",
    "<tool_call>",
    "</tool_call>",
    "{",
    "}",
    '{"name": "read_file"',
    "\n",
    "  ",
    "the read_file tool",
]


def written_calls(count=400, seed=1201):
    """One line per seeded random text: the text, then what text_tool_call finds in it."""
    rng = random.Random(seed)
    lines = []
    for number in range(count):
        text = "".join(rng.choice(TEXT_PIECES) for _ in range(rng.randint(1, 4)))
        found = outcome_of(lambda text=text: text_tool_call(text, RepoTools.schemas))
        lines += [f"text {number}: {json.dumps(text, ensure_ascii=False)}", f"  -> {found}"]
    return lines


CONVERSATIONS = [
    [{"role": "system", "content": "s"}, {"role": "user", "content": None}],
    [
        {"role": "user", "content": "u"},
        {"role": "assistant", "content": None, "thinking": "t", "tool_calls": [
            {"function": {"name": "read_file", "arguments": {"path": "é.py"}}},
            {"function": {"arguments": "not json"}},
            {"function": {"name": "run_tests", "arguments": '{"a": 1}'}},
            {"function": {"name": "run_tests", "arguments": "[1]"}},
            {"function": {"name": "x", "arguments": 3}},
        ]},
        {"role": "tool", "content": "r1"},
        {"role": "tool", "content": "r2"},
        {"role": "assistant", "content": "done"},
        {"role": "assistant", "tool_calls": [{"function": {"name": "a", "arguments": {}}}]},
        {"role": "tool", "content": "r3"},
    ],
    [{"role": "tool", "content": "an answer to nothing"}],
]  # fmt: skip


def request_bodies():
    lines = []
    for number, messages in enumerate(CONVERSATIONS):
        for tools in (RepoTools.schemas[:1], []):
            made = outcome_of(lambda m=messages, t=tools: request_body("m", m, t))
            lines.append(f"conversation {number} with {len(tools)} tools -> {made}")
    return lines


# file name -> the function that makes its lines
INPUTS = {
    "damaged-recordings.txt": damaged_recordings,
    "openai-streams.txt": lambda: random_streams() + sse_framings(),
    "written-calls.txt": written_calls,
    "request-bodies.txt": request_bodies,
}
