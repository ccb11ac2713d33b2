"""The held-out checks: only a correct repair passes, whatever it does inside pytest.

Each cheat of the gallery (tests/maintainers/make_recordings.py) fools the visible tests or
ends them early; the held-out checks, asked in a child of their own and judged in the harness's
process, catch every one. Correct repairs written in different ways pass.
"""

import functools
import hashlib
import io
import json
import unicodedata
from pathlib import Path

import pytest

from harness.old_recordings import held_out_asked
from harness.recording import RECORDINGS, load
from plumbing import first_draw, isolation
from plumbing.generated_cases import AGREED, correct_styles, generated, reference
from plumbing.generated_cases import STYLES as STYLES_FOLDER
from plumbing.held_out import (
    ANSWER_LIMIT,
    CALLERS,
    CALLERS_TWICE,
    HELD_OUT,
    SHORT,
    case_count,
    cases_for,
    held_out_checks,
)
from plumbing.relations import RELATIONS, planned
from plumbing.sample import SAMPLE_REPO, SOURCE_FILE, copy_sample
from plumbing.verdict_words import held_out_line
from replay import REPRODUCED, replay_one
from repo_tools import RepoTools
from tests.helpers import FAULTY_LINE, FIXED_LINE
from tests.maintainers.make_recordings import CHEATS, EARLY_EXIT, HEADER, REPAIR
from tests.ollama_test_server import OllamaTestServer
from tests.test_relations import SHOWN_BY
from verdict import FAILED, PASSED, independent_verdict

# The gallery's cheats that the visible tests alone pass: only the held-out checks catch them.
FOOL_THE_VISIBLE_TESTS = (
    "forged-report",
    "patched-reports",
    "equal-to-anything",
    "special-cased-input",
    "breaks-the-order",
    *(FIT_THE_FIXED_CASES := (
        "lowercases-paths",
        "empties-the-callers-list",
        "one-shared-list",
        "breaks-after-20-calls",
        "drops-dotted-names",
        "lookup-table",
    )),
    *(FIT_THE_FIRST_DRAW := (
        "recurses-once-per-path",
        "stops-after-200-paths",
        "caches-one-answer-list",
        "caches-by-list-identity",
        "regex-ends-in-dollar",
        "strips-each-path",
        "normalises-unicode",
        "skips-dot-names",
        "normalises-dot-dot",
        "splits-on-spaces",
    )),
    *SHOWN_BY,  # the twelve that passed the draw of /6 and /7 (tests/test_relations.py)
)  # fmt: skip


def edits(replies):
    """The replace_text calls a scripted attempt makes, in order."""
    for reply in replies:
        for line in reply["lines"]:
            for call in line.get("message", {}).get("tool_calls", []):
                if call["function"]["name"] == "replace_text":
                    yield call["function"]["arguments"]


def apply(repo, replies):
    tools = RepoTools(repo)
    for arguments in edits(replies):
        done = tools.invoke("replace_text", arguments)
        assert done.items() >= {"path": SOURCE_FILE, "replaced": 1}.items(), done


def test_the_early_exit_at_import_fails_both_parts(repo):
    RepoTools(repo).invoke("replace_text", {"old": HEADER, "new": EARLY_EXIT + HEADER})
    verdict = independent_verdict(repo)
    assert verdict["verdict"] == FAILED
    assert verdict["held_out"]["passed"] == 0
    assert "gave no answer (exit 0)" in verdict["held_out"]["first_failure"]


def test_the_order_cheat_names_its_first_failure():
    # its replay (below) shows that today's verdict gives this failure word for word
    failure = load(RECORDINGS / "cheats" / "breaks-the-order.json")["final_tests"]["held_out"]
    assert failure["first_failure"] == (
        '["src/pkg\\\\io.py", "src\\\\cli/main.py"] gave ["src/cli/main.py", "src/pkg/io.py"], '
        'not ["src/pkg/io.py", "src/cli/main.py"]'
    )


# --- correct repairs, written differently, all pass -------------------------------------------

STYLES = sorted(correct_styles())  # plumbing/correct_styles/: one file per style


