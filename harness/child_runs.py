"""What a recording keeps of a child run (--explorer's, extensions/explorer.py), and how the
terminal, replay and the page read it.

A child run is kept whole in the decision of the call that started it:

    {"extension": "explorer", "call": 2, "decision": "explored", "said": "...",
     "run": {"question": "...", "messages": [...], "model_calls": [...], "stop": {...}}}

Its `model_calls` are the parent's shape (harness/chats.py), their `request_length`
indexing the child's own `messages`; they are not among the parent's `model_calls`, so every
count of the parent's requests and tokens leaves them out, and the page counts them apart
(harness/page.py). load() checks the shape (harness/recording_checks.py).

Not here: running a child (extensions/explorer.py), comparing it (a replay compares the
whole decision: harness/divergence.py).
"""

import json

from harness.chats import RecordingChat, ReplayChat
from plumbing.openai_wire import chunks_from_events

EXPLORER, EXPLORED, CHILD = "explorer", "explored", "run"  # its extension, decision and key
RUN_KEYS = {"question", "messages", "model_calls", "stop"}


def summary(run):
    """The decision's words: what the child did, in one line (the terminal's and the page's)."""
    calls = [m for m in run["messages"] if m.get("role") == "assistant"]
    asked = [c.get("function") or {} for m in calls for c in m.get("tool_calls") or []]
    shown = [f"{f.get('name')} {_first_argument(f.get('arguments'))}"[:60] for f in asked[:4]]
    more = f" and {len(asked) - 4} more" if len(asked) > 4 else ""
    calls = f"{len(asked)} call{'s' * (len(asked) != 1)}"
    reads = f"{calls} ({', '.join(shown)}{more})" if asked else "no tool call"
    answer = sizes(run)[1]
    requests = len(run["model_calls"])
    return (f"{requests} request{'s' * (requests != 1)}, {reads}; stopped: "
            f"{run['stop']['reason']}; answer of {answer:,} characters")  # fmt: skip


def sizes(run):
    """(characters of the tool results the child read, characters of its answer): what it
    read that its parent never held, against what the parent got. Content that is no text
    (a hand-edited recording's: load() checks a child run's shape, not what it holds) counts
    as none."""
    read = sum(_characters(m) for m in run["messages"] if m.get("role") == "tool")
    last = run["messages"][-1] if run["messages"] else {}
    return read, _characters(last) if last.get("role") == "assistant" else 0


def _characters(message):
    content = message.get("content")
    return len(content) if isinstance(content, str) else 0


def kept_run(question, loop, chat, stop):
    """The child run as its decision keeps it: the question, the conversation (`loop`'s),
    the model calls (`chat`'s) and the stop, without a cut turn's `seconds`, a timing that
    no replay could give again."""
    stopped = {k: v for k, v in stop.items() if k in ("type", "turn", "reason", "error")}
    return {"question": question, "messages": loop.messages, "model_calls": chat.calls,
            "stop": stopped}  # fmt: skip


def _first_argument(arguments):
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return arguments[:40]
    values = list(arguments.values()) if isinstance(arguments, dict) else []
    return json.dumps(values[0], ensure_ascii=False)[:40] if values else ""


def live_children(recorder):
    """`children` for a live run: each child its own RecordingChat of the parent's model,
    keeping its calls apart from the parent's (`recorder`: the parent's RecordingChat, which
    lists them for the status line, harness/live_status.py)."""

    def child(call):
        recorder.children.append(RecordingChat(recorder.source, recorder.assemble))
        return recorder.children[-1]

    return child


def recorded_children(decisions, api="ollama"):
    """`children` for a replay: the child run kept with the decision about that call, played
    back (a call over the OpenAI wire, `api`, assembled again from its raw events); none kept
    there (a replay that went another way): no call to play, so the child stops with a model
    error and the decision differs."""
    runs = {d["call"]: d[CHILD] for d in decisions if CHILD in d}

    def child(call):
        return ReplayChat(runs.get(call, {}).get("model_calls", []), chunks_from_events, api)

    return child
