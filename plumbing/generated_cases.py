"""The draw of held-out inputs for `python_sources`, the reference, and the correct styles.

`drawn_lists` draws paths as git and Windows tools print them, and far stranger ones:
characters of every Unicode category, names in NFD and NFC, names and folders that start
with `.`, `.` and `..` segments, empty segments, spaces, tabs and newlines in and around
names, very long names, duplicates, lists of 0 to 5,000 paths. Today's plan
(plumbing/relations.py) asks every list it draws; `reference` is the harness's own
answer, and the correct styles of repair the lab keeps (plumbing/correct_styles/, one
file each) say where the docstring ("Return the changed Python files under ``src``, in
order, with forward slashes.") leaves room (is `src/./a.py` the same file as `src/a.py`?).

`generated(seed, count)` is the draw of formats /6 and /7, frozen: a path is settled when
every style (and the regular-expression style as it was then) answers it as the reference
does, a list is asked when each of its paths is settled, and the others are counted,
never asked; its long lists are built from settled paths.

Not drawn: lone surrogates (a recording is UTF-8 and cannot hold one). The styles live in
`plumbing/`, not `tests/`, because the verdict needs them at run time; tests/test_held_out.py
checks each through the real verdict. Which paths are settled can change with the styles
and with the Python that runs them (`pathlib` differs between versions): a recording says
its format, and formats /3 to /5 replay with their own frozen draw (plumbing/first_draw.py).

Not here: the child that asks, or the comparison (plumbing/held_out.py). Never in
`sample_repo/`, a request or a tool result.
"""

import functools
import random
import re
import secrets
import unicodedata
from dataclasses import dataclass
from pathlib import Path

DEFAULT_COUNT = 500  # generated inputs a verdict draws beside the fixed cases
COUNT_LIMIT = 5000  # the most a recording may ask for (its `generated` field)
SEED_LIMIT = 2**63  # a seed is a non-negative integer below this
LONGEST = 5000  # paths in the longest list drawn
LONG = 2000  # the contract's long list has at least this many paths
POOL = 100  # distinct settled paths at least, which the long lists are drawn from
AGREED, FIRST = "agreed", "first"  # today's draw; the frozen one of formats /3 to /5
STYLES = Path(__file__).resolve().parent / "correct_styles"


def new_seed():
    """The seed of a new verdict's generated inputs, drawn from the OS."""
    return secrets.randbelow(SEED_LIMIT)


def reference(changed):
    """The right answer, written plainly: the harness's own, never the edited code's."""
    selected = []
    for path in changed:
        parts = path.replace("\\", "/").split("/")
        if parts[0] == "src" and parts[-1].endswith(".py"):  # so never "src" alone
            selected.append("/".join(parts))
    return selected


@dataclass(frozen=True)
class Drawn:
    """What one seed draws: the lists asked (settled, in draw order), how many lists were
    drawn, and the contract's long list (LONG to LONGEST settled paths)."""

    asked: tuple
    count: int
    long: tuple


def generated(seed, count=DEFAULT_COUNT):
    """`count` lists drawn from `seed`, and which of them are asked (see `Drawn`)."""
    return _drawn(seed, count)  # subtle: generated(7) and generated(7, 500) are one draw


# Both verdicts of a run draw the same: drawn once. A draw holds about 0.5 MB; 32 of them
# keep a process that replays many recordings (each its own seed) from drawing one again.
@functools.lru_cache(maxsize=32)
def _drawn(seed, count):
    draw = random.Random(seed)
    lists = drawn_lists(draw, count)
    settled = _settled(path for paths in lists if isinstance(paths, list) for path in paths)
    pool = [path for path, agreed in settled.items() if agreed]
    while len(pool) < POOL:  # a small count draws few paths: draw settled ones for the rest
        path = _path(draw)
        pool += [path] if _settled([path])[path] else []
    asked = []
    for paths in lists:
        if isinstance(paths, int):
            asked.append(draw.choices(pool, k=paths))
        elif all(settled[path] for path in paths):
            asked.append(paths)
    long = draw.choices(pool, k=draw.randint(LONG, LONGEST))
    return Drawn(tuple(asked), count, tuple(long))


def drawn_lists(draw, count):
    """`count` lists of paths drawn from `draw` (a random.Random), a long one as how many
    paths it is to hold: filled afterwards, from paths the short lists drew."""
    lists = []
    for number in range(count):
        if number % 50 == 49:  # now and then a long list (1 to 5,000 paths, log-uniform)
            lists.append(round(LONGEST ** draw.random()))
        else:
            size = draw.choice((0, 1, 1, 2, 2, 3, 3, 4, 5, 6, 8, 12))
            paths = [_path(draw) for _ in range(size)]
            if paths and draw.random() < 0.1:  # a duplicate: "in order" keeps both
                paths.insert(draw.randrange(len(paths) + 1), draw.choice(paths))
            lists.append(paths)
    return lists


def _settled(paths):
    """{path: whether every correct style answers it as the reference does}, in the order
    the paths were first drawn."""
    styles = correct_styles()
    styles = (*(styles[name] for name in STYLES_UNTIL_8), _regex_until_format_8)
    settled = {}
    for path in paths:
        if path not in settled:
            settled[path] = _agreed(styles, path)
    return settled


def _agreed(styles, path):
    # subtle: the hot loop of a draw (some 2,000 paths, nine styles each): the reference's
    # answer is made once per path, and each style is still given a list of its own
    expected = reference([path])
    for style in styles:
        try:
            if style([path]) != expected:
                return False
        except Exception:  # a style that cannot answer a path does not settle it
            return False
    return True


