"""Offline tests of the loop, the tools and the Ollama adapter.

The loop is driven by scripted chunks (scripted_model.py) or, for the adapter, by the real
`ollama` SDK over real HTTP against ollama_test_server.py on 127.0.0.1. The tools act on a
temporary copy of sample_repo/ and run real pytest subprocesses.
"""

import json

import pytest

import local_model
from agent_loop import (
    ASSISTANT_FINISHED,
    EMPTY_RESPONSE,
    INCOMPLETE_MODEL_TURN,
    MAX_TURNS,
    MODEL_DONE,
    MODEL_ERROR,
    MODEL_START,
    STOPPED,
    TASK,
    TEXT_DELTA,
    THINKING_DELTA,
    TOOL_RESULT,
    TOOL_START,
    AgentLoop,
    agent_events,
)
from local_model import LocalModel
from plumbing.child_process import OUTPUT_LIMIT
from plumbing.pytest_report import count_results
from plumbing.pytest_run import run_pytest
from plumbing.sample import SAMPLE_REPO
from repo_tools import RepoTools
from tests.helpers import FAULTY_LINE, FIXED_LINE, of_type, run, wait_until_gone
from tests.ollama_test_server import OllamaTestServer, call, chunk, reply
from tests.scripted_model import ScriptedChat


def tool_replies(messages):
    return [json.loads(m["content"]) for m in messages if m["role"] == "tool"]


# --- assembling one turn -------------------------------------------------------------------


def test_content_thinking_and_calls_are_assembled_across_chunks(repo):
    read_code = call("read_file", path="path_rules.py")
    read_tests = call("read_file", path="tests/test_path_rules.py")
    # an edit whose `old` is absent, refused at once (run_tests here cost an unchecked pytest run)
    refused_edit = call("replace_text", old="absent", new="x")
    turn = [
        chunk(thinking="Let me "),
        chunk(thinking="look.", content="Reading "),
        chunk(tool_calls=[read_code]),  # a call in its own chunk
        chunk(content="both files.", tool_calls=[read_tests, refused_edit]),  # two in one
        chunk(content=" Done", done=True, tool_calls=[call("read_file", path="path_rules.py")]),
    ]
    chat, events = run([turn, [chunk("ok", done=True)]], repo)
    message = of_type(events, MODEL_DONE)[0]["message"]
    assert message["content"] == "Reading both files. Done"  # the final chunk's content too
    assert message["thinking"] == "Let me look."
    names = [c["function"]["name"] for c in message["tool_calls"]]
    assert names == ["read_file", "read_file", "replace_text", "read_file"]  # final chunk's too
    assert chat.requests[1][2] == message  # appended to the conversation as assembled


def test_first_text_delta_arrives_before_the_stream_is_consumed(repo):
    chat = ScriptedChat([[chunk("Hel"), chunk("lo"), chunk("!", done=True)]])
    events = agent_events(chat, RepoTools(repo), TASK)
    assert next(events)["type"] == "model_start"
    first = next(events)
    assert first == {"type": TEXT_DELTA, "turn": 1, "text": "Hel"}
    assert chat.handed_out == 1  # the rest of the stream has not been read yet


def test_thinking_is_streamed_as_its_own_deltas(repo):
    _, events = run([[chunk(thinking="hmm"), chunk("answer", done=True)]], repo)
    assert [e["text"] for e in of_type(events, THINKING_DELTA)] == ["hmm"]
    assert [e["text"] for e in of_type(events, TEXT_DELTA)] == ["answer"]


