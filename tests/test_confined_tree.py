"""The walker under ReadOnlyTools (plumbing/confined_tree.py): every path opened from a
descriptor of the root, one component at a time, so nothing outside the root is reached.

Links followed inside the root and refused out of it, a racing writer swapping a folder for
a link while thousands of calls run, and the descriptors a walk holds: none leaks, whether
the walk climbs back through `..`, fails to list a folder, or stops early. Each test builds
its own small tree in `tmp_path`; limits on descriptors are set in a child Python, never on
the suite's own process.
"""

import contextlib
import json
import os
import subprocess
import sys

import pytest

from plumbing.confined_tree import CHANGED, MISSING, OUTSIDE, Tree
from readonly_tools import ReadOnlyTools
from tests.helpers import LAB, SECRET, open_under

# --- confinement against a racing writer ----------------------------------------------------------


RACER = """\
import os, sys
os.chdir(sys.argv[1])
print("racing", flush=True)
for _ in range(int(sys.argv[2])):  # bounded: the test also kills it when done
    os.rename("real", "d"); os.rename("d", "real")
    os.rename("link", "d"); os.rename("d", "link")
"""


@contextlib.contextmanager
def racing(root):
    """RACER swapping `root`'s entries while the block runs; the calls start once it is."""
    racer = subprocess.Popen(
        [sys.executable, "-c", RACER, str(root), "10000000"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert racer.stdout.readline() == "racing\n"
        yield racer
    finally:
        racer.kill()
        racer.wait()


def test_a_racing_writer_cannot_swap_a_folder_for_a_link_out_of_the_root(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "passwd").write_text(f"{SECRET}\n")
    root = tmp_path / "root"
    (root / "real").mkdir(parents=True)
    (root / "real" / "passwd").write_text("inside\n")
    (root / "link").symlink_to(outside)
    tools = ReadOnlyTools(root)
    # (3,000 reads meet the folder about 500 times, the link 600, a swap mid-open 800, on an
    # idle machine; on a busy one the racer may sleep through a batch: up to ten batches,
    # until the race has shown both sides.)
    with racing(root) as racer:
        results = []
        for _ in range(10):
            results += [tools.invoke("read_file", {"path": "d/passwd"}) for _ in range(3000)]
            results += [tools.invoke("list_dir", {"path": "d"}) for _ in range(600)]
            if any(r.get("text") == "inside\n" for r in results) and any(
                "error" in r for r in results
            ):
                break
        # The whole tree: the walk lists `d` as a folder, then enters it (or not).
        results += [tools.invoke("search", {"pattern": "S", "path": "."}) for _ in range(20)]
    assert racer.returncode == -9  # it was still racing when the calls ended
    leaked = [result for result in results if SECRET in json.dumps(result)]
    assert leaked == []
    # The race was real: some calls saw the folder, some found it swapped or gone.
    assert any(result.get("text") == "inside\n" for result in results)
    assert any("error" in result for result in results)
    # Every failure is a refusal that says why, never the file system's bare error: a link
    # swapped between its check and the reading of its target once came back as
    # "read_file failed: Invalid argument" (or "No such file or directory").
    bare = {r["error"] for r in results if "error" in r and " failed: " in r["error"]}
    assert bare == set()


def test_a_folder_renamed_while_a_link_climbs_back_through_it_leaks_no_descriptor(tmp_path):
    # `real/c/up` -> `../../x.txt`: the walk climbs by opening `real` again from the root,
    # and the racer renames `real` away and back; each reopen that fails must close the
    # descriptor it holds, or a long session runs out of them
    (tmp_path / "real" / "c").mkdir(parents=True)
    (tmp_path / "real" / "c" / "up").symlink_to("../../x.txt")
    (tmp_path / "x.txt").write_text("x\n")
    (tmp_path / "link").symlink_to("real")
    tools = ReadOnlyTools(tmp_path)
    with racing(tmp_path):
        before = open_under(tmp_path)
        results, swapped = [], {"error": f"'real/c/up' {CHANGED}"}
        changed = 0
        while changed < 20 and len(results) < 100_000:  # mostly reopens that failed
            results.append(tools.invoke("read_file", {"path": "real/c/up"}))
            changed += results[-1] == swapped
        after = open_under(tmp_path)
    assert after == before
    assert changed == 20  # the race was real
    assert {"path": "x.txt", "text": "x\n"} in results


def test_a_path_swapped_after_the_check_is_refused_by_the_search_child(tmp_path):
    # Between the harness's check and the child's walk, `d` may become a link or vanish:
    # the child refuses it, and the model reads that refusal, never "the search failed".
    # (`d` is a folder only between two of the racer's renames: about one search in ten
    # passes the check, and most of those meet a link or nothing in the child: 200 searches
    # start about 20 children.)
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "root"
    (root / "real").mkdir(parents=True)
    (root / "real" / "a.txt").write_text("needle\n")
    (root / "link").symlink_to(outside)
    tools = ReadOnlyTools(root)
    with racing(root):
        results = [tools.invoke("search", {"pattern": "needle", "path": "d"}) for _ in range(200)]
    errors = [result["error"] for result in results if "error" in result]
    # (The harness's own walk may meet the swap too: its refusals, or the file system's
    # errors, also come back as results.) Never a search crashed: no exception's name.
    crashed = [e for e in errors if e.startswith("the search failed") or "Error:" in e]
    assert errors and crashed == [], crashed


# --- links: followed inside the root, refused out of it -------------------------------------------


def test_a_relative_link_that_climbs_out_of_the_root_is_refused_as_outside(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "passwd").write_text(f"{SECRET}\n")
    root = tmp_path / "root"
    root.mkdir()
    (root / "up").symlink_to("../outside/passwd")  # '..' from the root itself
    (root / "deep").symlink_to("src/../../outside/passwd")
    (root / "src").mkdir()
    tools = ReadOnlyTools(root)
    for path in ("up", "deep"):
        assert tools.invoke("read_file", {"path": path}) == {"error": f"'{path}' {OUTSIDE}"}


def test_links_that_stay_inside_the_root_are_followed(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("needle = 1\n")
    (tmp_path / "README.md").write_text("# Demo\n")
    (tmp_path / "lib").symlink_to("src")  # relative, to a folder
    (tmp_path / "alias.py").symlink_to(tmp_path / "src" / "app.py")  # absolute, to a file
    (tmp_path / "src" / "up.md").symlink_to("../README.md")  # through '..', still inside
    tools = ReadOnlyTools(tmp_path)
    assert tools.invoke("read_file", {"path": "lib/app.py"}) == {
        "path": "src/app.py",
        "text": "needle = 1\n",
    }
    assert tools.invoke("read_file", {"path": "alias.py"})["path"] == "src/app.py"
    assert tools.invoke("read_file", {"path": "lib/up.md"})["text"] == "# Demo\n"
    assert tools.invoke("list_dir", {"path": "lib"})["entries"] == [
        "app.py (11 bytes)",
        "up.md (7 bytes)",
    ]
    found = tools.invoke("search", {"pattern": "needle"})
    assert found["matches"] == ["alias.py:1: needle = 1", "src/app.py:1: needle = 1"]


def test_a_link_target_with_a_dot_a_double_slash_or_a_trailing_slash_names_the_same_file(
    tmp_path,
):
    # `ln -s ./src/app.py`, `src//app.py` and `src/` are how people write targets
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("needle = 1\n")
    (tmp_path / "dot.py").symlink_to("./src/app.py")
    (tmp_path / "double.py").symlink_to("src//app.py")
    (tmp_path / "lib").symlink_to("src/")
    tools = ReadOnlyTools(tmp_path)
    for path in ("dot.py", "double.py", "lib/app.py"):
        found = tools.invoke("read_file", {"path": path})
        assert found == {"path": "src/app.py", "text": "needle = 1\n"}, path


def test_a_file_is_not_a_folder_even_when_the_name_below_it_is_its_neighbour(tmp_path):
    (tmp_path / "README.md").write_text("# Demo\n")
    (tmp_path / "app.py").write_text("needle = 1\n")
    tools = ReadOnlyTools(tmp_path)
    found = tools.invoke("read_file", {"path": "README.md/app.py"})
    assert found == {"error": f"'README.md/app.py' {MISSING}"}


# --- opening one name: a name swapped for a link or gone is refused as changed --------------------


def test_a_name_swapped_for_a_link_or_gone_at_open_is_refused_as_changed(tmp_path):
    # mutation: the errno guard in open_nofollow made `pass`: the race's OSError then
    # reached the tool as an internal error instead of "changed while it was read"
    from plumbing.confined_tree import CHANGED, OPEN_DIR, OPEN_FILE, Refused, open_nofollow

    (tmp_path / "file.txt").write_text("x")
    (tmp_path / "link").symlink_to("file.txt")
    folder = os.open(tmp_path, OPEN_DIR)
    try:
        for name, flags in (("link", OPEN_FILE), ("gone", OPEN_FILE), ("file.txt", OPEN_DIR)):
            with pytest.raises(Refused) as refused:
                open_nofollow(name, folder, flags)
            assert refused.value.why == CHANGED, name
        with pytest.raises(IsADirectoryError):  # any other error is raised as it is
            open_nofollow(".", folder, os.O_WRONLY)
        os.close(open_nofollow("file.txt", folder, OPEN_FILE))
    finally:
        os.close(folder)


# --- descriptors: a walk that climbs, fails or stops early leaks none -----------------------------


def test_walking_a_link_whose_target_climbs_with_dotdot_leaks_no_descriptor(tmp_path):
    # mutation: the folder's `os.close` before reopening at ".." removed: one descriptor
    # lost per "..", and a long session of reads through such a link runs out of them; the
    # same for each folder the reopen from the root passes on its way down (a/c/up's "..")
    from plumbing.confined_tree import Tree

    (tmp_path / "a" / "c").mkdir(parents=True)
    (tmp_path / "b.txt").write_text("x")
    (tmp_path / "a" / "up").symlink_to("../b.txt")
    (tmp_path / "a" / "c" / "up").symlink_to("../../b.txt")  # reopens a/ from the root
    root_fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        tree = Tree(tmp_path.resolve(), root_fd)
        before = open_under(tmp_path)
        for parts in [["a", "up"], ["a", "c", "up"]] * 20:
            fd, real, _info = tree.open(parts)
            os.close(fd)
        assert real == ["b.txt"] and open_under(tmp_path) == before
    finally:
        os.close(root_fd)


def walked_in_child(root, setup):
    """What Tree.files lists under `root`, printed by a fresh interpreter that runs the
    Python lines `setup` first (they see `root_fd`, os and sys): for descriptor limits and
    numbers a test must not impose on the suite's own process."""
    child = (
        "import os, sys\n"
        "from pathlib import Path\n"
        "from plumbing.confined_tree import Tree\n"
        "root_fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)\n"
        + setup
        + "counts = {'searched': 0, 'skipped': 0, 'deep': 0}\n"
        "print([path for path, _ in Tree(Path(sys.argv[1]), root_fd).files([], counts)])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", child, str(root)], capture_output=True, text=True, timeout=60,
        cwd=LAB,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_folder_that_cannot_be_listed_is_skipped_and_the_rest_still_searched(tmp_path):
    # Out of descriptors (the limit set so that the third level cannot be listed), the
    # listing of that folder fails: it is passed over, not a crash of the search.
    (tmp_path / "a" / "b").mkdir(parents=True)
    for path in ("top.txt", "a/in_a.txt", "a/b/in_b.txt"):
        (tmp_path / path).write_text("needle\n")
    setup = (
        "import resource\n"
        "free = os.dup(root_fd)\n"
        "os.close(free)  # the lowest free descriptor: the walk takes it and the next two\n"
        "_, hard = resource.getrlimit(resource.RLIMIT_NOFILE)\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (free + 3, hard))\n"
    )
    assert walked_in_child(tmp_path.resolve(), setup) == "['top.txt', 'a/in_a.txt']\n"


def test_reading_through_an_absolute_link_leaks_no_descriptor(tmp_path):
    # A hop back to the root must close the folder it leaves, or each such read keeps one fd.
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("needle = 1\n")
    (tmp_path / "src" / "alias.py").symlink_to(tmp_path / "src" / "app.py")
    tools = ReadOnlyTools(tmp_path)

    before = open_under(tmp_path)
    results = [tools.invoke("read_file", {"path": "src/alias.py"}) for _ in range(50)]
    assert open_under(tmp_path) == before
    assert results[-1] == {"path": "src/app.py", "text": "needle = 1\n"}


def test_a_tree_whose_folder_gets_descriptor_0_still_walks_it(tmp_path):
    # A CLI started with stdin closed (under cron, or `<&-`) hands out descriptor 0 to the
    # next open: a folder opened as 0 is a folder like any other, not "nothing opened".
    (tmp_path / "a.py").write_text("x = 1\n")
    setup = "os.close(0)  # the walk's first descriptor is now 0\n"
    assert walked_in_child(tmp_path, setup) == "['a.py']\n"


def test_a_walk_left_early_closes_every_folder_it_holds(tmp_path):
    # A search that stops at its time or size limit leaves the walk deep in the tree: the
    # folders it still holds open must be closed then, or a long session runs out of them.
    deep = tmp_path / "a" / "b" / "c"
    deep.mkdir(parents=True)
    (deep / "x.py").write_text("x = 1\n")
    root = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        before = open_under(tmp_path)
        walk = Tree(tmp_path, root).files([], {"searched": 0, "skipped": 0, "deep": 0})
        assert next(walk)[0] == "a/b/c/x.py"  # four folders open now
        assert len(open_under(tmp_path)) == len(before) + 4
        walk.close()
        assert open_under(tmp_path) == before
    finally:
        os.close(root)


# --- reading: read_up_to gives what there is, up to its limit -------------------------------------


def test_read_up_to_reads_exactly_its_limit_of_a_longer_file(tmp_path):
    # mutation: a size counted from 1 read one byte less than the limit
    from plumbing.confined_tree import read_up_to

    (tmp_path / "f").write_bytes(b"abcdef")
    fd = os.open(tmp_path / "f", os.O_RDONLY)
    try:
        assert read_up_to(fd, 4) == b"abcd" and read_up_to(fd, 4) == b"ef"
    finally:
        os.close(fd)


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
