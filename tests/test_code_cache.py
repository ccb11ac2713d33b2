"""The suite's cache of the lab's compiled modules (tests/code_cache.py): kept and read back in
every process of the suite, under a key of the source's path and bytes, and never where the
suite's start-up module is absent, as it is for a learner's program."""

import importlib
import marshal
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import code_cache
from tests.helpers import folder_setting
from tests.run_memo import path_without_start

LAB = Path(__file__).resolve().parent.parent
ASK = "import probe; print(probe.VALUE)"

pytestmark = pytest.mark.skipif(
    not (Path(sys.prefix) / "lab-startup-files.json").exists(),
    reason="run with the lab's own .venv (python3 lab.py test): it holds the lab's path hook",
)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    return folder_setting(tmp_path, monkeypatch, "cache", code_cache.SETTING)


def started(code, cwd):
    """What `code` prints in an interpreter started as the suite starts one."""
    done = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    return done.stdout.strip() or done.stderr


def kept_files(folder):
    """The source files whose compiled code `folder` holds (not what is still being written)."""
    entries = [entry for entry in folder.iterdir() if "." not in entry.name]
    return {marshal.loads(entry.read_bytes()).co_filename for entry in entries}


def test_a_program_the_suite_starts_keeps_the_labs_modules_it_imports(cache):
    assert started("import plumbing.exit_codes; print('ran')", LAB) == "ran"
    assert str(LAB / "plumbing" / "exit_codes.py") in kept_files(cache)


def test_what_is_kept_is_read_back_for_the_same_bytes_only(cache, tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("VALUE = 'source'\n")
    assert started(ASK, tmp_path) == "source"
    (entry,) = cache.iterdir()  # kept, under a key of its path and bytes
    entry.write_bytes(marshal.dumps(compile("VALUE = 'kept'", str(probe), "exec")))
    assert started(ASK, tmp_path) == "kept"  # read back: the next interpreter compiles nothing
    probe.write_text("VALUE = 'edited'\n")
    assert started(ASK, tmp_path) == "edited"  # other bytes, another key
    assert len(list(cache.iterdir())) == 2


def test_without_the_suites_start_up_folder_nothing_is_kept_or_read(cache, tmp_path, monkeypatch):
    (tmp_path / "probe.py").write_text("VALUE = 'source'\n")
    assert started(ASK, tmp_path) == "source"
    (entry,) = cache.iterdir()
    entry.write_bytes(marshal.dumps(compile("VALUE = 'kept'", "probe.py", "exec")))
    monkeypatch.setenv("PYTHONPATH", path_without_start())  # as a learner's program starts
    assert started(ASK, tmp_path) == "source"
    assert started("import plumbing.exit_codes; print('ran')", LAB) == "ran"
    assert list(cache.iterdir()) == [entry]


def test_without_the_setting_nothing_is_kept_or_read(cache, tmp_path, monkeypatch):
    (tmp_path / "probe.py").write_text("VALUE = 'source'\n")
    monkeypatch.setenv(code_cache.SETTING, "")
    assert started(ASK, tmp_path) == "source"
    assert list(cache.iterdir()) == []


def test_a_cache_that_cannot_be_read_or_written_costs_a_compile_and_nothing_else(
    tmp_path, monkeypatch
):
    (tmp_path / "probe.py").write_text("VALUE = 'source'\n")
    (tmp_path / "a file").write_text("")
    monkeypatch.setenv(code_cache.SETTING, str(tmp_path / "a file"))  # no folder to open in
    assert started(ASK, tmp_path) == "source"


def test_the_suites_own_process_keeps_what_it_imports_in_the_sessions_folder(tmp_path):
    # conftest.py's start: the cache is this process's too, before the lab's own hook
    assert sys.path_hooks[0].__name__ == "cached_sources"
    name = f"probe_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text("VALUE = 1\n")
    sys.path.insert(0, str(tmp_path))
    try:
        importlib.import_module(name)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop(name, None)
    assert str(tmp_path / f"{name}.py") in kept_files(Path(os.environ[code_cache.SETTING]))
