"""Every reader is total on what load() accepts: replay.py, view.py, compare.py and
compare.py --html either refuse a recording in one `error:` line or show it, never a
traceback; and compare.py --html writes into a folder, refusing one it cannot use before
writing anything.

Known hostile shapes first, each by name (a number of 401 digits where a reader turns it
into a float, an event's extra key set to null, a hostile server's counters, a stream
event `{"choices": [null]}`), then a seeded fuzz test over mutants of every shipped
recording. The CLIs run in this process (tests/in_process.py).
"""

import json
import random
from pathlib import Path

import pytest

from harness.divergence import event_divergence
from harness.recording import RECORDINGS, load, save
from harness.recording_checks import RecordingError
from harness.timeline import timeline
from tests.helpers import SHOWN
from tests.in_process import run_cli
from tests.ollama_test_server import OllamaTestServer, chunk
from tests.ollama_test_server import reply as ollama_reply
from tests.openai_test_server import TEST_MODEL, OpenAITestServer, content
from tests.openai_test_server import reply as openai_reply

HUGE = 10**400  # 401 digits: json reads it, no float holds it
SHIPPED = SHOWN  # the shipped recordings but a measurement's (tests/helpers.py)
# What the mutants are made from: every shipped recording but the real Qwen attempts, of
# which one stands for all (their shape is one: OpenAI events with real tool calls, 60 to
# 280 KB each; all six made the fuzz's readers take twice as long)
FUZZED = [p for p in SHIPPED if p.parent.name != "live"]
FUZZED.append(RECORDINGS / "live" / "qwen2.5-coder-1.5b-3.json")


def changed_copy(tmp_path, shipped, change):
    """A copy of the shipped recording `shipped` with `change(recording)` applied, saved."""
    recording = load(RECORDINGS / shipped)
    change(recording)
    save(tmp_path / shipped, recording)
    return tmp_path / shipped


def sole_error_line(finished):
    """The run printed no traceback and exactly one line on stderr, an `error:` line."""
    lines = finished.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), finished.stderr[-2000:]
    return lines[0]


# --- numbers no reader can show ------------------------------------------------------------


def loop_seconds(recording):
    recording["loop_seconds"] = HUGE


def event_seconds(recording):
    next(e for e in recording["events"] if "seconds" in e)["seconds"] = HUGE


def prompt_tokens(recording):
    recording["model_calls"][-1]["chunks"][-1]["prompt_eval_count"] = HUGE


def written(path, change):
    """A copy of repair.json with `change` applied, written as plain JSON (save() would
    write such a number as null)."""
    recording = json.loads((RECORDINGS / "repair.json").read_text(encoding="utf-8"))
    change(recording)
    path.write_text(json.dumps(recording), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "change, field",
    [
        (loop_seconds, "'loop_seconds'"),
        (event_seconds, "'events[5].seconds'"),
        (prompt_tokens, "'model_calls[4].chunks[12].prompt_eval_count'"),
    ],
)
def test_a_401_digit_number_is_refused_in_one_line_by_every_reader(tmp_path, change, field):
    path = written(tmp_path / "huge.json", change)
    with pytest.raises(RecordingError) as refused:
        load(path)
    assert f"field {field} must be a finite number below 2**63" in str(refused.value)
    for cli in (
        ("view.py", path, "--out", tmp_path / "pages"),
        ("compare.py", path),
        ("replay.py", path),  # refused before anything runs
        ("view.py", path, RECORDINGS / "repair.json", "--out", tmp_path / "index"),
    ):
        finished = run_cli(*cli)
        assert finished.returncode == 2
        assert field in sole_error_line(finished)


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_a_number_json_cannot_hold_is_refused_in_one_line(tmp_path, literal):
    text = (RECORDINGS / "repair.json").read_text(encoding="utf-8")
    path = tmp_path / "odd.json"
    path.write_text(text.replace('"max_turns": 12', f'"max_turns": 12, "odd": {literal}', 1))
    with pytest.raises(RecordingError, match="field 'odd' must be a finite number"):
        load(path)


