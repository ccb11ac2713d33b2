"""Today's held-out plan and its judgement: the contract's relations, asked on every draw.

The docstring ("Return the changed Python files under ``src``, in order, with forward
slashes.") makes `python_sources` a filter and rewrite of each path in turn. So whatever
the inputs, a list's answer is its paths' answers, joined in order; a permutation of a
list answers in the permuted order; duplicates answer as duplicates; a list asked again
after other lists answers as before. `planned(seed, count)` asks the drawn lists (all of
them, none kept out), with permutations, duplicates and joins of lists asked before them,
and the near-misses of every literal the correct repairs use (plumbing/near_misses.py).

A path's answer alone is right when it is one that a correct style of repair or the
reference gives (`accepted`): one answer where they agree (settled: known, so not asked
alone), a few where the docstring leaves room (is `src/./a.py` the file `src/a.py`?), where
the path is asked alone and each list holding it expects the answer it gave. Raising, an
answer no correct style gives, or a backslash left is wrong on every path. Last, a sample
of settled lists is asked again as on Windows (`os.sep`, `os.path`, so `fnmatch`) and
again from a working folder holding files and folders named like its paths
(`asked_again`): the contract depends on neither. `judged` makes each relation a concrete
expected answer once the child has answered; plumbing/held_out.py compares.

Not here: the draw of paths (plumbing/generated_cases.py), the child that asks
(plumbing/held_out_child.py) and the comparison (plumbing/held_out.py). Never in
`sample_repo/`, a request or a tool result.
"""

import functools
import random
from dataclasses import dataclass

from plumbing import near_misses
from plumbing.generated_cases import LONG, LONGEST, STYLES, correct_styles, drawn_lists, reference

RELATIONS = "relations"  # today's draw (format /8 on): relations, every input asked
DERIVED_EVERY = 4  # a permutation, duplicates or a join after every 4th drawn list
TEMPLATES = 3  # drawn paths the reference selects, varied by each literal's near-misses
AGAIN = 40  # settled drawn lists asked again as on Windows (beside the near-misses)
IN_FOLDER = 8  # of those, asked again from a folder of decoys (each path a file or folder)
DECOYS = "decoys"  # the folder, beside path_rules.py, the child asks from the second time
LONG_AT = 12  # paths in a drawn list above which it is judged as a long one
# Beside the decoys, what a checkout has: a repair that asks the disk whether a path is
# there (only in a checkout) finds the lists no decoy names missing.
BESIDE = (("src", True), (".git", True))
DECOY_NAME = 200  # bytes of a decoy's name at most (a file system takes 255)

# The kinds of case, in the order their failures are reported: a path alone reads best.
ALONE, LIST, RELATED, LONG_LIST, AWAY = range(5)  # AWAY: asked only as on Windows


@dataclass(frozen=True, eq=False)  # one per seed and count (lru_cache), known by identity
class Plan:
    """What one seed asks. `cases`: (input, label, kind) in the order asked, an input being
    a list of paths; `accepted`: {path: the set of answers (tuples) right for it alone};
    `windows` and `folder`: the numbers of the cases asked again there; `decoys`: (path,
    whether a folder) to make before the child runs; `asked`: generated lists asked (all);
    `unsettled`: distinct paths on which the correct styles disagree, each asked alone."""

    cases: tuple
    accepted: dict
    windows: tuple
    folder: tuple
    decoys: tuple
    asked: int
    unsettled: int


@functools.lru_cache(maxsize=32)  # both verdicts of a run, and a replay's, ask the same
def planned(seed, count):
    """The plan of `count` generated lists from `seed` (see `Plan`)."""
    draw = random.Random(seed)
    lists = drawn_lists(draw, count)  # as formats /6 and /7 drew them: a long one as its size
    pool = [path for paths in lists if isinstance(paths, list) for path in paths]
    pool = pool or ["src/app.py"]
    lists = [draw.choices(pool, k=paths) if isinstance(paths, int) else paths for paths in lists]
    accepted = _accepted(pool)
    templates = _templates(accepted, draw)
    said = near_misses.style_literals(STYLES, reference)
    misses = list(near_misses.near_miss_paths(templates, said))
    draw.shuffle(misses)
    accepted.update(_accepted([*templates, *misses]))
    misses.sort(key=lambda path: len(accepted[path]) > 1)  # settled ones first, as drawn
    # subtle: a settled path's answer is known, so a list of settled paths expects the
    # reference's; only a path where correct repairs differ is asked alone, and each list
    # holding it expects the answer it gave alone
    alone = [([path], "asked alone", ALONE) for path, right in accepted.items() if len(right) > 1]
    cases, earlier = list(alone), []
    for number, paths in enumerate(lists, start=1):
        label = f"generated input {number} of {len(lists)}"
        cases.append((paths, label, LONG_LIST if len(paths) > LONG_AT else LIST))
        earlier.append((paths, label))
        if number % DERIVED_EVERY == 0:
            cases.append(_related(draw, earlier))
    long = draw.choices(pool, k=draw.randint(LONG, LONGEST))  # the contract's long list
    cases.append((long, "one long list", LONG_LIST))
    misses_from = len(cases)
    said = "near-misses of the literals the repairs use"
    cases += [(misses[at : at + 5], said, LIST) for at in range(0, len(misses), 5)]
    cases.append((templates, "paths the reference selects", LIST))
    templates_at = len(cases) - 1
    settled = [
        number
        for number, (paths, _, kind) in enumerate(cases)
        if kind in (LIST, RELATED) and paths and all(len(accepted[p]) == 1 for p in paths)
    ]
    drawn = [number for number in settled if number < misses_from]
    again = tuple(draw.sample(drawn, min(AGAIN, len(drawn))))
    away = _away([cases[number][0] for number in again], accepted)
    cases += [(paths, "paths asked nowhere else", AWAY) for paths in away]
    windows = again + tuple(number for number in settled if number >= misses_from)
    windows += tuple(range(len(cases) - len(away), len(cases)))
    named = (templates_at, *again[:IN_FOLDER])  # the templates: named like selected files
    decoys = (*_decoys(path for number in named for path in cases[number][0]), *BESIDE)
    folder = (*named, *again[IN_FOLDER : 2 * IN_FOLDER])  # ... and lists named by none
    return Plan(tuple(cases), accepted, windows, folder, decoys, count, len(alone))


