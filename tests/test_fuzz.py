"""A seeded, reproducible fuzz test of the loop's invariants over thousands of random streams.

Each seed builds a short conversation of random turns: content, thinking and tool calls
split over random chunks; sometimes truncated, with `done` missing, repeated or cut by
`length`; sometimes an exception or a junk value in the middle. Whatever happens, the loop
must hold its promises (see `check`): no tool runs from a turn that was not whole, and every
call of a whole turn runs. A second fuzz (`check_fragments`) does the same for the OpenAI
wire's assembler: random calls whose argument strings are cut at random places, fragments
of several calls interleaved, and hostile fragments. A failure names its seed;
`check(seed)` or `check_fragments(seed)` replays it.
"""

import json
import random

import pytest

from agent_loop import MODEL_START, STOPPED, TASK, TOOL_RESULT, TOOL_START, agent_events
from openai_model import OpenAIModelError, chunks_from_events
from tests.scripted_model import ScriptedChat
from tool_guard import ToolBox, function_schema

SEEDS = range(10000)
JUNK = [
    "text",
    7,
    None,
    ["list"],
    {"message": "no"},
    {"message": {"content": 5}},
    {"message": {"thinking": [1]}},
    {"message": {"tool_calls": "read"}},
    {"message": {"tool_calls": [7]}},
]
ARGUMENTS = [{}, {"text": "hi"}, {"text": 3}, {"x": "y"}, "{", '{"text": "a"}', None, [1], 2]


class CountingTools(ToolBox):
    """Two harmless tools that log each run, so a test can see exactly what ran."""

    schemas = [
        function_schema("echo", "Echo the text back.", {"text": "Text to echo"}),
        function_schema("ping", "Answer pong.", {}),
    ]

    def __init__(self):
        self.ran = []

    def handlers(self):
        return {"echo": self.echo, "ping": self.ping}

    def echo(self, text):
        self.ran.append("echo")
        return {"text": text}

    def ping(self):
        self.ran.append("ping")
        return {"pong": True}


def random_turn(rng):
    """(chunks, facts): one random stream and what a correct loop may do with it."""
    calls = [
        {"function": {"name": rng.choice(["echo", "ping", "nope", None, 3]),
                      "arguments": rng.choice(ARGUMENTS)}}
        for _ in range(rng.choice([0, 0, 1, 2, 3]))
    ]  # fmt: skip
    pieces = [("content", "c" * rng.randint(1, 3)) for _ in range(rng.randint(0, 4))]
    pieces += [("thinking", "t") for _ in range(rng.randint(0, 3))]
    pieces += [("tool_calls", [c]) for c in calls]
    rng.shuffle(pieces)
    chunks = [
        {"message": {"role": "assistant", key: value}, "done": False} for key, value in pieces
    ]
    reason = rng.choice(["stop", "stop", "stop", "length", None])
    done = {"message": {"role": "assistant", "content": ""}, "done": True, "done_reason": reason}
    ending = rng.random()
    if ending < 0.6:
        chunks.append(done)
    elif ending < 0.7:
        chunks += [done, dict(done, done_reason="stop")]  # a repeated done
    elif ending < 0.8 and chunks:
        chunks = chunks[: rng.randrange(len(chunks))]  # truncated, no done
    broken = rng.random() < 0.15
    if broken:
        bad = rng.choice(JUNK + [ConnectionResetError("cut"), ValueError("bad line")])
        chunks.insert(rng.randint(0, len(chunks)), bad)
    dones = [c for c in chunks if isinstance(c, dict) and c.get("done") is True]
    # subtle: anything after the first done (a repeated done) ends the turn as model_error.
    complete = len(dones) == 1 and chunks[-1] is dones[0]
    runnable = not broken and complete and dones[0]["done_reason"] != "length"
    return chunks, {"calls": len(calls), "runnable": runnable}


def check(seed):
    rng = random.Random(seed)
    max_turns = rng.randint(1, 4)
    turns = [random_turn(rng) for _ in range(rng.randint(1, 5))]
    chat, tools = ScriptedChat([chunks for chunks, _ in turns]), CountingTools()
    events = list(agent_events(chat, tools, TASK, max_turns=max_turns))

    stops = [e for e in events if e["type"] == STOPPED]
    assert len(stops) == 1 and events[-1] is stops[0], "exactly one stop, last"
    assert len(chat.requests) <= max_turns, "at most max_turns requests"
    starts = [(e["turn"], e["index"]) for e in events if e["type"] == TOOL_START]
    results = [(e["turn"], e["index"]) for e in events if e["type"] == TOOL_RESULT]
    assert starts == results, "each tool_start has one tool_result, in order"
    for turn in {t for t, _ in starts}:
        facts = turns[turn - 1][1]
        assert facts["runnable"], f"a tool ran from turn {turn}, which was not complete"
        assert sum(t == turn for t, _ in starts) == facts["calls"], "every call ran once"
    reached = min(sum(e["type"] == MODEL_START for e in events), len(turns))
    for turn in range(1, reached + 1):
        facts = turns[turn - 1][1]
        if facts["runnable"]:  # a whole turn: every one of its calls runs
            assert sum(t == turn for t, _ in starts) == facts["calls"], f"turn {turn} ran no tool"
    for number, request in enumerate(chat.requests[1:], 2):
        sent_back = sum(m["role"] == "tool" for m in request)
        assert sent_back == sum(t < number for t, _ in results), "one tool message per result"
    results_ok = [e for e in events if e["type"] == TOOL_RESULT and "error" not in e["result"]]
    assert len(tools.ran) == len(results_ok), "a tool ran exactly when its result says so"


