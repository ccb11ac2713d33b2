"""The lab's own modules are compiled from their source at every start, never loaded as
bytecode.

A test run without bubblewrap can write into the lab's folder, and git does not see
`__pycache__/`: a `verdict.cpython-311.pyc` compiled from another verdict.py, stamped with
the real file's modification time and size, is what Python would load from then on, and
every later verdict would be that file's, bubblewrap or not. So for each folder on the
import path outside the Python installation (the lab's folders, not the standard library
or site-packages), imports find `.py` sources only, compiled in memory: no `__pycache__`
read or written, and no sourceless `.pyc` or extension module found there.

This file runs at the start of every interpreter of the lab's `.venv/`: lab.py writes a
start-up file (`lab-fresh-sources.pth`) that runs it when it builds the environment, and
the start-up guard notices that file changed or gone (plumbing/startup_guard.py). It
costs the compile of the lab's modules at each start (about 0.1 s for replay.py), and
nothing compiled is kept.

Not here: what may plant such files (isolation.py says what each kind lets through).
"""

import importlib.machinery
import os
import sys


class FromSource(importlib.machinery.SourceFileLoader):
    """A source loader that never reads or writes bytecode beside a source."""

    def path_stats(self, path):
        # subtle: importlib reads a cached .pyc only after path_stats succeeds, and writes
        # one only with the stats it returned; without them it compiles the source alone.
        raise OSError("the lab's own modules are compiled from source")


def _installed_folders():
    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    return tuple(os.path.join(os.path.realpath(prefix), "") for prefix in prefixes)


INSTALLED = _installed_folders()


def sources_only(entry):
    """A path hook: a finder of sources alone for a folder outside the installation."""
    folder = os.path.realpath(entry)  # "" (the current folder, for -c and -m) is the cwd
    if not os.path.isdir(folder) or os.path.join(folder, "").startswith(INSTALLED):
        raise ImportError("not one of the lab's folders")  # the usual finder takes it
    return importlib.machinery.FileFinder(entry, (FromSource, importlib.machinery.SOURCE_SUFFIXES))


def install():
    if sources_only not in sys.path_hooks:
        sys.path_hooks.insert(0, sources_only)
    forget_finders()


def forget_finders():
    """Drop the finders made for the lab's folders before a hook was put first, so that the
    next import there asks the hooks again."""
    for entry in list(sys.path_importer_cache):
        try:
            sources_only(entry)
        except ImportError:
            continue
        del sys.path_importer_cache[entry]


install()
