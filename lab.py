"""Set up the lab's virtual environment when needed, then run one of its jobs.

    python3 lab.py replay [RECORDING ...]   the main job: replay the recordings offline
    python3 lab.py test [PYTEST ARGS ...]   the test suite
    python3 lab.py run SCRIPT [ARGS ...]    any lab script, e.g. record_run.py --help
    python3 lab.py lint                     ruff check and ruff format --check
    python3 lab.py lock                     regenerate requirements-lock.txt

Only the standard library is used here, so a machine with nothing but python3 (3.10 or
newer) can run it. The environment lives in `.venv/` and is installed from
`requirements-lock.txt`; it is rebuilt when the lock file changes.

Not here: anything the lab itself does; this file only prepares and delegates.
"""

import hashlib
import os
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

HERE = Path(__file__).resolve().parent
VENV = HERE / ".venv"
LOCK = HERE / "requirements-lock.txt"
STAMP = VENV / "lock.sha256"  # which lock file the environment was installed from
# What the lock is made from: the runtime SDK, the test runner, the linter CI runs.
DIRECT = ["ollama", "pytest", "ruff"]


def venv_python(root=VENV):
    return root / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def ensure_venv():
    wanted = hashlib.sha256(LOCK.read_bytes()).hexdigest()
    if STAMP.exists() and STAMP.read_text().strip() == wanted and venv_python().exists():
        return venv_python()
    print(f"setting up {VENV.name}/ from {LOCK.name} (once; takes a minute) ...", flush=True)
    venv.EnvBuilder(with_pip=True, clear=True).create(VENV)
    pip = [str(venv_python()), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "-r", str(LOCK)], check=True)
    STAMP.write_text(wanted + "\n")
    return venv_python()


def lock():
    """Install the direct dependencies, newest versions, into a scratch venv; pin what came."""
    with tempfile.TemporaryDirectory() as scratch:
        venv.EnvBuilder(with_pip=True).create(scratch)
        python = str(venv_python(Path(scratch)))
        subprocess.run([python, "-m", "pip", "install", "-q", *DIRECT], check=True)
        frozen = subprocess.run(
            [python, "-m", "pip", "freeze"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    header = (
        "# The pinned environment of the lab. Regenerate with: python3 lab.py lock\n"
        f"# Made from: {' '.join(DIRECT)} on Python {sys.version.split()[0]}.\n"
    )
    LOCK.write_text(header + frozen)
    print(f"wrote {LOCK.name}")


def main(argv):
    jobs = {
        "replay": ["replay.py"],
        "test": ["-m", "pytest", "-q"],
        "run": [],
        "lint": None,
        "lock": None,
    }
    if not argv or argv[0] not in jobs:
        print(__doc__.split("\n\n")[1].rstrip(), file=sys.stderr)
        return 2
    if sys.version_info < (3, 10):  # noqa: UP036 -- this runs on whatever python3 is there
        print("error: the lab needs Python 3.10 or newer", file=sys.stderr)
        return 2
    job, rest = argv[0], argv[1:]
    if job == "lock":
        lock()
        return 0
    try:
        python = str(ensure_venv())
    except subprocess.CalledProcessError as error:
        print(
            f"error: setting up {VENV.name}/ failed ({error}); see pip's output above",
            file=sys.stderr,
        )
        return 2
    os.chdir(HERE)
    if job == "lint":
        checks = [["check", "."], ["format", "--check", "."]]
        return max(subprocess.run([python, "-m", "ruff", *c]).returncode for c in checks)
    return subprocess.run([python, *jobs[job], *rest]).returncode


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.exit(130)
