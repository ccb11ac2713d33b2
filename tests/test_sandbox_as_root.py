"""The sandbox holds when the harness runs as root (CI, containers, many learners).

Edited code that runs at import of path_rules.py tries what a root process could do in a
bubblewrap sandbox that keeps its capabilities: remount the read-only Python installation
writable and write into it, mount a file system, make a device node, write a kernel
setting, read what only root may read. Each attempt's outcome is written to a file in the
copy (the one folder it may write), and read back here. The probes share one test run and
one held-out child for each way they run (isolated, unisolated): each test reads its own
answers from them.
"""

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import NamedTuple

import pytest

from plumbing import bounds, isolation, sandbox_user
from plumbing.held_out import held_out_checks
from plumbing.pytest_run import run_pytest
from plumbing.sample import SOURCE_FILE, copy_sample

PROBE = """\
import ctypes, json, os, pathlib, stat, sys
_libc = ctypes.CDLL(None, use_errno=True)
_MS_REMOUNT, _MS_BIND = 32, 4096
def _outcome(attempt):
    try:
        return "done" if attempt() in (0, None) else "refused"
    except OSError:
        return "refused"
def _mount():
    os.makedirs("probe-mount")
    return _libc.mount(b"none", b"probe-mount", b"tmpfs", 0, None)
def _write_into_python():
    target = pathlib.Path(sys.prefix) / "planted.pth"
    target.write_text("import os\\n")
    target.unlink()
_attempts = {
    "remount": lambda: _libc.mount(None, sys.prefix.encode(), None, _MS_REMOUNT | _MS_BIND, None),
    "mount": _mount,
    "mknod": lambda: os.mknod("probe-null", stat.S_IFCHR | 0o666, os.makedev(1, 3)),
    "write_python": _write_into_python,
    # last: it leaves the process in the namespace it made, where it is done
    "user_namespace": lambda: _libc.unshare(0x10000000),  # CLONE_NEWUSER, as `unshare -U`
}
_status = pathlib.Path("/proc/self/status").read_text()
_found = {name: _outcome(_attempts[name]) for name in ATTEMPTS}
_found["CapEff"] = _status.split("CapEff:")[1].split()[0]
pathlib.Path(__file__).with_name("probe.json").write_text(json.dumps(_found))
"""
EVERY_ATTEMPT = ("remount", "mount", "mknod", "write_python", "user_namespace")
WHO_PROBE = (
    "import getpass, os\nopen('who.txt', 'w').write("
    "f'{os.getuid()} {os.getgid()} {os.getgroups()} {getpass.getuser()}')\n"
)

# As root, no root: kernel settings and root's own files are out of reach. The edited code
# tries, at import and again when called, to open each kernel setting for writing (it never
# writes) and to read what only root may read. In the tests' run it writes what it found
# into the copy; in the held-out child (a read-only folder) it answers with it.
KERNEL_SETTINGS = (
    "/proc/sys/kernel/core_pattern",
    "/proc/sys/vm/swappiness",
    "/proc/sysrq-trigger",
    "/sys/kernel/mm/transparent_hugepage/enabled",
)
ROOTS_OWN = ("/etc/shadow", "/root")  # /root: what it lists, if it is there at all
REACH_PROBE = f"""\
import json as _json, os as _os
def _reach():
    found = []
    for path in {KERNEL_SETTINGS!r}:
        try:
            _os.close(_os.open(path, _os.O_WRONLY))
            found.append("writable " + path)
        except OSError:
            pass
    for path in {ROOTS_OWN!r}:
        try:
            if _os.path.isdir(path):
                found.append(f"{{path}} lists " + ",".join(sorted(_os.listdir(path))))
            else:
                open(path, "rb").close()
                found.append("readable " + path)
        except OSError:
            pass
    return found
def _keep(when, found):
    try:
        with open(f"reach-{{when}}.json", "w") as kept:
            _json.dump(found, kept)
    except OSError:
        pass  # the held-out child's folder is read-only: it answers instead
_keep("import", _reach())
def python_sources(changed_paths):
    found = _reach()
    _keep("call", found)
    return ["probe", *found]
"""


