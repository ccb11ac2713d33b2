"""Path rules for a small CI helper: which changed files should the Python checks see?"""


def python_sources(changed_paths):
    """Return the changed Python files under ``src``, in order, with forward slashes."""
    return [
        p.replace("\\", "/")
        for p in changed_paths
        if p.replace("\\", "/").startswith("src/") and p.endswith(".py")
    ]
