"""CLI: replay saved recordings offline and check that each one still happens the same way.

For each recording: refuse it if it is not a recording or the sample changed since; copy
`sample_repo/` to a fresh temporary directory; feed the saved model calls to the real loop
(an error or a missing `done` replays as such); let the real tools act and run the real
tests independently; then compare, event by event and request by request, with what was
recorded (the final tests' verdict and counts included), and say precisely where anything
differs.

Replaying a recording runs its edits: code someone else's recording put in path_rules.py
runs in the tests. So the tests are isolated by default (isolation.py), whatever isolation
the recording was made with; `--no-isolate` runs them with your permissions.

Not here: a model, the network or the ollama SDK. Timings are shown, never compared.
"""

import argparse
import sys
from pathlib import Path

# first: Ctrl-C during the slow imports below exits quietly, and a .venv/ changed since lab.py
# built it is refused before any of its packages is imported (plumbing/installed_files.py)
from plumbing import installed_files, quiet_interrupt

# isort: split

from agent_loop import DEADLINE, INTERRUPTED, MODEL_START, STOPPED, AgentLoop
from extensions import Extensions
from harness.chats import ReplayChat
from harness.console import made_by, tolerant_output, verdict_lines
from harness.decisions import decisions_of
from harness.divergence import divergences
from harness.driver import Cut, Plan, drive
from harness.fork import RecordedFork
from harness.old_recordings import as_made
from harness.recording import RECORDINGS, load
from harness.recording_checks import RecordingError
from harness.recording_format import call_api
from harness.replayable import check_isolation, check_sample
from harness.tasks import assess, given_source, task_of, tests_for
from harness.timeline import timeline
from harness.transcript import ChunkLog, chunk_lines, full_request_lines, request_lines
from plumbing.exit_codes import EVERY_PROGRAM, EXIT_ERROR, EXIT_NO, EXIT_OK, run_program
from plumbing.isolation import isolation_flags, notice
from plumbing.limits import positive_int
from repo_tools import RepoTools

# What replay_one says of one recording; main() exits with the highest code of them.
REPRODUCED, DIVERGED, CANNOT_REPLAY = "reproduced", "diverged", "cannot replay"
EXIT_CODES = {REPRODUCED: EXIT_OK, DIVERGED: EXIT_NO, CANNOT_REPLAY: EXIT_ERROR}
TURNS, FULL = "turns", "full"  # the two views of --transcript
NO_ISOLATE_HELP = (
    "run the recording's edits and the tests with your permissions (default: isolated with "
    "bubblewrap where it works, and then nothing is said about it; else with only the network "
    "cut by unshare (as root, as a user of its own: no write to your files), or unisolated, "
    "each said in a line at the start, and then only the lab's own recordings are replayed; "
    "whatever the recording was made with)"
)


def parse_args(argv):
    parser = argparse.ArgumentParser(
        allow_abbrev=False,  # `--trans x.json` would escape the --transcript rewrite below
        description="Replay saved recordings offline through the real loop, tools and tests.",
        epilog="exit codes: 0 every recording reproduces; 1 at least one diverges; "
        "2 at least one cannot be replayed (not a recording, or the sample changed), or .venv/ "
        "changed since lab.py built it; "
        f"the highest applies; {EVERY_PROGRAM}",
    )
    parser.add_argument(
        "recordings",
        nargs="*",
        type=Path,
        metavar="RECORDING",
        help="recording files (default: the walk-through, every recordings/*.json; the "
        "subfolders' and your own runs/ only when named)",
    )
    isolation_flags(parser, NO_ISOLATE_HELP)  # --no-isolate, --isolate (plumbing/isolation.py)
    parser.add_argument(
        "--transcript",
        nargs="?",
        const=TURNS,
        choices=(TURNS, FULL),
        help="also print what the model was sent: each request where its turn starts, as the "
        "messages new since the request before, tool results as text (--transcript); or "
        "every request whole after the run, as close to the wire as the recording's API "
        "allows (--transcript=full)",
    )
    parser.add_argument(
        "--chunks",
        type=positive_int,
        metavar="N",
        help="also print turn N's chunks, one per line, as the adapter handed them to the loop",
    )
    # subtle: `--transcript recordings/x.json` must not take the recording for its value.
    argv = list(sys.argv[1:] if argv is None else argv)
    for i, arg in enumerate(argv[:-1]):
        if arg == "--":
            break  # what follows is recordings, whatever their names
        if arg == "--transcript" and argv[i + 1] not in (TURNS, FULL):
            argv[i] = f"--transcript={TURNS}"
    return parser.parse_args(argv)


