"""`--hook tests-after-edit`: after an edit that landed, the visible tests run, and their
one-line summary is added to the edit's result.

A small model often edits and edits again without running the tests, or spends a whole
turn on `run_tests` to learn what one edit did. The Claude Agent SDK's `PostToolUse` hook
runs after a tool and may add context to what the model reads next; this one runs the same
`run_tests` the model could have asked for (repo_tools.py: the same copy, the same
isolation, the same deadline) right after a `replace_text` that changed the file, and adds
`tests_after_edit` to the edit's result: "1 failed · 3 passed (verdict: failed)". The
model reads it with the edit's result, without spending a turn on it.

Decision: `added`, with the summary; the recording keeps the test run whole beside it
(`tests`: what run_tests returned, pytest's report of each test of an impossible task in
`by_test`), so an impossible task's outcome counts it as it counts the model's own runs
(harness/tasks.py): a contradicting test that passed only here was still made to pass.
Other calls, and edits that did not land, pass through without a decision.
"""

from extensions.hooks import Hook, landed
from harness.console import test_line
from harness.decisions import ADDED, TESTS_AFTER_EDIT


class TestsAfterEdit(Hook):
    name = TESTS_AFTER_EDIT  # the words harness/decisions.py reads, with ADDED
    helps = "after an edit that landed, the visible tests' one-line summary is added to its result"

    def around(self, name, arguments, call):
        result = call()
        if not landed(name, result):
            return result
        tests = self.tools.invoke("run_tests", {})  # RepoTools.run_tests, on the same copy
        # its one line (test_line, as the terminal says it), or the error it could not run with
        summary = tests.get("error") or f"{test_line(tests)} (verdict: {tests.get('verdict')})"
        self.decide(ADDED, summary, tests=tests)
        return {**result, "tests_after_edit": summary}
