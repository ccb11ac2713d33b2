"""Tests of the terminal printer's lines: test counts, verdicts and what a run printed."""

from plumbing import console  # not `import test_line`: pytest would collect it as a test
from plumbing.console import verdict_lines


def test_tests_that_ran_and_failed_read_as_their_counts_not_as_a_reason():
    # the counts say all a failing run has to say; a reason is for tests that never ran
    failed = {"verdict": "failed", "reason": "not every test passed", "failed": 1, "passed": 3}
    assert console.test_line(failed) == "1 failed · 3 passed"
    crashed = {"verdict": "failed", "reason": "no tests ran", "errors": 1}
    assert console.test_line(crashed) == "failed: no tests ran (1 errors)"


def test_only_the_held_out_label_gains_a_colon_not_a_failure_that_says_checks():
    # the first failure is a test's own words: changed, it would misquote the test
    held_out = {"passed": 9, "total": 10, "first_failure": "two checks disagree on checks x"}
    result = {"verdict": "passed", "passed": 4, "held_out": held_out}
    assert verdict_lines("Independent verdict", result)[2] == (
        "  held-out checks: 9 of 10 passed (first failure: two checks disagree on checks x)"
    )
