"""Offline tests of the read-only tools and of ask.py, the repository assistant.

`ReadOnlyTools` is tested on small directories built in `tmp_path` (with links leading out,
a `.git`, a binary file, a FIFO). `ask.py` runs against the local Ollama-protocol test
server on 127.0.0.1, through the real `ollama` SDK: one question or an interactive session
fed through stdin, its main() in the test's process (tests/in_process.py); and as a real
subprocess where the process is the subject: Ctrl-C (a real SIGINT) during an answer.
"""

import io
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from agent_loop import TEXT_DELTA, THINKING_DELTA
from ask import ASK_PROMPT, Display
from plumbing.readonly_tools import RESULT_LIMIT, SEARCH_SECONDS, ReadOnlyTools
from plumbing.sample import copy_sample
from tests.helpers import Reader, search_children, sigint_default, wait_for, wait_until_gone
from tests.in_process import run_cli
from tests.ollama_test_server import OllamaTestServer, call, chunk, reply

ASK = Path(__file__).resolve().parent.parent / "ask.py"
SECRET = "TOP-SECRET-OUTSIDE"  # content that lives outside the root
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


# --- refusals ----------------------------------------------------------------------------------


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


# --- results -----------------------------------------------------------------------------------


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


# --- nothing can write -------------------------------------------------------------------------


def snapshot(*tops):
    """Every entry under `tops` (links not followed): type, mode, size, mtime, and bytes."""
    seen = {}
    for top in tops:
        for folder, subfolders, files in os.walk(top):
            for name in [".", *subfolders, *files]:
                path = os.path.normpath(os.path.join(folder, name))
                info = os.lstat(path)
                entry = (info.st_mode, info.st_size, info.st_mtime_ns)
                if stat.S_ISREG(info.st_mode):
                    entry += (Path(path).read_bytes(),)
                elif stat.S_ISLNK(info.st_mode):
                    entry += (os.readlink(path),)
                seen[path] = entry
    return seen


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
    before = snapshot(root, root.parent / "outside")
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
    assert snapshot(root, root.parent / "outside") == before


# --- ask.py as a program (Ctrl-C) and in-process (the rest) --------------------------------------


