"""The OpenAI-compatible adapter: complete model turns from a chat-completions event stream.

`OpenAICompatibleModel(model, base_url)` is the `chat(messages, tools)` callable the loop
expects, for servers that speak OpenAI's `POST {base_url}/chat/completions` (llama.cpp's
`llama-server`, vLLM, LM Studio, Ollama's `/v1`). The work is in two pure functions that
replay reuses: `chunks_from_events` turns the streamed events into chunks of the loop's
(Ollama) shape, assembling tool calls that arrive as fragments of a JSON string, and
`request_body` turns the loop's Ollama-shaped conversation back into an OpenAI request
(ids for calls, `tool_call_id` for results). The HTTP part around them parses Server-Sent
Events with the standard library and translates every way the wire fails, once, into an
`OpenAIModelError` whose text says what to do. The limits of limits.py hold here too: each
read's timeout is the smaller of `timeout` and the deadline's time left, a watchdog shuts the
socket down when time is up (DeadlineExceeded, which the loop turns into `deadline`), and
one line over MAX_LINE_BYTES ends the turn.

Not here: deciding whether a turn may run its tools (the loop does that from `done` and
`done_reason`), retries, API-key discovery, or any wire other than chat completions.
"""

import http.client
import json
import os
from urllib.parse import urlsplit

from plumbing import wire_errors
from plumbing.limits import (
    ARGUMENTS_TOO_LONG,
    LARGEST_NUMBER,
    MAX_LINE_BYTES,
    MAX_TURN_ARGUMENTS,
    MAX_TURN_CALLS,
    TOO_MANY_CALLS_IN_TURN,
    Deadline,
    DeadlineExceeded,
    LineTooLong,
    Watchdog,
)
from plumbing.wire_errors import CONNECT_TIMEOUT, READ_TIMEOUT, STALLED, with_scheme

DEFAULT_BASE_URL = "http://127.0.0.1:8080/v1"  # llama-server's default port
# local_model.OPTIONS where the OpenAI API has an equivalent; the context size (num_ctx)
# is the server's setting here, and thinking has no standard switch.
SAMPLING = {"temperature": 0, "seed": 7, "max_tokens": 2048}
# Token counts on a last event: llama-server and Ollama's /v1 send none unless asked.
STREAM_OPTIONS = {"include_usage": True}
# The token counts, under the names the loop keeps from Ollama's final chunk.
USAGE_COUNTERS = {"prompt_eval_count": "prompt_tokens", "eval_count": "completion_tokens"}

# The user-facing messages, defined once; the tests import them.
CANNOT_CONNECT = (
    "cannot reach an OpenAI-compatible server at {base_url}: is the server running there? "
    "({detail})"
)
CONNECTION_CUT = "the connection to {base_url} was cut mid-response ({detail})"
HTTP_ERROR = "the server at {base_url} refused the request (HTTP {status}): {detail}"
NOT_FOUND_HINT = " (is {base_url} the API root, usually ending in /v1, and the model served?)"
STREAM_ERROR = "the server reported an error mid-response: {detail}"
BAD_RESPONSE = "the server at {base_url} sent what is not a chat-completions stream ({detail})"
NOT_A_STREAM = "the server at {base_url} answered something that is not a stream ({detail})"
AFTER_THE_END = "the server sent data after the end of the turn (after its finish_reason): {detail}"
MALFORMED_EVENT = "the server sent an event of the wrong shape: {detail}"
MODEL_MISSING = (
    "model {model!r} is not served at {base_url}, which lists: {listed}. "
    "Pass one of those as the model, or load {model!r} on the server"
)


# Which failure of the wire (after connecting) gets which message: the first row that fits.
FAILURES = (
    (TimeoutError, STALLED),
    (LineTooLong, "{detail}"),
    # subtle: a cut chunked body raises IncompleteRead; a cut that the framing cannot show
    # is a clean end, and then only a missing finish_reason tells.
    ((http.client.IncompleteRead, ConnectionError), CONNECTION_CUT),
    ((ValueError, http.client.HTTPException), BAD_RESPONSE),
)


class OpenAIModelError(Exception):
    """A model request failed; the message says what went wrong and what to do."""


def default_base_url():
    """`$OPENAI_BASE_URL` when set (the OpenAI SDK's own variable), else llama-server's."""
    return os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL


