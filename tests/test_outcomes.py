"""What one recording says of its attempt (harness/outcomes.py), read from small recordings
made here: the verdict, what counts as interrupted, the tokens and the seconds. compare.py
and record_run.py --attempts print these figures; tests/test_attempts.py runs those CLIs."""

import dataclasses

import pytest

from harness.outcomes import _count, outcome, passed


def recording(**changes):
    """A minimal recording of one finished attempt: one model call, one tool call."""
    done = {"done": True, "done_reason": "stop", "prompt_eval_count": 50, "eval_count": 7}
    base = {
        "api": "ollama",
        "model_calls": [{"request_length": 1, "chunks": [{"done": False}, done]}],
        "events": [
            {"type": "model_done", "turn": 1, "seconds": 0.5},
            {"type": "tool_result", "turn": 1, "seconds": 0.25},
            {"type": "stopped", "turn": 1, "reason": "assistant_finished"},
        ],
        "stop": {"type": "stopped", "turn": 1, "reason": "assistant_finished"},
        "starting_tests": {"exit_code": 1, "seconds": 1.0},
        "final_tests": {"exit_code": 0, "verdict": "passed", "seconds": 2.0},
    }
    return {**base, **changes}


@pytest.mark.parametrize(
    ("final", "unchanged", "verdict"),
    [
        (None, True, False),  # no final tests ran: never a pass
        ({"exit_code": 0, "verdict": "failed"}, True, False),  # the report's verdict rules
        ({"exit_code": 1, "verdict": "passed"}, True, True),
        ({"exit_code": 0}, None, True),  # an older recording: the exit code, if unedited
        ({"exit_code": 0}, False, False),  # ... and an edited test file never passes
        ({"exit_code": 1}, True, False),
    ],
)
def test_the_verdict_is_the_reports_else_the_exit_code_of_unedited_tests(final, unchanged, verdict):
    assert passed(recording(final_tests=final, tests_unchanged=unchanged)) is verdict


def test_a_finished_attempt_counts_its_calls_tokens_and_every_span():
    # No loop_seconds (older recordings): the spans of the timed events, plus both test runs.
    got = outcome(recording())
    assert (got.passed, got.interrupted, got.stop) == (True, False, "assistant_finished")
    assert (got.model_calls, got.tool_calls) == (1, 1)
    assert (got.prompt_tokens, got.generated_tokens) == (50, 7)
    assert got.seconds == pytest.approx(0.5 + 0.25 + 1.0 + 2.0)


def test_the_loops_own_seconds_replace_the_events_spans_when_recorded():
    # The events time only complete turns; loop_seconds holds a cut-off turn's wait too.
    assert outcome(recording(loop_seconds=4)).seconds == pytest.approx(4 + 1.0 + 2.0)


def test_an_attempt_without_final_tests_is_interrupted_whatever_its_stop():
    got = outcome(recording(final_tests=None))
    assert (got.passed, got.interrupted, got.stop) == (False, True, "assistant_finished")
    assert got.seconds == pytest.approx(0.5 + 0.25 + 1.0)


@pytest.mark.parametrize(
    ("last", "tokens"),
    [
        (None, (None, None)),  # a call whose chunks were never saved
        ([], (None, None)),  # a call cut before its first chunk
        ([{"done": True}, "not a chunk"], (None, None)),  # a last chunk that is no object
        ([{"done": True, "prompt_eval_count": 50}], (100, None)),  # one counter missing
    ],
)
def test_a_token_total_is_unknown_unless_every_call_counted_it(last, tokens):
    # subtle: a partial sum would look like a cheaper attempt.
    calls = recording()["model_calls"] + [{"request_length": 3, "chunks": last}]
    got = outcome(recording(model_calls=calls))
    assert (got.prompt_tokens, got.generated_tokens) == tokens


def test_openai_calls_are_counted_from_their_events_and_a_malformed_one_counts_none():
    usage = {"prompt_tokens": 12, "completion_tokens": 3}
    finish = {"choices": [{"delta": {}, "finish_reason": "stop"}], "usage": usage}
    call = {"request_length": 1, "events": [finish]}
    got = outcome(recording(api="openai", model_calls=[call]))
    assert (got.prompt_tokens, got.generated_tokens) == (12, 3)
    broken = {"request_length": 1, "events": ["not an event"]}
    got = outcome(recording(api="openai", model_calls=[call, broken]))
    assert (got.prompt_tokens, got.generated_tokens) == (None, None)
    got = outcome(recording(api="openai", model_calls=[{"request_length": 1}]))
    assert got.prompt_tokens is None


@pytest.mark.parametrize(
    ("value", "shown"),
    [(None, "n/a"), (1234.5, "1,234.5"), (1234.0, "1,234"), (3, "3"), (2.25, "2.2")],
)
def test_a_median_is_shown_whole_unless_it_has_a_fraction(value, shown):
    assert _count(value) == shown


def test_an_outcome_cannot_be_changed_once_read():
    # compare.py keeps outcomes in groups; one edited in place would change its group.
    got = outcome(recording())
    with pytest.raises(dataclasses.FrozenInstanceError):
        got.passed = False


def test_an_outcome_is_a_value_it_cannot_be_changed_and_can_be_a_key():
    # mutation: `@dataclass(frozen=True)` -> False made outcomes changeable in place and
    # unhashable: a summary could then alter the outcome another display reads
    import dataclasses

    from harness.outcomes import Outcome

    outcome = Outcome(True, False, "assistant_finished", 3, 2, 900, 120, 4.2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        outcome.passed = False
    assert {outcome: "a"}[Outcome(True, False, "assistant_finished", 3, 2, 900, 120, 4.2)]