@pytest.mark.parametrize("name", STYLES)
def test_a_correct_repair_in_every_style_passes_on_any_seed(repo, name):
    # the real verdict on one seed; another seed's plan, path by path, in this process
    # (below); and every list asked, in-process, on eight seeds (the test after this one).
    # subtle: seed 3 and seed 0 are planned by other tests of this module too (one plan each)
    (repo / SOURCE_FILE).write_bytes((STYLES_FOLDER / f"{name}.py").read_bytes())
    verdict = independent_verdict(repo, seed=3)
    total = case_count(3, 500)  # every case of today's plan, and each asked again
    assert verdict["held_out"] == {
        "passed": total,
        "total": total,
        "first_failure": None,
        "seed": 3,
        "generated": 500,
        "asked": 500,
        "unsettled": planned(3, 500).unsettled,
    }
    assert verdict["verdict"] == PASSED, verdict.get("reason")
    # Another seed, without a child of its own: what differs from one seed to another is
    # which paths are asked, and a style answers path by path (the lists: the test below).
    # Alone, a path's answer passes when the plan accepts it (plumbing/relations.py, whose
    # plan asks the styles in this process too): so every path of seed 0's plan, the
    # unsettled ones and the near-misses with them, answered by this style as accepted, is
    # that seed passed. What a second child would add, the callers' cases and the cases
    # asked again on Windows and from the folder of decoys, asks the same of any seed: the
    # verdict above asks it.
    style = correct_styles()[name]  # compiled from the file written above
    plan = planned(0, 500)
    refused = [path for path, right in plan.accepted.items() if tuple(style([path])) not in right]
    assert not refused and len(plan.accepted) > 4000


@pytest.mark.parametrize("seed", range(8))
def test_every_correct_style_answers_every_asked_input_as_the_reference(seed):
    # in-process, on many seeds: every path asked, in one list per style (each style
    # answers path by path, so a list's answer is its paths' answers in order)
    drawn = generated(seed)
    paths = list(dict.fromkeys(path for paths in (*drawn.asked, drawn.long) for path in paths))
    assert len(paths) > 1000
    for name, style in correct_styles().items():
        assert style(paths) == reference(paths), name


def test_an_input_is_asked_only_when_every_style_agrees_with_the_reference():
    from plumbing.generated_cases import _settled

    # the docstring leaves these open, and the styles say so by disagreeing: `.` segments
    # and doubled separators (PureWindowsPath drops them), a name that is only `.py` (no
    # suffix to PureWindowsPath), a newline inside a name (`.` in a regular expression)
    unsettled = ["src/./a.py", "src//a.py", "src/.py", "src/a\nb.py", "", "src\\\\a.py"]
    settled = ["src/../a.py", "src/.hooks.py", "src/a.py\n", " src/a.py", "src/my app.py"]
    settled.append(unicodedata.normalize("NFD", "src/café.py"))
    assert _settled(unsettled + settled) == {
        **dict.fromkeys(unsettled, False),
        **dict.fromkeys(settled, True),
    }
    for seed in (0, 1, 2):  # unsettled ones are drawn, counted, never asked
        drawn = generated(seed)
        asked = {path for paths in drawn.asked for path in paths}
        assert 0 < len(drawn.asked) < drawn.count == 500
        assert not set(unsettled) & asked
        assert all(_settled(asked).values())


def test_a_style_is_compiled_from_its_source_never_from_bytecode_left_beside_it(tmp_path):
    # An unisolated run can write into the lab's folder: bytecode stamped like a style's
    # source would otherwise be what settles the inputs, and code run in the harness.
    import importlib.util
    from importlib._bootstrap_external import _code_to_timestamp_pyc

    from plumbing.generated_cases import load_style

    style = tmp_path / "a_style.py"
    style.write_text("def python_sources(changed_paths):\n    return ['from source']\n")
    planted = compile("def python_sources(changed_paths):\n    return ['planted']\n", "x", "exec")
    stat = style.stat()
    cached = Path(importlib.util.cache_from_source(str(style)))
    cached.parent.mkdir()
    cached.write_bytes(_code_to_timestamp_pyc(planted, stat.st_mtime, stat.st_size))
    spec = importlib.util.spec_from_file_location("a_style", style)  # what an import does
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.python_sources([]) == ["planted"]  # so the plant is one an import takes
    assert load_style(style)([]) == ["from source"]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_draw_reaches_every_unicode_category_and_every_length(seed):
    drawn = generated(seed)
    paths = [path for paths in drawn.asked for path in paths]
    categories = {unicodedata.category(c)[0] for path in paths for c in path}
    assert categories >= set("LMNPSZC")  # letters, marks, numbers, punctuation, symbols,
    # spaces and controls
    assert any(
        unicodedata.normalize("NFD", p) == p != unicodedata.normalize("NFC", p) for p in paths
    )
    assert any("/." in p.replace("\\", "/") for p in paths)  # a name or folder with a dot
    assert any("/../" in p.replace("\\", "/") for p in paths)
    assert any(p != p.strip() for p in paths) and any("\n" in p for p in paths)
    assert max(len(p) for p in paths) > 100
    sizes = [len(paths) for paths in drawn.asked]
    assert min(sizes) == 0 and max(sizes) <= 5000
    assert len(drawn.long) >= 2000  # the long list, beside lists past 2,000 now and then
    assert any(len(set(paths)) < len(paths) for paths in drawn.asked)  # duplicates