def test_save_writes_a_number_too_large_as_null_and_keeps_its_text(tmp_path):
    recording = load(RECORDINGS / "repair.json")
    recording["model_calls"][0]["chunks"][-1]["eval_count"] = HUGE
    recording["model_calls"][0]["chunks"][-1]["total_duration"] = -(2**63)
    save(tmp_path / "saved.json", recording)
    saved = load(tmp_path / "saved.json")  # what the harness saves, it reads back
    assert saved["model_calls"][0]["chunks"][-1]["eval_count"] is None
    where = "model_calls[0].chunks[5]"
    assert saved["non_finite_numbers"] == [
        {"at": f"{where}.eval_count", "text": "an integer of 401 digits (100000000000...)"},
        {"at": f"{where}.total_duration", "text": "an integer of 19 digits (-922337203685...)"},
    ]


def test_a_token_count_too_large_draws_no_context_line_and_no_error():
    events = [
        {"type": "model_start", "turn": 1},
        {"type": "model_done", "turn": 1, "seconds": 0.5, "message": {},
         "model_counters": {"prompt_eval_count": HUGE}},
        {"type": "model_start", "turn": 2},
        {"type": "model_done", "turn": 2, "seconds": 0.5, "message": {},
         "model_counters": {"prompt_eval_count": 100}},
    ]  # fmt: skip
    for model in ({"options": {"num_ctx": 8192}}, {"server_model": {"max_model_len": HUGE}}):
        lines = timeline(events, model_info=model)
        assert not any(line.startswith("turn 1  #") for line in lines)  # 10**400 is no count
    assert "turn 2  " in "\n".join(timeline(events, model_info={"options": {"num_ctx": 8192}}))


# --- what a hostile server's counters leave behind ------------------------------------------

OLLAMA_DONE_WITH_HUGE_COUNTERS = (
    b'{"model": "gemma4:e2b", "created_at": "2026-11-29T00:00:00Z", "message": {"role": '
    b'"assistant", "content": ""}, "done": true, "done_reason": "stop", "prompt_eval_count": '
    + str(HUGE).encode()
    + b', "eval_count": 1'
    + b"0" * 30
    + b"}\n"
)
OPENAI_FINISH_WITH_HUGE_USAGE = (
    'data: {"choices": [{"delta": {}, "finish_reason": "stop"}], "usage": {"prompt_tokens": '
    + str(HUGE)
    + ', "completion_tokens": 5}}\n\n'
)


@pytest.mark.parametrize("wire", ["ollama", "openai"])
def test_record_run_saves_and_says_so_whatever_the_servers_counters(tmp_path, wire):
    output = tmp_path / "counted.json"
    if wire == "ollama":  # its num_ctx draws the context lines from the counters
        with OllamaTestServer(
            [ollama_reply(chunk("Done."), OLLAMA_DONE_WITH_HUGE_COUNTERS)]
        ) as server:
            recorded = run_cli("record_run.py", "--host", server.host, "--output", output)
    else:
        with OpenAITestServer(
            [openai_reply(content("Done."), OPENAI_FINISH_WITH_HUGE_USAGE)]
        ) as server:
            options = ("--api", "openai", "--model", TEST_MODEL, "--host", server.base_url)
            recorded = run_cli("record_run.py", *options, "--output", output)
    assert recorded.returncode == 1, recorded.stderr  # nothing was repaired
    assert f"Saved: {output}" in recorded.stdout
    saved = load(output)  # the counter saved as null, its text kept
    assert any("401 digits" in n["text"] for n in saved["non_finite_numbers"])
    compared = run_cli("compare.py", output)
    assert compared.returncode == 0, compared.stderr
    assert "median tokens: prompt n/a" in compared.stdout
    replayed = run_cli("replay.py", output)
    assert replayed.returncode == 0, replayed.stdout[-2000:]  # what was saved replays as made


# --- an unknown key set to null -------------------------------------------------------------


