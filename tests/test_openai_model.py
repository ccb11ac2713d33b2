"""Offline tests of the OpenAI-compatible adapter, through the real loop over real HTTP.

`OpenAICompatibleModel` talks to openai_test_server.py on 127.0.0.1, which streams
hand-written Server-Sent Events the way llama-server does; the loop runs the real tools on a
temporary copy of sample_repo/. The pure halves (`chunks_from_events`, `request_body`) are
also tested directly, since replay runs recorded events through them without any HTTP.
"""

import io
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer, ThreadingHTTPServer

import pytest

import local_model
import openai_model
from agent_loop import (
    ASSISTANT_FINISHED,
    INCOMPLETE_MODEL_TURN,
    MODEL_DONE,
    MODEL_ERROR,
    SYSTEM_PROMPT,
    TASK,
    TEXT_DELTA,
    THINKING_DELTA,
    TOOL_RESULT,
    TOOL_START,
    agent_events,
)
from harness.chats import RecordingChat
from openai_model import OpenAICompatibleModel, OpenAIModelError, chunks_from_events, request_body
from plumbing import openai_wire
from plumbing.limits import ARGUMENTS_TOO_LONG, MAX_LINE_BYTES, LineTooLong
from repo_tools import RepoTools
from tests.helpers import FAULTY_LINE, FIXED_LINE, of_type, wait_for
from tests.openai_test_server import (
    TEST_MODEL,
    OpenAITestServer,
    UnframedStream,
    content,
    error_event,
    finish,
    reasoning,
    reply,
    run_against,
    tool_call,
)

# Many of these tests wait for a stand-in's pause: conftest.py spreads them over the run.
pytestmark = pytest.mark.waits

READ_CODE = '{"path": "path_rules.py"}'


def run_chat(repo, *replies, timeout=openai_model.READ_TIMEOUT):
    with OpenAITestServer(replies) as server:
        chat = OpenAICompatibleModel(TEST_MODEL, server.base_url, timeout=timeout)
        return server, list(agent_events(chat, RepoTools(repo), TASK))


# --- one turn from events -----------------------------------------------------------------------


def test_content_split_across_events_is_streamed_and_assembled(repo):
    # A comment line (a keep-alive) between events must be skipped, not parsed.
    _, events = run_chat(repo, reply(content("Hel"), ": keep-alive\n\n", content("lo."), finish()))
    assert [e["text"] for e in of_type(events, TEXT_DELTA)] == ["Hel", "lo."]
    assert of_type(events, MODEL_DONE)[0]["message"] == {"role": "assistant", "content": "Hello."}
    assert events[-1]["reason"] == ASSISTANT_FINISHED


def test_first_text_delta_arrives_before_the_server_sends_the_rest(repo):
    gate = threading.Event()
    script = reply(content("Hel"), content("lo"), finish(), gate=gate)
    with OpenAITestServer([script]) as server:
        events = agent_events(
            OpenAICompatibleModel(TEST_MODEL, server.base_url), RepoTools(repo), TASK
        )
        assert next(events)["type"] == "model_start"
        assert next(events) == {"type": TEXT_DELTA, "turn": 1, "text": "Hel"}
        assert server.events_sent == 1  # the server is still holding the rest
        gate.set()
        assert list(events)[-1]["reason"] == ASSISTANT_FINISHED


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_reasoning_text_becomes_thinking(repo, field):
    script = reply(reasoning("Let me ", field), reasoning("think.", field), content("Hi"), finish())
    _, events = run_chat(repo, script)
    assert [e["text"] for e in of_type(events, THINKING_DELTA)] == ["Let me ", "think."]
    message = of_type(events, MODEL_DONE)[0]["message"]
    assert message == {"role": "assistant", "content": "Hi", "thinking": "Let me think."}


def test_a_reasoning_only_event_becomes_a_chunk_in_ollamas_shape():
    # Ollama sends "content": "" beside "thinking"; the assembled chunk does the same, so
    # whatever prints or joins a chunk's content never meets None.
    events = [{"choices": [{"index": 0, "delta": {"reasoning_content": "Hm."}}]}]
    first = next(chunks_from_events(iter(events)))
    assert first == {
        "message": {"role": "assistant", "content": "", "thinking": "Hm."},
        "done": False,
    }


# The replace_text arguments that repair the sample, as JSON text the way a model might write
# it (backslashes as \u005c escapes), cut where a naive per-fragment parse would break.
REPAIR_PIECES = [
    '{"ol',  # inside a key
    'd": "parts = pa',  # inside a string
    r'th.split(\"/\")", "new": "parts = path.replace(\"\u00',  # inside a \uXXXX escape
    "5c\\",  # between a backslash and the escape it starts
    r'u005c\", \"/\").split(\"/\")"}',
]


def test_call_arguments_split_inside_a_key_a_string_and_an_escape(repo):
    fragments = [tool_call(0, name="replace_text")]
    fragments += [tool_call(0, piece) for piece in REPAIR_PIECES]
    script = [
        reply(*fragments, tool_call(1, "{}", name="run_tests"), finish("tool_calls")),
        reply(content("Fixed."), finish()),
    ]
    _, events = run_chat(repo, *script)
    starts = of_type(events, TOOL_START)
    assert starts[0]["arguments"] == {"old": FAULTY_LINE, "new": FIXED_LINE}
    assert FIXED_LINE in (repo / "path_rules.py").read_text()
    tests = of_type(events, TOOL_RESULT)[1]["result"]
    assert tests["exit_code"] == 0 and "4 passed" in tests["output"]


