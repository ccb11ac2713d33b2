"""Helpers shared by the lab's tests: processes, pipes, waiting, and altered recordings."""

import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

from readonly_tools import CHILD_CODE

LAB = Path(__file__).resolve().parent.parent  # the lab's own folder


def sigint_default():
    """For Popen(preexec_fn=...): a child that Ctrl-C reaches even if the suite ignores it.

    subtle: a shell runs background jobs with SIGINT ignored, a child inherits that, and
    Python then installs no KeyboardInterrupt handler; the Ctrl-C tests would hang or lie.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def wait_until_gone(pid, seconds=5.0):
    """True once `pid` has exited (a zombie waiting for init to reap it counts as gone)."""
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


# --- shared by several test files (issue 15): one definition each --------------------------------

# The line of sample_repo/path_rules.py that holds the bug, and the line that fixes it.
FAULTY_LINE = 'parts = path.split("/")'
FIXED_LINE = 'parts = path.replace("\\\\", "/").split("/")'


# recordings/extensions/ and recordings/tasks/ hold the real recordings of measurements
# (docs/hooks.md, docs/tasks.md): in shape they are live/'s, so the tests that show or fuzz
# every shipped recording leave them out (a page, a snapshot, fuzz mutants each);
# test_recorded.py and test_tasks.py replay one of each arm; `lab.py replay PATH` any.
MEASURED = LAB / "recordings" / "extensions"
LADDER_MEASURED = LAB / "recordings" / "tasks"
SHOWN = sorted(
    p
    for p in (LAB / "recordings").rglob("*.json")
    if MEASURED not in p.parents and LADDER_MEASURED not in p.parents
)


SECRET = "TOP-SECRET-OUTSIDE"  # what a file outside a tool's root holds: never in a result


def wait_for(condition, seconds=10.0):
    """True once `condition()` holds, False after `seconds`: for events another thread
    causes (a server noticing a hang-up). The bound is generous; only a failure waits it out."""
    until = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > until:
            return False
        time.sleep(0.02)
    return True


def run(script, repo, **options):
    """(chat, events): the loop over a ScriptedChat of `script`, with the real RepoTools on
    `repo`; `options` go to agent_events (max_turns, deadline, clock, ...)."""
    from agent_loop import TASK, agent_events
    from repo_tools import RepoTools
    from tests.scripted_model import ScriptedChat

    chat = ScriptedChat(script)
    return chat, list(agent_events(chat, RepoTools(repo), TASK, **options))


def of_type(events, kind):
    """The events of one type, in order."""
    return [event for event in events if event["type"] == kind]


class HeldStream:
    """A chunk iterator that is not a generator: only an explicit close() closes it."""

    def __init__(self, chunks, on_next=None):
        self.chunks, self.on_next, self.closed = iter(chunks), on_next, False

    def __iter__(self):
        return self

    def __next__(self):
        if self.on_next:
            self.on_next()
        return next(self.chunks)

    def close(self):
        self.closed = True


# How long a hostile stand-in holds out; also the --timeout a deadline must beat.
STALL = 30.0


def run_with(chat_for, script, repo, seconds=1.0):
    """Run the loop over `script` with a `seconds` deadline shared by adapter and loop.

    Returns (events, elapsed seconds). `chat_for(deadline)` makes the adapter.
    """
    from agent_loop import TASK, agent_events
    from plumbing.limits import Deadline
    from repo_tools import RepoTools

    deadline = Deadline(seconds)
    chat = chat_for(deadline)
    started = time.monotonic()
    events = list(agent_events(chat, RepoTools(repo, deadline=deadline), TASK, deadline=deadline))
    return events, time.monotonic() - started


def ollama_chat(server):
    """For run_with: the Ollama adapter on `server` (a stand-in), its timeout STALL."""
    from local_model import LocalModel

    return lambda deadline: LocalModel(host=server.host, timeout=STALL, deadline=deadline)


def openai_chat(server):
    """For run_with: the OpenAI-compatible adapter on `server`, its timeout STALL."""
    from openai_model import OpenAICompatibleModel
    from tests.openai_test_server import TEST_MODEL

    return lambda deadline: OpenAICompatibleModel(
        TEST_MODEL, server.base_url, timeout=STALL, deadline=deadline
    )


# The edit that repairs the sample, as a scripted attempt sends it.
FIX = {"old": 'path.split("/")', "new": 'path.replace("\\\\", "/").split("/")'}


def passing(tag, gate=None):
    """A scripted attempt (for ConversationServer) that repairs the sample: one edit, then
    a final message."""
    from tests.ollama_test_server import call, chunk, reply

    return [
        reply(
            chunk(thinking=f"Plan {tag}: normalise the separators."),
            chunk(tool_calls=[call("replace_text", **FIX)]),
            chunk(done=True),
            gate=gate,
        ),
        reply(chunk("Fixed."), chunk(done=True)),
    ]


def failing(tag, gate=None):
    """A scripted attempt that claims success without any edit."""
    from tests.ollama_test_server import chunk, reply

    return [reply(chunk(thinking=f"Plan {tag}: claim."), chunk("All pass."), chunk(done=True),
                  gate=gate)]  # fmt: skip


def messages_of(body):
    """(role, content) of each message of a request body the stand-in kept."""
    return [(m["role"], m.get("content", "")) for m in body["messages"]]


def record(*args, env=None):
    """record_run.py ARGS, its main() in this process (tests/in_process.py): a
    CompletedProcess, as for the program."""
    from tests.in_process import run_cli

    return run_cli("record_run.py", *args, env=env)


def ask(*args, stdin=""):
    """(exit code, stdout, stderr) of ask.py ARGS fed `stdin`, its main() in this process
    (tests/in_process.py), as the program would answer."""
    from tests.in_process import run_cli

    done = run_cli("ask.py", *args, stdin=stdin)
    return done.returncode, done.stdout, done.stderr


def replay(path, **options):
    """(outcome, printed text) of replaying the recording at `path`, as replay.py does."""
    import io

    from replay import replay_one

    out = io.StringIO()
    return replay_one(path, out=out, **options), out.getvalue()


def altered(tmp_path, change, name="altered.json"):
    """A copy of the shipped repair recording with `change(recording)` applied."""
    from harness.recording import RECORDINGS, load, save

    recording = load(RECORDINGS / "repair.json")
    change(recording)
    save(tmp_path / name, recording)
    return tmp_path / name


def lab_copy(tmp_path, *folders):
    """A copy of the lab's modules (its *.py files, plumbing/, harness/ and extensions/), of
    what they read when they start (sample_repo/ and tasks/) and of `folders`: a lab whose
    recordings/ can be changed without touching this one's."""
    import shutil

    copy = tmp_path / "lab"
    for folder in dict.fromkeys(
        ("plumbing", "harness", "extensions", "sample_repo", "tasks", *folders)
    ):
        shutil.copytree(LAB / folder, copy / folder, ignore=shutil.ignore_patterns("__pycache__"))
    for module in LAB.glob("*.py"):
        shutil.copy2(module, copy / module.name)
    return copy


