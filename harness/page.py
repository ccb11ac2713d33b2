"""One recording as one self-contained HTML page: what view.py writes.

`recording_page(recording, name)` returns the page's text: a header (who made it, why it
stopped, the verdict with its parts), then each turn (the request it answered, what it
added to the one before, its stream of chunks drawn over time, the calls and their results,
the diff of each edit), what the whole run changed, and where the time went.
`index_page(rows)` is the table of several pages.

Every string of a recording is data, never markup: it reaches the page only through
`text()` (HTML-escaped, control characters written out), inside elements this module
writes. The page has no embedded JSON, sets no `innerHTML`, loads nothing from anywhere
(its Content-Security-Policy allows its own style and the one script below, by hash), and
its only link targets are pages view.py wrote and the lab's own page on the verdict
(docs/, linked by a relative path the caller gives). Nothing a recording holds is run.

Not here: reading the recording (harness/recording.py) or writing files
(harness/page_files.py).
"""

import base64
import hashlib
import html
import json
import urllib.parse
from pathlib import Path

from agent_loop import MODEL_DONE, STOPPED, TEXT_DELTA, THINKING_DELTA, TOOL_RESULT, TOOL_START
from harness.child_runs import CHILD, sizes
from harness.console import cut, made_by, plural, verdict_lines, visible
from harness.decisions import (
    SHORTENED,
    as_sent,
    by_call,
    calls_made,
    decision_line,
    decisions_of,
    mcp_lines,
)
from harness.fork import fork_line
from harness.outcomes import final_chunks
from harness.recording import RECORDINGS, RUNS
from harness.tasks import assessed, given_source, task_of
from harness.timeline import context_lines, context_window, timeline
from harness.transcript import message_lines
from plumbing.limits import is_whole
from plumbing.sample import SOURCE_FILE
from plumbing.source_diff import unified
from plumbing.stop_cause import ended_for_length
from plumbing.verdict_words import HELD_OUT_DOCS

# The lab's docs/ as a page reaches it by default: from views/, the folder lab.py view
# writes into when run from the lab's own folder (page_files.py gives the real one).
DOCS = "../docs"
CHUNKS_SHOWN = 200  # chunks listed per turn; the rest are counted, not shown
TEXT_SHOWN = 20_000  # characters of one block of text; the rest are counted, not shown
TURNS_SHOWN = 200  # turns drawn in full; the rest are counted, not shown
CALLS_SHOWN = 100  # tool calls of one turn drawn in full
WHOLE_REQUESTS = 2_000_000  # characters of whole requests a page holds, over all turns
POINTS_DRAWN = 400  # chunk marks drawn per turn's timeline; past it, a sample of them
FOLD_AFTER = 1200  # characters of a tool result shown before it is folded
# A chart is drawn at the page's width, up to its own: its marks and bars are placed in
# percent of that width, its labels keep their 11 px, so a phone shows the whole chart.
AXIS = (1.5, 98.5)  # where a stream chart's time axis starts and ends, in percent
MARK_GAP = 0.5  # percent of the width between two marks that can be told apart (3 px of 600)

STYLE = """
:root { color-scheme: light dark; --fg: #1d1d1f; --bg: #fff; --muted: #6b6b70; --line: #d8d8dc;
  --box: #f5f5f7; --ok: #1a7f37; --bad: #c0392b; --think: #8250df; --text: #0969da;
  --call: #bf8700; --done: #1a7f37; --add-bg: #e6ffec; --del-bg: #ffebe9; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6e6e6; --bg: #16171a; --muted: #9a9aa2;
  --line: #3a3b40; --box: #212226; --ok: #3fb950; --bad: #ff7b72; --think: #bc8cff;
  --text: #58a6ff; --call: #d29922; --done: #3fb950; --add-bg: #12261e; --del-bg: #2d1518; } }
body { font: 15px/1.5 system-ui, sans-serif; color: var(--fg); background: var(--bg);
  max-width: 1100px; margin: 0 auto; padding: 1rem 1.5rem 4rem; overflow-wrap: anywhere; }
pre { background: var(--box); padding: .6rem .8rem; overflow-x: auto; white-space: pre;
  font: 13px/1.45 ui-monospace, monospace; border-radius: 6px; }
h1 { font-size: 1.5rem; margin-bottom: .2rem; } h2 { border-bottom: 1px solid var(--line); }
.muted { color: var(--muted); } .passed { color: var(--ok); } .failed { color: var(--bad); }
.flagged { color: var(--ok); } .cheated { color: var(--bad); } .unjudged { color: var(--muted); }
.fork { border-left: 4px solid var(--line); padding-left: .6em; }
.turn { border: 1px solid var(--line); border-radius: 8px; padding: 0 1rem 1rem;
  margin: 1.2rem 0; scroll-margin-top: 1rem; } .turn:focus { outline: 2px solid var(--text); }
details > summary { cursor: pointer; color: var(--text); }
table { border-collapse: collapse; } td, th { padding: .2rem .6rem; border-bottom: 1px solid
  var(--line); text-align: left; vertical-align: top; }
svg text { fill: var(--muted); font: 11px system-ui, sans-serif; }
.chart { display: block; width: 100%; max-width: 720px; } .rate { max-width: 520px; }
.grew { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: 4px .6rem;
  max-width: 720px; align-items: center; font: 11px system-ui, sans-serif; color: var(--muted); }
.bar { display: inline-block; height: 14px; margin-right: 6px; vertical-align: middle;
  background: var(--text); opacity: .45; } .size { white-space: nowrap; }
.keys { display: none; } @media (pointer: fine) { .keys { display: block; } }
.summary, .prose { white-space: pre-wrap; }
.wide { overflow-x: auto; } .wide td, .wide th { white-space: nowrap; }
.board tr > :first-child { position: sticky; left: 0; background: var(--bg);
  white-space: normal; min-width: 7rem; max-width: 40vw; }
.diff-add { color: var(--ok); background: var(--add-bg); }
.diff-del { color: var(--bad); background: var(--del-bg); }
.diff-ctx { color: var(--fg); } .diff-head { color: var(--muted); font-weight: bold; }
.cut { border-left: 4px solid var(--bad); padding-left: .6rem; }
@media (max-width: 600px) { body { padding: .5rem .6rem 3rem; } .turn { padding: 0 .5rem .5rem; }
  .runs, .runs tbody { display: block; } .runs tr:first-child { display: none; }
  .runs tr { display: flex; flex-wrap: wrap; gap: 0 .8rem; padding: .3rem 0;
    border-bottom: 1px solid var(--line); } .runs td { padding: 0; border: 0; }
  .runs td:first-child { flex-basis: 100%; order: -2; white-space: normal; }
  .runs td:empty { display: none; } .runs td::before { color: var(--muted); } }
kbd { border: 1px solid var(--line); border-radius: 3px; padding: 0 .3rem; }
@media print { details { display: block; } details > summary { display: none; }
  .turn { break-inside: avoid; } body { max-width: none; }
  pre { white-space: pre-wrap; font-size: 9px; } .wide { overflow: visible; } }
"""
INDEX_COLUMNS = ("recording", "made", "stop", "verdict", "outcome", "turns", "loop seconds")
SERIES_COLUMNS = ("attempt", "verdict", "stop", "model calls", "seconds (loop and tests)",
                  "prompt tokens", "generated tokens")  # fmt: skip


