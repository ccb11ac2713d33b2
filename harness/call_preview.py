"""What `--approve` shows of a call before it runs, so that you decide about what you see.

An edit is shown as the diff it would make to path_rules.py (plumbing/source_diff.py). An
edit that would change nothing (its `new` equals its `old`) is said to be one, with the text
it names, rather than shown as arguments cut after a few hundred characters: a small model
sends such edits, and the cut hid that both halves were the same. An edit whose `old` is not
in the file exactly once is said to be refused, with the change it asks for as a diff of
its own `old` against its `new`. `run_tests` is said in words; any other call as its
arguments. Every line is model-written text: the terminal makes it visible before printing.

Not here: asking (extensions/terminal.py), or running anything.
"""

import json

from harness.console import cut, plural
from plumbing.sample import SOURCE_FILE
from plumbing.source_diff import bounded, unified

TEXT_LINES = 20  # lines of a no-op edit's text shown; the rest is counted


def preview(name, arguments, source):
    """The lines that show a call before it runs (`source`: path_rules.py in the copy)."""
    if name == "run_tests":
        return ["  run_tests would run the visible tests on the copy (the code as edited so far)"]
    given = arguments if isinstance(arguments, dict) else {}
    old, new = given.get("old"), given.get("new")
    if name != "replace_text" or not (isinstance(old, str) and isinstance(new, str) and old):
        return [f"  {name} {cut(json.dumps(arguments, ensure_ascii=False), 300)}"]
    if new == old:
        lines = old.splitlines() or [old]
        return [
            f"  replace_text would change nothing: its new text equals its old text "
            f"({plural(len(lines), 'line')}, {plural(len(old), 'character')}):",
            *("    " + line for line in bounded(lines, TEXT_LINES)),
        ]
    before = source.read_text(encoding="utf-8", errors="replace") if source.exists() else ""
    found = before.count(old)
    if found != 1:
        times = "is not in" if found == 0 else f"is found {found} times in"
        return [
            f"  replace_text would be refused: its old text {times} {SOURCE_FILE} (it must be "
            "found once). The change it asks for:",
            *unified(old, new, "its old text", "its new text"),
        ]
    after = before.replace(old, new, 1)
    return [f"  {name} would change {SOURCE_FILE}:"] + unified(
        before, after, f"{SOURCE_FILE} now", "after this edit"
    )
