"""The switches only the lab's own test suite sets (conftest.py, for one run of it), in one
place and out of the learner's way: a learner's run never meets them.

- `LAB_HELD_OUT_SEED` gives every new verdict of one suite run one seed for its generated
  inputs, so that every verdict of one source shares one held-out run (`seed_given`, asked
  by `generated_cases.new_seed`).
- `LAB_SUITE_CODE_CACHE` is plumbing/fresh_sources.py's, named there: it runs when an
  interpreter starts, before any module here can be imported.

Not here: what a switch changes (the modules named above). The edited code never sees any of
them: its environment is minimal (plumbing/child_process.py).
"""

import os

HELD_OUT_SEED = "LAB_HELD_OUT_SEED"  # the suite run's seed, digits; else none


def seed_given(limit):
    """The suite run's seed (below `limit`), or None when none is given."""
    given = os.environ.get(HELD_OUT_SEED, "")
    return int(given) % limit if given.isdigit() else None