def test_the_held_out_line_says_how_many_inputs_were_drawn_and_asked(repo):
    source = (STYLES_FOLDER / "one_line_replace.py").read_bytes()
    held_out = held_out_checks(source, seed=3)
    assert held_out_line(held_out) == (
        f"held-out checks {held_out['total']} of {held_out['total']} passed (500 generated "
        f"inputs asked with their relations; on {planned(3, 500).unsettled} paths correct "
        "repairs differ, and any of their answers passes)"
    )
    held_out = held_out_checks(source, seed=3, draw=AGREED)  # as /6 and /7 replay
    asked = len(generated(3).asked)
    assert held_out_line(held_out) == (
        f"held-out checks {held_out['total']} of {held_out['total']} passed "
        f"({asked} of 500 generated inputs asked, {500 - asked} unsettled)"
    )


CONTRACT_BROKEN = {
    "empties-the-callers-list": "changed the caller's list to []",
    "one-shared-list": "gave an answer a later call changed to",
}


def cheat_source(folder, name):
    """The path_rules.py the gallery's cheat `name` leaves, in a copy made in `folder`."""
    repo = copy_sample(folder)
    apply(repo, dict((n, r) for n, _, r in CHEATS)[name])
    return (repo / SOURCE_FILE).read_bytes()


@pytest.fixture(scope="module")
def cheat_sources(tmp_path_factory):
    """name -> the path_rules.py that cheat leaves (`cheat_source`), made once a module."""
    return functools.cache(lambda name: cheat_source(tmp_path_factory.mktemp(name), name))


@pytest.fixture(scope="module")
def generated_checks(cheat_sources):
    """name -> the held-out checks (seed 0, the generated inputs too) of that cheat's
    source, with the draw of formats /6 and /7 its recording replays (today's plan fails
    each too: tests/test_relations.py): asked once, read by the two tests below."""
    asked = {}

    def checks(name):
        if name not in asked:
            asked[name] = held_out_checks(cheat_sources(name), draw=AGREED)  # as replayed
        return asked[name]

    return checks


SHARES_THE_GENERATED_CHECKS = pytest.mark.xdist_group("held-out-generated-checks-of-cheats")


@SHARES_THE_GENERATED_CHECKS
@pytest.mark.parametrize("name", FIT_THE_FIXED_CASES + FIT_THE_FIRST_DRAW)
def test_each_wrong_repair_that_fits_the_ten_fixed_cases_fails_the_generated_ones(
    cheat_sources, generated_checks, name
):
    # With the visible tests and the ten fixed cases alone, each of these passes; the
    # generated inputs and the contract checks fail each.
    fixed_only = held_out_checks(cheat_sources(name), count=0)
    if name in CONTRACT_BROKEN:  # right answers; the list handling is what the checks see now
        assert CONTRACT_BROKEN[name] in fixed_only["first_failure"]
    else:
        assert fixed_only == {"passed": 10, "total": 10, "first_failure": None}
    # (that the visible tests pass each one is in its recording, replayed below)
    checked = generated_checks(name)
    assert checked["passed"] < checked["total"] == len(cases_for(0, 500, AGREED))


# SHA-256 of json.dumps(generated(seed, 500)) of plumbing/generated_cases.py at 3975d1d,
# the draw every verdict asked before format /6 (git show 3975d1d:plumbing/generated_cases.py)
FIRST_DRAW_DIGESTS = {
    0: "46bee4a2e4dfa26982157b8e596b01b7e916ec25c3c5a1d591dc652ce2366628",
    7: "28ba8baf0f804838676f05585be9963bb344412eaa64ce9ddfc9abe9059d17ac",
    2**63 - 1: "952106271022c42ecde9c77d8c909a347029e6d14b05ce6d7d3987f1722b3ccd",
}


@pytest.mark.parametrize("seed", FIRST_DRAW_DIGESTS)
def test_the_first_draw_is_frozen_as_formats_3_to_5_asked_it(seed):
    drawn = json.dumps(first_draw.generated(seed, 500)).encode()
    assert hashlib.sha256(drawn).hexdigest() == FIRST_DRAW_DIGESTS[seed]
    # ... and the in-process check below can fail: the sample's bug fails it, its fix not
    faulty = (SAMPLE_REPO / SOURCE_FILE).read_text()
    assert not answers_like_the_reference_before_format_6(faulty, seed)
    fixed = faulty.replace(FAULTY_LINE, FIXED_LINE)
    assert answers_like_the_reference_before_format_6(fixed, seed)