def test_two_calls_interleaved_by_index_are_assembled_separately(repo):
    script = [
        reply(
            tool_call(0, name="read_file"),
            tool_call(1, name="read_file"),
            tool_call(1, '{"path": "tests/'),
            tool_call(0, '{"pa'),
            tool_call(1, 'test_path_rules.py"}'),
            tool_call(0, 'th": "path_rules.py"}'),
            finish("tool_calls"),
        ),
        reply(content("Read both."), finish()),
    ]
    _, events = run_chat(repo, *script)
    calls = [(e["index"], e["arguments"]) for e in of_type(events, TOOL_START)]
    assert calls == [(0, {"path": "path_rules.py"}), (1, {"path": "tests/test_path_rules.py"})]
    results = [e["result"]["path"] for e in of_type(events, TOOL_RESULT)]
    assert results == ["path_rules.py", "tests/test_path_rules.py"]


def test_length_finish_is_an_incomplete_turn_and_runs_no_tool(repo):
    edit = json.dumps({"old": FAULTY_LINE, "new": "pass"})
    before = (repo / "path_rules.py").read_bytes()
    server, events = run_chat(
        repo, reply(tool_call(0, edit, name="replace_text"), finish("length"))
    )
    assert events[-1]["reason"] == INCOMPLETE_MODEL_TURN
    assert of_type(events, TOOL_START) == []
    assert (repo / "path_rules.py").read_bytes() == before
    assert len(server.chat_bodies()) == 1


def test_stream_ending_without_finish_reason_is_an_incomplete_turn(repo):
    edit = json.dumps({"old": FAULTY_LINE, "new": "pass"})
    before = (repo / "path_rules.py").read_bytes()
    _, events = run_chat(repo, reply(tool_call(0, edit, name="replace_text")))  # [DONE], no finish
    assert events[-1]["reason"] == INCOMPLETE_MODEL_TURN
    assert of_type(events, TOOL_START) == []
    assert (repo / "path_rules.py").read_bytes() == before


def test_cut_connection_before_finish_reason_is_reported_and_runs_no_tool(repo):
    edit = json.dumps({"old": FAULTY_LINE, "new": "pass"})
    before = (repo / "path_rules.py").read_bytes()
    cut = reply(tool_call(0, edit, name="replace_text"), content("more"), end="cut")
    server, events = run_chat(repo, cut)
    assert events[-1]["reason"] == MODEL_ERROR
    assert events[-1]["error"].startswith(f"the connection to {server.base_url} was cut")
    assert of_type(events, TOOL_START) == []
    assert (repo / "path_rules.py").read_bytes() == before


def test_missing_done_marker_after_a_finish_reason_still_completes_the_turn(repo):
    # Decision: finish_reason, not [DONE], marks a complete turn; a clean end without
    # [DONE] (some servers never send it) loses nothing.
    script = [
        reply(tool_call(0, READ_CODE, name="read_file"), finish("tool_calls"), end="no-done"),
        reply(content("Read it."), finish(), end="no-done"),
    ]
    _, events = run_chat(repo, *script)
    assert [e["name"] for e in of_type(events, TOOL_RESULT)] == ["read_file"]
    assert events[-1]["reason"] == ASSISTANT_FINISHED


def test_usage_is_kept_as_the_loops_token_counters(repo):
    usage = {"prompt_tokens": 321, "completion_tokens": 12, "total_tokens": 333}
    # As vLLM and OpenAI send it: usage on its own event, after the finish, with no choices.
    script = reply(content("Hi"), finish(), {"choices": [], "usage": usage})
    _, events = run_chat(repo, script)
    counters = of_type(events, MODEL_DONE)[0]["model_counters"]
    assert counters == {"prompt_eval_count": 321, "eval_count": 12}


@pytest.mark.parametrize(
    "text, expected",
    [
        ("", {}),  # a call without parameters, as some servers send it
        ('{"path": "a.py"}', {"path": "a.py"}),
        ('{"path": "a.py"', '{"path": "a.py"'),  # does not parse: the raw text goes on
        ('["a.py"]', '["a.py"]'),  # parses, but not to an object: the raw text goes on
    ],
)
def test_assembled_arguments_are_an_object_or_the_raw_text(text, expected):
    events = [tool_call(0, text, name="read_file"), finish("tool_calls")]
    final = list(chunks_from_events(events))[-1]
    assert final["message"]["tool_calls"][0]["function"]["arguments"] == expected


@pytest.mark.parametrize("count", [1000, 1001])
def test_turn_of_1000_streamed_calls_is_assembled_and_one_more_is_refused(count):
    events = [tool_call(i, READ_CODE, name="read_file") for i in range(count)]
    events.append(finish("tool_calls"))
    if count > 1000:  # the README's figure, written out
        with pytest.raises(OpenAIModelError, match="more than 1000 tool calls"):
            list(chunks_from_events(events))
    else:
        final = list(chunks_from_events(events))[-1]
        assert len(final["message"]["tool_calls"]) == 1000


def test_turn_of_1000_calls_past_the_arguments_cap_is_refused_for_its_arguments():
    # Both caps are reached at once: the message names the one that was passed.
    events = [tool_call(i, READ_CODE, name="read_file") for i in range(999)]
    events.append(tool_call(999, "x" * 1_000_000, name="read_file"))
    with pytest.raises(OpenAIModelError) as refused:
        list(chunks_from_events(events))
    assert str(refused.value) == ARGUMENTS_TOO_LONG


