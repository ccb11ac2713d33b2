"""ReadOnlyTools (readonly_tools.py), the tools of ask.py: list_dir, read_file and
search, confined to one directory.

Every refusal and every result on small directories built in `tmp_path` (links leading out,
a `.git`, a binary file, a FIFO), their cuts at exactly the limit, hostile calls that must
change nothing and leak nothing, and the search's budget of time and memory for any
pattern. The search cases that would run for hours on a backtracking engine run in a child
Python process with a timeout, so a broken budget fails the test instead of hanging the
suite. ask.py surviving hostile searches runs against the Ollama-protocol stand-in on
127.0.0.1, its main() in the test's process. How the walk stays inside the root (links,
racing writers, descriptors) is tests/test_confined_tree.py's.
"""

import json
import os
import resource
import signal
import subprocess
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

import readonly_tools
from plumbing.confined_tree import CHANGED, SEARCH_FILE_BYTES, Tree
from readonly_tools import (
    CHILD_CODE,
    LINE_LIMIT,
    OUT_OF_MEMORY,
    PATTERN_LIMIT,
    RESULT_LIMIT,
    SEARCH_MEMORY,
    ReadOnlyTools,
)
from tests.helpers import SECRET, ask, search_children, sigint_default, tree_snapshot, wait_for
from tests.ollama_test_server import OllamaTestServer, call, chunk, reply

HERE = Path(__file__).resolve().parent.parent
GIT_MARKER = "GIT-INTERNALS-MARKER"
BINARY_MARKER = "BINARY-MARKER"
APP = 'import os\n\n\ndef greet(name):\n    print("hello " + name)  # a+b\n    return len(name)\n'


