"""The recording format: the name of each of its versions, and what each version holds.

A recording says its version in `format`; the names below say which versions may hold
which fields, and the comment above FORMAT says, newest first, what changed with each.
Also here: the words a recording keeps of where a model call came from (`source`,
`api`) and of how its stream ended (`ended`), which the recorder writes
(harness/chats.py) and load() checks (harness/recording_checks.py).

Not here: checking a file (harness/recording_checks.py), reading or writing one
(harness/recording.py), the recorder and the replayer (harness/chats.py).
"""

# A new name for every change of what a recording holds. /9: a decision of an extension may
# keep a child run (the explorer's `run`: harness/child_runs.py), and each of --mcp keeps the
# result of its call (`result`), its servers' tools in its settings; nothing else changed,
# and /8 replays as before. /8: the held-out checks ask the
# contract's relations on every input drawn, near-misses of the repairs' literals, and a
# sample again as on Windows and from a folder of decoys (plumbing/relations.py), and say
# how many paths the correct styles disagree on (`unsettled`); /6 and /7 replay with the
# draw settled by agreement. Each test run the tests-after-edit hook made keeps its result
# beside its decision (`tests`, as run_tests returns it: pytest's report of each test of an
# impossible task in `by_test`), and an impossible task's outcome counts every test run the
# recording holds, a skipped (or xfailed) contradicting test as a shortcut. The word a /6 or
# /7 recording keeps was given by the rule before, and load() checks it by that rule
# (harness/old_recordings.py's `assessed_as_counted`); every reader counts its facts by
# today's. A /7 recording of an impossible task whose hook ran the tests is refused: the
# runs it counts were not kept.
# /7: `edits_told: true` says the
# run's replace_text told the model what each edit changed and refused one that changed
# nothing (repo_tools.py); without it (a fork of an older recording) the tool acted as
# before, and every earlier format replays so. /6: the held-out checks ask
# today's wide draw, settled by agreement, and what callers do, and say how many generated
# inputs they asked (`asked`); an impossible task's run keeps its outcome word (`outcome`,
# checked against the facts on load) and each of its test runs says how each test did in
# pytest's report (`by_test`). /5 and earlier are replayed with the draw they were made
# with (plumbing/first_draw.py) and without the callers' checks; /5 counted an impossible
# task without that evidence, so a /5 recording of one is refused (of the repair, it
# replays as it did). /5: `task_name` names the task
# (harness/tasks.py), a verdict says its visible tests' own verdict (`visible`), and a fork
# says what it is (`fork`, and each model call's `source` and `api`); /4 had none of these
# and was always given the repair. /4: `text_calls` says whether a call written as text ran
# (--text-calls), and such a call's tool events say `from_text`; /3 had neither, and is
# replayed with text calls off. /3: the held-out checks name the seed and count of their
# generated inputs; /2 asked the ten fixed cases alone, and is replayed by that rule; /1
# recordings held the visible tests only. What an older format's run was given (its edit
# tool, its draw) is given again by harness/old_recordings.py, the one place that reads it.
FORMAT = "agent-loop-recording/9"
NO_CHILD_RUNS = "agent-loop-recording/8"
WITH_RELATIONS = (FORMAT, NO_CHILD_RUNS)  # the formats whose verdicts ask the relations
NO_RELATIONS = NO_HOOK_TESTS = "agent-loop-recording/7"  # nor the hook's test runs
NO_TOLD_EDITS = "agent-loop-recording/6"
AGREED_DRAW = (NO_RELATIONS, NO_TOLD_EDITS)  # the formats whose verdicts ask the agreed draw
TOLD_EDITS = (*WITH_RELATIONS, NO_RELATIONS)  # may say `edits_told` and `extensions`
WITH_OUTCOMES = (*WITH_RELATIONS, *AGREED_DRAW)  # keep an impossible task's outcome
NO_OUTCOME = "agent-loop-recording/5"
NO_TASKS = "agent-loop-recording/4"
NO_TEXT_CALLS = "agent-loop-recording/3"
FIXED_CASES_ONLY = "agent-loop-recording/2"
WITH_TASKS = (*WITH_OUTCOMES, NO_OUTCOME)  # the formats that may name a task and a fork
TEXT_CALLS = (*WITH_TASKS, NO_TASKS)  # the formats that may hold a call run from text
GENERATED_CASES = (*TEXT_CALLS, NO_TEXT_CALLS)  # whose verdicts ask generated inputs
EARLIER_FORMATS = {
    "agent-loop-recording/1": "was made by the lab before the held-out checks, so its "
    "verdicts cannot be compared with today's: record the attempt again, or replay it with "
    "the lab version that made it (git log recordings/)",
}
SOURCES = ("live", "scripted", "fault-injection", "forked")
REPLAYED, LIVE = "replayed", "live"  # where a forked recording's model call came from
APIS = ("ollama", "openai")


# How a saved model call ended, when it did not end with a `done` chunk.
ENDED_DONE, ENDED_WITHOUT_DONE, ENDED_ERROR, ENDED_CLOSED = (
    "done",
    "without_done",
    "error",
    "closed",
)


def call_api(recording, saved):
    """The wire a saved model call came over: its own `api` (a fork's calls may differ),
    else the recording's."""
    return saved.get("api", recording.get("api", "ollama"))
