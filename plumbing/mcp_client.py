"""One MCP server over stdio, through the official `mcp` SDK, with calls a loop can make.

`McpServer(command)` starts the server (`COMMAND ARGS`, split as a shell would, run without
one), makes the protocol's handshake (`initialize`, then `tools/list`) and keeps the session
open; `call(tool, arguments, seconds)` sends one `tools/call` and returns the SDK's result as
JSON data, and `asked` is that call as a model's (its arguments checked first, its answer
made the lab's result: plumbing/mcp_offer.py); `close()` ends the session and the process.
The SDK is asynchronous: its session lives in one task on an event loop of its own thread,
which takes each call from a queue, so the loop (which is synchronous) waits on a plain
future, with a deadline.

Every failure is one `McpError` whose text is one line: a command that does not start, a
handshake not finished in time (the process is ended), a server that exits (with the last
line it wrote to stderr), a call not answered in time. The SDK is imported here alone, and
only when a server is started: a replay needs neither.

Not here: which tools are offered and what a result holds (plumbing/mcp_offer.py), the
decisions and the recording (extensions/mcp_tools.py); servers over HTTP.
"""

import asyncio
import concurrent.futures
import logging
import os
import shlex
import shutil
import sys
import tempfile
import threading

from plumbing import mcp_offer
from plumbing.mcp_offer import server_word

HANDSHAKE_SECONDS = 15.0  # to start, `initialize` and `tools/list`
# subtle: the SDK starts a server in a session of its own, so a record_run.py ended by a
# signal (SIGTERM, SIGKILL) would leave it running, orphaned. The server is started through
# this, which asks Linux to kill it when the thread that started it ends (PR_SET_PDEATHSIG,
# kept across exec), ends at once if that thread is already gone, then becomes the server.
LAUNCH = (
    "import ctypes, os, signal, sys; libc = ctypes.CDLL(None); "  # no prctl: not Linux
    "hasattr(libc, 'prctl') and libc.prctl(1, signal.SIGKILL); "
    "os.getppid() == int(sys.argv[1]) or os._exit(1); os.execvp(sys.argv[2], sys.argv[2:])"
)
STOP_SECONDS = 5.0  # to end the session and the process


class McpError(Exception):
    """What went wrong with a server, in one line."""


