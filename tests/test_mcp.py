"""--mcp (extensions/mcp_tools.py): the tools of an MCP server, started over stdio through the
official SDK (plumbing/mcp_client.py), offered beside the lab's as SERVER__TOOL, each call
checked, bounded, decided and kept, so that replay needs no server.

The servers are real processes speaking the protocol through the SDK's server API: the
lab's example, mcp_servers/pydocs.py, and tests/mcp_hostile_server.py, which misbehaves in
one way at a time. The model is the Ollama stand-in on 127.0.0.1 serving hand-written turns
through the real SDK: nothing here is a model's output.
"""

import json
import re
import subprocess
import sys
import time

import pytest

from harness.board import arm_of
from harness.page import recording_page
from harness.recording import load, save
from harness.recording_checks import RecordingError
from plumbing.mcp_client import McpError, McpServer
from replay import CANNOT_REPLAY, REPRODUCED
from tests.helpers import FAULTY_LINE, FIXED_LINE, LAB, page_blocks, record, replay
from tests.in_process import run_cli
from tests.ollama_test_server import OllamaTestServer, call, chunk, reply

PYDOCS = f"{sys.executable} {LAB / 'mcp_servers' / 'pydocs.py'}"
HOSTILE = f"{sys.executable} {LAB / 'tests' / 'mcp_hostile_server.py'}"


def turns(*calls):
    """A turn for each call, then the repair and an answer."""
    return [
        *(reply(chunk(tool_calls=[c]), chunk(done=True)) for c in calls),
        reply(
            chunk(tool_calls=[call("replace_text", old=FAULTY_LINE, new=FIXED_LINE)]),
            chunk(done=True),
        ),  # fmt: skip
        reply(chunk("Fixed."), chunk(done=True)),
    ]


def asked(tool, **arguments):
    """A call of `tool` with `arguments` (which may hold `name`: tests' `call` cannot)."""
    return {"id": f"call_{tool}", "function": {"index": 0, "name": tool, "arguments": arguments}}


def results(body):
    return [json.loads(m["content"]) for m in body["messages"] if m["role"] == "tool"]


def hostile_in(folder):
    """The hostile server's command, run from a copy in `folder` (a test's own): `no_process`
    then looks for that test's server alone, not another worker's."""
    copy = folder / "mcp_hostile_server.py"
    copy.write_bytes((LAB / "tests" / "mcp_hostile_server.py").read_bytes())
    return f"{sys.executable} {copy}"


def no_process(matching):
    """Whether no process's command line holds `matching`, within two seconds."""
    for _ in range(20):
        found = subprocess.run(["pgrep", "-f", matching], capture_output=True).stdout
        if not found:
            return True
        time.sleep(0.1)
    return False


SHARES_THE_RUN = pytest.mark.xdist_group("mcp-pydocs-run")


@pytest.fixture(scope="module")
def pydocs_run(tmp_path_factory):
    """(the finished record_run.py, the request bodies, the recording's path)."""
    output = tmp_path_factory.mktemp("mcp") / "pydocs.json"
    made = turns(asked("pydocs__lookup", name="ntpath.normpath"), asked("pydocs__search", word=5))
    with OllamaTestServer(made) as server:
        done = record("--host", server.host, "--mcp", PYDOCS, "--output", output)
        bodies = server.chat_bodies()
    return done, bodies, output


@SHARES_THE_RUN
def test_a_servers_tools_are_offered_as_server__tool_with_its_own_schema(pydocs_run):
    done, bodies, _ = pydocs_run
    assert done.returncode == 0, done.stdout + done.stderr
    offered = {t["function"]["name"]: t["function"] for t in bodies[0]["tools"]}
    assert {"read_file", "replace_text", "run_tests", "pydocs__lookup", "pydocs__search"} <= set(
        offered
    )
    assert offered["pydocs__lookup"]["parameters"]["required"] == ["name"]
    said = next(line for line in done.stdout.splitlines() if line.startswith("MCP server"))
    assert said.startswith("MCP server pydocs: 2 tools (lookup, search), ")
    assert said.endswith(" characters of schema in every request")


