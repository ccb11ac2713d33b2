"""The visible tests: one pytest run of the sample's tests, judged from pytest's report.

`run_pytest(root)` runs the tests in `root` (a bounded child, isolated:
plumbing/child_process.py) and returns the run with its verdict; `judge(...)` is that
verdict: the counts, "passed" or "failed", and why it failed. The model's own `run_tests`
tool (repo_tools.py) returns this and nothing more; verdict.py adds the held-out checks.
The words a verdict is said in (PASSED, FAILED, the reasons) are plumbing/verdict_words.py's.

Not here: the whole verdict (verdict.py), how pytest's report is read
(plumbing/pytest_report.py), how a child is bounded or isolated (plumbing/child_process.py,
plumbing/bounds.py, plumbing/isolation.py).
"""

import sys
from pathlib import Path
from typing import NamedTuple

from plumbing import bounds
from plumbing.child_process import run_isolated, tail
from plumbing.isolation import chosen
from plumbing.pytest_report import BadReport, expected_tests, read_report
from plumbing.redact import redact
from plumbing.sample import TEST_FILE, tests_unchanged
from plumbing.scratch import scratch_folder
from plumbing.verdict_words import FAILED, PASSED, TESTS_CHANGED, TESTS_FAILED

TEST_TIMEOUT = 15.0
# subtle: --rootdir pins the names in the report (tests.test_path_rules.test_...), which
# otherwise depend on configuration files found above the temporary copy.
PYTEST_COMMAND = ("-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", ".")


def run_pytest(root, timeout=TEST_TIMEOUT, isolate=True, tests=None):
    """Run the sample's tests in `root`; return the run and its verdict (see `judge`, and
    `tests`: the test file the run was given, when it is not the sample's).

    The result holds `exit_code` (None on a timeout), `output` (bounded), the counts
    `passed`, `failed`, `errors` and `collected` from pytest's report, and `verdict`
    ("passed" or "failed", with a `reason` when failed). The tests run in their own process
    group, killed when the run ends (plumbing/child_process.py), and with `isolate` under
    the best isolation this machine offers (plumbing/isolation.py).
    """
    return visible_run(root, timeout, isolate, tests).result


class VisibleRun(NamedTuple):
    """One run of the visible tests: what `run_pytest` returns, and whether its verdict
    failed because the tests changed (a fact verdict.py keeps; the model is never shown
    more than `result`)."""

    result: dict
    tests_changed: bool


def visible_run(root, timeout=TEST_TIMEOUT, isolate=True, tests=None):
    """The VisibleRun of the sample's tests in `root` (see `run_pytest`)."""
    # subtle: the report goes to a fresh folder outside the copy, so nothing the edited code
    # left behind in an earlier run can pass for it; only this folder and `root` are writable.
    # It sits inside the scratch folder, which only root may enter (plumbing/sandbox_user.py).
    with scratch_folder(prefix="agent-lab-report-") as scratch:
        folder = Path(scratch) / "report"
        folder.mkdir()
        report, settings = folder / "report.xml", folder / "pytest.ini"
        # subtle: an explicit, empty configuration: otherwise pytest looks for pytest.ini,
        # tox.ini or setup.cfg in the copy's parent folders, where an unisolated edit may
        # have left one (with addopts = -p some_plugin) for the next run to find.
        settings.write_text("[pytest]\n")
        command = [sys.executable, *PYTEST_COMMAND, "-c", str(settings), f"--junitxml={report}"]
        exit_code, output, outsider = run_isolated(  # plumbing/child_process.py
            chosen(isolate), command, root, timeout,
            writes=(Path(root).resolve(),), results=(folder.resolve(),),
        )  # fmt: skip
        verdict, changed = _judged(root, exit_code, report, timeout, tests)
    verdict = bounds.named(verdict, output)  # a failed run says which limit it went past, if one
    if outsider:  # a process that could reach the run was alive at its end: it cannot pass
        verdict = {**verdict, "verdict": FAILED, "reason": outsider}
    output = redact(output)  # before the cut, so no part of a secret survives at its edge
    return VisibleRun({"exit_code": exit_code, "output": tail(output), **verdict}, changed)


def tests_changed(tests=None):
    """The reason a run whose test file changed fails (`tests`: the file it was given)."""
    given = "the sample's" if tests is None else "the one its task gave"
    return f"{TESTS_CHANGED}: {TEST_FILE} is not {given}"


def judge(root, exit_code, report, timeout=TEST_TIMEOUT, tests=None):
    """The verdict on one test run: the counts, "passed" or "failed", and why it failed.

    "passed" means: the run finished with exit code 0, pytest's report exists and lists
    exactly the tests the unchanged test file defines, every one passed, and the test file
    is byte-identical to the one the run was given (`tests`, else the sample's). An exit
    code of 0 alone is never a pass.
    """
    return _judged(root, exit_code, report, timeout, tests)[0]


def _judged(root, exit_code, report, timeout, tests):
    """(judge's verdict, whether it failed because the tests changed)."""
    counts = {"passed": 0, "failed": 0, "errors": 0, "collected": 0}
    try:
        outcomes = read_report(report)
    except BadReport as problem:
        outcomes, report_problem = {}, str(problem)
    else:
        report_problem = None
        values = list(outcomes.values())
        counts = {
            "passed": values.count("passed"),
            "failed": values.count("failed"),
            "errors": values.count("error"),
            "collected": len(values),
        }
    expected = expected_tests(tests)
    if tests is not None:  # a task's own test file: which of its tests passed (harness/tasks.py)
        counts["by_test"] = {n.rsplit(".", 1)[1]: outcomes[n] for n in expected if n in outcomes}
    ran = [name for name in expected if outcomes.get(name, "skipped") != "skipped"]
    unexpected = sorted(set(outcomes) - set(expected))
    changed = False  # set where the reason is that the tests changed
    if exit_code is None:
        reason = f"timed out after {timeout:g} s"
    elif not tests_unchanged(root, tests):
        reason, changed = tests_changed(tests), True
    elif report_problem:
        reason = report_problem
    elif len(ran) < len(expected):
        reason = f"{len(ran)} of {len(expected)} tests ran"
    elif unexpected:
        reason = (
            f"{TESTS_CHANGED}: the report lists tests the sample does not define ({unexpected[0]}"
        )
        reason += f" and {len(unexpected) - 1} more)" if len(unexpected) > 1 else ")"
        changed = True
    elif any(outcomes[name] != "passed" for name in expected):
        reason = TESTS_FAILED
    elif exit_code != 0:
        reason = f"pytest exited with code {exit_code} although every test passed"
    else:
        return {**counts, "verdict": PASSED}, False
    return {**counts, "verdict": FAILED, "reason": reason}, changed