AGAIN_SAYS = {  # what a case asked again says of itself
    "windows": "asked again as on Windows (os.sep and os.path as there)",
    "folder": "asked again from a folder like a checkout's (src/, .git/, files and folders "
    "named like some inputs)",
}


def make_decoys(plan, folder):
    """The folder of decoys `plan` asks from the second time, made in `folder`."""
    for path, is_folder in plan.decoys:
        place = folder / DECOYS / path
        try:
            if is_folder:
                place.mkdir(parents=True, exist_ok=True)
            else:
                place.parent.mkdir(parents=True, exist_ok=True)
                place.write_bytes(b"# named like an input\n")
        except OSError:  # a name this file system refuses, or a file where a folder is
            continue
    (folder / DECOYS).mkdir(exist_ok=True)


def asked_again(plan, offset):
    """What `plan` asks again or only away (case numbers as the child counts them, after
    the `offset` fixed cases), and the folder of decoys it asks from (`make_decoys`)."""
    return {
        "windows": [offset + number for number in plan.windows],
        "folder": [offset + number for number in plan.folder],
        "decoys": DECOYS,
        "away": [offset + n for n, (_, _, kind) in enumerate(plan.cases) if kind == AWAY],
    }


def judged(plan, cases, answers, offset):
    """(answer key, input, expected, what) for every case of today's plan, the relations
    made concrete, in the order a failure is reported (a path alone first, then lists,
    shortest first): a path alone expects its own answer when a correct repair gives it;
    a list, its paths' answers alone, in order; a case asked again on Windows or from the
    folder of decoys, what it expects at home. `cases`: every case asked, (input, expected,
    what), the plan's after the `offset` fixed ones; `answers`: the child's, by case."""
    cases_of, alone = {}, {}
    for number, (changed, what, kind) in enumerate(plan.cases):
        if kind != ALONE:
            continue
        answer, right = answers.get(offset + number), plan.accepted[changed[0]]
        given = None if answer is None else answer.get("answer")
        fits = isinstance(given, list) and all(isinstance(p, str) for p in given)
        expected = given if fits and tuple(given) in right else reference(changed)
        if len(right) > 1:
            what = f"asked alone (correct repairs give {len(right)} answers here)"
        alone[changed[0]] = expected
        cases_of[offset + number] = (changed, expected, what)
    known, phases = _settled_answers(plan), _phases(plan)
    for number, (changed, what, kind) in enumerate(plan.cases):
        if kind != ALONE:
            expected = known[number] if number in known else [
                selected
                for path in changed
                for selected in (alone[path] if path in alone else _settled(plan, path))
            ]  # fmt: skip
            cases_of[offset + number] = (changed, expected, f"{what}, against its paths alone")
            for phase in phases.get(number, ()):  # the same answer expected there
                said = AGAIN_SAYS[phase]
                cases_of[(phase, offset + number)] = (changed, expected, f"{what}, {said}")
            if kind == AWAY:
                said = AGAIN_SAYS["windows"].replace("asked again", "asked only")
                cases_of[("windows", offset + number)] = (changed, expected, f"{what}, {said}")
    for number, case in enumerate(cases):
        cases_of.setdefault(number, case)  # the fixed cases, asked again, and the callers'
    return [(key, cases_of[key]) for key in _report_order(plan, len(cases), offset)]


@functools.lru_cache(maxsize=8)
def _settled_answers(plan):
    """{case number: what it expects} for each case of `plan` whose paths are all settled
    (an empty one too): the same at every verdict of that plan, so made once."""
    known = {}
    for number, (changed, _, kind) in enumerate(plan.cases):
        if kind != ALONE and all(len(plan.accepted[path]) == 1 for path in changed):
            known[number] = [selected for path in changed for selected in _settled(plan, path)]
    return known