@SHARES_THE_RUN
def test_a_call_goes_to_the_server_and_a_wrong_one_is_refused_before_it(pydocs_run):
    done, bodies, path = pydocs_run
    looked_up, searched = results(bodies[2])
    assert looked_up["server"] == "pydocs" and "ntpath.normpath" in looked_up["text"]
    assert searched == {"error": "search: 5 is not of type 'string'"}
    decisions = load(path)["extensions"]["decisions"]
    assert [(d["call"], d["decision"]) for d in decisions] == [(1, "called"), (2, "refused")]
    assert decisions[0]["result"] == looked_up
    assert f"  [mcp] called: {decisions[0]['said']}" in done.stdout.splitlines()


@SHARES_THE_RUN
def test_a_run_with_mcp_tools_replays_with_no_server_nor_sdk(pydocs_run, tmp_path):
    _, _, path = pydocs_run
    (tmp_path / "mcp").mkdir()  # an SDK that cannot be imported, found before the real one
    (tmp_path / "mcp" / "__init__.py").write_text("raise ImportError('no SDK here')\n")
    done = subprocess.run(
        [sys.executable, str(LAB / "replay.py"), str(path)], capture_output=True, text=True,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"}, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "[mcp] called: pydocs lookup" in done.stdout


@SHARES_THE_RUN
def test_the_recording_keeps_each_servers_tools_and_load_checks_them(pydocs_run, tmp_path, capsys):
    _, _, path = pydocs_run
    (on,) = load(path)["extensions"]["on"]
    (server,) = on["settings"]["servers"]
    assert (server["name"], server["command"]) == ("pydocs", PYDOCS)
    assert [t["name"] for t in server["tools"]] == ["lookup", "search"]
    recording = load(path)
    recording["extensions"]["decisions"][0].pop("result")
    save(tmp_path / "bad.json", recording)
    with pytest.raises(
        RecordingError, match=r"decisions\[0\].result' is held by each decision of mcp"
    ):
        load(tmp_path / "bad.json")
    recording = load(path)
    recording["extensions"]["decisions"][1]["call"] = 3  # replace_text's
    save(tmp_path / "bad.json", recording)
    with pytest.raises(RecordingError, match=r"\[1\].call' of a decision of mcp must be a call"):
        load(tmp_path / "bad.json")
    for change, said in (  # the settings: checked by the extension, when a replay takes them
        (lambda s: s["servers"][0]["tools"][0].update(name="no spaces"), "no name a model can"),
        (lambda s: s.update(servers=[]), 'must be {"servers": [{command, name, tools}]}'),
        (lambda s: s["servers"][0]["tools"].extend([{"name": "x", "inputSchema": {},
                                                     "description": "y" * 20_000}]),
         "its tools' schemas are 20,"),
        (lambda s: s["servers"][0]["tools"].append(s["servers"][0]["tools"][0]),
         "two tools named lookup"),
        (lambda s: s["servers"][0].update(name="py__docs"), "no word of letters, digits, - and"),
        (lambda s: s["servers"].append(dict(s["servers"][0], name="PyDocs")),
         "a second server named PyDocs"),
    ):  # fmt: skip
        recording = load(path)
        change(recording["extensions"]["on"][0]["settings"])
        save(tmp_path / "bad.json", recording)
        outcome, _ = replay(tmp_path / "bad.json")
        refused = capsys.readouterr().err
        assert outcome == CANNOT_REPLAY and said in refused, refused
    assert replay(path)[0] == REPRODUCED


@SHARES_THE_RUN
def test_the_page_and_compare_say_which_server_each_call_went_to(pydocs_run):
    _, _, path = pydocs_run
    page = recording_page(load(path), "pydocs.json")
    assert "[mcp] called: pydocs lookup:" in page and "[mcp] refused: pydocs search:" in page
    assert re.search(
        r"<th>MCP servers</th><td>pydocs \(2 tools, [\d,]+ characters of schema in "
        r"every request\); their tools were asked for: pydocs 2</td>",
        page,
    )
    compared = " ".join(run_cli("compare.py", "--by", "extensions", str(path)).stdout.split())
    said = r"MCP servers: pydocs \(2 tools, [\d,]+ characters of schema in every request\); "
    assert re.search(said + "their tools were asked for: pydocs 2", compared), compared
    assert arm_of(load(path)) == "mcp pydocs"  # the board's row names the server, not its tools


def test_approve_asks_before_a_call_of_a_servers_tool(tmp_path):
    made = turns(asked("pydocs__nothing", name="x"), asked("pydocs__lookup", name="str.replace"))
    with OllamaTestServer(made) as server:
        done = record("--host", server.host, "--mcp", PYDOCS, "--approve",
                      "--output", tmp_path / "asked.json")  # fmt: skip
        bodies = server.chat_bodies()
    unknown, denied = results(bodies[2])  # a name no server offers is not asked about
    assert unknown["error"].startswith('unknown tool "pydocs__nothing"')
    assert denied["error"].startswith("The user denied this call")  # no terminal: denied
    decided = load(tmp_path / "asked.json")["extensions"]["decisions"]
    # asked about calls 2 (the server's tool: denied, so no mcp decision) and 3 (the edit)
    assert [(d["extension"], d["call"]) for d in decided] == [("approve", 2), ("approve", 3)]
    assert done.returncode in (0, 1), done.stderr


def test_plan_offers_no_servers_tool(tmp_path):
    ended = [reply(chunk("My plan."), chunk(done=True))]
    with OllamaTestServer(ended) as server:
        done = record("--host", server.host, "--mcp", PYDOCS, "--plan",
                      "--output", tmp_path / "plan.json")  # fmt: skip
        bodies = server.chat_bodies()
    assert done.returncode in (0, 1), done.stderr
    assert [t["function"]["name"] for t in bodies[0]["tools"]] == ["read_file"]


@pytest.mark.parametrize(
    ("mode", "said"),
    [
        ("exit", "MCPError: Connection closed (its stderr: hostile: exiting before the handshake)"),
        ("huge-schema", "its tools' schemas are 1,000,"),
        ("bad-bytes", "(its stderr: hostile: \ufffd\ufffd is no UTF-8)"),
        ("twice", "it offers two tools named echo"),
        ("deep-schema", "its tool deep is nested deeper than 32 levels"),  # else load() refuses
    ],
)
def test_a_server_that_cannot_be_offered_stops_the_run_in_one_line(mode, said, tmp_path):
    with OllamaTestServer([]) as server:
        done = record("--host", server.host, "--mcp", f"{hostile_in(tmp_path)} {mode}",
                      "--output", tmp_path / "never.json")  # fmt: skip
        sent = server.chat_bodies()
    assert done.returncode == 2 and not sent and not (tmp_path / "never.json").exists()
    (line,) = done.stderr.splitlines()
    assert line.startswith("error: the MCP server ") and said in line, line
    assert no_process(str(tmp_path))


def test_a_result_full_of_terminal_escapes_is_shown_written_out(tmp_path):
    with OllamaTestServer(turns(asked("hostile__shout", text="hi"))) as server:
        done = record("--host", server.host, "--mcp", f"{hostile_in(tmp_path)} escapes",
                      "--output", tmp_path / "shout.json")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert no_process(str(tmp_path))  # ended with the run, not only when its process exits
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout
    assert "\\u001b[2J" in done.stdout  # as JSON writes it; the recording keeps it as sent
    kept = load(tmp_path / "shout.json")
    assert "\x1b[2J" in kept["extensions"]["decisions"][0]["result"]["text"]
    page = recording_page(kept, "shout.json")
    assert "\x1b" not in page and "\x07" not in page  # the page writes them out too


def test_no_two_servers_tools_are_offered_under_one_name(tmp_path):
    named = [f"{HOSTILE} named a__b c", f"{HOSTILE} named a b__c"]  # a__b__c, twice?
    with OllamaTestServer(turns(asked("a__b__c", text="hi"))) as server:
        done = record("--host", server.host, "--mcp", named[0], "--mcp", named[1],
                      "--output", tmp_path / "two.json")  # fmt: skip
        bodies = server.chat_bodies()
    assert done.returncode == 0, done.stdout + done.stderr
    offered = [t["function"]["name"] for t in bodies[0]["tools"]]
    assert offered[-2:] == ["a_b__c", "a__b__c"]  # the first server's name: no `__` inside
    assert results(bodies[1])[0] == {"server": "a", "text": "a: hi"}


def test_a_line_on_stdout_that_is_no_json_rpc_prints_no_traceback(tmp_path):
    with OllamaTestServer(turns(asked("hostile__echo", text="hi"))) as server:
        done = subprocess.run(  # a process of its own: pytest's logging takes the SDK's log
            [sys.executable, str(LAB / "record_run.py"), "--host", server.host,
             "--mcp", f"{HOSTILE} junk", "--output", str(tmp_path / "junk.json")],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        bodies = server.chat_bodies()
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert results(bodies[1])[0] == {"server": "hostile", "text": "hostile: hi"}


def test_a_schema_that_cannot_check_arguments_refuses_the_call_and_the_run_is_kept(tmp_path):
    with OllamaTestServer(turns(asked("hostile__loop", text="hi"))) as server:
        done = record("--host", server.host, "--mcp", f"{HOSTILE} loop-schema",
                      "--output", tmp_path / "loop.json")  # fmt: skip
        bodies = server.chat_bodies()
    assert done.returncode == 0, done.stdout + done.stderr
    assert results(bodies[1])[0]["error"].startswith("loop: its own schema cannot check")
    (decided,) = load(tmp_path / "loop.json")["extensions"]["decisions"]  # a recording load takes
    assert (decided["decision"], decided["result"]) == ("refused", results(bodies[1])[0])


def test_a_handshake_that_never_ends_is_cut_and_its_process_ended(tmp_path):
    started = time.monotonic()
    with pytest.raises(McpError, match=r": no answer to the handshake within 1 s$"):
        McpServer(f"{hostile_in(tmp_path)} hang", seconds=1)
    assert time.monotonic() - started < 10
    assert no_process(str(tmp_path))


def test_a_call_that_is_not_answered_in_time_or_kills_the_server_is_one_line(tmp_path):
    slow = McpServer(f"{hostile_in(tmp_path)} slow")
    try:
        with pytest.raises(McpError, match=r": MCPError: Request 'tools/call' timed out$"):
            slow.call("wait", {"text": "x"}, 1)
    finally:
        slow.close()
    assert no_process(str(tmp_path))
    dies = McpServer(f"{HOSTILE} dies")
    try:
        with pytest.raises(McpError, match=r"dies'.*: MCPError: Connection closed"):
            dies.call("die", {"text": "x"}, 5)
        with pytest.raises(McpError, match="Connection closed"):  # and again, at once
            dies.call("die", {"text": "x"}, 5)
    finally:
        dies.close()


def test_a_command_that_does_not_start_is_one_line():
    with pytest.raises(McpError, match=r"/nowhere/server --x': no program '/nowhere/server' to"):
        McpServer("/nowhere/server --x")
    with pytest.raises(McpError, match="No closing quotation"):
        McpServer("python3 'unclosed")
    with pytest.raises(McpError, match="^--mcp needs a command"):
        McpServer("  ")


@pytest.mark.parametrize(
    ("other", "said"),
    [
        (["--fork", "recordings/repair.json", "--at", "2"], "--mcp cannot go with --fork"),
        (["--one-shot"], "--one-shot offers no tools, which --mcp needs"),
        (["--mcp", "b", "--mcp", "c", "--mcp", "d", "--mcp", "e"], "--mcp: at most 4 servers"),
    ],
)
def test_mcp_is_refused_where_it_cannot_run(other, said):
    done = record("--mcp", "x", *other)
    assert done.returncode == 2 and said in done.stderr.splitlines()[-1], done.stderr


def test_a_forked_recording_with_mcp_tools_is_refused():
    from extensions.mcp_tools import McpTools
    from harness.recording_format import FORMAT

    assert "cannot be forked" in McpTools.recording_problem(
        {"fork": {"at": 2}, "format": FORMAT}, None
    )
    assert "cannot be forked" in McpTools.recording_problem({"format": FORMAT}, 3)
    assert "cannot hold MCP results" in McpTools.recording_problem(
        {"format": "agent-loop-recording/8"}, None
    )
    assert McpTools.recording_problem({"format": FORMAT}, None) is None


def test_the_server_docs_mcp_md_writes_starts_and_answers(tmp_path):
    (code,) = page_blocks("mcp.md", "Write your own server")
    assert len(code.splitlines()) <= 30  # as short as the page says
    (tmp_path / "my_server.py").write_text(code, encoding="utf-8")
    server = McpServer(f"{sys.executable} {tmp_path / 'my_server.py'}")
    try:
        assert (server.name, [t["name"] for t in server.tools]) == ("chars", ["characters"])
        answer = server.call("characters", {"text": "a\\b"}, 10)
    finally:
        server.close()
    assert answer["content"][0]["text"].splitlines() == [
        "'a' U+0061 LATIN SMALL LETTER A",
        "'\\\\' U+005C REVERSE SOLIDUS",
        "'b' U+0062 LATIN SMALL LETTER B",
    ]


def test_what_a_server_may_offer_is_bounded():
    from plumbing.mcp_offer import RESULT_LIMIT, TOOLS_LIMIT, offer_problem, result_of
    from plumbing.mcp_offer import settings_problem as problem

    tool = {"name": "t", "inputSchema": {"type": "object"}}
    many = [{**tool, "name": f"t{i}"} for i in range(TOOLS_LIMIT)]
    assert offer_problem("s", many) is None  # 32 tools: taken
    assert "it offers 33 tools; from 1 to 32" in offer_problem("s", [*many, {**tool, "name": "x"}])
    assert "it offers 0 tools" in offer_problem("s", [])
    assert "has no name a model can call" in offer_problem("s", [tool, {}])
    assert "a second server named s" in offer_problem("s", [tool], {"s": None})
    assert "must be" in problem({"servers": [["command", "name", "tools"]]})  # not an object
    good = {"command": "c", "name": "s", "tools": [tool]}
    assert problem({"servers": [good]}) is None
    assert "must be" in problem({"servers": [good, ["command", "name", "tools"]]})
    assert result_of("s", {"content": [{"type": "text", "text": "x" * RESULT_LIMIT}]}) == (
        "called", {"server": "s", "text": "x" * RESULT_LIMIT})  # fmt: skip
    word, cut = result_of("s", {"content": [{"type": "text", "text": "x" * (RESULT_LIMIT + 1)}]})
    assert cut["note"] == "cut at 8,000 of 8,001 characters" and len(cut["text"]) == RESULT_LIMIT
    failed = result_of("s", {"isError": True, "content": [{"type": "text", "text": "y" * 3000}]})
    assert failed == ("failed", {"error": "s said: " + "y" * 2000})


def test_a_tool_name_fits_a_function_name_with_its_server():
    from plumbing.mcp_offer import offer_problem

    tool = {"name": "t" * 42, "inputSchema": {"type": "object"}}
    assert offer_problem("s" * 20, [tool]) is None  # 20 + 2 + 42: 64 characters
    assert "no name a model can call" in offer_problem("s" * 20, [{**tool, "name": "t" * 43}])
    assert "is no word" in offer_problem("s" * 21, [tool])


def test_a_server_ends_with_the_program_that_started_it_whatever_ends_that(tmp_path):
    # the SDK starts a server in a session of its own: killed, the program could leave it,
    # busy in a call (`wait` sleeps 60 s), never reading the end of its stdin
    started = subprocess.Popen(
        [sys.executable, "-c", "import sys, threading, time; from plumbing.mcp_client import "
         "McpServer; s = McpServer(sys.argv[1]); threading.Thread(target=s.call, args=('wait', "
         "{'text': 'x'}, 60), daemon=True).start(); time.sleep(1); print('up', flush=True); "
         "time.sleep(60)", f"{hostile_in(tmp_path)} slow"],
        cwd=LAB, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert started.stdout.readline() == "up\n"
        assert not no_process(str(tmp_path))  # the server runs
    finally:
        started.kill()  # SIGKILL: nothing of the program's own runs after it
        started.wait()
    assert no_process(str(tmp_path))
