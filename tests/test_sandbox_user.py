"""Nothing a run does outlives it or reaches another run, as root, in both isolations
(plumbing/sandbox_user.py, plumbing/isolation.py).

A correct repair that double-forks a `setsid` process leaves nothing running, and no later
run's copy changes; a folder is handed to the tests only inside a folder only root may
enter; a network-only run dies with a harness killed outright. The scenario that leaves a
process runs in a PID namespace and /proc of its own (`in_own_pid_namespace`), so whatever
it leaves dies with it.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from plumbing import isolation
from plumbing.sample import SAMPLE_REPO, SOURCE_FILE
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


def in_own_pid_namespace(script, path, *args):
    """What `script` (run from the lab's folder, with `args`) prints last, as JSON: run in a
    PID namespace and /proc of its own, with `path` as its PATH and every run a new one."""
    unshare = shutil.which("unshare")
    command = [unshare, "--pid", "--kill-child", "--mount-proc", "--", sys.executable, "-c"]
    env = {**os.environ, "PATH": path, "LAB_RUN_MEMO": ""}  # plumbing/run_memo.py: none
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


# --- network-only: no run without its harness -------------------------------------------------


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
