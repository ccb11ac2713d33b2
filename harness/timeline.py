"""Where a run's time went, one line per turn: model time and tool time as plain-text bars.

    turn 1  model ######....   1.52s | tools #.........   0.31s  read_file
    total   model 4.10s · tools 1.02s

`timeline(events)` builds those lines from the loop's events (the `seconds` of each
`model_done` and `tool_result`, and of a `stopped` that cut a model turn off); the bars are
scaled to the longest span. With `recorded=`, each figure reads today/recorded, so a replay
shows today's timings beside the recording's without judging them. With `decisions=` (an
`extensions` field's: harness/decisions.py), the seconds you took to answer `--approve`
are taken out of the tools' time, where the loop's clock put them, and shown apart:

    turn 2  model ####......   1.52s | tools ..........   0.01s  replace_text · you 24.49s
    total   model 4.10s · tools 1.02s · you deciding 24.49s

With `model_info=` (a recording's `model`, or what the recorder read from the server), it also
shows how the conversation grew: the prompt tokens of each request (the model's own
`prompt_eval_count`) against the context window that was asked for (`num_ctx`), and one
warning line when a request came within 10% of it. Ollama then drops the oldest messages
without a word, so the model works on a conversation the transcript no longer shows.

Not here: colour or terminal control codes. The bars are ASCII, so they survive a pipe,
a log file, `NO_COLOR` and a narrow terminal (the bars shrink to fit `width`; from 50
columns on, every line fits, except the context warning, which stays one whole sentence).
"""

import shutil

from agent_loop import MODEL_DONE, MODEL_START, STOPPED, TOOL_RESULT
from harness.decisions import deciding
from plumbing.limits import LARGEST_NUMBER

BARS_FROM = 0.01  # seconds: below this longest span a bar shows noise, not time
NEAR_CONTEXT = 0.9  # a request at least this full of the window is about to lose messages


def per_turn(events, decisions=None):
    """{turn: {"model": seconds, "tools": seconds, "names": [...], "you": seconds}} in turn
    order; `you`: the seconds people took to decide about its calls (see decisions.deciding),
    which are not the tools'."""
    turns, you = {}, deciding(events, decisions)
    for event in events:
        if event["type"] not in (MODEL_START, MODEL_DONE, TOOL_RESULT, STOPPED):
            continue
        if event["type"] == STOPPED and event.get("seconds") is None:
            continue  # the stop did not cut a model turn off
        turn = turns.setdefault(event["turn"], {"model": None, "tools": 0.0, "names": []})
        if event["type"] == MODEL_DONE:
            turn["model"] = event.get("seconds", 0.0)
        elif event["type"] == STOPPED:  # the turn was cut off: its time counts all the same
            turn["model"] = event["seconds"]
            turn["names"].append(f"(model turn cut off: {event['reason']})")
        elif event["type"] == TOOL_RESULT:
            turn["tools"] += event.get("seconds", 0.0)
            turn["names"].append(str(event["name"]))
    for number, turn in turns.items():
        turn["you"] = you.get(number, 0.0)
        turn["tools"] = max(0.0, turn["tools"] - turn["you"])
    return turns


def _bar(seconds, scale, width):
    if scale < BARS_FROM:
        return ""  # subtle: full bars for 0.00 s read as "this took all the time"
    filled = round(width * seconds / scale) if scale else 0
    return "#" * min(filled, width) + "." * (width - min(filled, width))


def _figure(seconds, recorded):
    if seconds is None:
        return "  (incomplete)"
    text = f"{seconds:6.2f}s"
    return text if recorded is None else f"{text}/{recorded:.2f}s"


def _span(label, seconds, before, scale, width, recorded):
    """'model ####....   1.52s' (or '... 1.52s/1.40s' beside a recording)."""
    bar = _bar(seconds or 0.0, scale, width)
    figure = _figure(seconds, before if recorded else None)
    return f"{label} {bar} {figure}" if bar else f"{label} {figure}"


