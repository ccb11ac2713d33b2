"""Tests of the terminal printer's lines: test counts, verdicts and what a run printed."""

import io

import pytest

from harness import console  # not `import test_line`: pytest would collect it as a test
from harness.console import RunPrinter, verdict_lines
from harness.recording import RECORDINGS, load
from plumbing.sample import SAMPLE_REPO, copy_sample
from plumbing.verdict_words import HELD_OUT_DOCS

SOURCE = "path_rules.py"  # the sample's one source file


def test_tests_that_ran_and_failed_read_as_their_counts_not_as_a_reason():
    # the counts say all a failing run has to say; a reason is for tests that never ran
    failed = {"verdict": "failed", "reason": "not every test passed", "failed": 1, "passed": 3}
    assert console.test_line(failed) == "1 failed · 3 passed"
    crashed = {"verdict": "failed", "reason": "no tests ran", "errors": 1}
    assert console.test_line(crashed) == "failed: no tests ran (1 errors)"


@pytest.mark.parametrize(
    "name, said",
    [
        ("cheats/selects-stubs.json", "depends on the seed each run draws; relations:"),
        (  # a real attempt of format /7
            "extensions/loop/qwen2.5-coder-1.5b-cc324af0-loop-1.json",
            "depends on the seed each run draws; unsettled:",
        ),
        ("live/qwen2.5-coder-1.5b-1.json", ""),  # /4, the first draw: 520 every time, no word
    ],
    ids=["today", "draw-of-6-and-7", "first-draw"],
)
def test_the_first_verdict_says_what_its_held_out_words_mean(name, said):
    # the words a newcomer meets on the first lines of every run and replay, explained
    # there once: what the checks are, why their count changes, the draw's own word
    starting = load(RECORDINGS / name)["starting_tests"]
    lines = verdict_lines("Starting verdict", starting, explained=True)
    assert lines[:3] == verdict_lines("Starting verdict", starting)  # the line itself as stored
    note = lines[3]
    assert note.startswith("  (held-out: inputs the model never saw, answered by its code in")
    assert len(lines) == 4 and said in note and note.endswith(f"; see {HELD_OUT_DOCS})")
    assert ("depends on the seed" in note) == bool(said)  # the first draw's count never does


def test_only_the_held_out_label_gains_a_colon_not_a_failure_that_says_checks():
    # the first failure is a test's own words: changed, it would misquote the test
    held_out = {"passed": 9, "total": 10, "first_failure": "two checks disagree on checks x"}
    result = {"verdict": "passed", "passed": 4, "held_out": held_out}
    assert verdict_lines("Independent verdict", result)[2] == (
        "  held-out checks: 9 of 10 passed (first failure: two checks disagree on checks x)"
    )


def test_a_verdict_shows_counts_from_its_facts_never_from_the_words_of_its_reason():
    held_out = {"passed": 9, "total": 10, "first_failure": "x"}
    visible_passed = {"verdict": "failed", "visible": "passed", "reason": "any words",
                      "passed": 4, "held_out": held_out}  # fmt: skip
    assert verdict_lines("v", visible_passed)[1] == "  visible tests: 4 of 4 passed"
    # a reason that reads as the held-out line, where the visible tests did not pass
    line = "held-out checks 9 of 10 passed (first failure: x)"
    worded = {**visible_passed, "visible": "failed", "reason": line, "passed": 0}
    assert verdict_lines("v", worded)[1] == f"  visible tests: failed: {line}"
    for fact in ({"tests_changed": True}, {"judged": False}):  # counts that say nothing
        assert verdict_lines("v", {**visible_passed, **fact})[1].startswith(
            "  visible tests: failed:"
        )


def shown(events, root=None):
    """What a RunPrinter prints for `events`."""
    out = io.StringIO()
    printer = RunPrinter(out, root)
    for event in events:
        printer.show(event)
    return out.getvalue()


def tool(index, name, arguments, result, turn=1):
    return [
        {"type": "tool_start", "turn": turn, "index": index, "name": name, "arguments": arguments},
        {"type": "tool_result", "turn": turn, "index": index, "name": name, "result": result},
    ]


