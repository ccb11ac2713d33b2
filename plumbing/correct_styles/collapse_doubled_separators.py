"""Path rules for a small CI helper: which changed files should the Python checks see?"""

import re

# A separator doubled inside a path names no folder: `src//a.py` is the file `src/a.py`.
_DOUBLED = re.compile(r"(?s)(?<=.)/{2,}")


def python_sources(changed_paths):
    """Return the changed Python files under ``src``, in order, with forward slashes."""
    sources = []
    for path in changed_paths:
        forward = _DOUBLED.sub("/", path.replace("\\", "/"))
        parts = forward.split("/")
        if parts[0] == "src" and parts[-1].endswith(".py"):
            sources.append(forward)
    return sources
