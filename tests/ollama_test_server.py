"""A real HTTP server on 127.0.0.1 that speaks Ollama's wire protocol from a script.

Tests and `make_recordings.py` use it to drive the real `ollama` SDK over real HTTP without
a model: `POST /api/chat` answers NDJSON (chunked, one JSON object per line, the way
`ollama serve` does) from a queue of scripted replies, `GET /api/tags` lists the models it
pretends to have, `POST /api/show` tells each one's capabilities, `GET /api/version` answers
a version. Like Ollama, it refuses a chat request before any stream with HTTP 400 when it
asks a model for what it lacks: `think: true` without `thinking`, `tools` without `tools`
(the messages worded as Ollama's server/routes.go words them). Every request body it
receives is kept, so a test can assert the exact JSON the SDK sent.

Not a model and not Ollama: every chunk it sends was written by hand (see `chunk`). It
serves only 127.0.0.1 and stops with its context manager; the HTTP plumbing it shares with
openai_test_server.py is in stand_in_server.py.
"""

import json
import time

from tests.stand_in_server import StandInServer, StreamHandler

TEST_MODEL = "gemma4:e2b"
# A made-up digest: it marks the stand-in, never a real model's weights.
STAND_IN_DIGEST = "sha256:" + "0" * 60 + "7e57"
# What a model can do unless a test says otherwise: as `ollama show` lists it for a model
# with tools and thinking (gemma4, qwen3). Made up, like the digest.
DEFAULT_CAPABILITIES = ("completion", "tools", "thinking")


def chunk(
    content="", thinking=None, tool_calls=None, done=False, done_reason=None, counters=True, **extra
):
    """One line of Ollama's /api/chat stream, shaped as the server writes it.

    A final (`done`) line carries made-up counters unless `counters=False`: they exist to
    test that the harness keeps them, and measure nothing.
    """
    message = {"role": "assistant", "content": content}
    if thinking is not None:
        message["thinking"] = thinking
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    line = {"model": TEST_MODEL, "created_at": "2026-11-29T00:00:00Z", "message": message}
    line["done"] = done
    if done:
        line["done_reason"] = done_reason or "stop"
        if counters:
            line.update({"total_duration": 1000, "eval_count": 10, "prompt_eval_count": 100})
    line.update(extra)
    return line


def call(name, index=0, **arguments):
    """A tool call as Ollama's server sends it: whole, with an id and index the SDK drops."""
    function = {"index": index, "name": name, "arguments": arguments}
    return {"id": f"call_{name}_{index}", "function": function}


def reply(
    *lines,
    status=200,
    end="done",
    pause_after_first=0.0,
    gate=None,
    drip=None,
    content_type="application/x-ndjson",
    pause_before=0.0,
    pause_each=0.0,
):
    """A scripted answer to one POST /api/chat.

    A line is a dict (sent as one JSON line) or bytes (sent as they are, for broken or huge
    lines). `status` other than 200 answers `{"error": lines[0]}` with that status before
    any stream. `end` is "done" (a clean end) or "cut" (the connection drops mid-body).
    `pause_after_first` stalls after the first line; `gate` (a threading.Event) holds the
    rest of the stream until a test sets it. `pause_before` stalls before the response
    (a server still reading the prompt); `pause_each` stalls after every line, so that the
    client reads each apart (a bytes line need not end in a newline). `drip=(data,
    seconds)` then sends `data` every `seconds`, for at most a minute or until the client
    hangs up: traffic that never completes a line.
    """
    return {
        "lines": lines,
        "status": status,
        "end": end,
        "pause": pause_after_first,
        "gate": gate,
        "drip": drip,
        "content_type": content_type,
        "pause_before": pause_before,
        "pause_each": pause_each,
    }


def qualified(name):
    """A model name as Ollama's errors spell it: registry.ollama.ai/library/NAME:TAG."""
    tag = "" if ":" in name.rsplit("/", 1)[-1] else ":latest"
    parts = name.count("/")
    prefix = ("registry.ollama.ai/library/", "registry.ollama.ai/", "")[min(parts, 2)]
    return f"{prefix}{name}{tag}"


