"""pytest's JUnit report read as hostile input (plumbing/pytest_report.py), from files made
here: its size cap at the exact byte, declarations refused, cases pytest.exit leaves; and
the counts read from pytest's closing line alone."""

import os

import pytest

from plumbing.pytest_report import BadReport, count_results, read_report

CASE = '<testcase classname="{c}" name="{n}"{rest}'


def report(*cases, padding=0):
    body = "".join(cases)
    return f'<?xml version="1.0"?><testsuites><testsuite>{body}</testsuite></testsuites>' + (
        " " * padding
    )


def test_a_report_of_exactly_the_cap_is_read_and_one_byte_more_refused(tmp_path):
    # 1,000,000 bytes: the cap is the README's, and trailing spaces are valid XML.
    head = report(CASE.format(c="t", n="a", rest="/>"))
    path = tmp_path / "report.xml"
    path.write_text(report(CASE.format(c="t", n="a", rest="/>"), padding=1_000_000 - len(head)))
    assert read_report(path) == {"t.a": "passed"}
    path.write_text(path.read_text() + " ")
    with pytest.raises(BadReport, match="^the test report is larger than 1000000 bytes$"):
        read_report(path)


@pytest.mark.parametrize("declaration", ["<!DOCTYPE r>", '<!ENTITY e "x">'])
def test_a_declaration_is_refused_whichever_it_is(tmp_path, declaration):
    path = tmp_path / "report.xml"
    path.write_text(declaration + report())
    with pytest.raises(BadReport, match="declares a DOCTYPE, which pytest never writes"):
        read_report(path)


def test_a_report_that_is_not_a_regular_file_is_refused_with_the_reason(tmp_path):
    # A FIFO the tests left opens without blocking, and is refused by a reason with no errno
    # (strerror is None): the message itself is the reason.
    os.mkfifo(tmp_path / "report.xml")
    with pytest.raises(BadReport) as refused:
        read_report(tmp_path / "report.xml")
    assert str(refused.value) == "the test report cannot be read (report.xml is not a regular file)"


def test_a_case_without_a_class_or_a_name_is_not_a_test(tmp_path):
    # pytest writes such an empty case when pytest.exit stops a test: it is no test at all.
    cases = [
        CASE.format(c="", n="gone", rest="/>"),
        CASE.format(c="t", n="", rest="/>"),
        CASE.format(c="t", n="b", rest='><failure message="x"/></testcase>'),
    ]
    path = tmp_path / "report.xml"
    path.write_text(report(*cases))
    assert read_report(path) == {"t.b": "failed"}


def test_count_results_reads_only_pytests_closing_line():
    # mutation count_first_line: the first line that looks like a summary wins.
    output = "F....\nprinted by a test: 7 passed in 0.01s\n1 failed, 4 passed in 0.05s\n"
    assert count_results(output) == {"failed": 1, "passed": 4, "errors": 0}


def test_a_test_report_of_exactly_the_limit_is_read_one_byte_more_is_refused(tmp_path):
    # mutation: `len(data) > REPORT_LIMIT` -> `>=` refused a report of exactly the limit
    from plumbing.pytest_report import REPORT_LIMIT, BadReport, read_report

    report = b'<testsuites><testsuite><testcase classname="t" name="a"/></testsuite></testsuites>'
    path = tmp_path / "report.xml"
    path.write_bytes(report + b" " * (REPORT_LIMIT - len(report)))
    assert read_report(path) == {"t.a": "passed"}
    path.write_bytes(report + b" " * (REPORT_LIMIT + 1 - len(report)))
    with pytest.raises(BadReport, match="larger than"):
        read_report(path)
