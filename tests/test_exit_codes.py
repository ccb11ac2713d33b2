"""Every program's exit codes come from plumbing/exit_codes.py, and every program ends alike
on Ctrl-C (130, one line, no traceback) and on a stdout closed early (141, silently): the
one wrapper, `run_program`, at each program's `if __name__ == "__main__":`.

Ctrl-C in the middle of a run is tests/test_ctrl_c.py's (record_run.py, a series,
replay.py, ask.py; mid-stream in test_recorded.py); here, the programs that had no Ctrl-C
handling of their own (view.py, compare.py, lab.py) and the closed pipe in each program.
Those start the program: the process is what is tested (tests/in_process.py runs `main()`
alone, never `__main__`).
"""

import ast
import glob
import os
import signal
import subprocess
import sys

import pytest

from plumbing.exit_codes import (
    EXIT_CLOSED_PIPE,
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_NO,
    EXIT_OK,
    run_program,
)
from tests.helpers import LAB, start_cli, wait_for
from tests.in_process import run_cli
from tests.ollama_test_server import OllamaTestServer, chunk, reply

PROGRAMS = ["record_run.py", "replay.py", "ask.py", "compare.py", "view.py", "lab.py"]
REPAIR = LAB / "recordings" / "repair.json"


# --- the wrapper ---------------------------------------------------------------------------------


def exit_code(main, *args, **options):
    with pytest.raises(SystemExit) as exited:
        run_program(main, *args, **options)
    return exited.value.code


def ctrl_c():
    raise KeyboardInterrupt


def test_run_program_exits_with_what_main_returns(capsys):
    assert exit_code(lambda: 1) == 1
    assert exit_code(lambda code: code, 2) == 2  # lab.py's main takes its arguments
    assert capsys.readouterr().err == ""


def test_run_program_turns_ctrl_c_into_130_and_one_line(capsys):
    assert exit_code(ctrl_c) == EXIT_INTERRUPTED == 130
    assert capsys.readouterr().err == "\ninterrupted\n"
    assert exit_code(ctrl_c, interrupted="interrupted: nothing was recorded") == 130
    assert capsys.readouterr().err == "\ninterrupted: nothing was recorded\n"
    assert exit_code(ctrl_c, interrupted=None) == 130  # lab.py: its job says so
    assert capsys.readouterr().err == ""


# --- one place ------------------------------------------------------------------------------------