def test_an_events_extra_key_set_to_null_is_a_difference_said_in_words():
    recorded = {"type": "tool_start", "turn": 1, "index": 0, "name": "read_file", "arguments": {}}
    said = event_divergence([{**recorded, "extra": None}], [recorded], None, None)
    assert said.endswith("extra: the recording says null, today's run did nothing")
    said = event_divergence([recorded], [{**recorded, "arguments": {"path": None}}], None, None)
    assert said.endswith("arguments.path: the recording says nothing, today's run did null")


# --- an event the page could not draw -----------------------------------------------------


@pytest.mark.parametrize("choices", [[None], [], {"0": {}}], ids=["null", "empty", "object"])
def test_a_recording_saved_after_a_null_choice_is_shown_by_view(tmp_path, choices):
    # what record_run.py saves after such an event: its raw events keep it (the turn ended
    # as model_error); made from the shipped live recording rather than recorded again.
    # mutations: dropping either half of `isinstance(choices, list) and choices` read
    # choices[0] of an empty list or of an object
    def null_choice(recording):
        recording["model_calls"][0]["events"].insert(0, {"choices": choices})

    path = changed_copy(tmp_path, "smollm2-135m-live.json", null_choice)
    shown = run_cli("view.py", path, "--out", tmp_path / "pages")
    assert shown.returncode == 0, shown.stderr


# --- compare.py --html writes into a folder ----------------------------------------------

TWO = (RECORDINGS / "repair.json", RECORDINGS / "bounded-max-turns-1.json")


def test_compare_html_writes_every_page_into_a_folder_it_makes_and_names_each(tmp_path):
    folder = tmp_path / "new" / "series"
    finished = run_cli("compare.py", *TWO, "--html", folder)
    assert finished.returncode == 0, finished.stderr
    names = ["bounded-max-turns-1.html", "repair.html", "index.html", "series.html"]
    assert sorted(p.name for p in folder.iterdir()) == sorted(names)
    printed = finished.stdout.split(f"Pages written in {folder}:\n")[1].split()
    assert printed == [(folder / name).as_uri() for name in names]  # the series page last
    assert 'href="./repair.html"' in (folder / "series.html").read_text(encoding="utf-8")
    again = run_cli("compare.py", *TWO, "--html", folder)  # an existing folder is written into
    assert again.returncode == 0 and again.stdout == finished.stdout


def test_a_recording_named_series_does_not_take_the_series_pages_name(tmp_path):
    named = tmp_path / "series.json"
    named.write_bytes((RECORDINGS / "repair.json").read_bytes())
    finished = run_cli("compare.py", named, "--html", tmp_path / "out")
    assert finished.returncode == 0, finished.stderr
    assert (tmp_path / "out" / "series-2.html").exists()
    assert "series-2.html" in (tmp_path / "out" / "series.html").read_text(encoding="utf-8")


def folder_as_file(tmp_path):
    (tmp_path / "taken").write_text("mine")
    return tmp_path / "taken", "is a file, not a folder"


def under_a_file(tmp_path):
    (tmp_path / "taken").write_text("mine")
    return tmp_path / "taken" / "pages", "is a file, so no folder can be made in it"


def a_page_name(tmp_path):
    return tmp_path / "series.html", "names a page; --html takes the folder"


def series_page_is_a_folder(tmp_path):
    (tmp_path / "out" / "series.html").mkdir(parents=True)
    return tmp_path / "out", "series.html is there and is not a file"


def test_an_existing_folder_named_like_a_page_takes_the_pages(tmp_path):
    # mutation: dropping `not folder.exists()` refused a folder that is there, named x.html
    (tmp_path / "pages.html").mkdir()
    finished = run_cli("compare.py", *TWO, "--html", tmp_path / "pages.html")
    assert finished.returncode == 0, finished.stderr
    assert (tmp_path / "pages.html" / "series.html").is_file()


def unwritable(tmp_path):
    return Path("/proc/self/pages"), "nothing can be written in /proc/self"  # root or not


@pytest.mark.parametrize(
    "place", [folder_as_file, under_a_file, a_page_name, series_page_is_a_folder, unwritable]
)
def test_compare_html_refuses_a_folder_it_cannot_use_before_writing_anything(tmp_path, place):
    folder, says = place(tmp_path)
    before = sorted(tmp_path.rglob("*"))
    finished = run_cli("compare.py", *TWO, "--html", folder)
    assert finished.returncode == 2 and finished.stdout == ""  # not even the comparison
    assert says in sole_error_line(finished)
    assert sorted(tmp_path.rglob("*")) == before


