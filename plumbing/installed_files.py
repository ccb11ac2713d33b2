"""The files of the lab's Python installation (`.venv/`), as lab.py left them after pip.

The harness imports the packages of `.venv/` (the SDK, pytest, ...), and every test run
imports pytest from there: a line appended to `ollama/__init__.py`, or bytecode planted in
a `__pycache__/` of site-packages with its source's modification time (Python loads it),
would run inside the harness or forge a test report, and git sees none of it. Edited code
cannot write there under bubblewrap (read-only) or, as root, in network-only (it runs as
a user of its own); in network-only as another user, or unisolated, it can. So lab.py, right after
pip installed the locked packages and before any edited code ran, writes
`lab-installed-files.json`: each file's and link's path, mode, size, modification and
change times (`write_snapshot`). `changed()`
names a file changed, added or gone since, and record_run.py, replay.py and ask.py refuse
to start while one is (`refuse_if_changed`, at their import, before any package is
imported); the verdict asks again after each run outside bubblewrap (startup_guard.py).

Why times and not the hashes of each package's RECORD: hashing the 220 MB of `.venv/` at
each start costs seconds; one `lstat` a file, about 15 ms for all 2,155 (docs/costs.md).
The times cover what RECORD hashes no file of (bytecode, scripts, RECORD itself) alike.
A write changes a file's change time (ctime), which no process can set back without setting
the machine's clock (root only; with `--no-isolate` as root, the edited code is root).

Not a lock: code run as root with `--no-isolate` can rewrite the snapshot too. An
installation lab.py did not build (no snapshot) is not checked.
"""

import json
import os
import shlex
import sys
from pathlib import Path

from plumbing.exit_codes import EXIT_ERROR
from plumbing.quiet_interrupt import CLIS

PREFIX = Path(sys.prefix)
SNAPSHOT = PREFIX / "lab-installed-files.json"
FORMAT = "lab-installed-files/1"
# lab.py's own notes in the installation, rewritten after the snapshot (startup_guard.py's
# baseline, the stamps of the locks it was built from): not what pip installed
OWN = ("lab-installed-files.json", "lab-startup-files.json", "lock.sha256", "test-lock.sha256",
       "mcp-lock.sha256")  # fmt: skip
NAMED = 3  # changed files named in the refusal; the rest are counted

_checked = False  # whether this process found the installation as built, since the last run
# of edited code outside bubblewrap (isolation.py clears it): nothing else can write there


def files():
    """{path relative to the installation: [mode, size, mtime_ns, ctime_ns]} of each file
    and link in it, lab.py's own notes left out; links are never followed."""
    found, top = {}, len(str(PREFIX)) + 1  # subtle: slicing, as relpath costs the walk half
    for folder, folders, names in os.walk(PREFIX):
        for name in names + [f for f in folders if os.path.islink(os.path.join(folder, f))]:
            path = os.path.join(folder, name)
            relative = path[top:]
            if relative in OWN:
                continue
            try:
                info = os.lstat(path)
            except OSError:  # gone since the folder was listed: named as gone
                continue
            found[relative] = [info.st_mode, info.st_size, info.st_mtime_ns, info.st_ctime_ns]
    return found


def write_snapshot(kept=None):
    """Write the snapshot of the installation as it is now (lab.py, after pip); with `kept`
    (an earlier snapshot's files), only the paths new since are taken as they are now."""
    now = files()
    if kept is not None:
        now = {**{path: now[path] for path in now if path not in kept}, **kept}
    text = json.dumps({"format": FORMAT, "files": now}, sort_keys=True, separators=(",", ":"))
    SNAPSHOT.write_text(text + "\n")


def snapshot():
    """The files the snapshot holds, or None where there is none (or it cannot be read)."""
    try:
        held = json.loads(SNAPSHOT.read_text())
    except (OSError, ValueError):
        return None
    if not (isinstance(held, dict) and held.get("format") == FORMAT):
        return None
    return held["files"] if isinstance(held.get("files"), dict) else None


def changed():
    """What changed in the installation since lab.py built it, as a sentence, or None.

    Walked once a process, and again after each run of edited code outside bubblewrap."""
    global _checked
    if _checked:
        return None
    built = snapshot()
    if built is None:
        return None  # not built by lab.py: nothing to compare with
    now = files()
    differ = sorted(
        [(path, "changed") for path in now if path in built and built[path] != now[path]]
        + [(path, "added") for path in now if path not in built]
        + [(path, "gone") for path in built if path not in now]
    )
    if not differ:
        _checked = True
        return None
    shown = ", ".join(f"{path} {how}" for path, how in differ[:NAMED])
    more = f" and {len(differ) - NAMED} more" if len(differ) > NAMED else ""
    return (
        f"the lab's Python installation ({PREFIX}) is not as lab.py built it: {shown}{more}; "
        f"code run outside bubblewrap may have planted it: rebuild it with "
        f"{rebuild_command()}"
    )


def rebuild_command():
    """The one command that rebuilds the installation (lab.py builds it when it is gone)."""
    lab = PREFIX.absolute().parent / "lab.py"
    return f"rm -rf {shlex.quote(str(PREFIX))} && python3 {shlex.quote(str(lab))} replay"


def ran_outside_bubblewrap():
    """Edited code is about to run where it may write the installation: look again."""
    global _checked
    _checked = False


def refuse_if_changed():
    """Exit with status 2 and one line when the installation changed (a CLI, at import)."""
    problem = changed()
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        raise SystemExit(EXIT_ERROR)


# subtle: at the import, in a CLI started as a program, so before the CLI imports any package
# of the installation (record_run.py imports the SDK at its top: a line planted in it would
# run first). In a process that merely imports a CLI (the suite), its main() asks instead.
if Path(sys.argv[0]).name in CLIS:
    refuse_if_changed()