def test_fragments_without_index_start_a_call_at_each_new_id():
    def piece(arguments, call_id=None):
        fragment = {"function": {"arguments": arguments}}
        if call_id:
            fragment.update(id=call_id, function={"name": "read_file", "arguments": arguments})
        return {"choices": [{"delta": {"tool_calls": [fragment]}, "finish_reason": None}]}

    events = [piece('{"path"', "a"), piece(': "x"}'), piece('{"path": "y"}', "b"), finish()]
    calls = list(chunks_from_events(events))[-1]["message"]["tool_calls"]
    assert [c["function"]["arguments"] for c in calls] == [{"path": "x"}, {"path": "y"}]


# --- errors -------------------------------------------------------------------------------------


def test_last_event_without_a_blank_line_still_counts(repo):
    # A server may end the body right after the last `data:` line: that event is kept.
    last = f"data: {json.dumps(finish())}"  # no "\n\n" after it
    _, events = run_chat(repo, reply(content("Fixed."), last, end="no-done"))
    assert events[-1]["reason"] == ASSISTANT_FINISHED


def test_server_that_ignores_stream_true_is_reported_not_parsed(repo):
    # A whole JSON answer (Content-Type application/json) is not read as a stream.
    ignored = reply(content("Fixed."), finish(), content_type="application/json")
    server, events = run_chat(repo, ignored)
    assert events[-1]["reason"] == MODEL_ERROR
    detail = "Content-Type application/json, not text/event-stream"
    assert events[-1]["error"] == openai_model.BAD_RESPONSE.format(
        base_url=server.base_url, detail=detail
    )
    assert of_type(events, MODEL_DONE) == []


def test_event_that_is_not_an_object_is_named(repo):
    server, events = run_chat(repo, reply("data: [1, 2]\n\n", finish()))
    assert events[-1]["reason"] == MODEL_ERROR
    assert events[-1]["error"] == openai_wire.MALFORMED_EVENT.format(detail="[1, 2]")


@pytest.mark.parametrize(
    "line", ['{"choices": [5]}', '{"choices": [{"delta": "x"}]}'], ids=["choice", "delta"]
)
def test_event_whose_choice_or_delta_is_not_an_object_is_named(repo, line):
    _, events = run_chat(repo, reply(f"data: {line}\n\n", finish()))
    assert events[-1]["reason"] == MODEL_ERROR
    detail = repr(json.loads(line))
    assert events[-1]["error"] == openai_wire.MALFORMED_EVENT.format(detail=detail)


def test_line_longer_than_one_read_is_assembled_whole():
    # A line that arrives over several reads keeps all its pieces.
    line = b"data: " + b"x" * 200_000 + b"\n"
    assert list(openai_model._lines(io.BytesIO(line + b"\n"))) == [line, b"\n"]


def test_line_of_exactly_the_cap_passes_and_one_byte_more_is_refused():
    # 8 MB, the README's figure, written out: through MAX_LINE_BYTES any value would pass.
    at_cap = b"x" * (8 * 1024 * 1024) + b"\n"  # the newline is not counted
    assert list(openai_model._lines(io.BytesIO(at_cap))) == [at_cap]
    with pytest.raises(LineTooLong):
        list(openai_model._lines(io.BytesIO(b"x" + at_cap)))


