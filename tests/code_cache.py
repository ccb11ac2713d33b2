"""The suite's cache of the lab's compiled modules: each compiled once a session, not again in
each of the few hundred interpreters the suite starts.

Every interpreter of the lab's .venv/ compiles the lab's own modules from their source
(plumbing/fresh_sources.py, run by the start-up file lab.py writes), about 0.07 s each time.
With `LAB_SUITE_CODE_CACHE` naming a folder (made by `start` below for a session, shared by
its workers and by every program a test starts), what that compiles is kept there under the
SHA-256 of Python's bytecode version (importlib's MAGIC_NUMBER), the source's path and its
bytes, written whole or not at all, and the next interpreter to import the same bytes from
the same path loads that. A folder it cannot read or write costs a compile, nothing else.

How it reaches the lab: a path hook put before the lab's own (`sources_only`), for the same
folders it takes, whose loader is the lab's `FromSource` with a `source_to_code` that asks
the cache first. In a pytest process of the suite `start` puts it there (conftest.py's own
imports are compiled before it); in every other interpreter a test starts,
tests/suite_start/sitecustomize.py does, which runs after the lab's start-up file: what that
file runs (fresh_sources.py itself, compiled by the file) and the suite's start-up module
with this one are compiled without it, and nothing else of the lab is imported before it. An
interpreter started without tests/suite_start/ on its PYTHONPATH (a test's own PYTHONPATH,
or -I or -E) compiles every module, as a learner's does.

subtle: the cache trusts its folder. A run outside bubblewrap can write anywhere, that folder
too; in the suite only the lab's own code runs so. The sandboxed runs never see it: their
environment is minimal (plumbing/child_process.py), and nothing of the lab names it.
"""

import importlib.machinery
import importlib.util
import os
import shutil
import sys
import tempfile

SETTING = "LAB_SUITE_CODE_CACHE"  # the cache's folder; unset or empty: every module compiled


def start(config):
    """For a session of the suite (conftest.py's pytest_configure, in the controller and in
    each worker): the folder, made by the controller before its workers start (they inherit
    the environment) and gone when the session ends; each process keeps its compiles there."""
    if not hasattr(config, "workerinput") and os.environ.get(SETTING) is None:
        folder = tempfile.mkdtemp(prefix="agent-lab-code-")
        os.environ[SETTING] = folder
        config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))
        config.add_cleanup(lambda: os.environ.pop(SETTING, None))
    install()


def install():
    """The cache's path hook before the lab's, where the lab's start-up file put one and a
    folder is named; else nothing: this interpreter compiles as a learner's does."""
    folder = os.environ.get(SETTING)
    lab = [hook for hook in sys.path_hooks if getattr(hook, "__name__", "") == "sources_only"]
    if not folder or not lab or getattr(sys.path_hooks[0], "__name__", "") == "cached_sources":
        return
    # subtle: the start-up file runs fresh_sources.py by exec, outside sys.modules: its hook
    # is the one way to the lab's own loader, the one this interpreter's imports would use
    sources_only = lab[0]
    loader = kept_in(folder, sources_only.__globals__["FromSource"])

    def cached_sources(entry):
        sources_only(entry)  # ImportError where it is not one of the lab's folders
        return importlib.machinery.FileFinder(entry, (loader, importlib.machinery.SOURCE_SUFFIXES))

    sys.path_hooks.insert(0, cached_sources)
    sources_only.__globals__["forget_finders"]()  # those made before this ran


def kept_in(folder, loader):
    """`loader` (the lab's FromSource), its compiles kept in `folder`."""

    class FromSourceKept(loader):
        def source_to_code(self, data, path, *, _optimize=-1):
            import hashlib  # only when the lab compiles something: not every start needs it
            import marshal

            key = hashlib.sha256(importlib.util.MAGIC_NUMBER + path.encode() + b"\0" + data)
            entry = os.path.join(folder, key.hexdigest())
            try:
                with open(entry, "rb") as kept:
                    return marshal.load(kept)
            except (OSError, EOFError, ValueError, TypeError):
                pass  # not kept yet
            code = super().source_to_code(data, path, _optimize=_optimize)
            temporary = f"{entry}.{os.getpid()}"
            try:
                with open(temporary, "wb") as kept:
                    marshal.dump(code, kept)
                os.replace(temporary, entry)  # whole or not at all, for a reader beside us
            except OSError:
                pass
            return code

    return FromSourceKept
