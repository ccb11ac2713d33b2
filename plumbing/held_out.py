"""The held-out checks: inputs the model never sees, asked of the edited function in a child.

verdict.py's second part. The ten fixed cases below and the generated ones
(plumbing/generated_cases.py) go to `python_sources` in a child process under the same
isolation as the tests; the child sends its answers back as plain JSON, and they are
compared here, in the harness's own process, with the expected ones. Beside the answers,
the contract the docstring implies: the caller's list is left as it was, no later call
changes an earlier answer, and the fixed cases asked again after all the others get the
same answers.

Not here: the visible tests or the verdict itself (verdict.py), how a child is bounded
(plumbing/child_process.py, plumbing/bounds.py) or isolated (plumbing/isolation.py).
"""

import functools
import json
import subprocess
import sys
from pathlib import Path

from plumbing import bounds
from plumbing.generated_cases import DEFAULT_COUNT, generated, reference
from plumbing.isolation import BUBBLEWRAP, chosen, isolation_prefix
from plumbing.run_memo import run_once
from plumbing.sample import SOURCE_FILE
from plumbing.scratch import scratch_folder

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
ANSWER_LIMIT = 100_000  # characters of one answer line read at most (a long list's answer)
ANSWERS_KEPT = 16 * 1024 * 1024  # bytes of the child's output held: every answer, with room
CASES_FILE = "cases.json"  # the inputs, beside path_rules.py: too many for a command line

# The child that asks the edited function. It reads its inputs before importing the edited
# module, and answers on its own copy of stdout: what the edited code prints goes to stderr.
# Each answer is labelled with its case, so a stray line cannot shift the others; it says
# when the list it was given came back changed. Once every case is asked, it checks that
# no later call changed an earlier answer, and says it has ended: without that line, no
# case passes. Its names live inside a function, so the edited code finds little in
# __main__ to tell it is checked.
CHILD = """\
def ask():
    import json, os, sys
    with open("cases.json", encoding="utf-8") as given:
        cases = json.load(given)
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
    kept = {}
    for number, changed in enumerate(cases):
        given = list(changed)
        try:
            result = python_sources(given)
            text = json.dumps(result)
            after = json.dumps(given)
        except BaseException as error:
            send(number, error=problem(error))
            continue
        kept[number] = (result, text)
        changed_argument = {} if after == json.dumps(changed) else {"argument": json.loads(after)}
        send(number, answer=json.loads(text), **changed_argument)
    for number, (result, text) in kept.items():
        try:
            later = json.dumps(result)
        except BaseException as error:
            later = json.dumps(problem(error))
        if later != text:
            send(number, later=json.loads(later))
    send(len(cases), end=True)
ask()
"""


@functools.lru_cache(maxsize=4)  # both verdicts of a run ask the same: drawn once
def cases_for(seed, count):
    """(input, expected, what it is) for each case asked: the fixed cases; with `count`,
    then the generated ones against the reference, then the fixed ones again (a tuple,
    shared by whoever asks for the same seed and count)."""
    fixed = [(changed, expected, None) for changed, expected in HELD_OUT]
    if not count:
        return tuple(fixed)  # a recording of format /2 asked the fixed cases alone
    # shortest first, so the first failure reported is one a person can read at a glance
    inputs = sorted(generated(seed, count), key=lambda changed: len(_json(changed)))
    drawn = [
        (changed, reference(changed), f"generated input {number} of {count}")
        for number, changed in enumerate(inputs, start=1)
    ]
    again = [
        (changed, expected, "asked again after all the others") for changed, expected, _ in fixed
    ]
    return tuple(fixed + drawn + again)


