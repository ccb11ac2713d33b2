"""Benchmark: the wall time of `record_run.py --attempts N` with --jobs 1, 2 and 4.

    python3 lab.py run tests/maintainers/bench_jobs.py            (add --quick for fewer repeats)

Each attempt is a scripted repair served by ollama_test_server.ConversationServer on
127.0.0.1: an edit and a test run in one turn, then a final message, so each attempt makes
3 pytest runs (starting, run_tests, final) and 2 model requests. Two settings:
- no pause: the stand-in answers at once, so what is measured is the harness's own work
  (starting a child record_run.py per attempt, copying the sample, running pytest);
- `--pause` seconds (default 1.0) before each reply's rest, standing in for a model's
  generation time. This is not a model: it shows what overlapping waits can save, which
  is what --jobs is for against a server that serves requests in parallel.
The job counts run interleaved (1, 2, 4, 1, 2, 4, ...), and min / median / max over the
repeats are reported with the ratio of minimums against --jobs 1.

Not a test: timings on a shared machine are noisy, so nothing here passes or fails CI.
"""

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __name__ == "__main__":  # run directly, not through lab.py: the lab is one folder up
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.ollama_test_server import ConversationServer, call, chunk, reply

HERE = Path(__file__).resolve().parents[2]
FIX = {"old": 'path.split("/")', "new": 'path.replace("\\\\", "/").split("/")'}


def repair(tag, pause):
    calls = [call("replace_text", **FIX), call("run_tests", index=1)]
    return [
        reply(chunk(thinking=f"Attempt {tag}."), chunk(tool_calls=calls), chunk(done=True),
              pause_after_first=pause),
        reply(chunk("Fixed; 4 passed."), chunk(done=True), pause_after_first=pause),
    ]  # fmt: skip


def series_seconds(attempts, jobs, pause):
    """Wall time of one record_run.py --attempts series; it must exit 0 (all passed)."""
    scripts = [repair(n, pause) for n in range(attempts)]
    with tempfile.TemporaryDirectory() as scratch, ConversationServer(scripts) as server:
        command = [sys.executable, str(HERE / "record_run.py"), "--host", server.host]
        command += ["--attempts", str(attempts), "--jobs", str(jobs)]
        command += ["--output", str(Path(scratch) / "bench.json")]
        started = time.perf_counter()
        finished = subprocess.run(command, capture_output=True, text=True)
        seconds = time.perf_counter() - started
    if finished.returncode != 0:
        sys.exit(f"error: the series failed:\n{finished.stdout}{finished.stderr}")
    return seconds


def main():
    parser = argparse.ArgumentParser(
        description="Measure record_run.py --attempts N with --jobs 1, 2, 4 against the local "
        "stand-in server (scripted attempts, no model).",
        epilog="exit codes: 0 measured; non-zero if a series failed",
    )
    parser.add_argument("--attempts", type=int, default=4, help="per series (default: 4)")
    parser.add_argument("--repeats", type=int, default=3, help="per setting (default: 3)")
    parser.add_argument(
        "--pause", type=float, default=1.0, help="stand-in seconds per reply (default: 1.0)"
    )
    parser.add_argument("--quick", action="store_true", help="1 repeat")
    args = parser.parse_args()
    repeats = 1 if args.quick else args.repeats
    print(
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"{args.attempts} attempts per series, {repeats} repeats, seconds min/median/max"
    )
    for pause in (0.0, args.pause):
        times = {jobs: [] for jobs in (1, 2, 4)}
        for _ in range(repeats):
            for jobs in times:
                times[jobs].append(series_seconds(args.attempts, jobs, pause))
        base = min(times[1])
        for jobs, seconds in times.items():
            spread = "/".join(
                f"{t:.2f}" for t in (min(seconds), statistics.median(seconds), max(seconds))
            )
            print(
                f"pause {pause:.1f} s  --jobs {jobs}  {spread:>20}  "
                f"{base / min(seconds):.2f}x faster than --jobs 1"
            )


if __name__ == "__main__":
    main()
