"""What the tests can leave behind in the copy, and the harness survives: a folder tree too
deep to remove by recursion, a FIFO or a device where path_rules.py was, a sparse file of a
gigabyte. Nothing is lost, nothing hangs, nothing is read whole.
"""

import os
import resource
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from plumbing.sample import SOURCE_FILE
from plumbing.scratch import remove_tree, scratch_folder
from repo_tools import READ_LIMIT, RepoTools
from tests.helpers import sigint_default
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


@pytest.mark.parametrize("tool", ["read_file", "replace_text"])
def test_a_fifo_where_the_source_was_is_refused_not_waited_on(repo, tool):
    # once the model's next read_file blocked on it for good, deadline or not
    (repo / SOURCE_FILE).unlink()
    os.mkfifo(repo / SOURCE_FILE)
    arguments = {"path": SOURCE_FILE} if tool == "read_file" else {"old": "a", "new": "b"}
    result = RepoTools(repo).invoke(tool, arguments)
    assert result == {
        "error": f"{SOURCE_FILE} cannot be read ({SOURCE_FILE} is not a regular file)"
    }
    assert stat.S_ISFIFO(os.stat(repo / SOURCE_FILE).st_mode)  # left as it was


def test_a_sparse_gigabyte_is_not_read_whole(repo):
    source = repo / SOURCE_FILE
    with open(source, "r+b") as file:
        file.truncate(1 << 30)  # a GiB of zero bytes, no disk used
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB
    result = RepoTools(repo).invoke("read_file", {"path": SOURCE_FILE})
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown < 50_000, f"the harness grew by {grown} KiB"
    assert len(result["text"]) <= READ_LIMIT + 100
    assert result["text"].endswith(f"[... cut: the file has {1 << 30} bytes]")
    edit = RepoTools(repo).invoke("replace_text", {"old": "def", "new": "def"})
    assert edit == {"error": f"{SOURCE_FILE} is larger than 1000000 bytes; it cannot be edited"}


@pytest.mark.parametrize("kind", ["device", "fifo", "link"])
def test_output_that_is_not_a_regular_file_is_refused_even_with_force(tmp_path, kind):
    # as root, `--output /dev/null --force` once replaced the machine's /dev/null
    target = tmp_path / "target"
    if kind == "device":
        target = Path("/dev/null")
    elif kind == "fifo":
        os.mkfifo(target)
    else:
        (tmp_path / "real.json").write_text("keep me")
        target.symlink_to(tmp_path / "real.json")
    before = os.lstat(target)
    finished = run_cli("record_run.py", "--host", "http://127.0.0.1:9", "--output", target,
                       "--force")  # fmt: skip
    assert finished.returncode == 2
    assert finished.stderr == (
        f"error: {target} is not a regular file (a link, a device or a FIFO); give --output "
        "the name of a new or a regular file\n"
    )
    after = os.lstat(target)
    assert (after.st_mode, after.st_ino, after.st_rdev) == (
        before.st_mode,
        before.st_ino,
        before.st_rdev,
    )
    if kind == "link":
        assert (tmp_path / "real.json").read_text() == "keep me"


def test_output_that_is_a_folder_is_refused_before_any_run(tmp_path):
    finished = run_cli("record_run.py", "--host", "http://127.0.0.1:9", "--output", tmp_path)
    assert finished.returncode == 2
    assert finished.stderr == f"error: {tmp_path} is a folder; give --output a file name\n"
    assert list(tmp_path.iterdir()) == []


def test_save_refuses_to_replace_anything_but_a_regular_file(tmp_path):
    from plumbing.recording import save

    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(OSError, match="is not a regular file"):
        save(tmp_path / "fifo", {"format": "x"})
    assert stat.S_ISFIFO(os.lstat(tmp_path / "fifo").st_mode)