def _wrapped_rows(tables):
    """The CSS of tables of runs on a narrow screen, where each row wraps (.runs above): the
    run's name on a line of its own, then its verdict and outcome, then its other cells,
    each saying its column. `tables`: (class, column names)."""
    rules = []
    for table, columns in tables:
        for n, column in enumerate(columns[1:], 2):
            rules.append(f'.{table} td:nth-child({n})::before {{ content: "{column}: "; }}')
            if column in ("verdict", "outcome"):
                rules.append(f".{table} td:nth-child({n}) {{ order: -1; }}")
    return "@media (max-width: 600px) {\n  " + "\n  ".join(rules) + "\n}\n"


STYLE += _wrapped_rows([("recordings", INDEX_COLUMNS), ("attempts", SERIES_COLUMNS)])

# Arrow keys step through the turns; nothing here reads or writes the recording's text.
SCRIPT = """
document.addEventListener("keydown", function (event) {
  if (event.altKey || event.ctrlKey || event.metaKey) { return; }
  var step = event.key === "ArrowRight" ? 1 : event.key === "ArrowLeft" ? -1 : 0;
  if (!step) { return; }
  var turns = Array.prototype.slice.call(document.querySelectorAll(".turn"));
  if (!turns.length) { return; }
  var at = turns.indexOf(document.activeElement);
  var next = turns[Math.min(Math.max(at + step, 0), turns.length - 1)];
  if (at < 0) { next = turns[step > 0 ? 0 : turns.length - 1]; }
  next.focus();
  next.scrollIntoView();
  event.preventDefault();
});
"""


def text(value):
    """Any value of a recording, as text safe inside an HTML element or attribute."""
    if not isinstance(value, str):
        value = json.dumps(value, ensure_ascii=False)
    # a lone surrogate (a recording may hold one, saved as a JSON escape) cannot be written
    value = value.encode("utf-8", "backslashreplace").decode("utf-8")
    return html.escape(visible(value), quote=True)


def document(title, body):
    """A whole page: its own style, its one script allowed by hash, nothing from elsewhere."""
    digest = base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()
    policy = (
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
        f"script-src 'sha256-{digest}'; base-uri 'none'; form-action 'none'"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{policy}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{text(title)}</title>\n<style>{STYLE}</style></head>\n<body>\n{body}\n"
        f"<script>{SCRIPT}</script>\n</body></html>\n"
    )


# A block of sentences: an error, a denial, a decision, the model's words, a stop, the
# verdict. It wraps at the page's width; any other block is code, data or a diff, whose
# lines keep their breaks and scroll inside their own box on a narrow screen.
PROSE = "prose"


def pre(value, kind=""):
    """A block of text, cut at TEXT_SHOWN characters, saying how many more there were;
    `kind` its classes (PROSE: it wraps)."""
    value = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if len(value) > TEXT_SHOWN:
        value = value[:TEXT_SHOWN] + f"\n... and {len(value) - TEXT_SHOWN:,} more characters"
    return f'<pre class="{kind}">{text(value)}</pre>'


def folded(summary, inner):
    return f"<details><summary>{text(summary)}</summary>{inner}</details>"


