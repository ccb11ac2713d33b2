"""Reading what pytest says about a run: its JUnit XML report, read as hostile input.

`read_report(path)` gives each test's outcome from the report; `expected_tests()` the
tests the unchanged sample defines, as the report names them; `count_results(output)` the
counts from pytest's closing line (for reading, never for judging).

Not here: judging a run (verdict.py).
"""

import ast
import functools
import re
from xml.etree import ElementTree

from plumbing.sample import PRISTINE_TESTS, TEST_FILE, read_regular_file

REPORT_LIMIT = 1_000_000  # bytes of pytest's report read at most; the sample's is ~2 KB
NO_REPORT = "no test report: the run ended before pytest wrote it"
OUTCOME_TAGS = (("failure", "failed"), ("error", "error"), ("skipped", "skipped"))


class BadReport(Exception):
    """pytest's report is missing or not one pytest wrote; the message is the reason."""


def read_report(path):
    """{test name: "passed" | "failed" | "error" | "skipped"} from the JUnit XML at `path`.

    The report is hostile input: the edited code ran in the process that wrote it, and can
    write there too. So it is read without following a link, only if it is a regular file,
    only up to REPORT_LIMIT bytes, and refused if it declares a DOCTYPE (entities could
    expand it without bound; pytest never writes one).
    """
    try:
        data = read_regular_file(path, REPORT_LIMIT)
    except FileNotFoundError:
        raise BadReport(NO_REPORT) from None
    except OSError as error:
        raise BadReport(f"the test report cannot be read ({error.strerror or error})") from None
    if len(data) > REPORT_LIMIT:
        raise BadReport(f"the test report is larger than {REPORT_LIMIT} bytes")
    if b"<!DOCTYPE" in data or b"<!ENTITY" in data:
        raise BadReport("the test report declares a DOCTYPE, which pytest never writes")
    try:
        tree = ElementTree.fromstring(data)
    except ElementTree.ParseError as error:
        raise BadReport(f"the test report is not valid XML ({error})") from None
    outcomes = {}
    for case in tree.iter("testcase"):
        if not (case.get("classname") and case.get("name")):
            continue  # not a test: pytest writes an empty case when pytest.exit stops one
        tags = {child.tag for child in case}
        outcome = next((o for tag, o in OUTCOME_TAGS if tag in tags), "passed")
        name = f"{case.get('classname')}.{case.get('name')}"
        # subtle: a test that fails and then errors in teardown can be listed twice.
        if outcomes.get(name, "passed") == "passed":
            outcomes[name] = outcome
    return outcomes


@functools.cache
def expected_tests(tests=None):
    """The tests the unchanged test file defines, as pytest's report names them: the
    sample's, or `tests` (bytes: the test file an impossible task gives).

    Read from the pristine test file's syntax tree, never from the copy, which the edited
    code can change. The sample's tests are plain top-level functions; a test file with
    classes or parametrised tests would need a collect-only run of a pristine copy instead.
    """
    tree = ast.parse(PRISTINE_TESTS if tests is None else tests)
    module = TEST_FILE.removesuffix(".py").replace("/", ".")
    return tuple(
        f"{module}.{node.name}"
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.name.startswith("test")
    )


def count_results(output):
    """The counts from pytest's summary line, e.g. {"failed": 1, "passed": 3, "errors": 0}."""
    counts = {"failed": 0, "passed": 0, "errors": 0}
    # subtle: only pytest's closing line counts; a test's own output may say "3 passed".
    for line in reversed(output.splitlines()):
        if re.search(r"\bin [\d.]+s\b", line):
            for number, word in re.findall(r"(\d+) (passed|failed|errors?)\b", line):
                counts["errors" if word.startswith("error") else word] += int(number)
            break
    return counts
