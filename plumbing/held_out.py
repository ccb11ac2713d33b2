"""The held-out checks: inputs the model never sees, asked of the edited function in a child.

verdict.py's second part. The ten fixed cases below and the generated ones
(plumbing/relations.py) go to `python_sources` in a child process
(plumbing/held_out_child.py) under the same isolation as the tests; the child sends its
answers back as plain JSON, and they are judged here, in the harness's own process: each
path alone against what correct repairs answer, each list against its paths' answers in
order, each case asked again on Windows or from a folder of decoys against its answer at
home. Beside the answers, the contract the docstring implies: the caller's list is left
as it was, no later call changes an earlier answer, the fixed cases asked again after all
the others get the same answers, one list of 2,000 paths or more is answered whole, and
what callers do with an answer (change the list they got back, pass the same list object
again with other paths) changes nothing (`CALLERS`). A failure names the first case that
failed, as a person reads it: a path alone before a list, shorter before longer. A
recording of format /6 or /7 is judged as it was made, by the draw settled by agreement
(plumbing/generated_cases.py, against the reference alone); of /3 to /5, by the first
draw (plumbing/first_draw.py), without the long list and the callers' cases.

Not here: the visible tests or the verdict itself (verdict.py), how a child is bounded
(plumbing/child_process.py, plumbing/bounds.py) or isolated (plumbing/isolation.py).
"""

import functools
import json
import subprocess
import sys
import unicodedata
from pathlib import Path

from plumbing import bounds, first_draw
from plumbing.child_process import run_isolated
from plumbing.generated_cases import AGREED, DEFAULT_COUNT, generated, reference
from plumbing.isolation import chosen
from plumbing.relations import AWAY, RELATIONS, asked_again, judged, make_decoys, planned
from plumbing.sample import SOURCE_FILE
from plumbing.scratch import scratch_folder

# --- the held-out cases: each keeps one promise of python_sources' docstring ---------------
# ("Return the changed Python files under ``src``, in order, with forward slashes.")
HELD_OUT = (
    (["lib/src/tool.py", "source/app.py", "srcs/cli.py"], []),  # only a top-level src
    (["lib\\src\\tool.py", "docs\\src\\conf.py"], []),  # ... written with backslashes too
    (["src/notes.md", "src/app.pyc", "src/app.py.bak", "src/py"], []),  # only .py files
    (["src\\pkg\\mod.py"], ["src/pkg/mod.py"]),  # backslashes become forward slashes
    (["src/pkg\\io.py", "src\\cli/main.py"], ["src/pkg/io.py", "src/cli/main.py"]),  # mixed
    (
        ["src/zeta.py", "src/alpha.py", "src/mid/beta.py"],
        ["src/zeta.py", "src/alpha.py", "src/mid/beta.py"],
    ),  # fmt: skip
    (["docs\\guide.md", "src\\b.py", "tests\\test_b.py", "src\\a.py"], ["src/b.py", "src/a.py"]),
    (["src/deep/er/still/mod.py", "README.md"], ["src/deep/er/still/mod.py"]),
    (["README.md", "docs/index.md"], []),  # nothing to select
    ([], []),  # nothing for nothing
)
# What callers do with an answer (asked only with today's draw, after every other case):
# change the list they got back and ask again, or ask again with the same list object.
CALLERS = (
    (
        {"ask": ["src\\web\\views.py", "docs/web.md", "src/web/forms.py"], "then": "append"},
        "asked again after the caller appended to the list it got back",
    ),
    (
        {"ask": ["src\\db\\models.py", "src/db/query.py"], "then": "clear"},
        "asked again after the caller cleared the list it got back",
    ),
    (
        {
            "ask": ["src/cli/main.py", "lib\\cli.py"],
            "again_with": ["tests\\t.py", "src\\cli\\a.py"],
        },
        "the same list object asked again, holding other paths",
    ),
)
# ... and with today's plan, the answer changed twice: a cache that hands back the list it
# keeps passes the first change (its first answer is a fresh list), not the second.
CALLERS_TWICE = (
    (
        {"ask": ["src/api/v1\\routes.py", "README.md"], "then": "append", "times": 2},
        "asked a third time after the caller appended to each list it got back",
    ),
)
AFTER_ALL = "asked again after all the others"
SHORT = 200  # paths in a list quoted whole in a failure; a longer one is described
HELD_OUT_TIMEOUT = 10.0  # seconds for all the cases together
ANSWER_LIMIT = 1_000_000  # characters of one answer line read at most (a long list's answer)
ANSWERS_KEPT = 16 * 1024 * 1024  # bytes of the child's output held: every answer, with room
CASES_FILE = "cases.json"  # the inputs, beside path_rules.py: too many for a command line

