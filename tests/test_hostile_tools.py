"""Offline tests of the tools against hostile input: nothing a model sends crashes a run,
leaks a file from outside the root, runs past the search budget or half-writes a file.

Each test builds its own small files in `tmp_path`. The search cases that would run for
hours on a backtracking engine run in a child Python process with a timeout, so a broken
budget fails the test instead of hanging the suite. `ask.py` runs against the Ollama-protocol
test server on 127.0.0.1, through the real `ollama` SDK: its main() in the test's process
where a question's answer is the subject, as a program where a signal is.
"""

import contextlib
import json
import os
import resource
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from agent_loop import STOPPED, TOOL_RESULT, agent_events
from plumbing.confined_tree import CHANGED, MISSING, OUTSIDE, SEARCH_FILE_BYTES, Tree
from plumbing.readonly_tools import (
    CHILD_CODE,
    LINE_LIMIT,
    OUT_OF_MEMORY,
    PATTERN_LIMIT,
    RESULT_LIMIT,
    SEARCH_MEMORY,
    ReadOnlyTools,
)
from plumbing.sample import copy_sample
from repo_tools import EDITABLE, RepoTools
from tests.helpers import open_under, search_children, sigint_default, wait_for
from tests.in_process import run_cli
from tests.ollama_test_server import OllamaTestServer, call, chunk, reply
from tests.scripted_model import ScriptedChat
from tool_guard import ToolBox, function_schema

HERE = Path(__file__).resolve().parent.parent
SECRET = "TOP-SECRET-OUTSIDE"
DEEP = 1100  # folders: past the ~1,000 frames at which a recursive walk fails on 3.11
CHILD_TIMEOUT = 60  # seconds: far past any budget under test, short of a hung suite
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


