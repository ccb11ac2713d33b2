"""The suite's memo of sandboxed runs (tests/run_memo.py): a run is answered from it only
when the same command ran on the same bytes under bubblewrap and left its folders as it
found them; everything else is a new process. It wraps the lab's runs in every process of
the suite (this one, and the programs a test starts), and the lab itself knows nothing of
it. Each run here prints a random token, so two answers are equal only when the second came
from the memo."""

import ast
import dataclasses
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from plumbing import child_process
from plumbing.isolation import BUBBLEWRAP, isolation_kind, isolation_prefix
from tests import code_cache, run_memo
from tests.helpers import folder_setting

LAB = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(
    isolation_kind() != BUBBLEWRAP,
    reason="bubblewrap is not installed (apt-get install bubblewrap)",
)
TOKEN = "import secrets; print(secrets.token_hex(8))"


@pytest.fixture
def memo(tmp_path, monkeypatch):
    return folder_setting(tmp_path, monkeypatch, "memo", run_memo.SETTING)


def copy_of(tmp_path, name, text="x = 1\n"):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "data.py").write_text(text)
    return folder.resolve()


def memo_run(folder, code=TOKEN, sandboxed=True, timeout=10, outputs=()):
    prefix = isolation_prefix(BUBBLEWRAP, writable=(folder, *outputs)) if sandboxed else []
    command = [sys.executable, "-I", "-c", code]
    return run_memo.run_once(
        child_process, prefix, command, folder, timeout, sandboxed=sandboxed, inputs=(folder,),
        outputs=outputs,
    )  # fmt: skip


def test_the_same_run_in_another_copy_is_answered_from_the_memo(memo, tmp_path):
    first = memo_run(copy_of(tmp_path, "a"))
    assert first[0] == 0 and len(first[1].strip()) == 16
    assert memo_run(copy_of(tmp_path, "b")) == first
    assert len(list(memo.glob("*.json"))) == 1


def test_one_changed_byte_in_an_input_is_a_new_run(memo, tmp_path):
    first = memo_run(copy_of(tmp_path, "a"))
    assert memo_run(copy_of(tmp_path, "b", text="x = 2\n")) != first


def test_another_command_is_a_new_run(memo, tmp_path):
    first = memo_run(copy_of(tmp_path, "a"))
    assert memo_run(copy_of(tmp_path, "b"), code=TOKEN + "; print()") != first


def test_without_the_setting_every_run_is_a_new_process(tmp_path, monkeypatch):
    monkeypatch.setenv(run_memo.SETTING, "")
    folder = copy_of(tmp_path, "a")
    assert memo_run(folder) != memo_run(folder)


def test_a_run_that_is_not_sandboxed_is_never_kept(memo, tmp_path):
    folder = copy_of(tmp_path, "a")
    assert memo_run(folder, sandboxed=False) != memo_run(folder, sandboxed=False)
    assert list(memo.iterdir()) == []


def test_a_run_whose_output_was_cut_is_never_kept(memo, tmp_path):
    # its tail is not what another run would print; the fact is the dropped count, not a mark
    code = "print('x' * 70_000); " + TOKEN
    first = memo_run(copy_of(tmp_path, "a"), code=code)
    assert first[1].startswith("[... ") and memo_run(copy_of(tmp_path, "b"), code=code) != first
    assert list(memo.iterdir()) == []


def test_output_that_only_begins_like_the_cut_mark_is_kept(memo, tmp_path):
    code = "print('[... 3 earlier bytes of output dropped]'); " + TOKEN
    first = memo_run(copy_of(tmp_path, "a"), code=code)
    assert first[1].startswith("[... ") and memo_run(copy_of(tmp_path, "b"), code=code) == first
    assert len(list(memo.glob("*.json"))) == 1


def test_a_run_that_changes_its_input_is_never_kept(memo, tmp_path):
    code = TOKEN + "; open('left.txt', 'w').write('behind')"
    first = memo_run(copy_of(tmp_path, "a"), code=code)
    again = copy_of(tmp_path, "b")
    assert memo_run(again, code=code) != first and (again / "left.txt").read_text() == "behind"
    assert list(memo.iterdir()) == []


def test_a_timed_out_run_is_never_kept(memo, tmp_path):
    assert memo_run(copy_of(tmp_path, "a"), code="while True: pass", timeout=0.5)[0] is None
    assert list(memo.iterdir()) == []


