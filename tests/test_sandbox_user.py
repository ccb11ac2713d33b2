"""Nothing a run does outlives it or reaches another run, as root, in both isolations
(plumbing/sandbox_user.py, plumbing/isolation.py).

A correct repair that double-forks a `setsid` process leaves nothing running, and no later
run's copy changes; a `nobody` process started outside the lab cannot write into any folder
a live run hands to the tests, and while one is alive no run counts; two network-only runs
(whose code may search every folder) are never live at once; a network-only run dies with
a harness killed outright. The scenarios that start a process of `nobody` outside the lab
run in a PID namespace and /proc of their own (`in_own_pid_namespace`): the lab's check
finds processes of its own PID namespace only, so the suite's other workers never meet
them, and whatever a scenario leaves dies with it.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from plumbing import isolation
from plumbing.pytest_run import run_pytest
from plumbing.sample import SAMPLE_REPO, SOURCE_FILE, copy_sample
from tests.helpers import FAULTY_LINE, FIXED_LINE, LAB, needs_bubblewrap, processes_under, wait_for

FIXED = (SAMPLE_REPO / SOURCE_FILE).read_text().replace(FAULTY_LINE, FIXED_LINE)


@pytest.fixture(scope="module")
def as_root():
    if os.geteuid() != 0:
        pytest.skip("run as root to test the sandbox user (CI does)")


def network_only_path(tmp_path):
    """A PATH holding unshare and setpriv, not bwrap: the lab isolates with network-only."""
    unshare, setpriv = shutil.which("unshare"), shutil.which("setpriv")
    if not (unshare and setpriv) or subprocess.run([unshare, "--net", "true"]).returncode:
        pytest.skip("`unshare --net` does not work here")
    (tmp_path / "bin").mkdir()
    for program in (unshare, setpriv):
        (tmp_path / "bin" / Path(program).name).symlink_to(program)
    return str(tmp_path / "bin")


@pytest.fixture(params=[isolation.BUBBLEWRAP, isolation.NETWORK_ONLY])
def each_isolation(request, as_root, tmp_path):
    """(an isolation kind, a PATH under which the lab picks it): each that works here."""
    if request.param == isolation.BUBBLEWRAP:
        needs_bubblewrap()
        return isolation.BUBBLEWRAP, os.environ["PATH"]
    return isolation.NETWORK_ONLY, network_only_path(tmp_path)


def in_own_pid_namespace(script, path, *args, tmp=None):
    """What `script` (run from the lab's folder, with `args`) prints last, as JSON: run in a
    PID namespace and /proc of its own, with `path` as its PATH, every run a new one, and
    with `tmp`, that folder as the temporary one."""
    unshare = shutil.which("unshare")
    command = [unshare, "--pid", "--kill-child", "--mount-proc", "--", sys.executable, "-c"]
    env = {**os.environ, "PATH": path, "LAB_RUN_MEMO": ""}  # plumbing/run_memo.py: none
    env.update({"TMPDIR": str(tmp)} if tmp else {})
    done = subprocess.run([*command, script, *map(str, args)], cwd=LAB, env=env,
                          capture_output=True, text=True, timeout=180)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout.splitlines()[-1])


# --- a process a run starts ends with it ------------------------------------------------------

# The process a run leaves, once started: it says so in the copy, then for 30 s puts a
# passing path_rules.py into the copy named by its second argument whenever one is there.
SURVIVOR = """\
import os, pathlib, sys, time
pathlib.Path("survivor-started").touch()
target = pathlib.Path(sys.argv[2], "path_rules.py")
end = time.monotonic() + 30
while time.monotonic() < end:
    try:
        if target.read_text() != sys.argv[3]:
            target.with_name("planted.py").write_text(sys.argv[3])
            os.replace(target.with_name("planted.py"), target)
    except OSError:
        pass
    time.sleep(0.002)
"""
# At import of the repair: a double fork and a new session, then SURVIVOR; waits until it runs
DOUBLE_FORK = """\
import os as _os, sys as _sys, time as _time
if not _os.path.exists("survivor-started"):
    if _os.fork() == 0:
        _os.setsid()
        if _os.fork() == 0:
            _os.execv(_sys.executable, [_sys.executable, "-c", {survivor!r}, *{args!r}])
        _os._exit(0)
    _os.wait()
    _until = _time.monotonic() + 10
    while not _os.path.exists("survivor-started") and _time.monotonic() < _until:
        _time.sleep(0.01)
"""
# A correct repair that leaves SURVIVOR, run; then the faulty sample in a later copy, run.
LEAVE_A_SURVIVOR = """\
import json, os, sys, time
from pathlib import Path
from plumbing import isolation
from plumbing.pytest_run import run_pytest
from plumbing.sample import SOURCE_FILE, copy_sample
work, token, repair = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
first = copy_sample(work)
(first / SOURCE_FILE).write_text(repair)
ran = run_pytest(first)
def left():
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and token.encode() in (entry / "cmdline").read_bytes():
                found.append(entry.name)
        except OSError:  # it ended while it was read
            pass
    return [pid for pid in found if pid != str(os.getpid())]  # the token is this one's too
until = time.monotonic() + 10  # bubblewrap ends before its killed processes are reaped
while left() and time.monotonic() < until:
    time.sleep(0.05)
later = copy_sample(work / "later")
sample = (later / SOURCE_FILE).read_bytes()
again = run_pytest(later)
print(json.dumps({
    "kind": isolation.isolation_kind(), "started": (first / "survivor-started").exists(),
    "first": ran["verdict"], "left": left(), "later": again["verdict"],
    "reason": again.get("reason"), "unchanged": (later / SOURCE_FILE).read_bytes() == sample,
}))
"""


def test_a_repair_that_double_forks_a_setsid_process_leaves_nothing_and_no_later_run_changes(
    each_isolation, tmp_path
):
    # The finding: under network-only, as root, such a process stayed alive as nobody, able
    # to read every file, and rewrote path_rules.py in every later run's copy: a later run
    # whose model edited nothing passed. Now the run's PID namespace takes it with it.
    kind, path = each_isolation
    token, work = f"survivor-{os.getpid()}-{id(tmp_path)}", tmp_path / "work"
    work.mkdir(mode=0o700)
    args = [token, str(work / "later" / "repo"), FIXED]
    repair = DOUBLE_FORK.format(survivor=SURVIVOR, args=args) + FIXED
    found = in_own_pid_namespace(LEAVE_A_SURVIVOR, path, work, token, repair)
    assert (found["kind"], found["started"]) == (kind, True), found
    assert found["left"] == [], found  # nothing of the run is left running
    assert found["first"] == "passed", found  # a correct repair: nothing else to fail it
    assert found["unchanged"] and found["later"] == "failed", found  # the sample's own bug
    assert found["reason"] == "not every test passed", found


# --- a process of nobody outside the lab ---------------------------------------------------

# A process of `nobody` started outside the lab: says "ready", then for 60 s tries to put a
# passing path_rules.py into every folder a run may hand the tests (the scratch folders'
# names are the lab's; their inner folders guessed, as they cannot be listed), and to write
# into the working folder of every process it sees; it names each place it wrote.
WRITER = """\
tmp=$1 repair=$2
echo ready
end=$(($(date +%s) + 60))
while [ "$(date +%s)" -lt "$end" ]; do
    for folder in "$tmp"/agent-lab-*; do
        for place in "$folder" "$folder/repo" "$folder/held-out" "$folder/report"; do
            if printf %s "$repair" 2>/dev/null >"$place/planted.py" &&
                mv -f "$place/planted.py" "$place/path_rules.py" 2>/dev/null; then
                echo "path $place"
            fi
        done
    done
    for cwd in /proc/[0-9]*/cwd; do
        if true 2>/dev/null >"$cwd/planted-through-proc"; then echo "proc $cwd"; fi
    done
    sleep 0.005
    [ -n "$looped" ] || { looped=1; echo looped; }
done
"""
# The faulty sample judged by the lab's verdict while WRITER runs as nobody beside it.
JUDGE_BESIDE_THE_WRITER = """\
import json, subprocess, sys, tempfile
from pathlib import Path
from plumbing import isolation
from plumbing.sample import copy_sample
from verdict import independent_verdict
work, setpriv, writer, repair = Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
nobody = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
started = subprocess.Popen([*nobody, "/bin/sh", "-c", writer, "writer", tempfile.gettempdir(),
                            repair], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                           env={"PATH": "/usr/bin:/bin"})  # its own: the lab's may be one folder
assert started.stdout.readline() == "ready\\n"
verdict = independent_verdict(copy_sample(work))
started.kill()
wrote = started.stdout.read().splitlines()
print(json.dumps({
    "kind": isolation.isolation_kind(), "writer": started.pid, "verdict": verdict["verdict"],
    "reason": verdict.get("reason"), "held_out": verdict["held_out"]["first_failure"],
    "through_paths": [line for line in wrote if line.startswith("path ")],
    "through_proc": [line for line in wrote if line.startswith("proc ")],
    "looped": "looped" in wrote,
}))
"""


def test_a_nobody_process_outside_the_lab_cannot_write_a_live_runs_folders_nor_pass_it(
    each_isolation, tmp_path
):
    # The finding: the report's folder and the held-out folder were nobody's, straight in
    # /tmp, so any process of nobody could write them; and one that outlived a run rewrote
    # the copies of later runs. Now each sits inside a folder only root may enter, and a
    # process of nobody alive outside every sandbox makes the run not count.
    kind, path = each_isolation
    setpriv = shutil.which("setpriv")
    # a temporary folder as /tmp is, for this run alone: the machine's /tmp may hold the
    # folders of another program's (or another lab's) runs, which are not this test's
    tmp = Path(tempfile.mkdtemp(prefix="lab-tmp-"))
    try:
        os.chmod(tmp, 0o1777)
        args = (tmp_path, setpriv, WRITER, FIXED)
        found = in_own_pid_namespace(JUDGE_BESIDE_THE_WRITER, path, *args, tmp=tmp)
    finally:
        shutil.rmtree(tmp)
    assert found["kind"] == kind and found["looped"], found
    assert found["through_paths"] == [], found
    pid = found["writer"]
    outsider = f"a process of the sandbox user nobody runs outside the sandbox (pid {pid}, sh)"
    assert found["verdict"] == "failed" and found["reason"].startswith(outsider), found
    assert found["held_out"].startswith(outsider), found
    if kind == isolation.NETWORK_ONLY:  # its code holds a capability the writer lacks
        assert found["through_proc"] == [], found


def test_a_folder_is_handed_to_the_tests_only_inside_a_folder_only_root_may_enter(
    as_root, tmp_path
):
    # a folder every user may enter, with no folder only root may enter on the way to it
    open_to_all = Path(tempfile.mkdtemp(prefix="agent-lab-open-"))
    try:
        os.chmod(open_to_all, 0o755)
        with pytest.raises(ValueError, match="must sit inside a folder only root may enter"):
            isolation.isolation_prefix(isolation.BUBBLEWRAP, (open_to_all / "copy",))
    finally:
        open_to_all.rmdir()
    writable, readable = tmp_path / "copy", tmp_path / "held-out"  # tmp_path is root's, 0700
    writable.mkdir(mode=0o700)
    readable.mkdir(mode=0o700)
    isolation.isolation_prefix(isolation.BUBBLEWRAP, (writable,), (readable,))
    assert (writable.stat().st_uid, writable.stat().st_mode & 0o777) == (65534, 0o770)
    # read, never written: still root's, and open to read
    assert (readable.stat().st_uid, readable.stat().st_mode & 0o777) == (0, 0o755)


# --- network-only: one live run at a time, and none without its harness ----------------------

# At import: when it began and ended, by the machine's one monotonic clock, into the copy
BEGUN_AND_ENDED = (
    "import pathlib as _p, time as _t\n_begun = _t.monotonic()\n_t.sleep(1)\n"
    "_p.Path('times').write_text(f'{_begun} {_t.monotonic()}')\n"
)


def test_two_network_only_runs_are_never_live_at_once(as_root, tmp_path, monkeypatch):
    # a network-only run's nobody may search every folder: beside another live run it could
    # write that run's copy, so each holds the machine's sandbox lock while it runs
    monkeypatch.setenv("PATH", network_only_path(tmp_path))
    repos = [copy_sample(tmp_path / name) for name in ("a", "b")]
    for repo in repos:
        (repo / SOURCE_FILE).write_text(BEGUN_AND_ENDED + FIXED)
    isolation.isolation_kind.cache_clear()
    try:
        assert isolation.isolation_kind() == isolation.NETWORK_ONLY
        runs = [threading.Thread(target=run_pytest, args=(repo,)) for repo in repos]
        for run in runs:
            run.start()
        for run in runs:
            run.join()
    finally:
        isolation.isolation_kind.cache_clear()
    (a_begun, a_ended), (b_begun, b_ended) = [
        map(float, (repo / "times").read_text().split()) for repo in repos
    ]
    assert a_ended <= b_begun or b_ended <= a_begun, ((a_begun, a_ended), (b_begun, b_ended))


def test_a_network_only_run_dies_with_a_harness_killed_outright(as_root, repo, tmp_path):
    # bubblewrap's --die-with-parent, for unshare: setpriv's --pdeathsig (isolation.UNSHARE)
    path = network_only_path(tmp_path)
    (repo / SOURCE_FILE).write_text(
        "import pathlib, time\npathlib.Path('started').touch()\ntime.sleep(60)\n" + FIXED
    )
    harness = subprocess.Popen(
        [sys.executable, "-c", "import sys; from repo_tools import RepoTools; "
         "RepoTools(sys.argv[1]).invoke('run_tests', {})", str(repo)],
        cwd=LAB, env={**os.environ, "PATH": path, "LAB_RUN_MEMO": ""},
    )  # fmt: skip
    try:
        assert wait_for(lambda: (repo / "started").exists(), 20), "the tests never started"
        assert processes_under(repo)
        harness.kill()  # SIGKILL: no finally, no group kill
        harness.wait()
        assert wait_for(lambda: not processes_under(repo)), processes_under(repo)
    finally:
        harness.kill()
        for pid in processes_under(repo):
            os.kill(pid, signal.SIGKILL)
