"""The generated inputs of recordings of formats /3 to /5, as drawn until format /6.

Frozen: `generated(seed, count)` draws exactly what plumbing/generated_cases.py drew
before its inputs were settled by agreement, so a recording made then replays with the
inputs it was asked (harness/old_recordings.py says which draw a format uses). Only inputs a
hand-written list called settled: no `./`, no doubled, leading or trailing separator, no
duplicate in a list, no drive letter or colon, no name that is only `.py`, no `SRC` or
`Src` at the top, no `.PY`, no list longer than 120 paths.

Not here: the reference that answers them (plumbing/generated_cases.py), today's draw.
"""

import random

# Top-level folders that are not `src`, some close to it.
OTHER_TOPS = ("lib", "docs", "tests", "srcs", "source", "xsrc", "src-old", "src_v2", ".github")
# Folder and file names: mixed case, several dots, non-ASCII, digits, - and _.
STEMS = (
    "app", "cli", "Main", "io", "utils", "a.b", "v1.2.3", "__init__", "test_app", "mod-x",
    "Über", "café", "数据", "файл", "ünïcödé", "x", "CamelCase", "snake_case", "_private",
)  # fmt: skip
FOLDERS = ("pkg", "api", "Core", "deep", "v2", "ü", "名前", "sub.dir", "py", "src", "lib")
NOT_PYTHON = (".md", ".pyc", ".py.bak", ".txt", ".json", "", ".pyx", ".c", ".py~", ".cfg")


def generated(seed, count):
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