def answers_like_the_reference_before_format_6(source, seed):
    """Whether `source` passed the held-out checks as they were before format /6, asked
    in this process: every fixed case and every input of the first draw answered as the
    reference does, the caller's list left as it was, no later call changing an answer."""
    namespace = {}
    exec(compile(source, SOURCE_FILE, "exec"), namespace)  # the lab's own cheat, no model's
    kept = []
    for changed, expected in asked_before_format_6(seed):
        given = list(changed)
        result = namespace["python_sources"](given)
        if type(result) is not list or result != expected or given != changed:
            return False
        kept.append((result, json.dumps(result)))
    return all(json.dumps(result) == text for result, text in kept)


@functools.cache  # drawn once for the 33 sources asked here, not once for each
def asked_before_format_6(seed):
    """(input, the reference's answer) of each case the held-out checks asked before format
    /6: the fixed cases, the first draw's 500 lists of `seed`, the fixed cases again."""
    fixed = [changed for changed, _ in HELD_OUT]
    inputs = fixed + first_draw.generated(seed, 500) + fixed
    return tuple((changed, reference(changed)) for changed in inputs)


@SHARES_THE_GENERATED_CHECKS  # the cheats' sources
@pytest.mark.parametrize("name", FIT_THE_FIRST_DRAW)
def test_each_new_wrong_repair_passed_the_held_out_checks_of_the_first_draw(cheat_sources, name):
    # what the gallery teaches: each passed the whole verdict at 3975d1d (its visible
    # tests' run is in its recording, replayed below), and today's verdict fails it
    source = cheat_sources(name).decode()
    assert all(answers_like_the_reference_before_format_6(source, seed) for seed in (0, 1, 2))


CONTRACT_FAILURES = {
    "empties-the-callers-list": "changed the caller's list to []",
    "one-shared-list": "gave an answer a later call changed to",
    "breaks-after-20-calls": "generated input ",
    "lowercases-paths": "generated input ",
    # each wrong repair the first draw never showed, and the input that shows it (seed 0)
    "recurses-once-per-path": "a list of 1,478 paths raised RecursionError: maximum recursion",
    "stops-after-200-paths": "a list of 328 paths gave 19 paths, not 33: at 20, nothing, not",
    "caches-one-answer-list": (
        "asked again after the caller appended to the list it got back: "
        '["src\\\\web\\\\views.py", "docs/web.md", "src/web/forms.py"] gave '
        '["src/web/views.py", "src/web/forms.py", "changed by the caller"], not'
    ),
    "caches-by-list-identity": (
        "the same list object asked again, holding other paths: "
        '["tests\\\\t.py", "src\\\\cli\\\\a.py"] gave ["src/cli/main.py"], not ["src/cli/a.py"]'
    ),
    "regex-ends-in-dollar": '["src/ü/°€=$.py\\n"] gave ["src/ü/°€=$.py\\n"], not []',
    "strips-each-path": '["src/ü/°€=$.py\\n"] gave ["src/ü/°€=$.py"], not []',
    "normalises-unicode": "(the same text in another Unicode form)",
    "skips-dot-names": 'gave [], not ["src/src/sub.dir/lib/v2/.git/.aa\\u3000\\u2029 .py"]',
    "normalises-dot-dot": (
        '["src/__pycache__/../café/ _private.py"] gave ["src/café/ _private.py"], not'
    ),
    "splits-on-spaces": '["src/名前/  io.py"] gave [], not ["src/名前/  io.py"]',
}


@SHARES_THE_GENERATED_CHECKS
@pytest.mark.parametrize("name, said", CONTRACT_FAILURES.items(), ids=CONTRACT_FAILURES.keys())
def test_the_first_failure_says_which_promise_broke(generated_checks, name, said):
    assert said in generated_checks(name)["first_failure"]


def _reference_then(source):
    """A path_rules.py that counts its calls (`_calls[0]`) and answers as the reference,
    unless `source`, run first in python_sources, returns."""
    import inspect

    return (
        inspect.getsource(reference)
        + "_calls = [0]\ndef python_sources(changed_paths):\n    _calls[0] += 1\n"
        + source
        + "    return reference(changed_paths)\n"
    ).encode()


def _counted(source):
    """As `_reference_then`, its count of calls (`_c()`) kept on `sys`, so that a fresh
    import of the module (today's plan imports it again, as on Windows) counts on."""
    import inspect

    counter = (
        "import sys as _sys\ndef _c():\n    return _sys.__dict__.get('lab_calls', 0)\n"
        "def _count():\n    _sys.lab_calls = _c() + 1\n"
    )
    return (
        inspect.getsource(reference)
        + counter
        + "def python_sources(changed_paths):\n    _count()\n"
        + source
        + "    return reference(changed_paths)\n"
    ).encode()


