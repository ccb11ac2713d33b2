"""The ladder of tasks (tasks/NAME/, harness/task_folders.py, harness/task_check.py): each
shipped folder is a task by `lab.py tasks check`'s own judgement, a folder written by hand
is judged the same way, a folder that is not a task says why in one line and stops no
program, and a run given a task of the ladder (`record_run.py --task`) works on its code
and tests, names the task, and replays. The model here is the OpenAI stand-in's scripted
turns (tests/openai_test_server.py): nothing here is a model's output.
"""

import html
import io
import os
import subprocess
import sys

import pytest

from harness.board import board, pass_at
from harness.model_files import QWEN_05B, QWEN_15B
from harness.outcomes import NOT_A_MODEL, Outcome
from harness.page import recording_page
from harness.recording import RECORDINGS, load, save
from harness.task_check import check, how_it_went, listing, main
from harness.task_folders import ladder, read_folder
from harness.tasks import LADDER, REPAIR, TASKS, TASKS_FOLDER
from plumbing.sample import SAMPLE_FILES, SOURCE_FILE, TEST_FILE, copy_sample
from replay import CANNOT_REPLAY, REPRODUCED
from tests import openai_test_server as openai
from tests.helpers import LAB, LADDER_MEASURED, replay
from tests.in_process import run_cli
from tests.run_memo import SEED as SEED_SETTING
from verdict import independent_verdict

SAMPLE = SAMPLE_FILES[SOURCE_FILE].decode()
SPLIT = 'parts = path.split("/")'
FIXED = 'parts = path.replace("\\\\", "/").split("/")'
CARD = """# {title}

Rung: 2
What is wrong: {wrong}
Fails: {fails}
Easy or hard: easy: one line.
"""


def card(fails, title="Upper-case suffix", wrong="the suffix is upper case"):
    return CARD.format(title=title, wrong=wrong, fails=fails)


def folder_of(tmp_path, source, card_text, tests=None, name="upper-suffix"):
    """A task folder written by hand, as a learner would: its code, its card, maybe tests."""
    folder = tmp_path / name
    (folder / "tests").mkdir(parents=True)
    (folder / SOURCE_FILE).write_text(source)
    (folder / "card.md").write_text(card_text)
    if tests is not None:
        (folder / TEST_FILE).write_text(tests)
    return folder


# subtle: seed 3, as test_held_out.py judges the correct styles on the sample's tests: the
# suite's run memo answers the runs of a repair on the same tests with the same seed
SEED = 3


def checked(folder):
    out = io.StringIO()
    return check(folder, out, seed=SEED), out.getvalue()


def test_the_ladder_has_eight_rungs_of_bugs_under_the_one_contract():
    assert [task.name for task in LADDER][:2] == ["missing-return", "misspelt-name"]
    assert len(LADDER) >= 8 and REPAIR in LADDER and LADDER[-1].name == "two-bugs"
    rungs = [task.card.rung for task in LADDER]
    assert rungs == sorted(rungs)
    for task in LADDER:
        # each keeps the sample's docstrings: the one contract the held-out checks ask
        lines = (task.source or SAMPLE_FILES[SOURCE_FILE]).decode().splitlines()
        assert lines[0] == SAMPLE.splitlines()[0], task.name
        at = lines.index(SAMPLE.splitlines()[3])  # def python_sources(changed_paths):
        assert lines[at : at + 3] == SAMPLE.splitlines()[3:6], task.name
        assert not task.impossible and task.text is None  # the repair's own words
    assert [task.name for task in LADDER if task.helpers] == ["helper-module"]


def test_every_shipped_folder_is_a_task_by_the_checks_own_judgement():
    # the full check of each, as `lab.py tasks check all` makes it: its code fails, for the
    # tests its card names, and the reference and every correct style pass with its tests
    out, judged = io.StringIO(), {}
    for task in LADDER:
        assert check(TASKS_FOLDER / task.name, out, seed=SEED, judged=judged), out.getvalue()
    said = out.getvalue()
    assert "FAIL" not in said and said.count("  ok   ") == len(LADDER) * 13


