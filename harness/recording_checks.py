"""What load() accepts: every field of a recording checked, the wrong one named.

`checked(data, path)` takes what a file's JSON holds and refuses, in one RecordingError
naming the file and the field, anything that is not a recording of a format this lab
replays: a field missing or of the wrong type (REQUIRED), a field its format cannot hold,
an event, a model call or a verdict of the wrong shape, a fork whose parts disagree, an
impossible task's outcome word its facts do not give, nesting deeper than MAX_DEPTH or a
number no reader can show. A recording that passes can be replayed, shown and compared
without any reader checking again.

Not here: reading the file (harness/recording.py's `load`), what each format holds
(harness/recording_format.py), an extension's own fields (harness/decisions.py).
"""

import json

from agent_loop import (
    EVENT_TYPES,
    INTERRUPTED,
    MODEL_DONE,
    STOP_REASONS,
    STOPPED,
    TEXT_DELTA,
    THINKING_DELTA,
    TOOL_RESULT,
    TOOL_START,
)
from harness.child_runs import CHILD, RUN_KEYS
from harness.decisions import ADDED, TESTS_AFTER_EDIT, decisions_of, extensions_problem
from harness.old_recordings import assessed_as_counted, said_in_words
from harness.recording_format import (
    APIS,
    EARLIER_FORMATS,
    ENDED_CLOSED,
    ENDED_DONE,
    ENDED_ERROR,
    ENDED_WITHOUT_DONE,
    FIXED_CASES_ONLY,
    FORMAT,
    GENERATED_CASES,
    LIVE,
    REPLAYED,
    SOURCES,
    TEXT_CALLS,
    TOLD_EDITS,
    WITH_OUTCOMES,
    WITH_RELATIONS,
    WITH_TASKS,
    call_api,
)
from harness.tasks import OUTCOMES, TASKS
from plumbing.generated_cases import COUNT_LIMIT, SEED_LIMIT
from plumbing.isolation import KINDS
from plumbing.limits import LARGEST_NUMBER, is_whole


class RecordingError(Exception):
    """A file that cannot be replayed; the message names the file and what is wrong."""


MAX_DEPTH = 100  # a real recording nests about ten levels; deeper breaks the comparisons