def page_blocks(page, heading):
    """The indented blocks of docs/`page`'s section `heading`, unindented, in order: the
    code a page writes, read from the page itself so that the two cannot drift apart."""
    text = (LAB / "docs" / page).read_text(encoding="utf-8")
    section = text.split(f"\n## {heading}\n")[1].split("\n## ")[0]
    found, block = [], []
    for line in [*section.splitlines(), "end"]:
        if line.startswith("    ") or (block and not line):
            block.append(line[4:])
        elif block:
            found.append("\n".join(block).strip("\n") + "\n")
            block = []
    return found


def with_listing(lab, listing):
    """The composer of the lab copy `lab` (extensions/__init__.py) with its EXTENSIONS
    statement replaced by `listing`, a page's import line and list line."""
    imported, listed = [line for line in listing.splitlines() if line]
    composer = lab / "extensions" / "__init__.py"
    lines = composer.read_text(encoding="utf-8").splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("EXTENSIONS = "))
    end = next(i for i in range(at, len(lines)) if lines[i].split("  #")[0].endswith(")"))
    composer.write_text("\n".join([*lines[:at], imported, listed, *lines[end + 1 :]]) + "\n")


def recorded_in(lab, turns, output, *flags):
    """record_run.py of the lab copy `lab`, with `flags`, against the Ollama stand-in serving
    `turns`, then its replay.py of the recording at `output`, each run from the folder above
    the copy: (the finished record_run.py, the request bodies, the finished replay.py)."""
    from tests.ollama_test_server import OllamaTestServer

    def run(script, *args):
        return subprocess.run([sys.executable, str(lab / script), *args], capture_output=True,
                              text=True, cwd=lab.parent, timeout=240)  # fmt: skip

    with OllamaTestServer(turns) as server:
        done = run("record_run.py", "--host", server.host, *flags, "--output", str(output))
        bodies = server.chat_bodies()
    return done, bodies, run("replay.py", str(output))


def folder_setting(tmp_path, monkeypatch, name, setting):
    """A new folder `name` in `tmp_path`, named by the environment variable `setting` for
    the test (the suite's memo's, or its code cache's)."""
    folder = tmp_path / name
    folder.mkdir()
    monkeypatch.setenv(setting, str(folder))
    return folder


def needs_bubblewrap():
    """Skip, saying why, where bubblewrap cannot isolate the tests (CI installs it)."""
    import pytest

    from plumbing import isolation

    if isolation.isolation_kind() != isolation.BUBBLEWRAP:
        pytest.skip("bubblewrap does not work here (apt-get install bubblewrap)")


