"""What the verdict's parts decide on odd inputs, one line per input, for tests/snapshots.py.

- JUnit reports (as pytest writes them, and as edited code could) with an exit code ->
  judge()'s counts, verdict and reason, on an unchanged and on a changed test file;
- lines a held-out child could print -> the answers _answers() keeps;
- path_rules.py written several ways (right, wrong, raising, exiting, printing, looping) ->
  held_out_checks()'s result, asked in a real child process.
"""

import json
import tempfile
from pathlib import Path

from plumbing.held_out import _answers, held_out_checks
from plumbing.pytest_report import expected_tests
from plumbing.pytest_run import judge
from plumbing.sample import SAMPLE_REPO, TEST_FILE, copy_sample
from tests.snapshot_inputs import outcome_of


def _report(outcomes, extra=""):
    """A JUnit report of (name, tag or None) cases, as pytest writes one."""
    cases = []
    for name, tag in outcomes:
        classname, _, test = name.rpartition(".")
        inner = f"<{tag} message='m'/>" if tag else ""
        cases.append(f'<testcase classname="{classname}" name="{test}">{inner}</testcase>')
    return f"<testsuites><testsuite>{''.join(cases)}{extra}</testsuite></testsuites>"


def reports():
    expected = list(expected_tests())
    passing = [(name, None) for name in expected]
    cases = {
        "every test passed": _report(passing),
        "one failed": _report([(expected[0], "failure"), *passing[1:]]),
        "one error": _report([*passing[:-1], (expected[-1], "error")]),
        "one skipped": _report([(expected[0], "skipped"), *passing[1:]]),
        "one missing": _report(passing[1:]),
        "one more": _report([*passing, ("tests.test_path_rules.test_extra", None)]),
        "two more": _report([*passing, *((f"tests.test_x.test_{n}", None) for n in "ab")]),
        "failed, then errored in teardown": _report(
            [(expected[0], "failure"), (expected[0], "error"), *passing[1:]]
        ),
        "an empty case (pytest.exit)": _report(passing, '<testcase classname="" name=""/>'),
        "not XML": "<testsuites",
        "a DOCTYPE": '<!DOCTYPE x [<!ENTITY a "b">]>' + _report(passing),
        "no report": None,
    }  # fmt: skip
    lines = []
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        root = copy_sample(folder / "copy")
        changed = copy_sample(folder / "changed")
        (changed / TEST_FILE).write_text((SAMPLE_REPO / TEST_FILE).read_text() + "\n# edited\n")
        for label, text in cases.items():
            report = folder / "report.xml"
            report.unlink(missing_ok=True)
            if text is not None:
                report.write_text(text, encoding="utf-8")
            for exit_code in (0, 1, None):
                said = outcome_of(lambda c=exit_code, r=report: judge(root, c, r, timeout=15))
                lines.append(f"{label}, exit {exit_code} -> {said}")
            said = outcome_of(lambda r=report: judge(changed, 0, r))
            lines.append(f"{label}, exit 0, test file changed -> {said}")
    return lines


CHILD_OUTPUTS = [
    '{"case": 0, "answer": ["a"]}\n{"case": 1, "error": "ValueError: x"}',
    '{"case": 0, "answer": ["a"]}\n{"case": 0, "answer": ["b"]}',
    '{"case": 0, "answer": ["a"], "error": "both"}\n{"case": 1}',
    '{"case": 0, "error": 5}\n{"case": "1", "answer": []}\n{"case": true, "answer": []}',
    '{"case": 2, "answer": []}\n{"case": -1, "answer": []}\n[1, 2]\nnot json',
    '{"case": 1, "answer": "' + "x" * 2000 + '"}',
    '{"case": 1, "answer": "' + "x" * 1970 + '"}',
    "[" * 100_000,
]


def child_outputs():
    return [
        f"{text[:60]!r}... -> {outcome_of(lambda t=text: _answers(t, 2))}" for text in CHILD_OUTPUTS
    ]


FORGED = '{"case": 0, "answer": []}'  # what a real answer line looks like
SOURCES = {
    "the sample's": None,
    "a right repair": ('parts = path.split("/")', 'parts = path.replace("\\\\", "/").split("/")'),
    "raises": ("sources = []", "raise ValueError('no')"),
    "returns a tuple": ("return sources", "return tuple(sources)"),
    "returns bytes": ("return sources", "return [s.encode() for s in sources]"),
    "prints its own answers": ("sources = []", f"print({FORGED!r}); sources = []"),
    "exits": ("sources = []", "import os; os._exit(0)"),
    "loops": ("sources = []", "while True: pass"),
}  # fmt: skip


def held_out():
    """held_out_checks() on each source, in a real child (1 s for the one that loops)."""
    sample = (SAMPLE_REPO / "path_rules.py").read_text(encoding="utf-8")
    lines = []
    for label, change in SOURCES.items():
        source = sample if change is None else sample.replace(*change, 1)
        assert change is None or source != sample, label  # the change took
        checked = held_out_checks(source.encode(), timeout=1.0 if label == "loops" else 10.0)
        lines.append(f"{label} -> {json.dumps(checked, ensure_ascii=False)}")
    return lines


# file name -> the function that makes its lines
VERDICTS = {
    "verdict-reports.txt": reports,
    "verdict-child-outputs.txt": child_outputs,
    "verdict-held-out.txt": held_out,
}
