"""Where a run's time went, one line per turn: model time and tool time as plain-text bars.

    turn 1  model ######....   1.52s | tools #.........   0.31s  read_file
    total   model 4.10s · tools 1.02s

`timeline(events)` builds those lines from the loop's events (the `seconds` of each
`model_done` and `tool_result`); the bars are scaled to the longest span. With `recorded=`,
each figure reads today/recorded, so a replay shows today's timings beside the
recording's without judging them.

Not here: colour or terminal control codes. The bars are ASCII, so they survive a pipe,
a log file, `NO_COLOR` and a narrow terminal (the bars shrink to fit `width`; from 50
columns on, every line fits).
"""

import shutil

from agent_loop import MODEL_DONE, MODEL_START, TOOL_RESULT

BARS_FROM = 0.01  # seconds: below this longest span a bar shows noise, not time


def per_turn(events):
    """{turn: {"model": seconds, "tools": seconds, "names": [...]}} in turn order."""
    turns = {}
    for event in events:
        if event["type"] not in (MODEL_START, MODEL_DONE, TOOL_RESULT):
            continue
        turn = turns.setdefault(event["turn"], {"model": None, "tools": 0.0, "names": []})
        if event["type"] == MODEL_DONE:
            turn["model"] = event.get("seconds", 0.0)
        elif event["type"] == TOOL_RESULT:
            turn["tools"] += event.get("seconds", 0.0)
            turn["names"].append(str(event["name"]))
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


def timeline(events, recorded=None, tests_seconds=None, width=None):
    """The timeline's lines. `recorded` is the recording's events; `tests_seconds` the
    independent test runs' total. `width` defaults to the terminal's (at most 100); below
    what one line per turn needs, model and tools go on two lines."""
    width = width or min(shutil.get_terminal_size((80, 24)).columns, 100)
    turns, before = per_turn(events), per_turn(recorded) if recorded else {}
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
        called = " ".join(turn["names"])
        if two_lines:
            lines += [f"turn {number:<2} {model}", f"        {tools}  {called}".rstrip()]
        else:
            lines.append(f"turn {number:<2} {model} | {tools}  {called}".rstrip())
    model_total = sum(t["model"] or 0.0 for t in turns.values())
    tools_total = sum(t["tools"] for t in turns.values())
    lines.append(f"total   model {model_total:.2f}s · tools {tools_total:.2f}s")
    if tests_seconds is not None:
        lines.append(f"        independent tests {tests_seconds:.2f}s")
    return lines
