"""The suite's memo of sandboxed runs: one run shared by every test that asks for the same one,
one seed for the suite's new verdicts, so that the same source asks the same inputs, and
one plan of the held-out checks for each seed (`one_plan`).

The suite replays the same recordings many times over (the faulty sample's tests alone
were run about 200 times in one suite), and each run of pytest under bubblewrap costs
about a quarter of a CPU second. With `LAB_RUN_MEMO` naming a folder (set for a session by
`start` below, shared by its workers and by every program a test starts), a
sandboxed run of plumbing/child_process.py is answered by `run_once`, which runs the
command as `run_bounded` does and keeps what it gave: the exit code, the output, and the
files it wrote into its output folders. A later run of the same command on the same bytes
is answered from that, with the same output and the same files written, and no process is
started. `LAB_HELD_OUT_SEED` is the session's one seed for new verdicts
(generated_cases.new_seed), so the held-out run of one source is one run too.

"The same": the command (each folder in it written as a placeholder, so two copies in two
temporary folders match, and put back as the folder asking), its environment, timeout,
output and resource limits, the lab's own sources, the path, mode and bytes of every
entry under each input folder, and what the output folders held before. A run is kept only
when

- it ran under bubblewrap, where nothing outside its bound folders can be written, so
  nothing it did is left out of what is kept;
- its input folders hold, after the run, exactly what they held before (a run that leaves
  a file, or removes one, is run again each time);
- it finished within its time (a timeout is never kept: it says how busy the machine was);
- its output was not cut (the cut falls at another place for a longer folder name).

How it reaches the lab: by wrapping, and the lab never learns of it (`wrap`). `run_isolated`
is wrapped to note what a run reads and writes, and `run_bounded`, which it calls with the
whole command, to answer from the memo; `new_seed` to give the session's seed. The lab's
own code runs unchanged around the answer: the run's user is drawn, its command built, and
what outlived it looked for. In a pytest process of the suite `start` wraps
them; in every other interpreter a test starts (a program such as record_run.py, and what
that starts), tests/suite_start/sitecustomize.py wraps them as they are imported.

subtle: the memo trusts its folder. A run outside bubblewrap can write anywhere, that folder
too; in the suite only the lab's own test sources and recordings run so.

Not here: anything the lab does for a learner (nothing in the lab names the memo or its
settings). With `LAB_RUN_MEMO` empty every run is a new process, and so it is for each test
about the process itself (a Ctrl-C, a timeout, what a sandbox can reach: conftest.py's
`fresh_runs`).
"""

import contextvars
import functools
import hashlib
import importlib
import json
import os
import pickle
import shutil
import stat
import sys
import tempfile
from pathlib import Path
from typing import NamedTuple

SETTING = "LAB_RUN_MEMO"  # the memo's folder; unset or empty: no memo
SEED = "LAB_HELD_OUT_SEED"  # the session's seed for new verdicts, digits; else each draws one
FORMAT = "run-memo/1"
TREE_DEPTH, TREE_ENTRIES = 32, 5000  # past either, a tree is not digested: its run is not kept
START = Path(__file__).resolve().parent / "suite_start"  # on the PYTHONPATH of what tests start


def folder():
    """The memo's folder, or None when there is none."""
    return os.environ.get(SETTING) or None


# --- the suite's session: the memo's folder, the seed, and what the tests start ----------------


def start(config):
    """For a session of the suite (conftest.py's pytest_configure, in the controller and in
    each worker): the memo's folder and the seed, made by the controller before its workers
    start (they inherit the environment) and gone when the session ends; each process that
    runs tests wraps the lab's runs, and has the interpreters its tests start wrap them too."""
    if not hasattr(config, "workerinput"):
        from plumbing.generated_cases import new_seed

        # each unless set by whoever started the suite ("" for the memo: none)
        if os.environ.get(SEED) is None:
            _set(config, SEED, str(new_seed()))  # drawn anew for each session
        if os.environ.get(SETTING) is None:
            _set(config, SETTING, _folder(config))
    # subtle: not the controller of workers: they would inherit START, and each wraps itself
    if hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None):
        paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        if str(START) not in paths:
            _set(config, "PYTHONPATH", os.pathsep.join([str(START), *paths]))
        for name in WRAPS:
            wrap(importlib.import_module(name))


def path_without_start():
    """The PYTHONPATH of this process without START: an interpreter started with it wraps
    nothing, as a learner's does."""
    paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    return os.pathsep.join(p for p in paths if p != str(START))


def _set(config, name, value):
    """`name` set to `value` in the environment for the session, as it was after it."""
    before = os.environ.get(name)
    os.environ[name] = value
    if before is None:
        config.add_cleanup(lambda: os.environ.pop(name, None))
    else:
        config.add_cleanup(lambda: os.environ.update({name: before}))


def _folder(config):
    memo = tempfile.mkdtemp(prefix="agent-lab-run-memo-")
    config.add_cleanup(lambda: shutil.rmtree(memo, ignore_errors=True))
    return memo


