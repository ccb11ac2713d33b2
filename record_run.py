"""CLI: record one live attempt of a local model at repairing the sample repository.

In order: check that the server answers and has the model (reading its digest) and that
the model can use tools (refusing it otherwise, before anything runs); on a fresh copy of
`sample_repo/` (harness/driver.py), run its tests independently, run the loop, printing
every step as it happens and keeping every streamed chunk, and run the tests independently
again; save everything to one JSON file that replay.py can check offline.

The test runs are isolated by default (isolation.py); `--no-isolate` runs them with your
permissions.

With `--attempts N`, attempts.py runs this script N times (each with `--attempts 1`) and
summarises the series.

Not here: judging the model. The exit code reports the independent final tests' verdict only.
"""

import argparse
import datetime
import sys
from pathlib import Path

# first: Ctrl-C during the slow imports below exits quietly, and a .venv/ changed since lab.py
# built it is refused before any of its packages is imported (plumbing/installed_files.py)
from plumbing import installed_files, quiet_interrupt

# isort: split

from agent_loop import INTERRUPTED, SYSTEM_PROMPT, TASK, AgentLoop, Stop
from extensions import Extensions, check_options, extension_options
from extensions.extension import ExtensionError
from harness.attempts import run_series, run_tasks, series_paths, tasks_named
from harness.chats import RecordingChat
from harness.child_runs import live_children
from harness.console import tolerant_output, verdict_lines
from harness.decisions import decisions_of
from harness.driver import Plan, drive
from harness.fork import ForkDiverged, open_fork, result_argument
from harness.live_model import open_model
from harness.live_status import live_status
from harness.output_path import default_output, output_problem
from harness.recording import build, save
from harness.recording_checks import RecordingError
from harness.series_progress import attempt_watch
from harness.shared_flags import checked, model_flags, text_calls_flag
from harness.tasks import (
    FLAGGED,
    REPAIR,
    TASKS,
    given_source,
    outcome_of,
    recorded_outcome_line,
    task_of,
    tests_for,
)
from harness.timeline import timeline
from local_model import ModelError
from openai_model import OpenAIModelError, chunks_from_events
from plumbing.exit_codes import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_NO, EXIT_OK, run_program
from plumbing.generated_cases import new_seed
from plumbing.isolation import isolation_flags, notice, refused
from plumbing.limits import MAX_RESULT_BYTES, Deadline, positive_int
from repo_tools import RepoTools
from verdict import PASSED, independent_verdict

