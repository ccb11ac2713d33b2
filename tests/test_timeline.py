"""Tests of the per-turn metrics in events and recordings, and of the timeline's shape."""

import html
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import record_run
from agent_loop import MODEL_DONE, TASK, TOOL_RESULT, agent_events
from harness.chats import RecordingChat
from harness.recording import load
from harness.timeline import context_lines, context_window, timeline
from plumbing.sample import copy_sample
from repo_tools import RepoTools
from tests.ollama_test_server import call, chunk
from tests.scripted_model import ScriptedChat

HERE = Path(__file__).resolve().parent.parent


def turn(turn_number, model, tools=(), names=()):
    """The events of one turn as the loop yields them, with chosen durations."""
    events = [{"type": "model_start", "turn": turn_number}]
    if model is not None:
        events.append({"type": MODEL_DONE, "turn": turn_number, "seconds": model})
    for seconds, name in zip(tools, names, strict=True):
        events.append({"type": TOOL_RESULT, "turn": turn_number, "name": name, "seconds": seconds})
    return events


EVENTS = turn(1, 2.0, [0.5], ["read_file"]) + turn(2, 1.0, [4.0], ["run_tests"]) + turn(3, None)


def test_timeline_has_one_line_per_turn_and_totals():
    lines = timeline(EVENTS, tests_seconds=0.7, width=100)
    assert lines[0].startswith("Timeline")
    assert [line.split()[1] for line in lines[1:4]] == ["1", "2", "3"]
    assert lines[1].endswith("read_file") and lines[2].endswith("run_tests")
    assert "(incomplete)" in lines[3]  # a turn that never completed has no model time
    assert lines[4] == "total   model 3.00s · tools 4.50s"
    assert lines[5].strip() == "independent tests 0.70s"


def test_bars_are_scaled_to_the_longest_span():
    lines = timeline(EVENTS, width=100)
    bars = [re.findall(r"[#.]{4,}", line) for line in lines[1:3]]
    longest = bars[1][1]  # turn 2's tools: 4.0 s, the longest span
    assert set(longest) == {"#"}
    assert bars[0][0].count("#") == round(len(longest) / 2)  # 2.0 s is half of it


@pytest.mark.parametrize("width", [50, 60, 80, 100, 160])
def test_every_line_fits_the_terminal_width(width):
    for recorded in (None, EVENTS):
        for line in timeline(EVENTS, recorded, tests_seconds=1.0, width=width):
            assert len(line) <= width, (width, line)


def test_replay_timeline_shows_recorded_figures_beside_todays():
    today = turn(1, 0.01, [0.3], ["run_tests"])
    lines = timeline(today, recorded=turn(1, 1.5, [0.25], ["run_tests"]), width=100)
    assert "0.01s/1.50s" in lines[1] and "0.30s/0.25s" in lines[1]


def test_spans_too_short_to_measure_get_numbers_without_bars():
    instant = turn(1, 0.0, [0.001], ["read_file"]) + turn(2, 0.002, [0.0], ["run_tests"])
    lines = timeline(instant, width=100)
    assert not any(re.search(r"[#.]{4,}", line) for line in lines[1:3]), lines
    assert "0.00s" in lines[1] and lines[1].endswith("read_file")


def test_timeline_is_plain_ascii_text():
    text = "\n".join(timeline(EVENTS, EVENTS, 1.0, width=80))
    assert "\x1b" not in text  # no colour codes, so NO_COLOR and pipes need nothing special


def test_events_carry_per_turn_metrics(tmp_path):
    # The loop keeps the final chunk's `*_count` and `*_duration` fields, and nothing else.
    final = chunk(tool_calls=[call("run_tests")], done=True, counters=False, eval_count=3)
    final.update(load_duration=7, created_at="2026-11-29T00:00:00Z")
    script = [[chunk(thinking="hm"), final], [chunk("done", done=True)]]
    events = list(agent_events(ScriptedChat(script), RepoTools(copy_sample(tmp_path)), TASK))
    done = [e for e in events if e["type"] == MODEL_DONE][0]
    assert done["chunks"] == 2 and done["characters"] == 2
    assert done["seconds"] >= done["first_chunk_seconds"] >= 0
    assert done["model_counters"] == {"eval_count": 3, "load_duration": 7}
    tool = [e for e in events if e["type"] == TOOL_RESULT][0]
    assert tool["seconds"] > 0  # a real pytest run was timed


