"""`--rounds N`: the edit-test loop run by the lab, not by the model (after Aider's benchmark).

Round 1 is `--one-shot`'s one request (the task, both files, the failing test output; no
tool) and its answer's one fenced block written over path_rules.py (extensions/one_shot.py).
Then the lab runs the visible tests; while they fail and rounds are left, it sends their
output back and asks again for the whole file, so the model sees what its answer did. An
answer that wrote nothing (the file as it was, no block, several) is told so in the next
request. `--rounds 1` is `--one-shot` (the same arm: extensions/one_shot.py's `chosen`).

Each round is a loop of one turn, continued from the conversation so far (agent_loop's
`history`): the loop is unchanged. Its events are renumbered as turns 1 to N, so the
terminal, the page and a replay show one run; the stop is the last round's own. What the
lab did with each answer is a decision (`call` 0, in the order of the rounds).

Not here: the request of round 1 and the writing of a block (extensions/one_shot.py).
"""

import dataclasses
import itertools

from agent_loop import ASSISTANT_FINISHED, MAX_TURNS, MODEL_START, STOPPED
from extensions.one_shot import OneShot
from extensions.one_shot_request import NoTools, fenced
from plumbing.limits import is_whole, positive_int
from plumbing.sample import SOURCE_FILE

ROUNDS = "rounds"  # its one setting: how many rounds at most
WROTE_NOTHING = {  # what the next request says of an answer that wrote nothing
    "unchanged": f"Your block was {SOURCE_FILE} as it already was, byte for byte: nothing changed.",
    "no-block": "Your answer held no complete fenced block, so nothing was written.",
    "several-blocks": "Your answer held more than one fenced block, so nothing was written.",
}
AGAIN = (
    f"Answer again with the whole corrected {SOURCE_FILE} in one fenced block "
    "(```python, the file, ```); the lab writes it and runs the tests again."
)


class Rounds(OneShot):
    """One-shot's request and its writing of a block, then the test output sent back."""

    name, page = ROUNDS, "one-shot"
    helps = (
        "the edit-test loop, run by the lab: ask as --one-shot does, write the block over "
        "path_rules.py, run the visible tests, and while they fail send their output back and "
        "ask again for the whole file, up to N rounds; 1 is --one-shot; with none of the "
        "flags --one-shot refuses (docs/one-shot.md) (default: the loop)"
    )

    @staticmethod
    def flag(parser, kinds):
        parser.add_argument("--rounds", type=positive_int, metavar="N", help=Rounds.helps)

    @classmethod
    def chosen(cls, args):
        return {ROUNDS: args.rounds} if (args.rounds or 1) > 1 else None

    @classmethod
    def check_options(cls, parser, args):  # the rest: one-shot's, which names --rounds too
        if args.rounds and args.one_shot:
            parser.error("--one-shot is --rounds 1; give one of them")

    @classmethod
    def settings_problem(cls, settings):
        if set(settings) == {ROUNDS} and is_whole(settings[ROUNDS], 2):
            return None
        return f'the settings of extension {cls.name!r} must be {{"rounds": N}}, N from 2'

    @classmethod
    def wrapped(cls, make, settings, extensions):
        unchanged = extensions.says_unchanged
        return lambda *args, **options: cls(make, extensions.log, *args, **options,
                                            rounds=settings[ROUNDS],
                                            names_unchanged=unchanged)  # fmt: skip

    @staticmethod
    def planned(plan, settings=None):
        """One-shot's prompts, and a turn a round: the recording says how many at most."""
        return dataclasses.replace(OneShot.planned(plan), max_turns=settings[ROUNDS])

    @staticmethod
    def noted(event):
        if event["type"] == MODEL_START and event["turn"] > 1:
            return (f"[rounds] round {event['turn']}: the visible tests still failed, and their "
                    "output goes back with this request")  # fmt: skip
        return None

    def __init__(self, make, log, chat, tools, task, max_turns, *, rounds, **options):
        # subtle: `max_turns` is the plan's, the rounds (`planned`); each round has one turn
        self.make, self.chat, self.rounds = make, chat, rounds
        self.options = {k: v for k, v in options.items() if k != "names_unchanged"}
        super().__init__(make, log, chat, tools, task, **options)  # one turn, as one-shot's

    def events(self):
        """Each round's events as turn `round`; a round's stop is held back while the tests
        fail and rounds are left, and the next round asks again."""
        for number in itertools.count(1):  # until _next_request says the last
            stop = None
            events = super().events()  # one-shot's: its request in round 1, each answer taken
            try:
                for event in events:
                    event = {**event, "turn": number}
                    if event["type"] == STOPPED:
                        stop = event
                        continue
                    yield event
            finally:
                events.close()
            self.asks_first = False  # the files and the first test run were sent once
            again = self._next_request(stop, number)
            if not again:
                yield stop
                return
            self.loop = self.make(self.chat, NoTools(), again, 1, history=self.messages,
                                  **self.options)  # fmt: skip

    def _next_request(self, stop, number):
        """What the next round asks, or None: the last round, a stop that was no answer
        (the model's error, the clock), or tests that pass."""
        # a turn that ended with a call (no tool is offered) is an answer too: its block counts
        if number == self.rounds or stop["reason"] not in (ASSISTANT_FINISHED, MAX_TURNS):
            return None
        ran = self.tools.invoke("run_tests", {})  # the lab's own run, as round 1's request's
        if ran.get("verdict") == "passed":
            return None
        said = WROTE_NOTHING.get(self.log.decisions[-1]["decision"], "")
        heading = f"{said} The tests still fail. The output of run_tests:".strip()
        return "\n\n".join([fenced(heading, ran.get("output", ran.get("error", ""))), AGAIN])