@pytest.fixture
def root(tmp_path):
    """A directory with every kind of thing the tools must refuse or skip."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(f"{SECRET}\n")
    root = tmp_path / "root"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text(APP)
    (root / "README.md").write_text("# Demo\nSee src/app.py.\n")
    (root / "data.bin").write_bytes(b"\x00\x01" + BINARY_MARKER.encode() + b"\n")  # valid UTF-8
    (root / "logo.png").write_bytes(b"\x89PNG\r\n" + BINARY_MARKER.encode() + b"\n")  # no NUL
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text(f"[core]\n\t# {GIT_MARKER}\n")
    (root / "link_out").symlink_to(outside / "secret.txt")
    (root / "dir_out").symlink_to(outside)
    (root / "git_link").symlink_to(root / ".git" / "config")
    return root


def invoke(root, name, **arguments):
    return ReadOnlyTools(root).invoke(name, arguments)


def error_of(result):
    assert set(result) == {"error"}, result  # refused: nothing but the reason comes back
    return result["error"]


# --- refusals -------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["..", "../outside/secret.txt", "src/../../outside/secret.txt"])
@pytest.mark.parametrize("tool", ["list_dir", "read_file", "search"])
def test_paths_with_dotdot_are_refused(root, tool, path):
    arguments = {"path": path, **({"pattern": "SECRET"} if tool == "search" else {})}
    assert "'..'" in error_of(invoke(root, tool, **arguments))


@pytest.mark.parametrize("tool", ["list_dir", "read_file", "search"])
def test_absolute_paths_are_refused(root, tool):
    extra = {"pattern": "SECRET"} if tool == "search" else {}
    # "~" and "\\" are not absolute to os.path; the home folder and a Windows root are meant
    paths = ("/etc/passwd", str(root.parent / "outside" / "secret.txt"), str(root / "src"))
    for path in (*paths, "~/.ssh/id_rsa", "~", "\\etc\\passwd"):
        assert "not a relative path" in error_of(invoke(root, tool, path=path, **extra))


def test_symlinks_leading_out_of_root_are_refused(root):
    assert "outside the root" in error_of(invoke(root, "read_file", path="link_out"))
    assert "outside the root" in error_of(invoke(root, "read_file", path="dir_out/secret.txt"))
    assert "outside the root" in error_of(invoke(root, "list_dir", path="dir_out"))
    assert "outside the root" in error_of(invoke(root, "search", pattern="S", path="dir_out"))
    listing = invoke(root, "list_dir", path=".")["entries"]
    assert "link_out (symlink leading outside the root; refused)" in listing
    found = invoke(root, "search", pattern=SECRET, path=".")
    assert found["matches"] == []  # the walk neither follows dir_out nor reads link_out


def test_git_is_refused_and_skipped(root):
    assert ".git" in error_of(invoke(root, "list_dir", path=".git"))
    assert ".git" in error_of(invoke(root, "read_file", path=".git/config"))
    assert ".git" in error_of(invoke(root, "read_file", path="src/../.git/config"))
    assert ".git" in error_of(invoke(root, "read_file", path="git_link"))  # a link into .git
    assert ".git" in error_of(invoke(root, "search", pattern="core", path=".git"))
    assert not any(e.startswith(".git") for e in invoke(root, "list_dir", path=".")["entries"])
    assert invoke(root, "search", pattern=GIT_MARKER, path=".")["matches"] == []


def test_a_git_file_and_git_in_any_case_are_refused_and_skipped(tmp_path):
    (tmp_path / ".git").write_text(f"gitdir: {GIT_MARKER}\n")  # a git worktree's .git: a file
    (tmp_path / "sub" / ".GIT").mkdir(parents=True)
    (tmp_path / "sub" / ".GIT" / "config").write_text(f"{GIT_MARKER}\n")
    (tmp_path / "sub" / ".Git").write_text(f"{GIT_MARKER}\n")
    assert ".git" in error_of(invoke(tmp_path, "read_file", path=".git"))
    assert ".git" in error_of(invoke(tmp_path, "read_file", path="sub/.GIT/config"))
    assert ".git" in error_of(invoke(tmp_path, "read_file", path="sub/.Git"))
    assert ".git" in error_of(invoke(tmp_path, "list_dir", path="sub/.GIT"))
    assert invoke(tmp_path, "list_dir", path=".")["entries"] == ["sub/"]
    assert invoke(tmp_path, "list_dir", path="sub")["entries"] == []
    assert invoke(tmp_path, "search", pattern=GIT_MARKER, path=".")["matches"] == []
    assert invoke(tmp_path, "search", pattern=GIT_MARKER, path="sub")["matches"] == []


def test_a_hard_link_to_a_file_outside_the_root_is_read_as_the_readme_warns(root):
    # A limit, not a promise: a hard link is the file itself, so no check of paths sees it.
    os.link(root.parent / "outside" / "secret.txt", root / "hard_link")
    assert SECRET in invoke(root, "read_file", path="hard_link")["text"]


def test_binary_files_are_refused_by_read_and_skipped_by_search(root):
    # One has NUL bytes but decodes as UTF-8; the other has no NUL but does not decode.
    assert "binary" in error_of(invoke(root, "read_file", path="data.bin"))
    assert "binary" in error_of(invoke(root, "read_file", path="logo.png"))
    found = invoke(root, "search", pattern=BINARY_MARKER, path=".")
    assert found["matches"] == []
    assert found["files_skipped"].startswith("2 ")


def test_missing_paths_and_wrong_kinds_say_what_to_use(root):
    assert "does not exist" in error_of(invoke(root, "read_file", path="nope.py"))
    assert "use list_dir" in error_of(invoke(root, "read_file", path="src"))
    assert "use read_file" in error_of(invoke(root, "list_dir", path="README.md"))
    assert "pattern is empty" in error_of(invoke(root, "search", pattern="", path="."))


@pytest.mark.parametrize("name", ["README.md", "missing"])
def test_a_root_that_is_not_a_directory_is_refused_by_name(root, name):
    # One ValueError naming the root, not an OSError from opening it as a folder.
    with pytest.raises(ValueError, match=f"{name} is not a directory"):
        ReadOnlyTools(root / name)


def test_a_fifo_is_answered_as_not_a_regular_file_and_never_opened(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    result = ReadOnlyTools(tmp_path).invoke("read_file", {"path": "fifo"})
    assert result == {"error": "'fifo' is not a regular file"}


# --- results --------------------------------------------------------------------------------------


def test_read_and_list_return_the_directory_as_it_is(root):
    assert invoke(root, "read_file", path="src/app.py") == {"path": "src/app.py", "text": APP}
    listing = invoke(root, "list_dir", path=".")
    assert listing["path"] == "."
    assert listing["entries"] == [
        "README.md (23 bytes)",
        "data.bin (16 bytes)",
        "dir_out (symlink leading outside the root; refused)",
        "git_link (symlink into .git; refused)",
        "link_out (symlink leading outside the root; refused)",
        "logo.png (20 bytes)",
        "src/",
    ]  # .git itself is not listed


def test_search_finds_a_literal_and_a_pattern_with_file_line_results(root):
    # "print(" is not a valid regular expression, "a+b" is one that misses its literal text.
    assert invoke(root, "search", pattern="print(", path=".")["matches"] == [
        'src/app.py:5: print("hello " + name)  # a+b'
    ]
    assert invoke(root, "search", pattern="a+b", path="src")["matches"] == [
        'src/app.py:5: print("hello " + name)  # a+b'
    ]
    found = invoke(root, "search", pattern=r"^(def|import) \w+", path=".")
    assert found["matches"] == ["src/app.py:1: import os", "src/app.py:4: def greet(name):"]


def test_search_path_is_optional_and_means_the_whole_tree(root):
    schema = next(s for s in ReadOnlyTools.schemas if s["function"]["name"] == "search")
    assert schema["function"]["parameters"]["required"] == ["pattern"]
    assert invoke(root, "search", pattern="See src")["matches"] == ["README.md:2: See src/app.py."]


def test_search_skips_caches_and_environments_unless_asked_directly(tmp_path):
    for folder in (".venv/lib", "node_modules/pkg", "src/__pycache__", "src"):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
        (tmp_path / folder / "m.py").write_text("needle = 1\n")
    tools = ReadOnlyTools(tmp_path)
    assert tools.invoke("search", {"pattern": "needle"})["matches"] == ["src/m.py:1: needle = 1"]
    found = tools.invoke("search", {"pattern": "needle", "path": ".venv"})
    assert found["matches"] == [".venv/lib/m.py:1: needle = 1"]


def test_every_result_is_bounded_with_a_note_to_narrow(tmp_path):
    (tmp_path / "big.txt").write_text("".join(f"line {n} needle\n" for n in range(5000)))
    for n in range(1000):
        (tmp_path / f"file_{n:04}.txt").write_text("")
    tools = ReadOnlyTools(tmp_path)
    read = tools.invoke("read_file", {"path": "big.txt"})
    found = tools.invoke("search", {"pattern": "needle", "path": "."})
    listed = tools.invoke("list_dir", {"path": "."})
    assert len(read["text"]) == RESULT_LIMIT
    assert sum(len(m) + 1 for m in found["matches"]) <= RESULT_LIMIT
    assert sum(len(e) + 1 for e in listed["entries"]) <= RESULT_LIMIT
    for result in (read, found, listed):
        assert "narrow the request" in result["note"]
        assert len(json.dumps(result)) < RESULT_LIMIT + 2000  # what the model is sent
    small = tools.invoke("search", {"pattern": "line 4999 ", "path": "big.txt"})
    assert small == {"matches": ["big.txt:5000: line 4999 needle"], "files_searched": 1}


def test_a_file_of_exactly_the_limit_in_4_byte_characters_is_read_whole(tmp_path):
    (tmp_path / "faces.txt").write_text("\U0001f600" * RESULT_LIMIT, encoding="utf-8")
    result = ReadOnlyTools(tmp_path).invoke("read_file", {"path": "faces.txt"})
    assert result == {"path": "faces.txt", "text": "\U0001f600" * RESULT_LIMIT}


def test_list_dir_returns_entries_of_exactly_the_limit_whole_and_cuts_one_more(tmp_path):
    # A folder's entry is "name/" plus a separator: 80 names of 98 characters fill
    # RESULT_LIMIT (8,000) exactly.
    names = [f"{n:02d}" + "x" * 96 for n in range(RESULT_LIMIT // 100)]
    for name in names:
        (tmp_path / name).mkdir()
    whole = ReadOnlyTools(tmp_path).invoke("list_dir", {"path": "."})
    assert whole["entries"] == [f"{name}/" for name in names] and "note" not in whole
    (tmp_path / names[-1]).rename(tmp_path / (names[-1] + "y"))
    cut = ReadOnlyTools(tmp_path).invoke("list_dir", {"path": "."})
    assert len(cut["entries"]) == len(names) - 1
    assert cut["note"].startswith(f"cut after {len(names) - 1} of {len(names)} entries")


def test_list_dir_shows_a_broken_link_as_unreadable(tmp_path):
    (tmp_path / "gone").symlink_to(tmp_path / "nothing-here")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    listed = ReadOnlyTools(tmp_path).invoke("list_dir", {"path": "."})
    assert listed["entries"] == ["gone (unreadable)", "loop (unreadable)"]


def test_list_dir_shows_a_link_the_file_system_cannot_follow_as_unreadable(tmp_path):
    # A target name longer than the file system allows: following it fails with an OSError
    # (ENAMETOOLONG), not a refusal; the entry says so and the listing goes on.
    (tmp_path / "long").symlink_to("x" * 300)
    (tmp_path / "ok.txt").write_text("ok\n")
    listed = ReadOnlyTools(tmp_path).invoke("list_dir", {"path": "."})
    assert listed["entries"] == ["long (unreadable)", "ok.txt (3 bytes)"]


def test_search_returns_matches_of_exactly_the_limit_whole_and_cuts_one_more(tmp_path):
    # A match is "file:line: text" plus a separator: 80 of 99 characters fill RESULT_LIMIT.
    count = RESULT_LIMIT // 100
    lines = ["needle".ljust(99 - len(f"a.py:{n}: "), "x") for n in range(1, count + 1)]
    (tmp_path / "a.py").write_text("\n".join(lines) + "\n")
    whole = ReadOnlyTools(tmp_path).invoke("search", {"pattern": "needle"})
    assert len(whole["matches"]) == count and "note" not in whole
    (tmp_path / "a.py").write_text("\n".join(lines) + "y\n")
    cut = ReadOnlyTools(tmp_path).invoke("search", {"pattern": "needle"})
    assert len(cut["matches"]) == count - 1
    assert cut["note"].startswith(f"the results were cut after {count - 1} matches")


def test_read_file_returns_exactly_the_limit_whole_and_notes_a_cut_of_one_more(tmp_path):
    (tmp_path / "a.txt").write_text("x" * RESULT_LIMIT)
    whole = ReadOnlyTools(tmp_path).invoke("read_file", {"path": "a.txt"})
    assert whole == {"path": "a.txt", "text": "x" * RESULT_LIMIT}
    (tmp_path / "a.txt").write_text("x" * (RESULT_LIMIT + 1))
    cut = ReadOnlyTools(tmp_path).invoke("read_file", {"path": "a.txt"})
    assert cut["text"] == "x" * RESULT_LIMIT
    assert cut["note"].startswith(
        f"cut after {RESULT_LIMIT} characters of a {RESULT_LIMIT + 1}-byte"
    )


# --- nothing can write ----------------------------------------------------------------------------


HOSTILE_PATHS = [
    "", " ", ".", "..", "../", "../outside", "../outside/secret.txt", "src/../../outside",
    "/", "/etc/passwd", "/dev/zero", "/proc/self/environ", "~", "~/.ssh/id_rsa", "$HOME",
    ".git", ".git/config", ".GIT/config", "src/../.git/HEAD", "git_link", "link_out",
    "dir_out", "dir_out/secret.txt", "loop", "fifo", "data.bin", "src/app.py/..",
    "\\..\\outside", "*", "src/*", "a" * 5000, "src/app.py\x00.txt", "\x00",
]  # fmt: skip


HOSTILE_PATTERNS = ["", "(", "[", "*", "\\", "(?s).*", SECRET, GIT_MARKER, BINARY_MARKER, "\x00"]
HOSTILE_ARGUMENTS = [
    None, [], "not json", '{"path": "../"', '{"path": "../outside"}', {"path": 5},
    {"path": None}, {"path": ["."]}, {"path": {"$ne": 1}}, {"path": ".", "mode": "w"},
    {"path": "x.py", "content": "import os"}, {"pattern": "x", "path": ".", "replace": "y"},
]  # fmt: skip


HOSTILE_NAMES = [
    "write_file", "replace_text", "run_tests", "delete", "__init__", "_resolve", "handlers",
    "root", "invoke", "schemas", "list_dir ", "", None, 7,
]  # fmt: skip


def test_hostile_calls_change_nothing_and_leak_nothing(root):
    os.mkfifo(root / "fifo")  # opening it to read would block: it must never be opened
    (root / "loop").symlink_to(root / "loop")
    before = tree_snapshot(root, root.parent / "outside")
    tools = ReadOnlyTools(root)
    calls = [(tool, {"path": path}) for tool in ("list_dir", "read_file") for path in HOSTILE_PATHS]
    for pattern in HOSTILE_PATTERNS:
        calls += [("search", {"pattern": pattern, "path": path}) for path in HOSTILE_PATHS]
        calls.append(("search", {"pattern": pattern}))
    for tool in ("list_dir", "read_file", "search"):
        calls += [(tool, arguments) for arguments in HOSTILE_ARGUMENTS]
    calls += [(name, {"path": "."}) for name in HOSTILE_NAMES]
    results = []
    # In a thread, so that a tool that opens the FIFO fails this test instead of hanging it.
    worker = threading.Thread(
        target=lambda: results.extend(tools.invoke(*c) for c in calls), daemon=True
    )
    worker.start()
    worker.join(30)
    if worker.is_alive():
        os.close(os.open(root / "fifo", os.O_WRONLY | os.O_NONBLOCK))  # release the reader
        pytest.fail("a tool call blocked: it must never open a FIFO")
    assert len(results) == len(calls)
    for (name, arguments), result in zip(calls, results, strict=True):
        sent = json.dumps(result)  # what the model would be sent: always JSON-ready
        for marker in (SECRET, GIT_MARKER, BINARY_MARKER):
            assert marker not in sent, (name, arguments, result)
    assert tree_snapshot(root, root.parent / "outside") == before


# --- hostile searches answer instead of raising ---------------------------------------------------


DEEP = 1100  # folders: past the ~1,000 frames at which a recursive walk fails on 3.11


# The search requests that raised in `re`, `os` or the walk instead of answering.
HOSTILE_SEARCHES = [
    {"pattern": "a{99999999999}"},  # OverflowError in re.compile
    {"pattern": "(" * 1200 + ")" * 1200},  # RecursionError in re.compile
    {"pattern": "x", "path": "\ud800"},  # UnicodeEncodeError: a lone surrogate as a name
    {"pattern": "needle"},  # through a tree DEEP folders deep (RecursionError in os.walk)
]


def deep_tree(root):
    """`root` with a file at the top and a folder chain DEEP levels deep below it."""
    root.mkdir()
    (root / "top.txt").write_text("needle at the top\n")
    folder = root
    for _ in range(DEEP):  # subtle: os.makedirs recurses, and would fail here on 3.11
        folder = folder / "d"
        folder.mkdir()
    return root


def remove_deep_tree(root):
    # subtle: shutil.rmtree (and so pytest's tmp_path cleanup) recurses; unwind by hand.
    for depth in range(DEEP, 0, -1):
        os.rmdir(root / "/".join(["d"] * depth))


@pytest.fixture(scope="module")
def deep_root(tmp_path_factory):
    """One deep tree for the module's tests, which only read it."""
    root = deep_tree(tmp_path_factory.mktemp("deep") / "root")
    yield root
    remove_deep_tree(root)


