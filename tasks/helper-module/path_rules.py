"""Path rules for a small CI helper: which changed files should the Python checks see?"""

from path_parts import split_path


def python_sources(changed_paths):
    """Return the changed Python files under ``src``, in order, with forward slashes."""
    sources = []
    for path in changed_paths:
        parts = split_path(path)
        if parts[0] == "src" and parts[-1].endswith(".py"):
            sources.append("/".join(parts))
    return sources
