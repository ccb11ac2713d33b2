"""For a maintainers' script (tests/snapshots.py, tests/maintainers/NAME.py) run as `python3
SCRIPT` by a Python that lacks the lab's packages (they are in .venv/, which `python3 lab.py
run SCRIPT` uses): one line that says so, exit 2, instead of a traceback. Standard library
only."""

import importlib.util
import sys
from pathlib import Path


def need_lab_packages(script):
    if importlib.util.find_spec("ollama") is None:
        lab = Path(__file__).resolve().parent.parent
        name = Path(script).resolve().relative_to(lab).as_posix()
        print(
            f"error: {name} needs the lab's packages; run python3 lab.py run {name}",
            file=sys.stderr,
        )
        sys.exit(2)