def test_what_a_run_wrote_is_written_again_naming_the_folder_that_asks(memo, tmp_path):
    code = TOKEN + "; import os, sys; open(sys.argv[1] + '/report.txt', 'w').write(os.getcwd())"

    def report(name):
        folder, out = copy_of(tmp_path, name), tmp_path / f"{name}-out"
        out.mkdir()
        prefix = isolation_prefix(BUBBLEWRAP, writable=(folder, out.resolve()))
        command = [sys.executable, "-I", "-c", code, str(out.resolve())]
        said = run_memo.run_once(
            child_process, prefix, command, folder, 10, sandboxed=True, inputs=(folder,),
            outputs=(out.resolve(),),
        )  # fmt: skip
        return said, (out / "report.txt").read_text(), folder

    (said_a, written_a, folder_a), (said_b, written_b, folder_b) = report("a"), report("b")
    assert said_a == said_b  # the second came from the memo ...
    assert (written_a, written_b) == (str(folder_a), str(folder_b))  # ... naming its own copy


def copy_of_the_lab(tmp_path):
    """The lab's top folder's sources, plumbing/ and sample_repo/ copied into tmp_path/lab."""
    copy = tmp_path / "lab"
    for folder in ("plumbing", "sample_repo"):
        shutil.copytree(LAB / folder, copy / folder, ignore=shutil.ignore_patterns("__pycache__"))
    for path in LAB.glob("*.py"):
        (copy / path.name).write_bytes(path.read_bytes())
    return copy


def test_a_copy_of_the_lab_with_another_sandbox_never_shares_a_run(tmp_path):
    # the key holds the sources of the lab whose run it is: a copy whose isolation.py
    # differs (a test that breaks the sandbox on purpose, say) gets other keys than this
    # lab's runs
    copy, digest = copy_of_the_lab(tmp_path), run_memo.lab_digest.__wrapped__  # uncached
    assert digest(copy) == run_memo.lab_digest(LAB)
    with open(copy / "plumbing" / "isolation.py", "a") as isolation:
        isolation.write("# another sandbox\n")
    assert digest(copy) != run_memo.lab_digest(LAB)


# --- what a tree's digest holds, and when there is none ---------------------------------------


def tree(tmp_path, name, files=(), links=(), depth=0):
    """A folder `name` with `files` ({path: text}), `links` ({path: target}) and a chain of
    `depth` nested folders."""
    root = tmp_path / name
    root.mkdir()
    for path, text in dict(files).items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    for path, target in dict(links).items():
        (root / path).symlink_to(target)
    chain = root
    for _ in range(depth):
        chain = chain / "d"
    chain.mkdir(parents=True, exist_ok=True)
    return root


def test_a_trees_digest_holds_its_sub_folders_files_and_its_links_targets_unfollowed(tmp_path):
    files = {"sub/data.py": "x = 1\n", "one.txt": "same", "two.txt": "same"}
    digest = run_memo.tree_digest(tree(tmp_path, "a", files, {"link": "one.txt"}))
    assert digest == run_memo.tree_digest(tree(tmp_path, "b", files, {"link": "one.txt"}))
    other_file = {**files, "sub/data.py": "x = 2\n"}
    assert digest != run_memo.tree_digest(tree(tmp_path, "c", other_file, {"link": "one.txt"}))
    # the same bytes behind another name: a link is its target's name, never followed
    assert digest != run_memo.tree_digest(tree(tmp_path, "d", files, {"link": "two.txt"}))
    assert run_memo.tree_digest(tree(tmp_path, "e", files, {"link": "nowhere"})) is not None


def test_a_tree_deeper_or_larger_than_its_bounds_is_not_digested(tmp_path):
    # bounds, so a run that leaves a tree of a million entries costs no million reads
    assert run_memo.tree_digest(tree(tmp_path, "deep", depth=32)) is not None
    assert run_memo.tree_digest(tree(tmp_path, "deeper", depth=33)) is None
    many = {f"f{n}": "" for n in range(5000)}
    assert run_memo.tree_digest(tree(tmp_path, "large", many)) is not None
    more = {**many, "one-more": ""}
    assert run_memo.tree_digest(tree(tmp_path, "larger", more)) is None


def test_a_run_on_a_tree_that_cannot_be_digested_is_never_kept(memo, tmp_path):
    folder = tree(tmp_path, "a", {"data.py": "x = 1\n"}, depth=33)
    assert memo_run(folder.resolve()) != memo_run(folder.resolve())
    assert list(memo.iterdir()) == []


