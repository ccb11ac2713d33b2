"""What the command-line tools print to a learner who runs them, for tests/snapshots.py.

replay.py on shipped recordings (with --transcript, --transcript=full and --chunks), on a
recording that diverges and on files that are not recordings; compare.py grouped each way.
What differs on every run is normalised: durations become `<t>s`, the timeline (drawn from
today's timings; tests/snapshots.py pins how it is drawn) becomes one line, and the
temporary folder becomes TMP, and the line saying that the tests run unisolated (on a
machine without bubblewrap) is left out. Each command runs with a minimal environment, and
each output ends with its exit code.

Each command's main() runs in this process (tests/in_process.py), with ENVIRONMENT as its
environment: the same output as the program, without an interpreter's start and the SDK's
import for each. The attempts of a series are still programs, as record_run.py starts them.
Not here: what a CLI does as a program before main() (tests/test_entry_points.py).
"""

import json
import os
import re
import tempfile
from pathlib import Path

from harness.recording import RECORDINGS
from tests import ollama_test_server as ollama
from tests import openai_test_server as openai
from tests.helpers import SHOWN
from tests.in_process import run_cli

# The environment of every command: nothing of the caller's (a variable whose name looks
# secret would redact its value from the output, FORCE_COLOR would colour argparse's).
ENVIRONMENT = {
    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    "HOME": os.environ.get("HOME", "/"),
    "LANG": "C.UTF-8",
    "PYTHONUTF8": "1",
    "COLUMNS": "80",  # usage lines and the timeline wrap to the width
    "LINES": "24",
    # where an unreachable Ollama's error looks for an OpenAI-compatible server: nowhere, so a
    # llama-server left on this machine's default port changes no snapshot
    "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
}
# Said first where the tests cannot run under bubblewrap: how the run is isolated is
# machine's, not the command's, so the line is left out.
ISOLATION_NOTICE = re.compile(r"^tests run (unisolated|with only the network cut).*\n", re.M)


def normalised(text, folder):
    text = ISOLATION_NOTICE.sub("", text.replace(str(folder), "TMP"))
    text = re.sub(r"Timeline \(seconds.*?\n {8}independent tests [\d.]+s\n", "<timeline>\n",
                  text, flags=re.S)  # fmt: skip
    text = re.sub(r"\b\d+\.\d+ ?s\b", "<t>s", text)  # "0.03s", "0.8 s"
    # a new run draws its own seed: how many generated inputs a wrong source gets right
    # varies with it (a right one gets all 520; a replay asks the recorded seed's again)
    text = re.sub(r"\b\d+ of 520 passed \(first failure", "<n> of 520 passed (first failure", text)
    # ... and with today's draw, how many of its inputs are settled, so asked
    text = re.sub(
        r"\b\d+ of \d+ passed \(\d+ of (\d+) generated inputs asked, \d+ unsettled",
        r"<n> of <m> passed (<a> of \1 generated inputs asked, <u> unsettled",
        text,
    )
    # ... and with the relations of /8, on how many paths correct repairs differ
    text = re.sub(
        r"\b\d+ of \d+ passed \((\d+) generated inputs asked with their relations; on \d+ paths",
        r"<n> of <m> passed (\1 generated inputs asked with their relations; on <u> paths",
        text,
    )
    return re.sub(r"seconds \d+\.\d+ \(", "seconds <t> (", text)  # the medians


def run(script, *args, folder):
    finished = run_cli(script, *args, env=ENVIRONMENT)
    said = f"$ {script} {' '.join(map(str, args))}\n{finished.stdout}"
    if finished.stderr:
        said += f"[stderr]\n{finished.stderr}"
    return normalised(said + f"[exit {finished.returncode}]\n", folder).splitlines()


def replays():
    lines = []
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        repair = json.loads((RECORDINGS / "repair.json").read_text(encoding="utf-8"))
        repair["events"][7]["result"]["text"] = "what the recording said it read"
        (folder / "diverges.json").write_text(json.dumps(repair), encoding="utf-8")
        (folder / "not-json.json").write_text("{", encoding="utf-8")
        for args in (
            [RECORDINGS / "repair.json", "--transcript", "--chunks", "3"],
            [RECORDINGS / "smollm2-135m-live.json", "--transcript=full", "--chunks", "2"],
            [RECORDINGS / "bounded-max-turns-1.json", RECORDINGS / "cheats" / "forged-report.json"],
            [folder / "diverges.json", "--no-isolate"],  # the same on a machine without bwrap
            [folder / "not-json.json", folder / "missing.json"],
            ["--chunks", "0", RECORDINGS / "repair.json"],
        ):
            lines += run("replay.py", *args, folder=folder)
    return [line.replace(str(RECORDINGS), "recordings") for line in lines]


def comparisons():
    shipped = SHOWN  # the shipped recordings but a measurement's (tests/helpers.py)
    lines = []
    with tempfile.TemporaryDirectory() as name:
        for by in ("all", "model", "max_turns", "api"):
            lines += run("compare.py", *shipped, "--by", by, folder=Path(name))
        lines += run("compare.py", shipped[0], Path(name) / "missing.json", folder=Path(name))
    return [line.replace(str(RECORDINGS), "recordings") for line in lines]


FIX = {"old": 'path.split("/")', "new": 'path.replace("\\\\", "/").split("/")'}


