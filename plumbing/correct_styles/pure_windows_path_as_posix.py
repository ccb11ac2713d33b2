"""Path rules for a small CI helper: which changed files should the Python checks see?"""

from pathlib import PureWindowsPath


def python_sources(changed_paths):
    """Return the changed Python files under ``src``, in order, with forward slashes."""
    paths = [PureWindowsPath(path) for path in changed_paths]
    return [p.as_posix() for p in paths if p.parts[0] == "src" and p.suffix == ".py"]
