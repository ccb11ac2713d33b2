"""What the command-line tools print, run as a learner runs them, for tests/snapshots.py.

replay.py on shipped recordings (with --transcript, --transcript=full and --chunks), on a
recording that diverges and on files that are not recordings; compare.py grouped each way.
What differs on every run is normalised: durations become `<t>s`, the timeline (drawn from
today's timings; tests/snapshots.py pins how it is drawn) becomes one line, and the
temporary folder becomes TMP. Each output ends with the exit code.
"""

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from plumbing.recording import RECORDINGS

HERE = Path(__file__).resolve().parent.parent


def normalised(text, folder):
    text = text.replace(str(folder), "TMP")
    text = re.sub(r"Timeline \(seconds.*?\n {8}independent tests [\d.]+s\n", "<timeline>\n",
                  text, flags=re.S)  # fmt: skip
    return re.sub(r"\b\d+\.\d+s\b", "<t>s", text)


def run(script, *args, folder):
    finished = subprocess.run(
        [sys.executable, str(HERE / script), *map(str, args)],
        capture_output=True, text=True, timeout=120, cwd=HERE,
        env={**os.environ, "COLUMNS": "80", "LINES": "24"},  # usage lines wrap to the width
    )  # fmt: skip
    said = f"$ {script} {' '.join(map(str, args))}\n{finished.stdout}"
    if finished.stderr:
        said += f"[stderr]\n{finished.stderr}"
    return normalised(said + f"[exit {finished.returncode}]\n", folder).splitlines()


def replays():
    lines = []
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        repair = json.loads((RECORDINGS / "repair.json").read_text(encoding="utf-8"))
        repair["events"][7]["result"]["text"] = "what the recording said it read"
        (folder / "diverges.json").write_text(json.dumps(repair), encoding="utf-8")
        (folder / "not-json.json").write_text("{", encoding="utf-8")
        for args in (
            [RECORDINGS / "repair.json", "--transcript", "--chunks", "3"],
            [RECORDINGS / "smollm2-135m-live.json", "--transcript=full", "--chunks", "2"],
            [RECORDINGS / "bounded-max-turns-1.json", RECORDINGS / "cheats" / "forged-report.json"],
            [folder / "diverges.json", "--no-isolate"],  # the same on a machine without bwrap
            [folder / "not-json.json", folder / "missing.json"],
            ["--chunks", "0", RECORDINGS / "repair.json"],
        ):
            lines += run("replay.py", *args, folder=folder)
    return [line.replace(str(RECORDINGS), "recordings") for line in lines]


def comparisons():
    shipped = sorted(RECORDINGS.rglob("*.json"))
    lines = []
    with tempfile.TemporaryDirectory() as name:
        for by in ("all", "model", "max_turns", "api"):
            lines += run("compare.py", *shipped, "--by", by, folder=Path(name))
        lines += run("compare.py", shipped[0], Path(name) / "missing.json", folder=Path(name))
    return [line.replace(str(RECORDINGS), "recordings") for line in lines]


# file name -> the function that makes its lines
CLIS = {"replay-output.txt": replays, "compare-output.txt": comparisons}