class Probed(NamedTuple):
    repo: Path  # the copy the tests ran in
    collected: int  # tests the run's report counts
    powers: dict  # PROBE's outcome of each attempt, and CapEff
    who: str  # WHO_PROBE's "uid gid groups name"
    reach: dict  # REACH_PROBE's finds: "import", "call" (the tests' run), "held-out"


def probe(folder, attempts, isolate):
    """What the edited code could do from inside one test run in a copy made in `folder`,
    all the probes above at once (PROBE's `attempts` among them), and what it reaches in
    the held-out child (its answer to the first case, as the verdict reports it)."""
    repo = copy_sample(folder)
    source = f"ATTEMPTS = {attempts!r}\n" + PROBE + WHO_PROBE + REACH_PROBE
    (repo / SOURCE_FILE).write_text(source)
    # run_pytest and held_out_checks isolate unless told not to: the default is the safe
    # side, so use it
    try:
        run = run_pytest(repo) if isolate else run_pytest(repo, isolate=False)
    finally:  # unisolated (or with a broken default), the mount would outlive the test
        subprocess.run(["umount", str(repo / "probe-mount")], capture_output=True)
    # the held-out child gets the reach probe alone: it may write nothing, so PROBE's own
    # record of its attempts would fail its import
    reach_source = REACH_PROBE.encode()
    held_out = (
        held_out_checks(reach_source) if isolate else held_out_checks(reach_source, isolate=False)
    )
    reach = {
        when: json.loads((repo / f"reach-{when}.json").read_text()) for when in ("import", "call")
    }
    reach["held-out"] = held_out["first_failure"]
    powers = json.loads((repo / "probe.json").read_text())
    return Probed(repo, run["collected"], powers, (repo / "who.txt").read_text(), reach)


@pytest.fixture(scope="module")
def as_root():
    if os.geteuid() != 0:
        pytest.skip("run as root to test the sandbox as root (CI does)")


@pytest.fixture(scope="module")
def as_root_under_bubblewrap(as_root):
    if isolation.isolation_kind() != isolation.BUBBLEWRAP:
        pytest.skip("bubblewrap does not work here (apt-get install bubblewrap)")


SHARES_THE_ISOLATED_PROBE = pytest.mark.xdist_group("sandbox-as-root-isolated-probe")
SHARES_THE_UNISOLATED_PROBE = pytest.mark.xdist_group("sandbox-as-root-unisolated-probe")


@pytest.fixture(scope="module")
def isolated(as_root_under_bubblewrap, tmp_path_factory):
    """The probes' one isolated test run and held-out child, as root under bubblewrap."""
    return probe(tmp_path_factory.mktemp("isolated"), EVERY_ATTEMPT, isolate=True)


@pytest.fixture(scope="module")
def unisolated(as_root, tmp_path_factory):
    """The same probes unisolated, so a refusal is the sandbox's and not the probe's. It
    mounts only on a folder of the copy (unmounted after) and leaves this machine's Python
    alone."""
    return probe(tmp_path_factory.mktemp("unisolated"), ("mount", "mknod"), isolate=False)


@SHARES_THE_ISOLATED_PROBE
def test_as_root_the_edited_code_holds_no_capability(isolated):
    assert isolated.powers["CapEff"] == "0000000000000000"


@SHARES_THE_ISOLATED_PROBE
def test_as_root_the_edited_code_cannot_remount_mount_or_make_devices(isolated):
    assert isolated.powers["remount"] == "refused"
    assert isolated.powers["mount"] == "refused"
    assert isolated.powers["mknod"] == "refused"
    assert not (isolated.repo / "probe-null").exists()


@SHARES_THE_ISOLATED_PROBE
def test_as_root_the_edited_code_cannot_make_a_user_namespace(isolated):
    # in one, the run's user would hold every capability over what it owns: more to reach
    if not isolation._says("--disable-userns"):
        pytest.skip("this bubblewrap is older than 0.8.0: it has no --disable-userns")
    assert isolated.powers["user_namespace"] == "refused"


