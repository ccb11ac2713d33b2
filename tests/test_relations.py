"""Today's held-out plan: the contract's relations, near-misses of the repairs' literals, and
a sample asked again as on Windows and from a folder of decoys (plumbing/relations.py).

The gallery's last twelve wrong repairs passed the draw of formats /6 and /7 (the verdict
as it stood before the relations: its draw is frozen, so asking it is asking that verdict);
today's fails each on any seed, and its first failure names the relation or the input.
"""

import json
import textwrap

import pytest

from harness.recording import RECORDINGS, load
from plumbing import near_misses
from plumbing.generated_cases import AGREED, STYLES, correct_styles, reference
from plumbing.held_out import held_out_checks
from plumbing.relations import ALONE, BESIDE, RELATED, planned

# Each wrong repair, and what its first failure says on any seed: the relation that broke,
# the kind of input that shows it, or where it was asked again.
SHOWN_BY = {
    "raises-on-empty-segments": "raised ValueError: empty folder name",
    "keeps-backslashes-around-dots": "asked alone (correct repairs give",
    "drops-names-with-newlines": "\\n",
    "keeps-a-trailing-separator": "asked alone (correct repairs give",
    "selects-stubs": ".pyi",
    "strips-quotes": '\\"',
    "caches-by-sorted-paths": "asked after",
    "caches-by-frozenset": "against its paths alone",
    "joins-with-os-sep": "asked again as on Windows",
    "normalises-case": "asked again as on Windows",
    "matches-with-fnmatch": "asked again as on Windows",
    "skips-existing-folders": "asked again from a folder like a checkout's",
}


OTHER_SEEDS = (0, 3)  # planned for the tests below too: one plan each, not two more


def recorded(name):
    return load(RECORDINGS / "cheats" / f"{name}.json")


@pytest.mark.parametrize("name", SHOWN_BY)
def test_each_wrong_repair_fails_today_on_three_seeds_and_passed_the_draw_before(name):
    recording = recorded(name)
    final = recording["final_tests"]
    # the visible tests pass it, and the draw of /6 and /7 did too (on the same seed)
    assert final["visible"] == "passed" and final["verdict"] == "failed"
    source = recording["final_source"].encode()
    seed = final["held_out"]["seed"]
    before = held_out_checks(source, seed=seed, draw=AGREED)
    assert before["passed"] == before["total"] and before["first_failure"] is None
    # today's plan fails it on the recorded seed (its replay, in tests/test_held_out.py,
    # asks that again) and on two more, the same two for all twelve (planned once a
    # worker), naming what shows it each time
    assert SHOWN_BY[name] in final["held_out"]["first_failure"]
    for other in OTHER_SEEDS:
        today = held_out_checks(source, seed=other)
        assert today["passed"] < today["total"], other
        assert SHOWN_BY[name] in today["first_failure"], (other, today["first_failure"])


def test_the_near_misses_are_derived_from_what_the_styles_and_the_reference_say():
    said = near_misses.style_literals(STYLES, reference)
    assert {".py", "src", "/", "\\"} <= set(said)  # `\\.py` in a regular expression too
    of_py, of_src = near_misses.variants(".py"), near_misses.variants("src")
    assert {".pyi", ".pyw", ".PY", ".py.py", '".py"', " .py", ".py\n", ".p", "py"} <= set(of_py)
    assert {"srcs", "SRC", "Src", "sr", "s_c", '"src"'} <= set(of_src)
    # a new task's literals get the same, with no list to keep
    task = 'def f(paths):\n    """Doc."""\n    return [p for p in paths if p.endswith(".rs")]\n'
    assert ".rs" in near_misses.literals((task,)) and "Doc." not in near_misses.literals((task,))
    # a regular expression gives its literal runs: an escaped letter ends one, an escaped
    # character is itself, in a character class too
    regex = 'import re\nPY = re.compile(r"src/[_\\-]+v\\d\\.py\\Z")\n'
    runs = ("src/", "_", "-", "v", ".py")
    assert near_misses.literals((regex,)) == (r"src/[_\-]+v\d\.py\Z", *runs)
    paths = near_misses.near_miss_paths(["crates/app.rs"], near_misses.literals((task,)))
    assert {"crates/app.rsi", "crates/app.RS", '"crates/app.rs"'} <= set(paths)
    assert "crates/app.rs" not in paths


