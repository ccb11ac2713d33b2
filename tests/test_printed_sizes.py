"""Every printed size bounded: a diff is cut past 200 lines or 20,000 characters, saying how
much was left out, and a call's arguments past 2,000 characters.

A flood, made with the real recorder against the Ollama stand-in: one
edit puts a line of about 900 KB in path_rules.py and 64 small edits change it, a 4.7 MB
recording whose replay would print 120 MB (each edit's diff showing the whole line twice)
and whose page would be 120 MB without the bounds. One recording is made for the module
and shared by its tests.
"""

import io
import os

import pytest

from harness.console import ARGUMENTS_SHOWN, RunPrinter
from plumbing.source_diff import DIFF_CHARACTERS, DIFF_LINES, bounded, unified
from tests.in_process import run_cli
from tests.ollama_test_server import OllamaTestServer, call, chunk, reply

MB = 1_000_000
EDITS = 64
PIECE = 14_000  # characters between two markers of the long line: 64 of them, ~900 KB
LONG_LINE = 'PAD = "' + "".join(f"<{i:02d}>" + "x" * PIECE for i in range(EDITS)) + '"'


def turn(tool_call):
    return reply(chunk(tool_calls=[tool_call]), chunk(done=True))


@pytest.fixture(scope="module")
def flood(tmp_path_factory):
    """(the recorder's run, the recording's path): the long line, then 64 small edits of it."""
    script = [
        turn(
            call(
                "replace_text", old="def python_sources", new=f"{LONG_LINE}\n\n\ndef python_sources"
            )
        )
    ]
    script += [turn(call("replace_text", old=f"<{i:02d}>", new=f"[{i:02d}]")) for i in range(EDITS)]
    script.append(reply(chunk("Done."), chunk(done=True)))
    output = tmp_path_factory.mktemp("flood") / "flood.json"
    with OllamaTestServer(script) as server:
        recorded = run_cli(
            "record_run.py", "--host", server.host, "--output", output, "--max-turns", EDITS + 2
        )
    assert recorded.returncode == 1, recorded.stderr  # the repair was never made
    return recorded, output


SHARES_THE_FLOOD = pytest.mark.xdist_group("printed-sizes-flood")


@SHARES_THE_FLOOD
def test_a_flood_of_edits_prints_under_5_mb_recorded_and_replayed(flood):
    recorded, output = flood
    assert 4 * MB < os.path.getsize(output) < 6 * MB  # about 4.7 MB
    replayed = run_cli("replay.py", output, text=False)
    assert replayed.returncode == 0, replayed.stderr  # the cut changes what is shown only
    for printed in (recorded.stdout.encode(), replayed.stdout):
        assert len(printed) < 5 * MB  # it was 120 MB
    # every edit's diff was cut, and said so: the 65 edits', and the whole change's
    assert replayed.stdout.count(b"[... the diff is cut here: ") == EDITS + 2


@SHARES_THE_FLOOD
def test_a_flood_of_edits_makes_a_page_under_2_mb(flood, tmp_path):
    _, output = flood
    written = run_cli("view.py", output, "--out", tmp_path)
    assert written.returncode == 0, written.stderr
    assert (tmp_path / "flood.html").stat().st_size < 2 * MB  # it was 120 MB


def test_a_diff_is_cut_past_its_lines_saying_how_many_were_left_out():
    lines = [f"+line {n}" for n in range(DIFF_LINES + 50)]
    shown = bounded(iter(lines))
    assert shown[:DIFF_LINES] == lines[:DIFF_LINES]
    left = sum(map(len, lines[DIFF_LINES:]))
    assert shown[DIFF_LINES:] == [
        f"[... the diff is cut here: 50 more lines ({left:,} characters) not shown]"
    ]
    assert bounded(lines[:DIFF_LINES]) == lines[:DIFF_LINES]  # at the limit, nothing is cut


def test_a_diff_is_cut_inside_the_line_that_crosses_its_characters():
    lines = ["-" + "a" * 9, "+" + "b" * (DIFF_CHARACTERS + 5), " c", " dd"]
    shown = bounded(lines)
    assert shown[1] == "+" + "b" * (DIFF_CHARACTERS - 11)  # what was left of the room
    assert sum(map(len, shown[:2])) == DIFF_CHARACTERS
    assert shown[2:] == [
        "[... the diff is cut here: 16 more characters of the line above and 2 more lines "
        "(5 characters) not shown]"
    ]
    exactly = ["x" * DIFF_CHARACTERS]
    assert bounded(exactly) == exactly


def test_a_small_diff_is_whole_and_a_long_one_ends_with_its_cut():
    before = "".join(f"line {n}\n" for n in range(10))
    assert unified(before, before.replace("line 5", "line five"), "a", "b") == [
        "    --- a",
        "    +++ b",
        "    @@ -4,5 +4,5 @@",
        "     line 3",
        "     line 4",
        "    -line 5",
        "    +line five",
        "     line 6",
        "     line 7",
    ]
    long = unified("x\n", "y" * 100_000 + "\n", "a", "b")
    assert sum(map(len, long)) < DIFF_CHARACTERS + 300
    assert long[-1].startswith("    [... the diff is cut here: ")


def test_a_calls_arguments_are_cut_after_redaction(monkeypatch):
    secret = "sk-very-secret-value-0123"
    monkeypatch.setenv("SOME_API_KEY", secret)
    # the secret straddles the cut: cut first, its first half would be printed as it is
    arguments = {"new": "x" * (ARGUMENTS_SHOWN - 20) + secret + "y" * 900_000}
    out = io.StringIO()
    RunPrinter(out).show(
        {
            "type": "tool_start",
            "turn": 1,
            "index": 0,
            "name": "replace_text",
            "arguments": arguments,
        }
    )
    line = out.getvalue()
    assert len(line) < ARGUMENTS_SHOWN + 100
    assert "sk-very" not in line and "[redac" in line
    assert line.rstrip().endswith("more characters]")