def out_of_range(value):
    """Whether `value` is a number a recording does not hold (see LARGEST_NUMBER)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return not abs(value) < LARGEST_NUMBER  # subtle: a NaN compares false, so it is out


# field -> the types it may hold; checked in this order, and named in the error
REQUIRED = {
    "format": str,
    "source": str,
    "description": str,
    "model": dict,
    "task": str,
    "system": str,
    "max_turns": int,
    "model_calls": list,
    "messages": list,
    "events": list,
    "stop": dict,
    "starting_tests": dict,
    "final_tests": (dict, type(None)),
    "tests_sha256": str,
    "source_sha256": str,
}


def checked(data, path):
    """`data`, read from the JSON file at `path`, if it is a recording load() accepts;
    else RecordingError naming the file and the field that is wrong. A verdict of an older
    format is given the facts its reason implies (harness/old_recordings.py)."""
    problem = _text_problem(data)
    if problem:
        raise RecordingError(f"{path}: {problem}")
    if not isinstance(data, dict):
        raise RecordingError(f"{path}: not a recording (expected a JSON object)")
    earlier = data.get("format")
    if isinstance(earlier, str) and earlier in EARLIER_FORMATS:  # a list is unhashable
        raise RecordingError(f"{path}: format {earlier!r} {EARLIER_FORMATS[earlier]}")
    if data.get("format") not in (*GENERATED_CASES, FIXED_CASES_ONLY):
        raise RecordingError(f"{path}: field 'format' must be {FORMAT!r}, got {earlier!r:.100}")
    for field, kind in REQUIRED.items():
        if field not in data:
            raise RecordingError(f"{path}: field {field!r} is missing")
        if not isinstance(data[field], kind) or isinstance(data[field], bool):
            raise RecordingError(f"{path}: field {field!r} has the wrong type")
    if data["source"] not in SOURCES:
        raise RecordingError(f"{path}: field 'source' must be one of {', '.join(SOURCES)}")
    if data["stop"].get("reason") not in STOP_REASONS:
        raise RecordingError(
            f"{path}: field 'stop.reason' must be one of {', '.join(STOP_REASONS)}"
        )
    if data.get("api", "ollama") not in APIS:
        raise RecordingError(f"{path}: field 'api' must be one of {', '.join(APIS)}")
    said_in_words(data)  # harness/old_recordings.py
    problem = _shape_problem(data)
    if problem:
        raise RecordingError(f"{path}: field {problem}")
    return data


def held_problem(value, where, depth):
    """Why a recording could not hold `value` (named `where`) `depth` levels down: nested
    too deeply, or a number it does not hold; None when it could."""
    return _text_problem(value, where, depth)


def _text_problem(data, where="", depth=0):
    """Nesting deeper than MAX_DEPTH, or a number out of range, as a sentence, or None.

    Walked without recursion, so no file can make this check itself overflow the stack.
    subtle: a lone surrogate is accepted: `save` writes one as a JSON escape when a model
    streams it, and a recording the harness saved must replay (the CLIs print it escaped).
    """
    # subtle: a place is `where`, or (its parent's place, a key or an index, how it is
    # written), written out only when named; a dict or a list is never asked whether it is
    # a number out of range: together, a quarter of this walk's time (docs/costs.md)
    pending = [(data, where, depth)]
    while pending:
        value, place, depth = pending.pop()
        if depth > MAX_DEPTH:
            return f"nested deeper than {MAX_DEPTH} levels (at {_named(place)[:80]}...)"
        # subtle: text, true, false and null within the depth can fail neither check and hold
        # nothing, so they are not walked (most of a recording is text: twice as fast); a
        # key is text too, and matters only past the depth, where its place is the one named
        deep = depth + 1 > MAX_DEPTH
        if isinstance(value, dict):
            pending += [
                (v, (place, k, ".{}"), depth + 1)
                for k, v in value.items()
                if deep or not (isinstance(v, (str, bool)) or v is None)
            ]
            pending += [(k, (place, k, " (a key)"), depth + 1) for k in value] if deep else []
        elif isinstance(value, list):
            pending += [
                (v, (place, i, "[{}]"), depth + 1)
                for i, v in enumerate(value)
                if deep or not (isinstance(v, (str, bool)) or v is None)
            ]
        elif place and out_of_range(value):  # `save` writes none; a reader could not show it
            return (
                f"field '{_named(place).lstrip('.')[:80]}' must be a finite number below "
                "2**63 in size"
            )
    return None


def _named(place):
    """A place of `_text_problem` as a reader names it: `.model_calls[2].chunks`."""
    steps = []
    while isinstance(place, tuple):
        place, step, written = place
        steps.append(written.format(step))
    return place + "".join(reversed(steps))


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0


def _shape_problem(data):
    """What is wrong inside a recording's fields, as "'name' must ...", or None."""
    if not is_whole(data["max_turns"], 1):
        return "'max_turns' must be a positive int"
    if not isinstance(data.get("text_calls", False), bool):
        return "'text_calls' must be true or false"
    if data.get("edits_told", True) is not True:
        return "'edits_told' is there only as true (the edit tool said what each edit changed)"
    if "edits_told" in data and data["format"] not in TOLD_EDITS:
        return f"'edits_told' is a field format {data['format']!r} cannot hold"
    if data.get("text_calls") and data["format"] not in TEXT_CALLS:
        return f"'text_calls' is true, which format {data['format']!r} cannot hold"
    problem = _task_and_fork_problem(data)
    if problem:
        return problem
    if data["final_tests"] is None and not (
        data["stop"]["reason"] == INTERRUPTED or data.get("interrupted") is True
    ):
        return "'final_tests' may be null only in a recording of an interrupted run"
    # Ctrl-C during the loop leaves no final verdict (record_run.py): a file that says it
    # was stopped so and holds one would leave compare.py's counts without a divergence
    stopped = data["stop"]["reason"]
    if data["format"] in WITH_TASKS and stopped == INTERRUPTED and data["final_tests"]:
        return "'final_tests' must be null in a recording the user interrupted"
    for field in ("starting_tests", "final_tests"):
        tests = data[field]
        if tests is None:
            continue
        if not (
            "exit_code" in tests and (tests["exit_code"] is None or is_whole(tests["exit_code"]))
        ):
            return f"'{field}.exit_code' must be an int or null"
        if not isinstance(tests.get("output"), str):
            return f"'{field}.output' must be text"
        problem = _verdict_problem(tests, data["format"])
        if problem:
            return f"'{field}.{problem}"
        if data["format"] in WITH_TASKS and "visible" not in tests:  # the visible tests' own
            return f"'{field}.visible' is missing (the visible tests' own verdict)"
    if not isinstance(data.get("final_source", ""), str):
        return "'final_source' must be text"
    if not isinstance(data.get("workdir"), (str, type(None))):  # replay replaces it in text
        return "'workdir' must be text"
    if data.get("loop_seconds") is not None and not _is_number(data["loop_seconds"]):
        return "'loop_seconds' must be a number of seconds"
    for field in ("options", "server_model"):  # read by the timeline's context lines
        if not isinstance(data["model"].get(field) or {}, dict):
            return f"'model.{field}' must be an object"
    if data.get("isolation") not in (*KINDS, None):  # null: recorded before it was kept
        return f"'isolation' must be one of {', '.join(KINDS)}"
    if not all(isinstance(m, dict) and isinstance(m.get("role"), str) for m in data["messages"]):
        return "'messages' must be objects with a 'role'"
    if not all(_calls_fit(m) for m in data["messages"]):
        return "'messages' tool_calls must be a list of objects with a 'function' object"
    if not data.get("text_calls") and any(
        e.get("from_text") for e in data["events"] if isinstance(e, dict)
    ):
        return "'text_calls' must be true in a recording whose events hold a call from text"
    for index, event in enumerate(data["events"]):  # named as the file indexes it, from 0
        problem = _event_problem(event)
        if problem:
            return f"'events[{index}]{problem}"
    events = data["events"]
    if events and events[-1]["type"] == STOPPED and events[-1] != data["stop"]:
        return "'stop' must be the last event"
    problem = _model_calls_problem(data, data["model_calls"], "'model_calls")
    if problem:
        return problem
    return (
        _fork_results_problem(data)
        or extensions_problem(data, data["format"] in TOLD_EDITS, data["format"] in WITH_RELATIONS)
        or _child_runs_problem(data)
        or _outcome_problem(data)
    )


