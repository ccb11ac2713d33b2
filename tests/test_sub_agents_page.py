"""docs/sub-agents.md's "Write your own sub-agent", run as it stands on the page: the
sub-agent's file and the lines that put it in the composer's list, in a copy of the lab; a
run with it is recorded and replayed.

The model is the Ollama stand-in on 127.0.0.1 serving hand-written turns (nothing here is a
model's output); the tools, the copies, the pytest runs and the verdicts are the real ones.
"""

import json

from tests.helpers import (
    FAULTY_LINE,
    FIXED_LINE,
    lab_copy,
    page_blocks,
    recorded_in,
    with_listing,
)
from tests.ollama_test_server import call, chunk, reply

ANSWER = "test_windows_separators wants src\\\\app.py read as src/app.py."


def test_the_sub_agent_the_page_writes_is_recorded_and_replayed(tmp_path):
    module, listing = page_blocks("sub-agents.md", "Write your own sub-agent")
    assert len(module.splitlines()) <= 30  # as the page promises, about 30
    lab = lab_copy(tmp_path)
    (lab / "extensions" / "tests_reader.py").write_text(module, encoding="utf-8")
    with_listing(lab, listing)
    turns = [
        reply(chunk(tool_calls=[call("ask_tests", question="What must a backslash do?")]),
              chunk(done=True)),
        reply(chunk(tool_calls=[call("list_dir", path=".")]), chunk(done=True)),  # the child
        reply(chunk(ANSWER), chunk(done=True)),  # ... its answer
        reply(chunk(tool_calls=[call("replace_text", old=FAULTY_LINE, new=FIXED_LINE)]),
              chunk(done=True)),
        reply(chunk("Fixed."), chunk(done=True)),
    ]  # fmt: skip
    output = tmp_path / "read-the-tests.json"
    done, bodies, replayed = recorded_in(lab, turns, output, "--tests-reader")
    assert done.returncode == 0, done.stdout + done.stderr
    listed_dir = json.loads(bodies[2]["messages"][-1]["content"])
    assert [e.split(" (")[0] for e in listed_dir["entries"]] == ["test_path_rules.py"]  # tests/
    assert json.loads(bodies[3]["messages"][-1]["content"]) == {"answer": ANSWER}
    (decision,) = json.loads(output.read_text(encoding="utf-8"))["extensions"]["decisions"]
    assert (decision["extension"], decision["decision"]) == ("tests-reader", "explored")
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert replayed.stdout.rstrip().endswith("1 reproduced, 0 diverged, 0 could not be replayed")