@pytest.mark.parametrize(
    "arguments", HOSTILE_SEARCHES, ids=["overflow", "nested", "surrogate", "deep"]
)
def test_hostile_searches_answer_with_a_result_never_an_exception(deep_root, arguments):
    result = ReadOnlyTools(deep_root).invoke("search", arguments)
    json.dumps(result).encode("utf-8")  # what the model is sent: JSON, encodable as UTF-8
    if "error" not in result:
        assert result["files_searched"] == 1  # top.txt; the chain holds no file
    if arguments["pattern"] == "needle":
        assert result["matches"] == ["top.txt:1: needle at the top"]
        assert "more than" in result["folders_skipped"]  # the answer says what it left out


def test_list_and_read_refuse_a_path_that_cannot_be_a_file_name(tmp_path):
    tools = ReadOnlyTools(tmp_path)
    for name in ("list_dir", "read_file"):
        assert "cannot be a file name" in tools.invoke(name, {"path": "src/\ud800.py"})["error"]


# --- ask.py: the same calls end neither a question nor a session ----------------------------------


# Over the wire, a lone surrogate in the model's own call cannot be sent back to the server
# in the next request (the SDK cannot encode it): that exchange ends as model_error, which
# is the adapter's to report; here it must not end ask.py with a traceback.
WIRE_SAFE = [arguments for arguments in HOSTILE_SEARCHES if arguments.get("path") != "\ud800"]


