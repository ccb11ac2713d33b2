"""The recording format (harness/recording.py, recording_checks.py, chats.py): what save()
writes, what load() accepts, and what the recorder keeps of a stream.

save() is atomic, writes readable UTF-8 and never replaces anything but a regular file;
whatever a server sends (a lone surrogate, NaN, 1e400) is saved as valid JSON with its
text kept, and replays. load() refuses what it cannot read (nested too deep, a
5,000-digit integer, a field of the wrong type or missing) in one line, never a traceback.
The recorder (RecordingChat) keeps how each stream ended and when each chunk arrived. The
servers are the stand-ins on 127.0.0.1; the files are made by each test.
"""

import io
import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

import record_run
from harness.chats import RecordingChat
from harness.recording import RECORDINGS, load, save
from harness.recording_checks import RecordingError
from replay import CANNOT_REPLAY
from tests.helpers import altered, replay
from tests.in_process import run_cli
from tests.ollama_test_server import OllamaTestServer, chunk
from tests.ollama_test_server import reply as ollama_reply
from tests.openai_test_server import TEST_MODEL, OpenAITestServer, finish
from tests.openai_test_server import reply as openai_reply
from tests.scripted_model import ScriptedChat

HERE = Path(__file__).resolve().parent.parent


# --- saving: atomic, readable UTF-8, never over anything but a regular file -----------------------


def test_a_crash_mid_save_leaves_the_old_recording_intact(tmp_path):
    path = tmp_path / "keep.json"
    save(path, {"format": "old"})
    with pytest.raises(TypeError):
        save(path, {"format": "new", "broken": object()})  # json.dump fails halfway
    assert json.loads(path.read_text()) == {"format": "old"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.json"]  # no temp file left


def test_save_refuses_to_replace_anything_but_a_regular_file(tmp_path):
    from harness.recording import save

    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(OSError, match="is not a regular file"):
        save(tmp_path / "fifo", {"format": "x"})
    assert stat.S_ISFIFO(os.lstat(tmp_path / "fifo").st_mode)


def test_a_recording_is_saved_as_readable_utf8_even_when_it_holds_a_non_finite_number(tmp_path):
    # mutation: `ensure_ascii=False` -> True (either json.dumps) saved "é" as "\u00e9": it
    # loads back the same, but the file is no longer text a learner can read or diff
    from harness.recording import save

    for extra in ({}, {"odd": float("nan")}):
        path = tmp_path / "r.json"
        save(path, {"text": "é ✓ 漢", **extra})
        raw = path.read_bytes()
        assert "é ✓ 漢".encode() in raw and b"\\u" not in raw, extra
        # indented by 2, as the shipped recordings (whose hashes SHA256SUMS holds) are
        assert raw.startswith(b'{\n  "text": "'), raw[:20]
        strict = json.loads(raw, parse_constant=lambda c: pytest.fail(f"{c} is not JSON"))
        assert strict.get("non_finite_numbers", []) == [{"at": k, "text": "NaN"} for k in extra]


def test_non_finite_numbers_are_saved_as_null_with_their_text_kept(tmp_path):
    path = tmp_path / "numbers.json"
    save(path, {"a": float("nan"), "b": [1.5, float("inf")]})

    def refuse(name):
        raise AssertionError(f"{name} is not JSON")

    data = json.loads(path.read_text(encoding="utf-8"), parse_constant=refuse)
    assert data["a"] is None and data["b"] == [1.5, None]
    assert data["non_finite_numbers"] == [
        {"at": "a", "text": "NaN"},
        {"at": "b[1]", "text": "Infinity"},
    ]


# --- odd text and numbers from a server: saved, printed and replayed ------------------------------


def cli(*args, env=None):
    command = [sys.executable, str(HERE / args[0]), *map(str, args[1:])]
    return subprocess.run(command, capture_output=True, cwd=HERE, env=env)


@pytest.mark.parametrize("encoding", ["utf-8", "ascii"])
def test_lone_surrogate_in_streamed_text_is_printed_and_saved(tmp_path, encoding):
    output = tmp_path / "surrogate.json"
    turn = ollama_reply(chunk("bad \ud800 text"), chunk(" end", done=True))
    env = {**os.environ, "PYTHONIOENCODING": encoding}
    with OllamaTestServer([turn]) as server:
        finished = cli("record_run.py", "--host", server.host, "--output", output, env=env)
    assert b"Traceback" not in finished.stderr, finished.stderr.decode(errors="replace")
    assert finished.returncode == 1  # the final tests fail: nothing was repaired
    assert b"\\ud800" in finished.stdout  # shown escaped, not dropped
    saved = json.loads(output.read_bytes().decode("utf-8"))  # valid UTF-8 and valid JSON
    assert saved["messages"][-1]["content"] == "bad \ud800 text end"  # round-trips
    replayed = cli("replay.py", output, env=env)  # and what the harness saved replays
    assert b"Traceback" not in replayed.stderr, replayed.stderr.decode(errors="replace")
    assert replayed.returncode == 0 and b"reproduced" in replayed.stdout


def test_server_nan_and_1e400_reach_a_recording_as_valid_json(tmp_path):
    output = tmp_path / "nan.json"
    odd = 'data: {"choices": [{"delta": {"content": "x"}}], "score": NaN, "big": 1e400}\n\n'
    with OpenAITestServer([openai_reply(odd, finish())]) as server:
        options = ["--api", "openai", "--model", TEST_MODEL, "--host", server.base_url]
        finished = run_cli("record_run.py", *options, "--output", output)
    assert finished.returncode == 1, finished.stderr
    text = output.read_text(encoding="utf-8")
    assert "NaN" not in text.replace('"NaN"', "") and "Infinity" not in text.replace(
        '"Infinity"', ""
    )
    saved = json.loads(text)
    assert saved["model_calls"][0]["events"][0]["score"] is None
    assert {"at": "model_calls[0].events[0].big", "text": "Infinity"} in saved["non_finite_numbers"]


@pytest.mark.parametrize(
    "field, outcome",
    [('"description": "', (0, b"reproduced")), ('"thinking": "', (1, b"DIVERGED"))],
)
def test_replay_of_a_lone_surrogate_prints_it_and_compares_as_usual(tmp_path, field, outcome):
    # A lone surrogate round-trips through save (a JSON escape); replay takes it like any
    # text: in the description it changes nothing, in a streamed chunk it is a divergence.
    path = tmp_path / "surrogate.json"
    changed = shipped().replace(field, field + "\\udfff", 1)
    assert changed != shipped()
    path.write_text(changed, encoding="utf-8")
    finished = cli("replay.py", path, env={**os.environ, "PYTHONIOENCODING": "ascii"})
    assert b"Traceback" not in finished.stderr, finished.stderr.decode(errors="replace")
    assert (finished.returncode, outcome[1] in finished.stdout) == (outcome[0], True)


# --- load() refuses what it cannot read, in one line ----------------------------------------------


def shipped():
    return (RECORDINGS / "repair.json").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "name, make, says",
    [
        ("deep", lambda: "[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ("digits", lambda: shipped().replace('"max_turns": 12', '"max_turns": ' + "9" * 5000, 1),
         "not a JSON recording"),
        ("nested", lambda: shipped()[:-2] + ', "x": ' + "[" * 500 + "]" * 500 + "}\n",
         "nested deeper than"),
        # found by the snapshots of damaged recordings: a list is unhashable, a traceback
        ("format-list", lambda: shipped().replace('"format": "', '"format": [0, "', 1)
         .replace('",\n', '"],\n', 1), "field 'format' must be"),
        # replay.py printed its timeline's traceback after the whole replay
        ("options", lambda: shipped().replace('"options": {', '"options": -1, "x": {', 1),
         "'model.options' must be an object"),
        ("format-long", lambda: shipped().replace('"format": "', '"format": "' + "x" * 10**6, 1),
         "field 'format' must be"),
    ],
)  # fmt: skip
def test_replay_refuses_an_unreadable_recording_in_one_line(tmp_path, name, make, says):
    path = tmp_path / f"{name}.json"
    text = make()
    assert text != shipped()  # the change took
    path.write_text(text, encoding="utf-8")
    finished = run_cli("replay.py", path)
    stderr = finished.stderr
    assert finished.returncode == 2, stderr
    assert "Traceback" not in stderr and says in stderr
    assert len(stderr) < 1000  # one line, whatever the file holds


