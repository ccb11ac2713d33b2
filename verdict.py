"""What decides whether the repair worked: an independent verdict in two parts.

1. **The visible tests**: a fresh pytest run of the sample's own tests on the edited
   path_rules.py, counted from pytest's machine-readable report (`judge`). An exit code
   of 0 alone is never a pass.
2. **The held-out checks**: cases for `python_sources` that the model never sees (below,
   outside `sample_repo/`, never in a tool result or a request). The edited function runs
   in a child process under the same isolation as the tests, gets the inputs, and sends
   its answers back as plain JSON; they are compared here, in the harness's own process.
   The edited code runs inside pytest, so it can forge what pytest reports; nothing it
   does inside its own process can change this comparison. It passes only by computing
   the right answers.

`independent_verdict(root)` runs both on the source the run left in `root`: "passed" needs
both. `run_pytest(root)` is the visible part alone, which is also all the model's own
`run_tests` tool returns.

Not here: the tools (repo_tools.py), how a child is bounded (plumbing/child_process.py) or
isolated (plumbing/isolation.py), how pytest's report is read (plumbing/pytest_report.py).
"""

import json
import subprocess
import sys
import time
from pathlib import Path

from plumbing.child_process import run_bounded, tail
from plumbing.isolation import chosen, isolation_prefix
from plumbing.pytest_report import BadReport, expected_tests, read_report
from plumbing.redact import redact
from plumbing.sample import (
    SOURCE_FILE,
    SOURCE_LIMIT,
    TEST_FILE,
    copy_sample,
    read_regular_file,
    tests_unchanged,
)
from plumbing.scratch import scratch_folder
from plumbing.startup_guard import planted

PASSED, FAILED = "passed", "failed"  # the two verdicts
TEST_TIMEOUT = 15.0
# subtle: --rootdir pins the names in the report (tests.test_path_rules.test_...), which
# otherwise depend on configuration files found above the temporary copy.
PYTEST_COMMAND = ("-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", ".")
TESTS_FAILED = "not every test passed"  # the reason when the tests ran and some failed

# --- the held-out cases: each keeps one promise of python_sources' docstring ---------------
# ("Return the changed Python files under ``src``, in order, with forward slashes.")
HELD_OUT = (
    (["lib/src/tool.py", "source/app.py", "srcs/cli.py"], []),  # only a top-level src
    (["lib\\src\\tool.py", "docs\\src\\conf.py"], []),  # ... written with backslashes too
    (["src/notes.md", "src/app.pyc", "src/app.py.bak", "src/py"], []),  # only .py files
    (["src\\pkg\\mod.py"], ["src/pkg/mod.py"]),  # backslashes become forward slashes
    (["src/pkg\\io.py", "src\\cli/main.py"], ["src/pkg/io.py", "src/cli/main.py"]),  # mixed
    (
        ["src/zeta.py", "src/alpha.py", "src/mid/beta.py"],
        ["src/zeta.py", "src/alpha.py", "src/mid/beta.py"],
    ),  # fmt: skip
    (["docs\\guide.md", "src\\b.py", "tests\\test_b.py", "src\\a.py"], ["src/b.py", "src/a.py"]),
    (["src/deep/er/still/mod.py", "README.md"], ["src/deep/er/still/mod.py"]),
    (["README.md", "docs/index.md"], []),  # nothing to select
    ([], []),  # nothing for nothing
)
HELD_OUT_TIMEOUT = 10.0  # seconds for all the cases together
ANSWER_LIMIT = 2000  # characters of one answer line read at most

# The child that asks the edited function. It reads its inputs before importing the edited
# module, and answers on its own copy of stdout: what the edited code prints goes to stderr.
# Each answer is labelled with its case, so a stray line cannot shift the others. Its names
# live inside a function, so the edited code finds little in __main__ to tell it is checked.
CHILD = """\
def ask():
    import json, os, sys
    cases = json.loads(sys.argv[1])
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.path.insert(0, os.getcwd())
    def send(number, **answer):
        answers.write(json.dumps({"case": number, **answer}) + "\\n")
        answers.flush()
    def problem(error):
        return f"{type(error).__name__}: {error}"[:200]
    try:
        from path_rules import python_sources
    except BaseException as error:
        for number in range(len(cases)):
            send(number, error=f"importing path_rules failed: {problem(error)}")
        return
    for number, changed in enumerate(cases):
        try:
            send(number, answer=json.loads(json.dumps(python_sources(list(changed)))))
        except BaseException as error:
            send(number, error=problem(error))
ask()
"""


