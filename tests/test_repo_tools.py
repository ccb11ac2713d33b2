"""RepoTools (repo_tools.py) past test_loop.py's walk-through: read_file's bounds (a huge
file, a sparse gigabyte, a FIFO where the source was), the reader under it
(plumbing/sample.py's read_text), replace_text's atomic write, and a test run that leaves
the copy as it found it. Each test works on a fresh copy of sample_repo/.
"""

import os
import stat

from plumbing.sample import copy_sample
from repo_tools import EDITABLE, READ_LIMIT, RepoTools

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
    assert result == {"path": EDITABLE, "replaced": 1}
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