def test_as_root_where_the_second_bubblewrap_cannot_start_the_first_still_isolates(
    as_root_under_bubblewrap, tmp_path
):
    # A bwrap that is not inside the sandbox (a wrapper in a folder it does not bind): the
    # second bubblewrap cannot start, as where the machine keeps user namespaces from users
    if not isolation._says("--disable-userns"):
        pytest.skip("this bubblewrap is older than 0.8.0: there is no second one")
    (tmp_path / "bin").mkdir()
    wrapper = tmp_path / "bin" / "bwrap"
    wrapper.write_text(f'#!/bin/sh\nexec {shutil.which("bwrap")} "$@"\n')
    wrapper.chmod(0o755)
    who = [sys.executable, "-c", "import os; print(os.getuid())"]
    user = sandbox_user.fresh_user()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")  # first
        isolation.isolation_kind.cache_clear()
        try:
            kind = isolation.isolation_kind()
            second = isolation._no_user_namespaces()
            prefix = isolation.isolation_prefix(kind, (), (str(tmp_path),), user=user)
            done = subprocess.run([*prefix, *who], capture_output=True, text=True, timeout=60)
        finally:
            isolation.isolation_kind.cache_clear()
    isolation.isolation_kind()  # found again under the suite's own PATH
    assert (kind, second) == (isolation.BUBBLEWRAP, [])
    assert done.stdout == f"{user}\n", done.stderr
    assert isolation._no_user_namespaces() != []  # and here it starts again


@SHARES_THE_ISOLATED_PROBE
def test_as_root_the_python_installation_stays_read_only(isolated):
    assert isolated.powers["write_python"] == "refused"
    assert not os.path.exists(os.path.join(sys.prefix, "planted.pth"))


@SHARES_THE_ISOLATED_PROBE
def test_as_root_the_edited_code_reaches_no_kernel_setting_and_nothing_only_root_reads(isolated):
    found = isolated.reach
    # Where Python itself is installed under /root, the sandbox makes an empty /root on the
    # way to it: it lists that way down, nothing of root's own.
    way = sorted({Path(f).relative_to("/root").parts[0] for f in isolation._python_folders()
                  if f.startswith("/root/")})  # fmt: skip
    allowed = [f"/root lists {','.join(way)}"] if way else []
    assert found["import"] == allowed and found["call"] == allowed, found
    assert found["held-out"].startswith('["lib/src/tool.py", "source/app.py", "srcs/cli.py"] '
                                        'gave ["probe"'), found  # fmt: skip
    assert "writable" not in found["held-out"] and "shadow" not in found["held-out"]


@SHARES_THE_ISOLATED_PROBE
def test_as_root_the_tests_run_as_a_user_of_their_own_and_may_still_write_their_copy(isolated):
    assert isolated.collected == 4
    user = isolated.repo.stat().st_uid  # the copy is handed to the run's user
    assert isolated.who == f"{user} {user} [] sandbox-{user}"  # named, with no passwd entry
    assert user not in (0, 65534) and sandbox_user.FIRST <= user <= sandbox_user.LAST


@SHARES_THE_UNISOLATED_PROBE
def test_the_probe_finds_each_power_where_nothing_isolates(unisolated):
    # The same probe unisolated, so a refusal above is the sandbox's and not the probe's.
    assert unisolated.powers["CapEff"] != "0000000000000000"
    assert unisolated.powers["mount"] == "done"
    assert unisolated.powers["mknod"] == "done"


@SHARES_THE_UNISOLATED_PROBE
def test_the_reach_probe_finds_kernel_settings_and_roots_files_where_nothing_isolates(unisolated):
    for when in ("import", "call"):
        assert "writable /proc/sys/kernel/core_pattern" in unisolated.reach[when]
        assert "readable /etc/shadow" in unisolated.reach[when]
    assert "writable /proc/sys/kernel/core_pattern" in unisolated.reach["held-out"]


# --- a fork bomb stops at its user's process limit -------------------------------------------