# --- the pure part: events -> chunks, conversation -> request ---------------------------------


def chunks_from_events(events):
    """Yield loop-shaped chunks from parsed stream events (the `data:` objects, no `[DONE]`).

    Content and reasoning pieces are yielded as they arrive. Tool calls are assembled by
    `index` and yielded, complete, only on the final `done: True` chunk, after the last
    event: a call's arguments are a JSON string that can be parsed only once it is whole.
    A stream that ends without any `finish_reason` yields no `done` chunk at all; one with a
    `finish_reason` is complete even if `[DONE]` never came (some servers omit it), or if
    the deadline cut the wait for it. After the `finish_reason`, only events without text or
    calls (a usage report) may come: anything else is an error, so it can never run.
    """
    calls = {}  # index -> {"name": ..., "pieces": [argument fragments]}
    finish_reason, usage, size = None, None, 0  # size: the calls' argument characters
    try:
        for event in events:
            if not isinstance(event, dict):
                raise OpenAIModelError(MALFORMED_EVENT.format(detail=f"{event!r:.200}"))
            if "error" in event:
                raise OpenAIModelError(STREAM_ERROR.format(detail=_error_text(event["error"])))
            usage = event.get("usage") or usage  # may come on its own event, after the finish
            choice, delta = _choice(event)
            text = delta.get("content")
            # subtle: some servers send the same text under both names; take one, never both.
            thought = delta.get("reasoning_content") or delta.get("reasoning")
            if finish_reason is not None and (text or thought or delta.get("tool_calls")):
                raise OpenAIModelError(AFTER_THE_END.format(detail=f"{event!r:.200}"))
            if text or thought:
                message = {"role": "assistant", "content": text or ""}
                if thought:
                    message["thinking"] = thought
                yield {"message": message, "done": False}
            for fragment in delta.get("tool_calls") or []:
                size += _add_fragment(calls, fragment)
                if len(calls) > MAX_TURN_CALLS or size > MAX_TURN_ARGUMENTS:
                    raise OpenAIModelError(
                        TOO_MANY_CALLS_IN_TURN
                        if len(calls) > MAX_TURN_CALLS
                        else ARGUMENTS_TOO_LONG
                    )
            finish_reason = choice.get("finish_reason") or finish_reason
    except DeadlineExceeded:
        if finish_reason is None:
            raise
        # subtle: the turn was whole; the loop keeps it and runs none of its tools.
    if finish_reason is None:
        return  # subtle: no done chunk, so the loop stops with incomplete_model_turn
    final = {
        "message": {"role": "assistant", "content": ""},
        "done": True,
        "done_reason": "length" if finish_reason == "length" else "stop",
        "finish_reason": finish_reason,  # the wire's own word, kept for the curious
    }
    if calls:
        final["message"]["tool_calls"] = [_complete_call(calls[i]) for i in sorted(calls)]
    if isinstance(usage, dict):
        for ours, theirs in USAGE_COUNTERS.items():
            count = usage.get(theirs)
            # subtle: a count a recording can hold, or none: a hostile server's 10**400
            # would be saved as null, and its replay then differ from the recording
            if isinstance(count, int) and abs(count) < LARGEST_NUMBER:
                final[ours] = count
    yield final


def _choice(event):
    """(choice, delta) of an event's first choice; empty dicts for a usage-only event."""
    choices = event.get("choices") or []
    choice = choices[0] if isinstance(choices, list) and choices else {}
    delta = (choice.get("delta") or {}) if isinstance(choice, dict) else None
    if not isinstance(choices, list) or not isinstance(delta, dict):
        raise OpenAIModelError(MALFORMED_EVENT.format(detail=f"{event!r:.200}"))
    if not isinstance(delta.get("tool_calls") or [], list):
        raise OpenAIModelError(MALFORMED_EVENT.format(detail=f"tool_calls in {event!r:.200}"))
    return choice, delta