@pytest.mark.parametrize(
    "make", ["os.mkdir(OUT + '/made')", "os.symlink(OUT + '/../a/data.py', OUT + '/made')"]
)
def test_a_run_leaving_a_folder_or_a_link_in_its_outputs_is_never_kept(memo, tmp_path, make):
    # only regular files directly in an output folder are written again: a link would come
    # back as a file holding its target's bytes
    folder, out = copy_of(tmp_path, "a"), (tmp_path / "out").resolve()
    out.mkdir()
    code = TOKEN + f"; import os; OUT = {str(out)!r}; " + make
    first = memo_run(folder, code=code, outputs=(out,))
    assert first[0] == 0, first
    made = out / "made"
    made.unlink() if made.is_symlink() else made.rmdir()
    assert memo_run(folder, code=code, outputs=(out,)) != first
    assert list(memo.iterdir()) == []


def test_an_empty_setting_names_no_memo(monkeypatch):
    monkeypatch.setenv(run_memo.SETTING, "")
    assert run_memo.folder() is None


class Session:
    """What `start` reads of a controller's pytest config: no worker, with workers of its own,
    and the cleanups it registers (run here, at the test's end)."""

    def __init__(self):
        self.option, self.cleanups = type("Option", (), {"numprocesses": 2}), []

    def add_cleanup(self, cleanup):
        self.cleanups.append(cleanup)


@pytest.mark.parametrize("given, kept", [("", True), (None, False)], ids=["empty", "unset"])
def test_a_setting_whoever_starts_the_suite_gives_is_kept_and_none_is_made_for_it(
    monkeypatch, given, kept
):
    # `LAB_RUN_MEMO= python3 lab.py test` runs every sandboxed run anew: the session makes
    # no memo of its own over an empty setting; unset, it makes one for the session
    if given is None:
        monkeypatch.delenv(run_memo.SETTING, raising=False)
    else:
        monkeypatch.setenv(run_memo.SETTING, given)
    monkeypatch.setenv(run_memo.SEED, "7")  # given too: no seed drawn
    session = Session()
    try:
        run_memo.start(session)
        assert (os.environ.get(run_memo.SETTING) == "") is kept
        assert kept or Path(os.environ[run_memo.SETTING]).is_dir()
    finally:
        for cleanup in reversed(session.cleanups):
            cleanup()


# --- how the memo reaches the lab's runs, and that the lab knows nothing of it -----------------


def test_in_the_suites_processes_every_module_holds_the_wrapped_runs_and_seed():
    # wrapped before any module took their names (conftest.py's pytest_configure)
    import record_run
    import verdict
    from plumbing import generated_cases, held_out, pytest_run, relations

    assert child_process.run_isolated.__wrapped__ and generated_cases.new_seed.__wrapped__
    assert held_out.planned is relations.planned and relations.planned.__wrapped__
    assert held_out.run_isolated is pytest_run.run_isolated is child_process.run_isolated
    assert verdict.new_seed is record_run.new_seed is generated_cases.new_seed


def test_what_an_interpreter_a_test_starts_wraps_is_what_the_memo_wraps():
    tree = ast.parse((run_memo.START / "sitecustomize.py").read_text(encoding="utf-8"))
    (wrapped,) = [
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "WRAPPED"
    ]
    assert wrapped == tuple(run_memo.WRAPS)


def test_a_sitecustomize_the_suites_start_up_module_hides_still_runs(tmp_path, monkeypatch):
    # as the Python installation's would (Debian's, say): only the suite's folder leaves
    (tmp_path / "sitecustomize.py").write_text("print('the hidden one ran')\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(run_memo.START), str(tmp_path)]))
    ask = "import sys; print(sys.argv[1] in sys.path, sys.argv[2] in sys.path)"
    done = subprocess.run(
        [sys.executable, "-c", ask, str(run_memo.START), str(tmp_path)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.stdout == "the hidden one ran\nFalse True\n", done.stdout + done.stderr


def test_a_plan_one_process_made_is_what_a_program_of_the_session_gets(memo):
    from plumbing import relations

    made = relations.planned(777_001, 40)  # a seed no other test asks
    (kept,) = memo.glob("plan-*")
    # the kept plan changed where no plan could be: the program's answer is read from it
    kept.write_bytes(pickle.dumps(dataclasses.replace(made, unsettled=-1)))
    ask = "from plumbing import relations; print(relations.planned(777_001, 40).unsettled)"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(run_memo.START), str(LAB)])}
    for setting, said in [(str(memo), "-1"), ("", str(made.unsettled))]:  # "": no memo
        done = subprocess.run(
            [sys.executable, "-c", ask], capture_output=True, text=True, timeout=60, cwd=LAB,
            env={**env, run_memo.SETTING: setting},
        )  # fmt: skip
        assert done.stdout.strip() == said, done.stderr


