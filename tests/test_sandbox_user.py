"""Nothing a run does outlives it or reaches another run, as root, in both isolations
(plumbing/sandbox_user.py, plumbing/isolation.py).

A correct repair that double-forks a `setsid` process leaves nothing running, and no later
run's copy changes; each run is a user of its own, that pytest runs as; a `nobody` process
started outside the lab, writing wherever it can while verdicts run, changes neither; a
process of a run's user outside its sandbox fails the run; two network-only runs live at
once (whose code may search every folder) write nothing of each other's; a run in a user
namespace that maps few ids still gets a user of its own; a network-only run dies with a
harness killed outright. The scenarios that start a process of `nobody` outside the lab run
in a PID namespace and /proc of their own (`in_own_pid_namespace`): the suite's other
workers never meet them, and whatever a scenario leaves dies with it.
"""

import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from plumbing import isolation, sandbox_user
from plumbing.child_process import run_isolated
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
    env = {**os.environ, "PATH": path, "LAB_RUN_MEMO": ""}  # tests/run_memo.py: none
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


# --- a process outside the run, of nobody or of another run --------------------------------

# A process of `nobody` started outside the lab: says "ready", then for 60 s tries to put
# its second argument as path_rules.py into every folder a run may hand the tests (the
# scratch folders' names are the lab's; their inner folders guessed, as they cannot be
# listed), and into the working folder of every process it sees that holds one; it names
# each place it wrote, and says "looped" after its first pass.
WRITER = """\
tmp=$1 plant=$2
cd /
echo ready
plant() {
    printf %s "$plant" 2>/dev/null >"$1/planted.py" && mv -f "$1/planted.py" "$1/path_rules.py"
}
i=0
while [ "$i" -lt 6000 ]; do
    for folder in "$tmp"/agent-lab-*; do
        for place in "$folder" "$folder/repo" "$folder/held-out" "$folder/report"; do
            if plant "$place" 2>/dev/null; then echo "path $place"; fi
        done
    done
    for cwd in /proc/[0-9]*/cwd; do
        if [ -e "$cwd/path_rules.py" ] && plant "$cwd" 2>/dev/null; then echo "proc $cwd"; fi
    done
    [ "$i" -gt 0 ] || echo looped
    i=$((i + 1))
    sleep 0.01
done
"""
# Two verdicts, each while WRITER runs as nobody beside it: the faulty sample, with the
# writer planting a correct repair, and a correct repair, with the writer planting the
# faulty sample.
JUDGE_BESIDE_THE_WRITER = """\
import json, subprocess, sys, tempfile
from pathlib import Path
from plumbing import isolation
from plumbing.sample import copy_sample
from verdict import independent_verdict
work, setpriv, writer, faulty, fixed = Path(sys.argv[1]), *sys.argv[2:]
nobody = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
found = {"kind": isolation.isolation_kind()}
for name, source, plant in (("faulty", faulty, fixed), ("fixed", fixed, faulty)):
    started = subprocess.Popen([*nobody, "/bin/sh", "-c", writer, "writer", tempfile.gettempdir(),
                                plant], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               text=True, env={"PATH": "/usr/bin:/bin"})  # not the lab's PATH
    assert started.stdout.readline() == "ready\\n"
    assert started.stdout.readline() == "looped\\n"
    verdict = independent_verdict(copy_sample(work / name, source.encode()))
    started.kill()
    wrote = started.stdout.read().splitlines()
    found[name] = {
        "verdict": verdict["verdict"], "reason": verdict.get("reason"),
        "held_out": verdict["held_out"]["first_failure"], "wrote": wrote,
    }
print(json.dumps(found))
"""


def test_a_nobody_process_outside_the_lab_changes_no_verdict_of_a_live_run(
    each_isolation, tmp_path
):
    # The finding: under bubblewrap, a process of nobody outside the lab wrote into a live
    # run's copy through /proc/<pid>/cwd of its test process, nobody's as well, so the lab
    # could only fail every run while one lived. Now each run is a user of its own: the
    # kernel keeps every other user out of /proc/<pid>/cwd, and each folder handed to the
    # run sits inside a folder only root may enter. Each verdict is its code's own.
    kind, path = each_isolation
    faulty = (SAMPLE_REPO / SOURCE_FILE).read_text()
    # a temporary folder as /tmp is, for this run alone: the machine's /tmp may hold the
    # folders of another program's (or another lab's) runs, which are not this test's
    tmp = Path(tempfile.mkdtemp(prefix="lab-tmp-"))
    try:
        os.chmod(tmp, 0o1777)
        args = (tmp_path, shutil.which("setpriv"), WRITER, faulty, FIXED)
        found = in_own_pid_namespace(JUDGE_BESIDE_THE_WRITER, path, *args, tmp=tmp)
    finally:
        shutil.rmtree(tmp)
    assert found["kind"] == kind, found
    assert found["faulty"]["wrote"] == found["fixed"]["wrote"] == [], found
    # the faulty sample fails for its own bug, in both parts
    assert found["faulty"]["verdict"] == "failed", found
    assert found["faulty"]["reason"] == "not every test passed", found
    assert " gave " in found["faulty"]["held_out"], found
    # and a correct repair passes
    assert found["fixed"]["verdict"] == "passed" and found["fixed"]["held_out"] is None, found


