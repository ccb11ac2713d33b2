"""Generated held-out inputs for `python_sources`, and the reference that answers them.

verdict.py asks the edited function the ten fixed cases and, beside them, `generated(seed,
count)`: lists of paths as git and Windows tools print them, drawn from a seeded generator,
each judged against `reference`. Ten fixed cases are a table a model can fit; hundreds of
inputs it has never seen are not.

Only inputs whose right answer the docstring ("Return the changed Python files under
``src``, in order, with forward slashes.") settles are drawn, so every correct style of
repair passes (a split on both separators, a regular expression,
`PureWindowsPath(...).as_posix()`, a comprehension over `str.replace`): no `./`, no doubled,
leading or trailing separator, no duplicate in a list, no drive letter or colon, no name
that is only `.py`, no `SRC` or `Src` at the top (is that `src` on Windows?), no `.PY`.

Not here: the child that asks, or the comparison (verdict.py). Never in `sample_repo/`, a
request or a tool result.
"""

import os
import random
import secrets

DEFAULT_COUNT = 500  # generated inputs a verdict asks beside the fixed cases
COUNT_LIMIT = 5000  # the most a recording may ask for (its `generated` field)
SEED_LIMIT = 2**63  # a seed is a non-negative integer below this
# The lab's own test suite draws one seed for all its new verdicts (conftest.py), so that
# every verdict of one source shares one held-out run (plumbing/run_memo.py). Nothing else
# sets it: a learner's verdicts each draw their own.
SUITE_SEED = "LAB_HELD_OUT_SEED"


def new_seed():
    """The seed of a new verdict's generated inputs: drawn from the OS, unless the suite's
    SUITE_SEED names one. The edited code never sees it (its environment is minimal)."""
    given = os.environ.get(SUITE_SEED, "")
    return int(given) % SEED_LIMIT if given.isdigit() else secrets.randbelow(SEED_LIMIT)


# Top-level folders that are not `src`, some close to it.
OTHER_TOPS = ("lib", "docs", "tests", "srcs", "source", "xsrc", "src-old", "src_v2", ".github")
# Folder and file names: mixed case, several dots, non-ASCII, digits, - and _.
STEMS = (
    "app", "cli", "Main", "io", "utils", "a.b", "v1.2.3", "__init__", "test_app", "mod-x",
    "Über", "café", "数据", "файл", "ünïcödé", "x", "CamelCase", "snake_case", "_private",
)  # fmt: skip
FOLDERS = ("pkg", "api", "Core", "deep", "v2", "ü", "名前", "sub.dir", "py", "src", "lib")
NOT_PYTHON = (".md", ".pyc", ".py.bak", ".txt", ".json", "", ".pyx", ".c", ".py~", ".cfg")


def reference(changed):
    """The right answer, written plainly: the harness's own, never the edited code's."""
    selected = []
    for path in changed:
        parts = path.replace("\\", "/").split("/")
        if parts[0] == "src" and parts[-1].endswith(".py"):  # so never "src" alone
            selected.append("/".join(parts))
    return selected


def generated(seed, count=DEFAULT_COUNT):
    """`count` lists of paths, the same for the same seed on every Python the lab runs on."""
    draw = random.Random(seed)
    cases = []
    for number in range(count):
        if number % 50 == 49:
            size = draw.randint(60, 120)  # now and then a long list
        else:
            size = draw.choice((0, 1, 1, 2, 3, 4, 5, 6, 8, 12))
        paths = []
        while len(paths) < size:
            path = _path(draw)
            if path not in paths:  # duplicates: does "in order" keep both? not settled
                paths.append(path)
        cases.append(paths)
    return cases


def _path(draw):
    top = "src" if draw.random() < 0.6 else draw.choice(OTHER_TOPS)
    folders = [draw.choice(FOLDERS) for _ in range(draw.choice((0, 0, 1, 1, 2, 3, 5)))]
    name = draw.choice(STEMS) + (".py" if draw.random() < 0.6 else draw.choice(NOT_PYTHON))
    if top != "src" and not folders and draw.random() < 0.5:
        return name  # a file at the top of the repository
    parts = [top, *folders, name]
    separators = draw.choice(("/", "\\", "mixed"))
    if separators != "mixed":
        return separators.join(parts)
    path = parts[0]
    for part in parts[1:]:
        path += draw.choice("/\\") + part
    return path