class McpServer:
    """A running server: `name` (as it says, made a safe word), `tools` (its `tools/list`,
    as JSON data), `call` and `close`."""

    def __init__(self, command, seconds=HANDSHAKE_SECONDS):
        try:
            argv = shlex.split(command)
        except ValueError as error:
            raise McpError(f"--mcp {command!r:.200}: {error}") from None
        if not argv:
            raise McpError(
                "--mcp needs a command, e.g. --mcp '.venv/bin/python mcp_servers/pydocs.py'"
            )
        if shutil.which(argv[0]) is None:
            raise McpError(f"the MCP server {command!r:.120}: no program {argv[0]!r:.80} to run")
        # subtle: the server writes bytes, any bytes, straight to this file: read as bytes
        self.command, self.errors = command, tempfile.TemporaryFile()
        self.loop, self.queue, self.serving = asyncio.new_event_loop(), None, None
        self.ended = threading.Event()  # set once the session and the process are gone
        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        ready = concurrent.futures.Future()
        self.task = asyncio.run_coroutine_threadsafe(self._serve(argv, ready), self.loop)
        try:
            self.name, self.tools = ready.result(timeout=seconds)
        except concurrent.futures.TimeoutError:
            self.close()
            raise McpError(f"{self}: no answer to the handshake within {seconds:g} s") from None
        except Exception as error:  # it did not start, or ended before it answered
            self.close()
            raise McpError(f"{self}: {self._why(error)}") from None

    def __str__(self):
        return f"the MCP server {self.command!r:.120}"

    async def _serve(self, argv, ready):
        from mcp import ClientSession, StdioServerParameters, stdio_client  # only when used

        # subtle: the SDK logs a line the server wrote that is no JSON-RPC with its whole
        # traceback, and skips it; with no handler of its own, Python prints that on stderr
        logged = logging.getLogger("mcp")
        if not logged.handlers:
            logged.addHandler(logging.NullHandler())
        self.queue, self.serving = asyncio.Queue(), asyncio.current_task()
        launch = ["-c", LAUNCH, str(os.getpid()), *argv]
        params = StdioServerParameters(command=sys.executable, args=launch)
        try:
            async with stdio_client(params, errlog=self.errors) as streams:
                async with ClientSession(*streams) as session:
                    said = await session.initialize()
                    listed = await session.list_tools()
                    name = server_word(said.server_info.name)
                    ready.set_result((name, [_data(tool) for tool in listed.tools]))
                    while (asked := await self.queue.get()) is not None:
                        await _answer(session, *asked)
        except BaseException as error:
            if not ready.done():
                ready.set_exception(error)
            raise
        finally:
            self.ended.set()

    def call(self, tool, arguments, seconds):
        """The server's result of `tools/call` as JSON data, or McpError within `seconds`."""
        if self.task.done():
            raise McpError(f"{self} has ended: {self._why(self.task.exception())}")
        done = concurrent.futures.Future()
        self.loop.call_soon_threadsafe(self.queue.put_nowait, (tool, arguments, seconds, done))
        try:
            return done.result(timeout=seconds + 1)  # the SDK's own deadline comes first
        except concurrent.futures.TimeoutError:
            raise McpError(f"{self}: no answer to {tool} within {seconds:g} s") from None
        except Exception as error:
            ended = self.task.done()
            raise McpError(f"{self}{' has ended' if ended else ''}: {self._why(error)}") from None

    def asked(self, tool, arguments, seconds):
        """(`called`, `refused` or `failed`, its line, the result the model reads) of one
        call of `tool` (its tools/list entry): its arguments checked against its schema
        first (plumbing/mcp_offer.py), then sent, within `seconds`."""
        named = f"{self.name} {tool['name']}"
        problem = mcp_offer.arguments_problem(tool["inputSchema"], arguments)
        if problem:
            return "refused", f"{named}: {problem}"[:200], {"error": f"{tool['name']}: {problem}"}
        try:
            answer = self.call(tool["name"], mcp_offer.parsed(arguments), seconds)
        except McpError as error:
            return "failed", f"{named}: {error}"[:200], {"error": str(error)}
        word, result = mcp_offer.result_of(self.name, answer)
        size = len(result.get("text", result.get("error", "")))
        return word, f"{named}: {size:,} characters", result

    def close(self):
        """End the session and the process (the SDK's stdio client ends it), then the loop:
        asked to, when it waits for a call; else (a handshake never answered) cancelled."""
        if self.queue is not None:
            self.loop.call_soon_threadsafe(self.queue.put_nowait, None)
        if not self.ended.wait(STOP_SECONDS if hasattr(self, "tools") else 0):
            self.loop.call_soon_threadsafe(self.serving.cancel)
            self.ended.wait(STOP_SECONDS)
        self.loop.call_soon_threadsafe(self.loop.stop)

    def _why(self, error):
        """`error` in one line, with the last line the server wrote to stderr, if any."""
        while getattr(error, "exceptions", None):  # the SDK's task groups wrap what failed
            error = error.exceptions[0]
        self.errors.seek(max(0, self.errors.seek(0, 2) - 4000))  # its end only: it may be huge
        tail = self.errors.read().decode("utf-8", errors="replace")
        lines = [line.strip() for line in tail.splitlines() if line.strip()]
        said = f"{type(error).__name__}: {error}" if error else "it ended"
        said = " ".join(said.split())[:200]
        return said + (f" (its stderr: {lines[-1][:200]})" if lines else "")


async def _answer(session, tool, arguments, seconds, done):
    try:
        result = await session.call_tool(tool, arguments, read_timeout_seconds=seconds)
        done.set_result(_data(result))
    except Exception as error:  # noqa: BLE001 -- the caller reads it; the session goes on
        done.set_exception(error)


def _data(model):
    """An SDK object as the JSON data the protocol sent (its own names, nothing empty)."""
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)
