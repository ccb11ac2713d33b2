"""The Ollama adapter: one model turn as a stream of plain chunk dicts, via the official SDK.

`LocalModel(model, host)` is the `chat(messages, tools)` callable the loop expects. It asks
Ollama's `POST /api/chat` to stream (thinking as the model allows, the model unloaded
afterwards and fixed sampling options, so a run is as repeatable as the server allows) and
yields each chunk as `ChatResponse.model_dump(exclude_none=True)`. Its preflight,
`describe()`, reads the model's digest and capabilities (`ollama show`): a model without
`tools` is refused before anything runs, and `think` is sent only to a model with
`thinking` (Ollama answers HTTP 400 to any other). Every way the wire can fail is
translated here, once, into a `ModelError` whose text tells the user what to do.
The limits (limits.py) are enforced below the SDK, in an httpx transport
(plumbing/ollama_transport.py): every wait is capped by the run's deadline, and one line
longer than MAX_LINE_BYTES ends the turn.

Not here: deciding whether a turn is complete (the loop does that: a stream that simply
ends without `done` raises nothing on this side), retries, or any other wire (see
openai_model.py).
"""

import importlib.metadata
import json
import os
import urllib.request
from urllib.parse import urlsplit

import httpx

from plumbing import wire_errors
from plumbing.limits import Deadline, DeadlineExceeded, LineTooLong
from plumbing.ollama_transport import LimitedTransport, NotAStream
from plumbing.wire_errors import (
    CONNECT_TIMEOUT,
    READ_TIMEOUT,
    STALLED,
    with_scheme,
)

DEFAULT_MODEL = "gemma4:e2b"
DEFAULT_HOST = "http://127.0.0.1:11434"
OPTIONS = {"temperature": 0, "seed": 7, "num_ctx": 8192, "num_predict": 2048}
MAX_TOKENS = OPTIONS["num_predict"]  # the output budget of one model turn, unless told
THINK_CHOICES = ("auto", "on", "off")  # --think: as the model allows, or forced
# Of the capabilities a server lists, the entries kept (and judged), each cut to this many
# characters: Ollama lists a handful, and a hostile server must not fill the recording.
CAPABILITIES_KEPT = 64

# The user-facing messages, defined once; the tests import them.
CANNOT_CONNECT = "cannot reach Ollama at {host}: is `ollama serve` running there? ({detail})"
CONNECTION_CUT = "the connection to Ollama at {host} was cut mid-response ({detail})"
MODEL_MISSING = "model {model!r} is not available at {host}: run `ollama pull {model}` ({detail})"
HTTP_ERROR = "Ollama at {host} refused the request (HTTP {status}): {detail}"
STREAM_ERROR = "Ollama reported an error mid-response: {detail}"
BAD_RESPONSE = "Ollama at {host} sent a response the SDK could not read ({detail})"
NO_TOOLS = (
    "{model} cannot use tools (its capabilities: {capabilities}); "
    "pick a model that lists `tools` in `ollama show`"
)
NO_THINKING = (
    "{model} cannot think (its capabilities: {capabilities}), so --think on cannot be "
    "sent; use --think auto, or pick a model that lists `thinking` in `ollama show`"
)
NOT_A_STREAM = "the server at {host} answered something that is not a stream ({detail})"
MALFORMED_INFO = "the server's model info for {model} at {host} is malformed: {detail}"
CANNOT_ENCODE = (
    "the request could not be encoded as UTF-8: the conversation holds text that is not "
    "valid Unicode (a lone surrogate, e.g. from a file name); the server never saw it ({detail})"
)


class ModelError(Exception):
    """A model request failed; the message says what went wrong and what to do."""


# Which failure of the wire gets which message: the first row the error is an instance of.
FAILURES = (
    # subtle: in streaming mode a refused connection surfaces as httpx.ConnectError at the
    # first next(), not as the SDK's ConnectionError at chat().
    ((httpx.ConnectError, ConnectionError), CANNOT_CONNECT),
    (LineTooLong, "{detail}"),
    (NotAStream, NOT_A_STREAM),
    (UnicodeEncodeError, CANNOT_ENCODE),  # our request, never the server's answer
    (httpx.TimeoutException, STALLED),
    ((httpx.RemoteProtocolError, httpx.ReadError), CONNECTION_CUT),
    (ValueError, BAD_RESPONSE),  # a bad JSON line, or a chunk pydantic rejects
)


def default_host():
    return os.environ.get("OLLAMA_HOST") or DEFAULT_HOST


def think_value(model, capabilities, setting="auto"):
    """The `think` to send (True, False, or None: leave it out), or ModelError if the model
    cannot take part: without `tools` it cannot run the loop at all.

    subtle: Ollama answers HTTP 400 to `think: true` for a model without `thinking`, while a
    model with it thinks when `think` is left out. `capabilities` None means the server did
    not say (older versions): nothing is refused, and `think` is sent only when asked for.
    """
    if capabilities is None:
        return {"on": True, "off": False}.get(setting)
    shown = ", ".join(capabilities) or "none"
    if "tools" not in capabilities:
        raise ModelError(NO_TOOLS.format(model=model, capabilities=shown))
    if "thinking" in capabilities:
        return setting != "off"
    if setting == "on":
        raise ModelError(NO_THINKING.format(model=model, capabilities=shown))
    return None


def base_url(host):
    """`host` as a URL, the way Ollama's clients read OLLAMA_HOST ("0.0.0.0" → port 11434)."""
    parts = urlsplit(with_scheme(host))
    netloc = parts.netloc if parts.port else f"{parts.hostname}:11434"
    return f"{parts.scheme}://{netloc}{parts.path.rstrip('/')}"