@pytest.fixture
def spawn():
    """Start ask.py; every process started is killed and reaped when the test ends."""
    started = []

    def start(*args, **options):
        process = subprocess.Popen(
            [sys.executable, str(ASK), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=sigint_default,
            **options,
        )
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
        process.communicate()


def ask(spawn, *args, stdin=""):
    """(exit code, stdout, stderr) of one ask.py session fed `stdin`: its main() in this
    process (tests/in_process.py), as a program would answer it; the Ctrl-C tests `spawn`."""
    done = run_cli("ask.py", *args, stdin=stdin)
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize("question", ["", "  \n"], ids=["empty", "blank"])
def test_an_empty_question_is_refused_before_any_server_is_asked(spawn, question):
    code, out, err = ask(spawn, "--host", "http://127.0.0.1:9", question)
    assert code == 2
    assert out == ""
    assert err == "error: the question is empty (see --help)\n"


def messages_of(body):
    return [(m["role"], m.get("content", "")) for m in body["messages"]]


def test_one_question_is_answered_with_list_dir_and_read_file(spawn, tmp_path):
    repo = copy_sample(tmp_path)
    before = snapshot(repo)
    script = [
        reply(chunk("Let me look.", tool_calls=[call("list_dir", path=".")], done=True)),
        reply(chunk(tool_calls=[call("read_file", path="path_rules.py")], done=True)),
        reply(chunk("python_sources keeps "), chunk("src paths (path_rules.py:4).", done=True)),
    ]
    with OllamaTestServer(script) as server:
        code, out, err = ask(spawn, "--root", str(repo), "--host", server.host, "What does it do?")
    assert code == 0, err
    assert '> list_dir {"path": "."}\n' in out
    assert '> read_file {"path": "path_rules.py"}\n' in out
    assert out.rstrip().endswith("python_sources keeps src paths (path_rules.py:4).")
    assert err == ""
    first, second, third = server.chat_bodies()
    assert first["messages"] == [
        {"role": "system", "content": ASK_PROMPT},
        {"role": "user", "content": "What does it do?"},
    ]
    assert [t["function"]["name"] for t in first["tools"]] == ["list_dir", "read_file", "search"]
    listing = json.loads(second["messages"][-1]["content"])
    assert "path_rules.py (" in " ".join(listing["entries"]) and "tests/" in listing["entries"]
    read = json.loads(third["messages"][-1]["content"])
    assert read["text"] == (repo / "path_rules.py").read_text()
    assert snapshot(repo) == before


def test_unreachable_server_exits_2_with_one_error_line(spawn, tmp_path, unused_port):
    host = f"http://127.0.0.1:{unused_port}"
    code, out, err = ask(spawn, "--root", str(tmp_path), "--host", host, "Hello?")
    assert code == 2
    assert err.startswith(f"error: cannot reach Ollama at {host}") and err.count("\n") == 1
    assert "Traceback" not in out + err


def test_loop_stopping_without_an_answer_exits_1(spawn, tmp_path):
    script = [reply(chunk(tool_calls=[call("list_dir", path=".")], done=True))]
    with OllamaTestServer(script) as server:
        args = ("--root", str(tmp_path), "--host", server.host, "--max-turns", "1", "Hi?")
        code, out, err = ask(spawn, *args)
    assert code == 1
    assert "> list_dir" in out
    assert err.startswith("error: stopped without an answer: max_turns")


def test_usage_errors_exit_2_with_one_error_line(spawn, tmp_path):
    for args in (["--root", str(tmp_path / "missing"), "q"], ["--max-turns", "0", "q"], [" "]):
        code, out, err = ask(spawn, *args)
        assert code == 2 and out == ""
        assert err.startswith("error: ") and err.count("\n") == 1, err


def test_a_host_that_is_not_a_url_exits_2_naming_it(spawn, tmp_path):
    host = "ftp://127.0.0.1:9"
    code, out, err = ask(spawn, "--root", str(tmp_path), "--api", "openai", "--host", host, "Q?")
    assert code == 2 and out == ""
    assert err.startswith(f"error: --host {host}: base URL must be") and err.count("\n") == 1


def test_ctrl_c_during_the_model_check_exits_130_without_traceback(spawn, tmp_path):
    # A server that takes the connection and never answers: the check before the first
    # question waits on it, and Ctrl-C must end ask.py there as it does during an answer.
    with socket.create_server(("127.0.0.1", 0)) as silent:
        silent.settimeout(30)  # only a broken build waits it out
        host = f"http://127.0.0.1:{silent.getsockname()[1]}"
        process = spawn("--root", str(tmp_path), "--host", host, "Question?")
        connection, _ = silent.accept()  # the check has begun
        with connection:
            process.send_signal(signal.SIGINT)
            out, err = process.communicate(timeout=15)
    assert process.returncode == 130
    assert out == b"" and err == b"\ninterrupted\n"


def test_help_states_defaults_and_exit_codes(spawn):
    code, out, _ = ask(spawn, "--help")
    assert code == 0
    defaults = ["current directory", "(default: ollama)", "(default: gemma4:e2b)", "(default: 20)"]
    hosts = ["http://127.0.0.1:11434", "http://127.0.0.1:8080/v1"]
    codes = ["exit codes", "0 the model answered", "1 the loop stopped", "2 usage error", "130"]
    for text in defaults + hosts + codes:
        assert text in " ".join(out.split()), text


def session(spawn, root, script, stdin):
    """An ask.py session over `root`, answered from `script`, that exits 0: (stdout,
    stderr, the request bodies the server got)."""
    with OllamaTestServer(script) as server:
        code, out, err = ask(spawn, "--root", str(root), "--host", server.host, stdin=stdin)
    assert code == 0, err
    return out, err, server.chat_bodies()


def test_session_second_request_carries_first_question_and_answer(spawn, tmp_path):
    (tmp_path / "notes.txt").write_text("meeting on friday\n")
    script = [
        reply(chunk(tool_calls=[call("list_dir", path=".")], done=True)),
        reply(chunk("There is one file, notes.txt.", done=True)),
        reply(chunk("It is notes.txt.", done=True)),
    ]
    stdin = "What files are there?\nWhich one did you mention?\n exit \nNever asked.\n"
    out, _, bodies = session(spawn, tmp_path, script, stdin)
    assert "There is one file, notes.txt." in out and "It is notes.txt." in out
    assert len(bodies) == 3  # `exit` ended the session: nothing more was asked
    follow_up = bodies[2]
    assert messages_of(follow_up)[1:] == [
        ("user", "What files are there?"),
        ("assistant", ""),  # the tool call, then its result
        ("tool", json.dumps({"path": ".", "entries": ["notes.txt (18 bytes)"]})),
        ("assistant", "There is one file, notes.txt."),
        ("user", "Which one did you mention?"),
    ]
    assert follow_up["messages"][0] == {"role": "system", "content": ASK_PROMPT}


def test_session_asks_nothing_for_an_empty_line(spawn, tmp_path):
    script = [reply(chunk("Answered.", done=True))]
    out, _, bodies = session(spawn, tmp_path, script, stdin="\n   \nQuestion?\n")
    assert "Answered." in out
    assert [messages_of(body)[1:] for body in bodies] == [[("user", "Question?")]]


def test_session_leaves_a_failed_question_out_and_says_so(spawn, tmp_path):
    # mutation: the line saying so dropped, and nothing told the user the next question
    # starts without the failed one
    script = [
        reply("the model crashed", status=500),
        reply(chunk("Second answer.", done=True)),
        reply(chunk("Third answer.", done=True)),
    ]
    stdin = "First question?\nSecond question?\nThird question?\n"
    out, err, bodies = session(spawn, tmp_path, script, stdin)
    assert err.count("[this question is left out of the conversation]") == 1
    assert "Second answer." in out and "Third answer." in out
    third = messages_of(bodies[2])[1:]
    assert third == [("user", "Second question?"), ("assistant", "Second answer."),
                     ("user", "Third question?")]  # fmt: skip


def test_ctrl_c_during_an_answer_returns_to_the_prompt(spawn, tmp_path):
    gate = threading.Event()
    script = [
        reply(chunk("Partial"), chunk(" rest", done=True), gate=gate),  # held after "Partial"
        reply(chunk("Second answer.", done=True)),
    ]
    with OllamaTestServer(script) as server:
        process = spawn("--root", str(tmp_path), "--host", server.host)
        out, err = Reader(process.stdout), Reader(process.stderr)
        process.stdin.write(b"First question?\n")
        process.stdin.flush()
        after = out.wait_for("Partial")
        process.send_signal(signal.SIGINT)
        out.wait_for("ask> ", start=after)  # back at the prompt
        gate.set()  # let the server's handler finish; the client has hung up already
        process.stdin.write(b"Second question?\n")
        process.stdin.flush()
        out.wait_for("Second answer.", start=after)
        process.stdin.write(b"exit\n")
        process.stdin.flush()
        assert process.wait(timeout=15) == 0
        bodies = server.chat_bodies()
    assert len(bodies) == 2
    # The cancelled question was left out: the next request starts from a clean history.
    assert messages_of(bodies[1])[1:] == [("user", "Second question?")]
    err.wait_for("cancelled")
    assert b" rest" not in out.data and b"Traceback" not in out.data + err.data


def test_ctrl_c_during_one_question_exits_130_without_traceback(spawn, tmp_path):
    gate = threading.Event()
    script = [reply(chunk("Partial"), chunk(" rest", done=True), gate=gate)]
    with OllamaTestServer(script) as server:
        process = spawn("--root", str(tmp_path), "--host", server.host, "Question?")
        out, err = Reader(process.stdout), Reader(process.stderr)
        out.wait_for("Partial")
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=15) == 130
        gate.set()
    err.wait_for("interrupted")
    assert b"Traceback" not in err.data