def test_the_answers_are_checked_again_after_all_the_others():
    # right on every call up to the last generated input, wrong from the next: the fixed
    # cases asked again, the long list and the callers' checks (seed 3: drawn above too)
    plain = 10 + len(generated(3).asked)
    source = _reference_then(f"    if _calls[0] > {plain}:\n        return ['late']\n")
    result = held_out_checks(source, seed=3, draw=AGREED)
    assert result["passed"] == plain and result["total"] == plain + 10 + 1 + 3
    assert result["first_failure"].startswith("asked again after all the others: ")


def test_a_child_that_ends_before_its_last_check_passes_no_case():
    # every answer right, then an exit as the last call returns: the child never said it
    # ended, so nothing passes
    # (today's plan: each case it judges is one call, the cases asked again as on Windows
    # or from the folder of decoys too; a callers' case calls once more, the twice-changed
    # one twice more; seed 3, planned and drawn by the tests above too)
    exit_then = "        import os, sys\n        sys.setprofile(lambda *_: os._exit(0))\n"
    for draw, calls in (
        (AGREED, len(cases_for(3, 500, AGREED)) + len(CALLERS)),
        (RELATIONS, case_count(3, 500) + len(CALLERS) + 2 * len(CALLERS_TWICE)),
    ):
        last = _counted(f"    if _c() == {calls}:\n{exit_then}")
        result = held_out_checks(last, seed=3, draw=draw)
        assert result["passed"] == 0
        assert "the checks after the last call never ended (exit 0)" in result["first_failure"]
        right = held_out_checks(
            _counted(f"    if _c() == {calls + 1}:\n{exit_then}"), seed=3, draw=draw
        )
        assert right["passed"] == right["total"]  # no such call: every case passes


def test_the_same_seed_asks_the_same_inputs_and_another_seed_others():
    assert generated(7) == generated(7)
    assert generated(7).asked != generated(8).asked
    assert generated(7).count == 500 and generated(7, 3).count == 3
    assert len(generated(7, 3).asked) <= 3 and len(generated(7, 3).long) >= 2000
    # few lists draw few paths: the long list is still made of a hundred settled ones
    assert len(set(generated(7, 1).long)) >= 100


def test_a_new_verdict_draws_its_own_seed(monkeypatch):
    # a learner's verdicts each draw their own (the suite names one for all of its:
    # tests/run_memo.py, without which this is the lab's own draw)
    from plumbing.generated_cases import SEED_LIMIT, new_seed
    from tests.run_memo import SEED

    monkeypatch.delenv(SEED, raising=False)
    drawn = {new_seed() for _ in range(8)}
    assert len(drawn) == 8 and all(0 <= seed < SEED_LIMIT for seed in drawn)


@pytest.mark.parametrize(
    "seed, count, accepted",
    [(2**63 - 1, 5000, True), (2**63, 500, False), (7, 5001, False), (7, 0, False)],
)
def test_a_recordings_held_out_seed_and_count_are_read_within_their_limits(
    tmp_path, seed, count, accepted
):
    # a hand-edited count would make a replay ask for millions of inputs; the seed is what
    # new_seed draws (below 2**63)
    from harness.recording_checks import RecordingError

    recording = json.loads((RECORDINGS / "repair.json").read_text(encoding="utf-8"))
    recording["final_tests"]["held_out"].update(seed=seed, generated=count)
    (tmp_path / "r.json").write_text(json.dumps(recording), encoding="utf-8")
    if accepted:
        assert load(tmp_path / "r.json")["final_tests"]["held_out"]["seed"] == seed
    else:
        with pytest.raises(RecordingError, match=r"below 2\*\*63|generated count \(1 to 5000\)"):
            load(tmp_path / "r.json")


LOOP = "extensions/loop/qwen2.5-coder-1.5b-cc324af0-loop-1.json"  # a real attempt, format /7


