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


def test_a_child_that_closes_its_output_and_lingers_ends_at_its_time_limit():
    # mutation: the least wait after the output ended, 0.01 s -> 1.01 s, let a child that
    # closed its output just before its limit outlast the limit by a second
    import time

    from plumbing.child_process import run_bounded

    command = [sys.executable, "-c", "import os, time; os.close(1); os.close(2); time.sleep(20)"]
    started = time.monotonic()
    assert run_bounded(command, cwd=LAB, timeout=0.3)[0] is None  # a timeout: no exit code
    assert time.monotonic() - started < 0.95  # its limit and the kill, not a second more


def test_every_child_gets_the_memory_limit_docs_defences_gives():
    # mutation: MEMORY_LIMIT's 512 * 2**20 -> 512 * 2**21; a run of 4 GB fails under both
    from plumbing.child_process import run_bounded

    ask = "import resource; print(resource.getrlimit(resource.RLIMIT_AS)[0])"
    assert run_bounded([sys.executable, "-c", ask], cwd=LAB, timeout=30) == (0, "536870912\n")


def test_test_output_keeps_its_last_4000_characters():
    assert tail("x" * 4_000) == "x" * 4_000
    assert tail("y" + "x" * 4_000) == "[... 1 earlier characters cut]\n" + "x" * 4_000
