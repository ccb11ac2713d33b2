"""The reviewed list of equivalent mutants: each entry names a mutant of today's code, and a
pass's score leaves out only the listed mutants that survived it.

An entry is a claim about one line of code. When that line changes, the claim may no longer
hold, so the entry must stop matching (and this test fail) rather than quietly cover a
different mutant.
"""

import pytest

from tests.maintainers.mutate import (
    EQUIVALENTS,
    MODULES,
    Mutant,
    failed_test,
    mutants_of,
    read_equivalents,
    summary,
)


def test_every_listed_equivalent_is_as_many_mutants_of_todays_code_as_it_says_with_a_reason():
    entries = read_equivalents(EQUIVALENTS.read_text(encoding="utf-8"))
    assert entries, "the list is read"
    assert {e.path for e in entries} <= set(MODULES), "only modules a pass mutates"
    everything = [m for path in sorted({e.path for e in entries}) for m in mutants_of(path)]
    for entry in entries:
        matched = [m for m in everything if entry.covers(m)]
        assert len(matched) == entry.lines, f"line {entry.at}: {entry.what} matches {matched}"
        assert len(entry.why.split()) >= 10, f"line {entry.at}: say why, in a sentence"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("a.py `x` -> `y`\n    on: x\n    why: z\n", "line 1: expected `path:line what`"),
        ("a.py:3 `x` -> `y`\n    why: z\n", "line 1: an entry needs `on:` and `why:`"),
        ("a.py:3 `x` -> `y`\n    on: x\n", "line 1: an entry needs `on:` and `why:`"),
        ("# note\n    on: x\n", "line 2: an indented line outside an entry"),
        ("a.py:3 `x` -> `y`\n    because: z\n", "line 2: expected `on:`, `lines:` or `why:`"),
        ("a.py:3 `x` -> `y`\n    on: x\n    lines: two\n", "line 3: expected `on:`, `lines:`"),
    ],
)
def test_a_malformed_entry_is_refused_naming_its_line(text, problem):
    with pytest.raises(ValueError, match=problem.replace("`", ".")):
        read_equivalents(text)


def mutant(line, what, on):
    return Mutant("m.py", line, 0, line, 1, "x", what, on)


LISTED = read_equivalents(
    "# two reviewed entries\n\n"
    "m.py:1 `a` -> `b`\n    on: a = 1\n    why: never seen,\n      for a reason.\n\n"
    "m.py:9 `c` -> `d`\n    on: c = 2\n    why: neither.\n"
)


def test_a_reason_may_go_on_over_more_lines():
    assert [(e.path, e.what, e.on, e.why, e.at) for e in LISTED] == [
        ("m.py", "`a` -> `b`", "a = 1", "never seen, for a reason.", 3),
        ("m.py", "`c` -> `d`", "c = 2", "neither.", 8),
    ]


def test_an_entry_may_name_the_mutant_of_each_line_reading_the_same():
    # Two lines of one module may read the same, and the same reason may hold for both: one
    # entry names both (`lines: 2`), where a list keyed by line text could name neither.
    text = "m.py:4 `a` -> `b`\n    on: a += 1\n    lines: 2\n    why: read as true or false.\n"
    (entry,) = read_equivalents(text)
    assert (entry.lines, entry.why) == (2, "read as true or false.")
    assert [e.lines for e in LISTED] == [1, 1]
    twins = [mutant(4, "`a` -> `b`", "a += 1"), mutant(9, "`a` -> `b`", "a += 1")]
    assert all(entry.covers(m) for m in twins)


def test_the_score_leaves_out_only_listed_mutants_that_survived():
    mutants = [
        mutant(5, "`a` -> `b`", "a = 1"),  # listed (its line moved from 1 to 5), survived
        mutant(6, "`a` -> `b`", "a = 2"),  # same change on another line: not listed
        mutant(7, "`e` -> `f`", "e = 3"),  # killed
        mutant(8, "`g` -> `h`", "g = 4"),  # timed out
    ]
    lines, score = summary(mutants, ["SURVIVED", "SURVIVED", "killed", "timeout"], LISTED)
    assert score == pytest.approx(200 / 3)
    assert lines == [
        "1 killed, 2 survived, 1 timed out; score 50% (killed or timed out)",
        "1 of the survivors are reviewed equivalents (equivalent_mutants.txt); "
        "without them: 2 of 3, score 67%",
        "  survived: m.py:5 `a` -> `b` (reviewed equivalent)",
        "  survived: m.py:6 `a` -> `b`",
    ]


def test_a_listed_mutant_that_was_killed_is_counted_killed_and_its_entry_called_wrong():
    mutants = [mutant(1, "`a` -> `b`", "a = 1"), mutant(2, "`x` -> `y`", "x = 0")]
    lines, score = summary(mutants, ["killed", "SURVIVED"], LISTED)
    assert score == 50.0
    assert lines == [
        "1 killed, 1 survived, 0 timed out; score 50% (killed or timed out)",
        "  survived: m.py:2 `x` -> `y`",
        "  warning: killed, yet listed as equivalent (fix its entry): m.py:1 `a` -> `b`",
    ]


def test_a_kill_by_the_whole_suite_names_the_test_that_failed():
    # A kill seen only by the whole suite is named, so it can be judged (four reviewed
    # equivalents were once "killed" there by this file's own check of the list).
    output = "....F\n=== short test summary info ===\nFAILED tests/test_x.py::test_y - boom\n"
    assert failed_test(output) == "tests/test_x.py::test_y"
    assert failed_test("ERROR tests/test_z.py - ImportError\n") == "tests/test_z.py"
    assert failed_test("no summary at all\n") == "?"
