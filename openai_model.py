"""The OpenAI-compatible adapter: complete model turns from a chat-completions event stream.

`OpenAICompatibleModel(model, base_url)` is the `chat(messages, tools)` callable the loop
expects, for servers that speak OpenAI's `POST {base_url}/chat/completions` (llama.cpp's
`llama-server`, vLLM, LM Studio, Ollama's `/v1`). The work is in two pure functions, kept
in plumbing/openai_wire.py because replay and the summaries of recordings run them too:
`chunks_from_events` turns the streamed events into chunks of the loop's
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
from plumbing.limits import MAX_LINE_BYTES, Deadline, DeadlineExceeded, LineTooLong, Watchdog
from plumbing.openai_wire import (  # the pure part: events -> chunks, conversation -> request
    SAMPLING,
    OpenAIModelError,
    chunks_from_events,
    error_text,
    request_body,
)
from plumbing.wire_errors import CONNECT_TIMEOUT, READ_TIMEOUT, STALLED, with_scheme

DEFAULT_BASE_URL = "http://127.0.0.1:8080/v1"  # llama-server's default port
LISTING_LIMIT = 4_000_000  # bytes of a model list read at most

# The user-facing messages, defined once; the tests import them.
CANNOT_CONNECT = (
    "cannot reach an OpenAI-compatible server at {base_url}: is the server running there? "
    "({detail})"
)
CONNECTION_CUT = "the connection to {base_url} was cut mid-response ({detail})"
HTTP_ERROR = "the server at {base_url} refused the request (HTTP {status}): {detail}"
NOT_FOUND_HINT = " (is {base_url} the API root, usually ending in /v1, and the model served?)"
BAD_RESPONSE = "the server at {base_url} sent what is not a chat-completions stream ({detail})"
NOT_A_STREAM = "the server at {base_url} answered something that is not a stream ({detail})"
MODEL_MISSING = (
    "model {model!r} is not served at {base_url}, which lists: {listed}. "
    "Pass one of those as the model, or load {model!r} on the server"
)
OLLAMA_NAME = (
    " ({model!r} is written as Ollama names its models, name:tag: for Ollama, leave out "
    "--api openai)"
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


def default_base_url():
    """`$OPENAI_BASE_URL` when set (the OpenAI SDK's own variable), else llama-server's."""
    return os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL


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
        entries = self.served()
        # Ollama's /v1 lists "name:latest" for a model asked for as "name".
        found = [entries[n] for n in (self.model, f"{self.model}:latest") if n in entries]
        if not found:
            shown = ", ".join(map(str, entries)) or "no models"
            missing = MODEL_MISSING.format(model=self.model, base_url=self.base_url, listed=shown)
            if ":" in str(self.model) and not any(":" in str(name) for name in entries):
                missing += OLLAMA_NAME.format(model=self.model)
            raise OpenAIModelError(missing)
        return {
            "name": self.model,
            "api": "openai",
            "base_url": self.base_url,
            "server_models": list(entries),
            "server_model": found[0],
            "options": self.sampling,
        }

    def served(self):
        """{name: entry} of every model the server lists (`GET {base_url}/models`)."""
        connection = self._connect()
        try:
            connection.request("GET", self._path("/models"), headers=self._auth({}))
            response = connection.getresponse()
            if response.status != 200:
                raise OpenAIModelError(self._http_error(response))
            body = response.read(LISTING_LIMIT + 1)
            if len(body) > LISTING_LIMIT:
                raise ValueError(f"the model list is larger than {LISTING_LIMIT:,} bytes")
            payload = json.loads(body)
            listed = payload.get("data") if isinstance(payload, dict) else None
            if not isinstance(listed, list):
                raise ValueError("the model list has no 'data' list")
        except OpenAIModelError:
            raise
        except Exception as error:
            raise OpenAIModelError(self.explain(error)) from error
        finally:
            connection.close()
        # a name is text: an entry whose `id` is anything else names no model it could serve
        return {e["id"]: e for e in listed if isinstance(e, dict) and isinstance(e.get("id"), str)}

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
            detail = error_text(payload["error"])  # {"error": {"message": ...}} or a string
        elif isinstance(payload, dict) and payload.get("message"):
            detail = str(payload["message"])  # vLLM's older {"object": "error", "message"}
        else:
            detail = text.strip()[:300] or response.reason
        message = HTTP_ERROR.format(base_url=self.base_url, status=response.status, detail=detail)
        if response.status == 404:
            message += NOT_FOUND_HINT.format(base_url=self.base_url)
        return message