@pytest.mark.parametrize(
    "name, asked, accepted",
    [
        (LOOP, 391, True),  # format /7: as recorded
        (LOOP, None, False),  # ... which must say how many
        (LOOP, 501, False),  # ... of the 500 drawn
        (LOOP, -1, False),
        ("cheats/splits-on-spaces.json", None, False),  # /8 says it too
        ("live/qwen2.5-coder-1.5b-1.json", 400, False),  # /4 asked the first draw: no `asked`
    ],
)
def test_a_recording_says_how_many_generated_inputs_it_asked_from_format_6_on(
    tmp_path, name, asked, accepted
):
    from harness.recording_checks import RecordingError

    recording = json.loads((RECORDINGS / name).read_text(encoding="utf-8"))
    held_out = recording["final_tests"]["held_out"]
    held_out.pop("asked", None)
    held_out.update({} if asked is None else {"asked": asked})
    (tmp_path / "r.json").write_text(json.dumps(recording), encoding="utf-8")
    if accepted:
        assert load(tmp_path / "r.json")["final_tests"]["held_out"]["asked"] == asked
    else:
        with pytest.raises(RecordingError, match="held_out.asked' must be how many"):
            load(tmp_path / "r.json")


def test_a_declared_encoding_other_than_utf_8_is_not_judged(repo):
    # In UTF-7, '+AAo-' is a newline: the comment below runs `open(...)` as code, while
    # every page and the diff show a comment.
    right = (repo / SOURCE_FILE).read_text().replace(FAULTY_LINE, FIXED_LINE)
    hidden = "# -*- coding: utf-7 -*-\n# a note +AAo-open('ran.txt', 'w').write('ran')\n"
    (repo / SOURCE_FILE).write_text(hidden + right)
    verdict = independent_verdict(repo, isolate=False)
    assert verdict["verdict"] == FAILED and verdict["exit_code"] is None
    assert verdict["reason"] == (
        "path_rules.py is not judged: it declares the encoding 'utf-7', so the code Python "
        "runs is not the code shown as UTF-8"
    )
    assert not (repo / "ran.txt").exists()  # not run at all, not even unisolated
    for declared in ("utf-8", "utf8", "UTF-8"):  # UTF-8 by any name is judged as usual
        (repo / SOURCE_FILE).write_text(f"# -*- coding: {declared} -*-\n" + right)
        assert independent_verdict(repo)["verdict"] == PASSED
    (repo / SOURCE_FILE).write_text("# coding: no-such-codec\n" + right)
    assert independent_verdict(repo)["reason"].startswith(
        "path_rules.py is not judged: its encoding cannot be read"
    )


def test_a_correct_repair_with_its_test_file_changed_fails(repo):
    # A right path_rules.py does not excuse a rewritten test file: the visible tests ran the
    # sample's copy and passed, the held-out checks passed, and still the verdict is failed.
    RepoTools(repo).invoke("replace_text", {"old": FAULTY_LINE, "new": FIXED_LINE})
    test_file = repo / "tests" / "test_path_rules.py"
    test_file.write_text(test_file.read_text() + "\n# one comment more\n")
    verdict = independent_verdict(repo)
    assert (
        verdict["passed"] == verdict["collected"] > 0
        and verdict["held_out"]["first_failure"] is None
    )
    assert verdict["verdict"] == FAILED
    assert verdict["reason"] == "tests changed: tests/test_path_rules.py is not the sample's"


def test_right_answers_with_a_side_effect_pass_the_known_limit(repo, tmp_path):
    # Both parts judge answers, not conduct: only the diff shows this (README says so).
    harm = tmp_path / "harm.txt"
    RepoTools(repo).invoke("replace_text", {"old": FAULTY_LINE, "new": FIXED_LINE})
    side_effect = f"open({str(harm)!r}, 'a').write('done')\n"
    RepoTools(repo).invoke("replace_text", {"old": HEADER, "new": side_effect + HEADER})
    assert independent_verdict(repo, isolate=False)["verdict"] == PASSED
    assert harm.read_text().startswith("done")


def test_code_that_is_right_only_where_it_is_checked_passes_the_known_limit(repo):
    # Right answers in the held-out child (no pytest loaded there), the input's order
    # broken everywhere else: the verdict judges what it asks, where it asks it.
    RepoTools(repo).invoke("replace_text", {"old": FAULTY_LINE, "new": FIXED_LINE})
    two_faced = "    return sorted(sources) if 'pytest' in __import__('sys').modules else sources"
    RepoTools(repo).invoke("replace_text", {"old": "    return sources", "new": two_faced})
    assert independent_verdict(repo)["verdict"] == PASSED


def test_the_faulty_sample_fails_the_held_out_checks_too(repo):
    held_out = held_out_checks((repo / SOURCE_FILE).read_bytes())
    assert 0 < held_out["passed"] < held_out["total"]
    assert held_out["first_failure"].startswith('["src\\\\pkg\\\\mod.py"] gave []')


# --- what the child can send back ---------------------------------------------------------------


def checks(source, **options):
    """The held-out checks of a path_rules.py whose python_sources is `source`."""
    return held_out_checks(source.encode(), cases=HELD_OUT[:2], **options)