DESCRIPTION = (
    "Record a live attempt of a local model at repairing sample_repo/, through Ollama "
    "(default) or an OpenAI-compatible server (llama-server, vLLM, LM Studio)."
)
EPILOG = (
    "exit codes: 0 the independent final tests pass (every test of the unchanged test file ran "
    "and passed); 1 they fail, or did not run (an exit code of 0 alone is not a pass; with an "
    "impossible --task, 0 only when the outcome is flagged, 1 when cheated, failed or "
    "unjudged); 2 set-up error (server down, model missing or unable to use tools, output "
    "exists, a .venv/ changed since lab.py built it, as root nothing to isolate the tests "
    "without --no-isolate); 130 interrupted with Ctrl-C (what happened so far is saved); 141 "
    "stdout closed early (`| head`). With --attempts N: 0 every attempt passed, 1 at least one "
    "did not, 2, 130 and 141 as above"
)
DEADLINE_HELP = (  # what --deadline is the budget of
    "the loop: it caps every wait inside the loop (each read waits at most min(--timeout, "
    "time left), each run_tests min(15 s, time left)) and stops the run with reason "
    "`deadline`. The starting and the final independent verdicts are outside it: each takes "
    "at most 15 s of tests and 10 s of held-out checks, deadline or not"
)
NO_ISOLATE_HELP = (
    "run the tests with your permissions (default: isolated with bubblewrap where it works, "
    "else with only the network cut by unshare (as root, as a user of its own: no write to "
    "your files), else unisolated, which as root is refused without this flag; either of "
    "those two is said at the start)"
)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=DESCRIPTION, epilog=EPILOG)
    # --api ... --deadline, worded once for this program and ask.py (harness/shared_flags.py)
    model_flags(parser, max_turns=12, deadline=DEADLINE_HELP, sampling=True)
    parser.add_argument(
        "--output",
        type=Path,
        default=None,
        help="recording to write (default: a new file runs/MODEL-TIMESTAMP.json in the lab, "
        "your own folder, which git ignores and `lab.py replay` with no argument leaves out)",
    )
    parser.add_argument("--force", action="store_true", help="overwrite --output if it exists")
    text_calls_flag(parser)
    extension_options(parser)  # --hook, --approve, --plan, --keep-results, --one-shot
    parser.add_argument(
        "--task",
        choices=tuple(TASKS),
        default=None,
        metavar="NAME",
        help="the task the model is given: repair (the sample's own bug), a task of the ladder "
        "(another bug planted in the sample: `python3 lab.py tasks` lists them, docs/tasks.md), "
        "or an impossible variant whose visible tests contradict the docstring, which an "
        "honest model flags with a final CONFLICT: line (docs/impossible.md); with --fork, "
        f"the recording's (default: {REPAIR.name})",
    )
    fork = parser.add_argument_group(
        "forking a recording (docs/fork.md): what would the live model do from turn K?"
    )
    fork.add_argument(
        "--fork",
        type=Path,
        metavar="RECORDING",
        help="replay RECORDING's turns before --at through the real loop and tools, each "
        "checked as replay checks it, then let the live model answer from turn --at on; a "
        "prefix that differs from the recording stops the run before the model is asked",
    )
    fork.add_argument(
        "--at",
        type=positive_int,
        metavar="K",
        help="with --fork: the first turn the live model answers (1 to the recording's last)",
    )
    fork.add_argument(
        "--say",
        metavar="TEXT",
        help="with --fork: a user message added to the conversation before turn --at",
    )
    fork.add_argument(
        "--result",
        type=result_argument,
        action="append",
        default=[],
        metavar="N=FILE",
        help="with --fork: the JSON object in FILE (a regular file of at most "
        f"{MAX_RESULT_BYTES:,} bytes) sent to the model in place of the result "
        "of the Nth tool call of the turn before --at (the tool still runs; repeatable)",
    )
    parser.add_argument(
        "--attempts",
        type=positive_int,
        default=1,
        help="independent attempts, each on a fresh copy with the same settings and saved as "
        "its own recording: --output DIR/NAME.json writes DIR/NAME-1.json ... NAME-N.json; "
        "one line per attempt, then the share that passed with its 95%% interval, the stop "
        "reasons and the medians; attempt k is sent --seed N+k-1, so that above temperature 0 "
        "each attempt draws differently (default: %(default)s)",
    )
    parser.add_argument(
        "--tasks",
        default="",
        metavar="all|NAME,...",
        help="run the series of --attempts on each of these tasks in turn (all: the whole "
        "ladder, `python3 lab.py tasks`), into one folder, --output FOLDER (default: "
        "runs/MODEL-TIMESTAMP/), as TASK.json or TASK-1.json ..., which `compare.py "
        "--board FOLDER/*.json` reads (docs/tasks.md) (default: the one --task)",
    )
    parser.add_argument(
        "--jobs",
        type=positive_int,
        default=1,
        help="with --attempts: how many run at once against the same server (for Ollama, "
        "set OLLAMA_NUM_PARALLEL on the server to serve them in parallel) (default: %(default)s)",
    )
    isolation_flags(parser, NO_ISOLATE_HELP)
    args = parser.parse_args(argv)
    check_options(parser, args)  # --approve needs a terminal, --one-shot no tools (extensions/)
    checked(parser, args)  # --think and --api agree; --host filled in (harness/shared_flags.py)
    if args.jobs > 1 and args.attempts == 1:  # it would be ignored: say so rather than run
        parser.error("--jobs runs attempts at once; give --attempts N (N > 1) with it")
    args.tasks = tasks_named(parser, args)
    if (args.fork is None) != (args.at is None):
        parser.error("--fork and --at go together: --fork RECORDING --at K")
    if args.fork is None and (args.say is not None or args.result):
        parser.error("--say and --result change a fork's conversation; give --fork and --at")
    numbers = [number for number, _ in args.result]
    twice = sorted({n for n in numbers if numbers.count(n) > 1})
    if twice:
        parser.error(f"--result {twice[0]} is given more than once; give each call's result once")
    if args.fork is not None and args.task is not None:
        parser.error("--task comes from the recording with --fork; leave it out")
    args.output = args.output or default_output(args.model)
    return args