class ErrorBodies(BaseHTTPRequestHandler):
    """Answers every request with HTTP 400 and `body`: error shapes the stand-in never sends."""

    body = b""

    def log_message(self, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        body = self.body
        self.send_response(400)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.mark.parametrize(
    "body, detail",
    [
        (b'{"object": "error", "message": "max_tokens is too large"}', "max_tokens is too large"),
        (b'["not", "an object"]', '["not", "an object"]'),  # JSON, but no known shape: as sent
    ],
    ids=["older-vllm", "json-list"],
)
def test_http_error_body_of_another_shape_is_reported_with_its_text(repo, body, detail):
    base_url, events = run_against(repo, type("Handler", (ErrorBodies,), {"body": body}))
    expected = openai_model.HTTP_ERROR.format(base_url=base_url, status=400, detail=detail)
    assert events[-1]["reason"] == MODEL_ERROR and events[-1]["error"] == expected


def test_a_stream_that_ends_with_its_connection_is_read_to_the_end(repo):
    # http.client forgets the connection's socket when the answer will close it; the reads'
    # timeouts are still set on that socket (a crash in model_error before it was kept).
    _, events = run_against(repo, UnframedStream)
    assert events[-1]["reason"] == ASSISTANT_FINISHED, events[-1]
    assert of_type(events, MODEL_DONE)[0]["message"]["content"] == "Done."


def test_http_400_with_an_error_body_is_reported_with_status_and_message(repo):
    message = "the request exceeds the available context size, try increasing it"
    server, events = run_chat(repo, reply(message, status=400))
    assert events[-1]["reason"] == MODEL_ERROR
    expected = openai_model.HTTP_ERROR.format(base_url=server.base_url, status=400, detail=message)
    assert events[-1]["error"] == expected


@pytest.mark.parametrize(
    "error",
    [
        error_event("out of memory"),  # current llama-server, vLLM: a data event
        'error: {"code": 500, "message": "out of memory", "type": "server_error"}\n\n',  # older
    ],
)
def test_error_event_mid_stream_is_reported_and_runs_no_tool(repo, error):
    script = reply(tool_call(0, "{}", name="run_tests"), error, finish("tool_calls"))
    _, events = run_chat(repo, script)
    assert events[-1]["reason"] == MODEL_ERROR
    assert events[-1]["error"] == openai_wire.STREAM_ERROR.format(detail="out of memory")
    assert of_type(events, TOOL_START) == []


def test_a_host_name_that_cannot_be_encoded_is_a_server_it_cannot_reach():
    # "a..b" fails IDNA encoding in the address lookup (no packet leaves): a UnicodeError, which
    # reached the user as the codec's own words instead of the "cannot reach" sentence.
    chat = OpenAICompatibleModel(TEST_MODEL, "http://a..b:8080/v1")
    with pytest.raises(OpenAIModelError) as refused:
        chat.describe()
    assert str(refused.value).startswith(
        "cannot reach an OpenAI-compatible server at http://a..b:8080/v1: is the server running"
    )
    assert "idna" in str(refused.value)


def test_refused_connection_says_to_start_the_server(repo, unused_port):
    base_url = f"http://127.0.0.1:{unused_port}/v1"
    chat = OpenAICompatibleModel(TEST_MODEL, base_url)
    events = list(agent_events(chat, RepoTools(repo), TASK))
    assert events[-1]["reason"] == MODEL_ERROR
    assert events[-1]["error"].startswith(f"cannot reach an OpenAI-compatible server at {base_url}")
    assert "is the server running there?" in events[-1]["error"]


def test_stalled_server_is_stopped_by_the_read_timeout(repo):
    stalled = reply(content("Thinking"), content("..."), finish(), pause_after_first=2)
    _, events = run_chat(repo, stalled, timeout=0.3)
    assert events[-1]["reason"] == MODEL_ERROR
    assert "sent nothing for 0.3 s" in events[-1]["error"]


def test_preflight_lists_models_or_says_what_to_do(unused_port):
    with OpenAITestServer(models=["qwen3-0.6b", TEST_MODEL]) as server:
        info = OpenAICompatibleModel(TEST_MODEL, server.base_url).describe()
        assert info["api"] == "openai" and info["base_url"] == server.base_url
        assert info["server_models"] == ["qwen3-0.6b", TEST_MODEL]
        with pytest.raises(openai_model.OpenAIModelError, match="lists: qwen3-0.6b, test-model"):
            OpenAICompatibleModel("other-7b", server.base_url).describe()
        without_v1 = server.base_url.removesuffix("/v1")
        with pytest.raises(openai_model.OpenAIModelError, match=r"HTTP 404.*ending in /v1"):
            OpenAICompatibleModel(TEST_MODEL, without_v1).describe()
    with pytest.raises(openai_model.OpenAIModelError, match="is the server running there"):
        OpenAICompatibleModel(TEST_MODEL, f"127.0.0.1:{unused_port}/v1").describe()
    with OpenAITestServer(models=[]) as server:  # a server with no model loaded yet
        with pytest.raises(openai_model.OpenAIModelError, match="which lists: no models. Pass"):
            OpenAICompatibleModel(TEST_MODEL, server.base_url).describe()


def test_preflight_accepts_the_latest_tag_that_ollama_v1_lists():
    # Ollama's /v1/models lists "name:latest" for a model pulled as "name".
    with OpenAITestServer(models=[f"{TEST_MODEL}:latest"]) as server:
        info = OpenAICompatibleModel(TEST_MODEL, server.base_url).describe()
    assert info["name"] == TEST_MODEL
    assert info["server_model"]["id"] == f"{TEST_MODEL}:latest"


# --- the conversation sent back -----------------------------------------------------------------


def test_second_request_carries_ids_string_arguments_and_matching_tool_call_ids(repo):
    script = [
        reply(
            reasoning("Both files first."),
            tool_call(0, READ_CODE, name="read_file", call_id="srv-a"),
            tool_call(1, '{"path": "tests/test_path_rules.py"}', name="read_file", call_id="srv-b"),
            finish("tool_calls"),
        ),
        reply(content("Read both."), finish()),
    ]
    with OpenAITestServer(script) as server:
        chat = OpenAICompatibleModel(TEST_MODEL, server.base_url, api_key="sk-local")
        events = list(agent_events(chat, RepoTools(repo), TASK))
    first, second = server.chat_bodies()
    results = [e["message"]["content"] for e in of_type(events, TOOL_RESULT)]
    assert second["messages"] == [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": TASK},
        {
            "role": "assistant",
            "content": "",  # never null; the thinking is not sent back
            "tool_calls": [
                {
                    "id": "t0001c000",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": READ_CODE},
                },
                {
                    "id": "t0001c001",
                    "type": "function",
                    "function": {
                        "name": "read_file",
                        "arguments": '{"path": "tests/test_path_rules.py"}',
                    },
                },
            ],
        },
        {"role": "tool", "tool_call_id": "t0001c000", "content": results[0]},
        {"role": "tool", "tool_call_id": "t0001c001", "content": results[1]},
    ]
    assert json.loads(results[0])["text"] == (repo / "path_rules.py").read_text()
    assert first["messages"] == second["messages"][:2]
    for body in (first, second):
        assert body["model"] == TEST_MODEL and body["stream"] is True
        assert {k: body[k] for k in ("temperature", "seed", "max_tokens")} == openai_model.SAMPLING
        assert [t["function"]["name"] for t in body["tools"]] == [
            "read_file",
            "replace_text",
            "run_tests",
        ]
    posts = [r for r in server.requests if r["method"] == "POST"]
    assert all(r["headers"]["Authorization"] == "Bearer sk-local" for r in posts)


def test_unparsable_arguments_are_answered_and_sent_back_as_empty_json(repo):
    broken = '{"path": "path_rules.py"'  # the closing brace never came
    script = [
        reply(tool_call(0, broken, name="read_file"), finish("tool_calls")),
        reply(content("Sorry."), finish()),
    ]
    server, events = run_chat(repo, *script)
    assert of_type(events, TOOL_START)[0]["arguments"] == broken  # the raw text, for the guard
    error = of_type(events, TOOL_RESULT)[0]["result"]["error"]
    assert "resend the call with corrected JSON arguments" in error
    assistant, tool = server.chat_bodies()[1]["messages"][2:]
    # llama-server answers HTTP 500 to invalid JSON arguments in a call sent back.
    assert assistant["tool_calls"][0]["function"]["arguments"] == "{}"
    assert json.loads(tool["content"]) == {"error": error}
    assert events[-1]["reason"] == ASSISTANT_FINISHED


def test_request_body_pairs_results_with_calls_turn_by_turn():
    read = {"function": {"name": "read_file", "arguments": {"path": "path_rules.py"}}}
    messages = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "u"},
        {"role": "assistant", "content": None, "thinking": "hm", "tool_calls": [read, read]},
        {"role": "tool", "tool_name": "read_file", "content": "r1"},
        {"role": "tool", "tool_name": "read_file", "content": "r2"},
        {"role": "assistant", "content": "once more", "tool_calls": [read]},
        {"role": "tool", "tool_name": "read_file", "content": "r3"},
    ]
    body = request_body("m", messages, [])
    sent = body["messages"]
    assert [c["id"] for c in sent[2]["tool_calls"]] == ["t0001c000", "t0001c001"]
    assert [m.get("tool_call_id") for m in sent[3:5]] == ["t0001c000", "t0001c001"]
    assert sent[5]["tool_calls"][0]["id"] == "t0002c000" and sent[6]["tool_call_id"] == "t0002c000"
    assert sent[2]["content"] == "" and "thinking" not in sent[2]
    assert "tools" not in body  # no tools, no key: some servers refuse an empty list
    assert request_body("m", messages, []) == body  # the same ids every time: replay relies on it


