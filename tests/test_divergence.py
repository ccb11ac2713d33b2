"""How a replay's differences are worded (harness/divergence.py): from its own functions,
the parts the replays in test_recorded.py reach only slowly or not at all (no recording
there lacks a final source, or holds a value beyond ASCII that differs); then through
replay, an event changed or missing from a copy of repair.json."""

import json

import pytest

from harness.divergence import comparable, divergences, normalise, short, tool_divergences
from harness.recording import RECORDINGS, load
from replay import DIVERGED
from tests.helpers import altered, replay

READ = {"type": "tool_start", "turn": 1, "index": 0, "name": "read_file", "arguments": {}}
TESTS = {"type": "tool_start", "turn": 1, "index": 1, "name": "run_tests", "arguments": {}}


def result(name, text, seconds=0.1):
    return {"type": "tool_result", "turn": 1, "name": name, "result": text, "seconds": seconds}


def test_a_recording_without_a_final_source_compares_everything_else():
    # Recordings older than the final source have no "final_source": that is no divergence,
    # and no KeyError, while the other comparisons still run.
    recording = {"model_calls": [], "messages": [], "final_tests": None}
    assert divergences(recording, [], [], [], "today's source", None, None) == []
    recording["model_calls"] = [{"request_length": 0}]
    assert divergences(recording, [], [], [], "x", None, None) == [
        "model calls: 1 recorded, 0 made"
    ]


def test_without_a_temporary_folder_no_text_is_taken_for_one():
    # A recording made before the lab saved its folder has none: nothing is replaced, not
    # even the text "None" that str(None) would give.
    assert normalise("None passed in 0.03s", None) == "None passed in <t>s"
    assert normalise("/tmp/x/a.py None", "/tmp/x") == "<repo>/a.py None"


def test_a_models_text_that_quotes_the_recorded_folder_is_the_same_text_replayed():
    # found in a real 0.5B model's rounds: it quoted a test's ImportError, which names the
    # copy it ran in; replayed, its text is the recorded one, in a replay made elsewhere
    said = "ImportError: partially initialized module (/tmp/agent-lab-a1/repo/path_rules.py)"
    done = {"type": "model_done", "turn": 1, "message": {"role": "assistant", "content": said}}
    recording = {"workdir": "/tmp/agent-lab-a1/repo", "model_calls": [], "messages": [],
                 "final_tests": None}  # fmt: skip
    assert divergences(recording, [done], [done], [], "x", None, "/tmp/agent-lab-b2/repo") == []
    other = {**done, "message": {**done["message"], "content": said.replace("a1", "c3")}}
    assert divergences(recording, [done], [other], [], "x", None, "/tmp/agent-lab-b2/repo")
    assert normalise("/tmp/ab /tmp/a", ("/tmp/a", "/tmp/ab")) == "<repo> <repo>"


def test_timings_are_dropped_inside_lists_too():
    # Events and requests are lists of objects: a timing inside one must not count.
    want = [{"name": "a", "seconds": 0.1}, ["4 passed in 0.5s"]]
    have = [{"name": "a", "seconds": 9.0}, ["4 passed in 2.0s"]]
    assert comparable(want, None) == comparable(have, None) == [{"name": "a"}, ["4 passed in <t>s"]]


def test_a_value_is_shown_as_its_text_and_cut_past_160_characters():
    # Text beyond ASCII is shown as itself (a learner compares it with the file), and a
    # value of exactly 160 characters as JSON is whole; one more is cut with "...".
    assert short("é ✓") == '"é ✓"'
    assert short("x" * 158) == '"' + "x" * 158 + '"'
    assert short("x" * 159) == '"' + "x" * 156 + "..."


def test_a_differing_result_is_numbered_by_its_own_call_when_the_runs_differ_in_length():
    # The second call's start follows the first's result: numbering the result by the events
    # after it would call it tool call 2. A replay with fewer tool events than its recording
    # compares the ones both have, and never fails on the rest.
    expected = [READ, result("read_file", "old"), TESTS, result("run_tests", "ok")]
    got = [READ, result("read_file", "new", seconds=5.0)]
    assert tool_divergences(expected, got, None, None) == [
        'tool call 1 (model call 0, read_file) result: result: the recording says "old", '
        'today\'s run did "new"'
    ]
    assert tool_divergences(expected, expected[:1], None, None) == []