def test_a_non_blocking_file_with_nothing_to_give_reads_as_empty_not_none():
    # /proc/kmsg looks like a regular file and, opened non-blocking, has nothing until the
    # kernel logs: a buffered read gave None, and ask.py's read_file and search a TypeError.
    from plumbing.confined_tree import read_up_to

    reading, writing = os.pipe()
    os.set_blocking(reading, False)
    try:
        with open(reading, "rb", closefd=False) as buffered:
            assert buffered.read(10) is None  # the trap
        assert read_up_to(reading, 10) == b""
        os.write(writing, b"abc")
        assert read_up_to(reading, 10) == b"abc"
        assert read_up_to(reading, 10) == b""
    finally:
        os.close(reading)
        os.close(writing)


def test_a_read_in_pieces_stops_at_its_limit(tmp_path):
    # Read in pieces of at most 1 MiB: the last piece is what is left of the limit, so a
    # file larger than the limit gives exactly the limit, never a piece more.
    from plumbing.confined_tree import read_up_to

    big = tmp_path / "big"
    big.write_bytes(b"x" * (3 << 20))
    fd = os.open(big, os.O_RDONLY)
    try:
        assert len(read_up_to(fd, (3 << 20) // 2)) == (3 << 20) // 2
    finally:
        os.close(fd)


def run_in_lab(child):
    """Run the Python text `child` in the lab's folder, Ctrl-C reaching it (see helpers)."""
    return subprocess.run(
        [sys.executable, "-c", child], capture_output=True, text=True, timeout=30,
        cwd=Path(__file__).resolve().parent.parent, preexec_fn=sigint_default,
    )  # fmt: skip


def test_a_second_ctrl_c_during_cleanup_waits_until_the_folder_is_gone(tmp_path):
    # once in 13 double Ctrl-C runs an empty temporary folder was left behind
    child = (
        "import os, signal, sys\n"
        "from plumbing import scratch\n"
        "real = scratch.remove_tree\n"
        "def interrupted(path):\n"
        "    os.kill(os.getpid(), signal.SIGINT)  # the second Ctrl-C, mid-cleanup\n"
        "    real(path)\n"
        "scratch.remove_tree = interrupted\n"
        "try:\n"
        "    with scratch.scratch_folder(prefix='agent-lab-test-') as path:\n"
        "        print(path, flush=True)\n"
        "        open(os.path.join(path, 'f'), 'w').close()\n"
        "        raise KeyboardInterrupt  # the first Ctrl-C\n"
        "except KeyboardInterrupt:\n"
        "    sys.exit(130)\n"
    )
    finished = run_in_lab(child)
    assert finished.returncode == 130, finished.stderr
    assert not os.path.exists(finished.stdout.strip())


def test_ctrl_c_works_again_once_a_scratch_folder_is_removed():
    # the cleanup holds Ctrl-C back, and must let it through again: else nothing after the
    # first verdict could be interrupted
    child = (
        "import os, signal\n"
        "from plumbing.scratch import scratch_folder\n"
        "with scratch_folder(prefix='agent-lab-test-'):\n"
        "    pass\n"
        "try:\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "    print('not interrupted')\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted')\n"
    )
    finished = run_in_lab(child)
    assert finished.stdout == "interrupted\n", finished.stdout + finished.stderr


def test_read_text_reads_at_most_four_bytes_a_character_and_says_when_it_cut(tmp_path):
    # mutation: `4 * (characters + 1)` -> 5 read more than a character's four bytes allow
    from plumbing.sample import read_text

    path = tmp_path / "f.py"
    path.write_text("a" * 16)  # 4 * (3 + 1) bytes: read whole, though past 3 characters
    assert read_text(path, 3) == ("a" * 16, True, "16 characters")
    path.write_text("a" * 17)  # one byte more: cut at the limit, the size in bytes
    assert read_text(path, 3) == ("a" * 16, False, "17 bytes")


def test_read_text_keeps_back_a_character_the_limit_cuts_in_two(tmp_path):
    # mutation: `final=False` -> True raised UnicodeDecodeError for a file that is UTF-8
    from plumbing.sample import read_text

    path = tmp_path / "f.py"
    path.write_text("€" * 10, encoding="utf-8")  # 30 bytes; the limit of 16 cuts the sixth
    assert read_text(path, 3) == ("€" * 5, False, "30 bytes")