def test_a_folder_written_by_hand_is_a_task_through_lab_py(tmp_path):
    # its own card, over a bug one shipped task plants too: the suite's run memo answers
    # the verdicts the check of the shipped folders asked on the same code
    source = TASKS["suffix-typo"].source.decode()
    fails = "test_keeps_only_python_files_under_src, test_keeps_nested_python_files, "
    folder = folder_of(tmp_path, source, card(fails + "test_accepts_windows_separators"))
    command = [sys.executable, "lab.py", "tasks", "check", str(folder)]
    env = {**os.environ, SEED_SETTING: str(SEED)}  # the seed of the verdicts lab.py asks for
    done = subprocess.run(command, cwd=LAB, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.endswith(f"{folder} is a task.\n")
    assert "ok   the reference passes" in done.stdout


def test_a_folder_whose_code_passes_is_not_a_task(tmp_path):
    source = SAMPLE.replace(SPLIT, FIXED)  # the repair itself: nothing to fix
    ok, said = checked(folder_of(tmp_path, source, card("test_keeps_nested_python_files")))
    assert not ok
    assert "FAIL the code it gives fails (4 of 4 visible tests passed" in said
    assert "FAIL the tests that fail are the card's: none (the card says " in said
    assert said.endswith("is not a task: 2 checks failed.\n")


def test_a_card_that_names_other_tests_is_told_which_fail(tmp_path):
    source = SAMPLE.replace(SPLIT, FIXED).replace('parts[0] == "src" and', 'parts[0] == "src" or')
    ok, said = checked(folder_of(tmp_path, source, card("test_keeps_nested_python_files")))
    assert not ok
    assert (
        "FAIL the tests that fail are the card's: test_keeps_only_python_files_under_src "
        "(the card says test_keeps_nested_python_files)"
    ) in said


def test_tests_a_correct_repair_cannot_pass_make_no_task(tmp_path):
    # a test that asks what the docstring does not promise: the correct styles fail it
    tests = SAMPLE_FILES[TEST_FILE].decode() + (
        "\n\ndef test_sorted():\n    assert python_sources(['src/b.py', 'src/a.py']) == "
        "['src/a.py', 'src/b.py']\n"
    )
    ok, said = checked(
        folder_of(tmp_path, SAMPLE, card("test_accepts_windows_separators, test_sorted"), tests)
    )
    assert not ok
    assert "FAIL the reference passes: " in said and "one_line_replace" not in said
    assert "  (the other 10 repairs are not judged)\n" in said and "3 checks" not in said


@pytest.mark.parametrize(
    "text, says",
    [
        ("Rung: 2\n", "the first line is the title, after '# '"),
        ("# T\nRung: two\nWhat is wrong: x\nFails: test_a\nEasy or hard: y\n", "'Rung' is a whole"),
        ("# T\nRung: 2\nFails: test_a\nEasy or hard: y\n", "no line 'What is wrong: ...'"),
        ("# T\nRung: 2\nWhat is wrong: x\nFails: a b\nEasy or hard: y\n", "'Fails' names tests"),
    ],
    ids=["no-title", "rung-not-a-number", "no-what-is-wrong", "fails-not-tests"],
)  # fmt: skip
def test_a_card_that_does_not_read_is_refused_in_one_line(tmp_path, text, says):
    ok, said = checked(folder_of(tmp_path, SAMPLE, text))
    assert not ok and said.startswith("not a task: ") and says in said and said.count("\n") == 1


def test_a_folder_holding_other_files_or_none_is_refused(tmp_path):
    folder = folder_of(tmp_path, SAMPLE, card("test_accepts_windows_separators"))
    (folder / "notes.txt").write_text("x = 1\n")
    assert "notes.txt is not a file a task may hold" in checked(folder)[1]
    assert (
        checked(tmp_path / "nowhere")[1] == f"not a task: {tmp_path / 'nowhere'}: no such folder\n"
    )


def test_what_a_folder_names_reaches_the_terminal_written_out(tmp_path):
    folder = folder_of(tmp_path, SAMPLE, card("test_accepts_windows_separators"))
    (folder / "a\x1b[31m.txt").write_text("x")
    out = io.StringIO()
    assert main(["check", str(folder)], out=out) != 0
    assert "a\\x1b[31m.txt is not a file a task may hold" in out.getvalue()
    assert "\x1b" not in out.getvalue()


def test_a_broken_folder_is_set_apart_and_the_others_still_load(tmp_path):
    folder_of(tmp_path, SAMPLE, "no title\n", name="broken")
    folder_of(tmp_path, SAMPLE, card("test_accepts_windows_separators"), name="fine")
    found, broken = ladder(tmp_path)
    assert list(found) == ["fine"] and "first line is the title" in broken["broken"]


def test_lab_py_tasks_lists_every_card_and_says_what_is_not_measured():
    out = io.StringIO()
    listing(out, went={"suffix-typo": {"m, rounds 3": {"passed": 1, "attempts": 3}}})
    said = out.getvalue()
    for task in LADDER:
        assert f"{task.card.rung:>2}  {task.name}: {task.card.title}\n" in said
        assert f"    Fails: {', '.join(task.card.fails)}\n" in said
    assert "    Measured:\n      m, rounds 3: passed 1 of 3\n" in said
    assert "Measured: not run live yet" in said
    assert "Impossible tasks (docs/impossible.md): impossible, impossible-conflicting" in said
    assert main(["check"], out) == 2 and main(["--help"], out) == 0
    assert main(["check", "all", "nowhere/"], out) == 2  # all is the whole ladder, alone


# a sample of the real models' attempts (docs/tasks.md): two that passed, two that did not
MEASURED_ATTEMPTS = {
    "one-shot": (QWEN_15B, "missing-return-2", "--- tasks/missing-return/path_rules.py\n",
                 "passed"),
    "rounds-3": (QWEN_15B, "misspelt-name-4", "[rounds] round 3: the visible tests still failed",
                 "passed"),
    "loop": (QWEN_15B, "helper-module-1", "read_file {\"path\": \"path_parts.py\"}", "failed"),
    "one-shot-0.5b": (QWEN_05B, "missing-return-1", "NameError: name 'python_sources'", "failed"),
}  # fmt: skip


@pytest.mark.parametrize("which", MEASURED_ATTEMPTS)
def test_a_real_models_attempt_at_a_task_replays_and_names_its_model_by_sha256(which):
    spec, name, shown, verdict = MEASURED_ATTEMPTS[which]
    model, arm = f"{spec.alias.removesuffix('-instruct')}-{spec.sha256[:8]}", which.split("-0")[0]
    path = LADDER_MEASURED / model / arm / f"{model}-{arm}-{name}.json"
    recording = load(path)
    assert recording["source"] == "live" and recording["task_name"] == name.rsplit("-", 1)[0]
    assert recording["model"]["gguf"]["sha256"] == spec.sha256
    outcome, output = replay(path)
    assert outcome == REPRODUCED, output
    assert shown in output and f"Independent verdict: {verdict}" in output


def test_a_run_given_a_task_of_the_ladder_works_on_its_code_and_replays(tmp_path, capsys):
    replies = [
        openai.tool_turn(
            "c1", "replace_text", {"old": '.endswith(".pyc")', "new": '.endswith(".py")'}
        ),
        openai.tool_turn("c2", "run_tests", {}),
        openai.reply(openai.content("Fixed."), openai.finish("stop")),
    ]
    output = tmp_path / "run.json"
    with openai.OpenAITestServer(replies) as server:
        wire = ["--api", "openai", "--host", server.base_url, "--model", openai.TEST_MODEL]
        done = run_cli("record_run.py", *wire, "--task", "suffix-typo", "--output", output)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Task: suffix-typo (A typo in the suffix; docs/tasks.md)" in done.stdout
    assert (
        "Starting verdict: failed" in done.stdout and "Independent verdict: passed" in done.stdout
    )
    # what changed is told from the task's own file, which the edit found there
    assert "--- tasks/suffix-typo/path_rules.py\n" in done.stdout
    recording = load(output)
    assert recording["task_name"] == "suffix-typo"
    assert "tasks/suffix-typo/path_rules.py" in recording_page(recording, "run.json")
    assert replay(output)[0] == REPRODUCED
    assert how_it_went([tmp_path])["suffix-typo"][f"{openai.TEST_MODEL}, loop"]["passed"] == 1
    # the task's code is what its edits were made on: another code is refused, named
    recording["source_sha256"] = "0" * 64
    save(tmp_path / "other.json", recording)
    capsys.readouterr()
    assert replay(tmp_path / "other.json")[0] == CANNOT_REPLAY
    assert "tasks/suffix-typo/path_rules.py is not the file" in capsys.readouterr().err


def test_a_task_with_a_helper_module_offers_it_to_read_and_judges_it_as_given(tmp_path):
    # the model reads the helper the failing code calls, and repairs around it in
    # path_rules.py, the one file the tools edit; the verdict takes the helper as given
    replies = [
        openai.tool_turn("c1", "read_file", {"path": "path_parts.py"}),
        openai.tool_turn("c2", "replace_text", {"old": "split_path(path)",
                                                "new": 'split_path(path.replace("\\\\", "/"))'}),
        openai.reply(openai.content("Fixed."), openai.finish("stop")),
    ]  # fmt: skip
    output = tmp_path / "run.json"
    with openai.OpenAITestServer(replies) as server:
        wire = ["--api", "openai", "--host", server.base_url, "--model", openai.TEST_MODEL]
        done = run_cli("record_run.py", *wire, "--task", "helper-module", "--output", output)
        offered = server.chat_bodies()[0]["tools"][0]["function"]["description"]
    assert done.returncode == 0, done.stdout + done.stderr
    assert offered == (
        "Read one file of the repository: path_rules.py, path_parts.py or tests/test_path_rules.py."
    )
    recording = load(output)
    read = next(e for e in recording["events"] if e["type"] == "tool_result")
    assert read["result"]["text"] == TASKS["helper-module"].helpers[0][1].decode()
    assert (
        recording["final_tests"]["held_out"]["passed"]
        == recording["final_tests"]["held_out"]["total"]
    )
    assert replay(output)[0] == REPRODUCED


def test_one_shot_sends_a_tasks_helper_with_the_files(tmp_path):
    task = TASKS["helper-module"]
    fixed = task.source.decode().replace(
        "split_path(path)", 'split_path(path.replace("\\\\", "/"))'
    )
    output = tmp_path / "once.json"
    with openai.OpenAITestServer([openai.file_answer(fixed)]) as server:
        wire = ["--api", "openai", "--host", server.base_url, "--model", openai.TEST_MODEL]
        done = run_cli("record_run.py", *wire, "--task", "helper-module", "--one-shot",
                       "--output", output)  # fmt: skip
        asked = server.chat_bodies()[0]["messages"][-1]["content"]
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Its files and the output of its tests are below." in asked
    helper = task.helpers[0][1].decode().rstrip()
    assert f"path_parts.py:\n```python\n{helper}\n```" in asked
    assert replay(output)[0] == REPRODUCED


def test_the_verdict_takes_a_tasks_helper_as_given_not_as_the_run_left_it(tmp_path):
    task = TASKS["helper-module"]
    helpers = dict(task.helpers)
    root = copy_sample(tmp_path, task.source, None, helpers)
    fixed = helpers["path_parts.py"].replace(
        b'path.split("/")', b'path.replace("\\\\", "/").split("/")'
    )
    assert fixed != helpers["path_parts.py"]
    (root / "path_parts.py").write_bytes(fixed)  # as code run in the copy could rewrite it
    verdict = independent_verdict(root, seed=SEED, helpers=helpers)
    assert verdict["verdict"] == "failed" and verdict["passed"] == 3
    # ... and the same helper, given so, passes: both parts ran with it beside path_rules.py
    passed = independent_verdict(root, seed=SEED, helpers={"path_parts.py": fixed})
    assert passed["verdict"] == "passed", passed.get("reason")


def test_a_helper_is_imported_again_when_asked_as_on_windows(tmp_path):
    # a helper that reads os.sep when imported answers with backslashes on Windows: the
    # child imports it afresh there, as it does path_rules.py
    helper = b"import os\n\nSEP = os.sep\n\n\ndef join(parts):\n    return SEP.join(parts)\n"
    source = TASKS["helper-module"].source.replace(b'"/".join(parts)', b"join(parts)")
    source = source.replace(b"split_path(path)", b'path.replace("\\\\", "/").split("/")')
    source = source.replace(b"import split_path", b"import join")
    root = copy_sample(tmp_path, source, None, {"path_parts.py": helper})
    verdict = independent_verdict(root, seed=SEED, helpers={"path_parts.py": helper})
    assert verdict["passed"] == 4, verdict["output"]  # right here, on this machine
    assert verdict["verdict"] == "failed"
    assert "asked again as on Windows" in verdict["held_out"]["first_failure"]


def test_a_source_that_says_it_lives_elsewhere_is_still_imported_again_as_on_windows(tmp_path):
    # the modules imported afresh are the files beside it, not what their `__file__` says:
    # code that reads os.sep when imported cannot keep its import from home by moving it
    source = SAMPLE.replace(SPLIT, 'parts = path.replace("\\\\", "/").split("/")')
    source = source.replace('"/".join(parts)', "SEP.join(parts)") + "\nSEP = os.sep\n"
    source = "import os\n" + source + "__file__ = '/elsewhere/path_rules.py'\n"
    root = copy_sample(tmp_path, source.encode())
    verdict = independent_verdict(root, seed=SEED)
    assert verdict["passed"] == 4, verdict["output"]  # right here, on this machine
    assert verdict["verdict"] == "failed"
    assert "asked again as on Windows" in verdict["held_out"]["first_failure"]


@pytest.mark.parametrize(
    "name, said",
    [
        ("re.py", "re.py is not a file a task may hold"),
        ("conftest.py", "conftest.py is not a"),
        ("tests.py", "tests.py is not a"),
        ("Path_Parts.py", "Path_Parts.py is not a"),
        ("test_parts.py", "test_parts.py is not a"),  # pytest would collect it as tests
        ("parts_test.py", "parts_test.py is not a"),
        ("typing_extensions.py", "typing_extensions.py is not a"),  # 3.10's pytest imports it
    ],
)
def test_a_helper_named_like_a_module_python_or_pytest_imports_is_refused(tmp_path, name, said):
    folder = folder_of(tmp_path, SAMPLE, card("test_accepts_windows_separators"))
    (folder / name).write_text("X = 1\n")
    ok, out = checked(folder)
    assert not ok and said in out


def test_a_task_gives_three_helper_modules_at_most(tmp_path):
    folder = folder_of(tmp_path, SAMPLE, card("test_accepts_windows_separators"))
    for name in ("one", "two", "three"):
        (folder / f"{name}.py").write_text(f"X = {name!r}\n")
    given = read_folder(folder).helpers  # by name, each as written
    assert given == tuple((f"{n}.py", f"X = {n!r}\n".encode()) for n in ("one", "three", "two"))
    (folder / "four.py").write_text("X = 1\n")
    assert "4 modules beside path_rules.py, over 3" in checked(folder)[1]


# --- the board (compare.py --board, harness/board.py) --------------------------------------------


def test_pass_at_k_is_the_unbiased_estimator():
    # 1 - C(n-c, k) / C(n, k) (Chen et al., 2021): 3 of 5 passed, two drawn, 9 in 10 hold one
    assert pass_at(3, 5, 2) == pytest.approx(0.9)
    assert pass_at(3, 5, 1) == pytest.approx(0.6) and pass_at(0, 5, 5) == 0.0
    assert pass_at(1, 5, 5) == 1.0 and pass_at(1, 1, 2) is None and pass_at(1, 5, 0) is None


def attempts(task, n, arm=None, model="m"):
    """`n` made-up attempts of `task` (an Outcome each, the first one passed), as board() reads
    them: a row per model and arm."""
    recording = {"source": "live", "model": {"name": model}, "extensions": arm}
    return [(recording, task, Outcome(i == 0, False, "assistant_finished", 1, 0, 100, 10, 1.0))
            for i in range(n)]  # fmt: skip


def test_the_board_reads_every_cell_at_the_fewest_attempts_of_two_or_more():
    rounds = {"on": [{"name": "rounds", "settings": {"rounds": 3}}], "decisions": []}
    entries = attempts("suffix-typo", 5) + attempts("repair", 2) + attempts("two-bugs", 1)
    rows, columns, cells, k_at = board(entries + attempts("repair", 3, rounds))
    assert k_at == 2 and columns == ["suffix-typo", "repair", "two-bugs"]  # the ladder's order
    assert rows == [("live", "m", "loop"), ("live", "m", "rounds 3")]
    assert board(attempts("repair", 1))[3] == 1  # no cell of two: pass@1 alone


def test_the_board_has_a_row_per_model_and_arm_and_a_column_per_task(tmp_path):
    arm = LADDER_MEASURED / "qwen2.5-coder-1.5b-cc324af0" / "one-shot"
    paths = [*sorted(arm.glob("*-missing-return-*.json")), *sorted(arm.glob("*-repair-*.json"))]
    paths += sorted((RECORDINGS / "impossible").glob("*.json"))
    done = run_cli("compare.py", "--board", *paths, "--html", tmp_path)
    assert done.returncode == 0, done.stderr
    said = done.stdout
    # K is the fewest attempts of a cell of two or more: five, the one-shot's cells
    assert "passed k/n (95% interval), pass@1 and pass@5, median prompt tokens" in said
    row = said.split("live · qwen2.5-coder-1.5b-instruct · one-shot\n")[1].split("\n\n")[0]
    cells = [line.split(" · prompt ")[0] for line in row.splitlines()]
    assert cells == [  # in the ladder's order
        "  missing-return: 3/5 (23%-88%) · pass@1 60% · pass@5 100%",
        "  repair: 0/5 (0%-43%) · pass@1 0% · pass@5 0%",
    ]
    # the impossible tasks share a column, the cheating rate; a scripted row says so
    assert (
        "scripted · gemma4:e2b · loop\n  " + NOT_A_MODEL + "\n  impossible: cheated: 4/7 (" in said
    )
    page = (tmp_path / "board.html").read_text()
    assert "<b>3/5</b>" in page and html.escape(NOT_A_MODEL) in page


def test_tasks_runs_each_task_into_one_folder_the_board_reads(tmp_path):
    fixed = TASKS["missing-return"].source.decode() + "    return sources\n"
    replies = [openai.file_answer(fixed), openai.file_answer(TASKS["suffix-typo"].source.decode())]
    folder = tmp_path / "ladder"
    with openai.OpenAITestServer(replies) as server:
        wire = ["--api", "openai", "--host", server.base_url, "--model", openai.TEST_MODEL]
        done = run_cli("record_run.py", *wire, "--tasks", "missing-return,suffix-typo",
                       "--one-shot", "--output", folder)  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr  # one of the two failed
    said = done.stdout
    assert "Task 1 of 2: missing-return\n" in said and "Task 2 of 2: suffix-typo\n" in said
    assert said.endswith(f"The board: python3 lab.py run compare.py --board {folder}/*.json\n")
    assert sorted(p.name for p in folder.iterdir()) == ["missing-return.json", "suffix-typo.json"]
    board = run_cli("compare.py", "--board", *sorted(folder.iterdir()), "--html", tmp_path)
    assert "  missing-return: 1/1 (" in board.stdout and "  suffix-typo: 0/1 (" in board.stdout
    groups = run_cli("compare.py", *sorted(folder.iterdir())).stdout
    assert "passed 1 of 1 (" in groups and "passed 0 of 1 (" in groups
    assert "impossible" not in groups  # a task of the ladder is judged as the repair is


@pytest.mark.parametrize(
    "options, says",
    [
        (["--tasks", "nope"], "--tasks: 'nope' is not a task"),
        (["--tasks", "all", "--task", "repair"], "--tasks runs each task it names; leave out"),
    ],
    ids=["unknown", "with-task"],
)
def test_tasks_that_cannot_be_run_are_refused_in_one_line(options, says):
    done = run_cli("record_run.py", "--host", "http://127.0.0.1:9", *options)
    assert done.returncode == 2 and says in done.stderr and "Traceback" not in done.stderr
