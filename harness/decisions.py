"""What a recording keeps of the extensions a run turned on (extensions/; docs/hooks.md):
its optional field `extensions`, checked strictly when it is loaded, and how the terminal,
the page and replay read it.

    "extensions": {
      "on": [{"name": "syntax", "settings": {}}],
      "decisions": [{"extension": "syntax", "call": 3, "decision": "undone", "said": "..."}]
    }

`on`: each extension the run had, in the order they wrap the tools, with its settings;
`decisions`: every decision they made, in order, each about the `call`th call the tools
ran (the `call`th tool_start event whose index is below MAX_CALLS_RUN: past it no call
runs), or with `call` 0 (ANSWER), before any of them, about the model's answer (the
one-shot's: what it wrote). From format /8 on, a decision of tests-after-edit that added
the tests' summary keeps the test run it made (`tests`, as run_tests returns it), which an
impossible task's outcome counts (harness/tasks.py). From /9 on, an `explored` decision of
the explorer keeps the child run it made (`run`: harness/child_runs.py), and each decision
of --mcp the result of the call it was about (`result`: extensions/mcp_tools.py). A
decision a person made at a terminal (--approve) also says how many `seconds` they took: a
timing, like an event's, never compared by a replay, and kept apart from the tool's own time
(`deciding`). A recording without the field had none on, as every recording made before
them.

Not here: the extensions themselves (extensions/ stands above harness/: nothing here imports
it), comparing a replay's decisions (divergence.py).
"""

from agent_loop import MODEL_DONE, TOOL_RESULT, TOOL_START
from harness.child_runs import CHILD, EXPLORED, EXPLORER
from plumbing.limits import MAX_CALLS_RUN, is_whole
from plumbing.mcp_offer import SEPARATOR, schema_size, settings_problem

# the decision of --keep-results that a result is sent as the line it says (`as_sent`)
KEEP_RESULTS, SHORTENED = "keep-results", "shortened"
ON_KEYS, DECISION_KEYS = {"name", "settings"}, {"extension", "call", "decision", "said"}
# --mcp's decisions, each keeping the result the model read (`result`, format /9 on)
MCP, MCP_RESULT = "mcp", "result"
# the decision of --hook tests-after-edit that keeps its test run (`tests`, format /8 on)
TESTS_AFTER_EDIT, ADDED, TESTS = "tests-after-edit", "added", "tests"
TIMED = "seconds"  # the optional key of a decision a person made: how long they took
ANSWER = 0  # the `call` of a decision about the model's answer, not about a tool call
FROM_CALL = "from_call"  # the setting each extension takes: the first call it acts on
NONE = "none"  # the set of extensions of a recording that had none: the plain loop


def calls_made(events, kind=TOOL_START):
    """The events of `kind` (tool_start or tool_result) of the calls the tools ran, in order:
    the Nth is the one a decision with `call` N is about."""
    return [e for e in events if e["type"] == kind and e["index"] < MAX_CALLS_RUN]


def decisions_of(recording):
    return (recording.get("extensions") or {}).get("decisions", [])


def kept_test_runs(decisions):
    """{call: the test run tests-after-edit made after that call}: each `tests` it kept
    (`decisions`: a run's, or a loaded recording's, whose every decision load() checked)."""
    return {d["call"]: d[TESTS] for d in decisions if TESTS in d}


def without_test_runs(decisions):
    """`decisions` as a recording made before /8 kept them: without `tests`."""
    return [{k: v for k, v in d.items() if k != TESTS} for d in decisions]


def answered(decisions, events):
    """The decisions about calls whose result is among `events`: a run cut by the clock or
    Ctrl-C during a call may have decided about it, and a replay stops before that call."""
    results = len(calls_made(events, TOOL_RESULT))
    return [d for d in decisions if d["call"] <= results]


def by_call(recording):
    """{(turn, index): [the decisions about that call]}, for a page to show under each call;
    those about an answer under (its turn, None): the Nth under the Nth complete answer's
    turn (--rounds decides about each; a later one than the answers, under the last)."""
    starts = calls_made(recording["events"])
    done = [e["turn"] for e in recording["events"] if e["type"] == MODEL_DONE] or [1]
    found, answers = {}, 0
    for decision in decisions_of(recording):
        if not decision["call"]:
            answers += 1
        answer = {"turn": done[min(answers, len(done)) - 1]}
        start = starts[decision["call"] - 1] if decision["call"] else answer
        found.setdefault((start["turn"], start.get("index")), []).append(decision)
    return found


