"""What the model changed in path_rules.py, as a unified diff a learner can read.

The same picture serves three places: under each `replace_text` in a run's output (that
one edit, with the file around it), after a run (the sample's file against the final
one), and in a replay that diverges on the source (the recorded file against today's).

Not here: deciding anything. A diff is shown; the verdict is pytest's alone.
"""

import difflib

CONTEXT = 2  # lines of unchanged text shown around each change


def unified(before, after, before_name, after_name, indent="    "):
    """The lines of a unified diff from `before` to `after`; none when they are equal."""
    lines = difflib.unified_diff(
        before.splitlines(), after.splitlines(), before_name, after_name, n=CONTEXT, lineterm=""
    )
    return [indent + line for line in lines]