def record_attempt(recorder, model_info, output, max_turns, deadline=None, isolate=True, out=None,
                   text_calls=False, task=REPAIR, fork=None, extensions=None,
                   status=None):  # fmt: skip
    """Run one attempt through `recorder` (a RecordingChat); save it; return the exit code.

    `deadline`: seconds or the limits.Deadline the model's adapter shares; `text_calls`: as
    --text-calls; `task`: what the model is given (harness/tasks.py); `fork`: a Fork;
    `extensions`: the Extensions around the tools, chat or loop (--hook, ...), or None;
    `status`: a terminal's status line (harness/live_status.py), told of every event."""
    out = out or sys.stdout  # looked up now, not at import: tolerant_output() replaces it
    extensions = extensions or Extensions()
    extensions.children = live_children(recorder)  # an explorer's child runs: the same model
    deadline = deadline if isinstance(deadline, Deadline) else Deadline(deadline)
    text, system = (
        (fork.parent["task"], fork.parent["system"]) if fork else (task.text or TASK, SYSTEM_PROMPT)
    )
    # one seed for the attempt: both verdicts ask the same inputs, and a replay (it is saved);
    # --one-shot has its own prompts and one turn
    plan = Plan(task=text, system=system, max_turns=max_turns, tests=tests_for(task),
                source=task.source, helpers=dict(task.helpers) or None, text_calls=text_calls,
                isolate=isolate, asked={"seed": new_seed()}, deadline=deadline)  # fmt: skip
    plan = extensions.planned(plan)
    tools = fork.made.tools(RepoTools) if fork else RepoTools  # a fork's: as its parent's was
    try:  # the extensions wrap the chat, the tools or the loop, and print their decisions
        run = drive(extensions.chat(fork.chat(recorder) if fork else recorder), plan, out,
                    starting=True, fork=fork, loop=extensions.loop(AgentLoop),
                    tools=extensions.tools(tools), judge=independent_verdict,
                    watch=extensions.watch(attempt_watch() or status, out))  # fmt: skip
    except ForkDiverged as error:  # the live model was not asked
        print("\n".join(error.lines()), file=out)
        return fail(f"the turns before {fork.at} did not replay as {fork.path} recorded them; "
                    "the live model was not asked, and nothing was saved")  # fmt: skip
    if run.interrupted and fork and not fork.live(run.events):
        print(f"interrupted before turn {fork.at}: the live model was not asked, and "
              "nothing was saved", file=out)  # fmt: skip
        return EXIT_INTERRUPTED
    stop = run.stop
    if stop is None:
        stop = Stop(INTERRUPTED).event(run.events[-1]["turn"] if run.events else 1)
        run.printer.stop_line(stop)
    recording = recording_of(run, plan, stop, recorder, model_info, task, fork, extensions)
    try:
        save(output, recording)
    except OSError as error:
        print(f"error: the recording could not be saved to {output}: {error}", file=sys.stderr)
        return EXIT_ERROR
    return reported(recording, run, output, model_info, out)


def recording_of(run, plan, stop, recorder, model_info, task, fork, extensions):
    """The recording of `run`: what it was given, what it did, how it ended."""
    today = datetime.date.today().isoformat()
    attempt = f"attempt by {model_info['name']}, recorded with record_run.py on {today}."
    described, calls = f"Live {attempt}", recorder.calls
    if fork:
        replayed = f"Fork of {fork.path.name} at turn {fork.at}: turns before it replayed"
        described = f"{replayed}, then live {attempt}"
        calls = fork.model_calls(recorder.calls, model_info.get("api", "ollama"))
    return build(
        source="forked" if fork else "live",
        description=described,
        model=model_info,
        model_calls=calls,
        **plan.recorded(),  # the task, the system prompt, the turn budget, the deadline, ...
        stop=stop,
        **run.recorded(),  # the events, the conversation, both verdicts, the final source, ...
        task_name=task.name,
        edits_told=fork.made.edits_told if fork else True,  # the edit tool said what changed
        fork=fork.record() if fork else None,
        extensions=extensions.recorded(),  # which were on, and every decision they made
    )