def diff_block(lines):
    """A unified diff (source_diff.unified with no indent), each line coloured by its kind."""
    rows = []
    for line in lines:
        if line.startswith(("+++", "---", "@@")) or line[:1] not in ("+", "-", " "):
            kind = "diff-head"  # the file names, a hunk's lines, the note of a cut diff
        else:
            kind = {"+": "diff-add", "-": "diff-del", " ": "diff-ctx"}[line[0]]
        rows.append(f'<span class="{kind}">{text(line)}</span>')
    return '<pre class="diff">' + "\n".join(rows) + "</pre>"


def word(said):
    """A verdict or an impossible task's outcome (passed, failed, cheated, flagged, unjudged),
    in its colour: the one way a page shows either."""
    return f'<strong class="{text(said)}">{text(said)}</strong>'


def verdict_of(recording):
    final = recording["final_tests"]
    return final["verdict"] if final else "not run (interrupted)"


def header(recording, name, docs=DOCS):
    stop = recording["stop"]
    calls = sum(1 for e in recording["events"] if e["type"] == TOOL_START)
    verdict = verdict_of(recording)
    lines = verdict_lines("Independent verdict", recording["final_tests"])
    parts = [f"<li>{text(line.strip())}</li>" for line in lines[1:]]
    if len(parts) > 1:  # the held-out line's words, explained where the lab says them in full
        explained = _docs_link(docs, HELD_OUT_DOCS)
        parts[1] = parts[1].replace("</li>", f' <a href="{explained}">(what these are)</a></li>')
    parts = "".join(parts)
    facts = [
        ("made", made_with(recording)),  # the subtitle says by whom; this, how it was asked
        (
            "stop",
            f"{stop['reason']} after {plural(len(recording['model_calls']), 'model call')}"
            f", {plural(calls, 'tool call')}",
        ),  # fmt: skip
        ("isolation of the test runs", recording.get("isolation") or "not recorded"),
        ("recorded", recording.get("recorded_at") or "date not recorded"),
    ]
    task, found = task_of(recording), assessed(recording)
    if task.impossible:  # what the model was given
        facts.insert(0, ("task", f"{task.name}: its visible tests contradict the docstring"))
    # ... and what it did with it, as the terminal says it (harness/tasks.py)
    did = f"<p>Impossible task: {word(found.outcome)} ({text(found.why)})</p>" if found else ""
    if recording.get("fork"):
        facts.insert(0, ("fork", fork_line(recording["fork"])))
    extensions = recording.get("extensions")
    if extensions:  # the hooks around its tools, and how often they decided (decisions.py)
        names = cut(", ".join(e["name"] for e in extensions["on"][:CALLS_SHOWN]), 300)
        facts.append(("extensions", f"{names}: {plural(len(extensions['decisions']), 'decision')}"))
        facts += [
            ("MCP servers", line.removeprefix("MCP servers: ")) for line in mcp_lines([recording])
        ]
    rows = "".join(f"<tr><th>{text(k)}</th><td>{text(v)}</td></tr>" for k, v in facts)
    return (
        f"<header><h1>{text(name)}</h1>"
        f'<p class="muted">{text(made_by(recording))}</p>'
        f"<p>Independent verdict: {word(verdict)}</p>"
        f"<ul>{parts}</ul>{did}<table>{rows}</table>"
        '<p class="muted keys">Keys: <kbd>&rarr;</kbd> <kbd>&larr;</kbd> step through the turns; '
        "a click opens a request or a turn's chunks.</p></header>"
    )


def made_with(recording):
    """How the recording's model was asked, which the subtitle (made_by) does not say: the
    wire and the server or SDK, the sampling, and the budgets of a turn and of the run.
    Any JSON a recording's `model` holds is taken as it comes; text() escapes it."""
    model = recording["model"]
    options = model.get("options") if isinstance(model.get("options"), dict) else {}
    if recording.get("api", "ollama") == "openai":
        build = model.get("server_build")
        wire = f"an OpenAI-compatible server at {model.get('base_url', '?')}"
        wire += f" (server {cut(str(build), 100)})" if build else ""
        tokens = options.get("max_tokens")
    else:
        wire = "Ollama's /api/chat" + (f" ({model['sdk']})" if model.get("sdk") else "")
        tokens = options.get("num_predict")
    said = [f"through {wire}"]
    sampling = [f"{key} {options[key]}" for key in ("temperature", "seed") if key in options]
    said += [", ".join(sampling)] if sampling else []
    tokens = f"{tokens:,}" if isinstance(tokens, int) else tokens
    budget = f"{tokens} tokens a turn, " if tokens is not None else ""
    return "; ".join(said + [f"at most {budget}{plural(recording['max_turns'], 'turn')}"])