# The child that asks the edited function (its text, run with `python3 -I -c`).
CHILD = (Path(__file__).resolve().parent / "held_out_child.py").read_text(encoding="utf-8")


@functools.lru_cache(maxsize=32)  # both verdicts of a run ask the same (see generated)
def cases_for(seed, count, draw=RELATIONS):
    """(input, expected, what it is) for each case asked: the fixed cases; with `count`,
    then the generated ones (`draw`: today's plan, whose cases expect what their relations
    give once answered, see relations.judged; AGREED, settled by agreement, of formats /6 and /7;
    FIRST, of /3 to /5) against the reference, then the fixed ones again, and from /6 on,
    one long list and what callers do (a tuple, shared by whoever asks for the same seed
    and count)."""
    fixed = [(changed, expected, None) for changed, expected in HELD_OUT]
    if not count:
        return tuple(fixed)  # a recording of format /2 asked the fixed cases alone
    callers = [(case, reference(_asked(case)), what) for case, what in CALLERS]
    again = [(changed, expected, AFTER_ALL) for changed, expected, _ in fixed]
    if draw == RELATIONS:  # judged by relations once answered (relations.judged)
        planned_cases = [(changed, None, what) for changed, what, _ in planned(seed, count).cases]
        twice = [(case, reference(_asked(case)), what) for case, what in CALLERS_TWICE]
        return tuple(fixed + planned_cases + again + callers + twice)
    drawn = generated(seed, count) if draw == AGREED else None
    inputs = drawn.asked if drawn else first_draw.generated(seed, count)
    # shortest first, so the first failure reported is one a person can read at a glance
    inputs = sorted(inputs, key=lambda changed: len(_json(changed)))
    asked = [
        (changed, reference(changed), f"generated input {number} of {len(inputs)}")
        for number, changed in enumerate(inputs, start=1)
    ]
    if not drawn:
        return tuple(fixed + asked + again)
    long = [(list(drawn.long), reference(drawn.long), "one long list")]
    return tuple(fixed + asked + again + long + callers)


def held_out_checks(
    source, isolate=True, seed=0, count=DEFAULT_COUNT, draw=RELATIONS, timeout=HELD_OUT_TIMEOUT,
    cases=None, kept_from_it=None, helpers=None,
):  # fmt: skip
    """{"passed", "total", "first_failure", "seed", "generated", "asked"}: how many cases
    (see `cases_for`) the edited `source` (bytes of path_rules.py) answers right, asked in
    an isolated child, judged here. `seed` and `generated` are left out when `count` is 0;
    `asked` (how many generated lists were settled, so asked) only with today's draw.

    A case passes only if its answer is a list of strings equal to the expected one, the
    list it was given came back unchanged, no later call changed the answer, and the child
    reached its end. No answer (an exit, a crash, a timeout), an error, or anything that
    is not plain JSON fails it. `cases`, (input, expected) pairs, asks those alone.
    `kept_from_it`, why the source is not to run (verdict.py's): nothing is asked, and the
    record says so (`not_asked`). `helpers` ({name: bytes}): a task's modules, written
    beside the source as the task gave them (harness/tasks.py).
    """
    if kept_from_it:
        return not_asked(kept_from_it, seed, count, draw)
    plan = None
    if cases is not None:
        cases, count = [(changed, expected, None) for changed, expected in cases], 0
    else:
        cases = cases_for(seed, count, draw)
        plan = planned(seed, count) if draw == RELATIONS and count else None
    with scratch_folder(prefix="agent-lab-") as scratch:
        folder = Path(scratch) / "held-out"  # inside a folder only root may enter, as root
        folder.mkdir()
        place = str(folder.resolve())
        (folder / SOURCE_FILE).write_bytes(source)
        for name, data in (helpers or {}).items():
            (folder / name).write_bytes(data)
        if plan:  # what is asked again, and the folder of decoys it is asked from
            make_decoys(plan, folder)
            (folder / CASES_FILE).write_text(_inputs_text(seed, count))
        else:
            (folder / CASES_FILE).write_text(json.dumps([changed for changed, _, _ in cases]))
        command = [sys.executable, "-I", "-c", CHILD]
        exit_code, output, outsider = run_isolated(  # plumbing/child_process.py
            chosen(isolate), command, folder, timeout, reads=(place,),
            stderr=subprocess.DEVNULL, keep=ANSWERS_KEPT,
        )  # fmt: skip
    # subtle: an error may name the temporary folder (an ImportError names the file); it
    # is another folder at each run, so a replay names it as the recording did: `.`
    answers, later, ended = _answers(output.replace(place, "."), len(cases))
    ending = f"timed out after {timeout:g} s" if exit_code is None else f"exit {exit_code}"
    keyed = judged(plan, cases, answers, len(HELD_OUT)) if plan else enumerate(cases)
    passed, total, first_failure = 0, 0, None
    for number, (changed, expected, what) in keyed:
        total += 1
        answer = answers.get(number)
        if _right(answer, expected) and number not in later and ended:
            passed += 1
        elif first_failure is None:  # subtle: only the first is written out (most pass)
            failure = _failure(changed, expected, answer, later, number, ending)
            first_failure = ((f"{what}: " if what else "") + failure)[:300]
    if outsider:  # a process that could reach the child was alive at its end: none passes
        passed, first_failure = 0, outsider
    return _record(passed, total, first_failure, seed, count, draw)