# Reads the limit it was given, then forks children that wait on a pipe until a fork is
# refused, and notes how many it made. Under a soft limit of its own, lowered to FEW, so
# that it costs the machine a few processes, not bounds.PROCESS_LIMIT of them (each run's
# user has its own count). The kernel refuses a fork past the soft limit as past the hard one.
FEW = 32
FORK_UNTIL_REFUSED = f"""\
import os, pathlib, resource
_limits = [l for l in open("/proc/self/limits") if l.startswith("Max processes")]
resource.setrlimit(resource.RLIMIT_NPROC, ({FEW}, resource.getrlimit(resource.RLIMIT_NPROC)[1]))
_read, _write = os.pipe()
_made = 0
try:
    while _made < {2 * FEW}:  # twice the limit: a bound if there is none
        if os.fork() == 0:
            os.close(_write)
            os.read(_read, 1)
            os._exit(0)
        _made += 1
finally:
    os.close(_write)
    pathlib.Path(__file__).with_name("forked.txt").write_text(f"{{_made}}|{{_limits[0]}}")
"""


def test_as_root_a_fork_bomb_stops_at_the_process_limit_and_the_run_says_so(
    as_root_under_bubblewrap, tmp_path
):
    repo = copy_sample(tmp_path)
    (repo / SOURCE_FILE).write_text(FORK_UNTIL_REFUSED)
    run = run_pytest(repo)
    made, limits = (repo / "forked.txt").read_text().split("|")
    assert limits.split()[2:4] == [str(bounds.PROCESS_LIMIT)] * 2  # soft and hard
    assert int(made) < FEW  # refused before the loop's own end
    assert run["exit_code"] is not None  # it ended by itself, not at the time limit
    assert run["verdict"] == "failed"
    assert run["reason"].endswith(
        f"(the run went past the limit of {bounds.PROCESS_LIMIT} processes of its user)"
    ), run["reason"]


# --- as root with only the network cut, the edited code is a user of its own -----------------

LAB = Path(__file__).resolve().parent.parent
PLANTED_NAME = "zz-planted-by-network-only"
# the edited code tries to write into site-packages and the lab's folder, and says who it is
WRITE_INTO_THE_INSTALLATION = f"""\
import os, pathlib, site
_found = [str(os.getuid())]
for _folder in [site.getsitepackages()[0], {str(LAB)!r}]:
    try:
        (pathlib.Path(_folder) / {PLANTED_NAME!r}).write_text("")
        _found.append("wrote " + _folder)
    except OSError:
        _found.append("refused")
pathlib.Path(__file__).with_name("found.txt").write_text(" ".join(_found))
"""


def test_as_root_with_only_the_network_cut_the_edited_code_cannot_write_the_installation(
    as_root, tmp_path, monkeypatch
):
    # The finding: bubblewrap missing, network-only as root, and a run appended a hook to an
    # installed package. Now the code is the run's own user: it writes its copy, not .venv/
    # nor the lab.
    unshare, setpriv = shutil.which("unshare"), shutil.which("setpriv")
    if not (unshare and setpriv) or subprocess.run([unshare, "--net", "true"]).returncode:
        pytest.skip("`unshare --net` does not work here")
    (tmp_path / "bin").mkdir()
    for program in (unshare, setpriv):  # on the PATH, bwrap not
        (tmp_path / "bin" / Path(program).name).symlink_to(program)
    repo = copy_sample(tmp_path / "work")
    (repo / SOURCE_FILE).write_text(WRITE_INTO_THE_INSTALLATION)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    isolation.isolation_kind.cache_clear()
    try:
        assert isolation.isolation_kind() == isolation.NETWORK_ONLY
        run = run_pytest(repo)
    finally:
        isolation.isolation_kind.cache_clear()
    site_packages = Path(sysconfig.get_paths()["purelib"])
    assert not (site_packages / PLANTED_NAME).exists() and not (LAB / PLANTED_NAME).exists()
    user = repo.stat().st_uid  # the copy is handed to the run's user
    assert user not in (0, 65534), user
    assert (repo / "found.txt").read_text() == f"{user} refused refused", run["output"]