def tree_snapshot(*tops):
    """Every entry under `tops` (links not followed): type, mode, size, mtime, and bytes."""
    seen = {}
    for top in tops:
        for folder, subfolders, files in os.walk(top):
            for name in [".", *subfolders, *files]:
                path = os.path.normpath(os.path.join(folder, name))
                info = os.lstat(path)
                entry = (info.st_mode, info.st_size, info.st_mtime_ns)
                if stat.S_ISREG(info.st_mode):
                    entry += (Path(path).read_bytes(),)
                elif stat.S_ISLNK(info.st_mode):
                    entry += (os.readlink(path),)
                seen[path] = entry
    return seen


# --- processes and pipes, for the tests that run the CLIs as a user would ------------------


def live_processes(matches):
    """PIDs of live (not zombie) processes for which `matches(its /proc folder, the fields of
    its stat after the command name)` holds; one that ends while it is looked at is left out.

    Read from the host's /proc, so it sees processes in bubblewrap's PID namespace too."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():  # /proc/self and thread-self name this process again
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if fields[0] != "Z" and matches(entry, fields):
                found.append(int(entry.name))
        except (OSError, IndexError):
            continue
    return found


def processes_under(directory):
    """PIDs of live processes whose working directory is inside `directory`."""
    return live_processes(lambda entry, _: os.readlink(entry / "cwd").startswith(str(directory)))


def open_under(folder):
    """The targets of this process's open descriptors that lie under `folder`, sorted: only
    a test's own tree, since another thread of the test process opens and closes others."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            found.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:  # closed while the list was read
            continue
    return sorted(link for link in found if link.startswith(str(folder)))


def search_children(parent):
    """PIDs of the live search children (readonly_tools' CHILD_CODE) that `parent` started.

    subtle: between fork and exec a child still runs the parent's program, with its argv and
    its signal handlers; a signal sent then is taken by that handler and lost at exec. Only
    a process whose own argv holds CHILD_CODE has become the search child."""
    return live_processes(
        lambda entry, fields: (
            int(fields[1]) == parent
            and CHILD_CODE.encode() in (entry / "cmdline").read_bytes().split(b"\0")
        )
    )


def start_cli(args, tmp_path, own_group=False):
    """(process, lines): a lab CLI (`args[0]` the script) running with its temporary copies
    in `tmp_path`, Ctrl-C reaching it, and its stdout lines collected as they come."""
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    process = subprocess.Popen(
        [sys.executable, *map(str, args)],
        cwd=LAB,
        env=env,
        preexec_fn=sigint_default,
        start_new_session=own_group,  # then the test can press Ctrl-C as a terminal does
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines = []
    threading.Thread(target=lambda: lines.extend(process.stdout), daemon=True).start()
    return process, lines


class Reader:
    """Collects a pipe's bytes in a thread, so a test can wait for text without blocking."""

    def __init__(self, pipe):
        self.data, self.pipe = b"", pipe
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        while piece := os.read(self.pipe.fileno(), 4096):
            self.data += piece

    def wait_for(self, text, start=0, timeout=15):
        """The offset just after `text`, first found at or after `start`."""
        until = time.monotonic() + timeout
        while (found := self.data.find(text.encode(), start)) < 0:
            assert time.monotonic() < until, f"{text!r} never came; got {self.data!r}"
            time.sleep(0.02)
        return found + len(text)


def as_format_7(recording):
    """`recording` (an /8 one, loaded) as format /7 would have held it: its format renamed,
    and its verdicts' held-out checks asked as /7 asks them (the draw settled by agreement,
    on the recorded seed), so only what else /8 added tells the two apart."""
    from harness.recording_format import NO_HOOK_TESTS
    from plumbing.generated_cases import AGREED
    from plumbing.held_out import held_out_checks
    from plumbing.sample import SAMPLE_FILES, SOURCE_FILE

    recording["format"] = NO_HOOK_TESTS
    sources = {"starting_tests": SAMPLE_FILES[SOURCE_FILE], "final_tests": None}
    for verdict, source in sources.items():
        held = recording[verdict]["held_out"]
        source = source or recording["final_source"].encode()
        recording[verdict]["held_out"] = held_out_checks(source, seed=held["seed"], draw=AGREED)
    return recording


def record_run_on_a_terminal(*arguments, timeout=60):
    """record_run.py started as a user would on a terminal: its stdout a real pseudo-terminal,
    its stderr piped; (its exit code, everything the terminal showed, its stderr)."""
    import pty

    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "record_run.py", *map(str, arguments)],
        cwd=LAB, stdout=follower, stderr=subprocess.PIPE,
    )  # fmt: skip
    os.close(follower)
    try:
        shown = read_terminal(leader)
        process.wait(timeout=timeout)
    finally:
        os.close(leader)
    return process.returncode, bytes(shown), process.stderr.read()


def read_terminal(leader):
    """Everything written to a pseudo-terminal, read from its `leader` end until every writer
    of it has gone (EIO) or it ends."""
    shown = bytearray()
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # EIO: every writer of the terminal has gone
            break
        if not data:
            break
        shown += data
    return shown
