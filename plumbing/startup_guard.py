"""Start-up code in the lab's Python installation: what it was built with, and what an
unisolated test run may have planted since.

Python runs every `.pth` file of site-packages, and any `sitecustomize` or
`usercustomize` on its path, at the start of every interpreter: code the tests plant there
runs inside the harness the next time it starts, with the user's secrets in reach. Under
bubblewrap the installation is read-only to the tests. Where they ran unisolated,
`planted()` names what is new or changed since the baseline: the list lab.py writes when
it builds `.venv/` (`write_baseline`), or, for an installation it did not build, what was
there when this process started. The verdict is refused while anything is named.

Not a lock: code that runs unisolated can rewrite the baseline too. It catches the plant a
hostile edit leaves for the next run, and says so, where nothing better can be had.
"""

import hashlib
import json
import site
import sys
from pathlib import Path

from plumbing import installed_files

BASELINE = Path(sys.prefix) / "lab-startup-files.json"
CUSTOMIZE = ("sitecustomize.py", "usercustomize.py")


def startup_files():
    """{path: SHA-256} of every file Python runs at start-up in this installation."""
    # subtle: resolved, so the installation reached through a symlink (a copy of the lab
    # that links .venv/, as tests/maintainers/mutate.py makes) names the files its baseline names
    folders = {Path(p).resolve() for p in site.getsitepackages()}
    found = {}
    for folder in folders | {Path(p).resolve() for p in sys.path if p}:
        candidates = [folder / name for name in CUSTOMIZE]
        if folder in folders:
            candidates += sorted(folder.glob("*.pth"))
        for path in candidates:
            try:
                found[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
            except OSError:
                continue  # absent, or not a readable file
    return found


def write_baseline():
    """Record the start-up files of a freshly built installation (lab.py calls this)."""
    BASELINE.write_text(json.dumps(startup_files(), indent=1, sort_keys=True) + "\n")


def around():
    """Run the command in sys.argv[1:] (lab.py's install of the tests' packages), then add to
    the baseline the start-up files it brought, and to the snapshot of installed files the
    files: new since this process started, so what was planted before is still named."""
    import subprocess  # only here: the guard itself runs in every CLI

    before, built = startup_files(), installed_files.snapshot()
    code = subprocess.run(sys.argv[1:]).returncode
    if code:
        sys.exit(code)
    added = {path: digest for path, digest in startup_files().items() if path not in before}
    if added:
        BASELINE.write_text(json.dumps({**_baseline(), **added}, indent=1, sort_keys=True) + "\n")
    if built is not None:  # ... and to the installed files, the files it brought
        installed_files.write_snapshot(kept=built)


def _baseline():
    try:
        return json.loads(BASELINE.read_text())
    except (OSError, ValueError):
        return AT_START


AT_START = startup_files()  # for an installation lab.py did not build


def planted():
    """The start-up files new, changed or gone since the baseline, or else any file of the
    installation changed since lab.py built it (installed_files.py), as a sentence, or None."""
    baseline, now = _baseline(), startup_files()
    changed = sorted(path for path, digest in now.items() if baseline.get(path) != digest)
    # ... or gone: lab-fresh-sources.pth removed lets planted bytecode load (fresh_sources.py)
    gone = sorted(path for path in baseline if path not in now)
    if gone:
        return (
            f"the lab's Python installation lacks start-up code it was built with "
            f"({Path(gone[0]).name}, in {Path(gone[0]).parent}); an unisolated test run may "
            f"have removed it: rebuild it (delete {Path(sys.prefix).name}/ and run python3 "
            "lab.py test) before trusting a verdict"
        )
    if not changed:
        return installed_files.changed()
    shown = ", ".join(Path(path).name for path in changed[:3])
    more = f" and {len(changed) - 3} more" if len(changed) > 3 else ""
    return (
        f"the lab's Python installation holds start-up code it was not built with "
        f"({shown}{more}, in {Path(changed[0]).parent}); an unisolated test run may have "
        f"planted it: rebuild it (delete {Path(sys.prefix).name}/ and run python3 lab.py "
        "test) before trusting a verdict"
    )