def _add_fragment(calls, fragment):
    """Add one streamed piece of a tool call to `calls` (index -> call under assembly);
    return how many characters of arguments it brought."""
    if not isinstance(fragment, dict) or not isinstance(fragment.get("function", {}), dict):
        raise OpenAIModelError(MALFORMED_EVENT.format(detail=f"tool call {fragment!r:.200}"))
    index = fragment.get("index")
    if index is not None and (isinstance(index, bool) or not isinstance(index, int)):
        raise OpenAIModelError(MALFORMED_EVENT.format(detail=f"tool call index {index!r:.50}"))
    if index is None:
        # Without `index`, a fragment with a new id starts a call (some send "id": "" after).
        starts = bool(fragment.get("id")) or not calls
        index = len(calls) if starts else max(calls)
    call = calls.setdefault(index, {"name": None, "pieces": []})
    function = fragment.get("function") or {}
    name = function.get("name")
    if name and not isinstance(name, str):
        raise OpenAIModelError(MALFORMED_EVENT.format(detail=f"tool call name {name!r:.50}"))
    if name and call["name"] is None:
        call["name"] = name
    elif name and name != call["name"]:
        # subtle: some servers repeat the whole name in every fragment (kept once); others
        # split it ("read_", "file"), and the pieces make the name
        call["name"] += name
    piece = function.get("arguments")
    if piece:
        if not isinstance(piece, str):
            raise OpenAIModelError(MALFORMED_EVENT.format(detail=f"arguments {piece!r:.200}"))
        call["pieces"].append(piece)  # joined once at the end: linear in the stream
        return len(piece)
    return 0


def _complete_call(call):
    """The call in the loop's shape; arguments a dict, or the raw text if it is not one."""
    text = "".join(call["pieces"])
    arguments = {}  # some servers send no arguments at all for a call without parameters
    if text.strip():
        try:
            arguments = json.loads(text)
        except json.JSONDecodeError:
            arguments = text
        if not isinstance(arguments, dict):
            # The raw text goes on, so the tools' guard can tell the model what to fix.
            arguments = text
    return {"function": {"name": call["name"], "arguments": arguments}}


def _error_text(error):
    if isinstance(error, dict):
        return str(error.get("message") or json.dumps(error))
    return str(error)


def call_id(turn, k):
    """The id of call `k` (from 0) of assistant message `turn` (from 1): the same every time.

    subtle: nine letters and digits, because Mistral chat templates (in llama-server with
    --jinja, and in vLLM) reject any other tool-call id.
    """
    return f"t{turn:04d}c{k:03d}"


def request_body(model, messages, tools, sampling=SAMPLING):
    """The chat-completions request for the loop's Ollama-shaped `messages`.

    Assistant calls get ids from their position, `"type": "function"` and their arguments
    as JSON text; each tool message gets the id of the matching call, paired in order.
    Thinking is not sent back, and `content` is never null.
    """
    converted, pending, turn = [], [], 0
    for message in messages:
        role = message["role"]
        if role == "assistant":
            turn += 1
            # subtle: some servers reject "content": null on an assistant message.
            out = {"role": "assistant", "content": message.get("content") or ""}
            calls = message.get("tool_calls")
            if calls:
                pending = [call_id(turn, k) for k in range(len(calls))]
                out["tool_calls"] = [
                    {
                        "id": pending[k],
                        "type": "function",
                        "function": {
                            "name": call["function"].get("name") or "",
                            "arguments": _arguments_text(call["function"].get("arguments")),
                        },
                    }
                    for k, call in enumerate(calls)
                ]
            converted.append(out)
        elif role == "tool":
            if not pending:
                raise ValueError("a tool message follows no unanswered tool call")
            converted.append(
                {"role": "tool", "tool_call_id": pending.pop(0), "content": message["content"]}
            )
        else:
            converted.append({"role": role, "content": message.get("content") or ""})
    body = {"model": model, "messages": converted, "stream": True, **sampling}
    body["stream_options"] = dict(STREAM_OPTIONS)
    if tools:  # an empty list is refused by some servers; no tools means no key
        body["tools"] = list(tools)
    return body


def _arguments_text(arguments):
    """A call's arguments as JSON text that is always valid JSON."""
    if isinstance(arguments, dict):
        return json.dumps(arguments, ensure_ascii=False)
    if isinstance(arguments, str):
        try:
            if isinstance(json.loads(arguments), dict):
                return arguments
        except json.JSONDecodeError:
            pass
    # subtle: llama-server refuses the whole request (HTTP 500) when a call sent back has
    # invalid JSON arguments. The tool result beside it already told the model what was wrong.
    return "{}"


# --- the HTTP part: Server-Sent Events over http.client ---------------------------------------


