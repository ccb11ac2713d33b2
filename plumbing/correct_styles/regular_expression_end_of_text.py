"""Path rules for a small CI helper: which changed files should the Python checks see?"""

import re

_PYTHON = re.compile(r"src/.+\.py\Z", re.DOTALL)  # a name may hold a newline


def python_sources(changed_paths):
    """Return the changed Python files under ``src``, in order, with forward slashes."""
    forward = (path.replace("\\", "/") for path in changed_paths)
    return [path for path in forward if _PYTHON.match(path)]