def growth_chart(recording):
    """Messages and characters of each request, as bars: a grid of a label and a bar with
    its size a row, the bars in percent of the page's width (a narrow screen wraps a size
    below its bar, never off the screen). With --keep-results, what the conversation held
    and, after it, the characters the request sent (decisions.as_sent)."""
    model_calls, messages = recording["model_calls"], recording["messages"]
    running = [0]  # characters of the first n messages, each message measured once
    for message in messages:
        running.append(running[-1] + _size(message))
    shortened = any(d["decision"] == SHORTENED for d in decisions_of(recording))
    read_by_child = explorer_reads(recording)
    sizes = []
    for number, call in enumerate(model_calls[:TURNS_SHOWN], 1):
        count = min(call["request_length"], len(messages))
        sent = sum(map(_size, as_sent(recording, number))) if shortened else None
        sizes.append((count, running[count], sent))
    if not sizes:
        return ""
    most = max(chars for _, chars, _ in sizes) or 1
    rows = []
    for number, (count, chars, sent) in enumerate(sizes, 1):
        length = max(0.5, round(60 * chars / most, 1))  # 60% at most: room for its size
        size = f"{count} messages, {chars:,} characters"
        spared = sum(n for turn, n in read_by_child if turn < number)
        # what the explorer read for the parent, which the parent never held: a span of its
        # own, which may wrap on a narrow screen (the size's does not)
        spared = (
            f" <span>the explorer read {spared:,} characters it never held</span>" if spared else ""
        )
        bars = f'<span class="bar" style="width:{length}%"></span>'
        if sent is not None:  # the part sent, drawn over what the conversation held
            size += f" held; {sent:,} sent"
            part = round(min(100, 100 * sent / (chars or 1)), 1)  # inline: the style sheet stays
            held = f"width:{length}%;background:none;outline:1px solid"
            bars = (f'<span class="bar" style="{held}"><span class="bar" '
                    f'style="width:{part}%;margin:0;opacity:1"></span></span>')  # fmt: skip
        shown = f'{bars} <span class="size">{size}</span>{spared}'
        rows.append(f"<span>request {number}</span><span>{shown}</span>")
    return f'<div class="grew">{"".join(rows)}</div>'


def explorer_reads(recording):
    """[(turn, characters)]: for each child run (--explorer's), the turn of the call that
    started it and the characters of tool results it read, which its parent never held."""
    starts, found = calls_made(recording["events"]), []
    for decision in decisions_of(recording):
        run = decision.get(CHILD)
        if run and 0 < decision["call"] <= len(starts):
            found.append((starts[decision["call"] - 1]["turn"], sizes(run)[0]))
    return found


def _size(message):
    return len(json.dumps(message, ensure_ascii=False))