def _repair(tag):
    return [
        ollama.reply(ollama.chunk(thinking=f"Plan {tag}: normalise the separators."),
                     ollama.chunk(tool_calls=[ollama.call("replace_text", **FIX)]),
                     ollama.chunk(done=True)),
        ollama.reply(ollama.chunk("Fixed: "), ollama.chunk("é ✓"), ollama.chunk(done=True)),
    ]  # fmt: skip


def _claim(tag):
    read = ollama.call("read_file", path="path_rules.py")
    return [
        ollama.reply(ollama.chunk(thinking=f"Plan {tag}."), ollama.chunk(tool_calls=[read]),
                     ollama.chunk(done=True, done_reason="stop")),
        ollama.reply(ollama.chunk("All pass."), ollama.chunk(done=True, counters=False)),
    ]  # fmt: skip


def _recorded(conversations, *args, folder, **server):
    with ollama.ConversationServer(conversations, **server) as stand_in:
        lines = run("record_run.py", "--host", stand_in.host, *args, folder=folder)
    return [line.replace(stand_in.host, "HOST") for line in lines]


def _in_a_folder(make):
    """`make(folder)` in a fresh temporary folder: its lines."""

    def made():
        with tempfile.TemporaryDirectory() as name:
            return make(Path(name))

    return made


def record_one(folder):
    """record_run.py against the Ollama stand-in: a repair, an --output that exists, and a
    claim cut by --max-turns 1. The chunks are written here, not a model's output."""
    lines = _recorded([_repair("a")], "--output", folder / "one.json", folder=folder)
    lines += _recorded([_claim("b")], "--output", folder / "one.json", folder=folder)
    return lines + _recorded([_claim("c")], "--output", folder / "one.json", "--force",
                             "--max-turns", "1", "--deadline", "60", folder=folder)  # fmt: skip


def record_series(folder):
    series = [_repair("d"), _claim("e"), _repair("f")]
    return _recorded(series, "--output", folder / "s.json", "--attempts", "3", folder=folder)


def record_refusals(folder):
    """Set-up errors: a model that cannot think, a model not there, bad options, no server."""
    lines = _recorded([], "--output", folder / "x.json", "--think", "on", folder=folder,
                      capabilities={ollama.TEST_MODEL: ["completion", "tools"]})  # fmt: skip
    lines += _recorded([], "--output", folder / "x.json", "--model", "nope:1b", folder=folder)
    for bad in (["--max-turns", "0"], ["--attempts", "0"], ["--max-tokens", "0"],
                ["--output", folder], ["--timeout", "-1"]):  # fmt: skip
        lines += run("record_run.py", "--host", "http://127.0.0.1:9", *bad, folder=folder)
    return lines + run("record_run.py", "--host", "http://127.0.0.1:9", "--output",
                       folder / "y.json", "--timeout", "2", folder=folder)  # fmt: skip


def record_openai(folder):
    turn = [
        openai.reasoning("Plan."),
        openai.tool_call(0, name="read_file"),
        openai.tool_call(0, '{"path": "path_rules.py"}'),
        openai.finish("tool_calls"),
    ]
    answer = [openai.content("Done."),
              openai.finish(usage={"prompt_tokens": 9, "completion_tokens": 2})]  # fmt: skip
    with openai.OpenAITestServer([openai.reply(*turn), openai.reply(*answer)]) as stand_in:
        url = stand_in.base_url
        said = run("record_run.py", "--api", "openai", "--host", url, "--model",
                   openai.TEST_MODEL, "--output", folder / "o.json", folder=folder)  # fmt: skip
    return [line.replace(url, "BASE_URL") for line in said]


def asks():
    """ask.py against the Ollama stand-in, about a small folder, one question each."""
    lines = []
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        (folder / "notes.md").write_text("# Notes\nThe answer is 42.\n")
        listed = ollama.call("list_dir", path=".")
        found = ollama.call("search", pattern="answer")
        read = ollama.call("read_file", path="notes.md")
        script = [
            ollama.reply(ollama.chunk(thinking="Look around."), ollama.chunk(tool_calls=[listed]),
                         ollama.chunk(done=True)),
            ollama.reply(ollama.chunk(tool_calls=[found, read]), ollama.chunk(done=True)),
            ollama.reply(ollama.chunk("The answer is 42\x1b[2J (notes.md)."),
                         ollama.chunk(done=True)),
        ]  # fmt: skip
        for conversation, args in (
            ([script], ["What is the answer?"]),
            ([script[:1]], ["--max-turns", "1", "Again?"]),
            ([], ["--max-turns", "0", "x"]),
            ([], ["--root", folder / "missing", "x"]),
        ):
            with ollama.ConversationServer(conversation) as stand_in:
                said = run("ask.py", "--host", stand_in.host, "--root", folder, *args,
                           folder=folder)  # fmt: skip
            lines += [line.replace(stand_in.host, "HOST") for line in said]
    return lines


# file name -> the function that makes its lines
CLIS = {
    "replay-output.txt": replays,
    "compare-output.txt": comparisons,
    "record-one.txt": _in_a_folder(record_one),
    "record-series.txt": _in_a_folder(record_series),
    "record-refusals.txt": _in_a_folder(record_refusals),
    "record-openai.txt": _in_a_folder(record_openai),
    "ask-output.txt": asks,
}