def assembler(recording):
    """The adapter's own normaliser for a wire whose raw events were recorded, else None."""
    if any(call_api(recording, saved) == "openai" for saved in recording["model_calls"]):
        from openai_model import chunks_from_events  # only when needed: standard library only

        return chunks_from_events
    return None


def shown(path):
    """`path` relative to the current directory when it is under it: shorter to read."""
    try:
        return Path(path).resolve().relative_to(Path.cwd())
    except ValueError:
        return path


def replay_one(path, transcript=None, isolate=True, out=None, chunks=None, explain=True):
    """Replay one recording; print what happens; return REPRODUCED, DIVERGED or CANNOT_REPLAY.

    `transcript` is None, TURNS or FULL (see --transcript); `chunks` a turn's number; `out`
    where to print (None: sys.stdout when each line is printed, after tolerant_output());
    `explain`: say what the held-out words mean under its starting verdict (the first
    recording of a command's only)."""
    try:
        recording = load(path)
        check_sample(recording, path)
        check_isolation(path, isolate)
        made = as_made(recording)  # the edit tool, the held-out draw, what one-shot said
        extensions = Extensions.of(recording, path=path, says_unchanged=made.says_unchanged)
    except RecordingError as error:
        print(f"error: {error}", file=sys.stderr)
        return CANNOT_REPLAY
    print(f"Recording: {shown(path)}  |  {made_by(recording)}", file=out)
    starting = verdict_lines("Starting verdict (recorded)", recording["starting_tests"], explain)
    print("\n".join(starting), file=out)
    # An interrupted or deadline-stopped run is replayed up to where it was stopped: what the
    # clock or the user did then cannot be replayed, everything before it can.
    reason = recording["stop"]["reason"]
    cut_short = reason in (INTERRUPTED, DEADLINE)
    expected = [e for e in recording["events"] if not (cut_short and e["type"] == STOPPED)]
    chat = ReplayChat(
        recording["model_calls"], assembler(recording), recording.get("api", "ollama")
    )
    chunk_log = ChunkLog(chat, chunks, lambda line: print(line, file=out))  # --chunks N
    calls = len(recording["model_calls"])
    cut = None
    if cut_short:
        cut = Cut(events=len(expected), requests=calls, made=chat.requests,
                  deadline=reason == DEADLINE)  # fmt: skip
    fork = RecordedFork(recording["fork"]) if recording.get("fork") else None
    plan = Plan(
        task=recording["task"],
        system=recording["system"],
        max_turns=recording["max_turns"],
        tests=tests_for(task_of(recording)),  # the test file its task gave, if not the sample's
        source=task_of(recording).source,  # ... and its path_rules.py
        helpers=dict(task_of(recording).helpers) or None,  # ... and its modules beside it
        text_calls=recording.get("text_calls", False),  # --text-calls when it was recorded
        isolate=isolate,
        asked=made.asked,  # the same generated inputs as when recorded
    )
    watch = extensions.watch(watcher(transcript, out), out)
    final = recording["final_tests"] is not None
    # RepoTools as it was, inside the recording's extensions if any; its verdict's draw
    tools = extensions.tools(made.tools(RepoTools))
    run = drive(extensions.chat(chunk_log), plan, out, loop=extensions.loop(AgentLoop),
                tools=tools, judge=made.judge, final=final, fork=fork, watch=watch,
                cut=cut, prefix="agent-lab-replay-")  # fmt: skip
    if run.interrupted:  # Ctrl-C: nothing to compare; main() says so and exits 130
        raise KeyboardInterrupt
    if cut_short:
        run.printer.stop_line(recording["stop"])
    decided = extensions.recorded()  # what its extensions decided today
    return compared(recording, expected, run, chat, chunk_log, transcript, chunks, out, decided)