def mcp_lines(recordings):
    """What `compare.py` says of the MCP servers of `recordings` (none: []): each server, its
    tools and the characters of schema it put in every request, and where the calls went."""
    servers, calls = {}, {}
    for recording in recordings:
        for server in _mcp_servers((recording.get("extensions") or {}).get("on", [])) or ():
            size = schema_size(server["name"], server["tools"])
            servers[server["name"]] = f"{server['name']} ({len(server['tools'])} tools, {size:,}"
        started = calls_made(recording["events"])
        for decision in decisions_of(recording):
            if decision["extension"] == MCP and 0 < decision["call"] <= len(started):
                server = str(started[decision["call"] - 1].get("name")).split(SEPARATOR)[0][:20]
                calls[server] = calls.get(server, 0) + 1
    if not servers:
        return []
    said = "; ".join(f"{line} characters of schema in every request)" for line in servers.values())
    went = ", ".join(f"{name} {count}" for name, count in calls.items()) or "none"
    return [f"MCP servers: {said}; their tools were asked for: {went}"]


def names_on(recording):
    """The set of extensions a recording had, as compare.py groups by it: their names in
    alphabetical order, joined by " + " ("syntax + tests-after-edit"), or NONE."""
    on = (recording.get("extensions") or {}).get("on", [])
    return " + ".join(sorted(e["name"] for e in on)) or NONE


def with_lines(messages, lines):
    """A copy of `messages` whose first len(`lines`) tool results are those lines, in order:
    the request --keep-results sends (extensions/keep_results.py shortens the oldest first)."""
    sent, lines = list(messages), iter(lines)
    for index, message in enumerate(sent):
        if message.get("role") == "tool":
            line = next(lines, None)
            if line is None:
                break
            sent[index] = {**message, "content": line}
    return sent


def as_sent(recording, number, messages=None):
    """The messages of model call `number` (from 1) as they were sent: the first
    `request_length` of the conversation (`messages`, else the recording's), with the line
    of each result shortened by then in place (decisions made when no more calls had run)."""
    length = recording["model_calls"][number - 1]["request_length"]
    request = (recording["messages"] if messages is None else messages)[:length]
    shortened = [(d["call"], d["said"]) for d in decisions_of(recording)
                 if (d["extension"], d["decision"]) == (KEEP_RESULTS, SHORTENED)]  # fmt: skip
    if not shortened:
        return request
    before = len(calls_made([e for e in recording["events"] if e["turn"] < number]))
    return with_lines(request, [line for call, line in shortened if call <= before])


def decision_line(decision):
    """One decision as the terminal and the page show it: `[syntax] undone: SyntaxError ...`,
    `[approve] allowed: by the user (you took 3.2 s to decide)`."""
    said = f": {decision['said']}" if decision["said"] else ""
    took = f" (you took {decision[TIMED]:.1f} s to decide)" if TIMED in decision else ""
    return f"[{decision['extension']}] {decision['decision']}{said}{took}"


def deciding(events, decisions):
    """{turn: seconds people took to decide about its calls}: time inside the calls' own
    `seconds` (the loop times the whole call), which is not the tools' (timeline.py)."""
    timed = [d for d in decisions or () if TIMED in d]
    results = calls_made(events, TOOL_RESULT) if timed else []
    took = {}
    for decision in timed:
        call = decision.get("call")
        if isinstance(call, int) and 0 < call <= len(results):
            turn = results[call - 1]["turn"]
            took[turn] = took.get(turn, 0.0) + decision[TIMED]
    return took


def extensions_problem(data, holds, keeps_tests=True):
    """What is wrong with a recording's `extensions` (once its events are known to be sound),
    as "'extensions...' must ...", or None. `holds`: whether its format may hold the field;
    `keeps_tests`: whether it keeps the test runs of tests-after-edit (/8 on)."""
    if "extensions" not in data:
        return None
    if not holds:
        return f"'extensions' is a field format {data['format']!r} cannot hold"
    field = data["extensions"]
    if not (isinstance(field, dict) and set(field) == {"on", "decisions"}):
        return "'extensions' must be {on, decisions}"
    on = field["on"]
    if not (isinstance(on, list) and on and all(_exactly(e, ON_KEYS) for e in on)):
        return "'extensions.on' must be a list of at least one {name, settings}"
    names = [e["name"] for e in on]
    if not all(isinstance(n, str) and n for n in names) or len(set(names)) < len(names):
        return "'extensions.on' names must be distinct, non-empty text"
    if not all(isinstance(e["settings"], dict) for e in on):
        return "'extensions.on' settings must be objects"
    made, last = len(calls_made(data["events"])), ANSWER
    for index, extension in enumerate(on):
        # subtle: the rest of the settings' shape is checked where they are acted on, by
        # each extension (extensions/); a call past the run's own could only hold one back
        first = extension["settings"].get("from_call")
        if is_whole(first) and first > made + 1:
            return (
                f"'extensions.on[{index}].settings.from_call' is {first}, past the calls the "
                f"tools ran: an extension acts from one of them, or from the call after the "
                f"last, at most {made + 1}"
            )
    if not isinstance(field["decisions"], list):
        return "'extensions.decisions' must be a list"
    started, offered = calls_made(data["events"]), _mcp_offered(on)
    for index, decision in enumerate(field["decisions"]):
        where = f"'extensions.decisions[{index}]"
        plain = dict(decision, **{TIMED: None}) if isinstance(decision, dict) else decision
        kept = ((), (TESTS,), (CHILD,), (MCP_RESULT,))  # what one kind of decision keeps
        if not any(_exactly(plain, DECISION_KEYS | {TIMED, *k}) for k in kept):
            return f"{where}' must be {{extension, call, decision, said}}, and may say seconds"
        if TIMED in decision and not _seconds(decision[TIMED]):
            return f"{where}.seconds' must be a number of seconds"
        if decision["extension"] not in names:
            return f"{where}.extension' must name an extension in 'extensions.on'"
        call = decision["call"]
        # in order; call ANSWER (0), the one-shot's answer, only before any call the tools ran
        if not (is_whole(call) and last <= call <= made):
            return f"{where}.call' must be a call the tools ran, {max(last, 1)} to {made}, in order"
        if not (isinstance(decision["decision"], str) and decision["decision"]):
            return f"{where}.decision' must be a word"
        if not isinstance(decision["said"], str):
            return f"{where}.said' must be text"
        problem = _test_run_problem(decision, keeps_tests, data.get("format"))
        problem = problem or _child_run_problem(decision) or _mcp_result_problem(decision)
        problem = problem or _called_problem(decision, started, offered)
        if problem:
            return f"{where}{problem}"
        last = call
    return None