def sse_events(lines):
    """Parse a Server-Sent Events byte stream into JSON objects; stop at `data: [DONE]`.

    Only `data:` fields matter (several in one event are joined by newlines); a blank line
    ends an event; comments (`: ...`) and other fields are skipped.
    """
    data = []
    for raw in lines:
        line = raw.decode("utf-8").rstrip("\r\n")
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "data":  # an empty line's field is "", so this is never a blank line
            data.append(value)
        elif field == "error":
            # subtle: older llama-server builds send a mid-stream error as an `error:` field.
            yield {"error": _json(value)}
        elif not line and data:
            text, data = "\n".join(data), []
            if text.strip() == "[DONE]":
                return
            yield _json(text)
    if data and "\n".join(data).strip() != "[DONE]":
        yield _json("\n".join(data))  # a last event the server did not end with a blank line


def _json(text):
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise ValueError(f"an event is not JSON: {text[:200]!r}") from None


def _lines(response, before_read=lambda: None):
    """The body's lines as they arrive; a cut chunked body raises IncompleteRead.

    A line longer than MAX_LINE_BYTES raises LineTooLong: its pieces are kept in a list,
    so memory and time stay linear in what was read. `before_read` runs before each read
    (to set its timeout).

    subtle: `response.readline()` would hide the cut: on a chunked body it peeks, and
    peeking swallows IncompleteRead and reports a clean end instead.
    """
    pending, size = [], 0  # the unfinished line's pieces, and their length
    while True:
        before_read()
        piece = response.read1(65536)
        if not piece:
            break
        start = 0
        while (end := piece.find(b"\n", start)) >= 0:
            if size + end - start > MAX_LINE_BYTES:
                raise LineTooLong()
            yield b"".join(pending) + piece[start : end + 1]
            pending, size, start = [], 0, end + 1
        if start < len(piece):
            pending.append(piece[start:])
            size += len(piece) - start
            if size > MAX_LINE_BYTES:
                raise LineTooLong()
    if pending:
        yield b"".join(pending)