def hostile_turn(searches):
    calls = [call("search", index, **arguments) for index, arguments in enumerate(searches)]
    return reply(chunk(tool_calls=calls, done=True))


def tool_results(body):
    return [json.loads(m["content"]) for m in body["messages"] if m["role"] == "tool"]


def test_ask_one_question_survives_hostile_searches(deep_root):
    script = [hostile_turn(WIRE_SAFE), reply(chunk("Nothing crashed.", done=True))]
    with OllamaTestServer(script) as server:
        code, out, err = ask("--root", str(deep_root), "--host", server.host, "Search?")
        bodies = server.chat_bodies()
    assert code == 0, err
    assert "Traceback" not in out + err
    assert out.rstrip().endswith("Nothing crashed.")
    overflow, nested, deep = tool_results(bodies[1])
    assert deep["matches"] == ["top.txt:1: needle at the top"]


def test_ask_one_question_with_a_surrogate_path_ends_without_a_traceback(tmp_path):
    script = [hostile_turn([{"pattern": "x", "path": "\ud800"}])]
    with OllamaTestServer(script) as server:
        code, out, err = ask("--root", str(tmp_path), "--host", server.host, "Search?")
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1, err
    assert '> search {"pattern": "x", "path": "\\ud800"}' in out  # shown escaped
    assert "Traceback" not in out + err


