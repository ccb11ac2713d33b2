"""Set up the lab's virtual environment when needed, then run one of its jobs.

    python3 lab.py replay [RECORDING ...]   the main job: replay the recordings offline
    python3 lab.py test [PYTEST ARGS ...]   the test suite
    python3 lab.py view [RECORDING ...]     a page per recording (default: the shipped ones)
    python3 lab.py run SCRIPT [ARGS ...]    any lab script, e.g. record_run.py --help
    python3 lab.py lint                     ruff check and ruff format --check
    python3 lab.py lock [PYTHON3.10]        regenerate requirements-lock.txt

Only the standard library is used here, so a machine with nothing but python3 (3.10 or
newer) can run it. The environment lives in `.venv/` and is installed from
`requirements-lock.txt`; it is rebuilt when the lock file changes.

Not here: anything the lab itself does; this file only prepares and delegates.
"""

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

HERE = Path(__file__).resolve().parent
VENV = HERE / ".venv"
LOCK = HERE / "requirements-lock.txt"
STAMP = VENV / "lock.sha256"  # which lock file the environment was installed from
# What the lock is made from: the runtime SDK, the test runner (and xdist, which runs the
# suite in parallel), Playwright (the browser tests drive Debian's chromium with it), the
# linter CI runs.
DIRECT = ["ollama", "playwright", "pytest", "pytest-xdist", "ruff"]


def venv_python(root=VENV):
    return root / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


# A start-up file for the new installation: it runs plumbing/fresh_sources.py, so that every
# interpreter of .venv/ compiles the lab's own modules from source and never loads bytecode
# an unisolated test run may have left in __pycache__/. Inside a sandbox the file is absent.
FRESH_SOURCES = "lab-fresh-sources.pth"
FRESH_SOURCES_LINE = (
    "import os, sys; _f = os.path.join(sys.prefix, os.pardir, 'plumbing', 'fresh_sources.py'); "
    "os.path.isfile(_f) and exec(compile(open(_f, 'rb').read(), _f, 'exec'), "
    "{'__name__': 'lab_fresh_sources'})\n"
)


def ensure_venv():
    # the environment is rebuilt when the lock, or the start-up file it gets, changes
    wanted = hashlib.sha256(LOCK.read_bytes() + FRESH_SOURCES_LINE.encode()).hexdigest()
    if STAMP.exists() and STAMP.read_text().strip() == wanted and venv_python().exists():
        return venv_python()
    print(
        f"setting up {VENV.name}/ from {LOCK.name} (once, or when the lock changes) ...", flush=True
    )
    venv.EnvBuilder(with_pip=True, clear=True).create(VENV)
    pip = [str(venv_python()), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "-r", str(LOCK)], check=True)
    where = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site_packages = subprocess.run(
        [str(venv_python()), "-c", where], check=True, capture_output=True, text=True
    ).stdout.strip()
    (Path(site_packages) / FRESH_SOURCES).write_text(FRESH_SOURCES_LINE)
    # What Python runs at start-up in the new installation: a test run that plants more is
    # then noticed, and no verdict given until .venv/ is rebuilt (plumbing/startup_guard.py).
    baseline = "from plumbing.startup_guard import write_baseline; write_baseline()"
    subprocess.run([str(venv_python()), "-c", baseline], check=True, cwd=HERE)
    STAMP.write_text(wanted + "\n")
    return venv_python()