def test_a_damaged_recording_is_refused_by_load_or_shown_by_every_display():
    """Damaged at any one field in any of a few ways (tests/snapshot_inputs.py), a recording
    is refused in one line by load(), or every display the CLIs make of it works: none raises
    (replay.py printed a traceback for `"options": -1`, view.py skipped the file). What each
    damaged copy gives is the snapshot damaged-recordings.txt, which test_snapshots.py makes
    again and compares: a display that raises is a line of it, saying so."""
    said = (HERE / "tests" / "snapshots" / "damaged-recordings.txt").read_text().splitlines()
    assert [line for line in said if " raised " in line] == []
    assert sum(line.endswith(": accepted, every display shown") for line in said) > 50


def test_a_recording_may_nest_100_levels_and_not_101(tmp_path):
    # A real recording nests about ten levels; the README promises the limit of 100.
    def nested(levels):
        path = tmp_path / f"nested-{levels}.json"
        path.write_text(shipped()[:-2] + ', "x": ' + "[" * levels + "]" * levels + "}\n")
        try:
            load(path)
        except RecordingError as error:
            return str(error)
        return "loaded"

    assert "nested deeper than 100 levels" in nested(101)
    assert "nested" not in nested(100)


def test_recording_with_a_bool_max_turns_is_refused(tmp_path, capsys):
    # mutation load_bool_ok: drop the `isinstance(..., bool)` check in load().
    outcome, _ = replay(altered(tmp_path, lambda r: r.update(max_turns=True)))
    assert outcome == CANNOT_REPLAY
    assert "field 'max_turns' has the wrong type" in capsys.readouterr().err