def _test_run_problem(decision, keeps_tests, form):
    """What is wrong with a decision's `tests` (the test run tests-after-edit made), as
    ".tests' must ...", or None: from /8 on, each decision that added the tests' summary
    keeps one, and no other decision does."""
    made = (decision["extension"], decision["decision"]) == (TESTS_AFTER_EDIT, ADDED)
    if TESTS not in decision:
        return f".{TESTS}' is missing (the test run it made)" if made and keeps_tests else None
    if not keeps_tests:
        return f".{TESTS}' is a field format {form!r} cannot hold"
    if not made:
        return f".{TESTS}' is held only by an {ADDED} decision of {TESTS_AFTER_EDIT}"
    run = decision[TESTS]
    by_test = run.get("by_test", {}) if isinstance(run, dict) else None
    if not (isinstance(by_test, dict) and all(isinstance(v, str) for v in by_test.values())):
        return f".{TESTS}' must be a test run, its by_test an object of names and what pytest said"
    return None


def _child_run_problem(decision):
    """What is wrong with where a decision's `run` is, as ".run' must ...", or None: each
    `explored` decision (the explorer's, or a sub-agent's made like it) keeps one, and no
    other decision does (its inside is checked with the recording's own model calls:
    harness/recording_checks.py)."""
    if (decision["decision"] == EXPLORED) != (CHILD in decision):
        return f".{CHILD}' is held by each {EXPLORED} decision, and no other"
    return None


def _mcp_result_problem(decision):
    """Each decision of --mcp keeps the result the model read (an object), and no other."""
    if (decision["extension"] == MCP) != (MCP_RESULT in decision):
        return f".{MCP_RESULT}' is held by each decision of {MCP}, and no other"
    if MCP_RESULT in decision and not isinstance(decision[MCP_RESULT], dict):
        return f".{MCP_RESULT}' must be an object, as a tool's result"
    return None


def _mcp_servers(on):
    """The servers of --mcp among the extensions `on`, when its settings are sound (load()
    leaves them to replay, which refuses unsound ones); None: none on, or unsound."""
    settings = next((e["settings"] for e in on if e["name"] == MCP), None)
    return None if settings is None or settings_problem(settings) else settings["servers"]


def _mcp_offered(on):
    """The SERVER__TOOL names --mcp's sound settings offered (none on, or unsound: None)."""
    servers = _mcp_servers(on)
    if servers is None:
        return None
    return {f"{s['name']}{SEPARATOR}{t['name']}" for s in servers for t in s["tools"]}


def _called_problem(decision, started, offered):
    """The explorer's child run is about an `explore` call, a decision of --mcp about a call
    of one of its servers' tools: as ".call' must ...", or None."""
    call = decision["call"]
    name = started[call - 1].get("name") if call > 0 else None
    if (decision["extension"], CHILD in decision) == (EXPLORER, True) and name != "explore":
        return ".call' of the explorer's child run must be an explore call"
    if decision["extension"] == MCP and offered is not None and name not in offered:
        return f".call' of a decision of {MCP} must be a call of one of its servers' tools"
    return None


def _exactly(value, keys):
    return isinstance(value, dict) and set(value) == keys


def _seconds(value):
    finite = isinstance(value, (int, float)) and not isinstance(value, bool) and value == value
    return finite and 0 <= value < float("inf")
