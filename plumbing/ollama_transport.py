"""The Ollama adapter's limits, held below the SDK: an httpx transport and a watched socket.

`LimitedTransport(deadline_of)` is the transport `LocalModel` gives the SDK's client. Every
wait is capped by the run's deadline; a watchdog on the socket ends a request when time is
up, from its first byte sent to its last byte read (raising DeadlineExceeded, which the
loop turns into `deadline`); one line longer than MAX_LINE_BYTES raises LineTooLong; an
answer that is not NDJSON raises NotAStream.

Not here: the request or the messages for the user (local_model.py).
"""

import functools

import httpcore
import httpx

from plumbing.limits import MAX_LINE_BYTES, DeadlineExceeded, LineTooLong, Watchdog
from plumbing.wire_errors import DEADLINE_MARGIN


@functools.cache
def _ssl_context():
    """One TLS context for the process, as one transport shares its own among connections:
    making one loads the certificate bundle, about 25 ms of CPU, and each adapter made two."""
    return httpx.create_ssl_context()


class NotAStream(Exception):
    """HTTP 200, but the body is not Ollama's NDJSON (an HTML page from a proxy, say)."""


class LimitedTransport(httpx.HTTPTransport):
    """httpx's transport, with the run's deadline and the line cap enforced on every response.

    subtle: the SDK reads the body with `iter_lines()`, which would gather a line of any
    length, and httpx fixes a read's timeout when the body starts; so both limits are held
    here, on the bytes, where the SDK cannot undo them.
    """

    def __init__(self, deadline_of):
        super().__init__(verify=_ssl_context())
        self.deadline_of = deadline_of  # the model's current Deadline, read per request
        # subtle: a server can send its headers one byte at a time, restarting each read's
        # timeout before the response (and its socket) ever reaches us; so the watchdog must
        # sit under httpcore, on the socket itself. httpx 0.28 takes no network backend, so
        # the pool it just built (still empty) is replaced by httpcore's public pool, with
        # httpx's default limits, over a backend whose sockets are watched.
        self._pool = httpcore.ConnectionPool(
            ssl_context=_ssl_context(),
            max_connections=100,  # httpx's DEFAULT_LIMITS, which HTTPTransport() uses
            max_keepalive_connections=20,
            keepalive_expiry=5.0,
            network_backend=_WatchedBackend(deadline_of),
        )

    def handle_request(self, request):
        deadline = self.deadline_of()
        deadline.check()
        timeout = dict(request.extensions.get("timeout") or {})
        for key, seconds in timeout.items():  # also the wait for the response's headers
            if seconds is not None:
                timeout[key] = max(deadline.cap(seconds), 0.001)
        request.extensions["timeout"] = timeout
        response = super().handle_request(request)
        kind = response.headers.get("content-type", "")
        network = response.extensions["network_stream"]  # a _WatchedStream, already armed
        if response.status_code == 200 and kind and "json" not in kind:
            network.disarm()
            response.close()
            raise NotAStream(f"HTTP 200 with Content-Type {kind}")
        stream = _LimitedStream(response.stream, deadline, network)
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=stream,
            extensions=response.extensions,
        )


class _LimitedStream(httpx.SyncByteStream):
    def __init__(self, inner, deadline, network):
        self.inner, self.deadline, self.network = inner, deadline, network

    def __iter__(self):
        line = 0  # bytes since the last newline
        try:
            for piece in self.inner:  # at most 64 KB each: only the line across them can grow
                first, last = piece.find(b"\n"), piece.rfind(b"\n")
                if line + (first if first >= 0 else len(piece)) > MAX_LINE_BYTES:
                    raise LineTooLong()
                line = len(piece) - last - 1 if last >= 0 else line + len(piece)
                yield piece
        except (LineTooLong, DeadlineExceeded, GeneratorExit):
            raise
        except Exception as error:
            if self.network.fired or self.deadline.expired(margin=DEADLINE_MARGIN):
                raise self.deadline.error() from error
            raise
        if self.network.fired:  # the shutdown can look like a clean end of the body
            raise self.deadline.error()

    def close(self):
        self.network.disarm()  # before the connection goes back to the pool
        self.inner.close()


class _WatchedBackend(httpcore.NetworkBackend):
    """httpcore's own sockets, each wrapped in a _WatchedStream."""

    def __init__(self, deadline_of):
        self.inner, self.deadline_of = httpcore.SyncBackend(), deadline_of

    def connect_tcp(self, *args, **kwargs):
        return _WatchedStream(self.inner.connect_tcp(*args, **kwargs), self.deadline_of)

    def sleep(self, seconds):
        self.inner.sleep(seconds)


class _WatchedStream(httpcore.NetworkStream):
    """A connection's socket, with a Watchdog on the run's deadline from the first byte of a
    request until the transport disarms it (the response closed, or the connection).

    Armed at each request's first write, so a connection the pool reuses is watched with the
    deadline of the request it now carries. A read or write that fails (or a read that sees
    the end) once the watchdog fired raises DeadlineExceeded, not a wire error.
    """

    def __init__(self, inner, deadline_of):
        self.inner, self.deadline_of = inner, deadline_of
        self.deadline, self.watchdog = None, None

    @property
    def fired(self):
        return self.watchdog is not None and self.watchdog.fired

    def arm(self):
        deadline = self.deadline_of()
        if self.watchdog is None or deadline is not self.deadline:
            self.disarm()
            self.deadline = deadline
            self.watchdog = Watchdog(deadline, self.inner.get_extra_info("socket"))

    def disarm(self):
        if self.watchdog is not None:
            self.watchdog.cancel()
            self.watchdog = None

    def write(self, buffer, timeout=None):
        self.arm()
        self._watched(self.inner.write, buffer, timeout)

    def read(self, max_bytes, timeout=None):
        data = self._watched(self.inner.read, max_bytes, timeout)
        if not data and self.fired:  # the shutdown looks like the server closing
            raise self.deadline.error()
        return data

    def _watched(self, call, *args):
        try:
            return call(*args)
        except Exception as error:
            if self.fired:
                raise self.deadline.error() from error
            raise

    def close(self):
        self.disarm()
        self.inner.close()

    def start_tls(self, ssl_context, server_hostname=None, timeout=None):
        # subtle: wrapping detaches the plain socket, so a watchdog on it could not shut the
        # TLS one down; the handshake's reads are capped by the connect timeout alone.
        self.disarm()
        tls = self.inner.start_tls(ssl_context, server_hostname, timeout)
        return _WatchedStream(tls, self.deadline_of)

    def get_extra_info(self, info):
        return self.inner.get_extra_info(info)
