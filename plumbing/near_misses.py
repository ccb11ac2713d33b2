"""Near-misses of every literal the correct repairs use: `.pyi` beside `.py`, `srcs` beside
`src`, a quoted path beside a plain one, derived from the code rather than listed.

plumbing/relations.py asks them in every verdict of today's draw. The literals are read
from the correct styles (plumbing/correct_styles/) and the reference, as Python sees them
(string constants, docstrings left out; a regular expression's literal runs, so `\\.py`
gives `.py`); each is varied one way at a time (a character added, removed or changed,
its case changed, doubled, quoted, padded with white space) inside paths the reference
selects. A new task's styles get the same treatment with no list to keep.

Not here: which answers are right (plumbing/relations.py asks every path alone and judges
it against what the styles answer).
"""

import ast
import functools
import inspect
import string

# What a literal's characters are changed to or joined by: any letter or digit (`.pyi`,
# `.py3`), the separators and the characters a path is padded or quoted with.
ALPHABET = string.ascii_lowercase + string.digits + "./\\_- \t\"'"
QUOTES = ('"', "'")
PADDING = (" ", "\t", "\n")


@functools.cache
def literals(sources):
    """The text literals of the given Python sources (a tuple of text), each once, in the
    order met: string constants other than docstrings, and each regular-expression-looking
    constant's literal runs (`src/.+\\.py\\Z` gives `src/` and `.py`)."""
    found = {}
    for source in sources:
        for text in _constants(ast.parse(source)):
            for literal in (text, *_regex_runs(text)):
                if literal:
                    found.setdefault(literal, None)
    return tuple(found)


def style_literals(styles_folder, reference):
    """The literals of every style file in `styles_folder` and of the `reference` function."""
    sources = [path.read_text(encoding="utf-8") for path in sorted(styles_folder.glob("*.py"))]
    return literals((*sources, inspect.getsource(reference)))


def near_miss_paths(templates, said):
    """Each template path with one literal of `said` that it holds varied one way (see
    `variants`), and each template quoted and padded whole; each path once, in order."""
    found = {}
    for template in templates:
        for literal in said:
            at = template.find(literal)
            if at < 0:
                continue
            before, after = template[:at], template[at + len(literal) :]
            for variant in variants(literal):
                found.setdefault(before + variant + after, None)
        for variant in _wrapped(template):
            found.setdefault(variant, None)
        found.pop(template, None)  # a variant that is the template again is no near-miss
    return tuple(found)


def variants(literal):
    """`literal` with one character added, removed or changed; in other case; doubled;
    quoted; padded with white space."""
    found = {}
    for at in range(len(literal) + 1):
        for character in ALPHABET:
            found.setdefault(literal[:at] + character + literal[at:], None)
    for at in range(len(literal)):
        found.setdefault(literal[:at] + literal[at + 1 :], None)
        for character in ALPHABET:
            found.setdefault(literal[:at] + character + literal[at + 1 :], None)
    for changed in (literal.upper(), literal.lower(), literal.swapcase(), literal.title()):
        found.setdefault(changed, None)
    found.setdefault(literal * 2, None)
    for variant in _wrapped(literal):
        found.setdefault(variant, None)
    found.pop(literal, None)
    return tuple(found)


def _wrapped(text):
    quoted = [quote + text + quote for quote in QUOTES]
    return (*quoted, *(pad + text for pad in PADDING), *(text + pad for pad in PADDING))


def _constants(tree):
    """The text constants of a module, its functions' and classes' docstrings left out."""
    docstrings = docstring_nodes(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) not in docstrings:
                yield node.value


def docstring_nodes(tree):
    """The ids of the constant nodes that are docstrings (of the module, a function or a
    class) in `tree`: what is prose, not a literal the code uses."""
    nodes = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                nodes.add(id(body[0].value))
    return nodes


SPECIAL = set(".^$*+?{}()|")  # what a regular expression does not take as itself


def _regex_runs(text):
    """The runs of characters a regular expression would match as themselves: an escaped
    letter or digit (`\\Z`, `\\d`) and each special character ends a run; each member of a
    character class is a run of its own. Text that is no regular expression gives its own
    runs, which are harmless: only a literal a template holds is varied."""
    runs, run, at, in_class = [], "", 0, False
    while at < len(text):
        character = text[at]
        if character == "\\" and at + 1 < len(text):
            escaped, at = text[at + 1], at + 2
            if escaped.isalnum():
                runs, run = [*runs, run], ""
            elif in_class:
                runs.append(escaped)
            else:
                run += escaped
            continue
        at += 1
        if in_class:
            in_class = character != "]"
            if in_class:
                runs.append(character)
        elif character == "[":
            runs, run, in_class = [*runs, run], "", True
        elif character in SPECIAL:
            runs, run = [*runs, run], ""
        else:
            run += character
    return [*runs, run]