def test_view_says_when_its_index_cannot_be_written_and_keeps_the_pages(tmp_path):
    (tmp_path / "index.html").mkdir()
    finished = run_cli("view.py", *TWO, "--out", tmp_path)
    assert finished.returncode == 2
    assert "index.html: cannot be written" in sole_error_line(finished)
    assert finished.stdout.split() == [
        (tmp_path / p.name).with_suffix(".html").as_uri() for p in TWO
    ]


# --- the fuzz test: mutants of every shipped recording, through every reader ---------------

SEED = 32  # a failure names its mutant: "m017.json: null at events.5.message"
MUTANTS = 240
BATCH = 40  # mutants per CLI run: each CLI takes many recordings, one error line each
REPLAYED = 3  # replays run a real verdict each (about 0.5 s of CPU): a few, chosen below
CHEAP = ("bounded-max-turns-1.json", "claims-success-without-edit.json")  # no run_tests
REPLAY_READS = ("events", "model_calls", "messages", "stop", "final_tests")

KINDS = ("drop", "null", "huge", "number", "type", "deep", "unicode", "extra")
HUGE_INTS = [HUGE, -(10**30), 2**63, 2**63 - 1, -1, 0]
NUMBERS = [float("nan"), float("inf"), 1e308, -0.0, 5e-324]
OTHER_TYPES = ["text", 7, 1.5, True, [], {}, ["x"], {"k": None}]
ODD_TEXT = [
    "\ud800",
    "\u202e\u200b\ufeff",
    "\x00\x1b[2J\r",
    "\U000e0001\U000e0072\U000e006d\U000e007f",
    "x" * 100_000,
    "",
    "é✓😀\u2028",
]


def places(value, path):
    """Every place under `value` (at `path`), as paths, `path` itself first."""
    yield path
    items = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else ()
    )
    for key, item in items:
        yield from places(item, (*path, key))


def depth_of(value):
    if isinstance(value, dict):
        return 1 + max(map(depth_of, [*value.values(), *value]), default=0)
    if isinstance(value, list):
        return 1 + max(map(depth_of, value), default=0)
    return 0


def mutate(recording, rng):
    """Change one place of `recording` one way; return what was done, for a failure's message."""
    # half the changes go where the readers walk deepest, half anywhere
    top = rng.choice(list(recording) if rng.random() < 0.5 else [*REPLAY_READS, "model"])
    path = rng.choice(list(places(recording[top], (top,))))
    kind = rng.choice(KINDS)
    parent = recording
    for key in path[:-1]:
        parent = parent[key]
    key, value = path[-1], parent[path[-1]]
    if kind == "drop":
        del parent[key]
    elif kind == "extra":
        (value if isinstance(value, dict) else parent if isinstance(parent, dict) else {})[
            "extra"
        ] = None
    elif kind == "deep":  # as deep as load() allows, and a level more where the value nests
        for _ in range(100 - len(path) - depth_of(value) + rng.choice((0, 1))):
            value = [value]
        parent[key] = value
    else:
        choices = {"null": [None], "huge": HUGE_INTS, "number": NUMBERS, "type": OTHER_TYPES}
        parent[key] = rng.choice(choices.get(kind, ODD_TEXT))
    return f"{kind} at {'.'.join(map(str, path))}"


def reader_errors(finished):
    """The run's stderr lines, each an `error:` line (no traceback, no other output)."""
    lines = finished.stderr.splitlines()
    assert all(line.startswith("error: ") for line in lines), finished.stderr[-3000:]
    return lines