@functools.lru_cache(maxsize=4)  # a run's two verdicts write the same
def _inputs_text(seed, count):
    """cases.json for today's plan of `seed` and `count`: its inputs and what it asks again."""
    inputs = [changed for changed, _, _ in cases_for(seed, count, RELATIONS)]
    again = asked_again(planned(seed, count), len(HELD_OUT))
    return json.dumps({"cases": inputs, **again})


def _right(answer, expected):
    """Whether a case's answer is the expected list, with the caller's list left as given.
    subtle: equal to a list of text is a list of text (json.loads made it: plain types)."""
    return not (answer is None or "error" in answer or "argument" in answer) and (
        "shared" not in answer and answer["answer"] == expected
    )


def _failure(changed, expected, answer, later, number, ending):
    """How one case failed, as its first failure says it."""
    long = len(_asked(changed)) > SHORT
    shown, not_expected = _shown(changed, long), _shown(expected, long)
    if answer is None:
        failure = f"{shown} gave no answer ({ending})"
    elif "error" in answer:  # bounds.note: which limit the error shows, if one
        failure = f"{shown} raised {answer['error']}{bounds.note(answer['error'])}"
    elif answer["answer"] != expected:
        wrong = _gave(answer["answer"], expected, long)
        failure, not_expected = f"{shown} gave {wrong}", None
    elif "argument" in answer:
        failure = f"{shown} changed the caller's list to {_shown(answer['argument'], long)}"
    elif "shared" in answer:
        failure = f"{shown} gave back {answer['shared']}, which a caller's change would reach"
        not_expected = None
    elif number in later and later[number][0] == "argument":
        failure = f"{shown}: a later call changed the list it was given to "
        failure, not_expected = failure + _shown(later[number][1], long), None
    elif number in later:
        failure = f"{shown} gave an answer a later call changed to {_shown(later[number][1], long)}"
    else:
        failure = f"{shown}: the checks after the last call never ended ({ending})"
    return failure + (f", not {not_expected}" if not_expected else "")


def not_asked(reason, seed, count, draw=RELATIONS):
    """The held-out record of a source kept from the checks: none passed, `reason` first."""
    return _record(0, case_count(seed, count, draw), reason, seed, count, draw)


def case_count(seed, count, draw=RELATIONS):
    """How many cases the held-out checks judge for `seed`, `count` and `draw`: today's
    plan counts each case asked again as on Windows or from the folder of decoys too, and
    a case asked only as on Windows once."""
    total = len(cases_for(seed, count, draw))
    if count and draw == RELATIONS:
        plan = planned(seed, count)
        away = sum(1 for _, _, kind in plan.cases if kind == AWAY)  # asked there alone
        total += len(plan.windows) + len(plan.folder) - away
    return total


def _record(passed, total, first_failure, seed, count, draw):
    result = {"passed": passed, "total": total, "first_failure": first_failure}
    if count:
        result.update(seed=seed, generated=count)
    if count and draw == AGREED:
        result["asked"] = len(generated(seed, count).asked)
    elif count and draw == RELATIONS:
        plan = planned(seed, count)
        result.update(asked=plan.asked, unsettled=plan.unsettled)
    return result