class LocalModel:
    """`chat(messages, tools)` for a model served by Ollama; yields chunk dicts.

    `host` defaults to `$OLLAMA_HOST` when set, else http://127.0.0.1:11434, as Ollama's
    own clients do; `timeout` is the longest wait for the server's next bytes; `think` is
    the value sent (None: not sent), until `describe()` sets it from the capabilities;
    `max_tokens` is the output budget of one turn (`num_predict`); `temperature` and
    `seed` replace OPTIONS' (record_run.py's --temperature, --seed).
    """

    def __init__(
        self,
        model=DEFAULT_MODEL,
        host=None,
        timeout=READ_TIMEOUT,
        think=None,
        max_tokens=None,
        deadline=None,
        temperature=None,
        seed=None,
    ):
        self.model = model
        self.host = base_url(host or default_host())
        self.timeout = timeout
        self.think = think
        self.options = {**OPTIONS, "num_predict": max_tokens or MAX_TOKENS}
        given = {"temperature": temperature, "seed": seed}
        self.options.update({name: value for name, value in given.items() if value is not None})
        self.deadline = deadline or Deadline()  # ask.py sets a fresh one per question
        self.client = _sdk().Client(
            host=self.host,
            timeout=httpx.Timeout(timeout, connect=CONNECT_TIMEOUT),
            transport=LimitedTransport(lambda: self.deadline),  # the limits, below the SDK,
        )

    def __call__(self, messages, tools):
        stream = None
        try:
            stream = self.client.chat(
                model=self.model,
                messages=messages,
                tools=tools,
                stream=True,
                think=self.think,  # None: left out of the request
                keep_alive=0,
                options=self.options,
            )
            for chunk in stream:
                yield chunk.model_dump(exclude_none=True)
        except DeadlineExceeded:
            raise  # not a failure of the wire: the loop stops with `deadline`
        except Exception as error:
            failure = ModelError(self.explain(error))
            raise wire_errors.translated(error, self.deadline, failure) from error
        finally:
            if stream is not None:
                stream.close()  # ends the HTTP response, so the server stops generating

    def explain(self, error):
        """One actionable sentence for a failure of the SDK or the wire below it."""
        where = {"host": self.host, "model": self.model, "seconds": self.timeout}
        if isinstance(error, _sdk().ResponseError):
            where["detail"] = error.error
            if error.status_code == 404:
                return MODEL_MISSING.format(**where)
            if error.status_code == -1:  # an {"error": ...} line after the stream began
                return STREAM_ERROR.format(**where)
            return HTTP_ERROR.format(status=error.status_code, **where)
        if type(error) is UnicodeError or getattr(error, "encoding", "") == "idna":  # the host
            return CANNOT_CONNECT.format(detail=error, **where)
        return wire_errors.explain(error, FAILURES, server=f"Ollama at {self.host}", **where)

    def describe(self, think="auto"):
        """The preflight: the model's digest, capabilities and the server's version.

        Raises ModelError saying what to do if the server, the model or a capability the
        run needs is missing. Sets the `think` value the requests will send, from the
        capabilities and `think` (one of THINK_CHOICES). The recorder and ask.py call this
        first, so that a missing server, model or capability costs nothing.
        """
        try:
            listed = self.client.list().models
        except Exception as error:
            raise ModelError(self.explain(error)) from error
        names = {self.model, f"{self.model}:latest"}
        found = [entry for entry in listed if entry.model in names]
        if not found:
            detail = f"the server lists {len(listed)} model(s)"
            raise ModelError(MODEL_MISSING.format(host=self.host, model=self.model, detail=detail))
        try:
            capabilities = self.client.show(self.model).capabilities
        except Exception as error:
            # Not JSON, or pydantic refused a field (`capabilities`), in text of many lines.
            malformed = isinstance(error, ValueError) and not isinstance(error, UnicodeError)
            where = {"model": self.model, "host": self.host, "detail": _one_line(error)}
            raise ModelError(
                MALFORMED_INFO.format(**where) if malformed else self.explain(error)
            ) from error
        if capabilities is not None:
            capabilities = [entry[:CAPABILITIES_KEPT] for entry in capabilities[:CAPABILITIES_KEPT]]
        self.think = think_value(self.model, capabilities, think)
        return {
            "name": self.model,
            "digest": found[0].digest,
            "host": self.host,
            "server_version": self._server_version(),
            "sdk": f"ollama-python {importlib.metadata.version('ollama')}",
            # None: the server does not tell (older than 0.6.4); at most CAPABILITIES_KEPT kept
            "capabilities": capabilities,
            "options": self.options,
            "think": self.think,  # the value sent; None: not sent
            "keep_alive": 0,
        }

    def _server_version(self):
        # The SDK has no call for /api/version; a missing version is not worth failing for.
        try:
            with urllib.request.urlopen(f"{self.host}/api/version", timeout=5) as response:
                answer = json.load(response)
        except (OSError, ValueError, RecursionError):
            return None
        version = answer.get("version") if isinstance(answer, dict) else None
        return version if isinstance(version, str) else None


def _sdk():
    # subtle: imported on first use, not with this module, which every CLI imports (for
    # ModelError): --help, --api openai and a replay never pay for the SDK (docs/costs.md).
    # First use is open_model's, before any run: never after edited code ran.
    import ollama

    return ollama


def _one_line(error):
    """A malformed answer's first problem, on one line (pydantic's text spans several)."""
    problems = error.errors() if callable(getattr(error, "errors", None)) else []
    if problems:
        first = problems[0]
        where = ".".join(map(str, first.get("loc", ()))) or "the answer"
        more = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
        return f"{where}: {first.get('msg')}{more}"
    return " ".join(str(error).split())[:300]
