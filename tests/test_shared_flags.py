"""The live model's flags, defined once (harness/shared_flags.py) for record_run.py and ask.py:
each is worded alike in both programs' --help, and parses to the same options in both. Each
program parses in this process; nothing is started.
"""

import pytest

import ask
import record_run
from openai_model import default_base_url

# worded alike; --max-turns and --deadline say what their budget is for in each program
SAME = ["--api", "--model", "--host", "--think", "--max-tokens", "--timeout", "--text-calls"]
OPTIONS = ["--api", "openai", "--model", "m", "--max-tokens", "5", "--timeout", "3",
           "--deadline", "4", "--max-turns", "6", "--text-calls"]  # fmt: skip
PARSED = ["api", "model", "host", "think", "max_tokens", "timeout", "deadline", "max_turns",
          "text_calls"]  # fmt: skip


def helps_of(parse_args, capsys, monkeypatch):
    """{flag: its help, words joined} of a program's --help."""
    monkeypatch.setenv("COLUMNS", "100")  # both programs wrapped alike
    with pytest.raises(SystemExit):
        parse_args(["--help"])
    options = capsys.readouterr().out.split("\noptions:\n")[1]
    helps, flag = {}, None
    for line in options.splitlines():
        if line.startswith("  -"):  # an option's first line; its help may wrap below it
            flag = line.split()[0].rstrip(",")
            helps[flag] = line
        elif flag and line.startswith("   "):
            helps[flag] += line
    return {flag: " ".join(said.split()) for flag, said in helps.items()}


def test_the_shared_flags_are_worded_alike_in_both_programs(capsys, monkeypatch):
    recording = helps_of(record_run.parse_args, capsys, monkeypatch)
    asking = helps_of(ask.parse_args, capsys, monkeypatch)
    for flag in SAME:
        assert recording[flag] == asking[flag], flag
    budget = "--deadline DEADLINE wall-clock budget in seconds of"
    assert recording["--deadline"].startswith(f"{budget} the loop:")
    assert asking["--deadline"].startswith(f"{budget} each answer:")
    assert "--temperature" in recording and "--temperature" not in asking  # sampling: record only


def test_the_shared_flags_parse_alike_in_both_programs(tmp_path):
    recording = record_run.parse_args([*OPTIONS, "--output", str(tmp_path / "r.json")])
    asking = ask.parse_args([*OPTIONS, "--root", str(tmp_path), "A question?"])
    assert [getattr(recording, name) for name in PARSED] == [
        getattr(asking, name) for name in PARSED
    ]
    assert asking.host == default_base_url()  # --host's default for the wire, filled in by both
    assert (asking.max_turns, asking.deadline, asking.text_calls) == (6, 4.0, True)