def test_a_run_through_the_labs_run_isolated_is_answered_from_the_memo(memo, tmp_path):
    # the lab's own run_isolated, user, command and all, around the answer
    def ran(name):
        folder = copy_of(tmp_path, name)
        command = [sys.executable, "-I", "-c", TOKEN]
        return child_process.run_isolated(BUBBLEWRAP, command, folder, 30, writes=(folder,))

    first = ran("a")
    assert first.exit_code == 0 and first.outsider is None and len(first.output.strip()) == 16
    assert ran("b") == first
    assert len(list(memo.glob("*.json"))) == 1


# A program as a test starts one: the suite's environment, the lab's own run_isolated called
# in it, its answer printed with what the program's modules hold, what its start-up guard
# says of its installation, and the seed a new verdict would draw.
PROGRAM = f"""
import sys
from plumbing import child_process, generated_cases, held_out, pytest_run
from plumbing.isolation import BUBBLEWRAP
from plumbing.startup_guard import planted
folder = sys.argv[1]
ran = child_process.run_isolated(
    BUBBLEWRAP, [sys.executable, "-I", "-c", {TOKEN!r}], folder, 30, writes=(folder,)
)
same = held_out.run_isolated is pytest_run.run_isolated is child_process.run_isolated
print(ran.exit_code, ran.output.strip(), same, planted(), generated_cases.new_seed())
"""


def program(lab, folder, **env):
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, str(folder)],
        cwd=lab, capture_output=True, text=True, timeout=120, env={**os.environ, **env},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_program_a_test_starts_answers_its_runs_from_the_memo_with_the_sessions_seed(
    memo, tmp_path, monkeypatch
):
    monkeypatch.setenv(run_memo.SEED, "12345")
    first = program(LAB, copy_of(tmp_path, "a"))
    # wrapped everywhere; nothing named as planted; the session's seed
    assert first.endswith(" True None 12345"), first
    assert program(LAB, copy_of(tmp_path, "b")) == first
    assert len(list(memo.glob("*.json"))) == 1
    # the key holds the sources of the lab the program runs: a copy shares the run until
    # its sandbox differs
    copy = copy_of_the_lab(tmp_path)
    assert program(copy, copy_of(tmp_path, "c")) == first
    with open(copy / "plumbing" / "isolation.py", "a") as isolation:
        isolation.write("# another sandbox\n")
    assert program(copy, copy_of(tmp_path, "d")) != first


def test_without_the_suites_start_up_folder_the_lab_never_reads_the_memo_or_the_seed(
    memo, tmp_path, monkeypatch
):
    monkeypatch.setenv(run_memo.SEED, "12345")
    kept = program(LAB, copy_of(tmp_path, "a"))
    alone = program(LAB, copy_of(tmp_path, "b"), PYTHONPATH=run_memo.path_without_start())
    assert kept.split()[:2] != alone.split()[:2]  # a new process, though the memo holds one
    assert len(list(memo.glob("*.json"))) == 1
    assert alone.split()[-1] != "12345"  # the lab's own draw


def test_nothing_of_the_lab_outside_its_tests_names_the_memo_the_code_cache_or_their_settings():
    # the lab a learner runs: every Python file but the tests' (conftest.py is pytest's)
    names = ("run_memo", "suite_start", run_memo.SETTING, run_memo.SEED, "suite_settings",
             code_cache.SETTING, "code_cache")  # fmt: skip
    files = [*LAB.glob("*.py"), *(p for f in FLOORS for p in (LAB / f).rglob("*.py"))]
    product = [p for p in files if p.name != "conftest.py" and not p.name.startswith("test_")]
    assert len(product) > 50
    assert [(p.name, n) for p in product for n in names if n in p.read_text("utf-8")] == []


FLOORS = ("plumbing", "harness", "extensions")  # the lab's folders of modules, beside its top


# --- the suite's one seed for new verdicts ------------------------------------------------------


def test_a_new_verdict_in_the_suite_draws_the_sessions_seed_folded_below_the_limit(monkeypatch):
    # so that the suite's verdicts of one source share one held-out run
    from plumbing.generated_cases import SEED_LIMIT, new_seed

    monkeypatch.setenv(run_memo.SEED, "12345")
    assert new_seed() == 12345
    monkeypatch.setenv(run_memo.SEED, str(SEED_LIMIT + 5))
    assert new_seed() == 5
    for unusable in ("", "-1", "x"):  # not a seed: the lab's own draw
        monkeypatch.setenv(run_memo.SEED, unusable)
        assert new_seed() != new_seed()