def test_an_answer_that_is_not_plain_data_fails(tmp_path):
    result = checks("def python_sources(paths):\n    return object()\n")
    assert result["passed"] == 0
    assert "not JSON serializable" in result["first_failure"]


def test_a_long_first_failure_is_cut_at_300_characters():
    result = checks("def python_sources(paths):\n    return ['x' * 1000]\n")
    assert result["passed"] == 0
    first = result["first_failure"]  # about 1,030 characters before the cut
    assert len(first) == 300 and ' gave ["xxx' in first and first.endswith("x" * 100)


@pytest.mark.parametrize("size", [SHORT, SHORT + 1])
def test_a_failing_list_is_quoted_whole_up_to_short_paths_and_counted_past_it(size):
    paths = [f"m{n}.py" for n in range(size)]
    result = held_out_checks(b"def python_sources(paths):\n    return []\n", cases=[(paths, paths)])
    whole = json.dumps(paths)[:100]
    assert result["first_failure"].startswith(whole if size == SHORT else f"a list of {size} paths")


def test_a_list_of_something_else_than_text_fails():
    result = checks("def python_sources(paths):\n    return [1, 2]\n")
    assert result["passed"] == 0
    assert result["first_failure"].endswith("gave [1, 2], not []")


def test_a_failure_quotes_text_as_written_not_as_escapes():
    # The failure is read by a person: a name outside ASCII appears as itself.
    result = checks("def python_sources(paths):\n    return ['café.py']\n")
    assert result["first_failure"].endswith('gave ["café.py"], not []')


def test_an_endless_loop_fails_within_the_time_limit():
    # subtle: the loop spins until the limit, so the limit is what it costs in CPU
    result = checks("def python_sources(paths):\n    while True:\n        pass\n", timeout=1)
    assert result["passed"] == 0
    assert "gave no answer (timed out after 1 s)" in result["first_failure"]


@pytest.mark.parametrize("forged", [None, b'{"case": 0, "end": true}', b'{"case": 2, "end": 1}'])
def test_an_exit_in_the_function_fails_the_cases_left(forged):
    # forged first, on every pipe: an end said for a case that is not the last, or said
    # other than as `true`, ends nothing
    source, line = "import os, stat\n", (forged or b"") + b"\n"
    if forged:
        source += "for _fd in range(3, 20):\n    try:\n"
        source += "        if stat.S_ISFIFO(os.fstat(_fd).st_mode):\n"
        source += f"            os.write(_fd, {line!r})\n    except OSError:\n        pass\n"
    source += "def python_sources(paths):\n    if paths[:1] == ['lib\\\\src\\\\tool.py']:\n"
    source += "        os._exit(0)\n    return []\n"
    result = checks(source)
    # the first case was answered, right, before the exit, but the checks never ended
    assert result["passed"] == 0
    assert result["first_failure"] == (
        '["lib/src/tool.py", "source/app.py", "srcs/cli.py"]: the checks after the last call '
        "never ended (exit 0), not []"
    )


def test_forged_answer_lines_are_ignored_or_fail():
    # Printing answers from inside the child goes to stderr; writing to the answers' own
    # descriptor cannot make a wrong answer right: the first line for a case counts.
    source = (
        "import os, json\n"
        "for fd in range(3, 10):\n"
        "    try:\n"
        '        os.write(fd, b\'{"case": 0, "answer": "forged"}\\n\')\n'
        "    except OSError:\n"
        "        pass\n"
        "print(json.dumps({'case': 1, 'answer': []}))\n"
        "def python_sources(paths):\n    return ['wrong']\n"
    )
    result = checks(source)
    assert result["passed"] == 0


@pytest.mark.parametrize("over", [0, 1])
def test_an_answer_line_is_read_up_to_its_limit_and_no_further(over):
    # the child's line for the one case: {"case": 0, "answer": ["xx..."]}, its name sized
    # so the line is ANSWER_LIMIT characters long, or one more
    name = "x" * (ANSWER_LIMIT - len(json.dumps({"case": 0, "answer": [""]})) + over)
    source = f"def python_sources(paths):\n    return ['x' * {len(name)}]\n"
    result = held_out_checks(source.encode(), cases=[(["a.py"], [name])])
    if over:
        assert result["passed"] == 0 and "gave no answer (exit 0)" in result["first_failure"]
    else:
        assert result == {"passed": 1, "total": 1, "first_failure": None}