def timeline(events, recorded=None, tests_seconds=None, width=None, model_info=None,
             final_ran=True, decisions=None, recorded_decisions=None):  # fmt: skip
    """The timeline's lines. `recorded` is the recording's events; `tests_seconds` the
    independent test runs' total, `final_ran` False when the final verdict was not run
    (Ctrl-C): then the total is the starting verdict's alone, and the line says so. `width`
    defaults to the terminal's (at most 100); below what one line per turn needs, model and
    tools go on two lines. With `model_info` (a recording's `model`, see context_window),
    the context lines follow. `decisions` and `recorded_decisions`: the extensions'
    decisions of `events` and of `recorded` (see the module docstring)."""
    width = width or min(shutil.get_terminal_size((80, 24)).columns, 100)
    turns = per_turn(events, decisions)
    before = per_turn(recorded, recorded_decisions) if recorded else {}
    spans = [t["model"] or 0.0 for t in turns.values()] + [t["tools"] for t in turns.values()]
    scale = max(spans, default=0.0)
    figure = 13 if recorded else 7  # "  0.82s/0.33s" or "  0.82s"
    names = 14  # room kept for one tool name or two
    one_line = 8 + 2 * (6 + 1 + figure) + 3 + names
    two_lines = width - one_line < 16
    bar = max(4, width - (8 + 7 + figure + names)) if two_lines else (width - one_line) // 2
    lines = ["Timeline (seconds" + (", today/recorded" if recorded else "") + "):"]
    for number, turn in turns.items():
        old = before.get(number, {})
        model = _span("model", turn["model"], old.get("model"), scale, bar, recorded)
        tools = _span("tools", turn["tools"], old.get("tools"), scale, bar, recorded)
        called = " ".join(turn["names"]) + (f" · you {turn['you']:.2f}s" if turn["you"] else "")
        if two_lines:
            lines += [f"turn {number:<2} {model}", f"        {tools}  {called}".rstrip()]
        else:
            lines.append(f"turn {number:<2} {model} | {tools}  {called}".rstrip())
    model_total = sum(t["model"] or 0.0 for t in turns.values())
    tools_total = sum(t["tools"] for t in turns.values())
    you = sum(t["you"] for t in turns.values())
    you = f" · you deciding {you:.2f}s" if you else ""
    lines.append(f"total   model {model_total:.2f}s · tools {tools_total:.2f}s{you}")
    if tests_seconds is not None:
        only = "" if final_ran else ", the starting verdict's alone (no final verdict ran)"
        lines.append(f"        independent tests {tests_seconds:.2f}s{only}")
    if model_info:
        lines += context_lines(events, context_window(model_info), width)
    return lines


def context_window(model):
    """(tokens, name) of the context window a run asked for, from its `model` description,
    or None. Ollama: the `num_ctx` option sent with every request. An OpenAI-compatible
    server sets its own; of those, only vLLM tells it (`max_model_len` in its model list)."""
    for name, value in (
        ("num_ctx", (model.get("options") or {}).get("num_ctx")),
        ("max_model_len", (model.get("server_model") or {}).get("max_model_len")),
    ):
        if _count(value) and value > 0:
            return value, name
    return None


def _count(value):
    """Whether `value` is a count of tokens that can be shown: a server's counter of 400
    digits is not (no float holds it, so it is no share of the window)."""
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) < LARGEST_NUMBER


def context_lines(events, window, width=80):
    """Each request's prompt tokens against `window` ((tokens, name) or None), and one
    warning line when one came within 10% of it; nothing when the window is unknown or no
    turn has the model's counter."""
    prompts = [
        (e["turn"], e.get("model_counters", {}).get("prompt_eval_count"))
        for e in events
        if e["type"] == MODEL_DONE
    ]
    prompts = [(turn, n) for turn, n in prompts if _count(n)]
    if not window or not prompts:
        return []
    size, name = window
    bar = max(4, min(40, width - 27))
    lines = [f"Context (prompt tokens of each request; {name} {size:,}):"]
    for turn, tokens in prompts:
        filled = min(bar, round(bar * tokens / size))
        share = f"{100 * tokens / size:.0f}%"
        lines.append(f"turn {turn:<2} {'#' * filled}{'.' * (bar - filled)} {tokens:>7,} {share:>4}")
    near = [turn for turn, tokens in prompts if tokens >= NEAR_CONTEXT * size]
    if near:
        fullest = f"{100 * max(tokens for _, tokens in prompts) / size:.0f}%"
        turns = (
            f"turn {near[0]} at"
            if len(near) == 1
            else f"turns {', '.join(map(str, near))} at up to"
        )
        lines.append(
            f"warning: {turns} {fullest} of {name}: oldest messages may be silently dropped"
        )
    return lines
