"""Markdown's fenced blocks in a model's text, read as untrusted text: the lab's one reader of
fences, for the one-shot answer (extensions/one_shot.py) and for the calls a model wrote as
text (plumbing/text_calls.py).

The rule is CommonMark's ("Fenced code blocks", spec 0.31), for a text with no containers:

- an opening fence is a line of at most three spaces, then a run of three or more backticks
  or of three or more tildes, then its info string (the rest of the line, whitespace around
  it dropped); a backtick fence's info string holds no backtick (```x = 1``` is inline
  code). The info string's first word is the block's language (```python, ``` json title).
- a closing fence is a line of at most three spaces, then a run of the opening's character
  at least as long as the opening's, then whitespace only: a block opened with four
  backticks can hold a line of three, and one opened with backticks a line of tildes.
- what a block holds is the lines between its fences, each without as many of its leading
  spaces as the opening fence had (at most that many): the lines of an indented block come
  out as they would be written unindented.
- a fence never closed holds the rest of the text; each use says what it makes of that.

So four spaces or a tab before the run make no fence (Markdown reads such a line as indented
code), nor does a line in a block quote (`> ```). Lines end at a newline. "Whitespace" is
what Python's str.strip() drops, where the spec says spaces and tabs (after a closing run,
around an info string): so a carriage return before the newline (Windows line endings) ends
a fence's line as a space would, and stays in what a block holds.

Not here: deciding what to do with zero or several blocks, or with one never closed (each
caller's), or any regular expression: the scan is one pass over the lines, linear in the
text whatever it holds, and stops as soon as its caller stops asking.
"""

from itertools import islice
from typing import NamedTuple

MARKERS = "`~"
MAX_INDENT = 3  # spaces before a fence; four make indented code


class Fence(NamedTuple):
    """One fenced block of a text, by its positions in that text."""

    marker: str  # "`" or "~"
    length: int  # of the opening run: a closing run is at least as long
    indent: int  # the opening fence's spaces, 0 to 3, removed from each line it holds
    info: str  # the opening fence's info string: "python", "json title=x", or ""
    body: int  # where what it holds starts: after the opening line
    stop: int  # where what it holds ends: its closing line, or the text's end if never closed
    end: int  # where its closing line ends (before its "\n"); the text's end if never closed
    closed: bool

    @property
    def language(self):
        """The first word of the info string, or ""."""
        return self.info.split(maxsplit=1)[0] if self.info else ""


def fences(text):
    """Each fenced block of `text` in order, as a `Fence`; the last may be one never closed."""
    opening, at = None, 0
    while at <= len(text):
        newline = text.find("\n", at)
        end = len(text) if newline < 0 else newline
        line = text[at:end]
        if opening is None:
            opening = _opening(line, end)
        elif _closes(line, opening):
            yield opening._replace(stop=at, end=end, closed=True)
            opening = None
        at = end + 1
    if opening is not None:  # never closed: it holds the rest of the text
        yield opening._replace(body=min(opening.body, len(text)), stop=len(text), end=len(text))


def held(text, fence, limit=None):
    """What `fence` holds: its lines, each without the opening's indent (at most `limit`
    characters of `text` read)."""
    stop = fence.stop if limit is None else min(fence.stop, fence.body + limit)
    lines = text[fence.body : stop].split("\n")
    if fence.indent:
        lines = [line[min(fence.indent, _spaces(line)) :] for line in lines]
    return "\n".join(lines)


def blocks(text, most=2):
    """What each closed fenced block of `text` holds, at most `most` of them (two is enough
    to tell one block from several)."""
    closed = (fence for fence in fences(text) if fence.closed)
    return [held(text, fence) for fence in islice(closed, most)]


def _spaces(line):
    """The leading spaces of `line`, MAX_INDENT at most: after a fourth space, the run that
    would make a fence starts with a space, so a line indented four spaces opens none."""
    count = 0
    while count < MAX_INDENT and line[count : count + 1] == " ":
        count += 1
    return count


def _run(line, start):
    """(the marker at `start`, how many of it follow): the fence's run, or ("", 0)."""
    marker = line[start : start + 1]
    if not marker or marker not in MARKERS:
        return "", 0
    rest = line[start:]
    return marker, len(rest) - len(rest.lstrip(marker))


def _opening(line, end):
    """The Fence `line` opens (its line ending at `end`), open so far; or None."""
    indent = _spaces(line)
    marker, length = _run(line, indent)
    if length < 3:
        return None
    info = line[indent + length :].strip()
    if marker == "`" and "`" in info:
        return None  # inline code, such as ```x = 1``` on a line of prose
    return Fence(marker, length, indent, info, end + 1, end + 1, end + 1, False)


def _closes(line, opening):
    indent = _spaces(line)
    marker, length = _run(line, indent)
    if marker != opening.marker or length < opening.length:
        return False
    return not line[indent + length :].strip()