def test_a_tool_message_without_an_unanswered_call_is_refused():
    # OpenAI pairs each result with a call id: a result with no call to answer has none.
    with pytest.raises(ValueError, match="follows no unanswered tool call"):
        request_body("m", [{"role": "user", "content": "u"}, {"role": "tool", "content": "r"}], [])


def test_both_wires_sample_the_same_way():
    # The same temperature, seed and output budget as local_model.OPTIONS, where OpenAI's
    # API has them: a recording made on either wire is then as reproducible as the other.
    ollama = local_model.OPTIONS
    assert openai_model.SAMPLING == {
        "temperature": ollama["temperature"],
        "seed": ollama["seed"],
        "max_tokens": ollama["num_predict"],
    }


# --- replay: raw events through the same normaliser ---------------------------------------------


def test_recorded_raw_events_replay_to_the_same_chunks():
    turn = [
        reasoning("Reading."),
        tool_call(0, name="read_file"),
        tool_call(0, '{"path": "path_'),
        tool_call(0, 'rules.py"}'),
        finish("tool_calls"),
    ]
    messages = [{"role": "user", "content": TASK}]
    with OpenAITestServer([reply(*turn), reply(*turn)]) as server:
        chat = OpenAICompatibleModel(TEST_MODEL, server.base_url)
        raw = list(chat.stream_events(messages, RepoTools.schemas))  # what a recorder keeps
        live = list(chat(messages, RepoTools.schemas))
    assert raw == turn  # the events as the server sent them, [DONE] left out
    assert list(chunks_from_events(raw)) == live
    assert live[-1]["done"] is True
    assert live[-1]["message"]["tool_calls"] == [
        {"function": {"name": "read_file", "arguments": {"path": "path_rules.py"}}}
    ]


# --- hanging up: the server stops sending as soon as we stop reading ----------------------------

MANY = [content("more")] * 3000  # far more than one read: the server is still sending


def hangs_up(first, wrap=lambda model: model):
    """Read one stream whose first event is `first` while keeping whatever it raised, then
    let the server send the rest: True if it notices the hang-up."""
    gate = threading.Event()
    with OpenAITestServer([reply(first, *MANY, finish(), gate=gate)]) as server:
        chat = wrap(OpenAICompatibleModel(TEST_MODEL, server.base_url))
        stream = chat([{"role": "user", "content": "hi"}], [])
        # subtle: the kept error's traceback holds the adapter's frames; only an explicit
        # close ends the connection then, not the garbage collector.
        with pytest.raises(OpenAIModelError) as kept:
            list(stream)
        gate.set()  # the server now tries to send the other 3001 events
        hung_up = wait_for(lambda: server.hung_up == 1)
        del kept  # held until here: the error and its frames were alive through the wait
    return hung_up


@pytest.mark.parametrize(
    "first",
    [
        pytest.param("data: not json\n\n", id="the-wire-reader-fails"),
        pytest.param(error_event("out of memory"), id="the-chunk-assembly-fails"),
    ],
)
def test_failed_stream_hangs_up_before_the_server_has_sent_it_all(first):
    assert hangs_up(first)


def test_failed_recorded_stream_hangs_up_before_the_server_has_sent_it_all():
    def recorded(model):
        return RecordingChat(model.stream_events, chunks_from_events)

    assert hangs_up(error_event("out of memory"), wrap=recorded)


def test_stream_left_early_hangs_up_before_the_server_has_sent_it_all():
    gate = threading.Event()
    with OpenAITestServer([reply(content("a"), *MANY, finish(), gate=gate)]) as server:
        stream = OpenAICompatibleModel(TEST_MODEL, server.base_url)([], [])
        assert next(stream)["message"]["content"] == "a"
        stream.close()
        gate.set()
        assert wait_for(lambda: server.hung_up == 1)