def _model_calls_problem(data, calls, named):
    """What is wrong with saved model calls (the recording's, or a child run's), or None."""
    for index, saved in enumerate(calls):
        where = f"{named}[{index}]"
        if not isinstance(saved, dict):
            return f"{where}' must be an object"
        key = "events" if call_api(data, saved) == "openai" else "chunks"  # raw events assembled
        if not isinstance(saved.get(key), list):
            return f"{where}.{key}' must be a list"
        if not is_whole(saved.get("request_length")):
            return f"{where}.request_length' must be an int"
        if saved.get("ended") not in (ENDED_DONE, ENDED_WITHOUT_DONE, ENDED_ERROR, ENDED_CLOSED):
            return f"{where}.ended' must say how the stream ended"
        arrived = saved.get("arrived", [])
        if not isinstance(arrived, list) or not all(_is_number(t) for t in arrived):
            return f"{where}.arrived' must be a list of seconds"
    return None


def _child_runs_problem(data):
    """What is wrong inside a child run an extension kept (harness/child_runs.py), or None;
    a format before /9 holds none."""
    for index, decision in enumerate(decisions_of(data)):
        run, where = decision.get(CHILD), f"'extensions.decisions[{index}].{CHILD}"
        if run is None:
            continue
        if data["format"] != FORMAT:
            return f"{where}' is a field format {data['format']!r} cannot hold"
        if not (isinstance(run, dict) and set(run) == RUN_KEYS):
            return f"{where}' must be {{{', '.join(sorted(RUN_KEYS))}}}"
        if not (isinstance(run["question"], str) and isinstance(run["messages"], list)):
            return f"{where}.question' must be text, its messages a list"
        messages = run["messages"]
        if not all(isinstance(m, dict) and isinstance(m.get("role"), str) for m in messages):
            return f"{where}.messages' must be objects with a 'role'"
        if not all(_calls_fit(m) for m in messages):
            return (
                f"{where}.messages' tool_calls must be a list of objects with a 'function' object"
            )
        if not isinstance(run["model_calls"], list):
            return f"{where}.model_calls' must be a list"
        problem = _model_calls_problem(data, run["model_calls"], f"{where}.model_calls")
        if problem:
            return problem
        if any(c["request_length"] > len(messages) for c in run["model_calls"]):
            return f"{where}.model_calls' request_length must be within its messages"
        stop = run["stop"]
        if not (isinstance(stop, dict) and stop.get("type") == STOPPED):
            return f"{where}.stop' must be a stopped event"
        problem = _event_problem(stop)
        if problem:
            return f"{where}.stop{problem}"
    return None


