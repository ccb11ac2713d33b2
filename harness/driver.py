"""One run of the loop on a fresh copy of the sample: what record_run.py and replay.py share.

`drive(chat, plan)` copies `sample_repo/` (with the task's test file) to a new temporary
folder, runs the starting verdict there when asked, builds the tools and the loop around
`chat`, makes a fork's changes to the conversation at the turns they name (through the loop:
`AgentLoop.change_conversation`), shows every event as it comes, and runs the independent
final verdict. It returns what happened, a `Run`; the programs say what that means:
record_run.py saves it as a recording and picks its exit code, replay.py compares it with
the recording it replayed.

Not here: a model (the caller gives `chat`: live, recorded or a fork of both), saving,
comparing, exit codes, options.
"""

import time
from dataclasses import dataclass

from agent_loop import MODEL_DONE, MODEL_START, STOPPED
from harness.console import RunPrinter, verdict_lines
from harness.fork import make_changes
from harness.recording import sha256_file
from plumbing.isolation import chosen
from plumbing.sample import SOURCE_FILE, TEST_FILE, copy_sample, final_source, tests_unchanged
from plumbing.scratch import scratch_folder
from plumbing.stop_cause import LastTurn


@dataclass(frozen=True, kw_only=True)
class Plan:
    """What a run is given, each part by its name. `tests` and `source`: the task's test
    file and path_rules.py (bytes), None for the sample's own; `helpers`: its modules
    beside path_rules.py ({name: bytes}), None for none; `asked`: the generated
    inputs both verdicts ask (`independent_verdict`'s seed and count); `deadline`: a
    limits.Deadline the model's adapter shares, or None."""

    task: str
    system: str
    max_turns: int
    tests: bytes | None = None
    source: bytes | None = None
    helpers: dict | None = None
    text_calls: bool = False
    isolate: bool = True
    asked: dict | None = None
    deadline: object = None

    def recorded(self):
        """What a recording keeps of the plan, under the names it keeps them by."""
        return {
            "task": self.task,
            "system": self.system,
            "max_turns": self.max_turns,
            "deadline": self.deadline.seconds if self.deadline is not None else None,
            "isolation": chosen(self.isolate),
            "text_calls": self.text_calls,
        }


@dataclass(frozen=True, kw_only=True)
class Cut:
    """Where a replay of a run that the clock or Ctrl-C stopped ends (replay.py): after
    `events` events, the ones recorded before the stop. What the clock or the user did then
    cannot be replayed; everything before it can."""

    events: int
    requests: int  # the model calls the recording holds
    made: list  # the requests the replaying chat was sent so far (ReplayChat.requests)
    deadline: bool  # the clock stopped it (not Ctrl-C)


@dataclass(frozen=True, kw_only=True)
class Run:
    """What happened in one run on a fresh copy (the copy itself is gone), each part by its
    name: a part added or moved cannot shift the others."""

    events: list  # every event the loop yielded (up to the cut)
    messages: list  # the conversation, as the loop left it
    starting: dict | None  # the starting verdict, when one was asked for
    final: dict | None  # the independent final verdict; None: not asked for, or interrupted
    source: str  # path_rules.py as the run left it
    tests_unchanged: bool
    workdir: str  # where the copy was: the paths the events hold begin with it
    sha256: dict  # of the copy's "tests" and "source" files, before the run
    seconds: float  # the loop's, up to its stop or Ctrl-C
    interrupted: bool  # Ctrl-C ended the run
    printer: RunPrinter  # what showed the events: it counts them, and prints a stop or changes

    def recorded(self):
        """What a recording keeps of the run, under the names it keeps them by."""
        return {
            "messages": self.messages,
            "events": self.events,
            "starting_tests": self.starting,
            "final_tests": self.final,
            "tests_sha256": self.sha256["tests"],
            "source_sha256": self.sha256["source"],
            "tests_unchanged": self.tests_unchanged,
            "final_source": self.source,
            "workdir": self.workdir,
            "loop_seconds": self.seconds,
        }

    @property
    def stop(self):
        """The loop's `stopped` event, or None when the run was cut or interrupted first."""
        last = self.events[-1] if self.events else {}
        return last if last.get("type") == STOPPED else None