def test_million_chunk_stream_is_assembled_completely(repo):
    # Linear assembly: a quadratic one would take minutes here (bench.py measures the ratio).
    pieces = [chunk("x")] * 999_999 + [chunk("y", done=True)]  # one dict, read 999,999 times
    chat = ScriptedChat([pieces])
    # The loop's own deadline makes a quadratic break fail within two minutes instead of
    # hanging for hours; it is a bound on minutes, not a benchmark.
    done = stop = None
    for event in agent_events(chat, RepoTools(repo), TASK, deadline=120):
        done = event if event["type"] == MODEL_DONE else done
        stop = event
    assert stop["reason"] == ASSISTANT_FINISHED  # not "deadline"
    assert done["chunks"] == 1_000_000
    assert len(done["message"]["content"]) == 1_000_000


# --- the conversation: what goes back to the model ----------------------------------------------


def test_request_after_read_file_carries_call_and_file_text(repo):
    script = [
        [chunk(tool_calls=[call("read_file", path="path_rules.py")]), chunk(done=True)],
        [chunk("I read it.", done=True)],
    ]
    chat, events = run(script, repo)
    second = chat.requests[1]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "tool"]
    assistant, tool = second[2], second[3]
    assert assistant["tool_calls"] == [
        {"id": "call_read_file_0", "function": {"index": 0, "name": "read_file",
                                                "arguments": {"path": "path_rules.py"}}}
    ]  # fmt: skip
    assert tool["tool_name"] == "read_file"
    assert json.loads(tool["content"]) == {
        "path": "path_rules.py",
        "text": (repo / "path_rules.py").read_text(),
    }
    assert len(chat.requests[0]) == 2  # the first request was not changed afterwards
    assert of_type(events, STOPPED)[0]["reason"] == ASSISTANT_FINISHED


def test_several_calls_run_in_order_with_one_result_each(repo):
    calls = [
        call("read_file", path="tests/test_path_rules.py"),
        call("replace_text", old=FAULTY_LINE, new=FIXED_LINE),
        call("run_tests"),
    ]
    chat, events = run([[chunk(tool_calls=calls, done=True)], [chunk("fixed", done=True)]], repo)
    assert [e["name"] for e in of_type(events, TOOL_START)] == [
        "read_file",
        "replace_text",
        "run_tests",
    ]
    results = of_type(events, TOOL_RESULT)
    assert [(e["index"], e["name"]) for e in results] == [
        (0, "read_file"),
        (1, "replace_text"),
        (2, "run_tests"),
    ]
    assert results[2]["result"]["exit_code"] == 0  # ran after the edit, not before
    replies = tool_replies(chat.requests[1])
    assert [r.get("path") for r in replies] == ["tests/test_path_rules.py", "path_rules.py", None]


# --- bad tool requests become tool results ------------------------------------------------------


def bad_call_reply(repo, function):
    script = [[chunk(tool_calls=[{"function": function}], done=True)], [chunk("ok", done=True)]]
    chat, events = run(script, repo)
    assert of_type(events, STOPPED)[0]["reason"] == ASSISTANT_FINISHED  # the loop went on
    return tool_replies(chat.requests[1])[0]


def test_unknown_tool_is_answered_with_the_offered_tools(repo):
    result = bad_call_reply(repo, {"name": "delete_repo", "arguments": {}})
    assert "unknown tool" in result["error"]
    assert "read_file, replace_text, run_tests" in result["error"]


def test_call_without_a_name_is_answered_not_raised(repo):
    result = bad_call_reply(repo, {"arguments": {}})
    assert "without a name" in result["error"]


def test_python_attribute_names_are_not_tools(repo):
    for name in ("__init__", "handlers", "invoke", "root", "_inside"):
        assert "unknown tool" in RepoTools(repo).invoke(name, {})["error"]


@pytest.mark.parametrize(
    "arguments, expected",
    [
        (["path_rules.py"], "must be a JSON object"),
        ('{"path": "path_rules.py"', "resend the call with corrected JSON"),
        ({}, "missing parameter(s): path"),
        ({"path": "path_rules.py", "mode": "r"}, "unexpected parameter(s): mode"),
        ({"path": 7}, "must be strings: path"),
    ],
)
def test_malformed_arguments_are_answered_with_what_to_fix(repo, arguments, expected):
    result = bad_call_reply(repo, {"name": "read_file", "arguments": arguments})
    assert expected in result["error"]