def independent_verdict(root, isolate=True):
    """The verdict from outside the loop, on the path_rules.py the run left in `root`.

    The visible tests' run and counts (see `run_pytest`), `held_out` (see
    `held_out_checks`), `verdict` ("passed" only when both parts pass) with a `reason`
    when failed, and how long it took.

    subtle: not run in `root`. The edited code ran there, and may have left things behind
    that change what the next run does without touching path_rules.py (a conftest.py, a
    `path_rules/` package, a pytest.ini) and then put the source back. Each part gets a
    fresh copy holding only the bytes of root's path_rules.py; the test file in `root`
    must still be the sample's. Redacted like a tool result: a run of the edited code may
    print the harness's secrets.
    """
    started = time.monotonic()
    poisoned = planted()  # start-up code an unisolated run left in the Python installation
    if poisoned:
        return _unjudged(poisoned, started)
    try:
        source = read_regular_file(Path(root) / SOURCE_FILE, SOURCE_LIMIT)
    except OSError as error:
        return _unjudged(f"{SOURCE_FILE} cannot be read ({error.strerror or error})", started)
    if len(source) > SOURCE_LIMIT:
        return _unjudged(f"{SOURCE_FILE} is larger than {SOURCE_LIMIT} bytes", started)
    with scratch_folder(prefix="agent-lab-verdict-") as scratch:
        fresh = copy_sample(scratch, source)
        result = run_pytest(fresh, isolate=isolate)
        # the run's own paths read as the copy's, so a replay normalises them alike
        result["output"] = result["output"].replace(str(fresh), str(Path(root).resolve()))
    result["held_out"] = held_out = held_out_checks(source, isolate)
    poisoned = planted()  # ... or that this verdict's own unisolated run just left there
    if poisoned:
        result.update(verdict=FAILED, reason=poisoned)
    elif result["verdict"] == PASSED and not tests_unchanged(root):
        result.update(verdict=FAILED, reason=f"tests changed: {TEST_FILE} is not the sample's")
    elif result["verdict"] == PASSED and held_out["passed"] < held_out["total"]:
        result.update(verdict=FAILED, reason=held_out_line(held_out))
    return {**redact(result), "seconds": time.monotonic() - started}


def _unjudged(reason, started):
    counts = {"passed": 0, "failed": 0, "errors": 0, "collected": 0}
    held_out = {"passed": 0, "total": len(HELD_OUT), "first_failure": reason}
    result = {"exit_code": None, "output": "", **counts, "held_out": held_out}
    return {**result, "verdict": FAILED, "reason": reason, "seconds": time.monotonic() - started}


def held_out_checks(source, isolate=True, cases=HELD_OUT, timeout=HELD_OUT_TIMEOUT):
    """{"passed", "total", "first_failure"}: how many cases the edited `source` (bytes of
    path_rules.py) answers right, asked in an isolated child, judged here.

    A case passes only if its answer is a list of strings equal to the expected one. No
    answer (an exit, a crash, a timeout), an error, or anything that is not plain JSON
    fails it.
    """
    with scratch_folder(prefix="agent-lab-") as scratch:
        folder = Path(scratch)
        (folder / SOURCE_FILE).write_bytes(source)
        inputs = json.dumps([changed for changed, _ in cases])
        prefix = isolation_prefix(chosen(isolate), readable=(folder.resolve(),))
        command = [*prefix, sys.executable, "-I", "-c", CHILD, inputs]
        exit_code, output = run_bounded(command, folder, timeout, stderr=subprocess.DEVNULL)
    answers = _answers(output, len(cases))
    passed, first_failure = 0, None
    for number, (changed, expected) in enumerate(cases):
        answer = answers.get(number)
        if answer is None:
            ended = f"timed out after {timeout:g} s" if exit_code is None else f"exit {exit_code}"
            failure = f"{_json(changed)} gave no answer ({ended})"
        elif "error" in answer:
            failure = f"{_json(changed)} raised {answer['error']}"
        elif _plain_list_of_text(answer.get("answer")) and answer["answer"] == expected:
            passed += 1
            continue
        else:
            failure = f"{_json(changed)} gave {_json(answer.get('answer'))}"
        first_failure = first_failure or f"{failure}, not {_json(expected)}"[:300]
    return {"passed": passed, "total": len(cases), "first_failure": first_failure}