def spelled_exit_codes(path):
    """Where `path` exits with a number written out, or defines an EXIT_ name of its own."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            called = ast.unparse(node.func)
            if called in ("sys.exit", "SystemExit", "exit") or called.endswith(".exit"):
                found.append(f"{path.name}:{node.lineno} {ast.unparse(node)}")
        if isinstance(node, ast.Assign) and isinstance(node.value, (ast.Constant, ast.Tuple)):
            names = [n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)]
            if any(name.startswith("EXIT_") for name in names):  # EXIT_X = 2, as before
                found.append(f"{path.name}:{node.lineno} {ast.unparse(node)}")
    return found


def test_the_codes_are_the_numbers_the_help_and_the_shell_give():
    # written out: a test through the names alone passes whatever the numbers are
    assert (EXIT_OK, EXIT_NO, EXIT_ERROR) == (0, 1, 2)  # as diff and grep use them
    assert (EXIT_INTERRUPTED, EXIT_CLOSED_PIPE) == (128 + 2, 128 + 13)  # SIGINT, SIGPIPE


def test_no_program_spells_an_exit_code_of_its_own():
    modules = (
        [LAB / p for p in PROGRAMS]
        + sorted((LAB / "plumbing").glob("*.py"))
        + sorted((LAB / "harness").glob("*.py"))
    )
    spelled = [where for path in modules if path.name != "exit_codes.py"
               for where in spelled_exit_codes(path)]  # fmt: skip
    assert spelled == []


@pytest.mark.parametrize("program", PROGRAMS)
def test_every_programs_help_names_the_codes_of_ctrl_c_and_a_closed_pipe(program):
    finished = run_cli(program, "--help")
    assert finished.returncode == 0
    said = " ".join(finished.stdout.split())  # argparse wraps the epilog
    assert "exit codes" in said and "130" in said and "141 " in said, said


# --- a closed pipe: 141, silently -----------------------------------------------------------------


def with_stdout_closed(args, tmp_path, **options):
    """(exit code, stderr) of the program started with a stdout whose reader is gone."""
    process = subprocess.Popen(
        [sys.executable, *map(str, args)],
        cwd=LAB,
        env={**os.environ, "TMPDIR": str(tmp_path)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **options,
    )
    process.stdout.close()  # before the program writes anything: `| head -0`
    try:
        err = process.stderr.read()
        return process.wait(timeout=120), err
    finally:
        process.kill()


@pytest.mark.parametrize(
    "args",
    [
        ["replay.py", REPAIR],
        ["compare.py", REPAIR],
        ["lab.py", "--help"],  # lab.py's own line, printed without argparse
    ],
    ids=["replay.py", "compare.py", "lab.py"],
)
def test_a_closed_stdout_ends_the_program_with_141_and_nothing_said(args, tmp_path):
    code, err = with_stdout_closed(args, tmp_path)
    assert (code, err) == (EXIT_CLOSED_PIPE, "")
    assert list(tmp_path.iterdir()) == []  # replay's copy of the sample is gone too


def test_view_writes_its_pages_then_exits_141_on_a_closed_stdout(tmp_path):
    pages = tmp_path / "pages"
    code, err = with_stdout_closed(["view.py", REPAIR, "--out", pages], tmp_path)
    assert (code, err) == (EXIT_CLOSED_PIPE, "")
    assert (pages / "repair.html").is_file()  # only the addresses it prints are lost


def test_record_run_exits_141_on_a_closed_stdout_and_saves_nothing(tmp_path):
    output = tmp_path / "out.json"
    with OllamaTestServer([reply(chunk("Done.", done=True))]) as server:
        args = ["record_run.py", "--host", server.host, "--output", output]
        code, err = with_stdout_closed(args, tmp_path)
    assert (code, err) == (EXIT_CLOSED_PIPE, "")
    assert not output.exists()


def test_ask_exits_141_on_a_closed_stdout(tmp_path):
    with OllamaTestServer([reply(chunk("An answer.", done=True))]) as server:
        args = ["ask.py", "--root", tmp_path, "--host", server.host, "What is here?"]
        code, err = with_stdout_closed(args, tmp_path)
    assert (code, err) == (EXIT_CLOSED_PIPE, "")


# --- Ctrl-C: 130, one line, no traceback ----------------------------------------------------------


def held_in_main(args, fifo, tmp_path, own_group=False):
    """(process, its stdout lines, writer): the program started on a recording that is a
    FIFO, returned once it has opened it to read, so inside its main(); it waits there for
    the test's writer."""
    os.mkfifo(fifo)
    process, lines = start_cli(args, tmp_path, own_group)
    writer = []

    def opened():  # a FIFO opens for writing only once a reader has it open
        try:
            writer.append(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            return process.poll() is not None  # it ended before reading: the test says so
        return True

    assert wait_for(opened, seconds=60), "the program never opened the recording"
    assert writer, process.stderr.read()
    # subtle: a Ctrl-C that lands after CPython last checked for signals but before its
    # read(2) begins is handled only once that read returns: here, never (1 run in 3 hung
    # for compare.py). So the signal waits until the reader blocks in the read itself.
    wait_for(lambda: blocked_reading(fifo), seconds=10)  # where /proc cannot say: as before
    return process, lines, writer[0]


def blocked_reading(fifo):
    """Whether a process holding `fifo` open waits in the kernel for a pipe to fill."""
    for link in glob.glob("/proc/[0-9]*/fd/*"):
        try:
            if os.readlink(link) == str(fifo):
                with open(f"/proc/{link.split('/')[2]}/wchan") as wchan:
                    if "pipe_read" in wchan.read():
                        return True
        except OSError:  # a process or descriptor that went, or one not ours to read
            continue
    return False


def interrupted(process, writer, signal_it):
    """(exit code, stderr) after `signal_it()` sent Ctrl-C."""
    try:
        signal_it()
        code = process.wait(timeout=30)
        return code, process.stderr.read()
    finally:
        os.close(writer)
        process.kill()


@pytest.mark.parametrize("program", ["view.py", "compare.py"])
def test_ctrl_c_while_reading_a_recording_exits_130_with_one_line(program, tmp_path):
    fifo = tmp_path / "slow.json"
    process, lines, writer = held_in_main([program, fifo], fifo, tmp_path)
    code, err = interrupted(process, writer, lambda: process.send_signal(signal.SIGINT))
    assert (code, err, lines) == (EXIT_INTERRUPTED, "\ninterrupted\n", [])


def test_ctrl_c_in_lab_py_ends_it_and_its_job_with_130_without_a_traceback(tmp_path):
    fifo = tmp_path / "slow.json"
    args = ["lab.py", "view", fifo, "--out", tmp_path / "pages"]  # view.py, started by lab.py
    process, lines, writer = held_in_main(args, fifo, tmp_path, own_group=True)
    # both, as a terminal's Ctrl-C
    code, err = interrupted(process, writer, lambda: os.killpg(process.pid, signal.SIGINT))
    assert code == EXIT_INTERRUPTED and lines == []
    # lab.py adds no line; view.py says `interrupted`, unless lab.py ended it first
    assert err in ("", "\ninterrupted\n"), err
