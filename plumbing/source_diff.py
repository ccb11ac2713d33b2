"""What the model changed in path_rules.py, as a unified diff a learner can read.

The same picture serves three places: under each `replace_text` in a run's output (that
one edit, with the file around it), after a run (the sample's file against the final
one), and in a replay that diverges on the source (the recorded file against today's).
A diff is cut past DIFF_LINES lines or DIFF_CHARACTERS characters, with a last line saying
how much was left out: an edit may put a line of a megabyte in the file, and every later
edit near it would print that line again (a 4.7 MB recording once printed 120 MB).

`lines_changed` counts what one `replace_text` removed and added, for its result: a small
model told "1 line removed, 3 added" learns what "replaced" alone never said.

Not here: deciding anything. A diff is shown; the verdict is pytest's alone.
"""

import difflib

CONTEXT = 2  # lines of unchanged text shown around each change
DIFF_LINES = 200  # lines of one diff shown at most
DIFF_CHARACTERS = 20_000  # characters of one diff shown at most, its lines' ends not counted


def unified(before, after, before_name, after_name, indent="    "):
    """The lines of a unified diff from `before` to `after`, cut past DIFF_LINES lines or
    DIFF_CHARACTERS characters (see `bounded`); none when they are equal."""
    lines = difflib.unified_diff(
        before.splitlines(), after.splitlines(), before_name, after_name, n=CONTEXT, lineterm=""
    )
    return [indent + line for line in bounded(lines)]


def bounded(lines, most_lines=DIFF_LINES, most_characters=DIFF_CHARACTERS):
    """`lines` up to `most_lines` lines and `most_characters` characters (the line that
    crosses that is cut there), then one line saying how much was left out."""
    lines, kept, room = iter(lines), [], most_characters
    for line in lines:
        if len(kept) == most_lines or len(line) > room:
            break
        kept.append(line)
        room -= len(line)
    else:
        return kept
    left = []
    if len(kept) < most_lines and room:  # the start of the line that crossed the bound
        kept.append(line[:room])
        left.append(f"{_count(len(line) - room, 'more character')} of the line above")
        count, characters = 0, 0
    else:
        count, characters = 1, len(line)
    for rest in lines:  # subtle: counted one by one, never held: there may be millions
        count, characters = count + 1, characters + len(rest)
    if count:
        left.append(f"{_count(count, 'more line')} ({_count(characters, 'character')})")
    return [*kept, f"[... the diff is cut here: {' and '.join(left)} not shown]"]


def _count(number, noun):
    return f"{number:,} {noun}" + ("" if number == 1 else "s")


def lines_changed(text, old, new, most=40_000):
    """{'lines_removed': r, 'lines_added': a}: the lines of `text` (split at its newlines,
    an empty last one counted) that the unique `old` touches, against the same lines with
    `new`, compared line by line. Lines equal at both ends are set aside first; past `most`
    pairs of the lines left, all of them count (difflib's cost grows with their product)."""
    at = text.index(old)
    start = text.rfind("\n", 0, at) + 1
    end = text.find("\n", at + len(old))
    end = len(text) if end == -1 else end
    before = text[start:end].split("\n")
    after = (text[start:at] + new + text[at + len(old) : end]).split("\n")
    while before and after and before[0] == after[0]:
        before, after = before[1:], after[1:]
    while before and after and before[-1] == after[-1]:
        before, after = before[:-1], after[:-1]
    if len(before) * len(after) > most:
        return {"lines_removed": len(before), "lines_added": len(after)}
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    kept = sum(block.size for block in matcher.get_matching_blocks())
    return {"lines_removed": len(before) - kept, "lines_added": len(after) - kept}