def test_arguments_as_valid_json_text_are_accepted(repo):
    result = bad_call_reply(repo, {"name": "read_file", "arguments": '{"path": "path_rules.py"}'})
    assert result["path"] == "path_rules.py"


def test_failing_tool_is_answered_and_the_loop_goes_on(repo):
    result = bad_call_reply(repo, {"name": "replace_text", "arguments": {"old": "nope", "new": ""}})
    assert "was not found" in result["error"] and "Read the file again" in result["error"]


# --- how the loop stops --------------------------------------------------------------------------


def test_error_while_reading_stream_stops_with_model_error_and_runs_no_tool(repo):
    script = [[chunk(tool_calls=[call("run_tests")]), ConnectionResetError("peer went away")]]
    chat, events = run(script, repo)
    assert events[-1].pop("seconds") >= 0  # the cut turn's time, kept for the timeline
    assert events[-1] == {
        "type": STOPPED,
        "turn": 1,
        "reason": MODEL_ERROR,
        "error": "peer went away",
    }
    assert of_type(events, TOOL_START) == []


def test_unfinished_stream_runs_no_tool(repo):
    before = (repo / "path_rules.py").read_bytes()
    script = [[chunk(tool_calls=[call("replace_text", old=FAULTY_LINE, new="pass")])]]  # no done
    chat, events = run(script, repo)
    assert events[-1]["reason"] == INCOMPLETE_MODEL_TURN
    assert of_type(events, TOOL_START) == [] and of_type(events, MODEL_DONE) == []
    assert (repo / "path_rules.py").read_bytes() == before
    assert len(chat.requests) == 1


def test_done_that_is_not_true_does_not_end_the_turn(repo):
    # Only `"done": true` ends a turn: a chunk saying "done": "no" (truthy text) must not
    # complete it, so its call never runs and the stream without a real end is incomplete.
    script = [[chunk(tool_calls=[call("replace_text", old=FAULTY_LINE, new="pass")], done="no")]]
    before = (repo / "path_rules.py").read_bytes()
    _, events = run(script, repo)
    assert events[-1]["reason"] == INCOMPLETE_MODEL_TURN
    assert of_type(events, TOOL_START) == [] and of_type(events, MODEL_DONE) == []
    assert (repo / "path_rules.py").read_bytes() == before


def test_error_without_a_message_is_named_by_its_type(repo):
    # `str(ConnectionResetError())` is "": the stop must still say what went wrong.
    _, events = run([[chunk("a"), ConnectionResetError()]], repo)
    assert events[-1]["reason"] == MODEL_ERROR
    assert events[-1]["error"] == "ConnectionResetError"


def test_length_cut_turn_runs_no_tool(repo):
    cut = chunk(tool_calls=[call("run_tests")], done=True, done_reason="length")
    chat, events = run([[cut]], repo)
    assert events[-1]["reason"] == INCOMPLETE_MODEL_TURN
    assert of_type(events, TOOL_START) == []


def test_final_text_is_assistant_finished_and_blank_is_empty_response(repo):
    _, events = run([[chunk("All done.", done=True)]], repo)
    assert events[-1]["reason"] == ASSISTANT_FINISHED
    _, events = run([[chunk(thinking="hm"), chunk("  \n", done=True)]], repo)
    assert events[-1]["reason"] == EMPTY_RESPONSE


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "3", None])
def test_invalid_max_turns_is_refused_before_any_event(repo, bad):
    chat = ScriptedChat([])
    with pytest.raises(ValueError, match="max_turns"):
        agent_events(chat, RepoTools(repo), TASK, max_turns=bad)
    assert chat.requests == []