def test_recordings_carry_the_metrics(tmp_path):
    # Recorded through the recorder: the metrics are what record_run.py saves, not data.
    script = [
        [chunk(tool_calls=[call("run_tests")], done=True, counters=False)],
        [chunk("done", done=True, counters=False)],
    ]
    output = tmp_path / "metrics.json"
    recorder = RecordingChat(ScriptedChat(script))
    record_run.record_attempt(recorder, {"name": "scripted"}, output, 4, out=io.StringIO())
    recording = load(output)
    done = [e for e in recording["events"] if e["type"] == MODEL_DONE]
    assert all({"seconds", "first_chunk_seconds", "chunks", "characters"} <= set(e) for e in done)
    assert done[0]["model_counters"] == {}  # scripted without counters: none invented
    assert all("seconds" in e for e in recording["events"] if e["type"] == TOOL_RESULT)
    assert recording["starting_tests"]["seconds"] > 0 and recording["final_tests"]["seconds"] > 0


def test_the_first_chunk_is_timed_when_it_arrives_not_later(repo):
    now = [0.0]

    def chat(messages, tools):  # the clock moves as each chunk arrives
        now[0] = 1.0
        yield chunk("Hello")
        now[0] = 5.0
        yield chunk(done=True)

    events = agent_events(chat, RepoTools(repo), TASK, 1, clock=lambda: now[0])
    done = next(e for e in events if e["type"] == MODEL_DONE)
    assert (done["first_chunk_seconds"], done["seconds"]) == (1.0, 5.0)


# One line per turn needs 53 columns besides the bars, and at least 16 for two bars of 8:
# 69 columns is the narrowest one-line layout, 68 the widest two-line one; at 81 each bar
# gets (81 - 53) // 2 = 14 columns, where one column more of overhead would leave 13.
@pytest.mark.parametrize(
    "width, expected",
    [
        (
            68,
            [
                "turn 1  model ################................   2.00s",
                "        tools ####............................   0.50s  read_file",
                "turn 2  model ########........................   1.00s",
                "        tools ################################   4.00s  run_tests",
                "turn 3  model ................................   (incomplete)",
                "        tools ................................   0.00s",
            ],
        ),
        (
            69,
            [
                "turn 1  model ####....   2.00s | tools #.......   0.50s  read_file",
                "turn 2  model ##......   1.00s | tools ########   4.00s  run_tests",
                "turn 3  model ........   (incomplete) | tools ........   0.00s",
            ],
        ),
        (
            81,
            [
                "turn 1  model #######.......   2.00s | tools ##............   0.50s  read_file",
                "turn 2  model ####..........   1.00s | tools ##############   4.00s  run_tests",
                "turn 3  model ..............   (incomplete) | tools ..............   0.00s",
            ],
        ),
    ],
)
def test_a_turn_goes_on_two_lines_only_below_the_width_one_line_needs(width, expected):
    lines = timeline(EVENTS, width=width)
    assert lines[1:-1] == expected
    assert lines[-1] == "total   model 3.00s · tools 4.50s"


def test_a_replay_timeline_needs_twelve_columns_more_for_one_line_per_turn():
    # today/recorded figures are 6 columns wider each: one line from 81 columns, not 69
    assert timeline(EVENTS, EVENTS, width=81)[1] == (
        "turn 1  model ####....   2.00s/2.00s | tools #.......   0.50s/0.50s  read_file"
    )
    assert timeline(EVENTS, EVENTS, width=80)[1:3] == [
        "turn 1  model ###################...................   2.00s/2.00s",
        "        tools #####.................................   0.50s/0.50s  read_file",
    ]


def test_a_stop_that_cut_a_turn_off_at_zero_seconds_is_still_shown():
    # 0.0 seconds is a measured time, not a missing one: the cut-off turn is named
    events = turn(1, None) + [{"type": "stopped", "turn": 1, "reason": "deadline", "seconds": 0.0}]
    assert timeline(events, width=100)[1] == (
        "turn 1  model   0.00s | tools   0.00s  (model turn cut off: deadline)"
    )


def test_spans_recorded_without_seconds_count_as_zero():
    # recordings made before the loop timed its turns have no "seconds": nothing is invented
    events = [
        {"type": "model_start", "turn": 1},
        {"type": MODEL_DONE, "turn": 1},
        {"type": TOOL_RESULT, "turn": 1, "name": "read_file"},
    ]
    assert timeline(events, width=100)[1:] == [
        "turn 1  model   0.00s | tools   0.00s  read_file",
        "total   model 0.00s · tools 0.00s",
    ]


def test_a_longest_span_of_exactly_the_threshold_gets_bars():
    # 0.01 s is the shortest longest span that is drawn; below it, only figures
    lines = timeline(turn(1, 0.01, [0.005], ["read_file"]), width=100)
    assert lines[1] == (
        "turn 1  model #######################   0.01s | tools ############...........   0.01s"
        "  read_file"
    )