class OpenAICompatibleModel:
    """`chat(messages, tools)` for a model behind an OpenAI-compatible server; yields chunks."""

    def __init__(
        self,
        model,
        base_url=DEFAULT_BASE_URL,
        api_key=None,
        timeout=READ_TIMEOUT,
        max_tokens=None,
        deadline=None,
        temperature=None,
        seed=None,
    ):
        url = with_scheme(base_url)
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base URL must be http(s)://host[:port][/path], got {base_url!r}")
        self.model = model
        self.base_url = url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout
        self.sampling = {**SAMPLING, "max_tokens": max_tokens or SAMPLING["max_tokens"]}
        given = {"temperature": temperature, "seed": seed}  # record_run.py's, where given
        self.sampling.update({name: value for name, value in given.items() if value is not None})
        self.deadline = deadline or Deadline()  # ask.py sets a fresh one per question
        self._parts = parts

    def __call__(self, messages, tools):
        events = self.stream_events(messages, tools)
        try:
            yield from chunks_from_events(events)
        finally:
            # subtle: closing this generator does not close the one it iterates over.
            events.close()

    def stream_events(self, messages, tools):
        """Yield the raw parsed events of one request: what a recorder keeps for replay.

        The stream must end cleanly: a connection cut even after the `finish_reason` raises,
        because the turn can no longer be shown to be whole.
        """
        body = json.dumps(request_body(self.model, messages, tools, self.sampling)).encode()
        deadline = self.deadline
        connection = self._connect()
        # subtle: kept here, as http.client forgets `connection.sock` once a response says it
        # will close the connection (`Connection: close`, or a body with no length or chunks)
        sock = connection.sock
        watchdog = Watchdog(deadline, sock)

        def cap_read():  # each read waits at most --timeout, and never past the deadline
            deadline.check()
            sock.settimeout(max(deadline.cap(self.timeout), 0.001))

        try:
            headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
            connection.request("POST", self._path("/chat/completions"), body, self._auth(headers))
            response = connection.getresponse()
            self._check(response)
            yield from sse_events(_lines(response, cap_read))
            if watchdog.fired:  # the shutdown can look like a clean end of the body
                raise deadline.error()
        except (OpenAIModelError, DeadlineExceeded):
            raise
        except Exception as error:
            failure = OpenAIModelError(self.explain(error))
            raise wire_errors.translated(error, deadline, failure, watchdog.fired) from error
        finally:
            watchdog.cancel()
            connection.close()  # ends the response, so the server stops generating for us

    def explain(self, error):
        """One actionable sentence for a failure of the wire after connecting."""
        where = {"base_url": self.base_url, "seconds": self.timeout}
        return wire_errors.explain(
            error, FAILURES, server=f"the server at {self.base_url}", **where
        )

    def describe(self):
        """The server's entry for the model (from `GET {base_url}/models`), or the error.

        The recorder and ask.py call this first, so that a missing server or model costs
        nothing. The listing has no standard word on what a model can do (llama-server lists
        no capabilities), so none are claimed here.
        """
        connection = self._connect()
        try:
            connection.request("GET", self._path("/models"), headers=self._auth({}))
            response = connection.getresponse()
            if response.status != 200:
                raise OpenAIModelError(self._http_error(response))
            payload = json.loads(response.read())
            listed = payload.get("data") if isinstance(payload, dict) else None
            if not isinstance(listed, list):
                raise ValueError("the model list has no 'data' list")
        except OpenAIModelError:
            raise
        except Exception as error:
            raise OpenAIModelError(self.explain(error)) from error
        finally:
            connection.close()
        entries = {entry.get("id"): entry for entry in listed if isinstance(entry, dict)}
        # Ollama's /v1 lists "name:latest" for a model asked for as "name".
        found = [entries[n] for n in (self.model, f"{self.model}:latest") if n in entries]
        if not found:
            shown = ", ".join(map(str, entries)) or "no models"
            raise OpenAIModelError(
                MODEL_MISSING.format(model=self.model, base_url=self.base_url, listed=shown)
            )
        return {
            "name": self.model,
            "api": "openai",
            "base_url": self.base_url,
            "server_models": list(entries),
            "server_model": found[0],
            "options": self.sampling,
        }

    def _connect(self):
        parts = self._parts
        kind = (
            http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        )
        self.deadline.check()
        timeout = max(self.deadline.cap(CONNECT_TIMEOUT), 0.001)
        connection = kind(parts.hostname, parts.port, timeout=timeout)
        try:
            connection.connect()
        # UnicodeError: a host name IDNA cannot encode ("a..b"), refused before any query is sent
        except (OSError, UnicodeError) as error:  # refused, unknown host, timeout, TLS failure
            connection.close()
            failure = OpenAIModelError(CANNOT_CONNECT.format(base_url=self.base_url, detail=error))
            raise wire_errors.translated(error, self.deadline, failure) from error
        # From here on, the read timeout; subtle: 0 would mean non-blocking, never "no wait".
        connection.sock.settimeout(max(self.deadline.cap(self.timeout), 0.001))
        return connection

    def _path(self, endpoint):
        return self._parts.path.rstrip("/") + endpoint

    def _auth(self, headers):
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers

    def _check(self, response):
        """Raise OpenAIModelError unless `response` is the start of an event stream."""
        if response.status != 200:
            raise OpenAIModelError(self._http_error(response))
        kind = response.getheader("Content-Type", "")
        if "json" in kind:  # the server ignored "stream": true and sent one whole answer
            raise ValueError(f"Content-Type {kind}, not text/event-stream")
        if kind and "event-stream" not in kind:  # an HTML page from a proxy, say
            detail = f"HTTP 200 with Content-Type {kind}"
            raise OpenAIModelError(NOT_A_STREAM.format(base_url=self.base_url, detail=detail))

    def _http_error(self, response):
        text = response.read(64_000).decode("utf-8", errors="replace")
        try:
            payload = json.loads(text)
        except json.JSONDecodeError:
            payload = None
        if isinstance(payload, dict) and payload.get("error"):
            detail = _error_text(payload["error"])  # {"error": {"message": ...}} or a string
        elif isinstance(payload, dict) and payload.get("message"):
            detail = str(payload["message"])  # vLLM's older {"object": "error", "message"}
        else:
            detail = text.strip()[:300] or response.reason
        message = HTTP_ERROR.format(base_url=self.base_url, status=response.status, detail=detail)
        if response.status == 404:
            message += NOT_FOUND_HINT.format(base_url=self.base_url)
        return message
