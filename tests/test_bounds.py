"""The edited code's writes and memory are bounded: a test run or the held-out child that
writes 200 MB into the copy or /tmp, or allocates 4 GB, fails its verdict with a reason
naming the limit, and nothing of that size lands on the machine's disk (plumbing/bounds.py).

Each attack is an edit of path_rules.py that acts when it is imported: by pytest in the
test run, by the held-out child in the held-out checks (an edit can tell them apart, so
each is attacked alone). One test run or one child per test, nothing more.
"""

import os
import resource
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from plumbing import isolation
from plumbing.bounds import FILE_SIZE_LIMIT, MEMORY_LIMIT, TMP_SIZE
from plumbing.child_process import minimal_env
from plumbing.held_out import HELD_OUT, held_out_checks
from plumbing.pytest_run import PYTEST_COMMAND, run_pytest
from plumbing.sample import SOURCE_FILE
from tests.helpers import FAULTY_LINE, FIXED_LINE

MB = 2**20
WRITE_200_MB = "open({path!r}, 'wb').write(b'0' * (200 * 2**20))\n"
FILL_TMP = "for i in range(20):\n    open(f'/tmp/{name}-{{i}}', 'wb').write(b'0' * (10 * 2**20))\n"
ALLOCATE_4_GB = "hoard = bytearray(4 * 2**30)\n"
IN_THE_HELD_OUT_CHILD_ONLY = "import sys\nif 'pytest' not in sys.modules:\n"


def edited(repo, code):
    """The repaired path_rules.py with `code` run first when it is imported."""
    source = (repo / SOURCE_FILE).read_text(encoding="utf-8").replace(FAULTY_LINE, FIXED_LINE)
    (repo / SOURCE_FILE).write_text(code + source, encoding="utf-8")
    return (repo / SOURCE_FILE).read_bytes()


@pytest.mark.parametrize("isolate", [True, False], ids=["isolated", "no-isolate"])
def test_a_test_run_writing_200_mb_into_the_copy_fails_past_the_file_size_limit(repo, isolate):
    edited(repo, WRITE_200_MB.format(path="big.bin"))
    result = run_pytest(repo, isolate=isolate)
    assert result["verdict"] == "failed"
    assert f"went past the file-size limit of {FILE_SIZE_LIMIT // MB} MB a file" in result["reason"]
    assert (repo / "big.bin").stat().st_size <= FILE_SIZE_LIMIT  # not 200 MB on the disk


def test_a_test_run_filling_tmp_fails_past_the_size_of_the_sandboxs_tmp(repo):
    if isolation.isolation_kind() != isolation.BUBBLEWRAP:
        pytest.skip("bubblewrap does not work here: /tmp is the machine's own")
    name = f"agent-lab-fill-{uuid.uuid4().hex}"  # 20 files of 10 MB: each under the limit
    edited(repo, FILL_TMP.format(name=name))
    result = run_pytest(repo)
    assert result["verdict"] == "failed"
    assert f"the sandbox's /tmp ({TMP_SIZE // MB} MB)" in result["reason"]
    assert not list(Path("/tmp").glob(f"{name}-*"))  # the sandbox's /tmp was its own


def test_a_test_run_allocating_4_gb_fails_past_the_memory_limit(repo):
    edited(repo, ALLOCATE_4_GB)
    result = run_pytest(repo)
    assert result["verdict"] == "failed"
    assert f"went past the memory limit of {MEMORY_LIMIT // MB} MB" in result["reason"]


@pytest.mark.parametrize(
    "attack, limit",
    [
        ("write", f"past the file-size limit of {FILE_SIZE_LIMIT // MB} MB a file"),
        ("allocate", f"past the memory limit of {MEMORY_LIMIT // MB} MB"),
    ],
)
def test_the_held_out_child_past_a_limit_fails_naming_it(repo, attack, limit):
    # Under bubblewrap the child's folder is read-only: /tmp (32 MB) is where it can write,
    # and one file stops at the file-size limit (16 MB) before /tmp is full.
    target = f"/tmp/agent-lab-held-out-{uuid.uuid4().hex}"
    act = WRITE_200_MB.format(path=target) if attack == "write" else ALLOCATE_4_GB
    code = IN_THE_HELD_OUT_CHILD_ONLY + "".join(f"    {line}\n" for line in act.splitlines())
    try:
        held_out = held_out_checks(edited(repo, code), cases=HELD_OUT[:1])
        assert held_out["passed"] == 0
        assert limit in held_out["first_failure"]
    finally:  # unisolated, the child wrote the machine's /tmp: at most the limit, removed
        if os.path.exists(target):
            assert os.path.getsize(target) <= FILE_SIZE_LIMIT
            os.unlink(target)


def test_a_normal_test_run_fits_in_an_eighth_of_the_memory_limit(repo):
    # The margin, measured: the sample's real tests under pytest, repaired, pass with an
    # eighth of the address space a run is given (a run peaks near 32 MB here).
    edited(repo, "")

    def an_eighth():
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT // 8, MEMORY_LIMIT // 8))

    finished = subprocess.run(
        [sys.executable, *PYTEST_COMMAND],
        cwd=repo,
        env=minimal_env(),
        capture_output=True,
        text=True,
        preexec_fn=an_eighth,
        timeout=60,
    )
    assert finished.returncode == 0, finished.stdout[-2000:]
    assert "4 passed" in finished.stdout