def test_ask_session_survives_hostile_searches_and_goes_on(deep_root):
    script = [
        hostile_turn(WIRE_SAFE),
        reply(chunk("First answer.", done=True)),
        hostile_turn([{"pattern": "x", "path": "\ud800"}]),
        reply(chunk("Third answer.", done=True)),
    ]
    with OllamaTestServer(script) as server:
        args = ("--root", str(deep_root), "--host", server.host)
        code, out, err = ask(*args, stdin="First?\nSecond?\nThird?\nexit\n")
        bodies = server.chat_bodies()
    assert code == 0, err
    assert "Traceback" not in out + err
    assert "First answer." in out and "Third answer." in out
    assert len(bodies) == 4  # the second exchange failed before its follow-up was sent
    last = [(m["role"], m["content"]) for m in bodies[3]["messages"] if m["role"] == "user"]
    assert last == [("user", "First?"), ("user", "Third?")]  # the failed one was left out
    assert len(tool_results(bodies[3])) == len(WIRE_SAFE)  # the first exchange was kept


# --- the search stays within its budget of time and memory for any pattern ------------------------


CHILD_TIMEOUT = 60  # seconds: far past any budget under test, short of a hung suite


# A search call in a fresh Python: arguments root, search_seconds, the call's arguments.
SEARCH_CALL = (
    "import json, sys\n"
    f"sys.path.insert(0, {str(HERE)!r})\n"
    "from readonly_tools import ReadOnlyTools\n"
    "tools = ReadOnlyTools(sys.argv[1])\n"
    "tools.search_seconds = float(sys.argv[2])\n"
    "print(json.dumps(tools.invoke('search', json.loads(sys.argv[3]))))\n"
)