# A search call in a fresh Python: arguments root, search_seconds, the call's arguments.
SEARCH_CALL = (
    "import json, sys\n"
    f"sys.path.insert(0, {str(HERE)!r})\n"
    "from plumbing.readonly_tools import ReadOnlyTools\n"
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


# --- 1. a tool's exception is an error result ---------------------------------------------------


class Fragile(ToolBox):
    """A tool set whose one tool fails the way a bug would: not an expected error type."""

    schemas = [function_schema("divide", "Divide one by a number.", {"by": "The divisor"})]

    def handlers(self):
        return {"divide": lambda by: {"result": 1 / float(by)}}


def test_any_exception_from_a_tool_becomes_an_error_result_and_the_loop_goes_on():
    chat = ScriptedChat(
        [
            [chunk(tool_calls=[call("divide", by="0")], done=True)],
            [chunk("Dividing by zero failed.", done=True)],
        ]
    )
    events = list(agent_events(chat, Fragile(), "Divide by zero.", max_turns=3))
    results = [event["result"] for event in events if event["type"] == TOOL_RESULT]
    assert results == [{"error": "divide failed: ZeroDivisionError: float division by zero"}]
    assert events[-1]["type"] == STOPPED and events[-1]["reason"] == "assistant_finished"
    assert len(chat.requests) == 2  # the model read the error and answered


@pytest.mark.parametrize("name, shown", [("", '""'), (0, "0"), (False, "false")])
def test_a_call_whose_name_is_empty_or_false_is_told_that_name_back(name, shown):
    # Only a missing name (null) is "a call without a name"; "" or 0 is a name, quoted.
    chat = ScriptedChat(
        [
            [chunk(tool_calls=[{"function": {"name": name, "arguments": {}}}], done=True)],
            [chunk("No such tool.", done=True)],
        ]
    )
    events = list(agent_events(chat, Fragile(), "Divide by two.", max_turns=3))
    results = [event["result"] for event in events if event["type"] == TOOL_RESULT]
    assert results == [{"error": f"unknown tool {shown}; the offered tools are: divide"}]


# --- 2. hostile searches answer instead of raising ---------------------------------------------


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


# --- 2 (ask.py). the same calls end neither a question nor a session ---------------------------

# Over the wire, a lone surrogate in the model's own call cannot be sent back to the server
# in the next request (the SDK cannot encode it): that exchange ends as model_error, which
# is the adapter's to report; here it must not end ask.py with a traceback.
WIRE_SAFE = [arguments for arguments in HOSTILE_SEARCHES if arguments.get("path") != "\ud800"]


def hostile_turn(searches):
    calls = [call("search", index, **arguments) for index, arguments in enumerate(searches)]
    return reply(chunk(tool_calls=calls, done=True))


def run_ask(*args, stdin=""):
    """ask.py's main() run here (tests/in_process.py): (exit code, stdout, stderr)."""
    done = run_cli("ask.py", *args, stdin=stdin)
    return done.returncode, done.stdout, done.stderr


def tool_results(body):
    return [json.loads(m["content"]) for m in body["messages"] if m["role"] == "tool"]


def test_ask_one_question_survives_hostile_searches(deep_root):
    script = [hostile_turn(WIRE_SAFE), reply(chunk("Nothing crashed.", done=True))]
    with OllamaTestServer(script) as server:
        code, out, err = run_ask("--root", str(deep_root), "--host", server.host, "Search?")
        bodies = server.chat_bodies()
    assert code == 0, err
    assert "Traceback" not in out + err
    assert out.rstrip().endswith("Nothing crashed.")
    overflow, nested, deep = tool_results(bodies[1])
    assert deep["matches"] == ["top.txt:1: needle at the top"]


def test_ask_one_question_with_a_surrogate_path_ends_without_a_traceback(tmp_path):
    script = [hostile_turn([{"pattern": "x", "path": "\ud800"}])]
    with OllamaTestServer(script) as server:
        code, out, err = run_ask("--root", str(tmp_path), "--host", server.host, "Search?")
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
        code, out, err = run_ask(*args, stdin="First?\nSecond?\nThird?\nexit\n")
        bodies = server.chat_bodies()
    assert code == 0, err
    assert "Traceback" not in out + err
    assert "First answer." in out and "Third answer." in out
    assert len(bodies) == 4  # the second exchange failed before its follow-up was sent
    last = [(m["role"], m["content"]) for m in bodies[3]["messages"] if m["role"] == "user"]
    assert last == [("user", "First?"), ("user", "Third?")]  # the failed one was left out
    assert len(tool_results(bodies[3])) == len(WIRE_SAFE)  # the first exchange was kept


# --- 3. search stays within its budget for any pattern ------------------------------------------


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


# --- 4. file names that are not UTF-8 -----------------------------------------------------------


def test_non_utf8_file_names_are_shown_escaped_and_cross_the_sdk_wire(tmp_path):
    (tmp_path / os.fsdecode(b"caf\xff.py")).write_text("needle = 1\n")
    calls = [call("list_dir", path="."), call("search", 1, pattern="needle")]
    script = [reply(chunk(tool_calls=calls, done=True)), reply(chunk("Done.", done=True))]
    with OllamaTestServer(script) as server:
        code, out, err = run_ask("--root", str(tmp_path), "--host", server.host, "Files?")
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


# --- 5. confinement against a racing writer -----------------------------------------------------

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
    # (3,000 reads meet the folder about 500 times, the link 600, a swap mid-open 800.)
    with racing(root) as racer:
        results = [tools.invoke("read_file", {"path": "d/passwd"}) for _ in range(3000)]
        results += [tools.invoke("list_dir", {"path": "d"}) for _ in range(600)]
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
        cwd=HERE,
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


# --- 6. replace_text never half-writes ----------------------------------------------------------


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


# --- list_dir's cut and odd entries; search under a user's memory limit -------------------------


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


def test_search_works_under_a_memory_limit_below_its_own(tmp_path):
    # A user's `ulimit -v` lower than the search's SEARCH_MEMORY: the child keeps the lower.
    (tmp_path / "a.py").write_text("needle = 1\n")
    found = search_in_child(tmp_path, {"pattern": "needle"}, 10, address_space=SEARCH_MEMORY // 2)
    assert found["matches"] == ["a.py:1: needle = 1"], found


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