def _answers(output, count):
    """({case: {"answer": ..., maybe "argument" or "shared": ...} or {"error": text}},
    {case: ("answer" or "argument", as a later call left it)}, whether the child said it
    ended) from its lines. The first well-formed line of each kind for a case counts;
    anything else is ignored: a list that is not a list of text, a `shared` that is not
    text (the edited code can write lines of its own, so what it cannot send is checked
    here, not trusted)."""
    found, later, ended = {}, {}, False
    for line in output.splitlines():
        if len(line) > ANSWER_LIMIT:
            continue  # an answer fits; a longer line is only work to parse
        try:
            answer = json.loads(line)
        except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth
            continue
        if not isinstance(answer, dict) or type(answer.get("case")) is not int:
            continue
        if answer.get("end") is True and answer["case"] == count:
            ended = True
        elif answer["case"] not in range(count):
            continue
        elif not _well_formed(answer):
            continue
        elif answer.get("phase") in ("windows", "folder"):  # asked again (today's plan)
            phased = {key: value for key, value in answer.items() if key != "phase"}
            found.setdefault((answer["phase"], answer["case"]), phased)
        elif "later" in answer or "later_argument" in answer:
            kind = "answer" if "later" in answer else "argument"
            later.setdefault(
                answer["case"], (kind, answer.get("later", answer.get("later_argument")))
            )
        elif "answer" in answer or "error" in answer:
            found.setdefault(answer["case"], answer)
    return found, later, ended


def _well_formed(answer):
    """Whether an answer line holds what the child sends: exactly one of an answer and an
    error (text) or a later state, a list of text where a list is said."""
    said = [key for key in ("answer", "error", "later", "later_argument") if key in answer]
    if len(said) != 1 or not isinstance(answer.get("error", ""), str):
        return False
    if not isinstance(answer.get("shared", ""), str):
        return False
    lists = [answer[key] for key in ("argument", "later", "later_argument") if key in answer]
    return all(
        isinstance(value, list) and all(isinstance(v, str) for v in value) for value in lists
    )


def _json(value):
    """JSON as a person reads it: letters outside ASCII as themselves, and what cannot be
    seen (a no-break or zero-width space, a private-use character) as its escape."""
    return json.dumps(value, ensure_ascii=False).translate(_SHOWN)


class _Shown(dict):
    """{code point: how `_json` shows that character}, filled in as characters are met:
    itself when printable, else its JSON escape. One `str.translate` with it costs a
    fraction of a loop over the characters (every verdict sorts its inputs by `_json`)."""

    def __missing__(self, code):
        character = chr(code)
        shown = character if character.isprintable() else json.dumps(character)[1:-1]
        self[code] = shown
        return shown


_SHOWN = _Shown()


def _asked(case):
    """The list a case asks last: a caller's case asks its `ask` again, or `again_with`."""
    return case.get("again_with", case["ask"]) if isinstance(case, dict) else case


def _shown(paths, long):
    """A case's list as a failure quotes it: whole, or for an input of more than SHORT
    paths, how many paths it holds."""
    paths = _asked(paths)
    if long and isinstance(paths, list):
        return f"a list of {len(paths):,} paths"
    return _json(paths)


def _gave(answer, expected, long):
    """What a wrong answer gave, and what it should have: both whole, in escapes when they
    differ only in their Unicode form; for a long input, their lengths and the first place
    they differ."""
    if not (long and isinstance(answer, list)):
        said, wanted = _json(answer), _json(expected)
        if said != wanted and _nfc(said) == _nfc(wanted):
            said, wanted = json.dumps(answer), json.dumps(expected)
            return f"{said}, not {wanted} (the same text in another Unicode form)"
        return f"{said}, not {wanted}"
    pairs = enumerate(zip(answer, expected, strict=False))
    at = next((i for i, (a, e) in pairs if a != e), min(len(answer), len(expected)))
    got = _json(answer[at]) if at < len(answer) else "nothing"
    wanted = _json(expected[at]) if at < len(expected) else "nothing"
    return f"{len(answer):,} paths, not {len(expected):,}: at {at + 1}, {got}, not {wanted}"


def _nfc(text):
    return unicodedata.normalize("NFC", text)