def test_ctrl_c_during_a_search_ends_the_search_child_too(spawn, tmp_path):
    # The search child runs in its own session, so Ctrl-C reaches ask.py alone: ask.py must
    # end the child, not wait for a backtracking pattern that would run for hours.
    (tmp_path / "a.txt").write_text("a" * 40 + "!\n")
    script = [reply(chunk(tool_calls=[call("search", pattern="(a+)+$")], done=True))]
    with OllamaTestServer(script) as server:
        process = spawn("--root", str(tmp_path), "--host", server.host, "Where?")
        Reader(process.stdout).wait_for("> search")
        assert wait_for(lambda: search_children(process.pid))
        (child,) = search_children(process.pid)
        try:
            process.send_signal(signal.SIGINT)
            code = process.wait(timeout=SEARCH_SECONDS)  # the child's own budget, unused
        finally:
            gone = wait_until_gone(child, seconds=1)
            if not gone:  # a broken build left it running: end it here
                os.kill(child, signal.SIGKILL)
    assert code == 130 and gone


def test_answer_and_thinking_never_share_a_line_and_a_file_gets_no_colour(monkeypatch):
    # Answer text goes to stdout, thinking to stderr: switching ends the other's open line,
    # and thinking is dimmed only on a terminal (NO_COLOR unset here, stderr a file).
    monkeypatch.delenv("NO_COLOR", raising=False)
    out, err = io.StringIO(), io.StringIO()
    display = Display(out, err)
    for kind, text in ((TEXT_DELTA, "Two "), (THINKING_DELTA, "hm"), (TEXT_DELTA, "files.")):
        display.show({"type": kind, "text": text})
    assert out.getvalue() == "Two \nfiles."
    assert err.getvalue() == "hm\n"


@pytest.mark.parametrize("no_color, dimmed", [(None, True), ("1", False)])
def test_thinking_on_a_terminal_is_dimmed_unless_no_color_is_set(monkeypatch, no_color, dimmed):
    if no_color is None:
        monkeypatch.delenv("NO_COLOR", raising=False)
    else:
        monkeypatch.setenv("NO_COLOR", no_color)
    terminal, its_side = os.openpty()
    try:
        with open(its_side, "w", closefd=True) as err:
            Display(io.StringIO(), err).show({"type": THINKING_DELTA, "text": "hm"})
        shown = os.read(terminal, 100)
    finally:
        os.close(terminal)
    assert (b"\x1b[2mhm\x1b[0m" in shown) is dimmed and b"hm" in shown


def test_a_fifo_is_answered_as_not_a_regular_file_and_never_opened(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    result = ReadOnlyTools(tmp_path).invoke("read_file", {"path": "fifo"})
    assert result == {"error": "'fifo' is not a regular file"}


def test_a_file_of_exactly_the_limit_in_4_byte_characters_is_read_whole(tmp_path):
    (tmp_path / "faces.txt").write_text("\U0001f600" * RESULT_LIMIT, encoding="utf-8")
    result = ReadOnlyTools(tmp_path).invoke("read_file", {"path": "faces.txt"})
    assert result == {"path": "faces.txt", "text": "\U0001f600" * RESULT_LIMIT}
