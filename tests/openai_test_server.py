"""A real HTTP server on 127.0.0.1 that speaks OpenAI's chat-completions wire from a script.

Tests use it to drive `OpenAICompatibleModel` over real HTTP without a model:
`POST /v1/chat/completions` answers Server-Sent Events from a queue of scripted replies, the
way llama.cpp's `llama-server` does (a chunked body of `data: {json}` lines, each followed
by a blank line, ending with `data: [DONE]`); `GET /v1/models` lists the models it pretends
to serve. Every request is kept (method, path, headers, parsed JSON body), so a test can
assert the exact JSON the adapter sent. A reply can also fail on purpose: an HTTP error
status with an OpenAI-style error body, an error event mid-stream, a missing `[DONE]`, a
cut connection, or a stall.

Not a model and not llama-server: every event it sends was written by hand with the helpers
below. For answers it does not give (other error bodies, an HTTP/1.0 stream without
framing, a stall before the headers), `run_against` runs one task against an http.server
handler class of the test's own. It serves only 127.0.0.1 and stops with its context
manager; the HTTP plumbing it shares with ollama_test_server.py is in stand_in_server.py.
"""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.stand_in_server import StandInServer, StreamHandler

TEST_MODEL = "test-model"
API_ROOT = "/v1"


def event(delta=None, finish_reason=None, **extra):
    """One `data:` object of the stream, shaped as llama-server writes it."""
    choice = {"index": 0, "delta": delta or {}, "finish_reason": finish_reason}
    line = {"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 0}
    return {**line, "model": TEST_MODEL, "choices": [choice], **extra}


def content(text):
    """A piece of the answer's text."""
    return event({"content": text})


def reasoning(text, field="reasoning_content"):
    """A piece of reasoning text; llama-server and vLLM call it `reasoning_content`."""
    return event({field: text})


def tool_call(index, arguments="", name=None, call_id=None):
    """One fragment of tool call `index`: with `name`, the call's first fragment (id + name);
    without, only a piece of its `arguments` JSON text."""
    fragment = {"index": index, "function": {"arguments": arguments}}
    if name is not None:
        fragment["id"] = call_id or f"srv-call-{index}"  # the server's id; the adapter drops it
        fragment["type"] = "function"
        fragment["function"]["name"] = name
    return event({"tool_calls": [fragment]})


def finish(reason="stop", usage=None):
    """The event that ends a turn: an empty delta with its `finish_reason`."""
    extra = {"usage": usage} if usage is not None else {}
    return event({}, finish_reason=reason, **extra)


def error_event(message, code=500):
    """An error reported after the stream began, as llama-server sends it."""
    return {"error": {"code": code, "message": message, "type": "server_error"}}


def tool_turn(call_id, name, arguments):
    """A whole turn that asks for one tool call, `arguments` a dict."""
    return reply(
        tool_call(0, json.dumps(arguments), name=name, call_id=call_id), finish("tool_calls")
    )


def file_answer(source, words=""):
    """A whole turn that answers with `words`, then `source` in one ```python fence."""
    return reply(content(f"{words}```python\n{source}```\n"), finish("stop"))


def reply(
    *events,
    status=200,
    end="done",
    pause_after_first=0.0,
    gate=None,
    drip=None,
    content_type="text/event-stream",
):
    """A scripted answer to one POST /v1/chat/completions.

    Each event is a dict (sent as `data: {json}` and a blank line) or a str (sent as it is,
    for comments and odd fields). `status` other than 200 answers
    `{"error": {"message": events[0]}}` with that status before any stream. `end` is "done"
    (`data: [DONE]`, then a clean end), "no-done" (a clean end without `[DONE]`) or "cut"
    (the connection drops mid-body). `pause_after_first` stalls after the first event;
    `gate` (a threading.Event) holds the rest of the stream until a test sets it.
    `drip=(text, seconds)` then sends `text` every `seconds`, for at most a minute or until
    the client hangs up: keep-alive comments, or bytes that never complete a line.
    """
    return {
        "events": events,
        "status": status,
        "end": end,
        "pause": pause_after_first,
        "gate": gate,
        "drip": drip,
        "content_type": content_type,
    }


class OpenAITestServer(StandInServer):
    def __init__(self, replies=(), models=(TEST_MODEL,)):
        super().__init__(_Handler, replies)
        self.models = list(models)
        self.requests = []  # {"method", "path", "headers", "body"}, in arrival order
        self.events_sent = 0  # stream events written so far, over all replies
        self.base_url = self.address + API_ROOT

    def chat_bodies(self):
        return [r["body"] for r in self.requests if r["path"] == API_ROOT + "/chat/completions"]

    def _next_reply(self, body):
        with self._lock:
            if body.get("model") not in self.models:
                return reply(f"model '{body.get('model')}' not found", status=404)
            if not self.replies:
                return reply("the test server has no scripted reply left", status=500)
            return self.replies.pop(0)


def _error_body(status, message):
    kind = "invalid_request_error" if status < 500 else "server_error"
    return {"error": {"code": status, "message": message, "type": kind}}


class _Handler(StreamHandler):
    def _keep(self, body):
        entry = {"method": self.command, "path": self.path, "headers": dict(self.headers)}
        self.stand_in.requests.append({**entry, "body": body})

    def do_GET(self):
        self._keep(None)
        if self.path == API_ROOT + "/models":
            models = [
                {"id": name, "object": "model", "owned_by": "test"} for name in self.stand_in.models
            ]
            self.send_json(200, {"object": "list", "data": models})
        else:
            self.send_json(404, _error_body(404, "File Not Found"))

    def do_POST(self):
        server = self.stand_in
        body = self.read_json()
        self._keep(body)
        if self.path != API_ROOT + "/chat/completions":
            self.send_json(404, _error_body(404, "File Not Found"))
            return
        script = server._next_reply(body)
        if script["status"] != 200:
            self.send_json(script["status"], _error_body(script["status"], script["events"][0]))
            return
        events = (
            (item if isinstance(item, str) else f"data: {json.dumps(item)}\n\n").encode()
            for item in script["events"]
        )

        def sent(number):  # counted first: the client may read the event at once
            server.events_sent += 1

        done = b"data: [DONE]\n\n" if script["end"] == "done" else b""
        self.stream(script, events, [("Cache-Control", "no-cache")], sent, last=done)


# --- answers the stand-in does not give: an http.server handler of a test's own -------------------


def run_against(repo, handler, **options):
    """(base URL, the loop's events) of one task against an http.server `handler` class, for
    answers the stand-in server does not give (other error bodies, HTTP/1.0 streams, stalls),
    with `options` for the model (a timeout, a deadline that the loop shares)."""
    from agent_loop import TASK, agent_events
    from openai_model import OpenAICompatibleModel
    from repo_tools import RepoTools

    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    try:
        base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        chat = OpenAICompatibleModel(TEST_MODEL, base_url, **options)
        deadline = options.get("deadline")
        return base_url, list(agent_events(chat, RepoTools(repo), TASK, deadline=deadline))
    finally:
        server.shutdown()
        server.server_close()


class UnframedStream(BaseHTTPRequestHandler):
    """Answers in HTTP/1.0 (http.server's default): an event stream with neither a length nor
    chunks, which ends when the server closes the connection, as plain servers send it."""

    def log_message(self, *args):
        pass

    def start_stream(self):
        """Read the request, then send the headers of an event stream without framing."""
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()

    def do_POST(self):
        self.start_stream()
        for event in (content("Done."), finish()):
            self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")