def test_the_timeline_is_80_columns_wide_when_no_terminal_can_be_asked():
    # A fresh Python whose stdout is a pipe, as in a log or CI, without COLUMNS: there is no
    # terminal to ask, so 80 columns and bars of (80 - 53) // 2 = 13. A program, since this
    # test's own stdout may be a terminal. EVENTS go in as JSON: the timeline alone is loaded.
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    code = "import json, sys; from harness.timeline import timeline; "
    code += "print(timeline(json.load(sys.stdin))[1])"
    finished = subprocess.run(
        [sys.executable, "-c", code],
        input=json.dumps(EVENTS),
        capture_output=True,
        text=True,
        cwd=HERE,
        env=env,
    )
    assert finished.returncode == 0, finished.stderr
    assert finished.stdout == (
        "turn 1  model ######.......   2.00s | tools ##...........   0.50s  read_file\n"
    )


def test_the_timeline_fits_the_terminal_up_to_100_columns(monkeypatch):
    # a wider terminal (COLUMNS is what it says, read when the timeline is drawn): the
    # timeline stops at 100 columns, bars of 23, not 24
    monkeypatch.setenv("COLUMNS", "101")
    assert timeline(EVENTS)[1] == (
        "turn 1  model ############...........   2.00s | tools ###....................   0.50s"
        "  read_file"
    )


def test_only_turn_starts_and_timed_events_make_a_turn():
    # A delta is not a span of time; load() does not check the order of events, so a
    # recording cut by hand can hold deltas of a turn whose start was cut away.
    events = turn(1, 1.0) + [{"type": "text_delta", "turn": 2, "text": "hi"}]
    assert timeline(events, width=100)[1:] == [
        "turn 1  model #######################   1.00s | tools .......................   0.00s",
        "total   model 1.00s · tools 0.00s",
    ]


def test_independent_tests_of_zero_seconds_are_still_shown():
    # 0.0 is a measured time (a run with nothing to test), not "no independent run"
    assert timeline(EVENTS, tests_seconds=0.0, width=100)[-1] == "        independent tests 0.00s"


def test_after_ctrl_c_the_test_time_is_said_to_be_the_starting_verdicts_alone():
    # beside "Independent verdict: not run", a bare "independent tests 0.31s" read as the
    # final verdict's time; the terminal's timeline (test_ctrl_c.py) and the page say whose
    from harness.page import recording_page

    alone = "        independent tests 0.31s, the starting verdict's alone (no final verdict ran)"
    assert timeline(EVENTS, tests_seconds=0.31, width=100, final_ran=False)[-1] == alone
    recording = load(HERE / "recordings" / "repair.json")
    recording["starting_tests"]["seconds"], recording["final_tests"] = 0.31, None
    assert html.escape(alone.strip()) in recording_page(recording, "repair.json")


@pytest.mark.parametrize(
    "model, window",
    [
        ({"options": {"num_ctx": 1}}, (1, "num_ctx")),  # the smallest window is a window
        # a zero window is no window (every request would be infinitely full): the next source
        (
            {"options": {"num_ctx": 0}, "server_model": {"max_model_len": 4096}},
            (4096, "max_model_len"),
        ),
        ({"options": {"num_ctx": 0}}, None),
    ],
)
def test_the_context_window_is_a_positive_number_of_tokens(model, window):
    assert context_window(model) == window


def test_context_bars_leave_27_columns_for_the_turn_and_the_figures():
    # at 50 columns the bar is 23 long, so the line is 44 columns and fits
    events = [{"type": MODEL_DONE, "turn": 1, "model_counters": {"prompt_eval_count": 2048}}]
    assert context_lines(events, (8192, "num_ctx"), width=50) == [
        "Context (prompt tokens of each request; num_ctx 8,192):",
        "turn 1  ######.................   2,048  25%",
    ]


def test_a_context_window_of_one_token_is_a_window():
    # mutation: `value > 0` -> `value > 1` dropped the smallest window there is
    from harness.timeline import context_window

    assert context_window({"options": {"num_ctx": 1}}) == (1, "num_ctx")
    assert context_window({"options": {"num_ctx": 0}}) is None
    assert context_window({"server_model": {"max_model_len": 1}}) == (1, "max_model_len")


def test_a_model_turn_recorded_without_its_seconds_counts_as_0_in_the_timeline():
    # mutation: `event.get("seconds", 0.0)` -> 1.0 made up a second for a turn whose
    # recording (load() accepts it) does not say how long it took
    from harness.timeline import timeline

    events = [
        {"type": "model_start", "turn": 1},
        {"type": "model_done", "turn": 1, "message": {"role": "assistant", "content": "hi"}},
    ]
    assert "total   model 0.00s · tools 0.00s" in timeline(events, width=80)