class OllamaTestServer(StandInServer):
    """`capabilities` maps a model name to what `/api/show` lists for it (None: the field
    is left out, as servers older than capabilities do; any other JSON value is sent as it
    is); others get DEFAULT_CAPABILITIES. `show_errors` maps a model name to the (status,
    message) its `/api/show` answers instead, as Ollama answers a manifest it cannot read."""

    def __init__(
        self,
        replies=(),
        models=((TEST_MODEL, STAND_IN_DIGEST),),
        version="0.0.0-test",
        capabilities=None,
        version_answer=None,
        show_errors=None,
    ):
        super().__init__(_Handler, replies)
        self.show_errors = dict(show_errors or {})
        self.models = dict(models)
        self.capabilities = dict(capabilities or {})
        self.version = version
        self.version_answer = version_answer  # any JSON value, to answer /api/version oddly
        self.requests = []  # (path, parsed JSON body or None), in arrival order
        self.first_line_sent = []  # time.perf_counter() as each stream's first line is sent
        self.host = self.address

    def chat_bodies(self):
        return [body for path, body in self.requests if path == "/api/chat"]

    def model_capabilities(self, name):
        """The capabilities of model `name` ("x" finds "x:latest"), or KeyError."""
        for known in (name, f"{name}:latest"):
            if known in self.models:
                listed = self.capabilities.get(known, DEFAULT_CAPABILITIES)
                return list(listed) if isinstance(listed, list) else listed  # odd ones as is
        raise KeyError(name)

    def _next_reply(self, body):
        with self._lock:
            self.requests.append(("/api/chat", body))
            name = body.get("model")
            try:
                capabilities = self.model_capabilities(name)
            except KeyError:
                message = f'model "{name}" not found, try pulling it first'
                return reply(message, status=404)
            # In Ollama's order (server/routes.go ChatHandler): thinking is checked with the
            # name as asked for, then tools, by the scheduler, with the fully qualified name.
            known = capabilities is not None  # a server older than capabilities checks nothing
            if known and body.get("think") is True and "thinking" not in capabilities:
                return reply(f'"{name}" does not support thinking', status=400)
            if known and body.get("tools") and "tools" not in capabilities:
                return reply(f"{qualified(name)} does not support tools", status=400)
            return self._scripted(body)

    def _scripted(self, body):
        """The next scripted reply to `body` (called with the lock held)."""
        if not self.replies:
            return reply("the test server has no scripted reply left", status=500)
        return self.replies.pop(0)


class _Handler(StreamHandler):
    def do_GET(self):
        server = self.stand_in
        server.requests.append((self.path, None))
        if self.path == "/api/tags":
            models = [
                {"name": name, "model": name, "digest": digest, "size": 1}
                for name, digest in server.models.items()
            ]
            self.send_json(200, {"models": models})
        elif self.path == "/api/version":
            answer = server.version_answer
            self.send_json(200, {"version": server.version} if answer is None else answer)
        else:
            self.send_json(404, {"error": "not found"})

    def do_POST(self):
        server = self.stand_in
        body = self.read_json()
        if self.path == "/api/show":
            self._show(body)
            return
        if self.path != "/api/chat":
            self.send_json(404, {"error": "not found"})
            return
        script = server._next_reply(body)
        if script["status"] != 200:
            self.send_json(script["status"], {"error": script["lines"][0]})
            return
        time.sleep(script["pause_before"])
        lines = (
            line if isinstance(line, bytes) else (json.dumps(line) + "\n").encode()
            for line in script["lines"]
        )

        def sent(number):  # taken just before the first write, so no reader can beat it
            if number == 0:
                server.first_line_sent.append(time.perf_counter())

        self.stream(script, lines, sent=sent)

    def _show(self, body):
        server = self.stand_in
        server.requests.append(("/api/show", body))
        name = body.get("model") or body.get("name")
        try:
            capabilities = server.model_capabilities(name)
        except KeyError:
            self.send_json(404, {"error": f"model '{name}' not found"})
            return
        if name in server.show_errors:  # listed, but its manifest is gone or unreadable
            status, message = server.show_errors[name]
            self.send_json(status, {"error": message})
            return
        # subtle: the SDK requires `model_info` (Ollama always sends it, maybe empty).
        shown = {"modelfile": f"FROM {name}\n", "details": {"format": "gguf"}}
        shown.update({"model_info": {}, "modified_at": "2026-11-29T00:00:00Z"})
        if capabilities is not None:
            shown["capabilities"] = capabilities
        self.send_json(200, shown)


class ConversationServer(OllamaTestServer):
    """The stand-in with one script per conversation, for several conversations at once.

    A request with no assistant message starts the next unstarted script; a later request
    continues the script whose first reply its first assistant message holds. So the
    scripts' first replies must differ (say, in their thinking), and each conversation gets
    its own replies in order however the conversations interleave. With `first_turn` K
    (forks at turn K, whose turns before K are replayed and alike), the same is read from
    the conversation's Kth assistant message: a request with K-1 of them starts a script.
    """

    def __init__(self, conversations, first_turn=1, **options):
        super().__init__(**options)
        self.unstarted = [list(script) for script in conversations]
        self.started = {}  # the text of a script's first reply -> its remaining replies
        self.first_turn = first_turn

    def _scripted(self, body):
        said = [m for m in body.get("messages", []) if m.get("role") == "assistant"]
        said = said[self.first_turn - 1 :]
        if not said:
            if not self.unstarted:
                return reply("the test server has no conversation left", status=500)
            script = self.unstarted.pop(0)
            self.started[_said(script[0]["lines"])] = script[1:]
            return script[0]
        script = self.started.get(_said([{"message": said[0]}]))
        if not script:
            return reply("the test server has no reply left for this conversation", status=500)
        return script.pop(0)


def _said(lines):
    """What an assistant turn said, from its stream lines or its message as sent back."""
    messages = [line.get("message") or {} for line in lines]
    thinking = "".join(m.get("thinking") or "" for m in messages)
    return thinking + "\n" + "".join(m.get("content") or "" for m in messages)
