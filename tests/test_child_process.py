"""plumbing/child_process.py: every child the harness runs is bounded. run_bounded gives a
child's exit code once it ends, even after it closed its output, and stops a silent one at
its time limit; a test run's output keeps its last 4,000 characters.
"""

import sys

from plumbing.child_process import tail
from tests.helpers import LAB

# --- run_bounded: the exit code, the time limit, the output's tail --------------------------------


def test_a_child_that_closes_its_output_and_then_ends_gives_its_exit_code():
    # mutation: `max(time left, 0.01)` -> `min` waited 10 ms for the exit once the output
    # ended, and called a run that took longer to exit a timeout
    from plumbing.child_process import run_bounded

    command = [sys.executable, "-c", "import os, time; os.close(1); os.close(2); time.sleep(0.3)"]
    assert run_bounded(command, cwd=LAB, timeout=30) == (0, "")


def test_a_silent_child_is_stopped_at_its_time_limit_not_when_it_ends():
    # mutation: the `continue` after a select that saw nothing dropped: the harness then
    # blocked in read() until the child ended, far past the limit
    from plumbing.child_process import run_bounded

    command = [sys.executable, "-c", "import time; time.sleep(20)"]
    # a timeout has no exit code; the mutant waits the 20 s out and returns the child's 0
    assert run_bounded(command, cwd=LAB, timeout=0.5)[0] is None


def test_test_output_keeps_its_last_4000_characters():
    assert tail("x" * 4_000) == "x" * 4_000
    assert tail("y" + "x" * 4_000) == "[... 1 earlier characters cut]\n" + "x" * 4_000