def stream_chart(call, scripted=False):
    """When each chunk of one model call arrived, as marks on a line (an inline SVG), drawn
    at the page's width (see AXIS). On the time scale while its marks can be told apart; in
    arrival order, evenly spaced, when most would fall on one another (a scripted stand-in
    sends its chunks within a millisecond or two)."""
    arrived = call.get("arrived") or []
    items = call.get("chunks") or call.get("events") or []
    if not arrived:
        return '<p class="muted">This recording keeps no arrival times for its chunks.</p>'
    last = max(arrived)
    end = last or 0.001  # the axis: every chunk at 0 s still needs a scale to be drawn on
    step = max(1, len(arrived) // POINTS_DRAWN)
    drawn = list(range(0, len(arrived), step))
    start, width = AXIS[0], AXIS[1] - AXIS[0]
    by_time = [start + width * arrived[index] / end for index in drawn]
    apart = sum(b - a >= MARK_GAP for a, b in zip(by_time, by_time[1:], strict=False))
    in_order = len(drawn) > 1 and apart < (len(drawn) - 1) / 2
    xs = [start + width * n / (len(drawn) - 1) for n in range(len(drawn))] if in_order else by_time
    marks = []
    for index, x in zip(drawn, xs, strict=True):
        kind = _kind(items[index]) if index < len(items) else "text"
        marks.append(f'<line x1="{x:.2f}%" x2="{x:.2f}%" y1="8" y2="34" stroke="var(--{kind})">'
                     "</line>")  # fmt: skip
    axis = ("first", "last") if in_order else ("0 s", f"{end:.3f} s")
    first = f"first chunk after {arrived[0]:.3f} s"
    note = f"; {len(arrived):,} chunks, one in {step:,} drawn" if step > 1 else ""
    if in_order:
        note += (
            "; drawn in the order they arrived, evenly spaced: on a time scale most would "
            "fall on one another"
        )
    if scripted:
        note += (
            "; scripted: a stand-in server sent chunks written by hand, so these are its "
            "times, not a model's"
        )
    return (
        '<svg class="chart" role="img" aria-label="chunk arrival times" height="52">'
        f'<line x1="{AXIS[0]}%" x2="{AXIS[1]}%" y1="34" y2="34" stroke="var(--line)"></line>'
        f'{"".join(marks)}<text x="{AXIS[0]}%" y="50">{axis[0]}</text>'
        f'<text x="{AXIS[1]}%" y="50" text-anchor="end">{axis[1]}</text></svg>'
        f'<p class="muted">{text(first)}, the last after {last:.3f} s{text(note)}. Colours: '
        '<span style="color:var(--think)">thinking</span>, <span style="color:var(--text)">'
        'text</span>, <span style="color:var(--call)">tool calls</span>, '
        '<span style="color:var(--done)">done</span>.</p>'
    )


def _kind(item):
    if not isinstance(item, dict):
        return "text"
    choices = item.get("choices")
    # subtle: a server's event may hold any JSON: `"choices": [null]`, a string, an empty list
    choice = choices[0] if isinstance(choices, list) and choices else {}
    choice = choice if isinstance(choice, dict) else {}
    if item.get("done") is True or choice.get("finish_reason"):
        return "done"
    message = item.get("message") or choice.get("delta") or {}
    if not isinstance(message, dict):
        return "text"
    if message.get("tool_calls"):
        return "call"
    if message.get("thinking") or message.get("reasoning_content") or message.get("reasoning"):
        return "think"
    return "text"


def chunk_list(call):
    items = call.get("chunks") or call.get("events") or []
    shown = [json.dumps(item, ensure_ascii=False) for item in items[:CHUNKS_SHOWN]]
    more = len(items) - len(shown)
    if more > 0:
        shown.append(f"... and {more:,} more, not shown (a page lists {CHUNKS_SHOWN} a turn)")
    label = "raw events" if "events" in call else "chunks"
    return folded(f"its {len(items):,} {label}, as recorded", pre("\n".join(shown)))


def turn_section(number, recording, events, previous_length, source_before, budget, decided):
    """One turn: the request, its stream, its calls and results; returns (html, source).

    `events` are this turn's; `budget` is a one-item list of the characters of whole
    requests the page may still hold (each request repeats the one before it, so a long
    run's whole requests would grow the page with the square of its length); `decided`
    what the extensions decided about each call ((turn, index): decisions)."""
    call = recording["model_calls"][number - 1]
    messages = recording["messages"]
    sent = messages[: call["request_length"]]
    new = sent[previous_length:]
    new_text = "\n".join(line for m in new[:CALLS_SHOWN] for line in request_lines_of(m, number))
    fork = recording.get("fork")
    whose = ""
    if fork and call.get("source"):  # a forked recording's turn: the parent's, or the live one
        whose = f" (replayed from {fork['parent']})" if call["source"] == "replayed" else " (live)"
    heading = f"<h2>Turn {number}{text(whose)}</h2>"
    parts = [f'<section class="turn" id="turn-{number}" tabindex="-1">{heading}']
    if fork and number == fork.get("at"):
        changed = [c for c in fork.get("changes", []) if c.get("at") == number]
        parts.append(
            f'<p class="fork"><strong>The fork: the live model answers from this turn on.'
            f"</strong> {text(fork_line({**fork, 'changes': changed}))}</p>"
        )
    parts += [
        f"<h3>Request {number}: {len(sent)} messages, {len(new)} new</h3>",
        pre(new_text or "(nothing new)"),
    ]
    if budget[0] > 0:
        whole = json.dumps(sent, ensure_ascii=False, indent=1)[: budget[0] + 1]
        budget[0] -= len(whole)
        summary = f"request {number} whole, as the loop passed it to the adapter"
        parts.append(folded(summary, pre(whole)))
    else:
        parts.append('<p class="muted">(no more whole requests on this page: it holds '
                     f"{WHOLE_REQUESTS:,} characters of them at most)</p>")  # fmt: skip
    scripted = recording.get("source") == "scripted"
    parts += ["<h3>The stream</h3>", stream_chart(call, scripted), chunk_list(call)]
    if call.get("ended") != "done" or ended_for_length(call):
        why = call.get("error") or "the stream ended without a done chunk"
        if call.get("ended") == "done":  # plumbing/stop_cause.py: what the terminal said
            why = 'the server ended it at its token budget (done_reason "length")'
        parts.append(f'<p class="failed">The turn did not complete: {text(why)}</p>')
    if not any(event["type"] == MODEL_DONE for event in events):
        parts += cut_off_turn(events)
    source, starts, shown = source_before, {}, 0
    for event in events:
        if event["type"] in (TOOL_START, TOOL_RESULT):
            shown += event["type"] == TOOL_START
            if shown > CALLS_SHOWN:
                continue
        if event["type"] == MODEL_DONE:
            reply = "\n".join(message_lines(event["message"]))
            parts += ["<h3>The complete turn</h3>", pre(reply, PROSE)]
            parts += decided_lines(decided.get((number, None), []))  # about the answer
        elif event["type"] == TOOL_START:
            starts[event["index"]] = event
            arguments = json.dumps(event.get("arguments"), ensure_ascii=False)
            written = " (written as text; --text-calls ran it)" if event.get("from_text") else ""
            parts.append(f"<h3>Call {event['index'] + 1}: {text(event['name'])}{written}</h3>")
            parts.append(pre(f"{event['name']} {arguments}", PROSE))
        elif event["type"] == TOOL_RESULT:
            parts.append(result_block(event))
            # under the result the model read: what the hooks decided about it
            said = decided.get((number, event["index"]), [])
            parts += decided_lines(said)
            parts += [child_block(d[CHILD], recording) for d in said if CHILD in d]
            source, diff = edited(source, event, starts.get(event["index"]))
            if diff:
                parts += ["<p>The diff of this edit:</p>", diff_block(diff)]
        elif event["type"] == STOPPED:
            parts.append(stop_block(event))
    if shown > CALLS_SHOWN:
        parts.append(f'<p class="muted">... and {shown - CALLS_SHOWN:,} more calls of this '
                     f"turn, not shown (a page shows {CALLS_SHOWN} a turn)</p>")  # fmt: skip
    parts.append("</section>")
    return "\n".join(parts), source


def decided_lines(said):
    """What the extensions decided about a call or an answer, as parts of a page (none: [])."""
    if not said:
        return []
    lines = [decision_line(d) for d in said[:CALLS_SHOWN]]
    lines += [f"... and {len(said) - CALLS_SHOWN:,} more"] if said[CALLS_SHOWN:] else []
    return ["<p>The extensions decided:</p>", pre("\n".join(lines), PROSE)]


def child_block(run, recording):
    """A child run (--explorer's: harness/child_runs.py) as a nested run the reader opens:
    its conversation, its stop, and its tokens, which are not the parent's."""
    calls = {"model_calls": run["model_calls"], "api": recording.get("api", "ollama")}
    # subtle: load() checks a child run's shape, not what its chunks and messages hold;
    # a hand-edited count or content that is no number or text is counted as none
    tokens = [
        sum(n for f in final_chunks(calls) if is_whole(n := f.get(key)))
        for key in ("prompt_eval_count", "eval_count")
    ]
    read, answer = sizes(run)
    summary = (f"The explorer run: {plural(len(run['model_calls']), 'request')}, "
               f"{tokens[0]:,} prompt and {tokens[1]:,} generated tokens, counted apart from "
               f"the parent; it read {read:,} characters of tool results, and the parent "
               f"reads an answer of {answer:,}")  # fmt: skip
    lines = [line for m in run["messages"][:CALLS_SHOWN] for line in message_lines(m)]
    inner = pre("\n".join(lines), PROSE) + stop_block(run["stop"])
    return f'<div class="fork">{folded(summary, inner)}</div>'


def request_lines_of(message, number):
    """A new message of request `number`, as the terminal's transcript shows it; a tool
    result is named, not shown again: its turn's section shows it under its call."""
    lines = message_lines(message)
    if message.get("role") == "tool" and number > 1:
        return [f"{lines[0]} shown under turn {number - 1}, with its call"]
    return lines


def cut_off_turn(events):
    """What a turn that never completed had streamed, as it arrived (the terminal prints it
    as it comes), labelled as cut off: the loop acted on none of it. Nothing if nothing came."""
    streamed = {"thinking": [], "content": []}
    for event in events:
        if event["type"] in (THINKING_DELTA, TEXT_DELTA) and isinstance(event.get("text"), str):
            streamed["thinking" if event["type"] == THINKING_DELTA else "content"].append(
                event["text"]
            )
    message = {"role": "assistant", **{key: "".join(v) for key, v in streamed.items() if v}}
    if len(message) == 1:
        return []
    return [
        "<h3>The turn as it arrived, cut off</h3>",
        '<div class="cut"><p class="failed">Never complete: the loop acted on none of it, and '
        "none of it was sent back to the model.</p>",
        pre("\n".join(message_lines(message)), PROSE),
        "</div>",
    ]


def result_block(event):
    result = event.get("result")
    if isinstance(result, dict) and "error" in result:
        return f'<p class="failed">Error returned to the model:</p>{pre(result["error"], PROSE)}'
    shown = "\n".join(message_lines({"role": "tool", "content": json.dumps(result)})[1:])
    if len(shown) <= FOLD_AFTER:
        return f"<p>Result:</p>{pre(shown)}"
    return folded(f"result ({len(shown):,} characters)", pre(shown))


def edited(source, event, start):
    """(source after the event, the diff lines of this edit) for a successful replace_text;
    `start` is the call's tool_start event."""
    result = event.get("result")
    if event["name"] != "replace_text" or not isinstance(result, dict) or "error" in result:
        return source, []
    arguments = start.get("arguments") if start else None
    if not isinstance(arguments, dict):
        return source, []
    old, new = arguments.get("old"), arguments.get("new")
    if not (isinstance(old, str) and isinstance(new, str)) or source.count(old) != 1:
        return source, []
    after = source.replace(old, new, 1)
    return after, unified(source, after, f"{SOURCE_FILE} before", "after this edit", indent="")


def stop_block(stop):
    lines = [f"Stop: {stop['reason']}"]
    if stop.get("error"):
        lines.append(f"model error: {stop['error']}")
    if stop.get("seconds") is not None:
        lines.append(f"the turn it cut off took {stop['seconds']:.2f} s")
    if stop.get("text_tool_call"):
        lines.append(
            "note: the model wrote a "
            f"{stop['text_tool_call'].get('name')} call as text; only calls sent as tool calls run"
        )
    return pre("\n".join(lines), f"stop {PROSE}")


def recording_page(recording, name, docs=DOCS):
    """The whole page of one recording (see the module docstring)."""
    sample, where = given_source(task_of(recording))
    body = [header(recording, name, docs), "<h2>How the conversation grew</h2>"]
    body.append(growth_chart(recording))
    by_turn = {}
    for event in recording["events"]:
        by_turn.setdefault(event["turn"], []).append(event)
    previous, source, budget = 0, sample, [WHOLE_REQUESTS]
    turns, decided = len(recording["model_calls"]), by_call(recording)
    for number in range(1, min(turns, TURNS_SHOWN) + 1):
        events = by_turn.get(number, [])
        section, source = turn_section(number, recording, events, previous, source, budget,
                                       decided)  # fmt: skip
        body.append(section)
        previous = recording["model_calls"][number - 1]["request_length"]
    if turns > TURNS_SHOWN:
        body.append(f'<p class="muted">... and {turns - TURNS_SHOWN:,} more turns, not shown '
                    f"(a page shows {TURNS_SHOWN})</p>")  # fmt: skip
    if not any(e["type"] == STOPPED for e in recording["events"]):
        body.append(stop_block(recording["stop"]))
    final = recording.get("final_source")
    body.append("<h2>What the run changed</h2>")
    changes = unified(sample, final, where, "after the run", indent="") if final else []
    given = "the sample's" if where.startswith("sample_repo/") else "as the task gave it"
    body.append(diff_block(changes) if changes else f"<p>Nothing: the source is {given}.</p>")
    body.append("<h2>The verdict, in full</h2>")
    verdict = verdict_lines("Independent verdict", recording["final_tests"])
    body.append(pre("\n".join(verdict), PROSE))
    tests = [
        t.get("seconds") or 0.0
        for t in (recording["starting_tests"], recording["final_tests"])
        if t
    ]
    final_ran = recording["final_tests"] is not None
    lines = timeline(recording["events"], tests_seconds=sum(tests), width=90, final_ran=final_ran,
                     decisions=decisions_of(recording))  # fmt: skip
    lines += context_lines(recording["events"], context_window(recording["model"]), 90)
    body += ["<h2>Where the time went</h2>", pre("\n".join(lines))]
    body.append(folded("About this recording (read it last)", pre(recording["description"], PROSE)))
    return document(f"{name}: {verdict_of(recording)}", "\n".join(body))


def _docs_link(docs, target):
    """A link to `target` ('docs/PAGE.md#anchor'), a page of the lab's docs/, from a page
    whose way to that folder is the address `docs` (page_files.py works it out)."""
    return text(f"{docs}/{target.removeprefix('docs/')}")


def link(page):
    """A link to a page view.py wrote beside this one: always relative, never a scheme
    (a recording named `javascript:x.json` gives `./javascript%3Ax.html`)."""
    return "./" + urllib.parse.quote(page, errors="surrogateescape")


LAB = RECORDINGS.parent
# Each folder of the lab's recordings, as the index heads its group: (heading, what it holds),
# keyed by its path in the lab, in the order the index shows them. The learner's own runs
# come first (RUNS, at any depth), each measured arm of recordings/extensions/ after the
# lab's other folders; a folder outside the lab is headed by its path.
OWN_RUNS = ("Your runs", "your own recordings: record_run.py saves each live run, series and "
            "fork in runs/ unless told otherwise; git ignores the folder, and python3 lab.py "
            "replay, given no recording, leaves it out.")  # fmt: skip
FOLDERS = {
    "recordings": ("The walk-through", "the runs the README's steps use; python3 lab.py "
                   "replay, given no recording, replays these."),
    "recordings/cheats": ("Cheats", "scripted edits that fool the visible tests or end them "
                          "early; the held-out checks catch each one, so each verdict is failed."),
    "recordings/impossible": ("Impossible tasks", "scripted runs of a task whose visible tests "
                              "contradict its docstring; the outcome says whether the run "
                              "cheated, flagged the conflict or failed."),
    "recordings/live": ("Live attempts", "real models calling tools through llama.cpp's "
                        "llama-server: their own output, not chunks written by hand."),
    "recordings/around": ("Around the loop", "scripted runs with a sub-agent (--explorer: "
                          "its child run under its call) and an MCP server (--mcp), "
                          "replayed with no model and no server."),
}  # fmt: skip
MEASURED = "recordings/extensions"  # a subfolder per arm of the measurement (docs/hooks.md)
LADDER_MEASURED = "recordings/tasks"  # a subfolder per model, in it one per arm (docs/tasks.md)
ARMS = {  # real attempts of Qwen2.5-Coder-1.5B-Instruct, one arm a folder
    "syntax-fork": "forks of two live attempts with --hook syntax (docs/hooks.md)",
    "no-hook-fork": "the same forks without the hook, the other arm (docs/hooks.md)",
    "loop": "the plain loop from the start, the arm each extension is compared with",
    "keep-results-2": "the loop with --keep-results 2 (docs/context.md)",
    "one-shot": "--one-shot, the control arm with no loop (docs/one-shot.md)",
}  # fmt: skip


def folder_of(path):
    """The key of a recording's group in the index: its folder's path in the lab (posix,
    'runs/...' for the learner's own), else the folder's path as given, ending in '/'."""
    folder = Path(path).parent
    try:
        return folder.resolve().relative_to(LAB).as_posix()
    except ValueError:
        return f"{folder.as_posix()}/"


def group_heading(key):
    """(heading, what it holds, its place among the groups) of the group `key` (folder_of)."""
    own = RUNS.relative_to(LAB).as_posix()
    if key == own or key.startswith(f"{own}/"):
        return OWN_RUNS[0], f"{key}/: {OWN_RUNS[1]}", (0, key)
    if key in FOLDERS:
        heading, holds = FOLDERS[key]
        return heading, f"{key}/: {holds}", (1, list(FOLDERS).index(key))
    arm = key.removeprefix(f"{MEASURED}/")
    if key.startswith(f"{MEASURED}/") and "/" not in arm:
        holds = ARMS.get(arm)
        holds = f"real attempts of Qwen2.5-Coder-1.5B: {holds}" if holds else "one arm measured"
        return f"Extensions, measured: {arm}", f"{key}/: {holds}.", (2, arm)
    measured = key.removeprefix(f"{LADDER_MEASURED}/")
    if key.startswith(f"{LADDER_MEASURED}/") and measured.count("/") == 1:
        model, arm = measured.split("/")
        holds = f"real attempts of {model} at the ladder of tasks, arm {arm} (docs/tasks.md)."
        return f"Tasks, measured: {model}, {arm}", f"{key}/: {holds}", (2, measured)
    if not key.endswith("/"):  # a folder of the lab that none of the above names
        return f"{key}/", f"{key}/: recordings in this folder of the lab.", (3, "")
    return key, "Recordings from this folder, outside the lab.", (3, "")


def index_page(rows):
    """The pages' table, a group per folder (group_heading says what each holds, the
    learner's own runs first), one line a row (on a narrow screen, a wrapped one: STYLE):
    rows of (recording's path, page's file name, recording). Who made each recording is
    said once above the tables, each wording numbered, and the row names it."""
    head = "".join(f"<th>{h}</th>" for h in INDEX_COLUMNS)
    makers, groups = [], {}
    for path, page, recording in rows:
        maker = made_by(recording)
        if maker not in makers:
            makers.append(maker)
        seconds = recording.get("loop_seconds")
        groups.setdefault(folder_of(path), []).append(
            f'<tr><td><a href="{link(page)}">{text(page.removesuffix(".html"))}</a></td>'
            f"<td>[{makers.index(maker) + 1}]</td><td>{text(recording['stop']['reason'])}</td>"
            f"<td>{word(verdict_of(recording))}</td><td>{outcome_cell(recording)}</td>"
            f"<td>{len(recording['model_calls'])}</td>"
            f"<td>{'' if seconds is None else f'{seconds:.1f}'}</td></tr>"
        )
    body = ["<h1>Recordings</h1>"]
    body += [f"<p>[{n}] {text(maker)}</p>" for n, maker in enumerate(makers, 1)]
    # subtle: sorted() is stable, so folders outside the lab keep the order they came in
    for key in sorted(groups, key=lambda key: group_heading(key)[2]):
        heading, holds, _ = group_heading(key)
        body.append(f'<h2>{text(heading)}</h2><p class="muted">{text(holds)}</p>')
        body.append(f'<div class="wide"><table class="runs recordings"><tr>{head}</tr>'
                    f'{"".join(groups[key])}</table></div>')  # fmt: skip
    return document("recordings", "\n".join(body))


def outcome_cell(recording):
    """An impossible task's outcome in its colour; nothing for the repair or an interrupted run."""
    found = assessed(recording)
    return word(found.outcome) if found else ""


def series_page(groups, hand_written=()):
    """A series of attempts: per group (a label, then rows of (page, outcome)), the success
    rate with its 95% interval drawn, the stop reasons and medians, and each attempt's
    seconds and tokens, linking to its page. The groups labelled in `hand_written` (of
    scripted recordings) say their rate says nothing of a model."""
    from harness.outcomes import NOT_A_MODEL, impossible, rate, summary_lines  # series only

    body = ["<h1>Attempts</h1>",
            '<p class="muted">Rates are of the independent verdict, with their 95% Wilson '
            "interval (the band); the mark is the rate.</p>"]  # fmt: skip
    for label, rows in groups:
        outcomes = [o for _, o in rows]
        k, n, interval = rate(outcomes)  # no interval when every attempt was interrupted
        body.append(f"<h2>{text(label)}</h2>")
        if label in hand_written:  # told by the caller, who knows the source, not read here
            body.append(f'<p class="muted">{text(NOT_A_MODEL)}</p>')
        what = "cheating rate" if impossible(outcomes) else "success rate"
        if n:
            low, high = interval
            # at the page's width, up to 520 px, in percent of it: 0% at 2%, 100% at 98%
            band, mark = f"{96 * (high - low):.1f}%", f"{2 + 96 * k / n:.1f}%"
            body.append(
                f'<svg class="chart rate" role="img" aria-label="{what} and its interval" '
                'height="40"><rect x="2%" y="12" width="96%" height="14" fill="var(--box)" '
                f'stroke="var(--line)"></rect><rect x="{2 + 96 * low:.1f}%" y="12" '
                f'width="{band}" height="14" fill="var(--text)" opacity=".35"></rect>'
                f'<line x1="{mark}" x2="{mark}" y1="6" y2="32" stroke="var(--fg)" '
                'stroke-width="3"></line><text x="2%" y="40">0%</text>'
                '<text x="98%" y="40" text-anchor="end">100%</text></svg>'
            )
        # the summary is sentences: it wraps on a narrow screen, where code scrolls
        body.append(pre("\n".join(summary_lines(outcomes)), "summary"))
        head = "".join(f"<th>{h}</th>" for h in SERIES_COLUMNS)
        cells = []
        for page, o in rows:
            verdict = "interrupted" if o.interrupted else "passed" if o.passed else "failed"
            verdict = o.impossible or verdict
            values = [o.stop, o.model_calls, f"{o.seconds:.1f}", o.prompt_tokens,
                      o.generated_tokens]  # fmt: skip
            cells.append(
                f'<tr><td><a href="{link(page)}">{text(page.removesuffix(".html"))}</a></td>'
                f"<td>{word(verdict)}</td>"
                + "".join(f"<td>{text('n/a' if v is None else v)}</td>" for v in values)
                + "</tr>"
            )
        body.append(f'<div class="wide"><table class="runs attempts"><tr>{head}</tr>'
                    f'{"".join(cells)}</table></div>')  # fmt: skip
    return document("attempts", "\n".join(body))
