"""Tests of the per-turn metrics in events and recordings, and of the timeline's shape."""

import io
import re

import pytest

import record_run
from agent_loop import MODEL_DONE, TASK, TOOL_RESULT, agent_events
from plumbing.recording import RecordingChat, load
from plumbing.sample import copy_sample
from plumbing.timeline import timeline
from repo_tools import RepoTools
from tests.ollama_test_server import call, chunk
from tests.scripted_model import ScriptedChat


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
