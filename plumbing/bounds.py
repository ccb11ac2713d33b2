"""What the edited code may use of the machine: the size of a file, memory, and /tmp.

Every child that runs model-edited code (the tests, the held-out checks) starts with
`set_limits` run between fork and exec (child_process.py), and whatever it starts inherits
them: no file it writes grows past FILE_SIZE_LIMIT (the write past it fails with "File too
large": Python ignores the SIGXFSZ signal that would otherwise kill it), and its address
space stays under MEMORY_LIMIT (an allocation past it fails with MemoryError). Under
bubblewrap its private /tmp is memory that holds TMP_SIZE at most (isolation.py), so a
flood of small files cannot fill the machine's memory either. As root, where each run's
code is a user of its own, that user may hold PROCESS_LIMIT processes at once (a fork past
it fails with BlockingIOError), so a fork bomb stops. A normal run of the sample's
tests peaks at about 32 MB of address space and writes a report of a few KB: each limit
leaves it a margin of sixteen times or more.

`named(verdict, output)` and `note(error)` name the limit a run's output or an error says
it went past, so that a verdict can say which.

Not here: time (child_process.py kills a run after its time limit), or the number of files
and their total on disk: many files each under the limit can still add up, in the copy or,
unisolated, in the machine's /tmp, for as long as the run's 15 s last (docs/defences.md).
"""

import os
import resource

FILE_SIZE_LIMIT = 16 * 2**20  # bytes of one file the edited code writes, at most
MEMORY_LIMIT = 512 * 2**20  # bytes of address space of each of its processes
TMP_SIZE = 32 * 2**20  # bytes the sandbox's /tmp holds in all: room for one file at its limit
# Processes of a run's user at once, as root (each run is a user of its own:
# sandbox_user.py). The kernel counts them per user, so each run has a count of its own (a
# test run is 3 or 4 processes), and a fork bomb in one holds back no other run.
PROCESS_LIMIT = 256

# What a run prints when it went past each limit, and how a reason names that limit.
SIGNS = (
    ("File too large", f"the file-size limit of {FILE_SIZE_LIMIT >> 20} MB a file"),
    ("MemoryError", f"the memory limit of {MEMORY_LIMIT >> 20} MB of address space"),
    ("BlockingIOError: [Errno 11]", f"the limit of {PROCESS_LIMIT} processes of its user"),
    (
        "No space left on device",
        f"the space of the sandbox's /tmp ({TMP_SIZE >> 20} MB) or the disk",
    ),
)


def set_limits():
    """For Popen(preexec_fn=...): the limits above, on the child, soft and hard; as root,
    the number of processes too (PROCESS_LIMIT).

    subtle: the hard limit too, so the edited code cannot raise them again (a process
    running as root unisolated can: it holds CAP_SYS_RESOURCE; under bubblewrap none does).
    A hard limit lower than ours, set by the machine, is kept.
    """
    limits = [(resource.RLIMIT_FSIZE, FILE_SIZE_LIMIT), (resource.RLIMIT_AS, MEMORY_LIMIT)]
    if os.geteuid() == 0:  # the code will run as the run's own user; root is never held
        limits.append((resource.RLIMIT_NPROC, PROCESS_LIMIT))
    for which, limit in limits:
        hard = resource.getrlimit(which)[1]
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(which, (limit, limit))


def limit_reached(text):
    """'the file-size limit of 16 MB a file', or the other limit that `text` (a run's output,
    an error) shows the run went past, or None.

    Read from the text: edited code can print a sign falsely, which only fails its own
    verdict with the wrong limit named; it cannot make a run pass.
    """
    for sign, limit in SIGNS:
        if sign in text:
            return limit
    return None


def named(verdict, output):
    """`verdict` (a test run's, see pytest_run.judge), its reason saying which limit the run
    went past when it failed and its `output` shows one."""
    limit = limit_reached(output)
    if verdict["verdict"] != "failed" or limit is None:
        return verdict
    return {**verdict, "reason": f"{verdict['reason']} (the run went past {limit})"}


def note(text):
    """' (past the memory limit of 512 MB of address space)' when `text` shows a limit was
    reached, else ''."""
    limit = limit_reached(text)
    return f" (past {limit})" if limit else ""