def frozen(python, pins=()):
    """{name: "name==version"} that `pip install` of DIRECT brings into a scratch venv of
    `python` (a path to an interpreter), with `pins` held fixed where they apply."""
    with tempfile.TemporaryDirectory() as scratch:
        subprocess.run([python, "-m", "venv", scratch], check=True)
        scratch_python = str(venv_python(Path(scratch)))
        pip = [scratch_python, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        subprocess.run([*pip, *DIRECT, *pins], check=True)
        listed = subprocess.run(
            [scratch_python, "-m", "pip", "freeze"], check=True, capture_output=True, text=True
        ).stdout.split()
    return {line.split("==")[0].lower(): line for line in listed}


def runs(python):
    try:
        return subprocess.run([python, "-c", "pass"], capture_output=True).returncode == 0
    except OSError:
        return False


def lock(older=None):
    """Pin what installing DIRECT brings on this Python, plus, given a Python 3.10 (or one
    found as python3.10), what 3.10 needs on top (pytest's backports), marked for it alone."""
    pins = frozen(sys.executable)
    lines = sorted(pins.values(), key=str.lower)
    older = older or shutil.which("python3.10")
    older = older if older and runs(older) else None
    if older and sys.version_info >= (3, 11):
        extra = frozen(older, pins=lines)
        lines += [f'{extra[n]} ; python_version < "3.11"' for n in sorted(set(extra) - set(pins))]
    else:
        print("note: no python3.10 found; backports for Python 3.10 are not pinned")
    header = (
        "# The pinned environment of the lab. Regenerate with: python3 lab.py lock [PYTHON3.10]\n"
        f"# Made from: {' '.join(DIRECT)} on Python {sys.version.split()[0]}"
        + (" and 3.10 (for the marked lines).\n" if older else ".\n")
    )
    LOCK.write_text(header + "\n".join(lines) + "\n")
    print(f"wrote {LOCK.name}")


def script(name):
    """A lab script by name, or a path as given (relative to where the user stands)."""
    given = Path(name)
    return str(given if given.exists() or given.is_absolute() else HERE / given)


def lab_paths(args):
    """`args` with each path that exists only inside the lab made absolute, the way
    `script` finds a script: `recordings/repair.json` then works from any folder."""
    return [a if a.startswith("-") or Path(a).exists() or not (HERE / a).exists()
            else str(HERE / a) for a in args]  # fmt: skip


JOBS = ("replay", "test", "view", "run", "lint", "lock")
HELP_FLAGS = ("-h", "--help")


def usage():
    jobs = __doc__.split("\n\n")[1].rstrip()
    return (
        f"usage: python3 lab.py JOB [ARGS ...]\n\njobs:\n{jobs}\n\n"
        "`replay`, `test`, `view` and `run SCRIPT` pass --help on to what they run.\n"
        "exit codes: those of the job; 2 for an unknown job or a failed set-up"
    )


def main(argv):
    # subtle: --help must answer before any job runs: `lock --help` once took "--help"
    # for an interpreter and rewrote the lock file.
    if not argv or argv[0] in HELP_FLAGS:
        print(usage(), file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    if argv[0] not in JOBS:
        print(f"error: unknown job {argv[0]!r}; choose one of: {', '.join(JOBS)}", file=sys.stderr)
        return 2
    if argv[0] in ("lint", "lock", "run") and any(flag in argv[1:2] for flag in HELP_FLAGS):
        print(usage())
        return 0
    if argv[0] == "run" and len(argv) < 2:
        print("error: `run` needs a script, e.g. python3 lab.py run record_run.py --help",
              file=sys.stderr)  # fmt: skip
        return 2
    if sys.version_info < (3, 10):  # noqa: UP036 -- this runs on whatever python3 is there
        print("error: the lab needs Python 3.10 or newer", file=sys.stderr)
        return 2
    job, rest = argv[0], argv[1:]
    if job == "lock":
        lock(*rest[:1])
        return 0
    try:
        python = str(ensure_venv())
    except subprocess.CalledProcessError as error:
        print(
            f"error: setting up {VENV.name}/ failed ({error}); see pip's output above",
            file=sys.stderr,
        )
        return 2
    # subtle: scripts run where the user stands, so their relative paths (a recording,
    # --root, --output) mean what the user meant; only the suite and the linters need HERE.
    if job == "replay":
        return subprocess.run([python, str(HERE / "replay.py"), *lab_paths(rest)]).returncode
    if job == "view":
        shipped = sorted(str(p) for p in (HERE / "recordings").rglob("*.json"))
        given = lab_paths(rest)
        named = any(a.endswith(".json") for a in given)  # else the shipped ones, with any flags
        command = [python, str(HERE / "view.py"), *given, *([] if named else shipped)]
        return subprocess.run(command).returncode
    if job == "run":
        # The maintainers' scripts live in tests/ and import the lab's packages from here.
        paths = [str(HERE), *filter(None, [os.environ.get("PYTHONPATH")])]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
        return subprocess.run([python, script(rest[0]), *rest[1:]], env=env).returncode
    if job == "test":
        # Four workers on two cores: most tests wait on a child process or a server, so
        # more workers than cores keep both cores busy. `-n 0` runs in one process.
        command = [python, "-m", "pytest", "-q", "-n", "4", *rest]
        return subprocess.run(command, cwd=HERE).returncode
    checks = [["check", "."], ["format", "--check", "."]]
    return max(subprocess.run([python, "-m", "ruff", *c], cwd=HERE).returncode for c in checks)


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.exit(130)