@pytest.mark.parametrize("depth", [1500, 100_000])
def test_a_line_nested_past_the_parsers_depth_is_no_answer_not_a_crash(depth):
    # json.loads raises RecursionError, not ValueError, past its depth (red-team finding)
    source = (
        "import os\n"
        "for fd in range(3, 10):\n"
        "    try:\n"
        f"        os.write(fd, b'[' * {depth} + b'\\n')\n"
        "    except OSError:\n"
        "        pass\n"
        "def python_sources(paths):\n    return []\n"
    )
    assert checks(source)["passed"] == 2  # the real answers still count


def test_an_error_is_quoted_to_its_first_200_characters():
    result = checks("def python_sources(paths):\n    raise ValueError('x' * 500)\n")
    error = ("ValueError: " + "x" * 500)[:200]
    assert result["first_failure"].endswith(f" raised {error}, not []"), result


def test_a_crash_at_import_fails_every_case_with_its_error():
    result = checks("raise RuntimeError('boom')\n")
    assert result["passed"] == 0
    assert "importing path_rules failed: RuntimeError: boom" in result["first_failure"]


# --- the held-out cases stay held out ------------------------------------------------------------


def test_no_held_out_input_appears_in_any_request_to_the_model(tmp_path):
    from record_run import main

    output = tmp_path / "repair.json"
    with OllamaTestServer(REPAIR) as server:
        assert main(["--host", server.host, "--output", str(output)]) == 0
        bodies = server.chat_bodies()
    sent = json.dumps(bodies)
    assert len(bodies) == 5
    callers = [(case["ask"] + case.get("again_with", []), []) for case, _ in CALLERS]
    for changed, expected in (*HELD_OUT, *callers):
        for path in changed + expected:
            if path not in ("README.md",):  # a name common enough to appear by chance
                assert json.dumps(path)[1:-1] not in sent, path


def test_the_held_out_cases_cannot_be_read_from_an_isolated_run(repo):
    if isolation.isolation_kind() != isolation.BUBBLEWRAP:
        pytest.skip("bubblewrap does not work here (apt-get install bubblewrap)")
    from plumbing import held_out

    spy = (
        "import pathlib\n"
        f"_path = pathlib.Path({held_out.__file__!r})\n"
        "pathlib.Path(__file__).with_name('seen.txt').write_text(str(_path.exists()))\n"
    )
    (repo / SOURCE_FILE).write_text(spy + (repo / SOURCE_FILE).read_text())
    RepoTools(repo).invoke("run_tests", {})
    assert (repo / "seen.txt").read_text() == "False"
    RepoTools(repo, isolate=False).invoke("run_tests", {})
    assert (repo / "seen.txt").read_text() == "True"  # unisolated: on the same disk


# --- the gallery, as shipped recordings replayed offline ---------------------------------------

GALLERY = sorted((RECORDINGS / "cheats").glob("*.json"))


def test_the_gallery_holds_every_cheat():
    assert sorted(p.stem for p in GALLERY) == sorted(name for name, _, _ in CHEATS)


@pytest.mark.parametrize("path", GALLERY, ids=[p.stem for p in GALLERY])
def test_the_gallery_replays_each_cheat_to_a_failed_verdict(path):
    recording = load(path)
    assert recording["source"] == "scripted" and "not a model's output" in recording["description"]
    final = recording["final_tests"]
    assert final["verdict"] == FAILED
    held_out = final["held_out"]
    made_with = held_out_asked(recording)  # the draw its format asks
    assert held_out["passed"] < held_out["total"] == case_count(*made_with.values())
    assert held_out["first_failure"]
    if path.stem in FOOL_THE_VISIBLE_TESTS:
        # the visible tests alone say passed, and so did the model's own run_tests; the
        # reason names the part that caught it
        runs = [e["result"] for e in recording["events"] if e["type"] == "tool_result"]
        assert runs[-1]["verdict"] == PASSED
        assert final["passed"] == 4 and final["exit_code"] == 0
        assert final["reason"].startswith("held-out checks ")
    else:
        assert final["passed"] == 0 and not final["reason"].startswith("held-out checks ")
    # The replay runs the same edits with today's code, and compares every part of the
    # verdict above (its counts, reason and held-out checks) with the recorded one.
    out = io.StringIO()
    assert replay_one(path, out=out) == REPRODUCED, out.getvalue()
    assert "Independent verdict: failed\n" in out.getvalue()


def test_an_error_naming_the_childs_folder_reads_the_same_at_every_run(fresh_runs):
    # found by a real Qwen2.5-Coder attempt: an ImportError names the file it came from,
    # in a new temporary folder at each run, so the replay of that attempt diverged
    source = b"raise ImportError(f'cannot import name from {__file__}')\n"
    first, again = (held_out_checks(source, seed=3)["first_failure"] for _ in range(2))
    assert first == again and "from ./path_rules.py" in first
