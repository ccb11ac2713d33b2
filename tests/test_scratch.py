"""Every run's temporary folders (plumbing/scratch.py) are removed whatever the tests left
in them: a folder tree too deep to remove by recursion (made by the test, or by the edited
code at import), a link (removed, never followed). A folder that cannot be removed is a
warning, not an error, and neither the verdict nor the recording is lost. (Ctrl-C during
the clean-up is tests/test_ctrl_c.py's.)
"""

import os
import subprocess

from plumbing.scratch import remove_tree, scratch_folder
from repo_tools import RepoTools
from tests.in_process import run_cli
from tests.ollama_test_server import OllamaTestServer, call, chunk, reply
from verdict import independent_verdict

# Deeper than Python's recursion limit (1,000 frames), and a path longer than PATH_MAX
# (4,096 bytes): 1,100 folders of 4 letters each.
DEEP, NAME = 1100, "dddd"


def make_deep_tree(top, depth=DEEP):
    """`depth` nested folders below `top`, made one at a time relative to a descriptor."""
    current = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(depth):
        os.mkdir(NAME, dir_fd=current)
        below = os.open(NAME, os.O_RDONLY | os.O_DIRECTORY, dir_fd=current)
        os.close(current)
        current = below
    os.close(current)


def test_a_tree_deeper_than_recursion_allows_is_removed(tmp_path):
    top = tmp_path / "top"
    top.mkdir()
    make_deep_tree(top)
    (top / "file").write_text("x")
    os.symlink("/etc", top / "link")  # removed as a link, never followed
    try:
        remove_tree(top)
        assert not top.exists() and os.path.exists("/etc/passwd")
    finally:  # should remove_tree fail, pytest's own clean-up would hit RecursionError later
        subprocess.run(["rm", "-rf", "--one-file-system", str(top)], check=False)


def test_a_scratch_folder_that_cannot_be_removed_is_a_warning_not_an_error(capsys):
    with scratch_folder() as path:
        os.rename(path, path + "-moved")  # gone from under it: removal fails
    assert "warning: could not remove the temporary folder" in capsys.readouterr().err
    remove_tree(path + "-moved")


DEEP_AT_IMPORT = (
    "import os\n"
    "_fd = os.open('.', os.O_RDONLY)\n"
    f"for _ in range({DEEP}):\n"
    f"    os.mkdir({NAME!r}, dir_fd=_fd)\n"
    f"    _below = os.open({NAME!r}, os.O_RDONLY, dir_fd=_fd)\n"
    "    os.close(_fd)\n"
    "    _fd = _below\n"
    "os.close(_fd)\n\n\n"
)


def test_a_deep_tree_left_by_the_edited_code_costs_no_verdict(repo):
    RepoTools(repo).invoke(
        "replace_text",
        {"old": "def python_sources(", "new": DEEP_AT_IMPORT + "def python_sources("},
    )
    verdict = independent_verdict(repo)  # once a RecursionError from shutil.rmtree
    assert verdict["verdict"] == "failed" and verdict["passed"] == 3


def test_record_run_saves_its_recording_when_the_tests_leave_a_deep_tree(tmp_path):
    deep = call(
        "replace_text", old="def python_sources(", new=DEEP_AT_IMPORT + "def python_sources("
    )
    script = [
        reply(chunk(tool_calls=[deep]), chunk(done=True)),
        reply(chunk(tool_calls=[call("run_tests")]), chunk(done=True)),
        reply(chunk("done"), chunk(done=True)),
    ]
    output = tmp_path / "deep.json"
    with OllamaTestServer(script) as server:
        finished = run_cli("record_run.py", "--host", server.host, "--output", output)
    assert finished.returncode == 1, finished.stdout + finished.stderr
    assert "Traceback" not in finished.stderr and output.exists()
    assert "Independent verdict: failed" in finished.stdout
    replayed = run_cli("replay.py", output)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