def test_loop_invariants_hold_on_thousands_of_random_streams():
    for seed in SEEDS:
        try:
            check(seed)
        except Exception as error:  # report the seed, so the case can be replayed
            pytest.fail(f"fuzz seed {seed}: {error!r}; replay with test_fuzz.check({seed})")


def test_bad_max_turns_is_the_only_exception():
    for bad in (0, -3, True, 2.0, "2", None):
        with pytest.raises(ValueError):
            agent_events(ScriptedChat([]), CountingTools(), TASK, max_turns=bad)


# --- the OpenAI wire's fragment assembler --------------------------------------------------------

NAMES = ["read_file", "run_tests", "replace_text"]
VALUES = ["path_rules.py", 'a "quoted" \\ path', "\u00e9\u4e2d\U0001f600", "", "x" * 40, "\\u0041"]
HOSTILE = [
    {"index": "1", "function": {"arguments": "{}"}},  # a text index
    {"index": True, "function": {"arguments": "{}"}},  # a bool index
    {"index": 1.5, "function": {"arguments": "{}"}},
    {"index": 0, "function": "read_file"},  # function not an object
    {"index": 0, "function": {"arguments": {"path": "x"}}},  # arguments not text
    "fragment",
    7,
]


def fragment_event(fragment):
    return {"choices": [{"index": 0, "delta": {"tool_calls": [fragment]}, "finish_reason": None}]}


def random_fragments(rng):
    """(events, calls): random calls cut into fragments at random places, interleaved."""
    calls = []
    for _ in range(rng.randint(0, 4)):
        keys = rng.sample(["path", "old", "new"], rng.randint(0, 3))
        arguments = {key: rng.choice(VALUES) for key in keys}
        calls.append({"name": rng.choice(NAMES), "arguments": arguments})
    queues = []
    for index, one in enumerate(calls):
        text = json.dumps(one["arguments"], ensure_ascii=rng.random() < 0.5)
        cuts = sorted(rng.sample(range(1, len(text)), min(len(text) - 1, rng.randint(0, 6))))
        pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
        first = {"index": index, "id": f"c{index}", "type": "function",
                 "function": {"name": one["name"], "arguments": ""}}  # fmt: skip
        queues.append([first] + [{"index": index, "function": {"arguments": p}} for p in pieces])
    events = []
    while any(queues):  # interleave: each step takes the next fragment of a random call
        queue = rng.choice([q for q in queues if q])
        events.append(fragment_event(queue.pop(0)))
        if rng.random() < 0.2:
            events.append({"choices": [{"delta": {"content": "c"}, "finish_reason": None}]})
    return events, calls


def check_fragments(seed):
    rng = random.Random(seed)
    events, calls = random_fragments(rng)
    hostile = rng.random() < 0.3
    if hostile:
        events.insert(rng.randint(0, len(events)), fragment_event(rng.choice(HOSTILE)))
    after_the_end = rng.random() < 0.1
    events.append({"choices": [{"delta": {}, "finish_reason": "tool_calls"}]})
    if after_the_end:
        events.append(fragment_event({"index": 0, "function": {"arguments": "{}"}}))
    try:
        chunks = list(chunks_from_events(iter(events)))
    except OpenAIModelError:
        assert hostile or after_the_end, "a valid stream was refused"
        return
    assert not after_the_end, "a fragment after the finish_reason was accepted"
    final = chunks[-1]
    assert final["done"] is True and all(c["done"] is False for c in chunks[:-1])
    got = final["message"].get("tool_calls", [])
    if not hostile:
        want = [{"function": {"name": c["name"], "arguments": c["arguments"]}} for c in calls]
        assert got == want, "the calls were not reassembled exactly"


def test_fragment_assembly_holds_on_thousands_of_random_streams():
    for seed in range(3000):
        try:
            check_fragments(seed)
        except Exception as error:  # report the seed, so the case can be replayed
            replay = f"test_fuzz.check_fragments({seed})"
            pytest.fail(f"fragment fuzz seed {seed}: {error!r}; replay with {replay}")
