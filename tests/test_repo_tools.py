"""RepoTools (repo_tools.py) past test_loop.py's walk-through: read_file's bounds (a huge
file, a sparse gigabyte, a FIFO where the source was), the reader under it
(plumbing/sample.py's read_text), replace_text's atomic write, and a test run that leaves
the copy as it found it. Each test works on a fresh copy of sample_repo/.
"""

import os
import resource
import stat

import pytest

from plumbing.sample import SOURCE_FILE, SOURCE_LIMIT, copy_sample
from plumbing.source_diff import lines_changed
from repo_tools import EDITABLE, LIMIT_SAID, READ_LIMIT, RepoTools

# --- what an edit says it changed ---------------------------------------------------------------


@pytest.mark.parametrize(
    "text, old, new, said",
    [
        ("a\nb\nc\n", "b", "b\n", (0, 1)),  # a blank line added after a line
        ("x = 1\ny\n", "x = 1", "x = 1\n\n", (0, 2)),
        ("a\nb\n\nc\n", "b\n", "B", (2, 1)),  # a line and the blank one after it, as one
        ("a\nb\nc\n", "b", "", (1, 1)),  # the line is emptied, not removed
        ("a\r\nb\r\n", "b", "B", (1, 1)),
        ("first\nlast", "last", "last\nmore", (0, 1)),  # at the end, no newline after it
    ],
)
def test_an_edit_counts_the_lines_it_removed_and_added_blank_ones_too(text, old, new, said):
    changed = lines_changed(text, old, new)
    assert (changed["lines_removed"], changed["lines_added"]) == said


def test_an_edit_of_a_thousand_lines_is_counted_without_comparing_them_all():
    # a model can send 1,000 lines each way; compared pairwise that took 13 s of CPU
    old = "\n".join("ab"[i % 2] for i in range(999))
    new = "\n".join("abc"[i % 3] for i in range(1000))
    assert lines_changed(old, old, new) == {"lines_removed": 996, "lines_added": 997}


# --- replace_text never half-writes ---------------------------------------------------------------


def test_replace_text_refuses_unencodable_text_before_writing(tmp_path):
    repo = copy_sample(tmp_path)
    before = (repo / EDITABLE).read_bytes()
    result = RepoTools(repo).invoke("replace_text", {"old": "def ", "new": "def \ud800"})
    assert "UTF-8" in result["error"]
    assert (repo / EDITABLE).read_bytes() == before
    assert sorted(os.listdir(repo)) == sorted(os.listdir(copy_sample(tmp_path / "fresh")))


def test_replace_text_replaces_the_file_atomically_keeping_its_mode(tmp_path):
    repo = copy_sample(tmp_path)
    target = repo / EDITABLE
    target.chmod(0o640)
    before = target.read_bytes()
    os.link(target, tmp_path / "old-inode")  # an in-place write would change this one too
    old = before.decode().splitlines()[0]
    result = RepoTools(repo).invoke("replace_text", {"old": old, "new": "# edited"})
    assert result == {"path": EDITABLE, "replaced": 1, "lines_removed": 1, "lines_added": 1}
    assert target.read_bytes() == before.replace(old.encode(), b"# edited", 1)
    assert (tmp_path / "old-inode").read_bytes() == before  # a new file took its place
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(os.listdir(repo)) == sorted(os.listdir(copy_sample(tmp_path / "fresh")))


# --- read_file's bounds ---------------------------------------------------------------------------


def test_read_file_of_a_huge_file_is_bounded(repo):
    (repo / "path_rules.py").write_text("x = 1\n" * 100_000)
    result = RepoTools(repo).invoke("read_file", {"path": "path_rules.py"})
    assert len(result["text"]) < READ_LIMIT + 100
    assert "cut: the file has 600000 bytes" in result["text"]  # read up to its limit only


# The sizes the README promises, pinned by their values: a test through the constant would
# pass whatever the constant became.
def test_read_file_returns_20000_characters_whole_and_cuts_one_more(repo):
    (repo / "path_rules.py").write_text("x" * 20_000)
    whole = RepoTools(repo).invoke("read_file", {"path": "path_rules.py"})["text"]
    assert whole == "x" * 20_000
    (repo / "path_rules.py").write_text("x" * 20_001)
    cut = RepoTools(repo).invoke("read_file", {"path": "path_rules.py"})["text"]
    assert cut == "x" * 20_000 + "\n[... cut: the file has 20001 characters]"


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
    assert edit == {"error": f"{SOURCE_FILE} holds more than {LIMIT_SAID}; it cannot be edited"}


def sized(size):
    """Source of `size` bytes: `x = 1`, then a comment of two-byte characters (and one `#`
    more when `size` is odd), so its characters are about half its bytes."""
    head = "x = 1\n#"
    pairs, odd = divmod(size - len(head), 2)
    text = head + "#" * odd + "é" * pairs
    assert len(text.encode("utf-8")) == size
    return text


def test_replace_text_edits_a_file_of_its_limit_in_bytes_and_refuses_one_byte_more(repo):
    # in characters, both are half the limit: a limit in characters (4 MB of UTF-8) took both
    tools, path = RepoTools(repo), repo / SOURCE_FILE
    path.write_text(sized(SOURCE_LIMIT), encoding="utf-8")
    assert tools.invoke("replace_text", {"old": "x = 1", "new": "x = 2"})["replaced"] == 1
    assert path.read_bytes() == sized(SOURCE_LIMIT).replace("x = 1", "x = 2").encode()
    path.write_text(sized(SOURCE_LIMIT + 1), encoding="utf-8")
    result = tools.invoke("replace_text", {"old": "x = 1", "new": "x = 2"})
    assert result == {"error": f"{SOURCE_FILE} holds more than {LIMIT_SAID}; it cannot be edited"}
    assert LIMIT_SAID == "the 1,000,000 bytes replace_text edits"  # said as it is
    assert path.read_bytes() == sized(SOURCE_LIMIT + 1).encode()


def test_replace_text_makes_no_file_larger_than_its_limit_in_bytes(repo):
    tools, path = RepoTools(repo), repo / SOURCE_FILE
    path.write_text(sized(SOURCE_LIMIT - 1), encoding="utf-8")
    # one character, two bytes: the file is then exactly the limit
    assert tools.invoke("replace_text", {"old": "x = 1", "new": "x = é"})["replaced"] == 1
    at_the_limit = path.read_bytes()
    assert len(at_the_limit) == SOURCE_LIMIT
    result = tools.invoke("replace_text", {"old": "x = é", "new": "x = éé"})
    assert result == {"error": f"the edit would make it 1,000,002 bytes, more than {LIMIT_SAID}"}
    assert path.read_bytes() == at_the_limit


# --- the reader under read_file (plumbing/sample.py's read_text) ----------------------------------


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


# --- run_tests leaves the copy as it found it -----------------------------------------------------


def test_run_tests_leaves_no_cache_or_bytecode_in_the_copy(repo):
    # mutations no_dont_write_bytecode (drop PYTHONDONTWRITEBYTECODE) and wrong_pytest_cmd
    # (drop `-p no:cacheprovider`): the fixed command must leave the copy as it found it.
    RepoTools(repo).invoke("run_tests", {})
    assert list(repo.rglob("__pycache__")) == []
    assert not (repo / ".pytest_cache").exists()
