"""Whether a recording may be run again here: by replay.py, or by record_run.py --fork.

Both programs run the code a recording holds, so both refuse it on the same two grounds:
`check_sample` (the sample's source and the task's test file are not the files it was made
with: its edits would land on other bytes) and `check_isolation` (its code would run where
only the network is cut, or nothing isolates it, and it is not one of the lab's own
recordings, unless the user said --no-isolate).

Not here: reading a recording (recording.py) or replaying it (replay.py).
"""

import hashlib

from harness.recording import sha256_file, shipped_hashes
from harness.recording_checks import RecordingError
from harness.tasks import source_file, task_file, task_of
from plumbing.isolation import BUBBLEWRAP, NETWORK_ONLY, chosen
from plumbing.sample import SAMPLE_REPO, SOURCE_FILE


def check_sample(recording, path):
    """RecordingError unless the sample's source and the test file of the recording's task
    are the files it was made with."""
    task = task_of(recording)
    given = {
        "tests_sha256": (hashlib.sha256(task.tests).hexdigest(), task_file(task)),
        "source_sha256": (_source_sha256(task), source_file(task)),
    }
    for field, (digest, name) in given.items():
        if digest != recording[field]:
            raise RecordingError(
                f"{path}: {name} is not the file this recording was made with "
                f"({field} differs); replay it with the sample it was recorded on"
            )


def _source_sha256(task):
    if task.source is None:
        return sha256_file(SAMPLE_REPO / SOURCE_FILE)
    return hashlib.sha256(task.source).hexdigest()


def shipped(path):
    """Whether `path` holds one of the lab's own recordings, byte for byte (its SHA-256 is
    in recordings/SHA256SUMS, which the scripts that make them write)."""
    try:
        return sha256_file(path) in shipped_hashes()
    except OSError:
        return False


def check_isolation(path, isolate):
    """RecordingError unless the code a recording holds may run here: under bubblewrap, or
    the lab's own recording, or the user said --no-isolate."""
    kind = chosen(isolate)
    if isolate and kind != BUBBLEWRAP and not shipped(path):
        # network-only cuts the network and nothing else: the code could still plant
        # what it likes in the lab's own files, so it counts as no isolation here
        here = "only the network would be cut" if kind == NETWORK_ONLY else "no isolation works"
        raise RecordingError(
            f"{path}: replaying a recording runs the code it holds, and {here} here; "
            "install bubblewrap (apt-get install bubblewrap), or add --no-isolate if you "
            "trust where it came from"
        )
