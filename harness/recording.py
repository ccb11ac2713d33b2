"""Recordings: what a run saves, and how it is saved and read back.

`build` makes the recording of one run, every field in the order it is saved, each given
by its name; `save` writes it atomically, so a crash mid-save leaves any earlier file
intact, and writes whatever a server sent as valid JSON: a lone surrogate as a JSON
escape, NaN or infinity as null (the text kept aside). `load` reads a file back and
refuses one that is not a recording, naming the field that is wrong
(harness/recording_checks.py). Also here: where the lab's recordings and a learner's
runs are kept, and the list of the shipped ones' SHA-256.

Not here: what each format holds (harness/recording_format.py), the checks
(harness/recording_checks.py), recording and replaying a model's stream
(harness/chats.py), talking to a model (local_model.py), comparing a replay with its
recording (harness/divergence.py), printing (harness/console.py). This module imports
neither the SDK nor the network.
"""

import datetime
import hashlib
import json
import os
import re
import tempfile
from pathlib import Path

from harness.recording_checks import RecordingError, checked, out_of_range
from harness.recording_format import FORMAT
from harness.tasks import assessed
from plumbing.redact import redact

RECORDINGS = Path(__file__).resolve().parent.parent / "recordings"  # the lab's own
# The learner's own: record_run.py saves a live run, a series or a fork here unless told
# otherwise, apart from the lab's (git ignores the folder; replay with no argument skips it).
RUNS = RECORDINGS.parent / "runs"


def sha256_file(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


SHIPPED = RECORDINGS / "SHA256SUMS"  # the lab's own recordings: sha256sum's format


def shipped_hashes():
    """The SHA-256 of every recording the lab ships (none when the list is missing)."""
    try:
        return {line.split()[0] for line in SHIPPED.read_text().splitlines() if line.strip()}
    except OSError:
        return set()


def write_shipped_hashes():
    """Write recordings/SHA256SUMS for every recording under recordings/ as it is now."""
    lines = [
        f"{sha256_file(path)}  {path.relative_to(RECORDINGS).as_posix()}"
        for path in sorted(RECORDINGS.rglob("*.json"))
    ]
    SHIPPED.write_text("\n".join(lines) + "\n")


LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def json_text(recording):
    """`recording` as indented JSON text that is valid UTF-8 and valid JSON, whatever it holds.

    subtle: a server can send NaN or 1e400 (parsed as infinity), which JSON cannot hold, or
    a counter of 400 digits, which no reader can show: such a number is saved as null, and
    its text kept in `non_finite_numbers` with where it was. A lone surrogate cannot be
    written as UTF-8; as a JSON escape it round-trips.
    """
    found = []
    recording = _in_range(recording, "", found)
    if found:
        recording["non_finite_numbers"] = found
    text = json.dumps(recording, indent=2, ensure_ascii=False, allow_nan=False)
    return LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _number_text(value):
    if isinstance(value, float):
        return json.dumps(value)  # NaN, Infinity or -Infinity
    try:
        digits = str(abs(value))
    except ValueError:  # past Python's limit on converting an int to text
        return "an integer of more than 4,300 digits"
    sign = "-" if value < 0 else ""
    return f"an integer of {len(digits):,} digits ({sign}{digits[:12]}...)"


def _in_range(value, where, found):
    if out_of_range(value):
        found.append({"at": where.lstrip("."), "text": _number_text(value)})
        return None
    if isinstance(value, dict):
        return {k: _in_range(v, f"{where}.{k}", found) for k, v in value.items()}
    if isinstance(value, list):
        return [_in_range(v, f"{where}[{i}]", found) for i, v in enumerate(value)]
    return value


def save(path, recording):
    """Write `recording` as indented UTF-8 JSON, atomically (temp file, then rename).

    Redacted as a whole, not only its tool results: a server may echo the API key it was
    sent in an error message, which then sits in `stop.error` and in `model_calls`."""
    text = json_text(redact(recording))
    path = Path(path)
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise OSError(f"{path} is not a regular file; a recording replaces only a regular file")
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text + "\n")
            file.flush()
            os.fsync(file.fileno())
        os.chmod(temporary, 0o644)  # mkstemp makes it private; a recording is shared data
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def build(
    *,
    source,
    description,
    model,
    task,
    system,
    max_turns,
    deadline,
    isolation,
    model_calls,
    messages,
    events,
    stop,
    starting_tests,
    final_tests,
    tests_sha256,
    source_sha256,
    tests_unchanged,
    final_source,
    workdir,
    loop_seconds,
    text_calls,
    task_name,
    fork,
    edits_told,
    extensions,
):
    """One run as a recording: every field, in the order it is saved (those load() requires:
    REQUIRED in harness/recording_checks.py).

    `final_tests` None means the run was interrupted (Ctrl-C in the loop or in the final
    tests); `api` is read from the model's description ("ollama" unless it says otherwise).
    `loop_seconds`, the loop's wall time, counts what no event times: a turn cut off before
    its end (`incomplete_model_turn`, `deadline`) has no `model_done` to carry its seconds.
    `text_calls`: whether the loop ran a call written as text (--text-calls); `edits_told`:
    whether the edit tool said what each edit changed and refused one that changed nothing
    (repo_tools.py; absent: it did not, as before); `task_name`:
    which task it was given (harness/tasks.py); `fork`: what a fork is (harness/fork.py);
    `extensions`: those the run turned on and what they decided (harness/decisions.py).
    `outcome`, last, is what an impossible task's run did (harness/tasks.py), else null.
    """
    recording = {
        "format": FORMAT,
        "source": source,
        "description": description,
        "recorded_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "model": model,
        "api": model.get("api", "ollama"),
        "task_name": task_name,
        "task": task,
        "system": system,
        "max_turns": max_turns,
        "text_calls": text_calls,
        **({"edits_told": True} if edits_told else {}),
        "deadline": deadline,
        "isolation": isolation,
        **({} if fork is None else {"fork": fork}),
        **({} if extensions is None else {"extensions": extensions}),
        "model_calls": model_calls,
        "messages": messages,
        "events": events,
        "stop": stop,
        "starting_tests": starting_tests,
        "final_tests": final_tests,
        "interrupted": final_tests is None,
        "tests_sha256": tests_sha256,
        "source_sha256": source_sha256,
        "tests_unchanged": tests_unchanged,
        "final_source": final_source,
        "workdir": workdir,
        **({} if loop_seconds is None else {"loop_seconds": loop_seconds}),
    }
    found = assessed(recording)  # an impossible task's outcome, kept in words beside its facts
    return {**recording, "outcome": found and found.outcome}


def load(path):
    """Read and check a recording; RecordingError names the file and the wrong field."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as error:
        raise RecordingError(f"{path}: cannot be read ({error.strerror})") from None
    except (UnicodeDecodeError, ValueError) as error:  # also an integer of 5,000 digits
        raise RecordingError(f"{path}: not a JSON recording ({error})") from None
    except RecursionError:
        raise RecordingError(f"{path}: not a recording (nested too deeply to read)") from None
    return checked(data, path)  # harness/recording_checks.py