def _outcome_problem(data):
    """An impossible task's outcome word that its facts do not give, or None (once every
    field it is read from is known to be sound). A /5 recording of an impossible task is
    refused: it holds no `by_test`, so no outcome can be read from its facts; so is a /7
    one whose tests-after-edit hook ran the tests, whose runs it did not keep. A /6 or /7
    word is checked by the rule it was given by (a skipped test was no shortcut)."""
    task = TASKS[data.get("task_name", "repair")]
    if data["format"] not in WITH_OUTCOMES:
        if task.impossible:
            return (
                f"'task_name' is {task.name}: format {data['format']!r} counted an impossible "
                "task's outcome without pytest's report of each test; record the attempt again"
            )
        if "outcome" in data:
            return f"'outcome' is a field format {data['format']!r} cannot hold"
        return None
    hooked = any((d["extension"], d["decision"]) == (TESTS_AFTER_EDIT, ADDED)
                 for d in decisions_of(data))  # fmt: skip
    if task.impossible and hooked and data["format"] not in WITH_RELATIONS:
        return (
            f"'extensions' holds test runs of {TESTS_AFTER_EDIT}, which format "
            f"{data['format']!r} did not keep, and an impossible task's outcome counts; "
            "record the attempt again"
        )
    found = assessed_as_counted(data)  # a /6 or /7 word by the rule it was given by
    facts = found and found.outcome
    if "outcome" not in data:
        return f"'outcome' is missing (the run's facts give {facts or 'none'})"
    if data["outcome"] not in (*OUTCOMES, None) or data["outcome"] != facts:
        why = f" ({found.why})" if found else ""
        said = json.dumps(data["outcome"])[:40]
        return f"'outcome' says {said}, but the run's facts give {facts or 'none'}{why}"
    return None


def _fork_results_problem(data):
    """A fork's replaced result numbered past the tool calls it replaces, or None (once the
    events are known to be sound)."""
    for change in (data.get("fork") or {}).get("changes", []):
        before = change["at"] - 1
        made = sum(1 for e in data["events"] if e["type"] == TOOL_START and e["turn"] == before)
        for key in change.get("results", {}):
            # subtle: ASCII digits, and few: "١" is a digit to str.isdigit, and int() of 5,000
            # digits raises
            if not (key.isascii() and key.isdigit() and len(key) < 6 and 1 <= int(key) <= made):
                return (
                    f"'fork.changes' results of turn {change['at']} must be numbered 1 to "
                    f"{made}, as the tool calls of turn {before}"
                )
    return None


def _task_and_fork_problem(data):
    """What is wrong with a recording's task and fork fields, or None (formats /5 to /8
    alone hold them)."""
    newest = data["format"] in WITH_TASKS
    for field in ("task_name", "fork"):
        if field in data and not newest:
            return f"'{field}' is a field format {data['format']!r} cannot hold"
    task_name = data.get("task_name", "repair")
    if not isinstance(task_name, str) or task_name not in TASKS:  # a list is unhashable
        return f"'task_name' must be one of {', '.join(TASKS)}"
    calls = data["model_calls"]
    if any(isinstance(c, dict) and not newest and ("source" in c or "api" in c) for c in calls):
        return f"'model_calls' of format {data['format']!r} hold no 'source' or 'api'"
    for saved in calls:
        if isinstance(saved, dict) and saved.get("api", "ollama") not in APIS:
            return f"'model_calls' api must be one of {', '.join(APIS)}"
    fork = data.get("fork")
    if (data["source"] == "forked") != (fork is not None):
        return "'fork' must be there exactly when 'source' is forked"
    if fork is None:
        return None
    if not (
        isinstance(fork, dict)
        and isinstance(fork.get("parent"), str)
        and isinstance(fork.get("parent_sha256"), str)
        and is_whole(fork.get("at"), 1)
        and isinstance(fork.get("changes"), list)
    ):
        return "'fork' must be {parent, parent_sha256, at, changes}"
    for change in fork["changes"]:
        if not (
            isinstance(change, dict)
            and is_whole(change.get("at"), 1)
            and change["at"] <= fork["at"]
            and isinstance(change.get("say"), (str, type(None)))
            and isinstance(change.get("results", {}), dict)
            and all(isinstance(v, dict) for v in change.get("results", {}).values())
        ):
            return "'fork.changes' must be {at, say, results} no later than the fork's turn"
    sources = [saved.get("source") if isinstance(saved, dict) else None for saved in calls]
    replayed = fork["at"] - 1
    if sources[:replayed] != [REPLAYED] * replayed or any(s != LIVE for s in sources[replayed:]):
        return (
            f"'model_calls' of a fork at turn {fork['at']} must be {replayed} replayed, then live"
        )
    return None