# --- the wraps ------------------------------------------------------------------------------------


class Asked(NamedTuple):
    """What the memo needs of a run that `run_isolated` does not pass to `run_bounded`."""

    command: list  # the command, without the isolation's prefix
    sandboxed: bool  # under bubblewrap: only then is a run kept
    inputs: tuple  # the folders whose content the run depends on
    outputs: tuple  # the folders it writes its results into


def answer_runs(runs):
    """Wraps `runs` (plumbing/child_process.py as this interpreter imported it) so that its
    sandboxed runs are answered by `run_once`."""
    isolated, bounded = runs.run_isolated, runs.run_bounded
    bubblewrap = importlib.import_module("plumbing.isolation").BUBBLEWRAP
    asked = contextvars.ContextVar("asked", default=None)  # subtle: each thread its own

    @functools.wraps(isolated)
    def run_isolated(kind, command, cwd, timeout, *, reads=(), writes=(), results=(), **kwargs):
        told = asked.set(Asked(command, kind == bubblewrap, (*reads, *writes), tuple(results)))
        try:
            return isolated(
                kind, command, cwd, timeout, reads=reads, writes=writes, results=results, **kwargs
            )
        finally:
            asked.reset(told)

    @functools.wraps(bounded)
    def run_bounded(everything, cwd, timeout, **kwargs):
        run = asked.get()
        if run is None:  # not a run of run_isolated: run_bounded's own
            return bounded(everything, cwd, timeout, **kwargs)
        prefix = everything[: len(everything) - len(run.command)]
        sandboxed, inputs, outputs = run.sandboxed, run.inputs, run.outputs
        return run_once(
            runs, prefix, run.command, cwd, timeout, sandboxed=sandboxed, inputs=inputs,
            outputs=outputs, **kwargs,
        )  # fmt: skip

    runs.run_isolated, runs.run_bounded = run_isolated, run_bounded


def one_seed(cases):
    """Wraps `cases` (plumbing/generated_cases.py): `new_seed` gives the session's seed, folded
    below the lab's limit, where `LAB_HELD_OUT_SEED` names one."""
    drawn = cases.new_seed

    @functools.wraps(drawn)
    def new_seed():
        given = os.environ.get(SEED, "")
        return int(given) % cases.SEED_LIMIT if given.isdigit() else drawn()

    cases.new_seed = new_seed


def one_plan(relations):
    """Wraps `relations` (plumbing/relations.py): a plan of the held-out checks (`planned`, a
    tenth of a CPU second or more) is made once a session for its seed and count, and kept
    in the memo's folder for every process that asks the same (the session's seed was asked
    for in some sixty processes of one suite)."""
    made = relations.planned

    @functools.lru_cache(maxsize=32)  # as the lab's own: one plan a process, known by identity
    @functools.wraps(made)
    def planned(seed, count):
        memo = folder()
        if not memo:
            return made(seed, count)
        lab = lab_digest(Path(relations.__file__).resolve().parent.parent)
        entry = Path(memo) / f"plan-{hashlib.sha256(f'{lab} {seed} {count}'.encode()).hexdigest()}"
        try:
            with open(entry, "rb") as kept:
                return pickle.load(kept)
        except (OSError, EOFError, pickle.UnpicklingError):
            pass  # not kept yet
        plan = made(seed, count)
        _write(entry, pickle.dumps(plan))
        return plan

    relations.planned = planned


# the lab's modules wrapped, and how; subtle: each before another module imports its names
WRAPS = {
    "plumbing.child_process": answer_runs,
    "plumbing.generated_cases": one_seed,
    "plumbing.relations": one_plan,
}


def wrap(module):
    """Wraps `module`, one of WRAPS, once."""
    if not getattr(module, "wrapped_by_the_suite", False):
        WRAPS[module.__name__](module)
        module.wrapped_by_the_suite = True


# --- the memo -------------------------------------------------------------------------------------