@pytest.mark.parametrize(
    "arguments, sent",
    [
        ('{"path": "path_rules.py"}', '{"path": "path_rules.py"}'),  # JSON text of an object
        ('{"path": "path_rules.py"', "{}"),  # cut short: llama-server would refuse it
        ('["path_rules.py"]', "{}"),  # valid JSON, but not an object
    ],
)
def test_call_arguments_go_back_as_json_text_of_an_object(arguments, sent):
    call = {"function": {"name": "read_file", "arguments": arguments}}
    messages = [{"role": "user", "content": "x"}]
    messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
    body = request_body("m", messages, [])
    assert body["messages"][1]["tool_calls"][0]["function"]["arguments"] == sent


class ModelLists(BaseHTTPRequestHandler):
    """Answers GET /v1/models with `body` (HTTP 200): lists of shapes the stand-in never sends."""

    body = b""

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)


@pytest.mark.parametrize("body", [b'{"object": "list"}', b'{"data": "m"}', b"[1, 2]"])
def test_a_model_list_without_a_data_list_is_one_clear_error(body):
    server = HTTPServer(("127.0.0.1", 0), type("Handler", (ModelLists,), {"body": body}))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        chat = OpenAICompatibleModel(TEST_MODEL, f"http://127.0.0.1:{server.server_address[1]}/v1")
        with pytest.raises(OpenAIModelError, match="not a chat-completions stream"):
            chat.describe()
    finally:
        server.shutdown()
        server.server_close()


def frag(index, name=None, arguments=""):
    function = {"arguments": arguments} if name is None else {"name": name, "arguments": arguments}
    return {"choices": [{"delta": {"tool_calls": [{"index": index, "function": function}]}}]}


def test_a_name_split_over_fragments_is_joined_and_a_repeated_one_kept_once():
    # once the split name reached the loop as "read_" (red-team finding)
    events = [
        frag(0, "read_", '{"path": '),
        frag(0, "file", '"path_rules.py"}'),
        frag(1, "run_tests", "{}"),
        frag(1, "run_tests"),
        {"choices": [{"delta": {}, "finish_reason": "tool_calls"}]},
    ]
    final = list(chunks_from_events(events))[-1]
    names = [c["function"]["name"] for c in final["message"]["tool_calls"]]
    assert names == ["read_file", "run_tests"]


# --- part A: the request's options, the turn's caps and edges, malformed parts ------------------


def test_default_base_url_is_openai_base_url_when_set_else_llama_servers(monkeypatch):
    # The OpenAI SDK's own variable wins; unset or empty, the CLIs fall back to llama-server.
    monkeypatch.setenv("OPENAI_BASE_URL", "http://10.0.0.2:8000/v1")
    assert openai_model.default_base_url() == "http://10.0.0.2:8000/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", "")
    assert openai_model.default_base_url() == "http://127.0.0.1:8080/v1"
    monkeypatch.delenv("OPENAI_BASE_URL")
    assert openai_model.default_base_url() == "http://127.0.0.1:8080/v1"


def test_usage_on_the_finish_event_outlasts_a_later_event_without_counts(repo):
    # llama-server and Ollama's /v1 send token counts only when the request asks for them;
    # llama-server puts them on the finish event. A later event without counts ("usage":
    # null, and no "choices" at all) must neither erase them nor be refused.
    usage = {"prompt_tokens": 321, "completion_tokens": 12, "total_tokens": 333}
    trailing = {"id": "chatcmpl-test", "object": "chat.completion.chunk", "usage": None}
    server, events = run_chat(repo, reply(content("Hi"), finish(usage=usage), trailing))
    assert server.chat_bodies()[0]["stream_options"] == {"include_usage": True}
    counters = of_type(events, MODEL_DONE)[0]["model_counters"]
    assert counters == {"prompt_eval_count": 321, "eval_count": 12}
    assert events[-1]["reason"] == ASSISTANT_FINISHED


def test_arguments_of_exactly_the_cap_pass_and_one_character_more_is_refused():
    # 1,000,000 characters, the README's figure, written out. A fragment that brings only a
    # name adds nothing to the count.
    at_cap = [tool_call(0, name="read_file"), tool_call(0, "x" * 1_000_000)]
    final = list(chunks_from_events([*at_cap, finish("tool_calls")]))[-1]
    assert final["message"]["tool_calls"][0]["function"]["arguments"] == "x" * 1_000_000
    with pytest.raises(OpenAIModelError) as refused:
        list(chunks_from_events([*at_cap, tool_call(0, "x"), finish("tool_calls")]))
    assert str(refused.value) == ARGUMENTS_TOO_LONG


def test_index_less_fragments_start_a_call_without_an_id_and_continue_the_latest():
    # A server that omits `index` (and may omit the id and the function part) still gets
    # its calls whole: a first fragment starts a call even without an id, and fragments
    # with neither id nor index continue the most recent call, never an earlier one.
    def piece(**fragment):
        return {"choices": [{"delta": {"tool_calls": [fragment]}}]}

    events = [
        piece(function={"name": "read_file", "arguments": '{"path": "a.py"}'}),
        piece(id="call-b", type="function"),  # the id first; the function part follows
        piece(function={"name": "read_file", "arguments": '{"path": '}),
        piece(function={"arguments": '"b.py"}'}),
        finish("tool_calls"),
    ]
    calls = list(chunks_from_events(events))[-1]["message"]["tool_calls"]
    assert calls == [
        {"function": {"name": "read_file", "arguments": {"path": "a.py"}}},
        {"function": {"name": "read_file", "arguments": {"path": "b.py"}}},
    ]