def test_a_run_prints_each_stream_call_result_and_the_stop_on_lines_of_their_own():
    # the learner reads a run from this: every kind of result has its own short line, the
    # calls past the cap are one line, and the stop counts the calls actually shown
    tests = {"exit_code": 1, "verdict": "failed", "reason": "not every test passed", "failed": 1}
    events = [
        {"type": "model_start", "turn": 1},
        {"type": "thinking_delta", "turn": 1, "text": "hm"},
        {"type": "thinking_delta", "turn": 1, "text": " more\nnext"},
        {"type": "text_delta", "turn": 1, "text": "I will"},
        *tool(
            0, "read_file", {"path": "path_rules.py"}, {"path": "path_rules.py", "text": "a\nb\n"}
        ),
        *tool(1, "replace_text", {"old": "a"}, {"replaced": 1}),
        *tool(2, "run_tests", {}, {**tests, "passed": 3}),
        *tool(3, "list_files", {}, {"files": ["x" * 120]}),
        *tool(4, "read_file", {"path": "../x"}, {"error": "outside the repo"}),
        *tool(32, "read_file", {}, {"error": "too many"}),
        *tool(33, "read_file", {}, {"error": "too many"}),
        {"type": "model_done", "turn": 1},
        {"type": "model_start", "turn": 2},
        {"type": "text_delta", "turn": 2, "text": "read_file(path)"},
        {
            "type": "stopped",
            "turn": 2,
            "reason": "model_error",
            "error": "boom",
            "text_tool_call": {"name": "read_file"},
        },
    ]
    assert shown(events).splitlines() == [
        "turn 1 thinking: hm more",
        "  next",
        "turn 1 says: I will",
        'turn 1: read_file {"path": "path_rules.py"}',
        "  -> 2 lines of path_rules.py",
        'turn 1: replace_text {"old": "a"}',
        "  -> replaced 1 occurrence in ?",
        "turn 1: run_tests {}",
        "  -> exit 1 (1 failed · 3 passed)",
        "turn 1: list_files {}",
        '  -> {"files": ["' + "x" * 88,  # a result of any other shape: its first 100 characters
        'turn 1: read_file {"path": "../x"}',
        "  -> error: outside the repo",
        "turn 1: the calls after the first 32 of this turn are not run; each is answered with "
        "an error (not shown)",
        "turn 2 says: read_file(path)",
        "Stop: model_error after 2 model calls, 7 tool calls",
        "  model error: boom",
        "  note: the model wrote a read_file call as text; only calls sent as tool calls run — "
        "likely the chat template (llama-server: --jinja --chat-template-file FILE); "
        "--text-calls runs such a call",
    ]


def test_one_call_of_each_kind_is_counted_in_the_singular():
    events = [
        {"type": "model_start", "turn": 1},
        *tool(0, "run_tests", {}, {"exit_code": 0, "verdict": "passed", "passed": 4}),
        {"type": "stopped", "turn": 1, "reason": "max_turns"},
    ]
    assert shown(events).splitlines()[-1] == "Stop: max_turns after 1 model call, 1 tool call"


@pytest.mark.parametrize(
    "name, result, line",
    [
        # subtle: a recording's result is any object; only the shape a tool returns gets its
        # short line, anything else is shown as JSON rather than misread or a crash
        ("read_file", {"text": "a\nb"}, "2 lines of ?"),
        ("read_file", {"path": "p", "text": 3}, '{"path": "p", "text": 3}'),
        ("run_tests", {"text": "a\nb"}, '{"text": "a\\nb"}'),
        ("replace_text", {"replaced": 2}, "replaced 2 occurrence in ?"),
        ("replace_text", {"path": "p"}, '{"path": "p"}'),
        ("read_file", {"replaced": 1}, '{"replaced": 1}'),
        ("run_tests", {"verdict": "passed"}, '{"verdict": "passed"}'),
        ("read_file", {"exit_code": 0}, '{"exit_code": 0}'),
        ("list_files", {"error": "x", "text": "a"}, "error: x"),
    ],
)
def test_a_result_gets_its_tools_short_line_only_in_that_tools_shape(name, result, line):
    assert console.result_line(name, result) == line