# The styles this draw settles by, frozen with it (a style added since changes only today's).
STYLES_UNTIL_8 = (
    "comprehension_over_replace", "one_line_character_loop", "one_line_pure_windows_parts",
    "one_line_regex_split", "one_line_replace", "pure_windows_path_as_posix",
    "regular_expression_end_of_text", "regular_expression_fullmatch",
    "split_on_both_separators",
)  # fmt: skip
_PYTHON_UNTIL_8 = re.compile(r"src/.+\.py\Z")


def _regex_until_format_8(changed):
    """The regular-expression styles as they were until format /8: `.` not matching a
    newline, so a selected name holding one was unsettled. Frozen with this draw, so a
    recording of /6 or /7 asks what it asked (today's styles match it: re.DOTALL)."""
    forward = (path.replace("\\", "/") for path in changed)
    return [path for path in forward if _PYTHON_UNTIL_8.match(path)]


@functools.cache
def correct_styles():
    """{file name: its python_sources}, for each file in plumbing/correct_styles/: the lab's
    own code, run in the harness (never the edited code)."""
    return {path.stem: load_style(path) for path in sorted(STYLES.glob("*.py"))}


def load_style(path):
    """The python_sources of the file at `path`, compiled from its source.

    subtle: never from bytecode. An unisolated run can write into the lab's folder, and a
    `__pycache__/*.pyc` stamped like the source would be what an import loads: a style
    that agrees with anything, or code run in the harness (plumbing/fresh_sources.py says
    the same of the lab's modules)."""
    namespace = {"__name__": f"correct_style_{path.stem}", "__file__": str(path)}
    exec(compile(path.read_bytes(), str(path), "exec"), namespace)  # the lab's own file
    return namespace["python_sources"]


# --- what the draw is made of -----------------------------------------------------------------

# Top-level folders, `src` written other ways among them.
OTHER_TOPS = (
    "lib", "docs", "tests", "srcs", "source", "xsrc", "src-old", "src_v2", ".github", "SRC",
    "Src", " src", "src ", ".src", "", ".", "..", "C:", "src:", "src.py", "~",
)  # fmt: skip
STEMS = (
    "app", "cli", "Main", "io", "utils", "a.b", "v1.2.3", "__init__", "test_app", "mod-x",
    "Über", "café", "数据", "файл", "ünïcödé", "x", "CamelCase", "snake_case", "_private",
    "my app", "Ångström", "naïve", "résumé",
)  # fmt: skip
FOLDERS = (
    "pkg", "api", "Core", "deep", "v2", "ü", "名前", "sub.dir", "py", "src", "lib", ".git",
    ".", "..", "", "my folder", "__pycache__", ".hidden", "café",
)  # fmt: skip
EXTENSIONS = (
    ".md", ".pyc", ".py.bak", ".txt", ".json", "", ".pyx", ".c", ".py~", ".cfg", ".PY",
    ".Py", ".pyw", ".py ", ".py\n", ".py\t", ".", ".py.", ".p y",
)  # fmt: skip
# A few characters of every Unicode category, for names made of anything.
CATEGORIES = (
    "aZéßøłЖλΩ数ǅʰ",  # letters: Ll, Lu, Lt, Lm, Lo
    "\u0301\u0308\u0903\u20dd",  # marks: Mn, Mc, Me
    "09٣３²Ⅻ",  # numbers: Nd, No, Nl
    "-_,;!?'\"()[]{}#%&@*…–«»",  # punctuation: Pd, Pc, Po, Ps, Pe, Pi, Pf
    "+=$^~`|<>€©°∞✓😀",  # symbols: Sm, Sc, Sk, So
    " \u00a0\u2003\u3000\u2028\u2029",  # separators: Zs, Zl, Zp
    "\t\n\r\x00\x1b\x7f\x85",  # controls: Cc
    "\u200b\u200e\ufeff\u00ad",  # format: Cf
    "\ue000\U000f0000\u0378",  # private use (Co) and unassigned (Cn)
)
AROUND = ("", "", "", "", "", "", " ", "\t", "\n", "  ", "\r\n")  # before or after a name


def _name(draw):
    kind = draw.random()
    if kind < 0.6:
        stem = draw.choice(STEMS)
    elif kind < 0.95:
        characters = draw.choice(CATEGORIES) + draw.choice(CATEGORIES) + "abc"
        stem = "".join(draw.choice(characters) for _ in range(draw.randint(1, 8)))
    else:
        stem = draw.choice(STEMS) * draw.randint(20, 60)  # a very long name
    if draw.random() < 0.08:
        stem = "." + stem  # a hidden file
    name = stem + (".py" if draw.random() < 0.6 else draw.choice(EXTENSIONS))
    if draw.random() < 0.3:
        name = unicodedata.normalize(draw.choice(("NFD", "NFC", "NFKD")), name)
    return draw.choice(AROUND) + name + draw.choice(AROUND)


def _path(draw):
    top = "src" if draw.random() < 0.6 else draw.choice(OTHER_TOPS)
    folders = [draw.choice(FOLDERS) for _ in range(draw.choice((0, 0, 1, 1, 2, 3, 5)))]
    name = _name(draw)
    if top != "src" and not folders and draw.random() < 0.5:
        return name  # a file at the top of the repository
    parts = [top, *folders, name]
    if draw.random() < 0.05:
        parts.insert(0, "")  # a leading separator
    if draw.random() < 0.05:
        parts.append("")  # a trailing one
    separators = draw.choice(("/", "\\", "mixed"))
    if separators != "mixed":
        return separators.join(parts)
    path = parts[0]
    for part in parts[1:]:
        path += draw.choice("/\\") + part
    return path