def test_a_call_never_named_stays_nameless_and_goes_back_with_an_empty_name():
    # An empty name is no name: the tools' guard then tells the model "a call without a
    # name", and the call goes back to the server with "" (never null) as its name.
    unnamed = {"index": 0, "id": "srv-call-0", "function": {"name": "", "arguments": "{}"}}
    events = [{"choices": [{"delta": {"tool_calls": [unnamed]}}]}, finish("tool_calls")]
    message = list(chunks_from_events(events))[-1]["message"]
    assert message["tool_calls"] == [{"function": {"name": None, "arguments": {}}}]
    sent = request_body("m", [{"role": "user", "content": "u"}, message], [])["messages"][1]
    assert sent["tool_calls"][0]["function"] == {"name": "", "arguments": "{}"}


def part_of(delta_or_choices):
    """An event with `choices` as given, or one choice whose delta is the given dict."""
    if isinstance(delta_or_choices, dict):
        return {"choices": [{"index": 0, "delta": delta_or_choices}]}
    return {"choices": delta_or_choices}


def call_with(**fragment):
    return part_of({"tool_calls": [{"index": 0, "function": {"arguments": "{}"}, **fragment}]})


@pytest.mark.parametrize(
    "event, detail",
    [
        (
            {"choices": {"delta": {"content": "x"}}},
            "{'choices': {'delta': {'content': 'x'}}}",
        ),
        (
            part_of({"tool_calls": {"index": 0, "function": {"name": "run_tests"}}}),
            "tool_calls in {'choices': [{'index': 0, 'delta': {'tool_calls': "
            "{'index': 0, 'function': {'name': 'run_tests'}}}}]}",
        ),
        (call_with(index=False), "tool call index False"),
        (call_with(index=""), "tool call index ''"),
        (call_with(function={"name": 5, "arguments": "{}"}), "tool call name 5"),
    ],
    ids=["choices-not-a-list", "tool-calls-not-a-list", "false-index", "empty-index", "name"],
)
def test_a_malformed_part_of_an_event_is_named_and_ends_the_turn(event, detail):
    # Each wrong shape ends the turn with one message that names it, before any of the
    # turn's calls can run; never a KeyError, and never a call built from the wrong parts.
    with pytest.raises(OpenAIModelError) as refused:
        list(chunks_from_events([event, finish("tool_calls")]))
    assert str(refused.value) == openai_wire.MALFORMED_EVENT.format(detail=detail)


@pytest.mark.parametrize(
    "error, detail",
    [
        ({"code": 500, "type": "server_error"}, '{"code": 500, "type": "server_error"}'),
        ("out of memory", "out of memory"),
    ],
    ids=["object-without-message", "string"],
)
def test_an_error_event_without_a_message_field_is_reported_as_sent(error, detail):
    # The user reads the server's own words: its message when there is one, else the error
    # object as JSON, or the bare string some servers send.
    with pytest.raises(OpenAIModelError) as reported:
        list(chunks_from_events([content("Hi"), {"error": error}]))
    assert str(reported.value) == openai_wire.STREAM_ERROR.format(detail=detail)


def test_an_empty_id_on_an_index_less_fragment_continues_the_call():
    # Some servers send "id": "" on the fragments that continue a call (Alibaba DashScope
    # does); without an index, an empty id names no new call, so the pieces stay together.
    def piece(function, call_id=""):
        fragment = {"id": call_id, "type": "function", "function": function}
        return {"choices": [{"delta": {"tool_calls": [fragment]}}]}

    first = piece({"name": "read_file", "arguments": ""}, "call-a")
    events = [first, piece({"arguments": '{"path": '}), piece({"arguments": '"a.py"}'})]
    events.append(finish("tool_calls"))
    calls = list(chunks_from_events(events))[-1]["message"]["tool_calls"]
    assert calls == [{"function": {"name": "read_file", "arguments": {"path": "a.py"}}}]


# --- part B: request details, the SSE reader, the line cap, and the wire's waits ---------------


def test_request_body_never_sends_null_content_and_keeps_non_ascii_arguments_as_they_are():
    # Some servers refuse "content": null on any message, not only an assistant's; and the
    # arguments sent back are the model's own text, not \u escapes it never wrote.
    call = {"function": {"name": "read_file", "arguments": {"path": "café.py"}}}
    messages = [
        {"role": "system", "content": None},
        {"role": "user", "content": None},
        {"role": "assistant", "content": "", "tool_calls": [call]},
    ]
    sent = request_body("m", messages, [])["messages"]
    assert sent[:2] == [{"role": "system", "content": ""}, {"role": "user", "content": ""}]
    assert sent[2]["tool_calls"][0]["function"]["arguments"] == '{"path": "café.py"}'


def test_an_events_data_lines_are_joined_across_comments_and_other_fields():
    # Only a blank line ends an event: a comment or an `id:` between two `data:` lines of
    # one event must not cut it in half, and a blank line with no data pending is nothing.
    lines = [b'data: {"a":\n', b": keep-alive\n", b"id: 7\n", b"data: 1}\n", b"\n", b"\n"]
    lines += [b"data: [DONE]\n", b"\n", b'data: {"after": "done"}\n', b"\n"]
    assert list(openai_model.sse_events(lines)) == [{"a": 1}]


def test_an_event_that_is_not_json_is_named_by_its_first_200_characters():
    # The message quotes the bad event, but a huge one only up to a bound.
    with pytest.raises(ValueError) as refused:
        list(openai_model.sse_events([b"data: " + b"x" * 300 + b"\n", b"\n"]))
    assert str(refused.value) == f"an event is not JSON: {'x' * 200!r}"


