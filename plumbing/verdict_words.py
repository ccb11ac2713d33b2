"""The words a verdict is said in, for every module that writes or reads one.

`PASSED` and `FAILED` are the two verdicts; `TESTS_FAILED` (a code, compared whole) and
`TESTS_CHANGED` begin reasons (a verdict says the tests changed as a fact, `tests_changed`;
only the loader of recordings made before that field reads the words); `held_out_line`
says the held-out part in one line, and `held_out_note` what its words mean, once, where a
newcomer first meets them (HELD_OUT_DOCS, the page that says it in full, is linked from
each page). Here, below verdict.py and plumbing/pytest_run.py, so
that what reads a verdict (the terminal, the pages, replay's comparison, the tasks'
outcomes) never imports what runs tests.

Not here: deciding anything (verdict.py, plumbing/pytest_run.py, plumbing/held_out.py).
"""

PASSED, FAILED = "passed", "failed"  # the two verdicts
TESTS_FAILED = "not every test passed"  # the reason when the tests ran and some failed
TESTS_CHANGED = "tests changed"  # how every reason begins that says the tests changed


def held_out_line(held_out):
    """'held-out checks 9 of 10 passed (first failure: ...)', and with today's draw how
    many generated inputs were asked and on how many paths correct repairs differ; with
    the draw of /6 and /7, '(391 of 500 generated inputs asked, 109 unsettled; ...)'."""
    line = f"held-out checks {held_out['passed']} of {held_out['total']} passed"
    said = []
    if "unsettled" in held_out:  # today's: every input asked, its relations too
        drawn, unsettled = held_out["generated"], held_out["unsettled"]
        said.append(
            f"{drawn} generated inputs asked with their relations; on {unsettled} paths "
            "correct repairs differ, and any of their answers passes"
        )
    elif "asked" in held_out:  # formats /6 and /7: inputs kept out where styles disagree
        asked, drawn = held_out["asked"], held_out["generated"]
        said.append(f"{asked} of {drawn} generated inputs asked, {drawn - asked} unsettled")
    if held_out["first_failure"]:
        said.append(f"first failure: {held_out['first_failure']}")
    return line + (f" ({'; '.join(said)})" if said else "")


# Where the held-out checks are explained in full: the terminal names it, a page links it.
HELD_OUT_DOCS = "docs/stop-and-verdict.md#the-verdict-in-full"


def held_out_note(held_out):
    """What `held_out_line`'s words mean, in one line for the first verdict a command shows:
    what the checks are, why their count changes from run to run, and the word of the
    recording's own draw that a newcomer cannot guess (`relations` today, `unsettled` in
    /6 and /7); the first draw (/3 to /5) and the fixed cases (/2) always count the same.

    subtle: held_out_line's own text is not changed for this: recordings store it."""
    said = "inputs the model never saw, answered by its code in a child process, judged outside it"
    if "unsettled" in held_out:  # today's draw
        said += (
            "; how many depends on the seed each run draws; relations: a list asked again "
            "permuted, with each path twice, joined to another or after the others"
        )
    elif "asked" in held_out:  # the draw of /6 and /7
        said += (
            "; how many depends on the seed each run draws; unsettled: drawn inputs on which "
            "correct repairs disagree, left out"
        )
    return f"(held-out: {said}; see {HELD_OUT_DOCS})"