# --- the lab cannot be poisoned by what it ran -----------------------------------------------

PLANT = (
    "import pathlib, site\n"
    "_site = pathlib.Path(site.getsitepackages()[0])\n"
    "(_site / 'zz-planted.pth').write_text('import os\\n')\n"
)
JUDGE_TWICE = """
import json, sys
from plumbing.sample import SOURCE_FILE, copy_sample
from plumbing.installed_files import write_snapshot
from plumbing.startup_guard import write_baseline
from verdict import independent_verdict
write_baseline()
write_snapshot()
repo = copy_sample(sys.argv[1])
source = repo / SOURCE_FILE
source.write_text(sys.argv[2] + source.read_text())
isolate = sys.argv[3] == "isolated"
first = independent_verdict(repo, isolate=isolate)  # the run the plant happens in, or not
second = independent_verdict(repo, isolate=isolate)  # the next verdict
print(json.dumps([first.get("reason"), second.get("reason"), second["exit_code"]]))
"""


@pytest.fixture(scope="module")
def venv_template(tmp_path_factory):
    """(folder, its site-packages relative to it): a venv that sees the lab's packages, made
    once for the tests below, which each get a copy of it."""
    home = tmp_path_factory.mktemp("template") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(home)], check=True)
    site_packages = subprocess.run(
        [home / "bin" / "python", "-c", "import site; print(site.getsitepackages()[0])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    lab_packages = [p for p in sys.path if p.endswith("site-packages")]
    (Path(site_packages) / "lab.pth").write_text("\n".join(lab_packages) + "\n")
    return home, Path(site_packages).relative_to(home)


@pytest.fixture
def throwaway_python(venv_template, tmp_path):
    """A venv of its own that sees the lab's packages: the plant must not reach .venv/.

    A copy of the template: a venv's Python finds its prefix from where it is started (its
    pyvenv.cfg), so the copy's start-up files, baseline and plants are its own."""
    template, site_packages = venv_template
    home = tmp_path / "venv"
    shutil.copytree(template, home, symlinks=True)
    return home / "bin" / "python", home / site_packages


def judged_twice(python, tmp_path, plant, isolated):
    """(first reason, second reason, the second run's exit code) of JUDGE_TWICE in the
    throwaway installation `python`, the first run's code planting `plant`."""
    if isolated == "isolated" and isolation.isolation_kind() != isolation.BUBBLEWRAP:
        pytest.skip("bubblewrap does not work here (apt-get install bubblewrap)")
    done = subprocess.run(
        [python, "-c", JUDGE_TWICE, str(tmp_path / "work"), plant, isolated],
        capture_output=True, text=True, cwd=Path(__file__).resolve().parent.parent, timeout=120,
    )  # fmt: skip
    return json.loads(done.stdout.splitlines()[-1])


# the tests that copy the one template venv run on one worker, which makes it once
SHARES_THE_VENV_TEMPLATE = pytest.mark.xdist_group("sandbox-as-root-venv-template")


@SHARES_THE_VENV_TEMPLATE
@pytest.mark.parametrize("isolated", ["isolated", "unisolated"])
def test_start_up_code_planted_by_a_test_run_refuses_every_later_verdict(
    throwaway_python, tmp_path, isolated
):
    python, site_packages = throwaway_python
    first, second, second_exit_code = judged_twice(python, tmp_path, PLANT, isolated)
    planted = (site_packages / "zz-planted.pth").exists()
    if isolated == "isolated":
        assert not planted  # read-only to the tests: nothing to notice
        assert "start-up code" not in (second or "")
    else:
        assert planted
        assert first == second  # the run that planted it gets no verdict either
        assert second.startswith("the lab's Python installation holds start-up code it was "
                                 "not built with (zz-planted.pth")  # fmt: skip
        assert second_exit_code is None  # refused before its tests ran with the plant in reach


# Bytecode in a __pycache__/ of site-packages: Python loads it for a module of that name
PLANT_BYTECODE = (
    "import pathlib, site\n"
    "_cache = pathlib.Path(site.getsitepackages()[0], '__pycache__')\n"
    "_cache.mkdir(exist_ok=True)\n"
    "(_cache / 'zz_planted.cpython-311.pyc').write_bytes(b'forged')\n"
)


@SHARES_THE_VENV_TEMPLATE
@pytest.mark.parametrize("isolated", ["isolated", "unisolated"])
def test_bytecode_planted_in_site_packages_by_a_test_run_refuses_every_later_verdict(
    throwaway_python, tmp_path, isolated
):
    python, site_packages = throwaway_python
    first, second, second_exit_code = judged_twice(python, tmp_path, PLANT_BYTECODE, isolated)
    planted = (site_packages / "__pycache__" / "zz_planted.cpython-311.pyc").exists()
    if isolated == "isolated":
        assert not planted  # read-only to the tests: nothing to notice
        assert "not as lab.py built it" not in (second or "")
    else:
        assert planted
        assert first == second  # the run that planted it gets no verdict either
        assert second.startswith(f"the lab's Python installation ({python.parent.parent}) is "
                                 "not as lab.py built it: "), second  # fmt: skip
        assert "/__pycache__/zz_planted.cpython-311.pyc added" in second, second
        assert second.endswith(f"rebuild it with rm -rf {python.parent.parent} && python3 "
                               f"{python.parent.parent.parent}/lab.py replay")  # fmt: skip
        assert second_exit_code is None  # refused before its tests ran with the plant in reach


WRITE_SNAPSHOT = "from plumbing.installed_files import write_snapshot; write_snapshot()"


@SHARES_THE_VENV_TEMPLATE
def test_each_cli_refuses_to_start_while_a_file_of_the_installation_differs_from_its_build(
    throwaway_python, tmp_path
):
    # The finding: a line appended to the installed SDK by an unisolated run ran inside the
    # next record_run.py, which imports the SDK at its top. Refused before that import: here
    # a planted `ollama` package (found before the real one) would leave a mark if it ran.
    python, site_packages = throwaway_python
    lab = Path(__file__).resolve().parent.parent
    in_lab(python, WRITE_SNAPSHOT)

    def start(script):
        done = subprocess.run([python, script, "--help"], capture_output=True, text=True,
                              cwd=lab, timeout=60)  # fmt: skip
        return done.returncode, done.stderr

    assert start("replay.py") == (0, "")  # as built: nothing said
    mark = tmp_path / "the-plant-ran"
    (site_packages / "ollama").mkdir()
    (site_packages / "ollama" / "__init__.py").write_text(f"open({str(mark)!r}, 'w')\n")
    with open(site_packages / "lab.pth", "a") as changed:  # and a line appended, as found
        changed.write("\n")
    for script in ("record_run.py", "replay.py", "ask.py"):
        code, said = start(script)
        assert code == 2, said
        assert said.count("\n") == 1 and said.startswith("error: the lab's Python installation")
        assert f"{site_packages.name}/lab.pth changed, " in said, said
        assert f"{site_packages.name}/ollama/__init__.py added;" in said, said
    assert not mark.exists()


@SHARES_THE_VENV_TEMPLATE
def test_what_changed_in_the_installation_is_named_by_three_and_counted(throwaway_python):
    python, site_packages = throwaway_python
    in_lab(python, WRITE_SNAPSHOT)
    for n in range(5):
        (site_packages / f"zz_{n}.py").write_text("")
    (site_packages / "lab.pth").unlink()
    ask = "from plumbing.installed_files import changed; print(changed())"
    said = in_lab(python, ask)
    assert ": lib/" in said and f"{site_packages.name}/lab.pth gone, " in said, said
    assert "zz_0.py added, " in said and "zz_1.py added and 3 more; " in said, said


@SHARES_THE_VENV_TEMPLATE
def test_the_tests_packages_join_the_snapshot_and_what_was_planted_before_stays_named(
    throwaway_python,
):
    # lab.py installs the tests' packages through startup_guard.around: the files they add
    # are taken as installed, a file changed before the install is still named after it
    python, site_packages = throwaway_python
    lab = Path(__file__).resolve().parent.parent
    in_lab(python, WRITE_SNAPSHOT)
    with open(site_packages / "lab.pth", "a") as planted:
        planted.write("\n")
    install = [python, "-c", f"open({str(site_packages / 'zz_installed.py')!r}, 'w')"]
    around = "from plumbing.startup_guard import around; around()"
    subprocess.run([python, "-c", around, *install], cwd=lab, check=True, timeout=60)
    said = in_lab(python, "from plumbing.installed_files import changed; print(changed())")
    assert f"{site_packages.name}/lab.pth changed;" in said, said
    assert "zz_installed.py" not in said


WRITE_BASELINE = "from plumbing.startup_guard import write_baseline; write_baseline()"
ASK_PLANTED = "from plumbing.startup_guard import planted; print(planted())"


def in_lab(python, code):
    """What `code` prints, run by `python` from the lab's folder."""
    lab = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [python, "-c", code], capture_output=True, text=True, cwd=lab, check=True, timeout=60
    )
    return done.stdout.strip()


@SHARES_THE_VENV_TEMPLATE
def test_an_installation_reached_through_a_symlink_is_not_taken_for_a_planted_one(
    throwaway_python, tmp_path
):
    python, _ = throwaway_python
    in_lab(python, WRITE_BASELINE)
    linked = tmp_path / "linked-venv"  # a copy of the lab that links .venv/, as mutate.py's do
    linked.symlink_to(python.parent.parent)
    assert in_lab(linked / "bin" / "python", ASK_PLANTED) == "None"


# What the guard says of 3, 4 and 5 files planted since the baseline: all three, no "and 0 more".
NAMED_BY_THREE = {
    3: "(zz-0.pth, zz-1.pth, zz-2.pth, in ",
    4: "(zz-0.pth, zz-1.pth, zz-2.pth and 1 more, in ",
    5: "(zz-0.pth, zz-1.pth, zz-2.pth and 2 more, in ",
}


@SHARES_THE_VENV_TEMPLATE
def test_more_than_three_planted_files_are_named_by_three_and_counted(throwaway_python):
    # mutation: `len(changed) - 3` -> `+ 3` said "and 8 more" of two more files
    python, site_packages = throwaway_python
    in_lab(python, WRITE_BASELINE)
    for n in range(max(NAMED_BY_THREE)):  # one more planted before each question
        (site_packages / f"zz-{n}.pth").write_text("import os\n")
        if n + 1 in NAMED_BY_THREE:
            said = in_lab(python, ASK_PLANTED)
            assert NAMED_BY_THREE[n + 1] in said, said


@SHARES_THE_VENV_TEMPLATE
def test_the_baseline_is_one_start_up_file_a_line_in_sorted_order(throwaway_python):
    # A person comparing the baseline with the installation reads it: one file a line,
    # sorted by path. A sitecustomize.py is found before the .pth files of its folder.
    python, site_packages = throwaway_python
    (site_packages / "sitecustomize.py").write_text("# harmless\n")
    in_lab(python, WRITE_BASELINE)
    text = (python.parent.parent / "lab-startup-files.json").read_text()
    lines = text.splitlines()
    paths = [line.split('"')[1] for line in lines[1:-1]]
    assert lines[0] == "{" and lines[-1] == "}" and text.endswith("}\n")
    assert all(line.startswith(' "/') for line in lines[1:-1]), text
    assert str(site_packages / "sitecustomize.py") in paths
    assert paths == sorted(paths)


@SHARES_THE_VENV_TEMPLATE
def test_an_installation_lab_py_did_not_build_is_judged_against_what_it_held_at_start(
    throwaway_python,
):
    # no baseline file (or one that does not parse): what was there at start-up is the
    # baseline, so a plant made since is still named
    python, site_packages = throwaway_python
    plant_then_ask = (
        "import pathlib, site\n"
        "from plumbing.startup_guard import planted\n"
        "before = planted()\n"
        "pathlib.Path(site.getsitepackages()[0], 'zz-late.pth').write_text('import os')\n"
        "print(before, '|', planted())\n"
    )
    before, after = in_lab(python, plant_then_ask).split(" | ")
    assert before == "None"
    assert "(zz-late.pth, in " in after, after
    (python.parent.parent / "lab-startup-files.json").write_text("not json")
    (site_packages / "zz-late.pth").unlink()
    before, after = in_lab(python, plant_then_ask).split(" | ")
    assert before == "None"
    assert "(zz-late.pth, in " in after, after


# --- bytecode planted in the lab's own __pycache__ is never loaded ----------------------------

FORGE = """\
import importlib._bootstrap_external as external, importlib.util, os, sys
source = os.path.abspath(sys.argv[1])
info = os.stat(source)
forged = open(source).read() + "\\nTEST_TIMEOUT = 'forged'\\n"
code = compile(forged, source, "exec")
cached = importlib.util.cache_from_source(source)
os.makedirs(os.path.dirname(cached), exist_ok=True)
# stamped with the real file's modification time and size: Python's own check passes
with open(cached, "wb") as pyc:
    pyc.write(external._code_to_timestamp_pyc(code, int(info.st_mtime), info.st_size))
"""
ASK_TIMEOUT = "from plumbing import pytest_run\nprint(pytest_run.TEST_TIMEOUT)\n"


def skip_outside_the_labs_venv(why):
    if not (Path(sys.prefix) / "lab-startup-files.json").exists():
        pytest.skip(f"run with the lab's own .venv (python3 lab.py test): {why}")


def test_bytecode_planted_beside_the_labs_own_modules_is_never_loaded(tmp_path):
    lab = Path(__file__).resolve().parent.parent
    skip_outside_the_labs_venv("it holds the guard")
    copy = tmp_path / "lab"  # a copy of the lab: its __pycache__ is this test's to plant in
    copy.mkdir()
    shutil.copytree(
        lab / "plumbing", copy / "plumbing", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copytree(lab / "sample_repo", copy / "sample_repo")
    (copy / "ask_timeout.py").write_text(ASK_TIMEOUT)
    subprocess.run([sys.executable, "-c", FORGE, "plumbing/pytest_run.py"], cwd=copy, check=True)
    assert (copy / "plumbing" / "__pycache__").is_dir()

    def ask(*flags):
        done = subprocess.run([sys.executable, *flags, "ask_timeout.py"], cwd=copy,
                              capture_output=True, text=True, timeout=60)  # fmt: skip
        return done.stdout.strip() or done.stderr

    assert ask() == "15.0"  # the source's, as a script of the lab's .venv starts it
    # The same plant without the lab's start-up file (-S: no site-packages at all, so the
    # standard library alone, which pytest_run.py's imports need no more than): it loads.
    assert ask("-S") == "forged"


def test_the_labs_path_hook_comes_before_every_other_in_each_interpreter(tmp_path, monkeypatch):
    # first, so no hook that comes with Python or a package claims a lab folder before it
    from tests.run_memo import path_without_start

    skip_outside_the_labs_venv("it holds the hook")
    # subtle: started as a learner's program is: the suite's start-up module puts its code
    # cache's hook before this one (tests/code_cache.py)
    monkeypatch.setenv("PYTHONPATH", path_without_start())
    ask = "import sys; print(sys.path_hooks[0].__name__, sys.path_hooks.count(sys.path_hooks[0]))"
    done = subprocess.run([sys.executable, "-c", ask], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert done.stdout.split() == ["sources_only", "1"], done.stdout + done.stderr


@SHARES_THE_VENV_TEMPLATE
def test_a_start_up_file_gone_from_the_installation_is_named(throwaway_python):
    python, site_packages = throwaway_python
    (site_packages / "zz-kept.pth").write_text("import os\n")
    in_lab(python, WRITE_BASELINE)
    (site_packages / "zz-kept.pth").unlink()
    said = in_lab(python, ASK_PLANTED)
    assert said.startswith("the lab's Python installation lacks start-up code it was built "
                           "with (zz-kept.pth, in "), said  # fmt: skip
