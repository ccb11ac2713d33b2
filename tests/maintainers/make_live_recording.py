"""Maintainers: record the shipped live attempts of real models (recordings/*-live*.json).

    python3 lab.py run tests/maintainers/make_live_recording.py [--model ALIAS] [--attempts N] \
        [--output PATH] [--force] [--max-tokens N] [--max-turns N] [-- RECORD_RUN_OPTION ...]

Starts the real llama.cpp `llama-server` with the model named (real_server.py's MODELS,
fetched into `.cache/models/` on first use; with its chat template where it needs one),
runs the real `record_run.py --api openai` against it as a subprocess (`--attempts N`: a
series, NAME-1.json ... NAME-N.json), and then adds to each recording's model info what
makes it repeatable: the model file's name, size and SHA-256, where it came from, its
licence, the chat template's name and SHA-256, the server's build (`llama-server
--version`) and flags, and the sampling settings the requests carried. The description is
written from what happened. An output that exists is replaced only with --force (the default
names are the shipped recordings'), and that is checked before the server starts.

Not here: judging the attempt, or hand-written chunks (make_recordings.py makes those).
"""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

if __name__ == "__main__":  # run directly, not through lab.py: the lab is one folder up
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from agent_loop import TOOL_START
from harness.attempts import series_paths
from harness.console import verdict_lines
from harness.recording import RECORDINGS, save, write_shipped_hashes
from tests.real_server import (
    ANSWER_TOKENS,
    MODEL,
    MODELS,
    SERVER,
    LlamaServer,
    Unavailable,
    server_version,
    sha256_of,
)

HERE = Path(__file__).resolve().parents[2]


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="Record real models' attempts against a real llama-server (see "
        "real_server.py for the models and the server, and how to use your own).",
        epilog="exit codes: 0 recorded (whatever the model did); 2 an output exists (without "
        "--force), the server or model cannot be had, or record_run.py failed to record",
    )
    parser.add_argument(
        "--model",
        choices=sorted(MODELS),
        default=MODEL.alias,
        help="the model to serve (default: %(default)s)",
    )
    parser.add_argument(
        "--output",
        type=Path,
        help="recording to write; with --attempts N, NAME-1.json ... NAME-N.json (default: the "
        "model's shipped recording in recordings/, so --force is needed to remake it)",
    )
    parser.add_argument(
        "--force", action="store_true", help="replace outputs that exist (default: refuse)"
    )
    parser.add_argument(
        "--max-tokens",
        type=int,
        default=ANSWER_TOKENS,
        metavar="N",
        help="output budget of each answer (default: %(default)s)",
    )
    parser.add_argument(
        "--max-turns", type=int, default=12, metavar="N", help="turns (default: %(default)s)"
    )
    parser.add_argument(
        "--attempts", type=int, default=1, metavar="N", help="attempts (default: %(default)s)"
    )
    parser.add_argument(
        "--context",
        type=int,
        default=8192,
        metavar="N",
        help="the server's -c (default: %(default)s)",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=SERVER["threads"],
        metavar="N",
        help="the server's -t: 1 on a machine busy with other work (default: %(default)s)",
    )
    parser.add_argument(
        "record_run",
        nargs="*",
        metavar="-- RECORD_RUN_OPTION",
        help="more options for record_run.py, after --",
    )
    args = parser.parse_args(argv)
    args.spec = MODELS[args.model]
    args.output = args.output or RECORDINGS / args.spec.recording
    return args


def describe(recording, spec, settings):
    """What the attempt shows, from the recording itself."""
    calls = sum(1 for event in recording["events"] if event["type"] == TOOL_START)
    return (
        f"A real model's attempt: {spec.file_name} ({spec.licence}), served by llama.cpp's "
        f"llama-server (MIT; {' '.join(settings)}), recorded over the OpenAI-compatible wire by "
        f"make_live_recording.py with the real record_run.py. It made {calls} tool call(s) "
        f"and stopped with {recording['stop']['reason']}; the independent verdict: "
        f"{verdict_words(recording['final_tests'])}. {spec.about} Each answer is bounded by "
        f"max_tokens {recording['model']['options']['max_tokens']}."
    )


def verdict_words(final):
    """'failed (visible tests: 3 of 4 passed, 1 failed; held-out checks: 7 of 10 passed ...)'"""
    verdict, *parts = verdict_lines("verdict", final)
    return f"{verdict.removeprefix('verdict: ')} ({'; '.join(p.strip() for p in parts)})"


def model_facts(server, spec):
    """What makes the recording repeatable: the file, the template, the server and its flags."""
    facts = {
        "gguf": {
            "file": server.model.name,
            "bytes": server.model.stat().st_size,
            "sha256": sha256_of(server.model),
            "from": spec.source,
        },
        "licence": spec.licence,
        "server_build": server_version(server.binary),
        "server_flags": server.settings(),
    }
    if spec.template:
        facts["chat_template"] = {
            "file": spec.template,
            "sha256": sha256_of(spec.template_path),
            "what": "the model's own template, with the tools offered and earlier calls "
            "written as fenced JSON blocks, so llama-server parses and streams its calls",
        }
    return facts


def main(argv=None):
    args = parse_args(argv)
    spec, outputs = args.spec, series_paths(args.output, args.attempts)
    existing = [output for output in outputs if os.path.lexists(output)]
    if existing and not args.force:
        print(f"error: {existing[0]} exists; pass --force to replace it", file=sys.stderr)
        return 2
    try:
        server = LlamaServer(context=args.context, threads=args.threads, spec=spec)
        with server:
            command = [sys.executable, str(HERE / "record_run.py"), "--api", "openai"]
            command += ["--host", server.base_url, "--model", spec.alias]
            command += ["--max-tokens", str(args.max_tokens), "--max-turns", str(args.max_turns)]
            command += ["--attempts", str(args.attempts), "--output", str(args.output)]
            command += ["--force", *args.record_run]
            finished = subprocess.run(command, capture_output=True, text=True)
            facts = model_facts(server, spec)
    except Unavailable as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if finished.returncode not in (0, 1) or not all(path.exists() for path in outputs):
        print(f"error: record_run.py failed:\n{finished.stdout}{finished.stderr}", file=sys.stderr)
        return 2
    for output in outputs:
        recording = json.loads(output.read_text(encoding="utf-8"))
        recording["model"].update(facts)
        recording["model"]["sampling"] = recording["model"]["options"]  # what every request carried
        recording["description"] = describe(recording, spec, facts["server_flags"])
        save(output, recording)
        print(f"{output}: stop {recording['stop']['reason']}, verdict "
              f"{verdict_words(recording['final_tests'])}")  # fmt: skip
    if any(Path(output).resolve().is_relative_to(RECORDINGS) for output in outputs):
        write_shipped_hashes()  # a shipped recording: replay trusts it where nothing isolates
    return 0


if __name__ == "__main__":
    sys.exit(main())