# A process of the sandbox user outside the lab, for the lab's own check: `sleep`, as uid
# and gid `user`, in the test's PID namespace or (with `own_pid_namespace`) in one of its own.
def sleeping_as(user, own_pid_namespace=False):
    namespace = [shutil.which("unshare"), "--pid", "--fork", "--mount-proc", "--"]
    command = [shutil.which("setpriv"), f"--reuid={user}", f"--regid={user}", "--clear-groups"]
    command = [*(namespace if own_pid_namespace else []), *command, "--", "sleep", "30"]
    return subprocess.Popen(command, start_new_session=True)


def test_a_process_of_the_runs_user_outside_its_sandbox_fails_the_run_and_no_other_user_does(
    as_root,
):
    # Each run's processes live in a PID namespace of their own and die with it; one of the
    # run's user in the harness's own namespace has left the sandbox, and fails the run.
    user, other = sandbox_user.fresh_user(), sandbox_user.fresh_user()
    outside, inside = sleeping_as(user), sleeping_as(other, own_pid_namespace=True)
    try:
        sleeping = f"/proc/{outside.pid}/status"
        assert wait_for(lambda: "sleep" in Path(sleeping).read_text()), "it never slept"
        assert wait_for(lambda: processes_of(other)), "the other never slept"
        assert sandbox_user.outsider(user) == (
            f"a process of this run's sandbox user (uid {user}) outlived the run outside its "
            f"sandbox (pid {outside.pid}, sleep): it could have changed what the tests saw, so "
            "the run does not pass"
        )
        assert sandbox_user.outsider(other) is None  # in a PID namespace of its own
        assert sandbox_user.outsider(sandbox_user.fresh_user()) is None
        assert sandbox_user.fresh_user() not in (user, other)  # held: never drawn again
    finally:
        for started in (outside, inside):
            os.killpg(started.pid, signal.SIGKILL)
            started.wait()


def processes_of(user):
    """The pids of processes whose real uid is `user`."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            uid = Path(f"/proc/{pid}/status").read_text().split("\nUid:")[1].split()[0]
        except (OSError, IndexError):
            continue
        found += [pid] if uid == str(user) else []
    return found


# Runs pytest's own tmp_path and getpass.getuser() as the run's user, and says who that is.
OWN_USER_TEST = """\
import getpass, os
def test_as_its_own_user(tmp_path):
    (tmp_path / "written").write_text("")
    print("ran as", os.getuid(), os.getgid(), getpass.getuser(), tmp_path)