def test_each_turns_text_starts_a_line_of_its_own():
    # model_done closes the streamed line: the next turn's text is not glued onto it
    events = [
        {"type": "model_start", "turn": 1},
        {"type": "text_delta", "turn": 1, "text": "one"},
        {"type": "model_done", "turn": 1},
        {"type": "model_start", "turn": 2},
        {"type": "text_delta", "turn": 2, "text": "two"},
        {"type": "model_done", "turn": 2},
    ]
    assert shown(events) == "turn 1 says: one\nturn 2 says: two\n"


def test_a_call_past_the_cap_is_said_and_counted_when_it_starts():
    # a run stopped before the call's result (Ctrl-C, the deadline) still shows the call
    events = [
        {"type": "model_start", "turn": 1},
        {"type": "tool_start", "turn": 1, "index": 32, "name": "read_file", "arguments": {}},
        {"type": "stopped", "turn": 1, "reason": "interrupted"},
    ]
    assert shown(events).splitlines() == [
        "turn 1: the calls after the first 32 of this turn are not run; each is answered with "
        "an error (not shown)",
        "Stop: interrupted after 1 model call, 1 tool call",
    ]


def test_arguments_are_shown_as_written_not_as_ascii_escapes():
    start = {"type": "tool_start", "turn": 1, "index": 0, "name": "read_file"}
    assert shown([{**start, "arguments": {"path": "é.py"}}]) == (
        'turn 1: read_file {"path": "é.py"}\n'
    )


def test_the_printer_writes_to_stdout_when_given_no_stream(capsys):
    RunPrinter().show({"type": "text_delta", "turn": 1, "text": "hi"})
    assert capsys.readouterr().out == "turn 1 says: hi"


def edit(tmp_path, before, after, result, name="replace_text", root=True):
    """What the printer shows of one call that changes the source from `before` to `after`
    while it runs (as replace_text does, between its start and its result)."""
    repo = copy_sample(tmp_path)
    source = repo / SOURCE
    source.write_text(before)
    out = io.StringIO()
    printer = RunPrinter(out, repo if root else None)
    call = {"turn": 1, "index": 0, "name": name}
    printer.show({"type": "tool_start", **call, "arguments": {}})
    source.write_text(after)
    printer.show({"type": "tool_result", **call, "result": result})
    return out.getvalue().splitlines()[1:]


def test_an_edit_that_succeeded_is_followed_by_its_diff(tmp_path):
    # even from an empty file (made up here: replace_text refuses an empty `old`, but the
    # printer shows whatever edit the file underwent)
    assert edit(tmp_path, "", "x = 1\n", {"replaced": 1}) == [
        "  -> replaced 1 occurrence in ?",
        f"    --- {SOURCE} before",
        "    +++ after this edit",
        "    @@ -0,0 +1 @@",
        "    +x = 1",
    ]


@pytest.mark.parametrize(
    "name, result, root",
    [
        ("replace_text", {"error": "old text not found"}, True),  # a refused edit: no diff
        ("replace_text", {"replaced": 1}, False),  # no copy to read: the result line only
        ("run_tests", {"replaced": 1}, True),  # only replace_text edits
    ],
)
def test_no_diff_follows_a_call_that_made_no_edit_or_a_printer_without_a_copy(
    tmp_path, name, result, root
):
    assert len(edit(tmp_path, "a\n", "b\n", result, name, root)) == 1


def test_the_runs_changes_are_shown_only_when_there_are_some():
    sample = (SAMPLE_REPO / SOURCE).read_text(encoding="utf-8")
    out = io.StringIO()
    RunPrinter(out).changes(sample)
    assert out.getvalue() == ""
    RunPrinter(out).changes(sample + "x = 1\n")
    assert out.getvalue().splitlines()[:3] == [
        f"What the run changed in {SOURCE}:",
        f"    --- sample_repo/{SOURCE}",
        "    +++ after the run",
    ]
