"""`--one-shot`: the control arm. The model is asked once, with no tools, for the whole file.

Agentless (Xia et al., 2024) matched the agents of its day on SWE-bench Lite with a fixed
pipeline and no loop; this is the smallest such pipeline for the lab's task, so that a
learner can ask whether the loop helps their model at all. `OneShot` has the loop's
interface (`events()`, `messages`) and wraps the loop the driver is handed, allowed one turn
and offered no tool. Its one request holds what a model's first calls would return, made by
the lab (extensions/one_shot_request.py); the answer's one fenced block is written over
path_rules.py, and the independent verdict judges the copy.

The stop reason is the loop's own. What the lab did with the answer is a decision about it
(`call` 0, harness/decisions.py): `written`, or, leaving path_rules.py as it was, `unchanged`
(the block is the file), `no-block`, `several-blocks`, `too-large` or `unwritable`
(docs/one-shot.md). Not here: retries, choosing among answers, merging part of a file.
"""

import dataclasses

from agent_loop import MODEL_DONE, MODEL_START
from extensions.extension import Extension
from extensions.one_shot_request import SYSTEM, TASK, NoTools, request
from harness.decisions import ANSWER
from harness.tasks import TASKS
from plumbing.fenced_blocks import blocks
from plumbing.sample import SOURCE_FILE, SOURCE_LIMIT, write_atomically

KEPT = f"{SOURCE_FILE} is as it was"


class OneShot(Extension):
    """Made as the driver makes its loop, `make` (the loop's class) and the run's `log` first."""

    name, page, wraps = "one-shot", "one-shot", "loop"
    helps = (  # its flag: --one-shot
        "the control arm: ask the model once, with no tools, for the whole corrected "
        "path_rules.py in one fenced block (the task, both files and the starting test run in "
        "one message), write the block over the copy and judge it with the same verdict; one "
        "request, so --max-turns does not apply; with none of --fork, --hook, --approve, "
        "--plan, --keep-results, --text-calls, --explorer, --mcp or an impossible --task "
        "(docs/one-shot.md) (default: the loop)"
    )

    @classmethod
    def check_options(cls, parser, args):
        task = args.task and TASKS[args.task]
        given = {  # each needs the loop's tools or turns, which --one-shot has not
            "--fork": args.fork is not None,  # a one-shot has no turns to replay
            "--hook": args.hook,  # a hook acts around a tool call
            "--approve": args.approve,  # asks about tool calls
            "--plan": args.plan,  # offers read_file
            "--keep-results": args.keep_results,  # shortens tool results
            "--text-calls": args.text_calls,  # a call written as text runs a tool
            "--explorer": getattr(args, "explorer", False),  # a tool of its own
            "--mcp": getattr(args, "mcp", None),  # a server's tools
            f"--task {args.task}": task and task.impossible,  # flagged: after it read the tests
        }
        refused = [flag for flag, on in given.items() if on]
        rounds = getattr(args, "rounds", None)  # a composer without --rounds has no such flag
        asked = "--one-shot" if args.one_shot else f"--rounds {rounds}" if rounds else ""
        if asked and refused:
            parser.error(f"{asked} offers no tools, which {refused[0]} needs; leave one out")

    @classmethod
    def recording_problem(cls, recording, at):
        if len(recording["extensions"]["on"]) > 1 or recording.get("fork") or at:
            return ("a one-shot run has one turn and no tools: it is no fork, has no other "
                    "extension, and cannot be forked")  # fmt: skip
        return None

    @classmethod
    def wrapped(cls, make, settings, extensions):
        """A `loop` for the driver: a OneShot around the loop `make` makes."""
        unchanged = extensions.says_unchanged  # false: a replay of a recording made before
        return lambda *args, **options: cls(make, extensions.log, *args, **options,
                                            names_unchanged=unchanged)  # fmt: skip

    @staticmethod
    def planned(plan, settings=None):
        """A driver.Plan for a one-shot run: its own task and system prompt, one turn."""
        # a task's helper modules are sent too (one_shot_request.py): more than two files
        task = TASK.replace("Its two files", "Its files") if plan.helpers else TASK
        return dataclasses.replace(plan, task=task, system=SYSTEM, max_turns=1)

    @classmethod
    def chosen(cls, args):  # --one-shot, or --rounds 1, which is the same arm
        return {} if args.one_shot or getattr(args, "rounds", None) == 1 else None

    def __init__(self, make, log, chat, tools, task, max_turns=1, names_unchanged=True,
                 **options):  # fmt: skip
        self.tools, self.log = tools, log  # the real tools, for the lab's own calls only
        # subtle: False replays a one-shot that said `written` of a block that changed
        # nothing (harness/old_recordings.py's says_unchanged), or it would not reproduce
        self.names_unchanged = names_unchanged
        self.loop = make(chat, NoTools(), task, 1, **options)  # `make`: agent_loop.AgentLoop
        self.asks_first = True  # the request holds the files and the test run (--rounds: once)

    @property
    def messages(self):
        return self.loop.messages  # the loop alone appends to them

    def events(self):
        """The loop's events; at its one turn's start, the files and the test run go into
        the request, and its complete answer is taken before the driver shows it."""
        events = self.loop.events()
        try:
            for event in events:
                if event["type"] == MODEL_START and self.asks_first:  # its request comes next
                    asked = request(self.tools, self.messages[-1]["content"])  # the lab's calls
                    self.loop.change_conversation(replaced=[(len(self.messages) - 1, asked)])
                elif event["type"] == MODEL_DONE:
                    self.take(event["message"]["content"])  # the decision is shown after it
                yield event
        finally:
            events.close()  # closes the model's stream on every path, as the loop does

    def take(self, answer):
        """Write the answer's one fenced block over path_rules.py, and say what was done."""
        found = blocks(answer)
        if len(found) != 1:
            many = "more than one" if found else "no complete"
            word = "several-blocks" if found else "no-block"
            return self.decide(word, f"the answer holds {many} fenced block; {KEPT}")
        try:
            data = found[0].encode("utf-8")  # a lone surrogate cannot be
            if len(data) > SOURCE_LIMIT:
                said = f"the block is {len(data):,} bytes, more than the verdict reads"
                return self.decide("too-large", f"{said} ({SOURCE_LIMIT:,}); {KEPT}")
            lines, target = found[0].count("\n"), self.tools.root / SOURCE_FILE
            size = f"{lines:,} lines, {len(data):,} bytes"
            if self.names_unchanged and target.is_file() and target.read_bytes() == data:
                said = f"the answer's block is {SOURCE_FILE} as it was, byte for byte ({size})"
                return self.decide("unchanged", said)
            write_atomically(target, data)
        except (UnicodeEncodeError, OSError) as error:  # the copy's own failure, too
            return self.decide("unwritable", f"{type(error).__name__}: {error}"[:200] + f"; {KEPT}")
        return self.decide("written", f"{SOURCE_FILE} is now the answer's block ({size})")

    def decide(self, decision, said):
        entry = {"extension": self.name, "call": ANSWER, "decision": decision, "said": said}
        self.log.decisions.append(entry)