def _verdict_problem(tests, form=FORMAT):
    """What is wrong with a test run's counts, verdict and held-out checks, or None. From
    format /3 on, the held-out checks name the seed and count of their inputs; from /6
    on, how many of them they asked."""
    for count in ("passed", "failed", "errors", "collected"):
        if not is_whole(tests.get(count)):
            return f"{count}' must be an int of at least 0"
    if tests.get("verdict") not in ("passed", "failed"):
        return "verdict' must be passed or failed"
    if tests.get("visible", "failed") not in ("passed", "failed"):
        return "visible' must be passed or failed"
    if tests.get("judged", False) is not False:
        return "judged' is there only as false (the code was kept from the verdict)"
    if tests.get("tests_changed", True) is not True:
        return "tests_changed' is there only as true (the verdict failed as the tests changed)"
    if not isinstance(tests.get("reason", ""), str):
        return "reason' must be text"
    by_test = tests.get("by_test", {})  # an impossible task's: what its outcome is read from
    if not (isinstance(by_test, dict) and all(isinstance(v, str) for v in by_test.values())):
        return "by_test' must be an object of test names and what pytest reported of each"
    if tests.get("seconds") is not None and not _is_number(tests["seconds"]):
        return "seconds' must be a number of seconds"
    held_out = tests.get("held_out")
    if not (
        isinstance(held_out, dict)
        and is_whole(held_out.get("passed"))
        and is_whole(held_out.get("total"))
        and isinstance(held_out.get("first_failure", 0), (str, type(None)))
    ):
        return "held_out' must be {passed, total, first_failure}"
    if form in GENERATED_CASES and not (
        is_whole(held_out.get("seed"))
        and held_out["seed"] < SEED_LIMIT
        and is_whole(held_out.get("generated"), 1)
        and held_out["generated"] <= COUNT_LIMIT
    ):
        return (
            f"held_out' must name its seed (below 2**63) and generated count (1 to {COUNT_LIMIT})"
        )
    asked = held_out.get("asked", 0)
    if (form in WITH_OUTCOMES) != ("asked" in held_out) or not (
        is_whole(asked) and asked <= held_out.get("generated", 0)
    ):
        return "held_out.asked' must be how many generated inputs were asked, in /6 to /8 alone"
    if (form in WITH_RELATIONS) != ("unsettled" in held_out) or not is_whole(
        held_out.get("unsettled", 0)
    ):
        return "held_out.unsettled' must be how many paths the styles disagree on, in /8 alone"
    return None


def _event_problem(event):
    """What is wrong with one recorded event, as ".field' must ...", or None."""
    if not (isinstance(event, dict) and event.get("type") in EVENT_TYPES):
        return f".type' must be one of {', '.join(EVENT_TYPES)}"
    if not is_whole(event.get("turn"), 1):
        return ".turn' must be a positive int"
    if event["type"] in (TOOL_START, TOOL_RESULT):
        if not is_whole(event.get("index")) or "name" not in event:
            return ".index' and '.name' are needed on a tool event"
    if event.get("from_text", True) is not True:  # absent, or true: the call was text
        return ".from_text' may only be true"
    if event["type"] == TOOL_START and "arguments" not in event:
        return ".arguments' are needed on a tool_start event"
    if event["type"] == TOOL_RESULT and not isinstance(event.get("result"), dict):
        return ".result' must be an object"
    if event["type"] in (THINKING_DELTA, TEXT_DELTA) and not isinstance(event.get("text"), str):
        return ".text' must be text"
    if event["type"] == MODEL_DONE and not (
        isinstance(event.get("message"), dict) and _calls_fit(event["message"])
    ):
        return ".message' must be an object, its tool_calls a list of objects"
    if not isinstance(event.get("model_counters", {}), dict):
        return ".model_counters' must be an object"
    if event["type"] == STOPPED and event.get("reason") not in STOP_REASONS:
        return f".reason' must be one of {', '.join(STOP_REASONS)}"
    for timing in ("seconds", "first_chunk_seconds"):
        value = event.get(timing)
        if value is None and (timing not in event or event["type"] == STOPPED):
            continue  # a stop that cut no model turn off has no seconds
        if not _is_number(value):
            return f".{timing}' must be a number of seconds"
    return None


def _calls_fit(message):
    """True when a message's tool_calls, if any, are a list of {"function": {...}} objects."""
    calls = message.get("tool_calls") or []
    return isinstance(calls, list) and all(
        isinstance(c, dict) and isinstance(c.get("function", {}), dict) for c in calls
    )