def search_in_child(root, arguments, seconds, address_space=None):
    """One search call in a fresh Python with `search_seconds` shrunk; its JSON result.

    `address_space`: bytes, the child's hard limit on memory (as `ulimit -v` sets it)."""
    done = subprocess.run(
        [sys.executable, "-c", SEARCH_CALL, str(root), str(seconds), json.dumps(arguments)],
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT,  # a search that ignores its budget fails here
        preexec_fn=limited_memory(address_space) if address_space else None,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def limited_memory(limit):
    def limit_it():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return limit_it


def test_a_catastrophic_pattern_stops_at_the_search_budget(tmp_path):
    (tmp_path / "a.txt").write_text("a" * 34 + "!\n")
    (tmp_path / "b.txt").write_text("(a+)+$ is a pattern\n")
    result = search_in_child(tmp_path, {"pattern": "(a+)+$"}, seconds=0.5)
    assert "ran out of time" in result["note"]
    # Killed inside its first file: none was finished, skipped or left out for depth.
    assert result["files_searched"] == 0
    assert "files_skipped" not in result and "folders_skipped" not in result
    # Literal search still works on a valid expression's text, before the slow line.
    result = search_in_child(tmp_path, {"pattern": "(a+)+$", "path": "b.txt"}, seconds=0.5)
    assert result["matches"] == ["b.txt:1: (a+)+$ is a pattern"]


def test_a_pattern_that_fills_memory_ends_the_search_keeping_what_it_found(tmp_path):
    # Python's `re` keeps its backtracking state in memory: 370 MB for this pattern on this
    # line (measured, without the cap), found well within the shipped time budget.
    (tmp_path / "a.txt").write_text("needle\n")
    (tmp_path / "b.txt").write_text("a" * (SEARCH_FILE_BYTES - 1000) + "\n")  # still searched
    result = ReadOnlyTools(tmp_path).invoke("search", {"pattern": "needle|((a)|b)*c"})
    assert result["matches"] == ["a.txt:1: needle"]
    assert result["note"].startswith(OUT_OF_MEMORY), result


def test_a_long_matching_line_is_shown_cut_to_the_line_limit(tmp_path):
    # One minified line must not fill the whole result: each match shows LINE_LIMIT characters.
    line = "needle " + "x" * (3 * LINE_LIMIT)
    (tmp_path / "min.js").write_text(f"  {line}\n")
    result = ReadOnlyTools(tmp_path).invoke("search", {"pattern": "needle"})
    assert result["matches"] == [f"min.js:1: {line[:LINE_LIMIT]}"]


def test_a_file_over_the_search_size_cap_is_skipped(tmp_path):
    # Likely data, not code: it is counted as skipped and never read.
    (tmp_path / "data.txt").write_text("needle\n" + "x" * SEARCH_FILE_BYTES)
    (tmp_path / "code.py").write_text("needle = 1\n")
    result = ReadOnlyTools(tmp_path).invoke("search", {"pattern": "needle"})
    assert result["matches"] == ["code.py:1: needle = 1"]
    assert result["files_skipped"].startswith("1 ")


def test_a_file_is_judged_binary_from_its_first_8_kb_only(tmp_path):
    # As git decides: a NUL byte in the first 8,192 bytes makes it binary; one later does not.
    (tmp_path / "early.bin").write_bytes(b"needle\n" + b"x" * 8000 + b"\0\n")
    (tmp_path / "late.txt").write_bytes(b"needle\n" + b"x" * 8192 + b"\0\n")
    result = ReadOnlyTools(tmp_path).invoke("search", {"pattern": "needle"})
    assert result["matches"] == ["late.txt:1: needle"]
    assert result["files_skipped"].startswith("1 ")


def test_a_pattern_longer_than_the_cap_is_refused(tmp_path):
    (tmp_path / "a.txt").write_text("ab\n")
    result = ReadOnlyTools(tmp_path).invoke("search", {"pattern": "(a|b)" * 20_000})
    assert f"at most {PATTERN_LIMIT}" in result["error"]


def test_skipped_binary_files_count_toward_the_search_budget(tmp_path):
    for number in range(50):
        (tmp_path / f"bin_{number:03}").write_bytes(b"\0needle")
    (tmp_path / "zzz.txt").write_text("needle\n")
    result = search_in_child(tmp_path, {"pattern": "needle"}, seconds=0)
    assert "ran out of time" in result["note"]
    assert int(result["files_skipped"].split()[0]) < 50  # it stopped among the binaries


def test_a_search_out_of_time_stops_inside_the_file_it_is_in(tmp_path):
    # The budget is checked after every line, not only between files: one long file cannot
    # hold the search past it. With a budget of 0, the first line is the last one searched.
    (tmp_path / "a.txt").write_text("needle 1\nneedle 2\n")
    result = search_in_child(tmp_path, {"pattern": "needle"}, seconds=0)
    assert result["matches"] == ["a.txt:1: needle 1"]
    assert result["note"].startswith("the search ran out of time after 1 matches")


def test_search_works_under_a_memory_limit_below_its_own(tmp_path):
    # A user's `ulimit -v` lower than the search's SEARCH_MEMORY: the child keeps the lower.
    (tmp_path / "a.py").write_text("needle = 1\n")
    found = search_in_child(tmp_path, {"pattern": "needle"}, 10, address_space=SEARCH_MEMORY // 2)
    assert found["matches"] == ["a.py:1: needle = 1"], found


def sig_caught(pid):
    """The signals `pid` has handlers for, as a bit mask (bit n-1 for signal n)."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(status.split("SigCgt:")[1].split()[0], 16)


@pytest.mark.parametrize(
    "how, why", [(signal.SIGINT, "KeyboardInterrupt"), (signal.SIGKILL, "no output")]
)
def test_a_search_child_that_dies_is_a_failed_search_naming_its_last_words(tmp_path, how, why):
    # A child ended from outside (a crash with a traceback, the kernel's OOM killer) sent no
    # last line: the model is told the search failed, with the last line of its stderr.
    (tmp_path / "a.txt").write_text("a" * 40 + "!\n")  # a search that runs until stopped
    arguments = json.dumps({"pattern": "(a+)+$"})
    harness = subprocess.Popen(
        [sys.executable, "-c", SEARCH_CALL, str(tmp_path), str(CHILD_TIMEOUT), arguments],
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=sigint_default,  # the search child inherits it: Ctrl-C is Python's to handle
    )

    def started():  # only once Python's Ctrl-C handler is in place does SIGINT raise
        return [pid for pid in search_children(harness.pid) if sig_caught(pid) & 2]

    try:
        found = []  # the pid seen, kept: asking /proc again could find the child gone
        assert wait_for(lambda: found.extend(started()) or found)
        os.kill(found[0], how)
        out, _ = harness.communicate(timeout=CHILD_TIMEOUT)
    finally:
        harness.kill()
        harness.wait()
    failed = f"the search failed ({why}); try a simpler pattern or a smaller path"
    assert json.loads(out) == {"error": failed}


STOP_AT = 1000.0  # a search's end on the stand-in clock below


@pytest.mark.waits
@pytest.mark.parametrize(
    ("a_py", "readings", "searched", "matches"),
    [
        # a line check reads exactly the end: not yet out of time, the next line is read
        ("hit 1\nhit 2\nhit 3\n", [STOP_AT], 1, ["a.py:1: hit 1", "a.py:2: hit 2"]),
        # the check after a file reads exactly the end: the next file is searched too
        ("hit 1\n", [STOP_AT - 1, STOP_AT], 2, ["a.py:1: hit 1"]),
    ],
    ids=["line", "file"],
)
def test_a_clock_reading_equal_to_the_end_of_the_search_budget_is_not_yet_out_of_time(
    tmp_path, monkeypatch, a_py, readings, searched, matches
):
    # The search stops once the clock is PAST its end. On a 1 ns monotonic clock a check
    # lands exactly on the end in about one of 800 searches that run out of time (measured
    # in the review of this boundary); a clock that stands still there shows it each time.
    (tmp_path / "a.py").write_text(a_py)
    (tmp_path / "b.py").write_text("no\n")
    clock = iter([*readings, *[STOP_AT + 1] * 10])
    monkeypatch.setattr(readonly_tools, "time", SimpleNamespace(monotonic=lambda: next(clock)))
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    sent, counts = [], {"searched": 0, "skipped": 0, "deep": 0}
    try:
        cut = readonly_tools._search(Tree(tmp_path, fd), "hit", [], STOP_AT, counts, sent.append)
    finally:
        os.close(fd)
    assert cut == "the search ran out of time"
    assert (counts["searched"], [item["match"] for item in sent]) == (searched, matches)


# --- the search child refuses what changed after the check ----------------------------------------


def search_child_sends(root, parts):
    """The lines the search child sends for `parts` (real names, as the harness checked them)."""
    request = {"root": str(root), "pattern": "needle", "parts": parts, "seconds": 10}
    root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-c", CHILD_CODE, str(HERE), str(root_fd)],
            input=json.dumps(request), pass_fds=(root_fd,), capture_output=True, text=True,
            timeout=CHILD_TIMEOUT,
        )  # fmt: skip
    finally:
        os.close(root_fd)
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_the_search_child_refuses_a_path_that_became_a_link_after_the_check(tmp_path):
    # The harness sends the real names it checked; a link there now is a swap, even inside.
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("needle = 1\n")
    (tmp_path / "lib").symlink_to("src")
    sent = search_child_sends(tmp_path, ["lib"])
    assert sent == [{"refused": CHANGED, "searched": 0, "skipped": 0, "deep": 0}]


def test_the_search_child_never_opens_a_path_that_became_a_fifo_after_the_check(tmp_path):
    os.mkfifo(tmp_path / "app.py")  # opening it to read would block the child
    sent = search_child_sends(tmp_path, ["app.py"])
    assert sent == [{"cut": None, "searched": 0, "skipped": 0, "deep": 0}]  # nothing, no crash


# --- file names that are not UTF-8 or hold control characters -------------------------------------


def test_non_utf8_file_names_are_shown_escaped_and_cross_the_sdk_wire(tmp_path):
    (tmp_path / os.fsdecode(b"caf\xff.py")).write_text("needle = 1\n")
    calls = [call("list_dir", path="."), call("search", 1, pattern="needle")]
    script = [reply(chunk(tool_calls=calls, done=True)), reply(chunk("Done.", done=True))]
    with OllamaTestServer(script) as server:
        code, out, err = ask("--root", str(tmp_path), "--host", server.host, "Files?")
        bodies = server.chat_bodies()
    assert code == 0, err
    listed, found = tool_results(bodies[1])
    assert listed["entries"] == ["caf\\xff.py (11 bytes)"]
    assert found["matches"] == ["caf\\xff.py:1: needle = 1"]


def test_control_characters_in_file_names_are_shown_escaped(tmp_path):
    # A name with a newline could otherwise fake extra `file:line:` results and entries.
    (tmp_path / "fake\nsrc:x.py:1: injected").write_text("needle\n")
    (tmp_path / "bell\x07\u2028.py").write_text("needle\n")
    (tmp_path / "d\x1b[31m").mkdir()
    (tmp_path / "d\x1b[31m" / "a.py").write_text("needle\n")
    tools = ReadOnlyTools(tmp_path)
    assert tools.invoke("list_dir", {"path": "."})["entries"] == [
        "bell\\x07\\u2028.py (7 bytes)",
        "d\\x1b[31m/",
        "fake\\nsrc:x.py:1: injected (7 bytes)",
    ]
    assert tools.invoke("search", {"pattern": "needle"})["matches"] == [
        "bell\\x07\\u2028.py:1: needle",
        "fake\\nsrc:x.py:1: injected:1: needle",
        "d\\x1b[31m/a.py:1: needle",
    ]


def test_a_search_child_whose_harness_is_killed_ends_by_itself(tmp_path):
    # found by a failed run: the harness killed mid-search left its child in the regex
    # engine, an orphan using a core until the machine was restarted
    (tmp_path / "a.txt").write_text("a" * 40 + "!\n")  # a search that runs until stopped
    arguments = json.dumps({"pattern": "(a+)+$"})
    harness = subprocess.Popen(
        [sys.executable, "-c", SEARCH_CALL, str(tmp_path), "1", arguments],
        stdout=subprocess.DEVNULL,
    )
    try:
        found = []
        assert wait_for(lambda: found.extend(search_children(harness.pid)) or found)
    finally:
        harness.kill()  # no one is left to kill the search at its budget's end
        harness.wait()
    # its CPU limit: the budget (1 s) and its grace, and 2 s more
    assert wait_for(lambda: not Path(f"/proc/{found[0]}").exists(), seconds=30)
