"""The ladder of tasks: bugs planted in the sample, each under the docstring's one contract.

A task is a folder `tasks/NAME/` holding only what differs from `sample_repo/`: a faulty
`path_rules.py` (none: the sample's own), its own `tests/test_path_rules.py` where the
sample's tests cannot show the bug (none: the sample's), modules beside path_rules.py that
it imports (`helpers`: the model may read them, and the verdict takes them as given; the
tools edit path_rules.py alone), and `card.md`, which says what is wrong and what makes it
easy or hard, in this shape:

    # The order is reversed

    Rung: 5
    What is wrong: each selected path is put first, not last, ...
    Fails: test_keeps_the_order_given
    Easy or hard: medium: the sample's own tests each select one path ...

`Rung` places it on the ladder (1 the easiest); `Fails` names the visible tests the faulty
code fails, all of them and no other (`python3 lab.py tasks check` holds a folder to it).
Every task is judged by the same verdict: the visible tests it gives, and the held-out
checks of the docstring's contract. A folder without a card (the impossible tasks') is not
on the ladder: harness/tasks.py gives those.

Not here: running anything (harness/task_check.py checks a folder), or the impossible tasks.
"""

from dataclasses import dataclass
from pathlib import Path

from plumbing.sample import SOURCE_FILE, TEST_FILE, helper_name

CARD = "card.md"
FIELDS = ("Rung", "What is wrong", "Fails", "Easy or hard")  # each on a line of its own
SOURCE_LIMIT = 100_000  # bytes of a task's path_rules.py or test file read at most
CARD_LIMIT = 4_000  # bytes of a card
HELPERS = 3  # modules beside path_rules.py a task may give, at most


class TaskFolderError(ValueError):
    """Why a folder is not a task, in one line."""


@dataclass(frozen=True)
class Card:
    title: str
    rung: int
    wrong: str
    fails: tuple  # the visible tests the faulty code fails, by name
    ease: str


@dataclass(frozen=True)
class TaskFolder:
    name: str
    card: Card
    source: bytes | None  # path_rules.py as the run is given it; None: the sample's
    tests: bytes | None  # tests/test_path_rules.py; None: the sample's
    helpers: tuple = ()  # (name, bytes) of each module beside path_rules.py, by name


def read_card(text, where):
    """The Card a card's text says, or TaskFolderError naming what is missing."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines or not lines[0].startswith("# ") or not lines[0][2:].strip():
        raise TaskFolderError(f"{where}: the first line is the title, after '# '")
    said = {}
    for line in lines[1:]:
        key, colon, value = line.partition(":")
        if colon and key in FIELDS and value.strip():
            said.setdefault(key, value.strip())
    missing = [key for key in FIELDS if key not in said]
    if missing:
        raise TaskFolderError(f"{where}: no line '{missing[0]}: ...'")
    if not said["Rung"].isdigit() or not 1 <= int(said["Rung"]) <= 99:
        raise TaskFolderError(f"{where}: 'Rung' is a whole number from 1 to 99")
    fails = tuple(dict.fromkeys(name.strip() for name in said["Fails"].split(",")))
    if not all(name.isidentifier() and name.startswith("test_") for name in fails):
        raise TaskFolderError(f"{where}: 'Fails' names tests (test_...), separated by commas")
    return Card(lines[0][2:].strip(), int(said["Rung"]), said["What is wrong"], fails,
                said["Easy or hard"])  # fmt: skip


def read_folder(folder):
    """The TaskFolder at `folder`, or TaskFolderError saying why it is not one."""
    folder = Path(folder)
    if not folder.is_dir():
        raise TaskFolderError(f"{folder}: no such folder")
    if not (folder / CARD).is_file():
        raise TaskFolderError(f"{folder}: no {CARD}, so not a task of the ladder")
    card = read_card(_read(folder / CARD, CARD_LIMIT), folder / CARD)
    kept = [f"{CARD}", SOURCE_FILE, TEST_FILE]
    helpers = sorted(p.name for p in folder.glob("*.py") if helper_name(p.name) and p.is_file())
    others = sorted(
        p.relative_to(folder).as_posix()
        for p in folder.rglob("*")
        if p.is_file()
        and "__pycache__" not in p.parts
        and p.relative_to(folder).as_posix() not in (*kept, *helpers)
    )
    if others:
        raise TaskFolderError(
            f"{folder}: {others[0]} is not a file a task may hold ({', '.join(kept)}, or a "
            "module beside path_rules.py named like no module Python or pytest imports)"
        )
    if len(helpers) > HELPERS:
        raise TaskFolderError(
            f"{folder}: {len(helpers)} modules beside {SOURCE_FILE}, over {HELPERS}"
        )
    source, tests = (_read_bytes(folder / name) for name in (SOURCE_FILE, TEST_FILE))
    given = tuple((name, _read_bytes(folder / name)) for name in helpers)
    return TaskFolder(folder.name, card, source, tests, given)


def ladder(root):
    """({name: TaskFolder}, {name: why not}) for the folders under `root` with a card, the
    ladder in order: by rung, then by name. A folder that is not a task is set apart with
    its reason (a learner's half-written one must not stop every program)."""
    found, broken = [], {}
    for folder in sorted(p for p in Path(root).iterdir() if (p / CARD).is_file()):
        try:
            found.append(read_folder(folder))
        except (TaskFolderError, OSError, UnicodeDecodeError) as error:
            broken[folder.name] = str(error)
    found.sort(key=lambda task: (task.card.rung, task.name))
    return {task.name: task for task in found}, broken


def _read(path, limit):
    return _read_bytes(path, limit).decode("utf-8")


def _read_bytes(path, limit=SOURCE_LIMIT):
    """Up to `limit` bytes of `path`, None when there is no such file."""
    if not path.is_file():
        return None
    with open(path, "rb") as file:
        data = file.read(limit + 1)
    if len(data) > limit:
        raise TaskFolderError(f"{path}: over {limit:,} bytes")
    return data