"""


def test_each_folder_is_a_user_of_its_own_that_pytest_runs_as(each_isolation, tmp_path):
    # a user no passwd entry names: pytest's tmp_path and getpass work all the same; the
    # runs in one folder (the tools' copy over a live run) are one user, so the second may
    # change what the first left; another folder (another copy) is another user; under
    # network-only, where /tmp is the machine's, no run's pytest folder there stops another
    kind, path = each_isolation
    folders = [tmp_path / "tests", tmp_path / "tests", tmp_path / "other"]
    for folder in folders[1:]:
        folder.mkdir(exist_ok=True)
        (folder / "test_own_user.py").write_text(OWN_USER_TEST)
    command = [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider"]
    seen = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH", path)
        patch.setenv("LAB_RUN_MEMO", "")  # each run a new process (tests/run_memo.py)
        for folder in folders:
            ran = run_isolated(kind, command, folder, 60, writes=(folder,))
            user = folder.stat().st_uid  # the folder was handed to the run's user
            for name in (f"sandbox-{user}", "unknown"):  # network-only: the machine's /tmp
                made = Path(f"/tmp/pytest-of-{name}")
                if made.exists() and made.stat().st_uid == user:  # this run's: leave none
                    shutil.rmtree(made)
            lines = ran.output.splitlines()
            said = [line.split()[2:] for line in lines if line.startswith("ran as ")]
            seen.append((user, ran.exit_code, ran.outsider, said, ran.output))
    for user, exit_code, outsider, said, output in seen:
        assert (exit_code, outsider) == (0, None) and said, output
        assert said[0][:3] == [str(user), str(user), f"sandbox-{user}"], output
        assert said[0][3].startswith(f"/tmp/pytest-of-sandbox-{user}/"), output
        with pytest.raises(KeyError):
            pwd.getpwuid(user)
    users = [user for user, *_ in seen]
    assert users[0] == users[1] != users[2] and not {0, 65534} & set(users), users


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
    writable.mkdir(mode=0o777)  # as an earlier run's code may leave its folder: open to all
    readable.mkdir(mode=0o700)
    user = sandbox_user.fresh_user()
    isolation.isolation_prefix(isolation.BUBBLEWRAP, (writable,), (readable,), user=user)
    assert (writable.stat().st_uid, writable.stat().st_mode & 0o777) == (user, 0o770)
    # read, never written: still root's, and open to read
    assert (readable.stat().st_uid, readable.stat().st_mode & 0o777) == (0, 0o755)


# A run of the faulty sample: its isolation, the user its copy was handed to, its verdict.
RUN_THE_SAMPLE = """\
import json, sys
from pathlib import Path
from plumbing import isolation
from plumbing.pytest_run import run_pytest
from plumbing.sample import copy_sample
repo = copy_sample(Path(sys.argv[1]))
run = run_pytest(repo)
print(json.dumps([isolation.isolation_kind(), repo.stat().st_uid, run["reason"]]))
"""


def test_in_a_user_namespace_that_maps_few_ids_a_run_is_still_a_user_of_its_own(as_root, tmp_path):
    # As root in a container that maps 65,536 ids, none of sandbox_user's own range is
    # there: the run's user is drawn from what is mapped, nobody's left out.
    held = subprocess.Popen([shutil.which("unshare"), "--user", "--", "sleep", "60"])
    try:
        ours = os.readlink("/proc/self/ns/user")
        assert wait_for(lambda: os.readlink(f"/proc/{held.pid}/ns/user") != ours)
        for name in ("uid_map", "gid_map"):
            Path(f"/proc/{held.pid}/{name}").write_text("0 0 65536\n")
        enter = [shutil.which("nsenter"), "-t", str(held.pid), "-U", "--"]
        done = subprocess.run([*enter, sys.executable, "-c", RUN_THE_SAMPLE, str(tmp_path)],
                              cwd=LAB, env={**os.environ, "LAB_RUN_MEMO": ""},
                              capture_output=True, text=True, timeout=120)  # fmt: skip
    finally:
        held.kill()
        held.wait()
    assert done.returncode == 0, done.stdout + done.stderr
    kind, user, reason = json.loads(done.stdout.splitlines()[-1])
    assert kind != isolation.NONE and reason == "not every test passed", done.stdout
    assert sandbox_user.LOWEST <= user < 65534, user


# --- network-only: runs side by side, and none without its harness ---------------------------

# At import: says it began, waits (5 s at most) until the other run named by OTHER began
# too, then tries to write into the other's copy (a new file, its path_rules.py appended to
# and replaced), and writes what happened into its own copy.
WRITE_INTO_THE_OTHER = """\
import os as _os, pathlib as _p, time as _t
_here, _other = _p.Path(__file__).resolve().parent, _p.Path(OTHER)
(_here / "begun").touch()
_until = _t.monotonic() + 5
while not (_other / "begun").exists() and _t.monotonic() < _until:
    _t.sleep(0.01)
_found = ["together" if (_other / "begun").exists() else "alone"]
def _try(attempt):
    try:
        attempt()
        _found.append("wrote")
    except OSError:
        _found.append("refused")
_try(lambda: (_other / "planted").write_text(""))
_try(lambda: open(_other / "path_rules.py", "a").close())
_try(lambda: _os.replace(_here / "begun", _other / "path_rules.py"))
(_here / "found.txt").write_text(" ".join(_found))
"""


def test_two_network_only_runs_live_at_once_write_nothing_of_each_other(
    as_root, tmp_path, monkeypatch
):
    # A network-only run's code may search and read every folder (CAP_DAC_READ_SEARCH), so
    # the root-only folder around another run's copy does not stop it; the other run's user
    # does: no capability it holds overrides a write, and that copy is another user's.
    monkeypatch.setenv("PATH", network_only_path(tmp_path))
    repos = [copy_sample(tmp_path / name) for name in ("a", "b")]
    for repo, other in zip(repos, reversed(repos), strict=True):
        (repo / SOURCE_FILE).write_text(f"OTHER = {str(other)!r}\n{WRITE_INTO_THE_OTHER}{FIXED}")
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
    for repo in repos:  # no found.txt: its path_rules.py was replaced before it ran
        found = repo / "found.txt"
        assert found.exists() and found.read_text() == "together refused refused refused"
        assert not (repo / "planted").exists()
        assert (repo / SOURCE_FILE).read_text().endswith(FIXED)


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
