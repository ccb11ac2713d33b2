"""`python3 lab.py lint` checks the GitHub workflow (.github/workflows/ci.yml) with the real
actionlint and zizmor of .venv/: it passes on the shipped workflow, offline, and fails on a
copy that breaks what either tool guards.

Each test lints a copy of what lint reads (lab.py, its settings, the locks, the workflow as
the test writes it) beside a link to this lab's .venv/. Not here: running the workflow, which
only GitHub can (docs/maintaining.md, "CI on GitHub").
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent.parent
WORKFLOW = HERE / ".github" / "workflows" / "ci.yml"
LINTED = ("lab.py", "pyproject.toml", "requirements-lock.txt", "requirements-test-lock.txt",
          "requirements-mcp-lock.txt", "plumbing/exit_codes.py")  # fmt: skip
CHECKOUT = "actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1 # v7.0.1"


def lint(tmp_path, workflow, **env):
    """`lab.py lint` in a copy whose workflow reads `workflow`: (exit code, its output)."""
    for name in LINTED:
        (tmp_path / name).parent.mkdir(exist_ok=True)
        shutil.copy(HERE / name, tmp_path / name)
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / ".github" / "workflows" / "ci.yml").write_text(workflow)
    (tmp_path / ".venv").symlink_to(HERE / ".venv")
    done = subprocess.run(
        [sys.executable, str(tmp_path / "lab.py"), "lint"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, **env},
        timeout=120,
    )
    return done.returncode, done.stdout + done.stderr


def altered(old, new):
    """The shipped workflow with `old` (which must be there) replaced by `new`."""
    text = WORKFLOW.read_text()
    assert old in text
    return text.replace(old, new)


def test_lint_passes_on_the_shipped_workflow_without_the_network(tmp_path, unused_port):
    # with a token, zizmor would run its online audits; --offline must keep it from trying
    # (the proxy it would go through listens nowhere)
    proxy = f"http://127.0.0.1:{unused_port}"
    env = {"GH_TOKEN": "not-a-token", "HTTPS_PROXY": proxy, "https_proxy": proxy}
    code, out = lint(tmp_path, WORKFLOW.read_text(), **env)
    assert code == 0, out
    assert "No findings to report" in out  # zizmor ran, and on the workflow


def test_lint_fails_on_a_workflow_that_actionlint_rejects(tmp_path):
    # a matrix value the matrix does not define: GitHub would run the job with an empty one
    code, out = lint(tmp_path, altered("matrix.python }}\n", "matrix.pyton }}\n"))
    assert code != 0
    assert 'property "pyton" is not defined' in out and "[expression]" in out


@pytest.mark.parametrize(
    "old, new, audit",
    [
        (CHECKOUT, "actions/checkout@v7", "unpinned-uses"),  # a tag can be moved
        ("        with:\n          persist-credentials: false\n", "", "artipacked"),
        (
            "    permissions:\n      contents: read\n",
            "    permissions: write-all\n",
            "excessive-permissions",
        ),
        ("lab.py replay\n", 'lab.py replay "${{ github.head_ref }}"\n', "template-injection"),
    ],
    ids=["unpinned", "credentials-kept", "write-all", "injection"],
)
def test_lint_fails_on_a_workflow_with_a_zizmor_finding(tmp_path, old, new, audit):
    code, out = lint(tmp_path, altered(old, new))
    assert code != 0
    assert f"[{audit}]" in out, out
