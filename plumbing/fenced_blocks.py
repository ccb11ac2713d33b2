"""The fenced blocks of a model's answer, read as untrusted text (extensions/one_shot.py).

A fence starts its line with three backticks or more; an opening one may name a language
(```python); a closing one is backticks only, at least as many as its opening one, so a
block opened with four can hold a line of three. An opening fence never closed makes no
block. A line of three backticks inside the code (in a string, say) closes a block opened
with three, as it would in Markdown.

Not here: deciding what to do with zero or several blocks (the caller's), or any regular
expression: the scan is one pass over the lines, linear in the text whatever it holds, and
stops as soon as it has found as many blocks as it was asked for.
"""


def blocks(text, most=2):
    """The fenced blocks of `text`, each its lines between the fences, at most `most` of
    them (two is enough to tell one block from several)."""
    found, fence, lines = [], 0, []
    for line in text.split("\n"):
        ticks = len(line) - len(line.lstrip("`"))
        if not fence:
            if ticks >= 3 and "`" not in line[ticks:]:  # an opening fence, and its language
                fence, lines = ticks, []
        elif ticks >= fence and not line[ticks:].strip():  # the closing fence
            found.append("".join(f"{one}\n" for one in lines))
            fence = 0
            if len(found) == most:
                break
        else:
            lines.append(line)
    return found