def test_max_turns_makes_exactly_n_requests_and_runs_the_last_turns_tools(repo):
    keep_reading = [chunk(tool_calls=[call("read_file", path="path_rules.py")], done=True)]
    chat, events = run([keep_reading] * 5, repo, max_turns=3)
    assert len(chat.requests) == 3
    assert len(of_type(events, TOOL_RESULT)) == 3  # turn 3's read ran before the stop
    assert events[-1] == {"type": STOPPED, "turn": 3, "reason": MAX_TURNS}


def test_claimed_success_without_an_edit_still_fails_independently(repo):
    script = [[chunk("I fixed the bug and all tests pass.", done=True)]]
    _, events = run(script, repo)
    assert events[-1]["reason"] == ASSISTANT_FINISHED  # the loop believes the model...
    verdict = run_pytest(repo)  # ...the independent run does not
    assert verdict["exit_code"] == 1
    assert count_results(verdict["output"]) == {"passed": 3, "failed": 1, "errors": 0}


def test_model_done_event_carries_the_complete_message_and_counters(repo):
    final = chunk("b", done=True, counters=False, eval_count=4, eval_duration=5)
    _, events = run([[chunk("a"), final]], repo)
    done = of_type(events, MODEL_DONE)[0]
    assert done["message"] == {"role": "assistant", "content": "ab"}
    assert done["chunks"] == 2 and done["done_reason"] == "stop"
    assert done["model_counters"] == {"eval_count": 4, "eval_duration": 5}


# --- RepoTools -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path, expected",
    [
        ("../sample_repo/path_rules.py", "without '..'"),
        ("tests/../path_rules.py", "without '..'"),
        ("/etc/passwd", "relative path"),
        ("README.md", "not readable here"),
        ("tests/__init__.py", "not readable here"),
    ],
)
def test_read_file_refuses_paths_outside_the_allowlist(repo, path, expected):
    result = RepoTools(repo).invoke("read_file", {"path": path})
    assert expected in result["error"] and "text" not in result