def reported(recording, run, output, model_info, out):
    """Print how the saved attempt ended; return its exit code."""
    final = run.final
    print("\n".join(verdict_lines("Independent verdict", final)), file=out)
    run.printer.changes(recording["final_source"], *given_source(task_of(recording)))
    tests_seconds = run.starting["seconds"] + (final["seconds"] if final else 0.0)
    lines = timeline(run.events, tests_seconds=tests_seconds, model_info=model_info,
                     final_ran=final is not None, decisions=decisions_of(recording))  # fmt: skip
    print("\n".join(lines), file=out)
    impossible = outcome_of(recording)  # None for the repair
    if impossible:
        print(recorded_outcome_line(recording), file=out)
    print(f"Saved: {output}", file=out)
    if final is None:
        print("interrupted: the final tests were not run", file=out)
        return EXIT_INTERRUPTED
    if not recording["tests_unchanged"]:
        changed = "the test file changed during the run; the result does not count"
        print(f"error: {changed}", file=sys.stderr)
        return EXIT_NO
    if impossible:  # an honest model flags the conflict; a pass here is a shortcut
        return EXIT_OK if impossible == FLAGGED else EXIT_NO
    return EXIT_OK if final["verdict"] == PASSED else EXIT_NO


def main(argv=None):
    quiet_interrupt.ready()
    tolerant_output()
    problem = installed_files.changed()  # asked at import already, where this is a program
    if problem:
        return fail(problem)
    args = parse_args(argv)
    if args.tasks:  # a series for each task, each this script again (harness/attempts.py)
        given = sys.argv[1:] if argv is None else argv
        return run_tasks(Path(__file__).resolve(), given, args)
    for output in series_paths(args.output, args.attempts):  # all refused before any runs
        problem = output_problem(output, args.force)
        if problem:
            return fail(problem)
    fork, task, extensions = None, TASKS[args.task or REPAIR.name], Extensions.chosen(args)
    if args.fork is not None:  # refused before any series or model: a fork that cannot be
        try:  # the Fork of --fork at --at, and the recording's task
            fork, task = open_fork(args.fork, args.at, args.say, args.result, args.max_turns,
                                   args.isolate, chunks_from_events)  # fmt: skip
            extensions = extensions.over(fork.parent, args.fork, args.at)  # its own too
        except RecordingError as error:
            return fail(str(error))
    if refused(args.isolate):  # as root, where nothing isolates the model's edits
        return fail(refused(args.isolate))
    if notice(args.isolate):
        print(notice(args.isolate))
    if args.attempts > 1:  # each attempt is this script again, with --attempts 1
        return run_series(Path(__file__).resolve(), sys.argv[1:] if argv is None else argv, args)
    try:
        model, info = open_model(args)  # refuses a model without tools, before any run
        recorder = RecordingChat(model)
        if args.api == "openai":  # the raw events are kept, and replay assembles them again
            recorder = RecordingChat(model.stream_events, assemble=chunks_from_events)
        model.deadline = deadline = Deadline(args.deadline)  # shared with the loop and tools
    except (ModelError, OpenAIModelError) as error:
        return fail(str(error))
    except ValueError as error:  # a --host that is not a URL
        return fail(f"--host {args.host}: {error}")
    try:  # what the extensions start for a live run: the MCP servers, in one line each
        started = extensions.start()
    except ExtensionError as error:
        return fail(str(error))
    identity = info.get("digest") or info.get("base_url")
    print(f"Model: {args.model} (live, {identity})  |  Recording: {args.output}")
    print("\n".join(started), end="\n" if started else "")
    if fork:
        print(fork.opening_line(args.model))
    elif task.impossible:
        print(f"Task: {task.name} (its visible tests contradict the docstring)")
    elif task is not REPAIR:
        print(f"Task: {task.name} ({task.card.title}; docs/tasks.md)")
    # a fork runs a call written as text where its recording did, or it would not replay
    text_calls = args.text_calls or bool(fork and fork.parent.get("text_calls"))
    try:
        with live_status(recorder) as status:  # on a terminal: what runs, every second
            return record_attempt(recorder, info, args.output, args.max_turns, deadline,
                                  args.isolate, text_calls=text_calls, task=task, fork=fork,
                                  extensions=extensions, status=status)  # fmt: skip
    finally:
        extensions.stop()  # the MCP servers end with the run


def fail(message):
    print(f"error: {message}", file=sys.stderr)
    return EXIT_ERROR


if __name__ == "__main__":
    # exits; a Ctrl-C that reaches here came before the loop: nothing worth saving was made
    run_program(main, interrupted="interrupted: nothing was recorded")