def test_model_call_without_an_end_is_refused(tmp_path, capsys):
    # mutation load_no_ended_check: load() does not check `ended`; the replay then fails
    # inside ReplayChat (KeyError -> model_error -> "diverged") instead of exit 2.
    outcome, _ = replay(altered(tmp_path, lambda r: r["model_calls"][0].pop("ended")))
    assert outcome == CANNOT_REPLAY
    assert "model_calls[0].ended' must say how the stream ended" in capsys.readouterr().err


def tool_result(recording):
    return next(e for e in recording["events"] if e["type"] == "tool_result")


@pytest.mark.parametrize(
    "change",
    [
        lambda r: r.update(max_turns=0),
        lambda r: r.update(final_tests={}),
        lambda r: r.update(final_tests=None),  # only an interrupted run may skip them
        lambda r: r.update(events=[1, 2]),
        lambda r: tool_result(r).pop("name"),
        lambda r: tool_result(r).update(seconds="x"),
        lambda r: r["events"][-2].update(seconds="x"),
        lambda r: r["starting_tests"].update(output=5),
        lambda r: r["stop"].update(reason="max_turns"),  # disagrees with the last event
    ],
    ids=[
        "max_turns-0",
        "final_tests-without-exit_code",
        "final_tests-null-not-interrupted",
        "events-not-objects",
        "tool-event-without-name",
        "seconds-not-a-number",
        "model-done-seconds-not-a-number",
        "tests-output-not-text",
        "stop-not-the-last-event",
    ],
)
def test_mistyped_recording_is_refused_not_a_traceback(tmp_path, change, capsys):
    outcome, _ = replay(altered(tmp_path, change))
    assert outcome == CANNOT_REPLAY
    assert "field '" in capsys.readouterr().err


# --- what the recorder keeps of a stream ----------------------------------------------------------


def test_a_model_error_without_text_is_saved_under_its_type_name(tmp_path):
    # mutation: chats.py's `str(error) or type(error).__name__` without the fallback
    # saved "" as the error, and the replay then raised an error that says nothing.
    script = [[chunk("Reading "), ConnectionResetError()]]
    output = tmp_path / "r.json"
    record_run.record_attempt(
        RecordingChat(ScriptedChat(script)), {"name": "scripted"}, output, 4, out=io.StringIO()
    )
    saved = load(output)
    assert saved["model_calls"][0]["ended"] == "error"
    assert saved["model_calls"][0]["error"] == "ConnectionResetError"


def test_arrival_times_are_kept_to_a_tenth_of_a_millisecond():
    # mutation: `round(..., 4)` -> 5 kept noise the page cannot draw and the file must carry
    def slow(messages, tools):
        for n in range(12):
            time.sleep(0.0013)
            yield chunk(str(n))

    chat = RecordingChat(slow)
    list(chat([{"role": "user", "content": "x"}], []))
    arrived = chat.calls[0]["arrived"]
    assert len(arrived) == 12 and arrived == sorted(arrived)
    # 5 decimals leaves a fifth one on about 9 of 10 values: on all 12, about once in 10^12
    assert all(a == round(a, 4) for a in arrived), arrived


def nested(levels, leaf, kind):
    for _ in range(levels):
        leaf = [leaf] if kind == "list" else {"a": leaf}
    return leaf


@pytest.mark.parametrize("kind", ["list", "object"])
@pytest.mark.parametrize("leaf", [[], "text", 1], ids=["empty", "text", "number"])
def test_a_value_nested_exactly_max_depth_levels_is_held_and_one_more_is_not(kind, leaf):
    # mutations: a list's level counted as two, and the deep walk's `>` read as `<=` (text
    # past the depth was then never looked at): each moved where the limit falls
    from harness.recording_checks import MAX_DEPTH, held_problem

    assert held_problem(nested(MAX_DEPTH, leaf, kind), "", 0) is None
    assert "nested deeper than" in held_problem(nested(MAX_DEPTH + 1, leaf, kind), "", 0)


def test_a_place_too_deep_is_named_cut_at_80_characters_and_a_key_before_its_value():
    from harness.recording_checks import MAX_DEPTH, held_problem

    said = held_problem({"k" * 100: nested(MAX_DEPTH, [], "list")}, "", 0)
    assert said.endswith(f"(at .{'k' * 79}...)")  # `.` and the key, cut
    # past the depth, a dict's key is too deep before its value is looked at
    assert held_problem({"k": 1}, "result", MAX_DEPTH).endswith("(at result (a key)...)")
    said = held_problem({"k" * 100: 2**64}, "", 0)  # a number out of range: its field, cut
    assert said.startswith(f"field '{'k' * 80}' must be a finite number")


def test_an_integer_too_long_to_write_out_is_kept_as_words_saying_so(tmp_path):
    # past Python's limit on converting an int to text, its digits cannot even be counted
    recording = json.loads(shipped())
    recording["model"]["options"] = {"seed": 10**5000}
    save(tmp_path / "long.json", recording)
    kept = json.loads((tmp_path / "long.json").read_text())["non_finite_numbers"]
    assert kept == [{"at": "model.options.seed", "text": "an integer of more than 4,300 digits"}]