def test_the_line_cap_holds_for_each_line_on_its_own_and_for_a_line_that_never_ends():
    # A line after another in the same read starts from nothing: a short line first must
    # not count against the next. A line with no end is refused as soon as a read takes it
    # past the cap, in reads of 64 KiB, not once the whole body has been read into memory.
    at_cap = b"x" * (8 * 1024 * 1024) + b"\n"
    assert list(openai_model._lines(io.BytesIO(b"data: 1\n" + at_cap))) == [b"data: 1\n", at_cap]
    endless = io.BytesIO(b"x" * (MAX_LINE_BYTES + 3 * 65536))  # no newline at all
    with pytest.raises(LineTooLong):
        list(openai_model._lines(endless))
    assert endless.tell() == MAX_LINE_BYTES + 65536  # the first read past the cap


@pytest.mark.parametrize("base_url", ["ftp://127.0.0.1:8080/v1", "http:///v1"])
def test_a_base_url_that_is_not_http_or_has_no_host_is_refused_at_once(base_url):
    # Refused when the model is made, with the text the user typed, not at the first turn
    # as a connection error that names neither the scheme nor the missing host.
    with pytest.raises(ValueError) as refused:
        OpenAICompatibleModel(TEST_MODEL, base_url)
    assert str(refused.value) == f"base URL must be http(s)://host[:port][/path], got {base_url!r}"


def test_a_stream_without_content_type_is_read_and_an_html_page_is_not(repo):
    # A server that names no type is trusted to stream; one that names another type (a
    # proxy's HTML page) is reported as such, not read as a stream with no events.
    _, events = run_chat(repo, reply(content("Done."), finish(), content_type=""))
    assert events[-1]["reason"] == ASSISTANT_FINISHED, events[-1]
    html = "text/html; charset=utf-8"
    server, events = run_chat(repo, reply(content("Done."), finish(), content_type=html))
    assert events[-1]["reason"] == MODEL_ERROR
    detail = f"HTTP 200 with Content-Type {html}"
    assert events[-1]["error"] == openai_model.NOT_A_STREAM.format(
        base_url=server.base_url, detail=detail
    )


# An error body of exactly 64,001 bytes that would be JSON if read whole.
PADDED = '{"error": {"message": "m"}, "pad": "'
LONG_ERROR = PADDED + "y" * (64_001 - len(PADDED) - 2) + '"}'


@pytest.mark.parametrize(
    "body, detail",
    [
        (b"", "Bad Request"),  # no body: the status line's reason
        (b"x" * 1000, "x" * 300),  # text: its first 300 characters
        (LONG_ERROR.encode(), LONG_ERROR[:300]),  # read up to 64,000 bytes, then cut: text
    ],
    ids=["empty", "long-text", "past-64000-bytes"],
)
def test_http_error_body_without_a_message_is_shown_bounded_or_as_the_reason(repo, body, detail):
    # An error page can be empty or huge: the message always says something, and never
    # more than a bounded piece of what the server sent.
    assert len(LONG_ERROR) == 64_001 and json.loads(LONG_ERROR)["error"] == {"message": "m"}
    base_url, events = run_against(repo, type("Handler", (ErrorBodies,), {"body": body}))
    expected = openai_model.HTTP_ERROR.format(base_url=base_url, status=400, detail=detail)
    assert events[-1]["reason"] == MODEL_ERROR and events[-1]["error"] == expected


class SlowHeaders(BaseHTTPRequestHandler):
    """Answers a whole stream, but only after holding back its headers for 2 s."""

    def log_message(self, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        time.sleep(2.0)  # far past the 0.1 s the client waits, even on a loaded machine
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            for event in (content("Done."), finish()):
                self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
        except OSError:
            pass  # the client gave up first, as it should


@pytest.mark.parametrize("stall", ["before-the-headers", "between-events"])
def test_a_read_timeout_under_a_second_is_kept_as_given(repo, stall):
    # --timeout 0.1 waits 0.1 s, for the answer's headers as for each event after them;
    # the floor under it only keeps a timeout of 0 from meaning "do not wait at all".
    if stall == "before-the-headers":
        _, events = run_against(repo, SlowHeaders, timeout=0.1)
    else:
        late = reply(content("Thinking"), content("..."), finish(), pause_after_first=2.0)
        _, events = run_chat(repo, late, timeout=0.1)
    assert events[-1]["reason"] == MODEL_ERROR, events[-1]
    assert "sent nothing for 0.1 s" in events[-1]["error"]


class KeptAliveModelList(ModelLists):
    """ModelLists over HTTP/1.1: the connection stays open for another request until the
    client closes it, which `closed` then tells."""

    protocol_version = "HTTP/1.1"
    body = json.dumps({"object": "list", "data": [{"id": "other-7b"}]}).encode()
    closed = None  # a threading.Event, set per test

    def finish(self):
        super().finish()
        self.closed.set()


def test_preflight_hangs_up_even_while_its_error_is_kept():
    # A server slot held open by a failed preflight is a server slot lost (llama-server
    # has few); the caller keeping the error (and so the adapter's frames) must not hold it.
    closed = threading.Event()
    handler = type("Handler", (KeptAliveModelList,), {"closed": closed})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    try:
        chat = OpenAICompatibleModel(TEST_MODEL, f"http://127.0.0.1:{server.server_address[1]}/v1")
        with pytest.raises(OpenAIModelError, match="which lists: other-7b") as kept:
            chat.describe()
        assert wait_for(closed.is_set)  # while `kept` still holds the error and its frames
        assert "other-7b" in str(kept.value)
    finally:
        server.shutdown()
        server.server_close()
