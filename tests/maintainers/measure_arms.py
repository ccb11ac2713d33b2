"""Maintainers: the figures of a measurement's arms, each a folder of real recordings.

    python3 lab.py run tests/maintainers/measure_arms.py FOLDER [FOLDER ...]
    python3 lab.py run tests/maintainers/measure_arms.py --stamp FOLDER [FOLDER ...]

For each folder (an arm): passed k of n with the 95% Wilson interval (outcomes.py, as
compare.py counts), the prompt tokens of each live request (the `usage` of its last
streamed event: the median over the arm's requests, and each attempt's last request), the
seconds per attempt as recorded (loop and verdicts), how many attempts had a hook undo an
edit, and how many ended with a `path_rules.py` that does not compile. docs/hooks.md
gives the figures of recordings/extensions/ and the commands that made them.

`--stamp` first adds to each recording of the 1.5B model what make_live_recording.py adds
to the ones it makes (the GGUF file by SHA-256, the server's build and flags, the chat
template), for recordings made against a llama-server started by hand with the flags of
docs/own-model.md and `-t 2`; then it rewrites recordings/SHA256SUMS. Not a test.
"""

import argparse
import sys
from pathlib import Path

if __name__ == "__main__":  # run directly, not through lab.py: the lab is one folder up
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from extensions.syntax import compile_problem
from harness.decisions import decisions_of
from harness.model_files import MODELS
from harness.outcomes import final_chunks, outcome, rate, rate_text, stops_text
from harness.recording import load, save, write_shipped_hashes
from plumbing.stats import median
from tests.maintainers.make_live_recording import model_facts
from tests.real_server import LlamaServer, model_file, server_binary


def prompt_tokens(recording):
    """The prompt tokens of each live request, in order (None where the server said none)."""
    return [chunk.get("prompt_eval_count") for chunk in final_chunks(recording)]


def arm_lines(folder):
    paths = sorted(Path(folder).glob("*.json"))
    recordings = [load(path) for path in paths]
    outcomes = [outcome(r) for r in recordings]
    tokens = [prompt_tokens(r) for r in recordings]
    undone = [sum(d["decision"] == "undone" for d in decisions_of(r)) for r in recordings]
    broken = sum(compile_problem(r["final_source"]) is not None for r in recordings)
    seconds = sorted(round(o.seconds) for o in outcomes)
    every = [t for ts in tokens for t in ts if t is not None]
    return [
        f"{folder}: {len(paths)} recordings; {rate_text(*rate(outcomes))}",
        f"  {stops_text(outcomes)}",
        f"  live requests {len(every)}; prompt tokens per request: median {median(every)}, "
        f"range {min(every, default=None)}-{max(every, default=None)}",
        f"  each attempt's last request: {[ts[-1] if ts else None for ts in tokens]}, "
        f"median {median([ts[-1] for ts in tokens if ts and ts[-1] is not None])}",
        f"  seconds per attempt (loop and verdicts, as recorded): median {median(seconds)}, "
        f"each {seconds}",
        f"  a hook undid an edit in {sum(n > 0 for n in undone)} of {len(paths)} attempts "
        f"({sum(undone)} edits undone); ended with path_rules.py not compiling: {broken}",
    ]


def stamp(folders):
    """Add to each recording of a model the lab can fetch (harness/model_files.py) the facts
    that make it repeatable, as served (2 threads, a context of 8,192)."""
    facts = {}
    for path in (p for folder in folders for p in sorted(Path(folder).glob("*.json"))):
        recording = load(path)
        spec = MODELS.get(recording["model"]["name"])
        if spec is None or "gguf" in recording["model"]:
            continue
        if spec.alias not in facts:
            server = LlamaServer(context=8192, threads=2, spec=spec)  # described, never started
            server.binary, server.model = server_binary(), model_file(spec)
            facts[spec.alias] = model_facts(server, spec)
        recording["model"].update(facts[spec.alias], sampling=recording["model"]["options"])
        save(path, recording)
        print(f"stamped {path}")
    write_shipped_hashes()


def main(argv=None):
    parser = argparse.ArgumentParser(description="The figures of each arm (a folder).")
    parser.add_argument("folders", nargs="+", metavar="FOLDER")
    parser.add_argument("--stamp", action="store_true", help="add the model's facts first")
    args = parser.parse_args(argv)
    if args.stamp:
        stamp(args.folders)
    for folder in args.folders:
        print("\n".join(arm_lines(folder)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