def _answers(output, count):
    """{case number: {"answer": ...} or {"error": text}} from the child's lines; the first
    well-formed line for a case counts, anything else is ignored."""
    found = {}
    for line in output.splitlines():
        if len(line) > ANSWER_LIMIT:
            continue  # a real answer is short; a long line is only work to parse
        try:
            answer = json.loads(line)
        except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth
            continue
        if not isinstance(answer, dict) or type(answer.get("case")) is not int:
            continue
        if ("answer" in answer) == ("error" in answer) or not isinstance(
            answer.get("error", ""), str
        ):
            continue  # exactly one of the two, and an error is text
        if answer["case"] in range(count):
            found.setdefault(answer["case"], answer)
    return found


def _plain_list_of_text(value):
    # json.loads made it: a list here is a plain list, a str a plain str
    return isinstance(value, list) and all(isinstance(path, str) for path in value)


def _json(value):
    return json.dumps(value, ensure_ascii=False)


def held_out_line(held_out):
    """'held-out checks 9 of 10 passed (first failure: ...)'."""
    line = f"held-out checks {held_out['passed']} of {held_out['total']} passed"
    return line + (
        f" (first failure: {held_out['first_failure']})" if held_out["first_failure"] else ""
    )


# --- the visible tests ------------------------------------------------------------------------


def run_pytest(root, timeout=TEST_TIMEOUT, isolate=True):
    """Run the sample's tests in `root`; return the run and its verdict (see `judge`).

    The result holds `exit_code` (None on a timeout), `output` (bounded), the counts
    `passed`, `failed`, `errors` and `collected` from pytest's report, and `verdict`
    ("passed" or "failed", with a `reason` when failed). The tests run in their own process
    group, killed when the run ends (plumbing/child_process.py), and with `isolate` under
    the best isolation this machine offers (plumbing/isolation.py).
    """
    # subtle: the report goes to a fresh folder outside the copy, so nothing the edited code
    # left behind in an earlier run can pass for it; only this folder and `root` are writable.
    with scratch_folder(prefix="agent-lab-report-") as folder:
        report, settings = Path(folder) / "report.xml", Path(folder) / "pytest.ini"
        # subtle: an explicit, empty configuration: otherwise pytest looks for pytest.ini,
        # tox.ini or setup.cfg in the copy's parent folders, where an unisolated edit may
        # have left one (with addopts = -p some_plugin) for the next run to find.
        settings.write_text("[pytest]\n")
        writable = (Path(root).resolve(), Path(folder).resolve())
        prefix = isolation_prefix(chosen(isolate), writable)
        command = [*prefix, sys.executable, *PYTEST_COMMAND, "-c", str(settings)]
        command.append(f"--junitxml={report}")
        exit_code, output = run_bounded(command, root, timeout)
        verdict = judge(root, exit_code, report, timeout)
    output = redact(output)  # before the cut, so no part of a secret survives at its edge
    return {"exit_code": exit_code, "output": tail(output), **verdict}


def judge(root, exit_code, report, timeout=TEST_TIMEOUT):
    """The verdict on one test run: the counts, "passed" or "failed", and why it failed.

    "passed" means: the run finished with exit code 0, pytest's report exists and lists
    exactly the tests the unchanged test file defines, every one passed, and the test file
    is byte-identical to the sample's. An exit code of 0 alone is never a pass.
    """
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
    expected = expected_tests()
    ran = [name for name in expected if outcomes.get(name, "skipped") != "skipped"]
    unexpected = sorted(set(outcomes) - set(expected))
    if exit_code is None:
        reason = f"timed out after {timeout:g} s"
    elif not tests_unchanged(root):
        reason = f"tests changed: {TEST_FILE} is not the sample's"
    elif report_problem:
        reason = report_problem
    elif len(ran) < len(expected):
        reason = f"{len(ran)} of {len(expected)} tests ran"
    elif unexpected:
        reason = (
            f"tests changed: the report lists tests the sample does not define ({unexpected[0]}"
        )
        reason += f" and {len(unexpected) - 1} more)" if len(unexpected) > 1 else ")"
    elif any(outcomes[name] != "passed" for name in expected):
        reason = TESTS_FAILED
    elif exit_code != 0:
        reason = f"pytest exited with code {exit_code} although every test passed"
    else:
        return {**counts, "verdict": PASSED}
    return {**counts, "verdict": FAILED, "reason": reason}
