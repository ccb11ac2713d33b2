"""A lab CLI run inside the test's own process: its `main(argv)`, its output captured.

`run_cli("record_run.py", "--host", host, ...)` answers as `subprocess.run(...,
capture_output=True, text=True)` would for `python record_run.py ...`: a CompletedProcess
with the exit code, stdout and stderr (bytes with `text=False`). The CLI's own code runs
unchanged, against the same servers, tools, verdicts and files; what is not run is a new
interpreter, its imports (the `ollama` SDK alone costs about 0.3 s of CPU) and the compile
of the lab's modules, which is most of what a short CLI run costs. A suite that started
every CLI as a program spent more CPU on starting them than on what they do
(docs/costs.md).

For a run, `env` replaces the environment as it would for a child (None keeps it), `cwd`
is the folder it runs in, `stdin` what it reads. Whatever a run changes in this process is
put back afterwards: sys.stdout/stderr/stdin/argv, the environment, the folder, the
temporary folder `tempfile` chose, the SIGINT handler, and the credentials redact.py learnt
from a `--host`.

Not here: what is about the program itself: Ctrl-C and other signals, what `python3
X.py` does before `main` (the quiet Ctrl-C while it starts, the start-up guard), a broken
pipe, a process group killed. Those tests start the CLI as a program (tests/helpers.py).
"""

import contextlib
import importlib
import io
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from plumbing import redact
from tests import run_memo

LAB = Path(__file__).resolve().parent.parent


def _module(script):
    """The module of a lab script: "record_run.py" -> record_run, "tests/x.py" -> tests.x."""
    path = Path(script)
    if path.is_absolute():
        path = path.relative_to(LAB)
    return importlib.import_module(".".join(path.with_suffix("").parts))


def _stream(data=b""):
    # what a child's pipe is under the lab's UTF-8 locale: not a terminal, strict UTF-8
    # (tolerant_output() reconfigures it, as it does a real one)
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", write_through=True)


def _captured(stream, text):
    data = stream.buffer.getvalue()
    if not text:
        return data
    # subprocess's text mode: decoded, with universal newlines
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="replace").read()


@contextlib.contextmanager
def _environment(env):
    if env is None:
        yield
        return
    saved = dict(os.environ)
    os.environ.clear()
    # the suite's memo of sandboxed runs and its seed of new verdicts (tests/run_memo.py)
    # are the suite's, not the run's
    suite = (run_memo.SETTING, run_memo.SEED)
    os.environ.update({k: saved[k] for k in suite if k in saved})
    os.environ.update({str(k): str(v) for k, v in env.items()})
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def run_cli(script, *args, env=None, cwd=LAB, stdin="", text=True):
    """`python3 SCRIPT ARGS...` as its main() answers it here; see the module docstring."""
    main = _module(script).main
    argv = [str(arg) for arg in args]
    out, err = _stream(), _stream()
    saved = (sys.stdout, sys.stderr, sys.stdin, sys.argv, os.getcwd(), tempfile.tempdir)
    handler, learnt = signal.getsignal(signal.SIGINT), list(redact.LEARNED)
    try:
        with _environment(env):
            sys.stdout, sys.stderr = out, err
            sys.stdin = _stream(stdin.encode() if isinstance(stdin, str) else stdin)
            sys.argv = [str(LAB / script), *argv]
            tempfile.tempdir = None  # chosen again from this run's TMPDIR
            os.chdir(cwd)
            try:
                code = main(argv)
            except SystemExit as exit:  # argparse's usage errors and --help
                code = exit.code
                if isinstance(code, str):
                    print(code, file=sys.stderr)
                    code = 1
            for stream in (sys.stdout, sys.stderr):
                stream.flush()  # SafeStream, if the CLI put one in front of ours
    finally:
        sys.stdout, sys.stderr, sys.stdin, sys.argv, cwd_before, tempfile.tempdir = saved
        os.chdir(cwd_before)
        signal.signal(signal.SIGINT, handler)
        redact.LEARNED[:] = learnt
    return subprocess.CompletedProcess(
        ["python3", script, *argv], code or 0, _captured(out, text), _captured(err, text)
    )
