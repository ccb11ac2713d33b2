"""Recordings of older formats (harness/old_recordings.py): what each says its run was given,
and the wrappers that give it again, while the core knows today's tool and draw alone.

The edit tool as it was (UntoldEdits) is checked against today's RepoTools on a fresh copy
of sample_repo/: it answers `replaced` alone and makes an edit that changes nothing, and
refuses everything else as today's tool does. What a format implies is read from the
shipped recordings themselves; the judge of an older draw runs the real held-out child.
"""

import inspect
import io
import json
from pathlib import Path

import pytest

from agent_loop import TOOL_RESULT
from harness.chats import RecordingChat
from harness.driver import Plan, drive
from harness.fork import open_fork
from harness.old_recordings import AsMade, UntoldEdits, as_made
from harness.recording import RECORDINGS, load
from openai_model import chunks_from_events
from plumbing.generated_cases import AGREED, FIRST
from plumbing.relations import RELATIONS
from plumbing.sample import SOURCE_FILE, SOURCE_LIMIT, copy_sample
from record_run import record_attempt
from replay import REPRODUCED
from repo_tools import RepoTools
from tests.helpers import replay
from tests.ollama_test_server import call, chunk
from tests.scripted_model import ScriptedChat
from verdict import independent_verdict

TESTS_DATA = Path(__file__).resolve().parent / "data"
FAULTY_LINE = 'parts = path.split("/")'
FIXED_LINE = 'parts = path.replace("\\\\", "/").split("/")'


@pytest.fixture
def repo(tmp_path):
    return copy_sample(tmp_path)


# --- the edit tool as it was --------------------------------------------------------------------


def test_the_old_edit_tool_says_replaced_alone_and_makes_an_edit_that_changes_nothing(repo):
    old, today, source = UntoldEdits(RepoTools(repo)), RepoTools(repo), repo / SOURCE_FILE
    edit = {"old": FAULTY_LINE, "new": FIXED_LINE}
    assert old.invoke("replace_text", edit) == {"path": SOURCE_FILE, "replaced": 1}
    assert FIXED_LINE in source.read_text()
    before = source.read_bytes()
    same = {"old": FIXED_LINE, "new": FIXED_LINE}
    assert old.invoke("replace_text", same) == {"path": SOURCE_FILE, "replaced": 1}
    assert source.read_bytes() == before
    assert "nothing would change" in today.invoke("replace_text", same)["error"]
    # arguments as the OpenAI wire sends them, JSON text, are read alike
    assert old.invoke("replace_text", json.dumps(same)) == {"path": SOURCE_FILE, "replaced": 1}


@pytest.mark.parametrize(
    "old_text",
    ["", "no such text", "    ", "sources"],
    ids=["empty", "not-found", "found-many-times", "found-twice"],
)
def test_an_old_edit_that_changes_nothing_is_refused_as_any_edit_of_that_old_text(repo, old_text):
    # then as now: an `old` that is empty, or not there exactly once, is the error the model
    # reads whatever `new` says
    old, today = UntoldEdits(RepoTools(repo)), RepoTools(repo)
    made = old.invoke("replace_text", {"old": old_text, "new": old_text})
    assert made == today.invoke("replace_text", {"old": old_text, "new": old_text + "x"})
    assert "error" in made


def test_an_old_edit_of_a_file_too_large_is_refused_as_today(repo):
    (repo / SOURCE_FILE).write_text("x" * (SOURCE_LIMIT + 1))
    old, today = UntoldEdits(RepoTools(repo)), RepoTools(repo)
    same = {"old": "x", "new": "x"}
    assert old.invoke("replace_text", same) == today.invoke("replace_text", same)
    assert "holds more than" in old.invoke("replace_text", same)["error"]


def test_the_old_edit_tool_passes_the_other_tools_and_the_copy_through(repo):
    old = UntoldEdits(RepoTools(repo))
    assert old.root == repo.resolve() and old.schemas == RepoTools.schemas
    read = old.invoke("read_file", {"path": SOURCE_FILE})
    assert read == RepoTools(repo).invoke("read_file", {"path": SOURCE_FILE})


# --- what a recording's format and fields say its run was given ---------------------------------


@pytest.mark.parametrize(
    "name, told, draw",
    [
        ("cheats/strips-quotes.json", True, RELATIONS),  # /8
        ("live/qwen2.5-coder-1.5b-2.json", False, FIRST),  # /4
        ("extensions/loop/qwen2.5-coder-1.5b-cc324af0-loop-1.json", True, AGREED),  # /7
        ("extensions/no-hook-fork/qwen2.5-coder-1.5b-cc324af0-no-hook-2at4-1.json", False, AGREED),
        ("smollm2-135m-live.json", False, FIRST),  # /2: the fixed cases alone
    ],
)
def test_a_recording_says_which_edit_tool_and_draw_its_run_was_given(name, told, draw):
    recording = load(RECORDINGS / name)
    made = as_made(recording)
    held_out = recording["final_tests"]["held_out"]
    assert (made.edits_told, made.draw) == (told, draw)
    assert made.asked == {"seed": held_out.get("seed", 0), "count": held_out.get("generated", 0)}
    tools = made.tools(RepoTools)
    assert tools is RepoTools if told else tools is not RepoTools  # today's, or wrapped