def test_read_file_refuses_a_symlink_leading_out_of_root(repo, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("token=abc")
    (repo / "path_rules.py").unlink()
    (repo / "path_rules.py").symlink_to(secret)
    tools = RepoTools(repo)
    assert "outside the repository" in tools.invoke("read_file", {"path": "path_rules.py"})["error"]
    result = tools.invoke("replace_text", {"old": "token", "new": "x"})
    assert "outside the repository" in result["error"]
    assert secret.read_text() == "token=abc"


def test_read_file_reports_a_missing_or_non_utf8_file(repo):
    tools = RepoTools(repo)
    (repo / "tests" / "test_path_rules.py").write_bytes(b"\xff\xfe bad")
    assert "not UTF-8" in tools.invoke("read_file", {"path": "tests/test_path_rules.py"})["error"]
    (repo / "path_rules.py").unlink()
    assert "does not exist" in tools.invoke("read_file", {"path": "path_rules.py"})["error"]


@pytest.mark.parametrize(
    "arguments, expected",
    [
        ({"old": "", "new": "x"}, "non-empty"),
        ({"old": "not in the file", "new": "x"}, "was not found"),
        ({"old": "parts", "new": "x"}, "occurs 4 times"),
        ({"old": "parts", "new": 3}, "must be strings: new"),
        ({"path": "tests/test_path_rules.py", "old": "a", "new": "b"}, "unexpected parameter"),
    ],
)
def test_replace_text_refuses_unless_old_occurs_exactly_once(repo, arguments, expected):
    before = (repo / "path_rules.py").read_bytes()
    result = RepoTools(repo).invoke("replace_text", arguments)
    assert expected in result["error"]
    assert (repo / "path_rules.py").read_bytes() == before


def test_replace_text_edits_exactly_one_occurrence(repo):
    result = RepoTools(repo).invoke("replace_text", {"old": FAULTY_LINE, "new": FIXED_LINE})
    assert result == {"path": "path_rules.py", "replaced": 1, "lines_removed": 1, "lines_added": 1}
    assert FIXED_LINE in (repo / "path_rules.py").read_text()


def test_an_edit_says_how_many_lines_it_changed_and_one_that_changes_nothing_is_refused(repo):
    # a small model that sends old == new is told so, instead of "replaced 1 occurrence"
    tools, source = RepoTools(repo), repo / "path_rules.py"
    before = source.stat().st_mtime_ns, source.read_bytes()
    result = tools.invoke("replace_text", {"old": FAULTY_LINE, "new": FAULTY_LINE})
    assert "nothing would change" in result["error"]
    assert (source.stat().st_mtime_ns, source.read_bytes()) == before  # not even rewritten
    added = tools.invoke(
        "replace_text", {"old": FAULTY_LINE, "new": f"{FAULTY_LINE}\n    # a\n    # b"}
    )
    assert (added["lines_removed"], added["lines_added"]) == (0, 2)


def test_run_tests_on_the_faulty_copy_and_on_a_repaired_copy(repo):
    tools = RepoTools(repo)
    faulty = tools.invoke("run_tests", {})
    assert faulty["exit_code"] == 1
    assert "1 failed, 3 passed" in faulty["output"]
    tools.invoke("replace_text", {"old": FAULTY_LINE, "new": FIXED_LINE})
    repaired = tools.invoke("run_tests", {})
    assert repaired["exit_code"] == 0
    assert "4 passed" in repaired["output"]


def test_a_copy_of_the_sample_gives_one_failed_three_passed(repo):
    counts = count_results(run_pytest(repo)["output"])
    assert counts == {"passed": 3, "failed": 1, "errors": 0}
    assert not (SAMPLE_REPO / "__pycache__").exists()  # the original was never run


def test_collection_error_is_counted_as_an_error(repo):
    # A module that no longer parses: pytest's summary is "1 error in 0.12s", no passed/failed.
    source = repo / "path_rules.py"
    source.write_text(source.read_text().replace(FAULTY_LINE, "parts = ("))
    run = run_pytest(repo)
    assert run["exit_code"] != 0
    assert count_results(run["output"]) == {"passed": 0, "failed": 0, "errors": 1}


def test_test_process_sees_no_credentials(repo, monkeypatch):
    monkeypatch.setenv("OLLAMA_API_KEY", "sk-secret-1")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-secret-2")
    (repo / "tests" / "test_env.py").write_text(
        "import os, pathlib\n"
        "def test_dump_env():\n"
        "    pathlib.Path('env.json').write_text(__import__('json').dumps(dict(os.environ)))\n"
    )
    RepoTools(repo).invoke("run_tests", {})
    seen = json.loads((repo / "env.json").read_text())
    assert "OLLAMA_API_KEY" not in seen and "GITHUB_TOKEN" not in seen
    assert not any("secret" in value for value in seen.values())
    assert seen["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] == "1"


def test_run_tests_output_is_bounded(repo):
    (repo / "tests" / "test_noisy.py").write_text(
        "def test_noisy():\n    print('x' * 50000)\n    assert False\n"
    )
    result = RepoTools(repo).invoke("run_tests", {})
    note, kept = result["output"].split("\n", 1)
    assert note.endswith("earlier characters cut]") and len(kept) == OUTPUT_LIMIT
    assert "failed" in result["output"]  # the tail, with pytest's summary, is what is kept


def test_timed_out_tests_kill_the_grandchild_holding_the_pipe(repo, fresh_runs):
    (repo / "tests" / "test_hang.py").write_text(
        "import subprocess, sys, time, pathlib\n"
        "GRANDCHILD = 'import time, pathlib; time.sleep(60); pathlib.Path(\"finished\").touch()'\n"
        "def test_hang():\n"
        "    child = subprocess.Popen([sys.executable, '-c', GRANDCHILD])\n"
        "    pathlib.Path('grandchild.pid').write_text(str(child.pid))\n"
        "    time.sleep(60)\n"
    )
    # unisolated: the host's pid of the grandchild is known (test_verdict.py: isolated)
    result = RepoTools(repo, test_timeout=2, isolate=False).invoke("run_tests", {})
    # Not a wall-clock bound: a harness that waited for the pipe would find this file.
    assert not (repo / "finished").exists(), "the harness waited for the grandchild"
    assert result["exit_code"] is None
    assert "timed out after 2 s" in result["output"]
    pid = int((repo / "grandchild.pid").read_text())
    assert wait_until_gone(pid), f"grandchild {pid} is still running"


# --- the Ollama adapter, through the real SDK over real HTTP --------------------------------------


def test_adapter_sends_the_request_ollama_expects(repo):
    script = [
        reply(chunk(tool_calls=[call("read_file", path="path_rules.py")]), chunk(done=True)),
        reply(chunk("Read it.", done=True)),
    ]
    with OllamaTestServer(script) as server:
        chat = LocalModel(host=server.host)
        events = list(agent_events(chat, RepoTools(repo), TASK))
    assert events[-1]["reason"] == ASSISTANT_FINISHED
    first, second = server.chat_bodies()
    for body in (first, second):
        assert body["model"] == "gemma4:e2b"
        assert body["stream"] is True and body["keep_alive"] == 0
        assert "think" not in body  # no describe() ran: whether the model thinks is unknown
        assert body["options"] == {
            "temperature": 0,
            "seed": 7,
            "num_ctx": 8192,
            "num_predict": 2048,
        }
        assert [t["function"]["name"] for t in body["tools"]] == [
            "read_file",
            "replace_text",
            "run_tests",
        ]
        assert body["tools"][1]["function"]["parameters"]["required"] == ["old", "new"]
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "tool"]
    assert second["messages"][2]["tool_calls"] == [
        {"function": {"name": "read_file", "arguments": {"path": "path_rules.py"}}}
    ]  # the SDK dropped the server's id and index
    assert "content" not in second["messages"][2]  # and the empty content
    tool = second["messages"][3]
    assert tool["role"] == "tool" and tool["tool_name"] == "read_file"
    assert json.loads(tool["content"])["text"] == (repo / "path_rules.py").read_text()


def run_adapter(repo, *replies, timeout=local_model.READ_TIMEOUT, model="gemma4:e2b"):
    with OllamaTestServer(replies) as server:
        chat = LocalModel(model=model, host=server.host, timeout=timeout)
        return server, list(agent_events(chat, RepoTools(repo), TASK))


def test_adapter_refused_connection_says_to_start_ollama(repo, unused_port):
    chat = LocalModel(host=f"http://127.0.0.1:{unused_port}")
    events = list(agent_events(chat, RepoTools(repo), TASK))
    assert events[-1]["reason"] == MODEL_ERROR
    assert events[-1]["error"].startswith(f"cannot reach Ollama at http://127.0.0.1:{unused_port}")
    assert "ollama serve" in events[-1]["error"]


def test_adapter_missing_model_says_to_pull_it(repo):
    _, events = run_adapter(repo, model="nope:1b")
    assert events[-1]["reason"] == MODEL_ERROR
    assert "`ollama pull nope:1b`" in events[-1]["error"]


def test_adapter_http_error_before_the_stream_is_reported(repo):
    refusal = reply('"gemma4:e2b" does not support tools', status=400)
    _, events = run_adapter(repo, refusal)
    assert events[-1]["reason"] == MODEL_ERROR
    assert events[-1]["error"].endswith('(HTTP 400): "gemma4:e2b" does not support tools')


def test_adapter_error_line_mid_stream_is_reported_and_runs_no_tool(repo):
    broken = reply(chunk(tool_calls=[call("run_tests")]), {"error": "out of memory"})
    _, events = run_adapter(repo, broken)
    assert events[-1]["error"] == "Ollama reported an error mid-response: out of memory"
    assert of_type(events, TOOL_START) == []


def test_adapter_cut_connection_is_reported_and_runs_no_tool(repo):
    cut = reply(chunk(tool_calls=[call("run_tests")]), chunk("more"), end="cut")
    _, events = run_adapter(repo, cut)
    assert events[-1]["reason"] == MODEL_ERROR
    assert "was cut mid-response" in events[-1]["error"]
    assert of_type(events, TOOL_START) == []


def test_adapter_stream_without_done_is_an_incomplete_turn(repo):
    unfinished = reply(chunk(tool_calls=[call("replace_text", old=FAULTY_LINE, new="x")]))
    before = (repo / "path_rules.py").read_bytes()
    _, events = run_adapter(repo, unfinished)
    assert events[-1]["reason"] == INCOMPLETE_MODEL_TURN
    assert (repo / "path_rules.py").read_bytes() == before


def test_adapter_stalled_server_is_stopped_by_the_read_timeout(repo):
    stalled = reply(chunk("Thinking"), chunk("...", done=True), pause_after_first=3)
    _, events = run_adapter(repo, stalled, timeout=0.5)
    assert events[-1]["reason"] == MODEL_ERROR
    assert "sent nothing for 0.5 s" in events[-1]["error"]


def test_adapter_preflight_reads_digest_or_says_what_to_do(unused_port):
    with OllamaTestServer() as server:
        info = LocalModel(host=server.host).describe()
        assert info["digest"].startswith("sha256:") and info["server_version"] == "0.0.0-test"
        with pytest.raises(local_model.ModelError, match="ollama pull other:7b"):
            LocalModel(model="other:7b", host=server.host).describe()
    with pytest.raises(local_model.ModelError, match="ollama serve"):
        LocalModel(host=f"127.0.0.1:{unused_port}").describe()


def test_base_url_reads_hosts_like_ollama_does():
    assert local_model.base_url("0.0.0.0") == "http://0.0.0.0:11434"
    assert local_model.base_url("localhost:8080") == "http://localhost:8080"
    assert local_model.base_url("http://127.0.0.1:11434/") == "http://127.0.0.1:11434"


def test_a_conversation_passed_in_is_continued_not_restarted(repo):
    history = [
        {"role": "system", "content": "Answer briefly."},
        {"role": "user", "content": "first question"},
        {"role": "assistant", "content": "first answer"},
    ]
    chat = ScriptedChat([[chunk("second answer", done=True)]])
    events = list(
        agent_events(chat, RepoTools(repo), "second question", system="ignored", history=history)
    )
    assert chat.requests[0] == history + [{"role": "user", "content": "second question"}]
    assert len(history) == 3  # the caller's list is not modified
    assert events[-1]["reason"] == ASSISTANT_FINISHED


def test_system_prompt_is_a_parameter(repo):
    chat = ScriptedChat([[chunk("ok", done=True)]])
    list(agent_events(chat, RepoTools(repo), "task", system="You only answer questions."))
    assert chat.requests[0][0] == {"role": "system", "content": "You only answer questions."}


def test_a_change_to_the_conversation_between_two_turns_is_what_the_next_request_carries(repo):
    read = call("read_file", path="path_rules.py")
    chat = ScriptedChat([[chunk(tool_calls=[read]), chunk(done=True)], [chunk("ok", done=True)]])
    loop = AgentLoop(chat, RepoTools(repo), "task")
    events = loop.events()
    while (event := next(events))["type"] != MODEL_START or event["turn"] != 2:
        pass
    result = {"role": "tool", "tool_name": "read_file", "content": "{}"}
    said = {"role": "user", "content": "look again"}
    loop.change_conversation(replaced=[(3, result)], added=[said])
    assert [e["type"] for e in events][-1] == STOPPED
    assert chat.requests[1][3:] == [result, said]  # what was read is replaced, then one said
    assert loop.messages[3:5] == [result, said]