def test_a_traceback_through_the_installation_compares_equal_from_any_clone():
    # found by a real Qwen attempt whose edit made the test file fail to import: pytest's
    # own frames named /work/main/.venv/..., and the replay in a fresh clone elsewhere
    # diverged on that path alone
    def frames(lab, python):
        return (
            f"{lab}/.venv/lib/python3.11/site-packages/_pytest/python.py:508: in import\n"
            f"{python}/lib/python3.11/importlib/__init__.py:126: in import_module\n"
            "tests/test_path_rules.py:1: in <module>"
        )

    here = normalise(frames("/work/main", "/root/.pyenv/versions/3.11.7"), None)
    assert here == normalise(frames("/tmp/ci/main", "/usr"), None)
    assert here.startswith("<site-packages>/_pytest/python.py:508")
    assert "<python>/importlib/__init__.py:<n>" in here and "tests/test_path_rules.py:1" in here


# What pytest printed for one edit that broke the test file's import (an ImportError, the
# copy's folder left out), under each Python the lab runs on, as each printed it
IMPORTLIB_LINE = {"3.10": 126, "3.11": 126, "3.12": 90, "3.13": 88}


def collection_error(version, carets, hint="", frozen=(1050, 1027)):
    line = IMPORTLIB_LINE[version]
    lines = [
        f"/usr/lib/python{version}/importlib/__init__.py:{line}: in import_module",
        "    return _bootstrap._gcd_import(name[level:], package, level)",
        *(["           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^"] if carets else []),
        f"<frozen importlib._bootstrap>:{frozen[0]}: in _gcd_import",
        "    ???",
        f"<frozen importlib._bootstrap>:{frozen[1]}: in _find_and_load",
        "tests/test_path_rules.py:1: in <module>",
        "    from path_rules import python_sources",
        "E   ImportError: cannot import name 'python_sources' from 'path_rules' "
        f"(./path_rules.py){hint}",
    ]
    return "\n".join(lines)


def test_a_traceback_compares_equal_under_each_python_the_lab_runs_on():
    # found by replaying the shipped Qwen attempts on 3.10 and 3.13: the interpreter's own
    # frames, carets and wording differed, and every such recording diverged there
    runs = [
        collection_error("3.10", carets=False),
        collection_error("3.11", carets=True, frozen=(1204, 1176)),
        collection_error("3.12", carets=True, frozen=(1387, 1360)),
        collection_error("3.13", carets=True, hint=". Did you mean: 'python_source'?"),
    ]
    for form in (str, json.dumps):  # a tool's result, and the same inside a request
        assert len({normalise(form(run), None) for run in runs}) == 1
    depth = "RecursionError: maximum recursion depth exceeded"
    assert normalise(f"{depth} while calling a Python object, not a list", None) == normalise(
        f"{depth}, not a list", None
    )
    # ... and what the model's code did still differs
    other = collection_error("3.11", carets=True).replace("'python_sources' from", "'x' from")
    assert normalise(other, None) != normalise(runs[1], None)
    assert normalise("line 4\n    ^^^\nline 5", None) == "line 4\nline 5"  # the one cost


# --- through replay: an event changed or missing is a divergence ----------------------------------


def test_altered_event_alone_is_a_divergence(tmp_path):
    # mutation no_event_cmp: replay.py skips event_divergence (tools and requests still match).
    def change(recording):
        recording["events"][-1]["reason"] = "max_turns"
        recording["stop"] = recording["events"][-1]  # kept consistent, or load refuses it

    outcome, output = replay(altered(tmp_path, change))
    calls = len(load(RECORDINGS / "repair.json")["model_calls"])  # the stop is in the last one
    assert outcome == DIVERGED
    assert (
        f'model call {calls}, stopped): reason: the recording says "max_turns", '
        'today\'s run did "assistant_finished"' in output
    )


@pytest.mark.parametrize("length", [160, 161])
def test_a_divergent_value_of_160_characters_is_shown_whole_and_a_longer_one_cut(tmp_path, length):
    text = "x" * (length - 2)  # as JSON, with its two quotes: `length` characters

    def change(recording):
        recording["events"][1]["text"] = text  # the first piece of thinking

    outcome, output = replay(altered(tmp_path, change))
    assert outcome == DIVERGED
    shown = f'"{text}"' if length <= 160 else f'"{text[:156]}...'
    assert f"text: the recording says {shown}, today's run did " in output


def test_missing_recorded_event_is_a_divergence(tmp_path):
    # mutation only_common_events: event_divergence ignores a difference in length.
    outcome, output = replay(altered(tmp_path, lambda r: r["events"].pop()))
    events = len(load(RECORDINGS / "repair.json")["events"])
    assert outcome == DIVERGED
    assert f"{events - 1} events recorded, {events} replayed" in output