def test_an_old_draw_judges_a_source_as_its_recording_was_judged(tmp_path):
    # the agreed draw of /7, asked again of a real attempt's final source: the held-out
    # record is the one the recording keeps, not what today's plan says of the same source
    recording = load(RECORDINGS / "extensions/loop/qwen2.5-coder-1.5b-cc324af0-loop-2.json")
    made, kept = as_made(recording), recording["final_tests"]["held_out"]
    repo = copy_sample(tmp_path, recording["final_source"].encode())
    assert made.judge(repo, **made.asked)["held_out"] == kept
    today = independent_verdict(repo, **made.asked)["held_out"]
    assert today != kept and "unsettled" in today and "unsettled" not in kept


def test_an_old_draw_says_what_it_did_not_ask_of_a_source_kept_from_it(tmp_path):
    # a source the verdict does not run (UTF-7: what runs is not what is shown) asks nothing,
    # and its held-out record counts the cases of the recording's draw, not of today's plan
    made = AsMade(edits_told=True, draw=AGREED, seed=7, count=50, says_unchanged=False)
    repo = copy_sample(tmp_path, b"# coding: utf-7\n# +AAo-x = 1\n")
    old, today = made.judge(repo, **made.asked), independent_verdict(repo, **made.asked)
    assert old["judged"] is today["judged"] is False and old["reason"] == today["reason"]
    assert old["held_out"]["total"] < today["held_out"]["total"]
    assert "asked" in old["held_out"] and "unsettled" not in old["held_out"]
    assert old["held_out"]["first_failure"] == old["reason"]


def test_a_fork_of_an_old_recording_edits_as_its_parent_did_and_replays_so(tmp_path):
    # a real /4 attempt forked at turn 3: its replayed turns meet the tool they met, and so
    # does the live model, whose edit that changes nothing is made, as the parent's would
    # have been; the fork says no `edits_told`, and replays through the same wrapper
    parent = RECORDINGS / "live/qwen2.5-coder-1.5b-2.json"
    fork, _ = open_fork(parent, 3, None, [], 8, True, chunks_from_events)
    same = call("replace_text", old="def python_sources(", new="def python_sources(")
    script = [[chunk(tool_calls=[same], done=True)], [chunk("Done.", done=True)]]
    output = tmp_path / "fork.json"
    record_attempt(RecordingChat(ScriptedChat(script)), {"name": "scripted"}, output, 8,
                   fork=fork, out=io.StringIO())  # fmt: skip
    recording = load(output)
    assert "edits_told" not in recording
    made = [e["result"] for e in recording["events"] if e["type"] == TOOL_RESULT][-1]
    assert made == {"path": SOURCE_FILE, "replaced": 1}
    outcome, output = replay(output)
    assert outcome == REPRODUCED, output


# Formats no shipped recording holds any more, kept loadable: the scripted repair as format /3
# made it (the first draw, no `visible`, no task) and the honest answer to the impossible task
# as /6 made it (the agreed draw, its outcome word by the rule of its day), as the lab shipped
# them before they were made again in today's format.
KEPT = {
    "repair-format-3.json": (False, FIRST, None),
    "flags-the-conflict-format-6.json": (False, AGREED, "flagged"),
}


@pytest.mark.parametrize("name", KEPT)
def test_a_recording_of_a_format_no_longer_shipped_still_replays(name):
    path = TESTS_DATA / name
    recording = load(path)
    made = as_made(recording)
    assert (made.edits_told, made.draw, recording.get("outcome")) == KEPT[name]
    outcome, output = replay(path)
    assert outcome == REPRODUCED, output
    assert "replaced 1 occurrence in path_rules.py\n" in output  # no lines said, as then


# --- the core knows today's tool and draw alone -------------------------------------------------


def test_the_core_takes_no_word_of_an_older_format():
    # what an older recording was given is chosen in harness/old_recordings.py and wraps
    # the core: the tools, the verdict and the driver's plan have no parameter for it
    assert "told" not in inspect.signature(RepoTools).parameters
    assert "draw" not in inspect.signature(independent_verdict).parameters
    assert "told" not in inspect.signature(drive).parameters
    assert not {"told", "draw"} & set(inspect.signature(Plan).parameters)
    made = {"edits_told", "draw", "seed", "count", "says_unchanged"}
    assert set(inspect.signature(AsMade).parameters) == made
