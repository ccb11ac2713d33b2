"""Run by Python at the start of every interpreter a test of the lab's suite starts (a program
such as record_run.py, and what that starts): tests/run_memo.py's `start` puts this
folder first on their PYTHONPATH. When the interpreter imports one of the lab's modules that
the suite wraps (run_memo.WRAPS), it is wrapped as it is imported, before any other module
can take its names: its runs are answered from the suite's memo, its seed is the session's.
Before that, the suite's cache of the lab's compiled modules (tests/code_cache.py) is put
before the lab's own path hook, so the modules it imports are compiled once a session.

Not here: anything else. The lab's own start-up code (the .pth file lab.py writes) runs
before this, and the sandboxed runs never see this folder: their environment is minimal
(plumbing/child_process.py), so the code a model wrote starts as it does for a learner.
"""

import importlib.machinery
import importlib.util
import os
import sys

FOLDER = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(FOLDER)  # where run_memo.py is
# run_memo.WRAPS's names
WRAPPED = ("plumbing.child_process", "plumbing.generated_cases", "plumbing.relations")


class WrapOnImport:
    """A finder on sys.meta_path that finds nothing itself: for a module of WRAPPED it asks
    the usual finder, and has the module wrapped once it has run."""

    def find_spec(self, name, path=None, target=None):
        if name not in WRAPPED:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None:
            return None
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            _memo().wrap(module)

        spec.loader.exec_module = exec_module  # subtle: this spec's own loader, made for it
        return spec


def _memo():
    # found in TESTS, as the lab's start-up code finds a module (compiled from its source),
    # once, when first needed: the lab a program runs may be a copy, with or without tests/,
    # and most interpreters never import a module of WRAPPED
    if not MEMO:
        MEMO.append(_module(importlib.machinery.PathFinder.find_spec("run_memo", [TESTS])))
    return MEMO[0]


MEMO = []  # tests/run_memo.py, once loaded; never in sys.modules, where a program could meet it


def _module(spec):
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_module(importlib.machinery.PathFinder.find_spec("code_cache", [TESTS])).install()
sys.meta_path.insert(0, WrapOnImport())
# subtle: this folder leaves the path once this has run. The programs' start-up guard
# (plumbing/startup_guard.py) names a sitecustomize.py on the path that the lab's .venv/ was
# not built with and refuses every verdict, as it must for a learner; this one is the
# suite's own, in its sources, and a program the suite starts is judged as a learner's is.
sys.path[:] = [entry for entry in sys.path if os.path.abspath(entry or ".") != FOLDER]
# ... and the sitecustomize this one hid, if the Python installation has one, runs as usual
_hidden = importlib.machinery.PathFinder.find_spec("sitecustomize")
if _hidden is not None:
    sys.modules[__name__] = _module(_hidden)