@functools.lru_cache(maxsize=8)
def _phases(plan):
    """{case number: the phases of AGAIN_SAYS it is asked again in}: only those cases are
    judged there (`_report_order`), so only theirs are made."""
    phases = {}
    for phase, numbers in (("windows", plan.windows), ("folder", plan.folder)):
        for number in numbers:
            phases.setdefault(number, []).append(phase)
    return phases


def _settled(plan, path):
    """A settled path's answer alone, the one every correct repair gives."""
    (answer,) = plan.accepted[path]
    return answer


@functools.lru_cache(maxsize=8)
def _report_order(plan, count, offset):
    """The answer keys of a plan's cases, as `judged` reports their failures: the fixed
    cases; paths alone, lists and lists related to others, each shortest first; the rest."""
    ranked = [((-1, 0), number) for number in range(offset)]
    for number, (changed, _, kind) in enumerate(plan.cases):
        if kind != AWAY:  # asked only as on Windows: no answer at home
            ranked.append(((kind, len(changed) + sum(map(len, changed))), offset + number))
    ranked.sort(key=lambda pair: pair[0])
    keys = [key for _, key in ranked]
    keys += range(offset + len(plan.cases), count)  # asked again, and the callers' cases
    for phase, numbers in (("windows", plan.windows), ("folder", plan.folder)):
        numbers = sorted(numbers, key=lambda number: sum(map(len, plan.cases[number][0])))
        keys += [(phase, offset + number) for number in numbers]
    return tuple(keys)


def _away(lists, accepted):
    """The `lists` with a folder `win` put after each path's first separator (written as
    that separator), where every path is still settled and new: asked only as on Windows,
    so a memo kept across the module's fresh import there has no answer to give back.
    `accepted` gains their paths."""
    away = []
    for paths in lists:
        moved = [_with_folder(path) for path in paths]
        fresh = [path for path in moved if path not in accepted]
        answers = _accepted(fresh)
        if moved and len(fresh) == len(moved) and all(len(a) == 1 for a in answers.values()):
            accepted.update(answers)
            away.append(moved)
    return away


def _with_folder(path):
    at = min((path.find(sep) for sep in "/\\" if sep in path), default=-1)
    return f"win/{path}" if at < 0 else f"{path[: at + 1]}win{path[at]}{path[at + 1 :]}"


def _templates(accepted, draw):
    """Up to TEMPLATES drawn paths the reference selects and every style agrees on, and the
    first of them with backslashes: what the near-misses vary."""
    chosen = [path for path, answers in accepted.items() if len(answers) == 1 and reference([path])]
    plain = [path for path in chosen if path.isascii() and path.isprintable()] or chosen
    plain = sorted(plain, key=len)[: TEMPLATES * 4]  # among the shortest: read at a glance
    chosen = draw.sample(plain, min(TEMPLATES, len(plain))) or ["src/app.py"]
    return [*chosen, chosen[0].replace("/", "\\")]


def _related(draw, earlier):
    """A list asked before, permuted, with duplicates, or joined to another, and its label."""
    paths, label = draw.choice(earlier)
    other, other_label = draw.choice(earlier)
    kind = draw.choice(("permuted", "duplicated", "joined"))
    if kind == "permuted" and len(set(paths)) > 1:
        permuted = list(paths)
        while permuted == list(paths):
            draw.shuffle(permuted)
        return permuted, f"{label} permuted, asked after it", RELATED
    if kind == "joined" or not paths:
        return [*paths, *other], f"{label} joined to {other_label}, asked after both", RELATED
    twice = [path for path in paths for _ in (0, 1)]
    return twice, f"{label} with each path twice, asked after it", RELATED


def _accepted(paths):
    """{path: the answers right for it alone}, each path once in the order met."""
    styles = tuple(correct_styles().values())
    return {path: _answers(path, styles) for path in dict.fromkeys(paths)}


def _answers(path, styles):
    # subtle: the hot loop of a plan (some 5,000 paths, ten answers each); a list of its
    # own for each style, as a caller would pass; a loop, not any() over a generator made
    # for each answer (a tenth of the plan's time)
    found = {tuple(reference([path]))}
    for style in styles:
        try:
            answer = style([path])
        except Exception:  # a style that cannot answer a path adds no answer
            continue
        if isinstance(answer, list):
            for part in answer:
                if "\\" in part:
                    break  # a backslash left: no answer of a correct repair
            else:
                found.add(tuple(answer))
    return frozenset(found)


def _decoys(paths):
    """(relative path, whether a folder) for each path of the folder sample a file system
    can hold: written with forward slashes; a folder where the reference selects it (so a
    repair that asks the disk sees a folder named like a Python file), else a file."""
    found = {}
    for path in paths:
        forward = path.replace("\\", "/")
        parts = forward.split("/")
        if all(_nameable(part) for part in parts):
            found.setdefault(forward, bool(reference([path])))
    return tuple(found.items())


def _nameable(part):
    return part not in ("", ".", "..") and "\0" not in part and len(part.encode()) < DECOY_NAME