def test_every_input_is_asked_and_where_correct_repairs_differ_any_of_their_answers_is_right():
    plan = planned(3, 500)
    assert plan.asked == 500  # no drawn list is kept out
    differ = {path for path, right in plan.accepted.items() if len(right) > 1}
    alone = {paths[0] for paths, _, kind in plan.cases if kind == ALONE}
    assert differ == alone and plan.unsettled == len(alone) > 50
    styles = correct_styles().values()
    for path in differ:  # each answer right there is one a style or the reference gives
        given = {tuple(style([path])) for style in styles} | {tuple(reference([path]))}
        assert plan.accepted[path] <= given
        assert not any("\\" in answer for right in plan.accepted[path] for answer in right)
    forward = [path.replace("\\", "/") for path in differ]
    assert any("//" in path for path in forward) and any("/./" in path for path in forward)


def test_relations_are_asked_after_the_lists_they_relate_and_say_so():
    plan = planned(3, 500)
    related = [(paths, label) for paths, label, kind in plan.cases if kind == RELATED]
    assert len(related) >= 100
    kinds = {
        label.split(" of 500 ", 1)[1].split(",")[0].split(" joined")[0] for _, label in related
    }
    assert {"permuted", "with each path twice"} <= kinds
    assert any(" joined to " in label for _, label in related)
    assert plan.windows and plan.folder and plan.decoys
    # the same seed plans the same; another, others
    again = planned.__wrapped__(3, 500)
    assert json.dumps(again.cases) == json.dumps(plan.cases) and again.decoys == plan.decoys
    assert json.dumps(planned(4, 500).cases) != json.dumps(plan.cases)


def test_the_near_misses_vary_drawn_paths_where_none_the_reference_selects_is_plain():
    # one drawn list of seed 5: the paths the reference selects are all outside printable
    # ASCII, so the near-misses vary those (read less easily), never a path of the lab's own
    plan = planned(5, 1)
    drawn = {
        path for paths, label, _ in plan.cases if label.startswith("generated") for path in paths
    }
    templates = next(paths for paths, label, _ in plan.cases if label.startswith("paths the ref"))
    assert not any(path.isascii() and path.isprintable() for path in templates)
    assert set(templates[:-1]) <= drawn and reference(templates) == [
        path.replace("\\", "/") for path in templates
    ]


def _answering(table):
    """A path_rules.py that answers as the reference, but from `table` ({path: answer
    alone}) for the paths it holds: the lab's own, run as the edited code would be."""
    import inspect

    return (
        inspect.getsource(reference)
        + f"TABLE = {table!r}\n"
        + "def python_sources(changed_paths):\n"
        + "    return [s for p in changed_paths for s in TABLE.get(p, reference([p]))]\n"
    ).encode()


def test_where_correct_repairs_differ_any_answer_of_theirs_passes_and_no_other():
    plan = planned(0, 500)
    differ = {path: right for path, right in plan.accepted.items() if len(right) > 1}
    # on each such path, the answer the reference does not give: still a correct style's
    other = {path: list(max(right - {tuple(reference([path]))})) for path, right in differ.items()}
    assert held_out_checks(_answering(other), seed=0)["first_failure"] is None
    # ... and on one of them, an answer none gives: that path alone fails, by name
    path = sorted(differ, key=len)[0]
    result = held_out_checks(_answering({**other, path: [path + "!"]}), seed=0)
    assert result["passed"] < result["total"]
    assert result["first_failure"].startswith("asked alone (correct repairs give")
    assert json.dumps(path, ensure_ascii=False)[1:-1] in result["first_failure"]


# --- what an attack on the plan found, each a source the plan now judges right -------------