def run_once(runs, prefix, command, cwd, timeout, *, sandboxed, inputs, outputs=(), **kwargs):
    """(exit code or None on a timeout, output) of `prefix + command`, as `run_bounded` of
    `runs` (plumbing/child_process.py) gives it.

    `prefix`: the isolation's (plumbing/isolation.py); `sandboxed`: whether that is
    bubblewrap (only then is a run kept); `inputs`: the folders whose content the run
    depends on (`cwd` among them); `outputs`: the folders it writes its results into (each
    file of them is kept and written again). Every folder is an absolute path.

    subtle: the key holds the command, not the prefix: the prefix names each folder on the
    way to a bound one (`--dir /tmp/...`), which differs for every temporary copy, and as
    root the run's own user, drawn anew for each; it is otherwise the same for every run.
    """
    everything = [*prefix, *command]
    memo = folder()
    if not (memo and sandboxed):
        return runs.bounded_run(everything, cwd, timeout, **kwargs)[:2]
    places = [str(Path(f)) for f in [*inputs, *outputs]]
    before = [tree_digest(f) for f in inputs]
    # what the output folders held before (a settings file the command reads, say)
    trees = before + [tree_digest(f) for f in outputs]
    if None in trees:
        return runs.bounded_run(everything, cwd, timeout, **kwargs)[:2]
    key = _key(runs, command, cwd, timeout, kwargs, places, trees)
    entry = Path(memo) / f"{key}.json"
    kept = _read(entry)
    if kept is not None:
        for place, files in zip(places[len(inputs) :], kept["outputs"], strict=True):
            for name, text in files.items():
                (Path(place) / name).write_text(_put_back(text, places), encoding="utf-8")
        return kept["exit_code"], _put_back(kept["output"], places)
    exit_code, output, dropped = runs.bounded_run(everything, cwd, timeout, **kwargs)
    unchanged = [tree_digest(f) for f in inputs] == before
    uncut = not dropped  # subtle: a tail is not the whole output another run would give
    written = [_written(place) for place in places[len(inputs) :]]
    if exit_code is not None and unchanged and uncut and None not in written:
        record = {"format": FORMAT, "exit_code": exit_code, "output": _placeholders(output, places)}
        record["outputs"] = [{n: _placeholders(t, places) for n, t in w.items()} for w in written]
        _write(entry, json.dumps(record).encode())
    return exit_code, output


def tree_digest(root):
    """One SHA-256 of every entry under `root`: its path, its kind and mode, a file's bytes,
    a link's target; links are never followed. None for a tree too deep, too large or not
    readable: a run on it is not kept."""
    digest, folders, seen = hashlib.sha256(), [""], 0
    try:
        while folders:
            here = folders.pop()
            if here.count(os.sep) >= TREE_DEPTH:
                return None
            with os.scandir(os.path.join(root, here)) as listing:
                entries = sorted(listing, key=lambda entry: entry.name)
            seen += len(entries)
            if seen > TREE_ENTRIES:
                return None
            for entry in entries:
                relative, info = os.path.join(here, entry.name), entry.stat(follow_symlinks=False)
                digest.update(os.fsencode(relative) + f"\0{info.st_mode:o}\0".encode())
                if stat.S_ISLNK(info.st_mode):
                    digest.update(os.fsencode(os.readlink(entry.path)))
                elif stat.S_ISREG(info.st_mode):
                    with open(entry.path, "rb") as file:
                        digest.update(hashlib.sha256(file.read()).digest())
                elif stat.S_ISDIR(info.st_mode):
                    folders.append(relative)
                digest.update(b"\0")
    except OSError:
        return None
    return digest.hexdigest()


def _key(runs, command, cwd, timeout, kwargs, places, trees):
    bounds = sys.modules["plumbing.bounds"]  # the lab's limits, as `runs` imported them
    limits = [bounds.FILE_SIZE_LIMIT, bounds.MEMORY_LIMIT, bounds.TMP_SIZE, bounds.PROCESS_LIMIT]
    words = [_placeholders(str(word), places) for word in command]
    shape = {"command": words, "cwd": _placeholders(str(Path(cwd).resolve()), places)}
    shape["timeout"] = timeout
    shape.update(options=sorted(map(str, kwargs.items())), trees=trees)
    shape.update(env=runs.minimal_env(), limits=limits)
    shape.update(lab=lab_digest(Path(runs.__file__).resolve().parent.parent))
    return hashlib.sha256(json.dumps([FORMAT, shape]).encode()).hexdigest()


@functools.cache
def lab_digest(lab):
    """One SHA-256 of the Python sources of the lab in the folder `lab` (its top folder and
    plumbing/): a copy of the lab with another sandbox, verdict or limit never shares a run
    with this one."""
    digest = hashlib.sha256()
    for path in sorted([*lab.glob("*.py"), *lab.glob("plumbing/*.py")]):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _placeholders(text, places):
    # longest first, so a folder inside another is not half replaced by its parent
    for number, place in sorted(enumerate(places), key=lambda item: -len(item[1])):
        text = text.replace(place, f"\0folder {number}\0")
    return text


def _put_back(text, places):
    for number, place in enumerate(places):
        text = text.replace(f"\0folder {number}\0", place)
    return text


def _written(place):
    """{name: text} of the files directly in `place`, or None when it holds anything else
    (a folder, a link, bytes that are not UTF-8): then the run is not kept."""
    files = {}
    for entry in os.scandir(place):
        if not entry.is_file(follow_symlinks=False):
            return None
        try:
            files[entry.name] = Path(entry.path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None
    return files


def _read(entry):
    try:
        record = json.loads(entry.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if record.get("format") == FORMAT else None


def _write(entry, data):
    """`data` (bytes) kept as `entry`. subtle: the suite's workers share the folder; a
    reader sees a whole entry or none."""
    with tempfile.NamedTemporaryFile("wb", dir=entry.parent, delete=False, suffix=".tmp") as file:
        file.write(data)
    os.replace(file.name, entry)