def drive(chat, plan, out=None, *, loop, tools, judge, starting=False, final=True, fork=None,
          watch=None, cut=None, prefix="agent-lab-"):  # fmt: skip
    """Run `plan` once on a fresh copy, the model's turns from `chat`; print as it goes.

    `loop`, `tools` and `judge` come from the program (agent_loop.AgentLoop,
    repo_tools.RepoTools and verdict.independent_verdict, each maybe wrapped: in the
    extensions a run turns on, or as a recording of an older format was made,
    harness/old_recordings.py).

    `starting`: run and print the starting verdict first; `final`: run the final one (never
    after Ctrl-C). `fork` (harness/fork.py: a Fork, or a RecordedFork to replay one): its
    changes are made at the turns they name; at its turn it is `reached` first, and a live
    fork raises ForkDiverged there, or after the loop, when its replayed turns went another
    way. `watch(event, messages)` is called after each event is shown (replay.py's
    --transcript and --chunks); `cut`: where a replay ends (see Cut). Ctrl-C ends the loop
    or the final verdict: the Run says `interrupted` and holds what happened until then.
    """
    asked = plan.asked or {}
    with scratch_folder(prefix=prefix) as scratch:
        repo = copy_sample(scratch, source=plan.source, tests=plan.tests, helpers=plan.helpers)
        sha256 = {"tests": sha256_file(repo / TEST_FILE), "source": sha256_file(repo / SOURCE_FILE)}
        begun = None
        if starting:
            begun = judge(repo, plan.isolate, **asked, tests=plan.tests, helpers=plan.helpers)
            print("\n".join(verdict_lines("Starting verdict", begun, explained=True)), file=out,
                  flush=True)  # fmt: skip
        chat = LastTurn(chat)  # what a turn cut off ended with: the stop says its cause
        printer = RunPrinter(out, repo, replayed=fork.at - 1 if fork else 0, last_turn=chat)
        toolbox = tools(repo, isolate=plan.isolate, deadline=plan.deadline, tests=plan.tests,
                        helpers=tuple(plan.helpers or ()))  # fmt: skip
        if plan.deadline is not None:
            plan.deadline.restart()  # the budget is the loop's: the starting tests do not count
        agent = loop(chat, toolbox, plan.task, plan.max_turns, system=plan.system,
                          deadline=plan.deadline, text_calls=plan.text_calls)  # fmt: skip
        loop, events, verdict = agent.events(), [], None
        started, interrupted = time.monotonic(), False
        try:
            _show_events(loop, agent, events, printer, repo, fork, watch, cut, plan.deadline)
            if cut is not None:
                _past_the_cut(loop, events, cut, plan.text_calls)
            loop.close()
            if fork is not None:
                fork.ended(events, repo)  # a live fork that stopped before its turn: diverged
            seconds = time.monotonic() - started
            if final:
                verdict = judge(repo, plan.isolate, **asked, tests=plan.tests, helpers=plan.helpers)
        except KeyboardInterrupt:
            interrupted, seconds = True, time.monotonic() - started
        finally:
            loop.close()  # closes the model stream; a running test group was killed already
        source, unchanged = final_source(repo), tests_unchanged(repo, plan.tests)
    return Run(events=events, messages=agent.messages, starting=begun, final=verdict,
               source=source, tests_unchanged=unchanged, workdir=str(repo), sha256=sha256,
               seconds=seconds, interrupted=interrupted, printer=printer)  # fmt: skip


def _show_events(loop, agent, events, printer, repo, fork, watch, cut, deadline):
    """Run the loop until it stops (or the cut), keeping and showing each event; at each
    turn's start, first what a fork does there (printed where `printer` prints)."""
    # subtle: with a cut, stop *before* asking for the next event; asking could run a tool.
    while cut is None or len(events) < cut.events:
        event = next(loop, None)
        if event is None:
            break
        if event["type"] == MODEL_START and fork is not None:
            turn = event["turn"]
            if turn == fork.at:  # before the live model is asked anything
                print(fork.reached(events, repo), file=printer.out)
                if deadline is not None:
                    deadline.restart()  # and the budget is the live model's
            for line in make_changes(agent, fork.changes, turn):
                print(line, file=printer.out)
        events.append(event)
        printer.show(event)
        if watch is not None:
            watch(event, agent.messages)


def _past_the_cut(loop, events, cut, text_calls):
    """At most one step more of a replay's loop, where the recorded run took one."""
    # A run stopped while a model call had produced no event yet (the server was still
    # reading the prompt) did make that request: make it too, so that the requests match.
    # The step that makes it cannot run a tool, and what it yields is past the cut. One
    # step only: a second could run the tools of a turn the recording never showed.
    if len(cut.made) < cut.requests:
        next(loop, None)
    elif cut.deadline and answered_last(events, text_calls):
        # no call left to run: the loop's next event is its own stop, which no deadline
        # can come before (Ctrl-C can); a file that says otherwise was changed by hand
        ended = next(loop, None)
        if ended is not None and ended["type"] == STOPPED:
            events.append(ended)


def answered_last(events, text_calls):
    """Whether the last event is a model turn that asked for no tool (with text calls, one
    written in its text could be run: then unknown, so False)."""
    last = events[-1] if events else {}
    asked = (last.get("message") or {}).get("tool_calls")
    return last.get("type") == MODEL_DONE and not asked and not text_calls