@pytest.mark.xdist_group("readers-fuzz")
def test_mutated_recordings_are_refused_in_one_line_or_read_by_every_reader(tmp_path):
    """Mutants of the shipped recordings (a key dropped, a value null, a huge or odd number,
    a wrong type, nesting as deep as load() allows, odd Unicode, an extra null key), seeded:
    load() refuses each in one line or accepts it, and then view.py, compare.py and
    compare.py --html show it or say in one `error:` line why they cannot, never a
    traceback. A few accepted ones are replayed (see `replayed`)."""
    rng = random.Random(SEED)
    originals = {path: json.loads(path.read_text(encoding="utf-8")) for path in FUZZED}
    mutants, accepted = {}, []
    cheap = [RECORDINGS / name for name in CHEAP]
    for number in range(MUTANTS):
        # every fourth from a recording cheap to replay, so that however many recordings
        # are shipped, enough accepted mutants are worth a replay (see `replayed`)
        source = rng.choice(cheap if number % 4 == 0 else FUZZED)
        recording = json.loads(json.dumps(originals[source]))
        done = mutate(recording, rng)
        path = tmp_path / f"m{number:03d}.json"
        path.write_text(json.dumps(recording), encoding="utf-8")  # as plain JSON, NaN and all
        mutants[path] = f"{path.name}: {done} of {source.name} (seed {SEED})"
        try:
            load(path)
        except RecordingError as error:
            assert "\n" not in str(error) and len(str(error)) < 1000, mutants[path]
        else:
            accepted.append(path)
    assert 40 < len(accepted) < MUTANTS - 40  # the mutants reach both sides of load()
    # an event with one extra key set to null (replay's first difference)
    path = tmp_path / "extra-null.json"
    recording = json.loads(json.dumps(originals[RECORDINGS / CHEAP[1]]))
    recording["events"][3]["extra"] = None
    path.write_text(json.dumps(recording), encoding="utf-8")
    mutants[path], accepted = f"{path.name}: extra at events.3 of {CHEAP[1]}", [path, *accepted]
    paths = list(mutants)
    for start in range(0, len(paths), BATCH):
        batch = paths[start : start + BATCH]
        for cli in (
            ("view.py", *batch, "--out", tmp_path / f"views-{start}"),
            ("compare.py", *batch),
            ("compare.py", *batch, "--html", tmp_path / f"series-{start}"),
        ):
            try:
                finished = run_cli(*cli)
            except Exception:  # a traceback: name the mutant that made it
                culprits = [mutants[p] for p in batch if raises(cli, batch, p)]
                raise AssertionError(f"{cli[0]} raised on {culprits}") from None
            errors = reader_errors(finished)
            for path in batch:  # one line for each refused, at most one for the others
                said = sum(f"{path}:" in line for line in errors)
                assert said <= 1 if path in accepted else said == 1, mutants[path]
    chosen = replayed(accepted, mutants)
    assert chosen[0].name == "extra-null.json" and len(chosen) == REPLAYED
    for path in chosen:  # unisolated: only the lab's own edits run, changed or not
        finished = run_cli("replay.py", path, "--no-isolate")
        reader_errors(finished)
        assert finished.returncode in (0, 1, 2), mutants[path]
        assert "Replayed 1 recording(s)" in finished.stdout, mutants[path]
        if path.name == "extra-null.json":  # a TypeError in the first difference, once
            assert "extra: the recording says null, today's run did nothing" in finished.stdout


def raises(cli, batch, path):
    """Whether `cli` (run on `batch`) raises when run on `path` alone."""
    try:
        run_cli(cli[0], path, *cli[1 + len(batch) :])
    except Exception:  # noqa: BLE001 - any exception is the finding
        return True
    return False


def replayed(accepted, mutants):
    """The mutants worth a replay's real verdict: accepted by load(), made from a recording
    whose replay makes no test run but the verdict (CHEAP), changed where replay reads what
    load() does not check closely (REPLAY_READS), one of each kind of change, REPLAYED at
    most. The first accepted is an event with an extra key set to null."""
    chosen, kinds = [], set()
    for path in accepted:
        label = mutants[path]
        kind, where = label.split(": ", 1)[1].split(" at ", 1)
        if not any(f" of {name}" in label for name in CHEAP):
            continue
        if where.split(".")[0] in REPLAY_READS and kind not in kinds:
            chosen.append(path)
            kinds.add(kind)
    return chosen[:REPLAYED]
