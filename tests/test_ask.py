"""Offline tests of ask.py, the repository assistant.

ask.py runs against the local Ollama-protocol test server on 127.0.0.1, through the real
`ollama` SDK: one question or an interactive session fed through stdin, its main() in the
test's process (tests/in_process.py). Its tools, ReadOnlyTools, are
tests/test_readonly_tools.py's; Ctrl-C during an answer (a real SIGINT to ask.py as a
program), tests/test_ctrl_c.py's; its deadline, tests/test_deadline.py's.
"""

import io
import json
import os

import pytest

from agent_loop import TEXT_DELTA, THINKING_DELTA
from ask import ASK_PROMPT, Display
from plumbing.sample import copy_sample
from tests.helpers import ask, messages_of, tree_snapshot
from tests.ollama_test_server import OllamaTestServer, call, chunk, reply


@pytest.mark.parametrize("question", ["", "  \n"], ids=["empty", "blank"])
def test_an_empty_question_is_refused_before_any_server_is_asked(question):
    code, out, err = ask("--host", "http://127.0.0.1:9", question)
    assert code == 2
    assert out == ""
    assert err == "error: the question is empty (see --help)\n"


def test_one_question_is_answered_with_list_dir_and_read_file(tmp_path):
    repo = copy_sample(tmp_path)
    before = tree_snapshot(repo)
    script = [
        reply(chunk("Let me look.", tool_calls=[call("list_dir", path=".")], done=True)),
        reply(chunk(tool_calls=[call("read_file", path="path_rules.py")], done=True)),
        reply(chunk("python_sources keeps "), chunk("src paths (path_rules.py:4).", done=True)),
    ]
    with OllamaTestServer(script) as server:
        code, out, err = ask("--root", str(repo), "--host", server.host, "What does it do?")
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
    assert tree_snapshot(repo) == before


def test_unreachable_server_exits_2_with_one_error_line(tmp_path, unused_port):
    host = f"http://127.0.0.1:{unused_port}"
    code, out, err = ask("--root", str(tmp_path), "--host", host, "Hello?")
    assert code == 2
    assert err.startswith(f"error: cannot reach Ollama at {host}") and err.count("\n") == 1
    assert "Traceback" not in out + err


def test_loop_stopping_without_an_answer_exits_1(tmp_path):
    script = [reply(chunk(tool_calls=[call("list_dir", path=".")], done=True))]
    with OllamaTestServer(script) as server:
        args = ("--root", str(tmp_path), "--host", server.host, "--max-turns", "1", "Hi?")
        code, out, err = ask(*args)
    assert code == 1
    assert "> list_dir" in out
    assert err.startswith("error: stopped without an answer: max_turns")


def test_usage_errors_exit_2_with_one_error_line(tmp_path):
    for args in (["--root", str(tmp_path / "missing"), "q"], ["--max-turns", "0", "q"], [" "]):
        code, out, err = ask(*args)
        assert code == 2 and out == ""
        assert err.startswith("error: ") and err.count("\n") == 1, err


def test_a_host_that_is_not_a_url_exits_2_naming_it(tmp_path):
    host = "ftp://127.0.0.1:9"
    code, out, err = ask("--root", str(tmp_path), "--api", "openai", "--host", host, "Q?")
    assert code == 2 and out == ""
    assert err.startswith(f"error: --host {host}: base URL must be") and err.count("\n") == 1


def test_help_states_defaults_and_exit_codes():
    code, out, _ = ask("--help")
    assert code == 0
    defaults = ["current directory", "(default: ollama)", "(default: gemma4:e2b)", "(default: 20)"]
    hosts = ["http://127.0.0.1:11434", "http://127.0.0.1:8080/v1"]
    codes = ["exit codes", "0 the model answered", "1 the loop stopped", "2 usage error", "130"]
    for text in defaults + hosts + codes:
        assert text in " ".join(out.split()), text


def session(root, script, stdin):
    """An ask.py session over `root`, answered from `script`, that exits 0: (stdout,
    stderr, the request bodies the server got)."""
    with OllamaTestServer(script) as server:
        code, out, err = ask("--root", str(root), "--host", server.host, stdin=stdin)
    assert code == 0, err
    return out, err, server.chat_bodies()


def test_session_second_request_carries_first_question_and_answer(tmp_path):
    (tmp_path / "notes.txt").write_text("meeting on friday\n")
    script = [
        reply(chunk(tool_calls=[call("list_dir", path=".")], done=True)),
        reply(chunk("There is one file, notes.txt.", done=True)),
        reply(chunk("It is notes.txt.", done=True)),
    ]
    stdin = "What files are there?\nWhich one did you mention?\n exit \nNever asked.\n"
    out, _, bodies = session(tmp_path, script, stdin)
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


def test_session_asks_nothing_for_an_empty_line(tmp_path):
    script = [reply(chunk("Answered.", done=True))]
    out, _, bodies = session(tmp_path, script, stdin="\n   \nQuestion?\n")
    assert "Answered." in out
    assert [messages_of(body)[1:] for body in bodies] == [[("user", "Question?")]]


def test_session_leaves_a_failed_question_out_and_says_so(tmp_path):
    # mutation: the line saying so dropped, and nothing told the user the next question
    # starts without the failed one
    script = [
        reply("the model crashed", status=500),
        reply(chunk("Second answer.", done=True)),
        reply(chunk("Third answer.", done=True)),
    ]
    stdin = "First question?\nSecond question?\nThird question?\n"
    out, err, bodies = session(tmp_path, script, stdin)
    assert err.count("[this question is left out of the conversation]") == 1
    assert "Second answer." in out and "Third answer." in out
    third = messages_of(bodies[2])[1:]
    assert third == [("user", "Second question?"), ("assistant", "Second answer."),
                     ("user", "Third question?")]  # fmt: skip


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