def held_out_checks(
    source, isolate=True, seed=0, count=DEFAULT_COUNT, timeout=HELD_OUT_TIMEOUT, cases=None
):
    """{"passed", "total", "first_failure", "seed", "generated"}: how many cases (see
    `cases_for`) the edited `source` (bytes of path_rules.py) answers right, asked in an
    isolated child, judged here. `seed` and `generated` are left out when `count` is 0.

    A case passes only if its answer is a list of strings equal to the expected one, the
    list it was given came back unchanged, no later call changed the answer, and the child
    reached its end. No answer (an exit, a crash, a timeout), an error, or anything that
    is not plain JSON fails it. `cases`, (input, expected) pairs, asks those alone.
    """
    if cases is not None:
        cases, count = [(changed, expected, None) for changed, expected in cases], 0
    else:
        cases = cases_for(seed, count)
    with scratch_folder(prefix="agent-lab-") as scratch:
        folder = Path(scratch)
        place = str(folder.resolve())
        (folder / SOURCE_FILE).write_bytes(source)
        (folder / CASES_FILE).write_text(json.dumps([changed for changed, _, _ in cases]))
        kind = chosen(isolate)
        prefix = isolation_prefix(kind, readable=(place,))
        command = [sys.executable, "-I", "-c", CHILD]
        exit_code, output = run_once(  # plumbing/run_memo.py: a new process, but in the suite
            prefix, command, folder, timeout, sandboxed=kind == BUBBLEWRAP,
            inputs=(place,), stderr=subprocess.DEVNULL, keep=ANSWERS_KEPT,
        )  # fmt: skip
    # subtle: an error may name the temporary folder (an ImportError names the file); it
    # is another folder at each run, so a replay names it as the recording did: `.`
    answers, later, ended = _answers(output.replace(place, "."), len(cases))
    ending = f"timed out after {timeout:g} s" if exit_code is None else f"exit {exit_code}"
    passed, first_failure = 0, None
    for number, (changed, expected, what) in enumerate(cases):
        answer = answers.get(number)
        if answer is None:
            failure = f"{_json(changed)} gave no answer ({ending})"
        elif "error" in answer:  # bounds.note: which limit the error shows, if one
            failure = f"{_json(changed)} raised {answer['error']}{bounds.note(answer['error'])}"
        elif not (_plain_list_of_text(answer.get("answer")) and answer["answer"] == expected):
            failure = f"{_json(changed)} gave {_json(answer.get('answer'))}"
        elif "argument" in answer:
            failure = f"{_json(changed)} changed the caller's list to {_json(answer['argument'])}"
        elif number in later:
            failure = (
                f"{_json(changed)} gave an answer a later call changed to {_json(later[number])}"
            )
        elif not ended:
            failure = f"{_json(changed)}: the checks after the last call never ended ({ending})"
        else:
            passed += 1
            continue
        said = f"{what}: " if what else ""
        first_failure = first_failure or f"{said}{failure}, not {_json(expected)}"[:300]
    result = {"passed": passed, "total": len(cases), "first_failure": first_failure}
    return {**result, **({"seed": seed, "generated": count} if count else {})}


def _answers(output, count):
    """({case: {"answer": ..., maybe "argument": ...} or {"error": text}}, {case: the
    answer as a later call left it}, whether the child said it ended) from its lines. The
    first well-formed line of each kind for a case counts; anything else is ignored."""
    found, later, ended = {}, {}, False
    for line in output.splitlines():
        if len(line) > ANSWER_LIMIT:
            continue  # an answer fits; a longer line is only work to parse
        try:
            answer = json.loads(line)
        except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth
            continue
        if not isinstance(answer, dict) or type(answer.get("case")) is not int:
            continue
        if answer.get("end") is True and answer["case"] == count:
            ended = True
        elif answer["case"] not in range(count):
            continue
        elif "later" in answer:
            later.setdefault(answer["case"], answer["later"])
        elif ("answer" in answer) != ("error" in answer) and isinstance(
            answer.get("error", ""), str
        ):  # exactly one of the two, and an error is text
            found.setdefault(answer["case"], answer)
    return found, later, ended


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