def watcher(transcript, out):
    """What a replay prints after an event besides the event: the request each turn sends
    (--transcript). A turn's chunks (--chunks N) are printed by the ChunkLog, as it begins."""
    sent = []

    def watch(event, messages):
        nonlocal sent
        if event["type"] == MODEL_START and transcript == TURNS:
            # The loop appends before it yields (and a fork's changes are made by now):
            # its messages are the request it sends.
            print("\n".join(request_lines(event["turn"], messages, sent)), file=out)
            sent = list(messages)

    return watch


def compared(recording, expected, run, chat, chunk_log, transcript, chunks, out, decided=None):
    """Print how the replay ended, then compare it with `recording`; return the outcome.
    `decided`: what the extensions decided today (their recording field), None: none on."""
    events, final = run.events, run.final
    print("\n".join(verdict_lines("Independent verdict", final)), file=out)
    after = {"messages": run.messages, "tests_unchanged": run.tests_unchanged}
    after["extensions"] = decided
    task = task_of(recording)
    if final is not None and task.impossible:
        stop = run.stop or recording["stop"]
        starting = recording["starting_tests"]  # recorded: replay runs no starting verdict
        ran = (final, run.tests_unchanged, stop["reason"], run.messages, events)
        found = assess(task, starting, *ran, (decided or {}).get("decisions", []))
        after["outcome"] = found.outcome
        print(found.line(), file=out)
    run.printer.changes(run.source, *given_source(task_of(recording)))
    # subtle: after the verdict, not before: the description says how the attempt ends,
    # and a learner predicting the outcome should not read it first.
    print(f"About this recording: {recording['description']}", file=out)
    today = final["seconds"] if final else None
    lines = timeline(events, recording["events"], today, model_info=recording["model"],
                     decisions=(decided or {}).get("decisions"),
                     recorded_decisions=decisions_of(recording))  # fmt: skip
    print("\n".join(lines), file=out)
    if transcript == FULL:
        print("\n".join(full_request_lines(recording, chat.requests, RepoTools.schemas)), file=out)
    if chunks and len(chunk_log.calls) < chunks:  # no such call was made: say so
        print("\n".join(chunk_lines(chunks, chunk_log.calls)), file=out)
    got = (events, chat.requests, run.source, final, run.workdir, after)
    problems = divergences(recording, expected, *got)
    if not problems:
        print("reproduced", file=out)
        return REPRODUCED
    print(f"DIVERGED ({len(problems)}):", file=out)
    for problem in problems:
        print(f"  {problem}", file=out)
    return DIVERGED


def main(argv=None):
    quiet_interrupt.ready()
    tolerant_output()
    problem = installed_files.changed()  # asked at import already, where this is a program
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_ERROR
    args = parse_args(argv)
    paths = args.recordings or sorted(RECORDINGS.glob("*.json"))
    if notice(args.isolate):
        print(notice(args.isolate))
    if not paths:
        print(f"error: no recordings given and none in {RECORDINGS}", file=sys.stderr)
        return EXIT_ERROR
    outcomes = []
    for number, path in enumerate(paths):
        if number:
            print()
        outcomes.append(replay_one(path, args.transcript, args.isolate, chunks=args.chunks,
                                   explain=not number))  # fmt: skip
    print(
        f"\nReplayed {len(paths)} recording(s): {outcomes.count(REPRODUCED)} reproduced, "
        f"{outcomes.count(DIVERGED)} diverged, "
        f"{outcomes.count(CANNOT_REPLAY)} could not be replayed"
    )
    return max(EXIT_CODES[outcome] for outcome in outcomes)


if __name__ == "__main__":
    run_program(main)  # exits; Ctrl-C (the test process group killed on the way out) is 130
