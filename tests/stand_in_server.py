"""What the two stand-in servers share: an HTTP server on 127.0.0.1 that answers from a queue
of scripted replies, and the writing of one streamed reply, chunk by chunk.

`StandInServer` runs a `StreamHandler` subclass in a thread until its context manager ends.
`StreamHandler.stream(script, pieces)` sends a chunked 200 response the way `script` (a
server's `reply(...)`) says: a pause or a gate after the first piece, a drip of bytes that
never completes a line, then a clean end or a cut connection; a client that hangs up first
is counted in the server's `hung_up`. ollama_test_server.py and openai_test_server.py keep
what teaches their wire: the endpoints, the error bodies, how one item of the stream is
written (an NDJSON line; a `data:` event) and how the stream ends (`data: [DONE]`).

Not a model and not any real server: every reply was written by hand. Tests only.
"""

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class QuietServer(ThreadingHTTPServer):
    """A client that hangs up between two requests of a kept-alive connection is no error
    of the server's. socketserver would print its traceback to sys.stderr, which is the
    captured stderr of a CLI run in the test's own process (tests/in_process.py)."""

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            super().handle_error(request, client_address)


class StandInServer:
    """Serves `handler` on 127.0.0.1 (a free port) while its context manager is open."""

    def __init__(self, handler, replies):
        self.replies = list(replies)  # scripted answers, taken in order
        self.hung_up = 0  # streams the client closed before the server had sent them all
        self._lock = threading.Lock()
        self._server = QuietServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._server.stand_in = self  # how a handler reaches the server it serves
        self.address = f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self):
        # A short poll interval: shutdown() waits up to that long, once per test.
        serve = {"target": self._server.serve_forever, "kwargs": {"poll_interval": 0.05}}
        threading.Thread(**serve, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()


class StreamHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    @property
    def stand_in(self):
        return self.server.stand_in

    def log_message(self, *args):  # keep test output quiet
        pass

    def read_json(self):
        return json.loads(self.rfile.read(int(self.headers["Content-Length"])))

    def stream(self, script, pieces, headers=(), sent=lambda number: None, last=b""):
        """Send `pieces` (bytes) as a chunked 200 response, as `script` says.

        `sent(number)` runs just before each piece is written, so no reader can beat it;
        `last` is written after the pieces and the drip when the stream ends cleanly.
        """
        self.send_response(200)
        self.send_header("Content-Type", script["content_type"])
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for number, piece in enumerate(pieces):
                sent(number)
                self.send_chunk(piece)
                if number == 0 and script["pause"]:
                    time.sleep(script["pause"])
                time.sleep(script.get("pause_each", 0.0))  # each piece read on its own
                if number == 0 and script["gate"] is not None:
                    script["gate"].wait(10)
            if script["drip"]:
                data, seconds = script["drip"]
                data = data.encode() if isinstance(data, str) else data
                for _ in range(int(60 / seconds)):
                    self.send_chunk(data)
                    time.sleep(seconds)
            if script["end"] == "cut":
                self.close_connection = True  # no terminating chunk: a cut body
                return
            if last:
                self.send_chunk(last)
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            self.stand_in.hung_up += 1
            self.close_connection = True  # the client hung up; nothing to tell it

    def send_chunk(self, data):
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def send_json(self, status, payload):
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
