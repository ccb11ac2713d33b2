"""docs/hooks.md's "Write your own hook", run as it stands on the page: the hook's code, the
lines that put it in the composer's list, and the lines that try it alone.

Each block is read from the page itself, so the page and these tests cannot drift apart.
The tools, the copies, the pytest runs and the verdicts are the real ones; the model of the
recorded run is the Ollama stand-in on 127.0.0.1 serving hand-written turns (the rename is
the one the shipped live/qwen2.5-coder-1.5b-2.json made at its turn 4).
"""

import ast
import json
import types

from extensions.extension import Counted, Log
from plumbing.sample import SAMPLE_FILES, SOURCE_FILE
from repo_tools import RepoTools
from tests.helpers import (
    FAULTY_LINE,
    FIXED_LINE,
    lab_copy,
    page_blocks,
    recorded_in,
    with_listing,
)
from tests.ollama_test_server import call, chunk, reply

RENAME = {"old": "python_sources", "new": "python_sources_replaced"}
SAID = "it took away def python_sources"


def blocks():
    """The page's blocks: the hook, the lines of the list, the lines that try it."""
    return page_blocks("hooks.md", "Write your own hook")


def the_hook():
    """The page's hook, loaded as a module of its own: its class."""
    module = types.ModuleType("keep_names")
    exec(compile(blocks()[0], "docs/hooks.md", "exec"), module.__dict__)
    return module.KeepNames


def test_the_hook_docs_hooks_md_writes_undoes_a_rename_as_it_says(repo):
    hook, tried = blocks()[0], blocks()[2].splitlines()
    assert len(hook.splitlines()) <= 30  # a complete hook, as short as the page promises
    # the lines that try it, run one by one; each "# value" line is what the one before gives
    names = {"Log": Log, "Counted": Counted, "RepoTools": RepoTools, "copy": repo}
    names["KeepNames"], compared = the_hook(), 0
    for line, shown in zip(tried, [*tried[1:], ""], strict=True):
        if line.startswith("# "):
            continue
        if shown.startswith("# "):
            assert eval(line, names) == ast.literal_eval(shown[2:]), line
            compared += 1
        else:
            exec(line, names)
    assert compared == 2
    assert (repo / SOURCE_FILE).read_bytes() == SAMPLE_FILES[SOURCE_FILE]  # byte for byte
    tools, log = names["tools"], names["log"]
    assert "text" in tools.invoke("read_file", {"path": SOURCE_FILE})  # no decision
    edit = {"old": FAULTY_LINE, "new": FIXED_LINE}  # keeps the name: lands, no decision
    assert tools.invoke("replace_text", edit)["replaced"] == 1
    assert tools.invoke("replace_text", {"old": "nowhere", "new": "x"})["error"]
    assert [(d["call"], d["decision"]) for d in log.decisions] == [(1, "undone")]


def test_the_hook_put_in_the_list_as_the_page_says_is_recorded_and_replayed(tmp_path):
    lab = lab_copy(tmp_path)
    (lab / "extensions" / "keep_names.py").write_text(blocks()[0], encoding="utf-8")
    with_listing(lab, blocks()[1])
    turns = [
        reply(chunk(tool_calls=[call("replace_text", **RENAME)]), chunk(done=True)),
        reply(chunk(tool_calls=[call("replace_text", old=FAULTY_LINE, new=FIXED_LINE)]),
              chunk(done=True)),
        reply(chunk("Fixed."), chunk(done=True)),
    ]  # fmt: skip
    output = tmp_path / "kept-the-name.json"
    done, _, replayed = recorded_in(lab, turns, output, "--hook", "keep-names")
    # without the hook the rename lands and every test fails at its import; with it, passed
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"  [keep-names] undone: {SAID}" in done.stdout.splitlines()
    recording = json.loads(output.read_text(encoding="utf-8"))
    assert recording["extensions"] == {
        "on": [{"name": "keep-names", "settings": {}}],
        "decisions": [{"extension": "keep-names", "call": 1, "decision": "undone", "said": SAID}],
    }
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert replayed.stdout.rstrip().endswith("1 reproduced, 0 diverged, 0 could not be replayed")