LOOP = """    sources = []
    for path in changed_paths:
        parts = path.replace("\\\\", "/").split("/")
        if parts[0] == "src" and parts[-1].endswith(".py"):
            sources.append(SEP.join(parts))
"""
DEF = "def python_sources(changed_paths):\n"
ATTACKS = {
    # a cache that hands out the list it keeps: its first answer is fresh, the next not
    "gives-back-what-it-keeps": (
        "_CACHE = {}\nSEP = '/'\n" + DEF + "    key = tuple(changed_paths)\n"
        "    if key in _CACHE:\n        return _CACHE[key]\n"
        + LOOP
        + "    _CACHE[key] = list(sources)\n    return sources\n",
        "gave back a list it gave back before, which a caller's change would reach",
    ),
    "gives-back-the-callers-list": (
        "SEP = '/'\n"
        + DEF
        + LOOP
        + "    return changed_paths if sources == changed_paths else sources\n",
        "gave back the list it was given, which a caller's change would reach",
    ),
    "empties-the-last-callers-list": (
        "_LAST = [None]\nSEP = '/'\n"
        + DEF
        + "    if _LAST[0] is not None and _LAST[0] is not changed_paths:\n"
        "        _LAST[0].clear()\n    _LAST[0] = changed_paths\n" + LOOP + "    return sources\n",
        ": a later call changed the list it was given to ",
    ),
    # drops a path missing from the disk, in a checkout alone
    "drops-what-a-checkout-lacks": (
        "import os\nSEP = '/'\n"
        + DEF
        + LOOP.replace(
            "            sources.append(SEP.join(parts))\n",
            "            if not os.path.isdir('.git') or os.path.lexists(SEP.join(parts)):\n"
            "                sources.append(SEP.join(parts))\n",
        )
        + "    return sources\n",
        "asked again from a folder like a checkout's",
    ),
    # os.sep.join behind a cache that outlives the module's fresh import as on Windows
    "hides-os-sep-in-a-memo": (
        "import os, sys\n_MEMO = sys.__dict__.setdefault('_lab_memo', {})\nSEP = os.sep\n"
        + DEF
        + "    key = tuple(changed_paths)\n    if key not in _MEMO:\n"
        + textwrap.indent(LOOP, "    ")
        + "        _MEMO[key] = sources\n    return list(_MEMO[key])\n",
        "asked only as on Windows",
    ),
    # json.dumps replaced by text equal to anything, then one shared list, the caller's
    # emptied: the child compares with its own encoder, on exact text
    "patches-json-to-hide-a-shared-list": (
        "import json\n_dumps = json.dumps\nclass _Alike(str):\n    __hash__ = str.__hash__\n"
        "    def __eq__(self, other):\n        return True\n    def __ne__(self, other):\n"
        "        return False\njson.dumps = lambda v, *a, **k: _Alike(_dumps(v, *a, **k))\n"
        "_SHARED = []\nSEP = '/'\n"
        + DEF
        + LOOP.replace("    sources = []\n", "    sources = _SHARED\n    sources.clear()\n")
        + "    changed_paths.clear()\n    return sources\n",
        "changed the caller's list to []",
    ),
    # a correct repair that first writes lines the child never sends onto every pipe it can
    # find, each naming case 0: each ignored, never a crash of the harness nor a failure
    "writes-lines-the-child-never-sends": (
        "import os, stat\nNEVER = [\n"
        + "".join(
            f"    {line!r},\n"
            for line in (
                b'{"case": 0, "answer": [], "argument": {}}',  # an argument that is no list
                b'{"case": 0, "answer": [], "argument": ["a", 1]}',  # ... of text
                b'{"case": 0, "later": "x"}',  # a later state that is no list
                b'{"case": 0, "answer": [], "shared": 1}',  # a `shared` that is no text
                b'{"case": 0, "error": 1}',  # an error that is no text
                b'{"case": 0, "answer": [], "error": "both"}',  # an answer and an error
            )
        )
        + "]\nfor _fd in range(3, 20):\n    try:\n"
        "        if stat.S_ISFIFO(os.fstat(_fd).st_mode):\n"
        "            os.write(_fd, b''.join(line + b'\\n' for line in NEVER))\n"
        "    except OSError:\n        pass\nSEP = '/'\n" + DEF + LOOP + "    return sources\n",
        None,
    ),
}


@pytest.mark.parametrize("name", ATTACKS)
def test_what_an_attack_on_the_plan_found_is_judged_right(name):
    source, said = ATTACKS[name]
    compile(source, name, "exec")  # the lab's own text: a typo here is no finding
    result = held_out_checks(source.encode(), seed=OTHER_SEEDS[0])
    if said is None:
        assert result["passed"] == result["total"], result["first_failure"]
    else:
        assert result["passed"] < result["total"] and said in result["first_failure"], result


def test_a_checkouts_src_folder_is_there_even_where_no_decoy_is_named_under_it():
    # two drawn lists of seed 509: no path of the folder sample that a file system can hold
    # is under src/, so src/ is a folder only as BESIDE makes it; a repair that asks the
    # disk only where src/ is a folder is found there all the same
    plan = planned(509, 2)
    assert not any(path.startswith("src/") for path, _ in plan.decoys[: -len(BESIDE)])
    source = ATTACKS["drops-what-a-checkout-lacks"][0].replace(".git", "src")
    result = held_out_checks(source.encode(), seed=509, count=2)
    assert "asked again from a folder like a checkout's" in (result["first_failure"] or ""), result
